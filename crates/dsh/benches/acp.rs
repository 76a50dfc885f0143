//! `dsh acp` start-up, as an editor sees it: spawn of `dsh acp --provider
//! scripted` to its `initialize` response on stdout, and spawn to its
//! `session/new` response (`session/new` written as soon as `initialize` is
//! answered, `cwd` a fresh workspace), raw ACP frames over stdio.
//!
//! Every iteration is a fresh process in a fresh directory (its `HOME`, with
//! `DSH_HOME` under it) with a clean environment; the directory is made
//! before, and what follows the timed answer (stdin closed, the exit, the
//! directory removed) after the timed span. Prints the median of every timed
//! spawn besides criterion's estimates.
//!
//! `cargo bench -p dsh --bench acp`. `bench/acp_side_by_side.py` measures
//! the same two spans (and the resident memory) beside the official
//! runtime's `acp` profile.

#[path = "support/runtime.rs"]
mod runtime;

use criterion::{Criterion, criterion_group, criterion_main};
use runtime::Runtime;
use serde_json::json;
use std::path::Path;
use std::time::{Duration, Instant};

/// The command line after `dsh`: the ACP agent on the offline echo model.
const ACP: [&str; 3] = ["acp", "--provider", "scripted"];

/// The answer a run is timed to.
#[derive(Clone, Copy)]
enum Answer {
    /// The `initialize` response.
    Initialize,
    /// The `session/new` response (after `initialize`'s).
    SessionNew,
}

/// One spawn in a fresh directory under `base`, timed from just before the
/// spawn to the reading of `answer`.
fn run(base: &Path, answer: Answer) -> Duration {
    let dir = tempfile::tempdir_in(base).unwrap_or_else(|e| panic!("{e}"));
    let workspace = dir.path().join("workspace");
    std::fs::create_dir(&workspace).unwrap_or_else(|e| panic!("{}: {e}", workspace.display()));
    let start = Instant::now();
    let mut runtime = Runtime::start_with(&ACP, dir.path(), &[]);
    let initialized = runtime.request(
        "initialize",
        json!({"protocolVersion": 1, "clientCapabilities":
            {"fs": {"readTextFile": false, "writeTextFile": false}, "terminal": false}}),
    );
    let mut elapsed = start.elapsed();
    assert!(
        initialized.contains(r#""protocolVersion":1"#),
        "initialize did not agree on protocol version 1: {initialized}"
    );
    if let Answer::SessionNew = answer {
        let created = runtime.request("session/new", json!({"cwd": workspace, "mcpServers": []}));
        elapsed = start.elapsed();
        assert!(
            created.contains(r#""sessionId":""#),
            "session/new answered no session id: {created}"
        );
    }
    drop(runtime);
    elapsed
}

/// The median of `samples`, in milliseconds.
fn median_ms(samples: &mut [Duration]) -> f64 {
    samples.sort_unstable();
    samples
        .get(samples.len() / 2)
        .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
}

/// Times `iters` runs to `answer`, keeping every sample for the median.
fn timed(samples: &mut Vec<Duration>, iters: u64, base: &Path, answer: Answer) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let one = run(base, answer);
        samples.push(one);
        total += one;
    }
    total
}

/// Both spans, one after the other.
fn acp(c: &mut Criterion) {
    let base = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut group = c.benchmark_group("acp");
    group.sample_size(50);
    group.measurement_time(Duration::from_secs(12));
    let mut inits = Vec::new();
    group.bench_function("spawn to initialize answered", |b| {
        b.iter_custom(|iters| timed(&mut inits, iters, base.path(), Answer::Initialize));
    });
    let mut sessions = Vec::new();
    group.bench_function("spawn to session/new answered", |b| {
        b.iter_custom(|iters| timed(&mut sessions, iters, base.path(), Answer::SessionNew));
    });
    group.finish();
    println!(
        "dsh acp: median spawn to initialize answered {:.2} ms ({} spawns), \
         to session/new answered {:.2} ms ({} spawns)",
        median_ms(&mut inits),
        inits.len(),
        median_ms(&mut sessions),
        sessions.len()
    );
}

criterion_group!(benches, acp);
criterion_main!(benches);
