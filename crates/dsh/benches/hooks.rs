//! What a command hook costs a tool call (issue 31's bound: a `PreToolUse`
//! hook of `true` adds under 3 ms).
//!
//! `hooks/turn_with_one_call/{none,pre_tool_use_true}`: the wall time of one
//! turn of a new session (prompt → `idle`) whose scripted model calls
//! `read` once and then answers, without hooks and with one `PreToolUse`
//! hook of `true` (matcher `*`, from `initialize`). The difference is what
//! the hook adds: its process started and reaped, its input written, its
//! decision read and its `dsh/hook-run` recorded.
//!
//! `cargo bench -p dsh --bench hooks`.

#[path = "support/runtime.rs"]
mod runtime;

use criterion::{Criterion, criterion_group, criterion_main};
use runtime::Runtime;
use serde_json::json;
use std::time::Instant;

fn turn_with_one_call(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let call = json!({"blocks": [{"tool_call": {"name": "read", "arguments": {"file_path": "notes.txt"}}}]});
    let answer = json!({"text": "read it"});
    let replies: Vec<_> = (0..20_000)
        .map(|i| {
            if i % 2 == 0 {
                call.clone()
            } else {
                answer.clone()
            }
        })
        .collect();
    let scenario = dir.path().join("scenario.json");
    std::fs::write(&scenario, json!({"replies": replies}).to_string())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut group = c.benchmark_group("hooks/turn_with_one_call");
    group.sample_size(30);
    let hooks = json!({"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "true"}]}]});
    for (name, hooks) in [("none", None), ("pre_tool_use_true", Some(hooks))] {
        let home = dir.path().join(name);
        std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(home.join("notes.txt"), "a note\n").unwrap_or_else(|e| panic!("{e}"));
        let mut runtime = Runtime::start(&home, &[]);
        let mut init = json!({"cwd": home, "provider": "scripted", "model": scenario});
        if let Some(hooks) = hooks {
            init["hooks"] = hooks;
        }
        runtime.request("initialize", init);
        let mut session = 0u64;
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let started = Instant::now();
                for _ in 0..iterations {
                    session += 1;
                    let id = format!("s{session}");
                    runtime.send(&json!({"jsonrpc": "2.0", "id": format!("p-{id}"),
                        "method": "session/prompt", "params": {"sessionId": id,
                        "contentBlocks": [{"type": "text", "text": "go"}]}}));
                    let idle = format!(r#""sessionId":"{id}","status":"idle""#);
                    runtime.until(|line| line.contains(&idle));
                }
                started.elapsed()
            });
        });
    }
    group.finish();
}

criterion_group!(benches, turn_with_one_call);
criterion_main!(benches);
