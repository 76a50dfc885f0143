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

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_session::store::{Encoding, ListQuery, SessionHeader, SessionStore, SessionWriter};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
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

struct Runtime {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next: u64,
}

impl Runtime {
    fn start(dir: &Path) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dsh"))
            .args(["--profile", "sdk"])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir)
            .env("DSH_HOME", dir.join("home"))
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn: {e}"));
        let stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut runtime = Self {
            child,
            stdin,
            lines,
            next: 0,
        };
        runtime.call(
            "initialize",
            serde_json::json!({"cwd": dir, "provider": "scripted", "model": "echo"}),
        );
        runtime
    }

    /// Sends a request and waits for its answer line.
    fn call(&mut self, method: &str, params: serde_json::Value) -> String {
        self.next += 1;
        let id = format!("r{}", self.next);
        let frame =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{frame}").unwrap_or_else(|e| panic!("write: {e}"));
        self.stdin.flush().unwrap_or_else(|e| panic!("flush: {e}"));
        let wanted = format!(r#""id":"{id}""#);
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|e| panic!("no answer: {e}"));
            if line.contains(&wanted) {
                assert!(line.contains(r#""result""#), "{line}");
                return line;
            }
        }
    }

    /// One timed `session/list`.
    fn timed_list(&mut self) -> Duration {
        let start = Instant::now();
        let line = self.call("session/list", serde_json::json!({}));
        let elapsed = start.elapsed();
        assert!(line.contains("session-09999"), "{line}");
        elapsed
    }

    fn stop(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
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
    let mut runtime = Runtime::start(dir.path());
    group.bench_function("warm", |b| {
        b.iter_custom(|iterations| (0..iterations).map(|_| runtime.timed_list()).sum());
    });
    runtime.stop();
    group.bench_function("cold", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| {
                    let mut runtime = Runtime::start(dir.path());
                    let took = runtime.timed_list();
                    runtime.stop();
                    took
                })
                .sum()
        });
    });
    let saved = std::fs::read(&list_file).unwrap_or_else(|e| panic!("{e}"));
    group.bench_function("cold_sidecars_only", |b| {
        b.iter_custom(|iterations| {
            (0..iterations)
                .map(|_| {
                    let _ = std::fs::remove_file(&list_file);
                    let mut runtime = Runtime::start(dir.path());
                    let took = runtime.timed_list();
                    runtime.stop();
                    took
                })
                .sum()
        });
    });
    group.finish();
    std::fs::write(&list_file, saved).unwrap_or_else(|e| panic!("{e}"));
}

criterion_group!(benches, session_list);
criterion_main!(benches);
