//! Issue 15's provider and `web_fetch` attacks against a real `dsh`, each
//! in a fresh runtime, with a second session of the same runtime probed
//! while the attack runs: `session/working-directory/get` and an echo turn
//! are timed again and again until the attack's turn ends. Prints, per
//! attack, its duration, how it ended, the runtime's peak RSS and the
//! prober's worst latencies (the targets: 50 ms for the get,
//! 100 ms for an echo turn).
//!
//! Frames over 1 MiB (the attack's own huge events) are not parsed by the
//! prober, so its figures are the runtime's.
//!
//! `cargo build --release -p dsh && cargo run --release -p dsh-fake-model
//! --example attacks [-- <path to dsh> [<filter>]]` (default
//! `target/release/dsh`; with a filter, only the attacks whose name
//! contains it run, e.g. `"row 13"`).

use dsh_fake_model::FakeServer;
use dsh_llm::scripted::Scenario;
use dsh_protocol::catalog::{EventKind, ToolResult, TurnEnd};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

struct Runtime {
    child: Child,
    stdin: ChildStdin,
    frames: mpsc::Receiver<Value>,
    next_id: u64,
}

impl Runtime {
    fn start(dsh: &Path, dir: &Path, env: &[(&str, String)]) -> Self {
        let mut cmd = Command::new(dsh);
        cmd.args(["--profile", "sdk"])
            .env("DSH_HOME", dir.join("home"))
            .env("HOME", dir)
            .env("DSH_WEB_FETCH_PRIVATE", "allow")
            .env("DSH_RETRY_INITIAL_MS", "20")
            .env("DSH_RETRY_MAX_MS", "100")
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        for (key, value) in env {
            cmd.env(key, value);
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", dsh.display()));
        let stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        let (tx, frames) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::with_capacity(1 << 20, stdout)
                .lines()
                .map_while(Result::ok)
            {
                // The prober's own parse of a huge frame (the attack's
                // `assistant/message`) would count against the runtime:
                // such frames are passed on unread.
                if line.len() > 1 << 20 {
                    if tx.send(json!({"huge": line.len()})).is_err() {
                        return;
                    }
                    continue;
                }
                if let Ok(frame) = serde_json::from_str::<Value>(&line)
                    && tx.send(frame).is_err()
                {
                    return;
                }
            }
        });
        Self {
            child,
            stdin,
            frames,
            next_id: 0,
        }
    }

    fn send(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(format!("r{}", self.next_id));
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(self.stdin, "{frame}").unwrap_or_else(|e| panic!("write: {e}"));
        id
    }

    fn next(&mut self) -> Value {
        self.frames
            .recv_timeout(Duration::from_secs(600))
            .unwrap_or_else(|e| panic!("no frame from dsh: {e}"))
    }

    fn peak_rss_mib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb / 1024)
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the attack session's turn ended with.
fn turn_end(frame: &Value, session: &str) -> Option<String> {
    let event = frame.pointer("/params/event")?;
    if frame.pointer("/params/sessionId").and_then(Value::as_str) != Some(session)
        || event["type"] != TurnEnd::KIND
    {
        return None;
    }
    let reason = &event["data"]["reason"];
    Some(match reason["kind"].as_str() {
        Some("error") => format!(
            "error {}: {}",
            reason["error"]["code"].as_str().unwrap_or("?"),
            reason["error"]["message"]
                .as_str()
                .unwrap_or("?")
                .chars()
                .take(140)
                .collect::<String>()
        ),
        other => other.unwrap_or("?").to_owned(),
    })
}

struct Attack {
    name: &'static str,
    provider: &'static str,
    model: String,
}

struct Figures {
    seconds: f64,
    ended: String,
    peak_mib: u64,
    worst_get_ms: f64,
    worst_echo_ms: f64,
    probes: usize,
    tool_result: Option<String>,
}

fn run(dsh: &Path, dir: &Path, env: &[(&str, String)], attack: &Attack) -> Figures {
    let _ = std::fs::remove_dir_all(dir);
    let ws = dir.join("ws");
    std::fs::create_dir_all(&ws).unwrap_or_else(|e| panic!("{e}"));
    let mut rt = Runtime::start(dsh, dir, env);
    let echo = rt.send(
        "initialize",
        json!({"cwd": ws, "provider": "scripted", "model": "echo"}),
    );
    wait_response(&mut rt, &echo);
    echo_turn(&mut rt, "prober", "warm up");
    let init = rt.send(
        "initialize",
        json!({"cwd": ws, "provider": attack.provider, "model": attack.model}),
    );
    wait_response(&mut rt, &init);
    let started = Instant::now();
    rt.send(
        "session/prompt",
        json!({"sessionId": "attack", "contentBlocks": [{"type": "text", "text": "go"}]}),
    );
    let (mut worst_get, mut worst_echo, mut probes) = (0f64, 0f64, 0usize);
    let mut ended = None;
    let mut tool_result = None;
    let mut watch = |frame: &Value, ended: &mut Option<(String, f64)>| {
        if let Some(end) = turn_end(frame, "attack") {
            *ended = Some((end, started.elapsed().as_secs_f64()));
        }
        if frame.pointer("/params/event/type") == Some(&json!(<ToolResult>::KIND))
            && frame.pointer("/params/sessionId") == Some(&json!("attack"))
        {
            let text: String = frame
                .pointer("/params/event/data/message/content/0/text")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .chars()
                .take(80)
                .collect();
            tool_result = Some(format!(
                "{:.2} s: {text:?}",
                started.elapsed().as_secs_f64()
            ));
        }
    };
    while ended.is_none() {
        std::thread::sleep(Duration::from_millis(20));
        let t = Instant::now();
        let id = rt.send(
            "session/working-directory/get",
            json!({"sessionId": "prober"}),
        );
        loop {
            let frame = rt.next();
            if frame.get("id") == Some(&id) {
                break;
            }
            watch(&frame, &mut ended);
        }
        worst_get = worst_get.max(t.elapsed().as_secs_f64() * 1000.0);
        if ended.is_some() {
            break;
        }
        let t = Instant::now();
        rt.send(
            "session/prompt",
            json!({"sessionId": "prober", "contentBlocks": [{"type": "text", "text": "ping"}]}),
        );
        loop {
            let frame = rt.next();
            if turn_end(&frame, "prober").is_some() {
                break;
            }
            watch(&frame, &mut ended);
        }
        worst_echo = worst_echo.max(t.elapsed().as_secs_f64() * 1000.0);
        probes += 1;
    }
    let (ended, seconds) = ended.unwrap_or_default();
    Figures {
        seconds,
        ended,
        peak_mib: rt.peak_rss_mib(),
        worst_get_ms: worst_get,
        worst_echo_ms: worst_echo,
        probes,
        tool_result,
    }
}

fn wait_response(rt: &mut Runtime, id: &Value) {
    loop {
        let frame = rt.next();
        if frame.get("id") == Some(id) {
            assert!(frame.get("result").is_some(), "request failed: {frame}");
            return;
        }
    }
}

fn echo_turn(rt: &mut Runtime, session: &str, text: &str) {
    rt.send(
        "session/prompt",
        json!({"sessionId": session, "contentBlocks": [{"type": "text", "text": text}]}),
    );
    while turn_end(&rt.next(), session).is_none() {}
}

/// Serves `page` as text/html on 127.0.0.1 to every request.
async fn serve_page(page: Vec<u8>) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    let page = std::sync::Arc::new(page);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let page = std::sync::Arc::clone(&page);
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = socket.read(&mut buf).await;
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    page.len()
                );
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&page).await;
            });
        }
    });
    format!("http://{addr}/page")
}

fn script_page(bytes: usize) -> Vec<u8> {
    let mut page = b"<html><body>".to_vec();
    let mut i = 0;
    while page.len() < bytes {
        page.extend_from_slice(format!("<script>var v{i} = '<b>';</SCRIPT>w{i} ").as_bytes());
        i += 1;
    }
    page
}

fn main() {
    let dsh = std::env::args()
        .nth(1)
        .map_or_else(|| PathBuf::from("target/release/dsh"), PathBuf::from);
    let dsh = std::fs::canonicalize(&dsh).unwrap_or_else(|e| panic!("{}: {e}", dsh.display()));
    let filter = std::env::args().nth(2).unwrap_or_default();
    let chosen = |name: &str| name.contains(&filter);
    let tokio = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let root = std::env::temp_dir().join(format!("dsh-attacks-{}", std::process::id()));
    let hostile = |replies: Value| -> FakeServer {
        let scenario: Scenario =
            serde_json::from_value(json!({ "replies": replies })).unwrap_or_else(|e| panic!("{e}"));
        tokio
            .block_on(FakeServer::start(scenario, None))
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let mut rows = Vec::new();
    let provider_attacks: Vec<(&'static str, Value)> = vec![
        (
            "row 8: endless text stream",
            json!([{"hostile": {"kind": "endless-text"}}]),
        ),
        (
            "row 8: endless error body (x6, SERVER is retried)",
            json!(vec![json!({"hostile": {"kind": "endless-error-body"}}); 6]),
        ),
        (
            "row 9: one 16 MiB delta",
            json!([{"hostile": {"kind": "huge-delta", "bytes": 16 << 20}}]),
        ),
        (
            "row 9: one 64 MiB delta",
            json!([{"hostile": {"kind": "huge-delta", "bytes": 64 << 20}}]),
        ),
        (
            "row 13: one 100 MB tool-call input",
            json!([{"hostile": {"kind": "huge-tool-call", "name": "no_such_tool", "arguments": {"path": "big.txt"}, "field": "content", "bytes": 100_000_000}}, {"text": "done"}]),
        ),
    ];
    for (name, replies) in provider_attacks {
        if !chosen(name) {
            continue;
        }
        let server = hostile(replies);
        let env = [
            ("DEEPSEEK_API_KEY", "sk-fake".to_owned()),
            ("DEEPSEEK_BASE_URL", server.base_url()),
        ];
        let attack = Attack {
            name,
            provider: "deepseek-official",
            model: "deepseek-v4-flash".into(),
        };
        rows.push((attack.name, run(&dsh, &root, &env, &attack)));
    }
    for (name, bytes) in [
        ("row 7: web_fetch of a 400 kB <script> page", 400_000),
        ("row 7: web_fetch of a 5 MiB <script> page", 5 << 20),
    ] {
        if !chosen(name) {
            continue;
        }
        let url = tokio.block_on(serve_page(script_page(bytes)));
        let scenario = root.with_extension(format!("{bytes}.json"));
        let replies = json!({"replies": [{"blocks": [{"tool_call": {"name": "web_fetch", "arguments": {"url": url}}}]}, {"text": "done"}]});
        std::fs::write(&scenario, replies.to_string()).unwrap_or_else(|e| panic!("{e}"));
        let attack = Attack {
            name,
            provider: "scripted",
            model: scenario.display().to_string(),
        };
        rows.push((attack.name, run(&dsh, &root, &[], &attack)));
        let _ = std::fs::remove_file(scenario);
    }
    let _ = std::fs::remove_dir_all(&root);
    println!(
        "| attack | turn took | ended | dsh peak RSS | worst get | worst echo turn | probes |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (name, f) in rows {
        let ended = match &f.tool_result {
            Some(result) => format!("{} (tool result at {result})", f.ended),
            None => f.ended.clone(),
        };
        println!(
            "| {name} | {:.2} s | {ended} | {} MiB | {:.1} ms | {:.1} ms | {} |",
            f.seconds, f.peak_mib, f.worst_get_ms, f.worst_echo_ms, f.probes
        );
    }
}
