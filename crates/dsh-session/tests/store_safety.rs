//! The store refuses what it did not make: symbolic links planted as logs,
//! lock files or directories, entries of other users; resume checks the
//! workspace before it changes anything.

mod common;

use common::{line, temp};
use dsh_protocol::catalog::SessionEvent;
use dsh_session::store::{
    Encoding, SessionHeader, SessionLocation, SessionStore, SessionWriter, StoreError,
};
use serde_json::json;
use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

fn must<T>(result: Result<T, StoreError>) -> T {
    result.unwrap_or_else(|e| panic!("{e}"))
}

fn event(seq: u64) -> SessionEvent {
    SessionEvent {
        kind: "turn/start".to_owned(),
        seq,
        time: 1_796_008_646_900 + seq,
        data: json!({"turn": 1}),
        source_event_seqs: None,
        surface_op: None,
        ignorable: None,
    }
}

/// A written, closed session of two events in `cwd`.
fn written(store: &SessionStore, id: &str, cwd: &str, encoding: Encoding) -> SessionLocation {
    let header = SessionHeader::root(id, 1, Some(cwd.to_owned()));
    let mut writer = must(SessionWriter::create(store, &header, encoding));
    must(writer.append(&line(&event(0))));
    must(writer.append(&line(&event(1))));
    let location = writer.location().clone();
    must(writer.close());
    location
}

fn error_text<T>(result: Result<T, StoreError>) -> String {
    result.err().map(|e| e.to_string()).unwrap_or_default()
}

#[test]
fn a_symlink_planted_as_a_session_log_is_refused_not_followed() {
    let root = temp();
    let store = SessionStore::new(root.path().join("home"));
    let location = written(&store, "s", "/ws", Encoding::Plain);
    // The log moves elsewhere and a link takes its place.
    let target = root.path().join("elsewhere.jsonl");
    fs::rename(&location.file, &target).unwrap();
    symlink(&target, &location.file).unwrap();
    let before = fs::read(&target).unwrap_or_default();
    let expected = format!(
        "session log {} is a symbolic link: refusing it",
        location.file.display()
    );
    assert_eq!(error_text(store.locate("s")), expected);
    assert_eq!(error_text(SessionWriter::resume(&location)), expected);
    let header = SessionHeader::root("s", 1, Some("/ws".into()));
    assert_eq!(
        error_text(SessionWriter::create(&store, &header, Encoding::Plain)),
        expected
    );
    assert_eq!(fs::read(&target).unwrap_or_default(), before);
}

#[test]
fn a_symlink_planted_as_a_lock_file_is_refused_not_followed() {
    let root = temp();
    let store = SessionStore::new(root.path().join("home"));
    let location = written(&store, "s", "/ws", Encoding::Zstd);
    let target = root.path().join("victim");
    fs::write(&target, b"keep").unwrap();
    fs::remove_file(location.lock_file()).unwrap();
    symlink(&target, location.lock_file()).unwrap();
    let before = fs::read(&location.file).unwrap_or_default();
    assert_eq!(
        error_text(SessionWriter::resume(&location)),
        format!(
            "session lock {} is a symbolic link: refusing it",
            location.lock_file().display()
        )
    );
    // A dangling link where a new session's lock goes: refused, nothing
    // created at its target.
    let new = store.location_for(Some(Path::new("/ws")), "new", Encoding::Zstd);
    fs::create_dir_all(&new.dir).unwrap();
    let nowhere = root.path().join("nowhere");
    symlink(&nowhere, new.lock_file()).unwrap();
    let header = SessionHeader::root("new", 1, Some("/ws".into()));
    assert_eq!(
        error_text(SessionWriter::create(&store, &header, Encoding::Zstd)),
        format!(
            "session lock {} is a symbolic link: refusing it",
            new.lock_file().display()
        )
    );
    assert!(!nowhere.exists());
    assert_eq!(fs::read(&target).unwrap_or_default(), b"keep");
    assert_eq!(fs::read(&location.file).unwrap_or_default(), before);
}

#[test]
fn symlinked_session_and_project_directories_are_refused() {
    let root = temp();
    let store = SessionStore::new(root.path().join("home"));
    let location = written(&store, "s", "/ws", Encoding::Plain);
    // The session directory moved out and linked back.
    let moved = root.path().join("moved-session");
    fs::rename(&location.dir, &moved).unwrap();
    symlink(&moved, &location.dir).unwrap();
    assert_eq!(
        error_text(store.locate("s")),
        format!(
            "session directory {} is a symbolic link: refusing it",
            location.dir.display()
        )
    );
    // A new session whose project directory is a link elsewhere.
    let outside = root.path().join("outside");
    fs::create_dir(&outside).unwrap();
    let project = store.sessions_dir().join("--other--");
    symlink(&outside, &project).unwrap();
    let header = SessionHeader::root("t", 1, Some("/other".into()));
    assert_eq!(
        error_text(SessionWriter::create(&store, &header, Encoding::Plain)),
        format!(
            "project directory {} is a symbolic link: refusing it",
            project.display()
        )
    );
    assert_eq!(fs::read_dir(&outside).map(Iterator::count).ok(), Some(0));
}

#[test]
fn entries_of_another_user_are_refused() {
    let uid = dsh_session::private_fs::runtime_uid();
    if uid != 0 {
        // Only root can hand a file to another user.
        dsh_repo_checks::skip(
            "entries_of_another_user_are_refused: needs root to hand a file to another user",
        );
        return;
    }
    let root = temp();
    let store = SessionStore::new(root.path().join("home"));
    let location = written(&store, "s", "/ws", Encoding::Plain);
    let other = rustix::fs::Uid::from_raw(4242);
    rustix::fs::chown(&location.file, Some(other), None).unwrap();
    assert_eq!(
        error_text(SessionWriter::resume(&location)),
        format!(
            "session log {} is owned by uid 4242, not by this runtime's uid 0: refusing it",
            location.file.display()
        )
    );
    rustix::fs::chown(&location.file, Some(rustix::fs::Uid::from_raw(0)), None).unwrap();
    rustix::fs::chown(location.lock_file(), Some(other), None).unwrap();
    assert_eq!(
        error_text(SessionWriter::resume(&location)),
        format!(
            "session lock {} is owned by uid 4242, not by this runtime's uid 0: refusing it",
            location.lock_file().display()
        )
    );
}

#[test]
fn a_workspace_mismatch_changes_nothing_and_releases_the_lock() {
    let root = temp();
    let store = SessionStore::new(root.path().join("home"));
    let ws = root.path().join("ws");
    fs::create_dir(&ws).unwrap();
    let cwd = ws.to_string_lossy().into_owned();
    let location = written(&store, "s", &cwd, Encoding::Plain);
    // A torn tail that resume would cut.
    let mut bytes = fs::read(&location.file).unwrap_or_default();
    bytes.extend_from_slice(br#"{"type":"turn/st"#);
    fs::write(&location.file, &bytes).unwrap();
    let locked = must(SessionWriter::lock_stored(&location));
    assert!(locked.stored().torn_tail);
    assert_eq!(
        error_text(locked.workspace(Path::new("/"))),
        format!(
            "session \"s\" belongs to the workspace {cwd}, but this runtime was initialized with /; initialize with that cwd to resume it"
        )
    );
    drop(locked);
    assert_eq!(fs::read(&location.file).unwrap_or_default(), bytes);
    // The lock is free again; the right cwd resumes (and repairs).
    let locked = must(SessionWriter::lock_stored(&location));
    assert_eq!(locked.workspace(&ws).ok(), Some(ws.clone()));
    let (writer, stored) = must(locked.into_writer());
    assert_eq!(stored.events.len(), 2);
    drop(writer);
    assert!(fs::read(&location.file).unwrap_or_default().len() < bytes.len());
}

#[test]
fn a_dsh_home_that_is_a_symlink_the_user_made_works() {
    let root = temp();
    let real = root.path().join("real-home");
    fs::create_dir(&real).unwrap();
    let home = root.path().join("home");
    symlink(&real, &home).unwrap();
    let store = SessionStore::new(&home);
    let header = SessionHeader::root("s", 1, Some("/ws".into()));
    let mut writer = must(SessionWriter::create(&store, &header, Encoding::Zstd));
    must(writer.append(&line(&event(0))));
    must(writer.sync());
    drop(writer);
    let location = must(store.locate("s")).unwrap_or_else(|| panic!("not found"));
    let (mut writer, stored) = must(SessionWriter::resume(&location));
    assert_eq!(stored.events.len(), 1);
    must(writer.sync());
    assert!(
        real.join("sessions/--ws--/s/session.v4.jsonl.zstd")
            .is_file()
    );
}
