//! The per-id index of session directories (`DSH_HOME/session-index`): claims
//! write it, lookups trust it only after probing the directory it names,
//! and logs written without it (official runtime, older dsh) are indexed by
//! the first claim.

use dsh_protocol::catalog::SessionEvent;
use dsh_session::store::{Encoding, SessionHeader, SessionStore, SessionWriter, StoreError};
use serde_json::json;
use std::fs;
use std::path::Path;

fn temp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"))
}

fn header(id: &str, cwd: &str) -> SessionHeader {
    SessionHeader::root(id, 1_796_008_646_846, Some(cwd.to_owned()))
}

/// Creates `id` in `cwd` and writes one event, so its log exists.
fn create_written(store: &SessionStore, id: &str, cwd: &str) {
    let mut writer = SessionWriter::create(store, &header(id, cwd), Encoding::Plain)
        .unwrap_or_else(|e| panic!("create {id}: {e}"));
    let event = SessionEvent {
        kind: "turn/start".to_owned(),
        seq: 0,
        time: 1_796_008_646_900,
        data: json!({"turn": 1}),
        source_event_seqs: None,
        surface_op: None,
        ignorable: None,
    };
    let line = serde_json::to_string(&event).unwrap_or_else(|e| panic!("{e}"));
    writer.append(&line).unwrap_or_else(|e| panic!("{e}"));
    writer.sync().unwrap_or_else(|e| panic!("{e}"));
}

fn entry(home: &Path, id: &str) -> Option<String> {
    fs::read_to_string(home.join("session-index").join(id)).ok()
}

#[test]
fn a_claim_writes_the_entry_and_an_abandoned_claim_removes_it() {
    let home = temp();
    let store = SessionStore::new(home.path());
    create_written(&store, "s-1", "/home/user/ws");
    assert_eq!(
        entry(home.path(), "s-1").as_deref(),
        Some("--home-user-ws--\n")
    );
    let found = store.locate("s-1").unwrap();
    assert_eq!(
        found.map(|l| l.dir),
        Some(home.path().join("sessions/--home-user-ws--/s-1"))
    );
    // A creation of the same id from another project is refused through
    // the index.
    let again = SessionWriter::create(&store, &header("s-1", "/other"), Encoding::Plain);
    assert!(
        matches!(again, Err(StoreError::AlreadyExists { .. })),
        "{again:?}"
    );
    // An unwritten claim leaves neither a directory nor an index entry.
    let unwritten = SessionWriter::create(&store, &header("s-2", "/x"), Encoding::Plain).unwrap();
    assert_eq!(entry(home.path(), "s-2").as_deref(), Some("--x--\n"));
    drop(unwritten);
    assert_eq!(entry(home.path(), "s-2"), None);
    assert!(!home.path().join("sessions/--x--").exists());
}

#[test]
fn logs_written_without_the_index_are_indexed_by_the_first_claim() {
    let home = temp();
    // A log the official runtime wrote: no index at all.
    let foreign = home.path().join("sessions/--elsewhere--/old-1");
    fs::create_dir_all(&foreign).unwrap();
    fs::write(foreign.join("session.v4.jsonl"), b"").unwrap();
    let store = SessionStore::new(home.path());
    // Resume finds it by scanning (no entry yet).
    assert!(matches!(store.exists("old-1"), Ok(true)));
    // The first claim builds the index, so a creation in another project is
    // refused.
    let again = SessionWriter::create(&store, &header("old-1", "/ws"), Encoding::Plain);
    assert!(
        matches!(again, Err(StoreError::AlreadyExists { .. })),
        "{again:?}"
    );
    assert_eq!(
        entry(home.path(), "old-1").as_deref(),
        Some("--elsewhere--\n")
    );
    assert!(home.path().join("session-index/~complete").is_file());
}

#[test]
fn an_entry_naming_a_directory_without_the_log_falls_back_to_a_scan() {
    let home = temp();
    let store = SessionStore::new(home.path());
    create_written(&store, "moved", "/a");
    // The user moved the session directory to another project by hand.
    let from = home.path().join("sessions/--a--/moved");
    let to = home.path().join("sessions/--b--/moved");
    fs::create_dir_all(home.path().join("sessions/--b--")).unwrap();
    fs::rename(&from, &to).unwrap();
    let found = store.locate("moved").unwrap();
    assert_eq!(found.map(|l| l.dir), Some(to));
    // A damaged entry is ignored the same way.
    fs::write(home.path().join("session-index/moved"), b"../../etc\n").unwrap();
    assert!(matches!(store.exists("moved"), Ok(true)));
}
