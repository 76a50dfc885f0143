//! `session/list` over 10 000 stored sessions (issue 28's bound: under
//! 50 ms). The sessions (ten workspaces of 1 000, each a short logged turn
//! with a title) and their summaries are made once; then one `session/list`
//! request (the default page of 50) is timed from its line to its answer:
//!
//! * `warm`: one runtime answers every iteration (its cache is current);
//! * `cold`: every iteration is a new runtime's first listing, which starts
//!   from the summaries' list file;
//! * `cold_sidecars_only`: the same without that file, so one sidecar per
//!   session is read.
//!
//! `cargo bench -p dsh --bench session_list`.

#[path = "support/runtime.rs"]
mod runtime;

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_session::store::{Encoding, ListQuery, SessionHeader, SessionStore, SessionWriter};
use runtime::Runtime;
use std::path::Path;
use std::time::{Duration, Instant};

/// Stored sessions.
const SESSIONS: u64 = 10_000;
/// Workspaces they are spread over.
const WORKSPACES: u64 = 10;

/// Writes every session's log, then lists them once so that every summary
/// (and the list file) is written.
fn populate(home: &Path) {
    let store = SessionStore::new(home);
    for n in 0..SESSIONS {
        let cwd = format!("/bench/ws-{}", n % WORKSPACES);
        let created = 1_796_000_000_000 + n * 10;
        let header = SessionHeader::root(format!("session-{n:05}"), created, Some(cwd));
        let mut writer = SessionWriter::create(&store, &header, Encoding::Zstd)
            .unwrap_or_else(|e| panic!("create: {e}"));
        let events = [
            format!(
                r#"{{"type":"turn/start","seq":0,"time":{},"data":{{"turn":1}}}}"#,
                created + 1
            ),
            format!(
                r#"{{"type":"session/title","seq":1,"time":{},"data":{{"title":"Task number {n}","messageSeqs":[],"source":{{"kind":"fallback"}}}}}}"#,
                created + 2
            ),
            format!(
                r#"{{"type":"turn/end","seq":2,"time":{},"data":{{"turn":1,"reason":{{"kind":"completed"}}}}}}"#,
                created + 3
            ),
        ];
        for event in &events {
            writer
                .append(event)
                .unwrap_or_else(|e| panic!("append: {e}"));
        }
        writer.close().unwrap_or_else(|e| panic!("close: {e}"));
    }
    let query = ListQuery {
        limit: 50,
        ..ListQuery::default()
    };
    let page = store
        .list_sessions(&query)
        .unwrap_or_else(|e| panic!("list: {e}"));
    assert_eq!(page.sessions.len(), 50);
}

/// A runtime initialized over the benched `DSH_HOME`.
fn start(dir: &Path) -> Runtime {
    let mut runtime = Runtime::start(dir, &[]);
    runtime.request(
        "initialize",
        serde_json::json!({"cwd": dir, "provider": "scripted", "model": "echo"}),
    );
    runtime
}

/// One timed `session/list`.
fn timed_list(runtime: &mut Runtime) -> Duration {
    let start = Instant::now();
    let line = runtime.request("session/list", serde_json::json!({}));
    let elapsed = start.elapsed();
    assert!(line.contains("session-09999"), "{line}");
    elapsed
}

fn session_list(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let home = dir.path().join("home");
    let made = Instant::now();
    populate(&home);
    eprintln!(
        "{SESSIONS} sessions and their summaries made in {:.1} s",
        made.elapsed().as_secs_f64()
    );
    let list_file = home.join("session-summary").join("~listing");
    let mut group = c.benchmark_group("session_list");
    group.sample_size(10);
    let mut runtime = start(dir.path());
    group.bench_function("warm", |b| {
        b.iter_custom(|iterations| (0..iterations).map(|_| timed_list(&mut runtime)).sum());
    });
    drop(runtime);
    group.bench_function("cold", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| timed_list(&mut start(dir.path())))
                .sum()
        });
    });
    let saved = std::fs::read(&list_file).unwrap_or_else(|e| panic!("{e}"));
    group.bench_function("cold_sidecars_only", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| {
                    let _ = std::fs::remove_file(&list_file);
                    timed_list(&mut start(dir.path()))
                })
                .sum()
        });
    });
    group.finish();
    std::fs::write(&list_file, saved).unwrap_or_else(|e| panic!("{e}"));
}

criterion_group!(benches, session_list);
criterion_main!(benches);
