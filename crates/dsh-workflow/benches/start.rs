//! The cost of one workflow run end to end: a new thread, a new QuickJS
//! runtime and context, the prelude, a 10-line script without agents, its
//! result as JSON, and the runtime torn down. Also prints the resident
//! memory one live run holds while it waits for an agent.

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_workflow::{Event, Limits, Run, Script};

/// Ten lines of ordinary script work, no agents.
const SCRIPT: &str = "phase(\"bench\");
const items = [1, 2, 3, 4, 5, 6, 7, 8];
const squares = items.map((n) => n * n);
const total = squares.reduce((a, b) => a + b, 0);
const labels = items.map((n) => `item ${n}`);
const doubled = await parallel(items.map((n) => () => n * 2));
const piped = await pipeline(items, (n) => n + 1, (n, item) => n * item);
const text = JSON.stringify({ squares, labels });
log(\"total\", total);
return { total, doubled, piped, length: text.length };";

/// Runs [`SCRIPT`] once to its end.
async fn run_once() {
    let script = Script {
        name: "bench".to_owned(),
        source: SCRIPT.to_owned(),
        args: serde_json::json!({}),
    };
    let mut run = Run::start(script, Limits::default());
    while let Some(event) = run.next().await {
        if let Event::Finished(result) = event {
            assert!(result.is_ok(), "{result:?}");
        }
    }
}

/// The benchmark; a bench that cannot build its tokio runtime cannot run.
#[allow(clippy::expect_used)]
fn start(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    c.bench_function("run a 10-line script without agents", |b| {
        b.iter(|| runtime.block_on(run_once()));
    });
}

/// The resident memory of the process, in bytes (Linux only).
fn resident_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

/// Prints the resident memory per live run, each parked in an `agent()`
/// call (50 runs at once).
#[allow(clippy::expect_used)]
fn memory_per_run(_: &mut Criterion) {
    const RUNS: usize = 50;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async {
        let before = resident_bytes().unwrap_or(0);
        let mut runs = Vec::new();
        for _ in 0..RUNS {
            let script = Script {
                name: "bench".to_owned(),
                source: "const data = Array.from({length: 100}, (_, i) => ({i, s: String(i)}));\nreturn await agent(\"wait\");".to_owned(),
                args: serde_json::json!({}),
            };
            let mut run = Run::start(script, Limits::default());
            while let Some(event) = run.next().await {
                if matches!(event, Event::Agent(_)) {
                    break;
                }
            }
            runs.push(run);
        }
        let during = resident_bytes().unwrap_or(0);
        println!(
            "resident memory per live run: {} KiB ({RUNS} runs)",
            during.saturating_sub(before) / RUNS / 1024
        );
    });
}

criterion_group!(benches, start, memory_per_run);
criterion_main!(benches);
