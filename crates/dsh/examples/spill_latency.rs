//! Issue 15, row 6: how long a `bash` call running `yes` with `timeoutMs`
//! 8000 takes to answer, and how another session of the same runtime is
//! served meanwhile, with the default spill limits.
//!
//! ```sh
//! cargo build -p dsh --example spill_latency
//! target/debug/examples/spill_latency [path/to/dsh]
//! ```
//!
//! One `dsh --profile sdk` with `DSH_HOME` in a temporary directory
//! (deleted afterwards). A scripted model calls `bash` with `yes`; while
//! it runs and for 3 s after its result (the command keeps running in the
//! background), a prober asks the other session for its working directory
//! every 50 ms and plays echo turns back to back. Printed: the result's
//! latency, the prober's worst latencies, the most bytes the spill
//! directory held, and what it holds after shutdown.

use dsh_protocol::catalog::{EventKind, ToolResult, TurnEnd};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the prober keeps going after the `bash` result.
const AFTER_RESULT: Duration = Duration::from_secs(3);

/// Interval between working-directory probes.
const PROBE_EVERY: Duration = Duration::from_millis(50);

fn main() {
    let dsh = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(default_dsh);
    let base = std::env::temp_dir().join(format!("dsh-spill-latency-{}", std::process::id()));
    let outcome = run(&dsh, &base);
    let _ = std::fs::remove_dir_all(&base);
    if let Err(err) = outcome {
        eprintln!("{err}");
        std::process::exit(1);
    }
}

fn run(dsh: &Path, base: &Path) -> Result<(), String> {
    let ws = base.join("ws");
    let home = base.join("home");
    std::fs::create_dir_all(&ws).map_err(|e| format!("mkdir: {e}"))?;
    let scenario = base.join("scenario.json");
    let replies = json!([
        {"blocks": [{"tool_call": {"id": "call_yes", "name": "bash", "arguments": {
            "command": "yes", "description": "endless output", "timeoutMs": 8000}}}],
         "stop": "tool_use"},
        {"text": "done"}
    ]);
    std::fs::write(&scenario, json!({ "replies": replies }).to_string())
        .map_err(|e| format!("scenario: {e}"))?;
    let mut child = Command::new(dsh)
        .args(["--profile", "sdk"])
        .env("DSH_HOME", &home)
        .env("HOME", base)
        .env_remove("DEEPSEEK_API_KEY")
        .current_dir(&ws)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn {}: {e}", dsh.display()))?;
    let mut stdin = child.stdin.take().ok_or("no stdin")?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let (frames, incoming) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(frame) = serde_json::from_str(&line)
                && frames.send(frame).is_err()
            {
                return;
            }
        }
    });
    let next = |limit: Duration| incoming.recv_timeout(limit).ok();
    let wait_for = |pred: &dyn Fn(&Value) -> bool| -> Result<(), String> {
        loop {
            let frame = next(Duration::from_secs(30)).ok_or("the runtime went silent")?;
            if pred(&frame) {
                return Ok(());
            }
        }
    };
    send(
        &mut stdin,
        "init",
        "initialize",
        json!({"cwd": ws, "provider": "scripted", "model": "echo"}),
    )?;
    wait_for(&|f| f["id"] == "init")?;
    prompt(&mut stdin, "prober", "warm")?;
    wait_for(&|f| is_turn_end(f, "prober"))?;
    send(
        &mut stdin,
        "init-attack",
        "initialize",
        json!({"cwd": ws, "provider": "scripted", "model": scenario}),
    )?;
    wait_for(&|f| f["id"] == "init-attack")?;

    let started = Instant::now();
    prompt(&mut stdin, "attack", "go")?;
    let spill = home.join("tool-output");
    let mut result_at = None;
    let mut probe: Option<(u64, Instant)> = None;
    let mut probes = 0u64;
    let mut next_probe = Instant::now();
    let mut echo: Option<Instant> = None;
    let mut echoes = 0u64;
    let (mut worst_probe, mut worst_echo) = (Duration::ZERO, Duration::ZERO);
    let mut peak_spill = 0u64;
    while result_at.is_none_or(|at: Duration| started.elapsed() < at + AFTER_RESULT) {
        if probe.is_none() && Instant::now() >= next_probe {
            probes += 1;
            send(
                &mut stdin,
                &format!("wd-{probes}"),
                "session/working-directory/get",
                json!({"sessionId": "prober"}),
            )?;
            probe = Some((probes, Instant::now()));
        }
        if echo.is_none() {
            echoes += 1;
            prompt(&mut stdin, "prober", &format!("echo {echoes}"))?;
            echo = Some(Instant::now());
        }
        peak_spill = peak_spill.max(dir_bytes(&spill));
        let Some(frame) = next(Duration::from_millis(10)) else {
            continue;
        };
        if let Some((n, sent)) = probe
            && frame["id"] == json!(format!("wd-{n}"))
        {
            worst_probe = worst_probe.max(sent.elapsed());
            probe = None;
            next_probe = Instant::now() + PROBE_EVERY;
        }
        if let Some(sent) = echo
            && is_turn_end(&frame, "prober")
        {
            worst_echo = worst_echo.max(sent.elapsed());
            echo = None;
        }
        if frame.pointer("/params/sessionId") == Some(&json!("attack"))
            && frame.pointer("/params/event/type") == Some(&json!(<ToolResult>::KIND))
        {
            result_at = Some(started.elapsed());
        }
    }
    peak_spill = peak_spill.max(dir_bytes(&spill));
    let stopping = Instant::now();
    send(&mut stdin, "bye", "shutdown", json!({}))?;
    let _ = child.wait();
    let shutdown = stopping.elapsed();
    let left = dir_bytes(&spill);
    let result = result_at.unwrap_or_default();
    println!("| figure | value |");
    println!("|---|---|");
    println!(
        "| `bash` `yes` (timeoutMs 8000): result after | {:.2} s |",
        result.as_secs_f64()
    );
    println!(
        "| other session, `session/working-directory/get`: worst of {probes} | {} ms |",
        worst_probe.as_millis()
    );
    println!(
        "| other session, echo turn: worst of {echoes} | {} ms |",
        worst_echo.as_millis()
    );
    println!(
        "| spill directory, most bytes held | {:.1} MiB |",
        peak_spill as f64 / (1024.0 * 1024.0)
    );
    println!("| shutdown took | {} ms |", shutdown.as_millis());
    println!("| spill directory after shutdown | {left} bytes |");
    Ok(())
}

fn send(stdin: &mut ChildStdin, id: &str, method: &str, params: Value) -> Result<(), String> {
    let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    writeln!(stdin, "{frame}").map_err(|e| format!("write: {e}"))
}

fn prompt(stdin: &mut ChildStdin, session: &str, text: &str) -> Result<(), String> {
    send(
        stdin,
        &format!("prompt-{session}-{text}"),
        "session/prompt",
        json!({"sessionId": session, "contentBlocks": [{"type": "text", "text": text}]}),
    )
}

fn is_turn_end(frame: &Value, session: &str) -> bool {
    frame.pointer("/params/sessionId") == Some(&json!(session))
        && frame.pointer("/params/event/type") == Some(&json!(TurnEnd::KIND))
}

/// Bytes of the files in `dir` (0 when it does not exist).
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.metadata().ok())
        .map(|meta| meta.len())
        .sum()
}

/// `dsh` next to the directory holding this example.
fn default_dsh() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("dsh")))
        .unwrap_or_else(|| PathBuf::from("dsh"))
}
