//! Issue 15 ("Bounded"), the file rows, through the built binary with a
//! scripted model: special files are refused without a hang while another
//! session keeps being served (rows 1, 2), the runtime's own stdin is out
//! of the tools' reach (row 3), and `read`, `edit` and `write` share one
//! size limit whose refusal names `DSH_FILE_MAX_BYTES` (rows 4, 13).

mod common;

use common::{Runtime, dsh};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Stdio};

/// One tool result: its text and `isError`.
#[derive(Debug)]
struct Outcome {
    text: String,
    is_error: bool,
}

/// `dsh --profile sdk` with extra environment.
fn start(env: &[(&str, &str)]) -> Runtime {
    Runtime::start_with("sdk", |cmd| {
        for (key, value) in env {
            cmd.env(key, value);
        }
    })
}

fn read(path: &Path) -> Value {
    json!({"name": "read", "arguments": {"file_path": path}})
}

fn working_directory_get(id: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "session/working-directory/get",
        "params": {"sessionId": "bystander"}})
}

/// Plays one turn of session `attack` in which the model makes `calls`
/// (one per model request). Once the first call has started, sends each
/// of `meanwhile` and asserts that every one is answered with a result.
fn play(rt: &mut Runtime, calls: &[Value], meanwhile: &[Value]) -> Vec<Outcome> {
    let mut replies: Vec<Value> = calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            json!({"blocks": [{"tool_call": {"id": format!("call_{i}"), "name": c["name"], "arguments": c["arguments"]}}], "stop": "tool_use"})
        })
        .collect();
    replies.push(json!({"text": "done"}));
    let scenario = rt.dir.path().join("scenario.json");
    std::fs::write(&scenario, json!({"replies": replies}).to_string())
        .unwrap_or_else(|e| panic!("scenario: {e}"));
    let ws = rt.workspace();
    let init = rt.request(
        json!("init"),
        "initialize",
        json!({"cwd": ws, "provider": "scripted", "model": scenario}),
    );
    assert!(init.get("result").is_some(), "initialize failed: {init}");
    rt.send(
        &json!({"jsonrpc": "2.0", "id": "prompt", "method": "session/prompt",
        "params": {"sessionId": "attack", "contentBlocks": [{"type": "text", "text": "go"}]}}),
    );
    let mut waiting: Vec<Value> = meanwhile.iter().map(|r| r["id"].clone()).collect();
    let mut sent = false;
    let mut ended = false;
    let mut results = Vec::new();
    while !(ended && waiting.is_empty()) {
        let frame = rt.next();
        if let Some(id) = frame.get("id") {
            if id == "prompt" {
                assert!(frame.get("result").is_some(), "prompt refused: {frame}");
            } else if let Some(at) = waiting.iter().position(|w| w == id) {
                assert!(frame.get("result").is_some(), "{frame}");
                waiting.remove(at);
            }
            continue;
        }
        let Some(event) = frame.pointer("/params/event") else {
            continue;
        };
        match event["type"].as_str() {
            Some("tool/call") if !sent => {
                sent = true;
                for request in meanwhile {
                    rt.send(request);
                }
            }
            Some("tool/result") => {
                let message = &event["data"]["message"];
                let text = message["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|b| b["text"].as_str())
                    .collect::<String>();
                results.push(Outcome {
                    text,
                    is_error: message["isError"] == json!(true),
                });
            }
            Some("turn/end") => ended = true,
            _ => {}
        }
    }
    assert_eq!(
        results.len(),
        calls.len(),
        "every call answered: {results:?}"
    );
    results
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap_or_else(|e| panic!("mkfifo: {e}"));
    assert!(status.success());
}

/// Rows 1 and 2: `read` of /dev/zero, /dev/urandom and a FIFO nobody
/// writes (and `write`/`edit` of that FIFO) are refused at once, and the
/// other session is answered while the turn runs.
#[test]
fn devices_and_fifos_are_refused_and_another_session_is_served() {
    let mut rt = start(&[]);
    let fifo = rt.workspace().join("fifo");
    mkfifo(&fifo);
    let calls = [
        read(Path::new("/dev/zero")),
        read(Path::new("/dev/urandom")),
        read(&fifo),
        json!({"name": "write", "arguments": {"file_path": fifo, "content": "x"}}),
        json!({"name": "edit", "arguments": {"file_path": fifo, "old_string": "a", "new_string": "b"}}),
    ];
    let meanwhile = [working_directory_get("wd-1"), working_directory_get("wd-2")];
    let results = play(&mut rt, &calls, &meanwhile);
    let fifo = fifo.display();
    let expected = [
        "Error: cannot read \"/dev/zero\": not a regular file".to_owned(),
        "Error: cannot read \"/dev/urandom\": not a regular file".to_owned(),
        format!("Error: cannot read \"{fifo}\": not a regular file"),
        format!("Error: cannot write \"{fifo}\": not a regular file"),
        // Never read (a FIFO cannot be): refused as unread, as officially.
        format!(
            "Error: cannot modify \"{fifo}\": file has not been read — read the file, then retry"
        ),
    ];
    for (result, expected) in results.iter().zip(expected) {
        assert!(result.is_error, "{result:?}");
        assert_eq!(result.text, expected);
    }
}

/// Row 3: the runtime's stdin is /dev/null for tools; the protocol input
/// lives on a private descriptor that only the request reader holds, so
/// requests sent while `read` runs on /dev/stdin are all answered.
#[test]
fn the_runtime_stdin_is_out_of_reach_of_read() {
    let mut rt = start(&[]);
    // Once a request is answered the descriptors are set up.
    rt.initialize_echo();
    let pid = rt.child.id();
    let stdin_link = std::fs::read_link(format!("/proc/{pid}/fd/0"))
        .unwrap_or_else(|e| panic!("fd 0 of dsh: {e}"));
    assert_eq!(stdin_link, Path::new("/dev/null"));
    // Every pipe the runtime holds (the protocol input among them), named
    // through the runtime's own /proc/self.
    let pipes: Vec<Value> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap_or_else(|e| panic!("fds of dsh: {e}"))
        .flatten()
        .filter(|fd| {
            std::fs::read_link(fd.path())
                .is_ok_and(|target| target.to_string_lossy().starts_with("pipe:"))
        })
        .map(|fd| read(&Path::new("/proc/self/fd").join(fd.file_name())))
        .collect();
    assert!(!pipes.is_empty());
    let mut calls = vec![
        read(Path::new("/dev/stdin")),
        read(Path::new("/proc/self/fd/0")),
    ];
    calls.extend(pipes.iter().cloned());
    let meanwhile: Vec<Value> = (0..5)
        .map(|i| working_directory_get(&format!("wd-{i}")))
        .collect();
    let results = play(&mut rt, &calls, &meanwhile);
    for (result, path) in results.iter().zip(["/dev/stdin", "/proc/self/fd/0"]) {
        assert!(result.is_error, "{result:?}");
        assert_eq!(
            result.text,
            format!("Error: cannot read \"{path}\": not a regular file")
        );
    }
    for (result, call) in results[2..].iter().zip(&calls[2..]) {
        let path = call["arguments"]["file_path"].as_str().unwrap_or_default();
        assert!(result.is_error, "{result:?}");
        assert_eq!(
            result.text,
            format!("Error: cannot read \"{path}\": not a regular file")
        );
    }
    for result in &results {
        assert!(!result.text.contains("jsonrpc"), "{result:?}");
    }
}

/// Rows 4 and 13: one limit for `read`, `edit` and `write`, set by
/// `DSH_FILE_MAX_BYTES`; each refusal names it and changes nothing.
#[test]
fn read_edit_and_write_share_the_size_limit() {
    let mut rt = start(&[("DSH_FILE_MAX_BYTES", "4096")]);
    let ws = rt.workspace();
    let at = ws.join("at.txt");
    let above = ws.join("above.txt");
    std::fs::write(&at, "ab\n".repeat(1365)).unwrap();
    std::fs::write(&above, "x".repeat(4097)).unwrap();
    let calls = [
        read(&at),
        read(&above),
        json!({"name": "edit", "arguments": {"file_path": at, "old_string": "b", "new_string": "bb", "replace_all": true}}),
        json!({"name": "write", "arguments": {"file_path": ws.join("new.txt"), "content": "y".repeat(4097)}}),
    ];
    let results = play(&mut rt, &calls, &[]);
    assert!(!results[0].is_error, "{:?}", results[0]);
    assert!(results[0].text.contains("(End of file - total 1365 lines)"));
    let refusals = [
        format!(
            "Error: {} is 4097 bytes, more than read accepts (4096 bytes, set by DSH_FILE_MAX_BYTES); inspect it with bash (head, tail, sed -n).",
            above.display()
        ),
        format!(
            "Error: the edit would make {} 5460 bytes, more than edit writes (4096 bytes, set by DSH_FILE_MAX_BYTES); nothing was changed.",
            at.display()
        ),
        "Error: the content is 4097 bytes, more than write accepts (4096 bytes, set by DSH_FILE_MAX_BYTES); nothing was written.".to_owned(),
    ];
    for (result, expected) in results[1..].iter().zip(refusals) {
        assert!(result.is_error, "{result:?}");
        assert_eq!(result.text, expected);
    }
    assert_eq!(
        std::fs::read_to_string(&at).unwrap_or_default(),
        "ab\n".repeat(1365)
    );
    assert!(!ws.join("new.txt").exists());
}

/// A value of `DSH_FILE_MAX_BYTES` that is not a positive number stops
/// the launch with a message naming it.
#[test]
fn a_bad_file_size_limit_is_refused_at_launch() {
    for bad in ["0", "64MiB", "-1"] {
        let dir = common::TempDir::new("bad-limit");
        let out = dsh(dir.path())
            .args(["--profile", "sdk"])
            .env("DSH_HOME", dir.path().join("home"))
            .env("DSH_FILE_MAX_BYTES", bad)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run dsh: {e}"));
        assert_eq!(out.status.code(), Some(1), "{bad}");
        assert_eq!(
            String::from_utf8_lossy(&out.stderr).trim_end(),
            format!(
                "dsh: DSH_FILE_MAX_BYTES must be a whole number of bytes above 0, got \"{bad}\""
            )
        );
        assert!(out.stdout.is_empty());
    }
}
