//! What a `PreToolUse` hook of `true` adds to a tool call: matching, the
//! input written, `/bin/sh -c true` started and reaped, its decision read.

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_hooks::{HookEvent, HookSet, RunEnv, SourceKind, decision, runner, tools};
use dsh_tools::{CancellationToken, HiddenEnv};
use serde_json::json;

fn hook_of_true(c: &mut Criterion) {
    let mut set = HookSet::default();
    let hooks = json!({"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]});
    if let Err(err) = set.add_hooks(SourceKind::Home, None, &hooks) {
        panic!("{err}");
    }
    let dir = std::env::temp_dir();
    let env = RunEnv {
        cwd: dir.clone(),
        project_dir: dir.clone(),
        hidden: HiddenEnv::default(),
        output_max: runner::DEFAULT_OUTPUT_MAX_BYTES,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => panic!("{err}"),
    };
    let cancel = CancellationToken::new();
    let arguments = json!({"command": "cargo test", "description": "Run the tests"});
    c.bench_function("pre_tool_use_hook_of_true", |b| {
        b.iter(|| {
            runtime.block_on(async {
                let handlers =
                    runner::matching(&set, HookEvent::PreToolUse, &tools::match_names("bash"));
                let input = json!({
                    "session_id": "s", "hook_event_name": "PreToolUse", "cwd": dir,
                    "tool_name": "Bash", "tool_input": tools::tool_input("bash", &arguments, &dir),
                });
                let runs =
                    runner::run_all(&handlers, HookEvent::PreToolUse, &input, &env, &cancel).await;
                decision::judge(HookEvent::PreToolUse, runs)
            })
        });
    });
}

criterion_group!(benches, hook_of_true);
criterion_main!(benches);
