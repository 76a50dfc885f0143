//! `dsh headless`: one task from the command line.

mod common;

use common::{TempDir, dsh};
use serde_json::Value;
use std::io::Write;
use std::process::{Output, Stdio};

fn headless(dir: &TempDir, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = dsh(dir.path());
    cmd.arg("headless")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn: {e}"));
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin.unwrap_or_default().as_bytes());
    }
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("wait: {e}"))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn plain_mode_prints_the_answer_and_keeps_state_in_home_dsh() {
    let dir = TempDir::new("headless-plain");
    let out = headless(&dir, &["Say", "hello"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Say hello\n");
    let stderr = text(&out.stderr);
    let first = stderr.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        format!("dsh: state in {}", dir.path().join(".dsh").display())
    );
    let sessions = dir.path().join(".dsh").join("sessions");
    assert!(sessions.is_dir(), "the session is stored under ~/.dsh");
    // A chosen DSH_HOME is not announced.
    let mut cmd = dsh(dir.path());
    let home = dir.path().join("chosen");
    let out = cmd
        .env("DSH_HOME", &home)
        .args(["headless", "hi"])
        .output()
        .unwrap_or_else(|e| panic!("spawn: {e}"));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "");
    assert!(home.join("sessions").is_dir());
}

#[test]
fn a_task_from_stdin() {
    let dir = TempDir::new("headless-stdin");
    let out = headless(&dir, &["-"], Some("from stdin\n"));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "from stdin\n");
}

#[test]
fn json_mode_prints_records_and_a_failed_turn_exits_1() {
    let dir = TempDir::new("headless-json");
    let scenario = dir.path().join("s.yaml");
    std::fs::write(
        &scenario,
        "replies:\n  - reasoning: hm\n    text: fine\n  - error: {code: AUTH, message: denied, status: 401}\n",
    )
    .unwrap();
    let out = headless(&dir, &["--json", "--model", "s.yaml", "go"], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let records: Vec<Value> = text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let kinds: Vec<&str> = records.iter().filter_map(|r| r["type"].as_str()).collect();
    assert_eq!(
        kinds,
        [
            "session", "status", "status", "thinking", "text", "status", "status", "final"
        ]
    );
    assert_eq!(
        records.last().map(|r| r["text"].clone()),
        Some(Value::from("fine"))
    );
    let session_id = records[0]["sessionId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    // The same session continues; its second reply is an error: exit 1 and
    // the code on stderr.
    let out = headless(
        &dir,
        &["--session-id", &session_id, "--model", "s.yaml", "again"],
        None,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("dsh: AUTH: denied"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn an_unknown_session_id_is_refused() {
    let dir = TempDir::new("headless-unknown");
    let out = headless(&dir, &["--session-id", "nope", "hi"], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr)
            .contains("session \"nope\" does not exist; omit --session-id to start a new Session")
    );
}
