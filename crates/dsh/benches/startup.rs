//! Start-up cost, side by side: spawn of `dsh --version` to its exit, and
//! spawn of `dsh --profile sdk` to the `initialize` response on stdout
//! (scripted echo model, a `DSH_HOME` kept across runs, a clean
//! environment). What follows the response (closing stdin, the exit) is
//! not timed. Prints the median of every timed spawn besides criterion's
//! estimates.
//!
//! `cargo bench -p dsh --bench startup` measures the bench profile's
//! binary; `--profile wheel-test` measures the release build without LTO.
//! `DSH_STARTUP_BIN=<path>` measures another binary (an older build).

use criterion::{Criterion, criterion_group, criterion_main};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The binary measured: `DSH_STARTUP_BIN`, else this package's `dsh`.
fn binary() -> PathBuf {
    std::env::var_os("DSH_STARTUP_BIN")
        .map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_dsh")), PathBuf::from)
}

/// `dsh` with nothing of the caller's environment but `PATH`.
fn command(bin: &Path, dir: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("DSH_HOME", dir.join("home"))
        .current_dir(dir);
    cmd
}

/// Spawn of `dsh --version` to its exit.
fn version(bin: &Path, dir: &Path) -> Duration {
    let start = Instant::now();
    let status = command(bin, dir)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status();
    let elapsed = start.elapsed();
    assert!(status.is_ok_and(|s| s.success()), "dsh --version failed");
    elapsed
}

/// Spawn of `dsh --profile sdk` to its `initialize` response; the rest of
/// the run (stdin closed, the exit) is not timed.
fn initialize(bin: &Path, dir: &Path, request: &[u8]) -> Duration {
    let start = Instant::now();
    let mut child = command(bin, dir)
        .args(["--profile", "sdk"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()));
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
    stdin
        .write_all(request)
        .unwrap_or_else(|e| panic!("write initialize: {e}"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap_or_else(|e| panic!("read the response: {e}"));
    let elapsed = start.elapsed();
    assert!(
        line.starts_with(r#"{"jsonrpc":"2.0","id":"1","result":"#),
        "initialize failed: {line}"
    );
    drop(stdin);
    let _ = child.wait();
    elapsed
}

/// The median of `samples`, in milliseconds.
fn median_ms(samples: &mut [Duration]) -> f64 {
    samples.sort_unstable();
    samples
        .get(samples.len() / 2)
        .map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
}

/// Times `run` once per iteration, keeping every sample for the median.
fn timed(samples: &mut Vec<Duration>, iters: u64, mut run: impl FnMut() -> Duration) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        let one = run();
        samples.push(one);
        total += one;
    }
    total
}

/// Both measurements, one after the other, on one `DSH_HOME`.
fn startup(c: &mut Criterion) {
    let bin = binary();
    let dir = std::env::temp_dir().join(format!("dsh-startup-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let request = format!(
        "{}\n",
        serde_json::json!({"jsonrpc": "2.0", "id": "1", "method": "initialize",
            "params": {"cwd": dir, "provider": "scripted", "model": "echo"}})
    );
    let mut group = c.benchmark_group("startup");
    group.sample_size(50);
    group.measurement_time(Duration::from_secs(8));
    let mut versions = Vec::new();
    group.bench_function("spawn to --version exit", |b| {
        b.iter_custom(|iters| timed(&mut versions, iters, || version(&bin, &dir)));
    });
    let mut inits = Vec::new();
    group.bench_function("spawn to initialize answered", |b| {
        b.iter_custom(|iters| {
            timed(&mut inits, iters, || {
                initialize(&bin, &dir, request.as_bytes())
            })
        });
    });
    group.finish();
    println!(
        "{}: median --version {:.2} ms ({} spawns), median initialize {:.2} ms ({} spawns)",
        bin.display(),
        median_ms(&mut versions),
        versions.len(),
        median_ms(&mut inits),
        inits.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, startup);
criterion_main!(benches);
