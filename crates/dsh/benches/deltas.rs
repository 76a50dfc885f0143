//! What `session.delta` costs (issue 28's bounds).
//!
//! * `deltas/reply_1mib_cpu/{off,on}`: the runtime's CPU time (all its
//!   threads, from `/proc/<pid>/task/*/schedstat`) for one turn whose
//!   scripted reply (the in-process provider: no HTTP, the harshest case)
//!   streams 1 MiB of text in 4096 fragments, with the client's `deltas`
//!   capability off and on. The bound: on costs at most 10 % more than off.
//! * `deltas/reply_1mib_http_cpu/{off,on}`: the same reply streamed by a
//!   fake DeepSeek server over HTTP (SSE, in the bench's process, so its
//!   CPU is not counted), as a real provider streams it.
//! * `deltas/working_directory_get_under_100_streams`: the round trip of
//!   `session/working-directory/get` while 100 sessions stream replies (a
//!   fake DeepSeek server pacing each fragment 5 ms apart) to the same
//!   client with deltas on. The bound: every call under 50 ms; the slowest
//!   is printed.
//!
//! `cargo bench -p dsh --bench deltas`.

#[path = "support/cpu.rs"]
mod cpu;
#[path = "support/runtime.rs"]
mod runtime;

use cpu::cpu;
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, criterion_group, criterion_main};
use dsh_fake_model::FakeServer;
use dsh_llm::scripted::Scenario;
use runtime::Runtime;
use serde_json::json;
use std::time::{Duration, Instant};

/// Fragments of the 1 MiB reply.
const PIECES: usize = 4096;

/// Sessions streaming at once in the latency bench.
const STREAMS: usize = 100;

/// Prompts the new session `session` (its answer is not waited for).
fn prompt(runtime: &mut Runtime, session: &str) {
    runtime.send(&json!({"jsonrpc": "2.0", "id": format!("p-{session}"),
        "method": "session/prompt", "params": {"sessionId": session,
        "contentBlocks": [{"type": "text", "text": "go"}]}}));
}

/// Benches `name`: the runtime's CPU time for one turn of a new session
/// (prompt → `idle`).
fn turns_cpu(group: &mut BenchmarkGroup<'_, WallTime>, name: &str, runtime: &mut Runtime) {
    let mut session = 0u64;
    group.bench_function(name, |b| {
        b.iter_custom(|iterations| {
            let before = cpu(runtime);
            for _ in 0..iterations {
                session += 1;
                let id = format!("s{session}");
                prompt(runtime, &id);
                let idle = format!(r#""sessionId":"{id}","status":"idle""#);
                runtime.until(|line| line.contains(&idle));
            }
            cpu(runtime).saturating_sub(before)
        });
    });
}

fn reply_cpu(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let piece = "abcdefghijklmnop".repeat(16); // 256 bytes
    let reply = json!({"text": vec![piece; PIECES]});
    let scenario = dir.path().join("scenario.json");
    let replies: Vec<_> = (0..2000).map(|_| reply.clone()).collect();
    std::fs::write(&scenario, json!({"replies": replies}).to_string())
        .unwrap_or_else(|e| panic!("{e}"));
    let mut group = c.benchmark_group("deltas/reply_1mib_cpu");
    group.sample_size(20);
    for (name, caps) in [("off", json!({})), ("on", json!({"deltas": true}))] {
        let home = dir.path().join(name);
        std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
        let mut runtime = Runtime::start(&home, &[]);
        runtime.request(
            "initialize",
            json!({"cwd": home, "provider": "scripted", "model": scenario,
            "clientCapabilities": caps}),
        );
        turns_cpu(&mut group, name, &mut runtime);
    }
    group.finish();
}

fn reply_http_cpu(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let tokio = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let piece = "abcdefghijklmnop".repeat(16); // 256 bytes
    let reply = json!({"text": vec![piece; PIECES]});
    let mut group = c.benchmark_group("deltas/reply_1mib_http_cpu");
    group.sample_size(20);
    for (name, caps) in [("off", json!({})), ("on", json!({"deltas": true}))] {
        let replies: Vec<_> = (0..2000).map(|_| reply.clone()).collect();
        let scenario: Scenario =
            serde_json::from_value(json!({ "replies": replies })).unwrap_or_else(|e| panic!("{e}"));
        let server = tokio
            .block_on(FakeServer::start(scenario, None))
            .unwrap_or_else(|e| panic!("{e}"));
        let home = dir.path().join(name);
        std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
        let env = [
            ("DEEPSEEK_BASE_URL", server.base_url()),
            ("DEEPSEEK_API_KEY", "bench".to_owned()),
        ];
        let mut runtime = Runtime::start(&home, &env);
        runtime.request(
            "initialize",
            json!({"cwd": home, "provider": "deepseek-official",
            "model": "deepseek-v4-flash", "clientCapabilities": caps}),
        );
        turns_cpu(&mut group, name, &mut runtime);
        drop(runtime);
        drop(server);
    }
    group.finish();
}

fn streams_latency(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let tokio = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    // Long enough to outlast the measurement: 6000 fragments 5 ms apart.
    let reply = json!({"text": vec!["fragment "; 6000], "delta_gap_ms": 5});
    let replies: Vec<_> = (0..STREAMS).map(|_| reply.clone()).collect();
    let scenario: Scenario =
        serde_json::from_value(json!({ "replies": replies })).unwrap_or_else(|e| panic!("{e}"));
    let server = tokio
        .block_on(FakeServer::start(scenario, None))
        .unwrap_or_else(|e| panic!("{e}"));
    let env = [
        ("DEEPSEEK_BASE_URL", server.base_url()),
        ("DEEPSEEK_API_KEY", "bench".to_owned()),
    ];
    let mut runtime = Runtime::start(dir.path(), &env);
    runtime.request(
        "initialize",
        json!({"cwd": dir.path(), "provider": "deepseek-official",
        "model": "deepseek-v4-flash", "clientCapabilities": {"deltas": true}}),
    );
    for i in 0..STREAMS {
        prompt(&mut runtime, &format!("stream-{i}"));
    }
    // Every session is streaming before the measurement starts.
    let mut streaming = std::collections::HashSet::new();
    runtime.until(|line| {
        if line.contains(r#""method":"session.delta""#)
            && let Some(at) = line.find(r#""sessionId":"stream-"#)
        {
            let rest = &line[at + 13..];
            streaming.insert(rest.split('"').next().unwrap_or_default().to_owned());
        }
        streaming.len() == STREAMS
    });
    let mut slowest = Duration::ZERO;
    let mut n = 0u64;
    let mut group = c.benchmark_group("deltas");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.warm_up_time(Duration::from_secs(1));
    group.bench_function("working_directory_get_under_100_streams", |b| {
        b.iter_custom(|iterations| {
            let mut total = Duration::ZERO;
            for _ in 0..iterations {
                n += 1;
                let id = format!("wd-{n}");
                let start = Instant::now();
                runtime.send(&json!({"jsonrpc": "2.0", "id": id,
                    "method": "session/working-directory/get", "params": {"sessionId": "stream-0"}}));
                let answer = format!(r#""id":"{id}""#);
                runtime.until(|line| line.contains(&answer));
                let took = start.elapsed();
                slowest = slowest.max(took);
                total += took;
            }
            total
        });
    });
    group.finish();
    eprintln!(
        "deltas: slowest session/working-directory/get under {STREAMS} streams: {:.1} ms",
        slowest.as_secs_f64() * 1000.0
    );
}

criterion_group!(benches, reply_cpu, reply_http_cpu, streams_latency);
criterion_main!(benches);
