//! What MCP servers cost the runtime (issue 29's bounds).
//!
//! * `mcp/initialize/{none,three_stdio_servers}`: the wall time from writing
//!   `initialize` to reading its response, a fresh runtime process each
//!   iteration (written as soon as it is spawned, so the process's own
//!   start-up counts, as a client sees it), without `mcpServers` and with
//!   three stdio servers (`tests/mcp/stdio_server.py` under three names).
//!   The bound: with servers is as fast as without, since servers start
//!   lazily; after the measurement the bench asserts that no server process
//!   was started (each writes its PID to `MCP_PID_FILE` on start).
//! * `mcp/turn_cpu/{builtin,mcp}`: the runtime's CPU time (its own process,
//!   all threads, from `/proc/<pid>/task/*/schedstat`; the server's Python
//!   process is not counted) for one turn of a new session in which the model
//!   (a fake DeepSeek server over HTTP, in the bench's process) calls one tool
//!   and then answers text: `job_list {}` on a runtime without MCP servers,
//!   and `mcp__s__echo {"text": "hi"}` on one with the server `s` already
//!   started by a warm-up turn. Each new session reuses that server and its
//!   roster (read once by `tools/list` at the start; no `tools/list` per
//!   session), so what a turn adds is the roster in both model requests and
//!   the call over stdio. The bound: the mean MCP turn costs under 2 ms more than the
//!   built-in one; the difference (the means over every timed turn,
//!   criterion's warm-up included) is printed at the end.
//!
//! Needs a Python with the `mcp` package: `DSH_BENCH_PYTHON`, else
//! `<workspace>/target/venv/bin/python`. Without one the bench says how to
//! make it and measures nothing.
//!
//! `cargo bench -p dsh --bench mcp`.

#[path = "support/cpu.rs"]
mod cpu;
#[path = "support/runtime.rs"]
mod runtime;

use cpu::cpu;
use criterion::{Criterion, SamplingMode};
use dsh_fake_model::FakeServer;
use dsh_llm::scripted::Scenario;
use runtime::Runtime;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Turns the fake model is scripted for, per variant of `mcp/turn_cpu`.
const TURNS: usize = 20_000;

/// The per-turn CPU overhead bound of an MCP tool call, in ms.
const OVERHEAD_BOUND_MS: f64 = 2.0;

/// One turn of the new session `session` (prompt → `idle`); returns its
/// `tool/result` event line.
fn run_turn(runtime: &mut Runtime, session: &str) -> String {
    runtime.send(&json!({"jsonrpc": "2.0", "id": format!("p-{session}"),
        "method": "session/prompt", "params": {"sessionId": session,
        "contentBlocks": [{"type": "text", "text": "go"}]}}));
    let idle = format!(r#""sessionId":"{session}","status":"idle""#);
    let mut result = None;
    runtime.until(|line| {
        if line.contains(r#""type":"tool/result""#) {
            result = Some(line.to_owned());
        }
        line.contains(&idle)
    });
    let result = result.unwrap_or_else(|| panic!("session {session}: no tool/result"));
    assert!(
        !result.contains(r#""isError":true"#),
        "session {session}: the tool failed: {result}"
    );
    result
}

/// The workspace's root directory.
fn workspace() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .unwrap_or(manifest)
        .to_path_buf()
}

/// The Python that runs the MCP server, if it can import `mcp`.
fn python() -> Option<PathBuf> {
    let python = std::env::var_os("DSH_BENCH_PYTHON")
        .map_or_else(|| workspace().join("target/venv/bin/python"), PathBuf::from);
    let works = Command::new(&python)
        .args(["-c", "import mcp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if works {
        return Some(python);
    }
    eprintln!(
        "mcp bench: {} cannot `import mcp`; nothing measured.\n\
         Set DSH_BENCH_PYTHON to a Python that has the `mcp` package, or make the default one:\n  \
         python3 -m venv target/venv && target/venv/bin/pip install mcp==2.3.0",
        python.display()
    );
    None
}

/// An `mcpServers` entry running `tests/mcp/stdio_server.py`.
fn stdio_server(name: &str, python: &Path, env: &Value) -> Value {
    let script = workspace().join("tests/mcp/stdio_server.py");
    json!({"name": name, "command": python, "args": [script], "env": env})
}

fn initialize(c: &mut Criterion, python: &Path) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let scenario = dir.path().join("scenario.json");
    std::fs::write(
        &scenario,
        json!({"replies": [{"text": "done"}]}).to_string(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let pids = dir.path().join("pids.txt");
    let env = json!({"MCP_PID_FILE": pids});
    let plain = json!({"cwd": dir.path(), "provider": "scripted", "model": scenario});
    let mut with_servers = plain.clone();
    with_servers["mcpServers"] = ["a", "b", "c"]
        .iter()
        .map(|name| stdio_server(name, python, &env))
        .collect();
    let mut group = c.benchmark_group("mcp/initialize");
    group.sample_size(20);
    for (name, params) in [("none", &plain), ("three_stdio_servers", &with_servers)] {
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let mut runtime = Runtime::start(dir.path(), &[]);
                    let start = Instant::now();
                    runtime.request("initialize", params.clone());
                    total += start.elapsed();
                }
                total
            });
        });
    }
    group.finish();
    assert!(
        !pids.exists(),
        "initialize started an MCP server: {}",
        std::fs::read_to_string(&pids).unwrap_or_default()
    );
}

fn turn_cpu(c: &mut Criterion, python: &Path) {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let tokio = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let mut group = c.benchmark_group("mcp/turn_cpu");
    // About 90 ms of wall time a turn (criterion sizes the samples by wall
    // time): flat samples, some 170 turns per variant.
    group.sample_size(20);
    group.sampling_mode(SamplingMode::Flat);
    group.warm_up_time(Duration::from_secs(2));
    group.measurement_time(Duration::from_secs(15));
    let mut means = Vec::new();
    let variants = [
        ("builtin", "job_list", json!({})),
        ("mcp", "mcp__s__echo", json!({"text": "hi"})),
    ];
    for (name, tool, arguments) in variants {
        let turn = [
            json!({"blocks": [{"tool_call": {"id": "t1", "name": tool, "arguments": arguments}}]}),
            json!({"text": "done"}),
        ];
        let replies: Vec<_> = turn.iter().cycle().take(2 * TURNS).cloned().collect();
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
        let mut params =
            json!({"cwd": home, "provider": "deepseek-official", "model": "deepseek-v4-flash"});
        if name == "mcp" {
            params["mcpServers"] = json!([stdio_server("s", python, &json!({}))]);
        }
        runtime.request("initialize", params);
        let result = run_turn(&mut runtime, "warm-up");
        assert!(
            name != "mcp" || result.contains(r#""content":[{"type":"text","text":"hi"}]"#),
            "the MCP call did not echo: {result}"
        );
        let mut session = 0usize;
        let mut spent = Duration::ZERO;
        group.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let before = cpu(&runtime);
                for _ in 0..iterations {
                    session += 1;
                    assert!(session < TURNS, "the fake model has no turn left");
                    run_turn(&mut runtime, &format!("s{session}"));
                }
                let cpu = cpu(&runtime).saturating_sub(before);
                spent += cpu;
                cpu
            });
        });
        // None when a filter skipped the variant.
        let turns = u32::try_from(session).unwrap_or(u32::MAX);
        means.push(spent.checked_div(turns));
        drop(runtime);
        drop(server);
    }
    group.finish();
    if let [Some(builtin), Some(mcp)] = means[..] {
        let overhead = (mcp.as_secs_f64() - builtin.as_secs_f64()) * 1000.0;
        eprintln!(
            "mcp: mean runtime CPU per turn: builtin {:.3} ms, mcp {:.3} ms; \
             MCP overhead {overhead:.3} ms per turn (bound: under {OVERHEAD_BOUND_MS} ms: {})",
            builtin.as_secs_f64() * 1000.0,
            mcp.as_secs_f64() * 1000.0,
            if overhead < OVERHEAD_BOUND_MS {
                "met"
            } else {
                "EXCEEDED"
            },
        );
    }
}

fn main() {
    let Some(python) = python() else {
        return;
    };
    let mut c = Criterion::default().configure_from_args();
    initialize(&mut c, &python);
    turn_cpu(&mut c, &python);
    c.final_summary();
}
