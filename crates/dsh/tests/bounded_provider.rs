//! Issue 15, rows 7, 8, 9 and 13, through the built binary: a hostile
//! model server on 127.0.0.1 (an endless stream, an endless error body, one
//! huge delta, one huge tool call) and a hostile web page end each attack
//! at its bound with a clear error or a whole result, while another
//! session of the same runtime keeps answering.

mod common;

use common::Runtime;
use dsh_fake_model::FakeServer;
use dsh_llm::scripted::Scenario;
use serde_json::{Value, json};

/// A fake model server playing `replies`, on its own runtime thread.
struct Server {
    server: FakeServer,
    _tokio: tokio::runtime::Runtime,
}

fn serve(replies: Value) -> Server {
    let tokio = tokio::runtime::Runtime::new().unwrap_or_else(|e| panic!("{e}"));
    let scenario: Scenario =
        serde_json::from_value(json!({ "replies": replies })).unwrap_or_else(|e| panic!("{e}"));
    let server = tokio
        .block_on(FakeServer::start(scenario, None))
        .unwrap_or_else(|e| panic!("{e}"));
    Server {
        server,
        _tokio: tokio,
    }
}

/// A runtime with an echo session `prober` already answered once, then
/// initialized on `provider`/`model` for the attack session.
fn runtime(env: &[(&str, String)], provider: &str, model: &str) -> Runtime {
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    let mut rt = Runtime::start_with("sdk", |cmd| {
        cmd.envs(env);
    });
    rt.initialize_echo();
    echo_turn(&mut rt, "warm");
    let ws = rt.workspace();
    let init = rt.request(
        json!("init-attack"),
        "initialize",
        json!({"cwd": ws, "provider": provider, "model": model}),
    );
    assert!(init.get("result").is_some(), "initialize failed: {init}");
    rt
}

fn echo_turn(rt: &mut Runtime, text: &str) {
    let id = json!(format!("echo-{text}"));
    rt.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": "prober", "contentBlocks": [{"type": "text", "text": text}]}}),
    );
    loop {
        let frame = rt.next();
        if frame.pointer("/params/sessionId") == Some(&json!("prober"))
            && frame.pointer("/params/event/type") == Some(&json!("turn/end"))
        {
            return;
        }
    }
}

/// Starts the attack, asks the other session for its working directory
/// while it runs, and returns the attack's events up to its `turn/end`.
fn attack(rt: &mut Runtime) -> Vec<Value> {
    rt.send(
        &json!({"jsonrpc": "2.0", "id": "attack", "method": "session/prompt",
        "params": {"sessionId": "attack", "contentBlocks": [{"type": "text", "text": "go"}]}}),
    );
    rt.send(
        &json!({"jsonrpc": "2.0", "id": "probe", "method": "session/working-directory/get",
        "params": {"sessionId": "prober"}}),
    );
    let mut events = Vec::new();
    let mut probed = false;
    loop {
        // A debug build takes seconds over a frame of hundreds of MB.
        let line = rt.next_raw_within(std::time::Duration::from_secs(120));
        let frame: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}"));
        if frame.get("id") == Some(&json!("probe")) {
            assert!(
                frame.pointer("/result").is_some(),
                "the other session answers: {frame}"
            );
            probed = true;
        }
        if frame.pointer("/params/sessionId") != Some(&json!("attack")) {
            continue;
        }
        if let Some(event) = frame.pointer("/params/event") {
            events.push(event.clone());
            if event["type"] == "turn/end" {
                break;
            }
        }
    }
    while !probed {
        probed = rt.next().get("id") == Some(&json!("probe"));
    }
    // And an echo turn of the other session completes afterwards.
    echo_turn(rt, "after");
    events
}

fn end_error(events: &[Value]) -> Value {
    let end = events.last().cloned().unwrap_or_default();
    assert_eq!(end["data"]["reason"]["kind"], "error", "{end}");
    end["data"]["reason"]["error"].clone()
}

fn provider_env(server: &Server, extra: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    let mut env = vec![
        ("DEEPSEEK_API_KEY", "sk-fake".to_owned()),
        ("DEEPSEEK_BASE_URL", server.server.base_url()),
        ("DSH_RETRY_INITIAL_MS", "1".to_owned()),
        ("DSH_RETRY_MAX_MS", "1".to_owned()),
    ];
    env.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
    env
}

#[test]
fn an_endless_stream_ends_at_the_reply_cap() {
    let server = serve(json!([{"hostile": {"kind": "endless-text"}}]));
    let env = provider_env(&server, &[("DSH_MAX_REPLY_BYTES", "2000000")]);
    let mut rt = runtime(&env, "deepseek-official", "deepseek-v4-flash");
    let events = attack(&mut rt);
    let error = end_error(&events);
    assert_eq!(error["code"], "MALFORMED_RESPONSE");
    assert_eq!(
        error["message"],
        "DeepSeek Messages reply exceeded its size cap of 2000000 bytes (set by DSH_MAX_REPLY_BYTES); set DSH_MAX_REPLY_BYTES to change it"
    );
    // Not retried: one attempt.
    let attempts = events
        .iter()
        .filter(|e| e["type"] == "assistant/attempt")
        .count();
    assert_eq!(attempts, 1);
}

#[test]
fn an_endless_error_body_is_mapped_from_its_first_bytes() {
    let server = serve(json!(vec![
        json!({"hostile": {"kind": "endless-error-body"}});
        6
    ]));
    let env = provider_env(&server, &[]);
    let mut rt = runtime(&env, "deepseek-official", "deepseek-v4-flash");
    let events = attack(&mut rt);
    let error = end_error(&events);
    assert_eq!(error["code"], "SERVER");
    assert_eq!(error["status"], 500);
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(r#"{"type":"error","error":{"type":"api_error","message":"endlessxxx"#)
            && message.len() <= 500,
        "{message}"
    );
}

#[test]
fn one_huge_delta_arrives_whole() {
    let bytes = 4usize << 20;
    let server = serve(json!([{"hostile": {"kind": "huge-delta", "bytes": bytes}}]));
    let env = provider_env(&server, &[]);
    let mut rt = runtime(&env, "deepseek-official", "deepseek-v4-flash");
    let events = attack(&mut rt);
    let end = events.last().cloned().unwrap_or_default();
    assert_eq!(end["data"]["reason"]["kind"], "completed", "{end}");
    let message = events
        .iter()
        .find(|e| e["type"] == "assistant/message")
        .unwrap_or_else(|| panic!("no assistant/message"));
    let text = message["data"]["message"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(text.len(), bytes);
    assert!(text.bytes().all(|b| b == b'x'));
}

/// A field of `/proc/<pid>/status` in bytes (`VmRSS`, `VmHWM`). A status
/// that cannot be read or lacks the field fails the test: a guard that
/// read 0 would pass whatever the runtime did.
fn status_bytes(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|err| panic!("/proc/{pid}/status cannot be read: {err}"));
    status
        .lines()
        .find_map(|line| line.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .unwrap_or_else(|| panic!("no {field} in /proc/{pid}/status:\n{status}"))
}

#[test]
fn a_huge_tool_call_costs_less_than_four_times_its_size() {
    // The reply streams in, becomes an `assistant/message` that carries it
    // three times and a `tool/call`, runs, and travels back in the next
    // request: the runtime's growth stays under 4x the input (it was 5.8x
    // to 7x when every place held its own copy).
    let bytes = 70_000_000usize;
    let server = serve(json!([
        {"hostile": {"kind": "huge-tool-call", "name": "no_such_tool", "arguments": {"path": "big.txt"}, "field": "content", "bytes": bytes}},
        {"text": "done"}
    ]));
    let env = provider_env(&server, &[]);
    let mut rt = runtime(&env, "deepseek-official", "deepseek-v4-flash");
    let pid = rt.child.id();
    let before = status_bytes(pid, "VmRSS:");
    let events = attack(&mut rt);
    let peak = status_bytes(pid, "VmHWM:");
    let end = events.last().cloned().unwrap_or_default();
    assert_eq!(end["data"]["reason"]["kind"], "completed", "{end}");
    let call = events
        .iter()
        .find(|e| e["type"] == "tool/call")
        .unwrap_or_else(|| panic!("no tool/call"));
    let arguments = call["data"]["arguments"].as_str().unwrap_or_default();
    assert!(arguments.len() > bytes, "the whole input was called");
    let result = events
        .iter()
        .find(|e| e["type"] == "tool/result")
        .unwrap_or_else(|| panic!("no tool/result"));
    assert!(
        result.to_string().contains("unknown tool"),
        "the call ran: {result}"
    );
    // A sane start (a running runtime holds at least a MiB, and less than
    // the input it has not read yet) and a peak that saw the input (the
    // call's text was held at least once).
    assert!(
        (1 << 20..bytes as u64).contains(&before),
        "resident at start: {before} bytes"
    );
    assert!(
        peak > before + bytes as u64,
        "the peak ({peak} bytes) does not show the {bytes}-byte input held once over the start ({before} bytes)"
    );
    let grown = peak.saturating_sub(before);
    eprintln!(
        "a {bytes}-byte tool call: the runtime grew by {grown} bytes ({:.2}x)",
        grown as f64 / bytes as f64
    );
    assert!(
        grown < 4 * bytes as u64,
        "the runtime grew by {grown} bytes for a {bytes}-byte tool call ({:.1}x)",
        grown as f64 / bytes as f64
    );
}

#[test]
fn a_page_heavy_in_scripts_is_converted_within_the_fetch() {
    let tokio = tokio::runtime::Runtime::new().unwrap();
    let url = tokio.block_on(serve_page(5 << 20));
    let dir = common::TempDir::new("script-page");
    let scenario = dir.path().join("scenario.json");
    let replies = json!({"replies": [
        {"blocks": [{"tool_call": {"id": "c1", "name": "web_fetch", "arguments": {"url": url}}}]},
        {"text": "done"}
    ]});
    std::fs::write(&scenario, replies.to_string()).unwrap();
    let env = [("DSH_WEB_FETCH_PRIVATE", "allow".to_owned())];
    let mut rt = runtime(&env, "scripted", &scenario.display().to_string());
    let events = attack(&mut rt);
    let result = events
        .iter()
        .find(|e| e["type"] == "tool/result")
        .unwrap_or_else(|| panic!("no tool/result"));
    let text = result["data"]["message"]["content"][0]["text"]
        .as_str()
        .unwrap_or_default();
    assert_eq!(result["data"]["message"]["isError"], false, "{text}");
    assert!(
        text.contains("\n\nw0 w1 w2 "),
        "{}",
        &text[..200.min(text.len())]
    );
    assert!(!text.contains("var v"));
    assert!(text.contains("[content clipped: showing the first 100000 of"));
}

/// Serves a 5 MiB page of `<script>` elements on 127.0.0.1.
async fn serve_page(bytes: usize) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut page = b"<html><body>".to_vec();
    let mut i = 0;
    while page.len() < bytes {
        page.extend_from_slice(format!("<script>var v{i} = '<b>';</SCRIPT>w{i} ").as_bytes());
        i += 1;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                page.len()
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(&page).await;
        }
    });
    format!("http://{addr}/page")
}
