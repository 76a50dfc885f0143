//! What a hook reads on its stdin: Claude Code's input fields (plus
//! Codex's `model` and `turn_id`), and where and how it runs.

use crate::core::Core;
use dsh_hooks::{HookEvent, RunEnv, SessionHooks, runner};
use serde_json::{Map, Value, json};

/// The fields every event's input has: `session_id`, `transcript_path`
/// (the session's event log, dsh's format), `cwd`, `hook_event_name`,
/// `permission_mode` (the sandbox mode), `model`, and `turn_id` in a
/// turn; then `fields`.
pub(super) fn input(
    core: &Core,
    event: HookEvent,
    turn: Option<u32>,
    fields: Value,
) -> (Value, RunEnv) {
    let (cwd, transcript) = {
        let state = core.state();
        (
            state.cwd().to_path_buf(),
            state.log_file().map(std::path::Path::to_path_buf),
        )
    };
    let mut input = Map::new();
    input.insert("session_id".into(), json!(core.id));
    input.insert("transcript_path".into(), json!(transcript));
    input.insert("cwd".into(), json!(cwd));
    input.insert("hook_event_name".into(), json!(event.name()));
    input.insert(
        "permission_mode".into(),
        json!(core.profile.permission_mode.as_str()),
    );
    input.insert("model".into(), json!(core.route.model));
    if let Some(turn) = turn {
        input.insert("turn_id".into(), json!(turn.to_string()));
    }
    if let Value::Object(fields) = fields {
        input.extend(fields);
    }
    let env = RunEnv {
        cwd,
        project_dir: core.workspace.clone(),
        hidden: hooks_of(core).map(|h| h.hidden.clone()).unwrap_or_default(),
        output_max: runner::DEFAULT_OUTPUT_MAX_BYTES,
    };
    (Value::Object(input), env)
}

/// The session's hooks.
pub(super) fn hooks_of(core: &Core) -> Option<&SessionHooks> {
    core.command_hooks.as_deref()
}
