//! `session/cancel` → `session.status idle` while a `bash` call runs a tree
//! of 50 processes (issue 27's bound: under 50 ms). One runtime serves
//! every iteration; each iteration prompts a new session whose scripted
//! reply starts the tree, waits until all 50 processes run, then times the
//! cancel request to the session's `idle` notification. Also checks that
//! the tree is gone afterwards.
//!
//! `cargo bench -p dsh --bench cancel`.

#[path = "support/runtime.rs"]
mod runtime;

use criterion::{Criterion, criterion_group, criterion_main};
use runtime::Runtime;
use std::path::Path;
use std::time::{Duration, Instant};

/// Processes in the tree: 49 background sleepers and the shell.
const TREE: usize = 50;

/// The marker in every sleeper's command line.
const MARKER: &str = "4242.125";

/// A runtime whose scripted model starts the tree on every prompt.
fn start(dir: &Path) -> Runtime {
    let reply = serde_json::json!({"blocks": [{"tool_call": {"id": "t", "name": "bash", "arguments": {
        "description": "tree",
        "command": format!("for i in $(seq {}); do sleep {MARKER} & done; wait", TREE - 1),
    }}}]});
    let scenario = dir.join("scenario.json");
    let replies: Vec<_> = (0..1000).map(|_| reply.clone()).collect();
    std::fs::write(
        &scenario,
        serde_json::json!({"replies": replies}).to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut runtime = Runtime::start(dir, &[]);
    runtime.request(
        "initialize",
        serde_json::json!({"cwd": dir, "provider": "scripted", "model": scenario}),
    );
    runtime
}

/// How many live processes carry [`MARKER`] in their command line.
fn sleepers() -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|entry| {
            std::fs::read(entry.path().join("cmdline")).is_ok_and(|cmdline| {
                cmdline
                    .windows(MARKER.len())
                    .any(|w| w == MARKER.as_bytes())
            })
        })
        .count()
}

fn cancel(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut runtime = start(dir.path());
    let mut session = 0u64;
    let mut group = c.benchmark_group("cancel");
    group.sample_size(10);
    group.bench_function("cancel_to_idle_with_50_processes", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                session += 1;
                let id = format!("s{session}");
                runtime.send(
                    &serde_json::json!({"jsonrpc": "2.0", "id": format!("p{session}"),
                    "method": "session/prompt", "params": {"sessionId": id,
                    "contentBlocks": [{"type": "text", "text": "tree"}]}}),
                );
                let deadline = Instant::now() + Duration::from_secs(30);
                while sleepers() < TREE - 1 {
                    assert!(Instant::now() < deadline, "the tree did not start");
                    std::thread::sleep(Duration::from_millis(5));
                }
                let idle = format!(r#""sessionId":"{id}","status":"idle""#);
                let start = Instant::now();
                runtime.send(
                    &serde_json::json!({"jsonrpc": "2.0", "id": format!("c{session}"),
                    "method": "session/cancel", "params": {"sessionId": id}}),
                );
                runtime.until(|line| line.contains(&idle));
                total += start.elapsed();
                let deadline = Instant::now() + Duration::from_secs(10);
                while sleepers() > 0 {
                    assert!(Instant::now() < deadline, "the tree outlived the cancel");
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
            total
        });
    });
    group.finish();
}

criterion_group!(benches, cancel);
criterion_main!(benches);
