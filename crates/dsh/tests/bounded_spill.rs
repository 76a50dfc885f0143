//! Issue 15, rows 5 and 6, through the built binary with a scripted model:
//! `bash` running `yes` past its `timeoutMs` saves at most the per-job cap
//! (head and tail around a marker), the session quota refuses the rest
//! with a message naming its variable, the saved files go when the runtime
//! shuts down (unless `DSH_KEEP_TOOL_OUTPUT=1`), and another session is
//! served while `yes` runs.

mod common;

use common::Runtime;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The per-job cap the tests set: 1 MiB.
const CAP: u64 = 1024 * 1024;

/// A runtime with an echo session `prober` answered once, then initialized
/// on a scripted model whose one tool call is `bash` running `yes` for
/// longer than its 2 s `timeoutMs`.
fn runtime(env: &[(&str, &str)]) -> Runtime {
    let mut rt = Runtime::start_with("sdk", |cmd| {
        for (key, value) in env {
            cmd.env(key, value);
        }
    });
    rt.initialize_echo();
    echo_turn(&mut rt, "warm");
    let replies = json!([
        {"blocks": [{"tool_call": {"id": "call_yes", "name": "bash", "arguments": {
            "command": "yes", "description": "endless output", "timeoutMs": 2000}}}],
         "stop": "tool_use"},
        {"text": "done"}
    ]);
    let scenario = rt.dir.path().join("scenario.json");
    std::fs::write(&scenario, json!({ "replies": replies }).to_string())
        .unwrap_or_else(|e| panic!("scenario: {e}"));
    let ws = rt.workspace();
    let init = rt.request(
        json!("init-attack"),
        "initialize",
        json!({"cwd": ws, "provider": "scripted", "model": scenario}),
    );
    assert!(init.get("result").is_some(), "initialize failed: {init}");
    rt
}

fn prompt(rt: &mut Runtime, session: &str, id: &str, text: &str) {
    rt.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": session, "contentBlocks": [{"type": "text", "text": text}]}}),
    );
}

fn probe(rt: &mut Runtime, id: &str) {
    rt.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "session/working-directory/get",
        "params": {"sessionId": "prober"}}),
    );
}

fn echo_turn(rt: &mut Runtime, text: &str) {
    prompt(rt, "prober", &format!("echo-{text}"), text);
    loop {
        let frame = rt.next();
        if is_turn_end(&frame, "prober") {
            return;
        }
    }
}

fn is_turn_end(frame: &Value, session: &str) -> bool {
    frame.pointer("/params/sessionId") == Some(&json!(session))
        && frame.pointer("/params/event/type") == Some(&json!("turn/end"))
}

/// Plays the attack turn. Once `bash` has started, asks the other session
/// for its working directory and plays an echo turn there; asserts both
/// complete, and returns the text of the `bash` result.
fn attack(rt: &mut Runtime) -> String {
    prompt(rt, "attack", "attack", "go");
    let (mut result, mut attack_ended) = (None, false);
    let (mut probed, mut echoed, mut sent) = (false, false, false);
    while !(attack_ended && probed && echoed) {
        let frame = rt.next();
        if frame.get("id") == Some(&json!("probe-1")) {
            assert!(
                frame.get("result").is_some(),
                "the other session answers: {frame}"
            );
            probed = true;
        }
        if is_turn_end(&frame, "prober") {
            echoed = true;
        }
        if is_turn_end(&frame, "attack") {
            attack_ended = true;
        }
        if frame.pointer("/params/sessionId") != Some(&json!("attack")) {
            continue;
        }
        match frame.pointer("/params/event/type").and_then(Value::as_str) {
            Some("tool/call") if !sent => {
                sent = true;
                probe(rt, "probe-1");
                prompt(rt, "prober", "echo-during", "during");
            }
            Some("tool/result") => {
                let content = &frame["params"]["event"]["data"]["message"]["content"];
                let text: String = content
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|b| b["text"].as_str())
                    .collect();
                result = Some(text);
            }
            _ => {}
        }
    }
    result.unwrap_or_else(|| panic!("no bash result"))
}

/// The text between `before` and the next `after` in `text`.
fn between<'a>(text: &'a str, before: &str, after: &str) -> &'a str {
    let start = text
        .find(before)
        .map(|at| at + before.len())
        .unwrap_or_else(|| panic!("no {before:?} in {text}"));
    let len = text[start..]
        .find(after)
        .unwrap_or_else(|| panic!("no {after:?} after {before:?} in {text}"));
    &text[start..start + len]
}

/// Files of `dir` with their sizes (none when it does not exist).
fn files(dir: &Path) -> Vec<(PathBuf, u64)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|entry| {
            let len = entry.metadata().map(|m| m.len()).unwrap_or_default();
            (entry.path(), len)
        })
        .collect()
}

fn shutdown(rt: &mut Runtime) {
    rt.request(json!("bye"), "shutdown", json!({}));
    assert_eq!(rt.wait_exit(), Some(0));
}

/// Row 5 and 6: `yes` past its timeout leaves a saved output of at most
/// the cap, its head and tail around the marker; while `yes` runs another
/// session answers and completes echo turns; shutdown removes the files.
#[test]
fn yes_past_its_timeout_saves_head_and_tail_within_the_cap_and_shutdown_removes_them() {
    let cap = CAP.to_string();
    let mut rt = runtime(&[("DSH_SPILL_MAX_BYTES", &cap)]);
    let text = attack(&mut rt);
    assert!(
        text.contains("[still running after 2000ms; moved to background job bash-"),
        "{text}"
    );
    assert!(text.contains("y\ny\ny\n"), "the visible tail is output");
    let log = PathBuf::from(between(&text, "[output truncated; full output: ", "]\n"));
    let dropped: u64 = between(
        &text,
        "bytes of each stream; ",
        " bytes in between were dropped",
    )
    .parse()
    .unwrap_or_else(|e| panic!("{e}: {text}"));
    assert!(dropped > 0, "{text}");
    assert!(
        text.contains(&format!(
            "[the file keeps the first 262144 and the last 262144 bytes of each stream; {dropped} bytes in between were dropped (DSH_SPILL_MAX_BYTES=1048576 bytes per job)]"
        )),
        "{text}"
    );
    // The file: the head, the marker with the same count, the tail.
    let saved = std::fs::read(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    assert!(saved.len() as u64 <= CAP, "{} bytes saved", saved.len());
    let marker = format!(
        "\n[... {dropped} bytes dropped here: the saved output keeps the first 262144 and the last 262144 bytes of each stream (DSH_SPILL_MAX_BYTES=1048576) ...]\n"
    );
    assert_eq!(&saved[262_144..262_144 + marker.len()], marker.as_bytes());
    let yes = "y\n".repeat(131_072);
    assert!(saved[..262_144] == *yes.as_bytes(), "the head is kept");
    // The tail: the last 262144 bytes of `y\n` repeated (a snapshot may
    // end inside a line).
    let tail = &saved[262_144 + marker.len()..];
    assert_eq!(tail.len(), 262_144, "the tail is kept");
    assert!(
        tail.iter().all(|b| matches!(b, b'y' | b'\n')) && tail.windows(2).all(|w| w[0] != w[1]),
        "the tail is output of yes"
    );
    // While `yes` still runs in the background: the other session is
    // served, and the saved files stay within the cap.
    let home = rt.dir.path().join("home");
    let spill = home.join("tool-output");
    probe(&mut rt, "probe-2");
    let answer = rt.until_response(&json!("probe-2"));
    assert!(
        answer.last().and_then(|f| f.get("result")).is_some(),
        "{answer:?}"
    );
    echo_turn(&mut rt, "while-yes-runs");
    let held: u64 = files(&spill).iter().map(|(_, len)| len).sum();
    assert!(held <= 2 * CAP, "{held} bytes held while yes runs");
    assert!(!files(&spill).is_empty());
    shutdown(&mut rt);
    assert_eq!(
        files(&spill),
        Vec::new(),
        "the spill directory is empty after shutdown"
    );
}

/// `DSH_KEEP_TOOL_OUTPUT=1` keeps the saved output after shutdown.
#[test]
fn the_keep_variable_keeps_the_saved_output() {
    let cap = CAP.to_string();
    let mut rt = runtime(&[("DSH_SPILL_MAX_BYTES", &cap), ("DSH_KEEP_TOOL_OUTPUT", "1")]);
    let text = attack(&mut rt);
    let log = PathBuf::from(between(&text, "[output truncated; full output: ", "]\n"));
    shutdown(&mut rt);
    let kept = std::fs::metadata(&log).unwrap_or_else(|e| panic!("{}: {e}", log.display()));
    assert!(kept.len() > 0 && kept.len() <= CAP);
}

/// The session quota: once it is used up the output file is not written,
/// the result names the quota and its variable, and the directory stays
/// within it; end of input removes the files.
#[test]
fn the_session_quota_refuses_the_output_file_with_its_variable() {
    let cap = CAP.to_string();
    let quota = (600 * 1024).to_string();
    let mut rt = runtime(&[
        ("DSH_SPILL_MAX_BYTES", &cap),
        ("DSH_SPILL_SESSION_MAX_BYTES", &quota),
    ]);
    let text = attack(&mut rt);
    assert!(
        text.contains("[output truncated; the full output could not be saved: the session's saved tool output reached its quota (DSH_SPILL_SESSION_MAX_BYTES=614400 bytes)]"),
        "{text}"
    );
    let spill = rt.dir.path().join("home/tool-output");
    let held: u64 = files(&spill).iter().map(|(_, len)| len).sum();
    assert!(held <= 600 * 1024, "{held} bytes held");
    assert!(!files(&spill).is_empty());
    // End of input disposes the sessions as shutdown does.
    rt.close_stdin();
    assert_eq!(rt.wait_exit(), Some(0));
    assert_eq!(files(&spill), Vec::new());
}

/// A spill limit that is not a positive number of bytes stops the launch
/// with a message naming the variable.
#[test]
fn a_bad_spill_limit_is_refused_at_launch() {
    for var in ["DSH_SPILL_MAX_BYTES", "DSH_SPILL_SESSION_MAX_BYTES"] {
        for bad in ["0", "64MiB"] {
            let dir = common::TempDir::new("bad-spill-limit");
            let out = common::dsh(dir.path())
                .args(["--profile", "sdk"])
                .env("DSH_HOME", dir.path().join("home"))
                .env(var, bad)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap_or_else(|e| panic!("run dsh: {e}"));
            assert_eq!(out.status.code(), Some(1), "{var}={bad}");
            assert_eq!(
                String::from_utf8_lossy(&out.stderr).trim_end(),
                format!("dsh: {var} must be a whole number of bytes above 0, got \"{bad}\"")
            );
            assert!(out.stdout.is_empty());
        }
    }
}
