//! Peak memory of the runtime while a scripted model uses the file tools
//! on big and special files: one fresh `dsh --profile sdk` per case, its
//! `VmHWM` (peak resident set) read from `/proc` once the turn ends.
//!
//! ```sh
//! cargo build -p dsh --example file_tool_memory
//! target/debug/examples/file_tool_memory [path/to/dsh]
//! ```
//!
//! Without an argument the `dsh` next to the examples directory is used.
//! A case whose runtime passes 2 GiB resident is killed and reported as
//! such; a turn that does not end within 20 s is reported as hung.

use dsh_protocol::catalog::{EventKind, ToolResult, TurnEnd};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Resident size past which a case is killed.
const KILL_AT_KIB: u64 = 2 * 1024 * 1024;

/// How long a turn may take before the case counts as hung.
const TURN_LIMIT: Duration = Duration::from_secs(20);

const MIB: usize = 1024 * 1024;

fn main() {
    let dsh = std::env::args_os()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(default_dsh);
    let base = std::env::temp_dir().join(format!("dsh-file-tool-memory-{}", std::process::id()));
    let ws = base.join("ws");
    if let Err(err) = std::fs::create_dir_all(&ws) {
        eprintln!("cannot create {}: {err}", ws.display());
        std::process::exit(1);
    }
    let newlines = ws.join("newlines.txt");
    let text = ws.join("text.txt");
    let fifo = ws.join("fifo");
    let prepared = std::fs::write(&newlines, vec![b'\n'; 64 * MIB - 1])
        .and_then(|()| std::fs::write(&text, text_lines(64 * MIB - 1)))
        .and_then(|()| make_fifo(&fifo));
    if let Err(err) = prepared {
        eprintln!("cannot prepare the files: {err}");
        std::process::exit(1);
    }
    let read = |path: &Path| json!({"name": "read", "arguments": {"file_path": path}});
    let edit = |path: &Path, old: &str, new: &str| json!({"name": "edit", "arguments": {"file_path": path, "old_string": old, "new_string": new}});
    let cases: Vec<(&str, Vec<Value>)> = vec![
        ("baseline: a turn without tool calls", vec![]),
        ("read 64 MiB of newlines", vec![read(&newlines)]),
        ("read 64 MiB of 80-column lines", vec![read(&text)]),
        (
            "read + edit 64 MiB of 80-column lines",
            vec![
                read(&text),
                edit(&text, "line 000000001 ", "LINE 000000001 "),
            ],
        ),
        ("read /dev/zero", vec![read(Path::new("/dev/zero"))]),
        ("read /dev/urandom", vec![read(Path::new("/dev/urandom"))]),
        ("read a FIFO nobody writes", vec![read(&fifo)]),
    ];
    println!("| case | file size | runtime peak (VmHWM) | outcome |");
    println!("|---|---|---|---|");
    for (name, calls) in cases {
        let size = calls
            .first()
            .and_then(|c| c["arguments"]["file_path"].as_str())
            .and_then(|p| std::fs::metadata(p).ok())
            .filter(|m| m.is_file())
            .map_or_else(|| "-".to_owned(), |m| mib(m.len() / 1024));
        let (peak, outcome) = run_case(&dsh, &base, &calls);
        println!("| {name} | {size} | {} | {outcome} |", mib(peak));
    }
    let _ = std::fs::remove_dir_all(&base);
}

/// `<target>/<profile>/dsh` for `<target>/<profile>/examples/<this>`.
fn default_dsh() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("dsh")))
        .unwrap_or_else(|| PathBuf::from("dsh"))
}

fn text_lines(size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size);
    let mut n = 0u64;
    while out.len() < size {
        n += 1;
        let line = format!("line {n:09} {}\n", "x".repeat(64));
        out.extend_from_slice(line.as_bytes());
    }
    out.truncate(size);
    out
}

fn make_fifo(path: &Path) -> std::io::Result<()> {
    let status = Command::new("mkfifo").arg(path).status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other("mkfifo failed"))
    }
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// Runs one turn in which the model makes `calls`; returns the peak
/// resident size in KiB and what happened.
fn run_case(dsh: &Path, base: &Path, calls: &[Value]) -> (u64, String) {
    let case = base.join(format!("case-{}", uuid_like()));
    let home = case.join("home");
    let scenario = case.join("scenario.json");
    let mut replies: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, call)| {
            json!({"blocks": [{"tool_call": {"id": format!("call_{i}"), "name": call["name"], "arguments": call["arguments"]}}], "stop": "tool_use"})
        })
        .collect();
    replies.push(json!({"text": "done"}));
    if let Err(err) = std::fs::create_dir_all(&case)
        .and_then(|()| std::fs::write(&scenario, json!({"replies": replies}).to_string()))
    {
        return (0, format!("cannot prepare: {err}"));
    }
    let child = Command::new(dsh)
        .args(["--profile", "sdk"])
        .env("DSH_HOME", &home)
        .env("HOME", &case)
        .env("DSH_PERMISSION_MODE", "danger-full-access")
        .env_remove("DEEPSEEK_API_KEY")
        .current_dir(base)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(err) => return (0, format!("cannot start {}: {err}", dsh.display())),
    };
    let outcome = drive(&mut child, base, &scenario, calls.len());
    let peak = status_kib(child.id(), "VmHWM:").unwrap_or(0);
    let _ = child.kill();
    let _ = child.wait();
    (peak, outcome)
}

fn drive(child: &mut Child, ws_parent: &Path, scenario: &Path, calls: usize) -> String {
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return "no pipes".to_owned();
    };
    let (tx, frames) = mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Ok(frame) = serde_json::from_str(&line) {
                if tx.send(frame).is_err() {
                    break;
                }
            }
        }
    });
    let requests = [
        json!({"jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {"cwd": ws_parent.join("ws"), "provider": "scripted", "model": scenario}}),
        json!({"jsonrpc": "2.0", "id": "prompt", "method": "session/prompt",
            "params": {"sessionId": "memory", "contentBlocks": [{"type": "text", "text": "go"}]}}),
    ];
    for request in requests {
        if writeln!(stdin, "{request}").is_err() {
            return "the runtime closed its input".to_owned();
        }
    }
    let started = Instant::now();
    let mut results = Vec::new();
    while started.elapsed() < TURN_LIMIT {
        if status_kib(child.id(), "VmRSS:").is_some_and(|rss| rss > KILL_AT_KIB) {
            return format!(
                "killed past {} after {:.1} s",
                mib(KILL_AT_KIB),
                started.elapsed().as_secs_f64()
            );
        }
        let Ok(frame) = frames.recv_timeout(Duration::from_millis(20)) else {
            if let Ok(Some(status)) = child.try_wait() {
                return format!("the runtime exited: {status}");
            }
            continue;
        };
        let Some(event) = frame.pointer("/params/event") else {
            continue;
        };
        match event["type"].as_str() {
            Some(k) if k == <ToolResult>::KIND => {
                let message = &event["data"]["message"];
                let text: String = message["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|b| b["text"].as_str())
                    .collect();
                let first: String = text.lines().next().unwrap_or("").chars().take(90).collect();
                let kind = if message["isError"] == json!(true) {
                    "error"
                } else {
                    "ok"
                };
                results.push(format!("{kind}: {first}"));
            }
            Some(k) if k == TurnEnd::KIND => {
                if results.len() < calls {
                    results.push("turn ended early".to_owned());
                }
                return format!(
                    "{} in {:.2} s",
                    if results.is_empty() {
                        "turn ended".to_owned()
                    } else {
                        results.join("; ")
                    },
                    started.elapsed().as_secs_f64()
                );
            }
            _ => {}
        }
    }
    format!("hung: no turn end in {} s", TURN_LIMIT.as_secs())
}

/// A `/proc/<pid>/status` field in KiB.
fn status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

fn uuid_like() -> String {
    static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    COUNTER
        .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
        .to_string()
}
