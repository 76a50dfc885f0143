//! Writing session logs: footprint, modes, locks, batches, torn tails,
//! corruption.

mod common;

use common::{install, line, read, temp};
use dsh_protocol::catalog::SessionEvent;
use dsh_protocol::{JsonRope, to_rope};
use dsh_session::store::{
    Encoding, SessionHeader, SessionLocation, SessionReader, SessionStore, SessionWriter,
    StoreError,
};
use serde_json::json;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

const CWD: &str = "/home/user/ws";

fn header(id: &str) -> SessionHeader {
    SessionHeader::root(id, 1_796_008_646_846, Some(CWD.to_owned()))
}

/// A varied event: some with cited seqs and surfaceOp, sizes that differ.
fn event(seq: u64) -> SessionEvent {
    let mut event = SessionEvent {
        kind: if seq % 5 == 0 {
            "tool/result"
        } else {
            "turn/start"
        }
        .to_owned(),
        seq,
        time: 1_796_008_646_900 + seq,
        data: json!({"turn": seq / 7 + 1, "text": "é ✓ \"quoted\" ".repeat((seq % 4) as usize)}),
        source_event_seqs: None,
        surface_op: None,
        ignorable: None,
    };
    if seq % 5 == 0 && seq > 0 {
        event.source_event_seqs = Some(vec![seq - 1]);
        event.surface_op = Some(dsh_protocol::catalog::SurfaceOp::APPEND);
    }
    event
}

fn must<T>(result: Result<T, StoreError>) -> T {
    result.unwrap_or_else(|e| panic!("{e}"))
}

/// Writes `batches` (sizes) of events to a new session and returns its
/// location and the file length before the last batch.
fn write_session(
    store: &SessionStore,
    id: &str,
    encoding: Encoding,
    batches: &[usize],
) -> (SessionLocation, u64, u64) {
    let mut writer = must(SessionWriter::create(store, &header(id), encoding));
    let mut seq = 0;
    let mut before_last = 0;
    for (index, size) in batches.iter().enumerate() {
        if index + 1 == batches.len() {
            before_last = writer.file_len();
        }
        for _ in 0..*size {
            must(writer.append(&line(&event(seq))));
            seq += 1;
        }
        must(writer.flush());
    }
    let location = writer.location().clone();
    must(writer.close());
    (location, before_last, seq)
}

#[test]
fn round_trip_in_both_encodings_with_many_batches() {
    for encoding in [Encoding::Zstd, Encoding::Plain] {
        let home = temp();
        let store = SessionStore::new(home.path());
        let batches: Vec<usize> = (0..60).map(|i| 1 + (i * 7) % 13).collect();
        let (location, _, count) = write_session(&store, "s-1", encoding, &batches);
        assert_eq!(location.encoding, encoding);
        assert_eq!(
            location.file,
            home.path()
                .join("sessions/--home-user-ws--/s-1")
                .join(encoding.file_name())
        );
        assert_eq!(store.locate("s-1").ok().flatten(), Some(location.clone()));
        let stored = read(&location);
        assert!(!stored.torn_tail);
        assert_eq!(stored.header, header("s-1"));
        assert_eq!(stored.events.len() as u64, count);
        for (i, got) in stored.events.iter().enumerate() {
            assert_eq!(got, &event(i as u64));
        }
        let bytes = fs::read(&location.file).unwrap();
        if encoding == Encoding::Zstd {
            // The header's own frame, then one frame per batch, each one
            // standalone.
            let mut frames = 0;
            let mut rest = &bytes[..];
            while !rest.is_empty() {
                let size = zstd::zstd_safe::find_frame_compressed_size(rest)
                    .unwrap_or_else(|e| panic!("frame {frames}: {e}"));
                rest = &rest[size..];
                frames += 1;
            }
            assert_eq!(frames, batches.len() + 1);
            let first = zstd::zstd_safe::find_frame_compressed_size(&bytes[..]).unwrap_or(0);
            let header = zstd::stream::decode_all(&bytes[..first]).unwrap_or_default();
            assert!(
                header.starts_with(br#"{"type":"session""#)
                    && header.iter().filter(|b| **b == b'\n').count() == 1
            );
            let text = zstd::stream::decode_all(&bytes[..]).unwrap();
            assert!(text.starts_with(br#"{"type":"session","version":4,"id":"s-1","#));
        } else {
            assert!(bytes.starts_with(br#"{"type":"session","version":4,"id":"s-1","createdAt":1796008646846,"cwd":"/home/user/ws","isSeeded":false,"delegationDepth":0}"#));
            assert!(bytes.ends_with(b"\n"));
        }
    }
}

#[test]
fn appended_bytes_are_exactly_the_lines_given() {
    let home = temp();
    let store = SessionStore::new(home.path());
    let mut writer = must(SessionWriter::create(
        &store,
        &header("exact"),
        Encoding::Plain,
    ));
    // Odd spacing and key order are kept verbatim (the log serialises once).
    let lines = [
        r#"{"type":"a","seq":0,"time":5,"data":{"z":1,"a":[1, 2]},"sourceEventSeqs":[]}"#,
        r#"{"type":"b","seq":1,"time":5,"data":null,"surfaceOp":"append"}"#,
    ];
    must(writer.append(lines[0]));
    let raw = serde_json::value::RawValue::from_string(lines[1].to_owned()).unwrap();
    must(writer.append_raw(&raw));
    assert!(matches!(
        writer.append("{\n}"),
        Err(StoreError::InvalidEvent { .. })
    ));
    assert!(matches!(
        writer.append(""),
        Err(StoreError::InvalidEvent { .. })
    ));
    must(writer.flush());
    let text = fs::read_to_string(&writer.location().file).unwrap();
    let got: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(got, lines);
}

#[test]
fn no_log_before_the_first_flush_and_no_footprint_when_unused() {
    let root = temp();
    let home = root.path().join("dsh_home");
    let store = SessionStore::new(&home);
    let mut writer = must(SessionWriter::create(
        &store,
        &header("lazy"),
        Encoding::Zstd,
    ));
    let location = writer.location().clone();
    // Claimed: the directory and its lock exist, the log does not.
    assert!(!writer.is_on_disk());
    assert!(location.lock_file().is_file());
    assert!(!location.file.exists());
    must(writer.flush()); // nothing buffered: still no log
    must(writer.sync());
    for seq in 0..3 {
        must(writer.append(&line(&event(seq))));
    }
    assert_eq!(writer.buffered_events(), 3);
    assert!(!location.file.exists());
    assert!(matches!(store.exists("lazy"), Ok(false)));
    must(writer.flush());
    assert!(writer.is_on_disk());
    assert!(matches!(store.exists("lazy"), Ok(true)));
    // A writer dropped before its first write leaves nothing behind.
    let quiet = must(SessionWriter::create(
        &store,
        &header("quiet"),
        Encoding::Zstd,
    ));
    let quiet_dir = quiet.location().dir.clone();
    assert!(quiet_dir.is_dir());
    drop(quiet);
    assert!(!quiet_dir.exists());
    // Its project directory stays: it holds "lazy".
    assert!(store.sessions_dir().join("--home-user-ws--/lazy").is_dir());
    let alone = SessionHeader::root("alone", 1, Some("/elsewhere".into()));
    drop(must(SessionWriter::create(&store, &alone, Encoding::Plain)));
    assert!(!store.sessions_dir().join("--elsewhere--").exists());
    // A writer dropped with buffered events writes them.
    let mut dropped = must(SessionWriter::create(
        &store,
        &header("dropped"),
        Encoding::Plain,
    ));
    must(dropped.append(&line(&event(0))));
    let location = dropped.location().clone();
    drop(dropped);
    assert_eq!(read(&location).events.len(), 1);
}

#[test]
fn files_are_0600_and_directories_0700() {
    let root = temp();
    let home = root.path().join("home");
    let store = SessionStore::new(&home);
    let mut writer = must(SessionWriter::create(
        &store,
        &header("modes"),
        Encoding::Zstd,
    ));
    must(writer.append(&line(&event(0))));
    must(writer.sync());
    let location = writer.location().clone();
    let mode = |path: &Path| {
        fs::metadata(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .permissions()
            .mode()
            & 0o777
    };
    for dir in [
        home.clone(),
        store.sessions_dir(),
        store.sessions_dir().join("--home-user-ws--"),
        location.dir.clone(),
    ] {
        assert_eq!(mode(&dir), 0o700, "{}", dir.display());
    }
    assert_eq!(mode(&location.file), 0o600);
    assert_eq!(mode(&location.lock_file()), 0o600);
    assert_eq!(
        fs::metadata(location.lock_file()).map(|m| m.len()).ok(),
        Some(0)
    );
    let mut names: Vec<String> = fs::read_dir(&location.dir)
        .unwrap()
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["session.lock", "session.v4.jsonl.zstd"]);
    drop(writer);
    // The lock file is never deleted.
    assert!(location.lock_file().exists());
}

#[test]
fn a_second_writer_is_locked_out_while_the_first_lives() {
    let home = temp();
    let store = SessionStore::new(home.path());
    let mut first = must(SessionWriter::create(
        &store,
        &header("busy"),
        Encoding::Zstd,
    ));
    must(first.append(&line(&event(0))));
    must(first.flush());
    let location = must(store.locate("busy")).unwrap_or_else(|| panic!("not found"));
    let stored = read(&location);
    let err = SessionWriter::open_append(&location, &stored).err();
    assert_eq!(
        err.map(|e| e.to_string()).as_deref(),
        Some(r#"session "busy" is already owned by an active write handle"#)
    );
    assert!(matches!(
        SessionWriter::resume(&location),
        Err(StoreError::Locked { .. })
    ));
    // Creating it again is refused whatever the cwd.
    let elsewhere = SessionHeader::root("busy", 1, Some("/elsewhere".into()));
    let err = SessionWriter::create(&store, &elsewhere, Encoding::Zstd).err();
    assert_eq!(
        err.map(|e| e.to_string()).as_deref(),
        Some(r#"session "busy" already exists"#)
    );
    drop(first);
    let mut second = must(SessionWriter::open_append(&location, &stored));
    must(second.append(&line(&event(1))));
    must(second.flush());
    assert!(matches!(
        SessionWriter::resume(&location),
        Err(StoreError::Locked { .. })
    ));
    drop(second);
    let (third, stored) = must(SessionWriter::resume(&location));
    assert_eq!(stored.events.len(), 2);
    drop(third);
}

#[test]
fn two_creators_of_one_id_do_not_both_win() {
    let home = temp();
    let store = SessionStore::new(home.path());
    let mut a = must(SessionWriter::create(
        &store,
        &header("race"),
        Encoding::Plain,
    ));
    // The second creator is refused at creation, before it can accept
    // anything, in the same project directory or in another one.
    let owned = Some(r#"session "race" is already owned by an active write handle"#.to_owned());
    let b = SessionWriter::create(&store, &header("race"), Encoding::Plain);
    assert_eq!(b.err().map(|e| e.to_string()), owned);
    let elsewhere = SessionHeader::root("race", 1, Some("/elsewhere".into()));
    let b = SessionWriter::create(&store, &elsewhere, Encoding::Zstd);
    assert_eq!(b.err().map(|e| e.to_string()), owned);
    assert!(!store.sessions_dir().join("--elsewhere--").exists());
    must(a.append(&line(&event(0))));
    must(a.flush());
    // Once the log exists the id "already exists", locked or not.
    let b = SessionWriter::create(&store, &elsewhere, Encoding::Zstd);
    assert_eq!(
        b.err().map(|e| e.to_string()).as_deref(),
        Some(r#"session "race" already exists"#)
    );
    drop(a);
    assert!(matches!(
        SessionWriter::create(&store, &header("race"), Encoding::Plain),
        Err(StoreError::AlreadyExists { .. })
    ));
    let location = must(store.locate("race")).unwrap_or_else(|| panic!("not found"));
    assert_eq!(read(&location).events.len(), 1);
}

#[test]
fn a_crashed_creator_does_not_block_the_id() {
    let home = temp();
    let store = SessionStore::new(home.path());
    // What a creator killed before its first write leaves: the directory
    // and an unlocked lock file.
    let dir = store.sessions_dir().join("--home-user-ws--/crashed");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("session.lock"), b"").unwrap();
    assert!(matches!(store.locate("crashed"), Ok(None)));
    let mut writer = must(SessionWriter::create(
        &store,
        &header("crashed"),
        Encoding::Plain,
    ));
    must(writer.append(&line(&event(0))));
    must(writer.close());
    let location = must(store.locate("crashed")).unwrap_or_else(|| panic!("not found"));
    assert_eq!(read(&location).events.len(), 1);
    // Left by a creator in another project directory: the same.
    let other = store.sessions_dir().join("--other--/crashed2");
    fs::create_dir_all(&other).unwrap();
    fs::write(other.join("session.lock"), b"").unwrap();
    drop(must(SessionWriter::create(
        &store,
        &header("crashed2"),
        Encoding::Plain,
    )));
}

#[test]
fn creators_in_many_threads_one_wins() {
    for round in 0..20 {
        let home = temp();
        let store = SessionStore::new(home.path());
        let id = format!("t{round}");
        let barrier = std::sync::Barrier::new(4);
        let outcomes: Vec<Result<SessionWriter, StoreError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|i| {
                    let (store, id, barrier) = (&store, &id, &barrier);
                    scope.spawn(move || {
                        let cwd = format!("/ws{}", i % 2);
                        let header = SessionHeader::root(id.as_str(), 1, Some(cwd));
                        barrier.wait();
                        SessionWriter::create(store, &header, Encoding::Plain)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|_| panic!("thread panicked")))
                .collect()
        });
        let winners = outcomes.iter().filter(|o| o.is_ok()).count();
        assert_eq!(winners, 1, "round {round}");
        for outcome in &outcomes {
            if let Err(err) = outcome {
                assert!(matches!(err, StoreError::Locked { .. }), "{err}");
            }
        }
    }
}

#[test]
fn a_stale_read_is_refused() {
    let home = temp();
    let store = SessionStore::new(home.path());
    let (location, _, _) = write_session(&store, "stale", Encoding::Plain, &[2]);
    let stored = read(&location);
    let (mut writer, _) = must(SessionWriter::resume(&location));
    must(writer.append(&line(&event(2))));
    must(writer.close());
    assert!(matches!(
        SessionWriter::open_append(&location, &stored),
        Err(StoreError::Stale { .. })
    ));
}

/// Truncates the log at every byte offset inside its last batch, reads it,
/// reopens it for appending, appends two events and reads it again.
/// Cuts the log written in `batches` at every offset of its last batch.
fn torn_tails(encoding: Encoding, batches: &[usize]) {
    let home = temp();
    let store = SessionStore::new(home.path());
    let (location, before_last, count) = write_session(&store, "torn", encoding, batches);
    let original = fs::read(&location.file).unwrap_or_else(|e| panic!("{e}"));
    let earlier = count - batches.last().copied().unwrap_or_default() as u64;
    let mut salvaged_some = false;
    for cut in before_last..original.len() as u64 {
        let cut_len = usize::try_from(cut).unwrap_or_default();
        fs::write(&location.file, &original[..cut_len]).unwrap_or_else(|e| panic!("{e}"));
        let stored = SessionReader::read(&location).unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        // A plain cut on a line boundary looks like a shorter batch.
        let torn = match encoding {
            Encoding::Zstd => cut != before_last,
            Encoding::Plain => original[cut_len - 1] != b'\n',
        };
        assert_eq!(stored.torn_tail, torn, "cut {cut}");
        let kept = stored.events.len() as u64;
        // A zstd frame cut inside its checksum still yields every line.
        assert!(kept >= earlier && kept <= count, "cut {cut}: {kept} events");
        salvaged_some |= kept > earlier;
        for (i, got) in stored.events.iter().enumerate() {
            assert_eq!(got, &event(i as u64), "cut {cut}");
        }
        let mut writer = SessionWriter::open_append(&location, &stored)
            .unwrap_or_else(|e| panic!("cut {cut}: {e}"));
        must(writer.append(&line(&event(kept))));
        must(writer.append(&line(&event(kept + 1))));
        must(writer.close());
        let again = SessionReader::read(&location)
            .unwrap_or_else(|e| panic!("cut {cut}: after append: {e}"));
        assert!(!again.torn_tail, "cut {cut}");
        assert_eq!(again.events.len() as u64, kept + 2, "cut {cut}");
        for (i, got) in again.events.iter().enumerate() {
            assert_eq!(got, &event(i as u64), "cut {cut}");
        }
    }
    assert!(salvaged_some, "complete events of a torn batch are kept");
}

#[test]
fn torn_zstd_tails_at_every_offset() {
    torn_tails(Encoding::Zstd, &[4, 3, 5]);
}

#[test]
fn torn_plain_tails_at_every_offset() {
    torn_tails(Encoding::Plain, &[4, 3, 5]);
}

/// The event log writes one batch, so one zstd frame, per event.
#[test]
fn torn_tails_of_one_frame_per_event_logs() {
    let one_each = [1; 12];
    torn_tails(Encoding::Zstd, &one_each);
    torn_tails(Encoding::Plain, &one_each);
}

#[test]
fn corruption_before_the_end_is_reported() {
    let home = temp();
    let store = SessionStore::new(home.path());
    let (location, _, _) = write_session(&store, "bad", Encoding::Plain, &[3, 3]);
    let text = fs::read_to_string(&location.file).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines[3] = lines[3].replacen("\"seq\":2", "\"seq\":x", 1);
    fs::write(&location.file, lines.join("\n") + "\n").unwrap();
    let err = SessionReader::read(&location)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    let prefix = format!("corrupt session log: {}: line 4: ", location.file.display());
    assert!(err.starts_with(&prefix), "{err}");
    // A seq gap.
    lines[3] = line(&event(3));
    fs::write(&location.file, lines.join("\n") + "\n").unwrap();
    let err = SessionReader::read(&location)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert_eq!(err, format!("{prefix}expected seq 2, found 3"));
    // A flipped byte inside a middle zstd frame.
    let (location, _, _) = write_session(&store, "badz", Encoding::Zstd, &[3, 3, 3]);
    let mut bytes = fs::read(&location.file).unwrap();
    let first = zstd::zstd_safe::find_frame_compressed_size(&bytes).unwrap();
    let second = zstd::zstd_safe::find_frame_compressed_size(&bytes[first..]).unwrap();
    bytes[first + second / 2] ^= 0x55;
    fs::write(&location.file, &bytes).unwrap();
    match SessionReader::read(&location) {
        Err(StoreError::Corrupt { file, .. }) => assert_eq!(file, location.file),
        other => panic!("{other:?}"),
    }
}

#[test]
fn unsupported_versions_are_refused_clearly() {
    let home = temp();
    let store = SessionStore::new(home.path());
    let mut old = header("old");
    let bytes = serde_json::to_string(&old)
        .unwrap_or_default()
        .replace("\"version\":4", "\"version\":5")
        + "\n";
    let location = install(&store, &old, Encoding::Plain, bytes.as_bytes());
    let err = SessionReader::read(&location)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(
        err.starts_with("session format version 5 is not supported"),
        "{err}"
    );
    old.version = 3;
    let err = SessionWriter::create(&store, &old, Encoding::Plain).err();
    assert!(matches!(err, Some(StoreError::InvalidHeader { .. })));
}

#[test]
fn sessions_without_cwd_and_odd_ids() {
    let home = temp();
    let store = SessionStore::new(home.path());
    for id in ["..", "a/b", "ünï"] {
        let header = SessionHeader::root(id, 1, None);
        let mut writer = must(SessionWriter::create(&store, &header, Encoding::Plain));
        must(writer.append(&line(&event(0))));
        must(writer.close());
        let location = must(store.locate(id)).unwrap_or_else(|| panic!("{id} not found"));
        assert_eq!(
            location.dir.parent(),
            Some(store.sessions_dir().join("_no-cwd").as_path())
        );
        assert_eq!(read(&location).header.id, id);
    }
    assert!(store.sessions_dir().join("_no-cwd/~002E~002E").is_dir());
}

#[test]
fn reopened_logs_keep_their_inode_and_grow_by_appends() {
    let home = temp();
    let store = SessionStore::new(home.path());
    let (location, _, count) = write_session(&store, "grow", Encoding::Zstd, &[3]);
    let inode = fs::metadata(&location.file).map(|m| m.ino()).ok();
    let (mut writer, stored) = must(SessionWriter::resume(&location));
    let before = writer.file_len();
    assert_eq!(stored.next_seq(), count);
    must(writer.append(&line(&event(count))));
    must(writer.flush());
    assert!(writer.file_len() > before);
    assert_eq!(
        fs::metadata(&location.file).map(|m| m.len()).ok(),
        Some(writer.file_len())
    );
    assert_eq!(fs::metadata(&location.file).map(|m| m.ino()).ok(), inode);
}

#[test]
fn large_escaped_lines_are_written_at_once_and_stored_as_given() {
    for encoding in [Encoding::Plain, Encoding::Zstd] {
        let home = temp();
        let store = SessionStore::new(home.path());
        let mut writer = must(SessionWriter::create(&store, &header("direct"), encoding));
        // The first batch creates the log (always buffered).
        must(writer.append(&line(&event(0))));
        must(writer.flush());
        let before = writer.file_len();
        // Already escaped: a literal U+10FFFF and an escaped lone surrogate
        // are stored as given (not decoded a second time).
        let big = format!(
            "{{\"type\":\"user/message\",\"seq\":1,\"time\":2,\"data\":{{\"text\":\"\u{10FFFF}\\ud800{}\"}}}}",
            "y".repeat(200 * 1024)
        );
        must(writer.append_rope(&JsonRope::from_vec(big.clone().into_bytes())));
        assert!(
            writer.file_len() > before,
            "{encoding:?}: written without a flush"
        );
        assert_eq!(writer.buffered_events(), 0);
        let small = line(&event(2));
        must(writer.append_rope(&JsonRope::from_vec(small.into_bytes())));
        assert_eq!(
            writer.buffered_events(),
            1,
            "{encoding:?}: a small line is buffered"
        );
        must(writer.flush());
        let stored = read(writer.location());
        assert_eq!(stored.events.len(), 3);
        let text = stored.events[1].data["text"].as_str().unwrap_or_default();
        assert!(text.starts_with('\u{10FFFF}'), "{encoding:?}");
        if encoding == Encoding::Plain {
            let file = fs::read_to_string(&writer.location().file).unwrap_or_default();
            assert!(file.contains(&big), "the line is stored byte for byte");
        }
        assert!(matches!(
            writer.append_rope(&JsonRope::from_vec(b"{\n}".to_vec())),
            Err(StoreError::InvalidEvent { .. })
        ));
    }
}

#[test]
fn an_event_that_repeats_a_long_text_is_written_from_its_shared_segments() {
    for encoding in [Encoding::Plain, Encoding::Zstd] {
        let home = temp();
        let store = SessionStore::new(home.path());
        let mut writer = must(SessionWriter::create(&store, &header("shared"), encoding));
        must(writer.append(&line(&event(0))));
        must(writer.flush());
        let text: String = (0..300_000u32)
            .map(|i| char::from(b'a' + (i % 23) as u8))
            .collect();
        let (a, b) = text.split_at(100_000);
        let big = json!({"type": "assistant/message", "seq": 1, "time": 2, "data": {
            "content": [{"type": "text", "text": text}],
            "stream": [{"texts": [a, b]}, {"block": {"text": text}}],
        }});
        let rope = to_rope(&big).unwrap_or_else(|e| panic!("{e}"));
        assert!(rope.segments().len() > 3, "the text is shared, not copied");
        let before = writer.file_len();
        must(writer.append_rope(&rope));
        assert_eq!(writer.buffered_events(), 0, "{encoding:?}: written at once");
        assert!(writer.file_len() > before);
        must(writer.append_rope(&JsonRope::from_vec(line(&event(2)).into_bytes())));
        must(writer.flush());
        let stored = read(writer.location());
        assert_eq!(stored.events.len(), 3, "{encoding:?}");
        assert_eq!(stored.events[1].data, big["data"], "{encoding:?}");
        if encoding == Encoding::Plain {
            let file = fs::read(&writer.location().file).unwrap_or_default();
            let serialised = serde_json::to_vec(&big).unwrap_or_default();
            assert!(
                file.windows(serialised.len()).any(|w| w == serialised),
                "stored byte for byte"
            );
        }
    }
}
