//! The reader's tests: plain and zstd logs, torn tails, corruption.

use super::input::CHUNK;
use super::*;

const HEADER: &str =
    r#"{"type":"session","version":4,"id":"s","createdAt":1,"isSeeded":false,"delegationDepth":0}"#;

fn location(encoding: Encoding) -> SessionLocation {
    SessionLocation::new("s", PathBuf::from("/h/sessions/--w--/s"), encoding)
}

fn event(seq: u64) -> String {
    format!(
        r#"{{"type":"turn/start","seq":{seq},"time":{},"data":{{"turn":1}}}}"#,
        100 + seq
    )
}

fn plain(lines: &[String]) -> Vec<u8> {
    let mut text = String::new();
    for line in lines {
        text.push_str(line);
        text.push('\n');
    }
    text.into_bytes()
}

fn read_plain(bytes: &[u8]) -> Result<StoredSession, StoreError> {
    SessionReader::parse(&location(Encoding::Plain), bytes)
}

#[test]
fn reads_plain_lines() {
    let bytes = plain(&[HEADER.into(), event(0), event(1)]);
    let stored = read_plain(&bytes).unwrap();
    assert_eq!(stored.events.len(), 2);
    assert!(!stored.torn_tail);
    assert_eq!(stored.tail, TailFix::Clean);
    assert_eq!(stored.next_seq(), 2);
    assert_eq!(stored.last_time(), 101);
}

#[test]
fn source_event_seq_runs_are_expanded() {
    let line = r#"{"type":"x","seq":9,"time":1,"data":{},"sourceEventSeqs":[0,[2,5],7,[8,8]],"surfaceOp":"append"}"#;
    let mut lines = vec![HEADER.to_owned()];
    lines.extend((0..9).map(event));
    lines.push(line.to_owned());
    let stored = read_plain(&plain(&lines)).unwrap();
    assert_eq!(
        stored.events[9].source_event_seqs,
        Some(vec![0, 2, 3, 4, 5, 7, 8])
    );
    for bad in ["[[5,2]]", "[[2,9]]", "[[1,2,3]]", "[\"x\"]"] {
        let line =
            format!(r#"{{"type":"x","seq":9,"time":1,"data":{{}},"sourceEventSeqs":{bad}}}"#);
        let mut lines = vec![HEADER.to_owned()];
        lines.extend((0..9).map(event));
        lines.push(line);
        lines.push(event(10));
        let err = read_plain(&plain(&lines))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with("corrupt session log: /h/sessions/--w--/s/session.v4.jsonl: line 11: "),
            "{bad}: {err}"
        );
    }
}

#[test]
fn seq_gaps_and_bad_lines_are_corrupt() {
    let err = read_plain(&plain(&[HEADER.into(), event(0), event(2)]))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert_eq!(
        err,
        "corrupt session log: /h/sessions/--w--/s/session.v4.jsonl: line 3: expected seq 1, found 2"
    );
    let err = read_plain(&plain(&[HEADER.into(), event(1)]))
        .err()
        .map(|e| e.to_string());
    assert!(err.is_some_and(|e| e.contains("line 2: expected seq 0, found 1")));
    let bad = plain(&[HEADER.into(), event(0), "{not json".into(), event(1)]);
    let err = read_plain(&bad)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains(": line 3: bad event: "), "{err}");
    let extra = r#"{"type":"x","seq":0,"time":0,"data":{},"id":"e"}"#;
    assert!(read_plain(&plain(&[HEADER.into(), extra.into()])).is_err());
    let blank = plain(&[HEADER.into(), String::new(), event(0)]);
    assert!(read_plain(&blank).is_err());
    // A complete final line (it has its newline) that does not parse is
    // corruption too, not a torn write.
    let bad_last = plain(&[HEADER.into(), event(0), "{\"type\"".into()]);
    assert!(matches!(
        read_plain(&bad_last),
        Err(StoreError::Corrupt { line: 3, .. })
    ));
}

#[test]
fn headers_are_checked() {
    let v3 = HEADER.replace("\"version\":4", "\"version\":3");
    let err = read_plain(&plain(&[v3]))
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert_eq!(
        err,
        "session format version 3 is not supported: /h/sessions/--w--/s/session.v4.jsonl"
    );
    let other = HEADER.replace("\"id\":\"s\"", "\"id\":\"t\"");
    assert!(matches!(
        read_plain(&plain(&[other])),
        Err(StoreError::Corrupt { line: 1, .. })
    ));
    let extra = HEADER.replace("\"isSeeded\"", "\"title\":\"x\",\"isSeeded\"");
    assert!(matches!(
        read_plain(&plain(&[extra])),
        Err(StoreError::Corrupt { line: 1, .. })
    ));
    assert!(matches!(
        read_plain(&plain(&[event(0)])),
        Err(StoreError::Corrupt { line: 1, .. })
    ));
    let err = read_plain(b"")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("line 1: missing session header"), "{err}");
}

#[test]
fn plain_torn_tails() {
    let full = plain(&[HEADER.into(), event(0), event(1)]);
    let cut = full.len() - 5;
    let stored = read_plain(&full[..cut]).unwrap();
    assert!(stored.torn_tail);
    assert_eq!(stored.events.len(), 1);
    let line2_end = HEADER.len() + 1 + event(0).len() + 1;
    assert_eq!(
        stored.tail,
        TailFix::Truncate {
            len: line2_end as u64
        }
    );
    // Only the newline lost: the event is kept and the newline owed.
    let stored = read_plain(&full[..full.len() - 1]).unwrap();
    assert!(stored.torn_tail);
    assert_eq!(stored.events.len(), 2);
    assert_eq!(stored.tail, TailFix::Newline);
    // Whole JSON without its newline that fails the checks is not torn.
    let mut gap = plain(&[HEADER.into(), event(0)]);
    gap.extend_from_slice(event(5).as_bytes());
    assert!(matches!(
        read_plain(&gap),
        Err(StoreError::Corrupt { line: 3, .. })
    ));
}

#[test]
fn zstd_frames_and_a_truncated_last_frame() {
    let first = plain(&[HEADER.into(), event(0)]);
    let second = plain(&[event(1), event(2)]);
    let mut bytes = zstd::bulk::compress(&first, 3).unwrap();
    let first_len = bytes.len();
    bytes.extend(zstd::bulk::compress(&second, 3).unwrap());
    let loc = location(Encoding::Zstd);
    let stored = SessionReader::parse(&loc, &bytes).unwrap();
    assert_eq!(stored.events.len(), 3);
    assert_eq!(stored.tail, TailFix::Clean);
    let whole = SessionReader::parse(&loc, &bytes[..first_len])
        .ok()
        .map(|s| s.tail);
    assert_eq!(whole, Some(TailFix::Clean));
    for cut in first_len + 1..bytes.len() {
        let stored =
            SessionReader::parse(&loc, &bytes[..cut]).unwrap_or_else(|e| panic!("{cut}: {e}"));
        assert!(stored.torn_tail, "{cut}");
        assert!(!stored.events.is_empty(), "{cut}");
        match &stored.tail {
            TailFix::Truncate { len } => assert_eq!(*len, first_len as u64),
            TailFix::Rewrite { keep, salvaged } => {
                assert_eq!(*keep, first_len as u64);
                assert!(salvaged.ends_with(b"\n"));
            }
            other => panic!("{cut}: {other:?}"),
        }
    }
    let mut garbage = bytes.clone();
    let at = first_len + 8;
    garbage[at] ^= 0xff;
    garbage.extend_from_slice(&bytes[first_len..]);
    assert!(matches!(
        SessionReader::parse(&loc, &garbage),
        Err(StoreError::Corrupt { .. })
    ));
}

#[test]
fn lines_and_frames_longer_than_a_read_chunk() {
    let long = format!(
        r#"{{"type":"x","seq":1,"time":1,"data":{{"text":"{}"}}}}"#,
        "y".repeat(3 * CHUNK)
    );
    let lines = [HEADER.to_owned(), event(0), long, event(2)];
    let bytes = plain(&lines);
    let stored = read_plain(&bytes).unwrap();
    assert_eq!(stored.events.len(), 3);
    assert_eq!(
        stored.events[1].data["text"].as_str().map(str::len),
        Some(3 * CHUNK)
    );
    assert_eq!(stored.tail, TailFix::Clean);
    // Torn inside the long line: cut after the line before it.
    let cut = HEADER.len() + event(0).len() + 2 + CHUNK;
    let stored = read_plain(&bytes[..cut]).unwrap();
    assert_eq!(stored.events.len(), 1);
    let kept = (HEADER.len() + event(0).len() + 2) as u64;
    assert_eq!(stored.tail, TailFix::Truncate { len: kept });
    // zstd: one frame decoding to several chunks, then a torn one.
    let first = zstd::bulk::compress(&bytes, 3).unwrap();
    let mut framed = first.clone();
    framed.extend(zstd::bulk::compress(&plain(&[event(3)]), 3).unwrap());
    let loc = location(Encoding::Zstd);
    let stored = SessionReader::parse(&loc, &framed).unwrap();
    assert_eq!(stored.events.len(), 4);
    let stored = SessionReader::parse(&loc, &framed[..framed.len() - 2]).unwrap();
    assert!(stored.torn_tail);
    assert_eq!(stored.file_len, framed.len() as u64 - 2);
    assert_eq!(
        stored.tail,
        TailFix::Truncate {
            len: first.len() as u64
        }
    );
}

#[test]
fn a_cut_inside_whole_frames_rewrites_from_the_start() {
    // A complete frame ending inside a line, then a truncated frame
    // without a newline: the kept text starts in the first frame.
    let text = plain(&[HEADER.into(), event(0)]);
    let mut bytes = zstd::bulk::compress(&[&text[..], b"{\"type\""].concat(), 3).unwrap();
    let second = zstd::bulk::compress(b":\"turn/st", 3).unwrap();
    bytes.extend_from_slice(&second[..second.len() - 1]);
    let stored = SessionReader::parse(&location(Encoding::Zstd), &bytes).unwrap();
    assert!(stored.torn_tail);
    assert_eq!(stored.events.len(), 1);
    assert_eq!(
        stored.tail,
        TailFix::Rewrite {
            keep: 0,
            salvaged: text
        }
    );
}

#[test]
fn read_each_visits_what_read_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let loc = SessionLocation::new("s", dir.path().to_path_buf(), Encoding::Plain);
    let bytes = plain(&[HEADER.into(), event(0), event(1), "{\"ty".into()]);
    std::fs::write(&loc.file, &bytes[..bytes.len() - 1]).unwrap();
    let mut seen = Vec::new();
    let log = SessionReader::read_each(&loc, |e| seen.push(e)).unwrap();
    let stored = SessionReader::read(&loc).unwrap();
    assert_eq!(seen, stored.events);
    assert_eq!((log.next_seq, log.last_time), (2, Some(101)));
    assert_eq!(log.torn_tail, stored.torn_tail);
    assert_eq!(log.tail, stored.tail);
    assert_eq!(log.file_len, stored.file_len);
}
