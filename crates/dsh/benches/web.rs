//! `dsh web`'s start-up: spawn to the first page served — the URL read
//! from stdout, the token exchanged for the cookie, `GET /` answered with
//! the page (scripted echo model, a `DSH_HOME` kept across runs, plain
//! HTTP/1.1 over a local socket). Stopping the process is not timed.
//!
//! `cargo bench -p dsh --bench web`.

use criterion::{Criterion, criterion_group, criterion_main};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One HTTP/1.1 request on a fresh connection; the response, whole.
fn get(authority: &str, path: &str, cookie: Option<&str>) -> String {
    let mut stream = TcpStream::connect(authority).unwrap_or_else(|e| panic!("connect: {e}"));
    let cookie = cookie.map_or_else(String::new, |c| format!("Cookie: {c}\r\n"));
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\n{cookie}Connection: close\r\n\r\n"
    )
    .unwrap_or_else(|e| panic!("write: {e}"));
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .unwrap_or_else(|e| panic!("read: {e}"));
    response
}

/// Spawn of `dsh web` to the page served to a browser holding its cookie.
fn first_page(dir: &Path) -> Duration {
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dsh"))
        .args(["web", "--no-open", "--port", "0", "--provider", "scripted"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("DSH_HOME", dir.join("home"))
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap_or_else(|e| panic!("read: {e}"));
    let url = line
        .trim()
        .strip_prefix("dsh web: http://")
        .unwrap_or_else(|| panic!("unexpected line: {line}"));
    let (authority, query) = url.split_once('/').unwrap_or_else(|| panic!("{url}"));
    let exchanged = get(authority, &format!("/{query}"), None);
    let cookie = exchanged
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .and_then(|c| c.split(';').next())
        .unwrap_or_else(|| panic!("no cookie: {exchanged}"))
        .to_owned();
    let page = get(authority, "/", Some(&cookie));
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    let elapsed = start.elapsed();
    let _ = child.kill();
    let _ = child.wait();
    elapsed
}

fn start_to_first_page(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let mut group = c.benchmark_group("web");
    group.sample_size(20);
    group.bench_function("spawn_to_first_page", |b| {
        b.iter_custom(|iterations| (0..iterations).map(|_| first_page(dir.path())).sum());
    });
    group.finish();
}

criterion_group!(benches, start_to_first_page);
criterion_main!(benches);
