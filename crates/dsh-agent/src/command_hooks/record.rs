//! Every hook run recorded in the session log (`dsh/hook-run`: command,
//! duration, exit code, decision and reason, not its output), and the
//! sources loaded (`dsh/hooks-loaded`).

use crate::core::Core;
use dsh_hooks::decision::Judged;
use dsh_hooks::{HookEvent, HookSet, Outcome, RunStatus};
use dsh_protocol::catalog::{HookRunEvent, HookSource, HooksLoaded};

/// Longest reason recorded, in bytes.
const REASON_MAX_BYTES: usize = 2048;

/// The call a run was for.
pub(super) struct ForCall<'a> {
    pub call_id: &'a str,
    pub tool: &'a str,
}

/// Records the runs of `outcome`.
pub(super) fn runs(
    core: &Core,
    event: HookEvent,
    turn: Option<u32>,
    call: Option<&ForCall<'_>>,
    outcome: &Outcome,
) {
    if outcome.runs.is_empty() {
        return;
    }
    let mut state = core.state();
    for judged in &outcome.runs {
        state.event(run_event(event, turn, call, judged));
    }
}

fn run_event(
    event: HookEvent,
    turn: Option<u32>,
    call: Option<&ForCall<'_>>,
    judged: &Judged,
) -> HookRunEvent {
    let run = &judged.run;
    let status = match run.status {
        RunStatus::Exited(_) => "exited",
        RunStatus::Signaled => "signaled",
        RunStatus::TimedOut(_) => "timed-out",
        RunStatus::OutputTooLarge(_) => "output-too-large",
        RunStatus::SpawnFailed(_) => "spawn-failed",
        RunStatus::Cancelled => "cancelled",
    };
    HookRunEvent {
        event: event.name().to_owned(),
        command: run.command.clone(),
        source: kebab(&run.source),
        turn,
        call_id: call.map(|c| c.call_id.to_owned()),
        tool_name: call.map(|c| c.tool.to_owned()),
        duration_ms: u64::try_from(run.duration.as_millis()).unwrap_or(u64::MAX),
        exit_code: run.status.code(),
        status: status.to_owned(),
        decision: kebab(&judged.decision),
        reason: judged.reason.as_deref().map(cut),
        message: judged.message.as_deref().map(cut),
    }
}

/// A serde enum's kebab-case name.
fn kebab<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(name)) => name,
        _ => String::new(),
    }
}

/// `text` cut to [`REASON_MAX_BYTES`] at a character boundary.
fn cut(text: &str) -> String {
    if text.len() <= REASON_MAX_BYTES {
        return text.to_owned();
    }
    let mut end = REASON_MAX_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// Records the sources of `set`.
pub(super) fn loaded(core: &Core, set: &HookSet) {
    let sources = set
        .sources()
        .iter()
        .map(|source| HookSource {
            kind: kebab(&source.kind),
            path: source
                .path
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned()),
            hooks: source.hooks,
            ignored: source.ignored.clone(),
            error: source.error.clone(),
        })
        .collect();
    core.state().event(HooksLoaded { sources });
}
