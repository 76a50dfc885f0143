//! Files 0600 and directories 0700 whatever the umask. The umask is
//! process-wide, so this test binary holds this one test only.

mod common;

use common::{line, temp};
use dsh_protocol::catalog::SessionEvent;
use dsh_session::store::{Encoding, SessionHeader, SessionStore, SessionWriter};
use rustix::fs::Mode;
use serde_json::json;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

fn modes_under(path: &Path, out: &mut Vec<(String, bool, u32)>) {
    let meta = fs::symlink_metadata(path).unwrap_or_else(|e| panic!("{e}"));
    out.push((
        path.display().to_string(),
        meta.is_dir(),
        meta.permissions().mode() & 0o7777,
    ));
    if meta.is_dir() {
        for entry in fs::read_dir(path).unwrap_or_else(|e| panic!("{e}")) {
            modes_under(&entry.unwrap_or_else(|e| panic!("{e}")).path(), out);
        }
    }
}

#[test]
fn modes_do_not_depend_on_the_umask() {
    for umask in [0o000, 0o022, 0o277] {
        let root = temp();
        // DSH_HOME and a missing parent of it are created too.
        let home = root.path().join("parent/home");
        let store = SessionStore::new(&home);
        rustix::process::umask(Mode::from_raw_mode(umask));
        for (id, encoding) in [("z", Encoding::Zstd), ("p", Encoding::Plain)] {
            let header = SessionHeader::root(id, 1, Some("/ws".into()));
            let mut writer = SessionWriter::create(&store, &header, encoding).unwrap();
            let event = SessionEvent {
                kind: "turn/start".to_owned(),
                seq: 0,
                time: 1,
                data: json!({"turn": 1}),
                source_event_seqs: None,
                surface_op: None,
                ignorable: None,
            };
            writer.append(&line(&event)).unwrap();
            writer.sync().unwrap();
        }
        rustix::process::umask(Mode::from_raw_mode(0o022));
        let mut modes = Vec::new();
        modes_under(&root.path().join("parent"), &mut modes);
        // 10 for the sessions, 4 for the index (`session-index`, two entries and its
        // `~complete` marker).
        assert_eq!(modes.len(), 14, "{modes:?}");
        for (path, is_dir, mode) in modes {
            let want = if is_dir { 0o700 } else { 0o600 };
            assert_eq!(mode, want, "umask {umask:03o}: {path} is {mode:03o}");
        }
    }
}
