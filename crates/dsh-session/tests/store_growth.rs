//! Appending is O(1) per event: the writer never reads its log back.
//!
//! Checked structurally, not by timing: this binary holds a single test, so
//! the kernel's count of bytes this process read (`rchar` in
//! `/proc/self/io`) covers only the writer's work. Writing 100k events
//! across 1000 batches must read next to nothing, while re-reading the log
//! on each append would read gigabytes. Each flush must also grow the file
//! by exactly one batch in place (same inode, no rewrite).

use dsh_session::store::{
    Encoding, SessionHeader, SessionReader, SessionStore, SessionWriter, StoreError,
};
use std::fs;
use std::os::unix::fs::MetadataExt;

const BATCHES: u64 = 1000;
const PER_BATCH: u64 = 100;

fn must<T>(result: Result<T, StoreError>) -> T {
    result.unwrap_or_else(|e| panic!("{e}"))
}

/// Bytes read by this process so far.
fn rchar() -> u64 {
    let io = fs::read_to_string("/proc/self/io").unwrap_or_else(|e| panic!("/proc/self/io: {e}"));
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no rchar in {io}"))
}

fn grow(encoding: Encoding) {
    let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let store = SessionStore::new(home.path());
    let header = SessionHeader::root("big", 1, Some("/w".to_owned()));
    let mut writer = must(SessionWriter::create(&store, &header, encoding));
    let pad = "x".repeat(120);
    let mut inode = None;
    let start = rchar();
    let mut seq = 0u64;
    for _ in 0..BATCHES {
        for _ in 0..PER_BATCH {
            let line = format!(
                r#"{{"type":"turn/start","seq":{seq},"time":{},"data":{{"turn":{},"pad":"{pad}"}}}}"#,
                1_796_000_000_000 + seq,
                seq / 10 + 1
            );
            must(writer.append(&line));
            seq += 1;
        }
        let before = writer.file_len();
        must(writer.flush());
        let meta = fs::metadata(&writer.location().file).unwrap_or_else(|e| panic!("{e}"));
        assert!(writer.file_len() > before);
        assert_eq!(meta.len(), writer.file_len());
        assert_eq!(
            *inode.get_or_insert(meta.ino()),
            meta.ino(),
            "the log was replaced"
        );
    }
    let read_while_writing = rchar() - start;
    let size = writer.file_len();
    let location = writer.location().clone();
    must(writer.close());
    // Two small reads of /proc/self/io are all this process read.
    assert!(
        read_while_writing < 64 * 1024,
        "{encoding:?}: the writer read {read_while_writing} bytes while appending {size} bytes"
    );
    let stored = must(SessionReader::read(&location));
    assert_eq!(stored.events.len() as u64, BATCHES * PER_BATCH);
    assert!(!stored.torn_tail);
}

#[test]
fn appending_never_reads_the_log() {
    grow(Encoding::Plain);
    grow(Encoding::Zstd);
}
