//! Sessions on disk, black-box: one owner per session id across runtimes
//! sharing `DSH_HOME`, private modes whatever the umask, planted symbolic
//! links refused, a world-writable `DSH_HOME` reported, and resume checked
//! against the initialized workspace.

mod common;

use common::{Runtime, TempDir, dsh};
use dsh_session::store::{SessionReader, SessionStore};
use serde_json::{Value, json};
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// The 8×8 PNG of the official `image_prompt` capture.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEklEQVR4nGP4z8CAFWEXHbQSACj/P8Fu7N9hAAAAAElFTkSuQmCC";

/// A runtime of `profile` whose `DSH_HOME` is `home`.
fn runtime_on(profile: &str, home: &Path) -> Runtime {
    let home = home.to_path_buf();
    Runtime::start_with(profile, move |cmd| {
        cmd.env("DSH_HOME", home);
    })
}

fn initialize(rt: &mut Runtime, cwd: &Path) {
    let resp = rt.request(
        json!("init"),
        "initialize",
        json!({"cwd": cwd, "provider": "scripted", "model": "echo"}),
    );
    assert!(resp.get("result").is_some(), "initialize failed: {resp}");
}

fn prompt_request(id: &str, session: &str, text: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt", "params": {"sessionId": session, "contentBlocks": [{"type": "text", "text": text}]}})
}

/// The response to a prompt sent earlier with request id `id`; when it was
/// accepted, waits for the session to be idle again.
fn settle(rt: &mut Runtime, id: &str) -> Value {
    let response = rt.until_response(&json!(id)).pop().unwrap_or(Value::Null);
    if response.get("result").is_some() {
        loop {
            let frame = rt.next();
            if frame["method"] == "session.status" && frame["params"]["status"] == "idle" {
                break;
            }
        }
    }
    response
}

fn error_message(response: &Value) -> Option<&str> {
    response["error"]["message"].as_str()
}

fn shutdown(rt: &mut Runtime) {
    rt.request(json!("bye"), "shutdown", json!({}));
    assert_eq!(rt.wait_exit(), Some(0));
}

/// Every stored event of `session`, as JSON text.
fn stored_text(home: &Path, session: &str) -> String {
    let location = SessionStore::new(home)
        .locate(session)
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("session {session} not stored"));
    let stored = SessionReader::read(&location).unwrap_or_else(|e| panic!("{e}"));
    serde_json::to_string(&stored.events).unwrap_or_default()
}

#[test]
fn a_new_session_id_has_one_owner_across_runtimes() {
    let mut a = Runtime::start("sdk-minimal");
    let home = a.dir.path().join("home");
    let ws = a.workspace();
    initialize(&mut a, &ws);
    // A opens the session without writing anything yet (sdk-minimal writes
    // at the first prompt).
    let got = a.request(
        json!(1),
        "session/working-directory/get",
        json!({"sessionId": "s-dup"}),
    );
    assert!(got.get("result").is_some(), "{got}");
    let owned = Some(r#"session "s-dup" is already owned by an active write handle"#);
    let mut b = runtime_on("sdk-minimal", &home);
    for cwd in [ws.clone(), b.workspace()] {
        initialize(&mut b, &cwd);
        b.send(&prompt_request("p", "s-dup", "from B"));
        assert_eq!(error_message(&settle(&mut b, "p")), owned);
        let got = b.request(
            json!(2),
            "session/working-directory/get",
            json!({"sessionId": "s-dup"}),
        );
        assert_eq!(error_message(&got), owned);
    }
    a.send(&prompt_request("p", "s-dup", "from A"));
    assert!(settle(&mut a, "p").get("result").is_some());
    // Now it is on disk: "already exists" for B.
    b.send(&prompt_request("q", "s-dup", "from B"));
    assert_eq!(
        error_message(&settle(&mut b, "q")),
        Some(r#"session "s-dup" already exists"#)
    );
    shutdown(&mut a);
    shutdown(&mut b);
    let text = stored_text(&home, "s-dup");
    assert!(
        text.contains("from A") && !text.contains("from B"),
        "{text}"
    );
    // B created nothing in its own project directory.
    let sessions: Vec<_> = fs::read_dir(home.join("sessions"))
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
}

#[test]
fn racing_runtimes_do_not_both_accept_a_new_session() {
    let mut a = Runtime::start("sdk");
    let home = a.dir.path().join("home");
    let ws = a.workspace();
    let mut b = runtime_on("sdk", &home);
    initialize(&mut a, &ws);
    initialize(&mut b, &ws);
    for round in 0..6 {
        let session = format!("race-{round}");
        a.send(&prompt_request("p", &session, "from A"));
        b.send(&prompt_request("p", &session, "from B"));
        let from_a = settle(&mut a, "p");
        let from_b = settle(&mut b, "p");
        let accepted = [&from_a, &from_b]
            .iter()
            .filter(|r| r.get("result").is_some())
            .count();
        assert_eq!(accepted, 1, "round {round}: {from_a} {from_b}");
        let (loser, winner_text, loser_text) = if from_a.get("result").is_some() {
            (&from_b, "from A", "from B")
        } else {
            (&from_a, "from B", "from A")
        };
        let message = error_message(loser).unwrap_or_default();
        assert!(
            message == format!("session \"{session}\" is already owned by an active write handle")
                || message == format!("session \"{session}\" already exists"),
            "{message}"
        );
        let text = stored_text(&home, &session);
        assert!(
            text.contains(winner_text) && !text.contains(loser_text),
            "{text}"
        );
    }
    shutdown(&mut a);
    shutdown(&mut b);
}

/// Every entry under `root` with its mode.
fn modes(root: &Path, out: &mut Vec<(PathBuf, bool, u32)>) {
    let meta = fs::symlink_metadata(root).unwrap_or_else(|e| panic!("{e}"));
    out.push((
        root.to_path_buf(),
        meta.is_dir(),
        meta.permissions().mode() & 0o7777,
    ));
    if meta.is_dir() {
        for entry in fs::read_dir(root).unwrap_or_else(|e| panic!("{e}")) {
            modes(&entry.unwrap_or_else(|e| panic!("{e}")).path(), out);
        }
    }
}

#[test]
fn everything_under_dsh_home_is_private_under_umask_000() {
    for profile in ["sdk", "sdk-minimal"] {
        let mut rt = Runtime::start_with_umask(profile, "000", |_| {});
        rt.initialize_echo();
        rt.send(&json!({"jsonrpc": "2.0", "id": "p", "method": "session/prompt", "params": {"sessionId": "s", "contentBlocks": [
            {"type": "text", "text": "look"},
            {"type": "image", "data": PNG, "mimeType": "image/png"},
        ]}}));
        assert!(settle(&mut rt, "p").get("result").is_some());
        shutdown(&mut rt);
        // The runtime itself created DSH_HOME (it did not exist).
        let home = rt.dir.path().join("home");
        let mut entries = Vec::new();
        modes(&home, &mut entries);
        let files = entries.iter().filter(|(_, dir, _)| !dir).count();
        // The log, its lock and the image at least.
        assert!(files >= 3, "{profile}: {entries:?}");
        for (path, is_dir, mode) in &entries {
            let want = if *is_dir { 0o700 } else { 0o600 };
            assert_eq!(*mode, want, "{profile}: {} is {mode:04o}", path.display());
        }
    }
}

#[test]
fn a_symlink_planted_as_a_session_log_is_refused_on_resume() {
    let mut rt = Runtime::start("sdk-minimal");
    rt.initialize_echo();
    rt.send(&prompt_request("p", "s-link", "hi"));
    assert!(settle(&mut rt, "p").get("result").is_some());
    shutdown(&mut rt);
    let home = rt.dir.path().join("home");
    let location = SessionStore::new(&home)
        .locate("s-link")
        .unwrap()
        .unwrap_or_else(|| panic!("not stored"));
    let target = rt.dir.path().join("moved.jsonl");
    fs::rename(&location.file, &target).unwrap();
    symlink(&target, &location.file).unwrap();
    let before = fs::read(&target).unwrap_or_default();
    let mut again = runtime_on("sdk-minimal", &home);
    initialize(&mut again, &rt.workspace());
    let resp = again.request(json!(1), "session/resume", json!({"sessionId": "s-link"}));
    assert_eq!(
        error_message(&resp).map(str::to_owned),
        Some(format!(
            "session log {} is a symbolic link: refusing it",
            location.file.display()
        ))
    );
    shutdown(&mut again);
    assert_eq!(fs::read(&target).unwrap_or_default(), before);
}

#[test]
fn a_world_writable_dsh_home_is_reported() {
    let dir = TempDir::new("home-mode");
    let home = dir.path().join("shared-home");
    fs::create_dir(&home).unwrap();
    fs::set_permissions(&home, fs::Permissions::from_mode(0o777)).unwrap();
    for profile in ["sdk", "sdk-minimal"] {
        let out = dsh(dir.path())
            .args(["--profile", profile])
            .env("DSH_HOME", &home)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "DSH_HOME {} is group- or world-writable (mode 0777)",
                home.display()
            )),
            "{profile}: {stderr}"
        );
    }
    // A private one is not reported; a missing one is created 0700.
    let fresh = dir.path().join("a/fresh");
    let out = dsh(dir.path())
        .args(["--profile", "sdk"])
        .env("DSH_HOME", &fresh)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&out.stderr).contains("writable"));
    for created in [dir.path().join("a"), fresh] {
        let mode = fs::metadata(&created).map(|m| m.permissions().mode() & 0o7777);
        assert_eq!(mode.ok(), Some(0o700), "{}", created.display());
    }
}

/// A stored sdk-minimal session "s-ws" created in `rt`'s workspace; returns
/// the log path.
fn stored_session(rt: &mut Runtime) -> PathBuf {
    rt.initialize_echo();
    rt.send(&prompt_request("p", "s-ws", "hi"));
    assert!(settle(rt, "p").get("result").is_some());
    shutdown(rt);
    SessionStore::new(rt.dir.path().join("home"))
        .locate("s-ws")
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("not stored"))
        .file
}

fn resume(rt: &mut Runtime, cwd: &Path) -> Value {
    initialize(rt, cwd);
    rt.request(json!("r"), "session/resume", json!({"sessionId": "s-ws"}))
}

#[test]
fn resume_uses_the_initialized_workspace_and_refuses_another() {
    let mut first = Runtime::start("sdk-minimal");
    let log = stored_session(&mut first);
    let home = first.dir.path().join("home");
    let ws = first.workspace();
    let before = fs::read(&log).unwrap_or_default();
    let mut rt = runtime_on("sdk-minimal", &home);
    let other = rt.workspace();
    let resp = resume(&mut rt, &other);
    assert_eq!(
        error_message(&resp).map(str::to_owned),
        Some(format!(
            "session \"s-ws\" belongs to the workspace {}, but this runtime was initialized with {}; initialize with that cwd to resume it",
            ws.display(),
            other.display()
        ))
    );
    assert_eq!(
        fs::read(&log).unwrap_or_default(),
        before,
        "nothing appended"
    );
    // The lock was released: the right cwd resumes in the same runtime,
    // and the session runs there.
    let resp = resume(&mut rt, &ws);
    assert!(resp.get("result").is_some(), "{resp}");
    let got = rt.request(
        json!("wd"),
        "session/working-directory/get",
        json!({"sessionId": "s-ws"}),
    );
    assert_eq!(got["result"]["cwd"], json!(ws));
    shutdown(&mut rt);
    // A symbolic link to the workspace, and a relative spelling of it,
    // resume too; the workspace is the cwd as initialized.
    let link = first.dir.path().join("ws-link");
    symlink(&ws, &link).unwrap();
    let mut rt = runtime_on("sdk-minimal", &home);
    assert!(resume(&mut rt, &link).get("result").is_some());
    let got = rt.request(
        json!("wd"),
        "session/working-directory/get",
        json!({"sessionId": "s-ws"}),
    );
    assert_eq!(got["result"]["cwd"], json!(link));
    shutdown(&mut rt);
    let process_cwd = first.dir.path().to_path_buf();
    let mut rt = Runtime::start_with("sdk-minimal", |cmd| {
        cmd.env("DSH_HOME", &home).current_dir(&process_cwd);
    });
    assert!(resume(&mut rt, Path::new("ws")).get("result").is_some());
    shutdown(&mut rt);
}

#[test]
fn a_rewritten_header_cwd_does_not_move_the_sandbox() {
    let mut first = Runtime::start("sdk-minimal");
    let log = stored_session(&mut first);
    let home = first.dir.path().join("home");
    let ws = first.workspace();
    let text = fs::read_to_string(&log).unwrap_or_default();
    let cwd_field = format!("\"cwd\":{}", json!(ws));
    assert!(text.contains(&cwd_field));
    let rewritten = text.replacen(&cwd_field, "\"cwd\":\"/\"", 1);
    fs::write(&log, &rewritten).unwrap();
    // The header no longer matches its project directory: corrupt.
    let mut rt = runtime_on("sdk-minimal", &home);
    let resp = resume(&mut rt, &ws);
    let message = error_message(&resp).unwrap_or_default().to_owned();
    assert!(
        message.starts_with(&format!("corrupt session log: {}: line 1: ", log.display()))
            && message.contains("the header cwd \"/\" belongs in the project directory --root--"),
        "{message}"
    );
    // Moved into the project directory of "/" as well: the initialize cwd
    // still decides, and it is not "/".
    let session_dir = log.parent().unwrap_or_else(|| panic!("no dir"));
    let root_project = home.join("sessions/--root--");
    fs::create_dir_all(&root_project).unwrap();
    fs::rename(session_dir, root_project.join("s-ws")).unwrap();
    let resp = rt.request(json!("r2"), "session/resume", json!({"sessionId": "s-ws"}));
    assert_eq!(
        error_message(&resp).map(str::to_owned),
        Some(format!(
            "session \"s-ws\" belongs to the workspace /, but this runtime was initialized with {}; initialize with that cwd to resume it",
            ws.display()
        ))
    );
    let moved = root_project.join("s-ws/session.v4.jsonl");
    assert_eq!(fs::read_to_string(&moved).unwrap_or_default(), rewritten);
    shutdown(&mut rt);
}
