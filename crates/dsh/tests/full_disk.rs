//! A full `DSH_HOME` is visible and acknowledges nothing unwritten: on a
//! tiny tmpfs (512 KiB) filled by a filler file, a prompt on a session
//! whose log cannot be written is refused naming the cause, a running turn
//! ends with `turn/end` kind `error` and code `SESSION_LOG_UNWRITABLE`
//! (held back, so seen once space returns), a session created while full
//! is refused the same way, and once the filler is removed the session
//! continues. Finally, full again, the runtime is SIGKILLed and every
//! event a client saw must be on disk as notified.
//!
//! Needs root to mount the tmpfs; without it the test prints why it is
//! skipped and passes (CI runs it as root).

mod common;

use common::{Runtime, TempDir};
use dsh_session::store::{SessionReader, SessionStore};
use serde_json::{Value, json};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The session the test plays.
const SESSION: &str = "full";
/// What the operating system says about a full file system.
const ENOSPC: &str = "No space left on device (os error 28)";

/// A tmpfs mounted for the test, unmounted on drop.
struct Mount {
    dir: PathBuf,
}

impl Mount {
    /// Mounts a 512 KiB tmpfs at `dir`, `None` (with the reason printed)
    /// when that is not possible here.
    fn tmpfs(dir: &Path) -> Option<Self> {
        fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{e}"));
        if !rustix::process::geteuid().is_root() {
            dsh_repo_checks::skip(
                "full_disk: not root, cannot mount a tmpfs (CI runs this as root)",
            );
            return None;
        }
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=512k,mode=0700", "tmpfs"])
            .arg(dir)
            .output();
        match out {
            Ok(out) if out.status.success() => Some(Self {
                dir: dir.to_path_buf(),
            }),
            Ok(out) => {
                dsh_repo_checks::skip(&format!(
                    "full_disk: mount -t tmpfs failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
                None
            }
            Err(err) => {
                dsh_repo_checks::skip(&format!("full_disk: cannot run mount: {err}"));
                None
            }
        }
    }

    /// Writes a filler file until the file system is full.
    fn fill(&self) {
        let mut file = File::create(self.filler()).unwrap_or_else(|e| panic!("{e}"));
        let chunk = vec![0u8; 4096];
        while file.write_all(&chunk).is_ok() {}
        while file.write_all(&[0]).is_ok() {}
        let err = file.write_all(&[0]).err().map(|e| e.to_string());
        assert_eq!(err.as_deref(), Some(ENOSPC));
    }

    /// Removes the filler: space returns.
    fn free(&self) {
        fs::remove_file(self.filler()).unwrap_or_else(|e| panic!("{e}"));
    }

    fn filler(&self) -> PathBuf {
        self.dir.join("filler")
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

/// Turn 1 a short text; then a tool call whose arguments alone exceed a
/// page (so its `assistant/message` cannot fit what a full tmpfs leaves in
/// the log's last page), then text replies.
fn scenario() -> Value {
    let padding = "x".repeat(16 * 1024);
    let mut replies = vec![
        json!({"text": "first"}),
        json!({"blocks": [{"tool_call": {"id": "call_1", "name": "bash",
            "arguments": {"command": format!("true {padding}"), "description": "padding"}}}],
            "stop": "tool_use"}),
    ];
    replies.extend((0..8).map(|i| json!({"text": format!("reply {i}")})));
    json!({"replies": replies})
}

fn prompt(rt: &mut Runtime, id: &str, session: &str) {
    rt.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": session, "contentBlocks": [{"type": "text", "text": "go"}]}}),
    );
}

/// Reads frames until `done` holds for one, recording every event seen.
fn until(rt: &mut Runtime, seen: &mut Vec<Value>, done: impl Fn(&Value) -> bool) -> Value {
    loop {
        let frame = rt.next();
        if frame["method"] == "session.event" {
            seen.push(frame["params"]["event"].clone());
        }
        if done(&frame) {
            return frame;
        }
    }
}

fn is_response(id: &'static str) -> impl Fn(&Value) -> bool {
    move |frame| frame.get("id") == Some(&json!(id))
}

fn is_turn_end(frame: &Value) -> bool {
    frame["method"] == "session.event" && frame["params"]["event"]["type"] == "turn/end"
}

#[test]
fn a_full_dsh_home_is_reported_and_nothing_unwritten_is_notified() {
    let dir = TempDir::new("full-disk");
    let Some(mount) = Mount::tmpfs(&dir.path().join("mnt")) else {
        return;
    };
    let home = mount.dir.join("home");
    let ws = dir.path().join("ws");
    fs::create_dir_all(&ws).unwrap();
    let scenario_file = dir.path().join("scenario.json");
    fs::write(&scenario_file, scenario().to_string()).unwrap();
    let mut rt = Runtime::start_with("sdk-minimal", |cmd| {
        cmd.env("DSH_HOME", &home);
    });
    let init = rt.request(
        json!("init"),
        "initialize",
        json!({"cwd": ws, "provider": "scripted", "model": scenario_file}),
    );
    assert!(init.get("result").is_some(), "{init}");
    let mut seen = Vec::new();

    // Turn 1 with space.
    prompt(&mut rt, "p1", SESSION);
    let end = until(&mut rt, &mut seen, is_turn_end);
    assert_eq!(
        end["params"]["event"]["data"]["reason"]["kind"],
        "completed"
    );

    // Full: turn 2 cannot be written. Its prompt may still fit the log's
    // last page; the turn stops at the first barrier that finds the log
    // unwritten, and the next prompt is refused naming the cause.
    mount.fill();
    prompt(&mut rt, "p2", SESSION);
    until(&mut rt, &mut seen, is_response("p2"));
    let refused = format!("session log of \"{SESSION}\" cannot be written: {ENOSPC}");
    let mut answer = Value::Null;
    for attempt in 0..50 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        let id = format!("p3-{attempt}");
        rt.send(&json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": SESSION, "contentBlocks": [{"type": "text", "text": "again"}]}}));
        answer = until(&mut rt, &mut seen, |f| f.get("id") == Some(&json!(id)));
        if answer.get("error").is_some() {
            break;
        }
    }
    assert_eq!(answer["error"]["message"], json!(refused), "{answer}");
    // A session created while full is refused too, not acknowledged.
    prompt(&mut rt, "t1", "created-while-full");
    let created = until(&mut rt, &mut seen, is_response("t1"));
    let message = created["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(ENOSPC), "{created}");
    let stderr = String::from_utf8_lossy(&rt.stderr_bytes()).into_owned();
    assert!(stderr.contains("session log not written"), "{stderr}");

    // Space returns: the held events arrive, turn 2 ended with the log
    // failure, and the session continues.
    mount.free();
    prompt(&mut rt, "p4", SESSION);
    let mut failed_turn = None;
    let accepted = until(&mut rt, &mut seen, |frame| {
        frame.get("id") == Some(&json!("p4"))
    });
    assert!(accepted.get("result").is_some(), "{accepted}");
    let last = until(&mut rt, &mut seen, |frame| {
        is_turn_end(frame) && frame["params"]["event"]["data"]["reason"]["kind"] == "completed"
    });
    for event in &seen {
        if event["type"] == "turn/end" && event["data"]["reason"]["kind"] == "error" {
            failed_turn = Some(event["data"]["reason"]["error"].clone());
        }
    }
    assert_eq!(
        failed_turn,
        Some(json!({"message": refused, "code": "SESSION_LOG_UNWRITABLE"})),
        "{last}"
    );

    // Full again, killed: every event a client saw is on disk.
    mount.fill();
    prompt(&mut rt, "p5", SESSION);
    until(&mut rt, &mut seen, is_response("p5"));
    std::thread::sleep(std::time::Duration::from_millis(200));
    rt.signal("KILL");
    assert_eq!(rt.wait_exit(), None);
    for line in rt.drain() {
        let frame: Value = serde_json::from_str(&line).unwrap();
        if frame["method"] == "session.event" {
            seen.push(frame["params"]["event"].clone());
        }
    }
    drop(rt);
    let location = SessionStore::new(&home)
        .locate(SESSION)
        .unwrap()
        .unwrap_or_else(|| panic!("{SESSION} not on disk"));
    let stored = SessionReader::read(&location).unwrap();
    let on_disk: Vec<Value> = stored
        .events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    assert!(seen.len() > 10, "{seen:?}");
    for event in &seen {
        let seq = event["seq"].as_u64().unwrap_or(u64::MAX);
        let stored = usize::try_from(seq).ok().and_then(|i| on_disk.get(i));
        assert_eq!(
            stored,
            Some(event),
            "notified seq {seq} is not on disk as notified"
        );
    }
}
