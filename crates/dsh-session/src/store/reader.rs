//! Reading a session log back: [`SessionReader`], [`StoredSession`].

use super::error::StoreError;
use super::header::{FORMAT_VERSION, SessionHeader};
use super::layout::{Encoding, LOG_WHAT, SessionLocation};
use crate::private_fs::open_file;
use dsh_protocol::catalog::SessionEvent;
use dsh_protocol::lenient;
use serde_json::Value;
use std::borrow::Cow;
use std::fs::OpenOptions;
use std::io::Read;
use std::path::{Path, PathBuf};
use zstd::stream::raw::{Decoder, Operation};

/// A session log as read from disk.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSession {
    /// Line 1.
    pub header: SessionHeader,
    /// Every complete event, seqs `0..events.len()`.
    pub events: Vec<SessionEvent>,
    /// Whether the file ended inside a write (a partial line or a truncated
    /// zstd frame). The partial bytes are not part of `events`;
    /// [`SessionWriter::open_append`](super::SessionWriter::open_append)
    /// removes them before appending.
    pub torn_tail: bool,
    pub(crate) file: PathBuf,
    pub(crate) file_len: u64,
    pub(crate) tail: TailFix,
}

impl StoredSession {
    /// The seq the next appended event gets.
    pub fn next_seq(&self) -> u64 {
        self.events.len() as u64
    }

    /// The `time` of the last event (or the header's `createdAt`).
    pub fn last_time(&self) -> u64 {
        self.events
            .last()
            .map_or(self.header.created_at, |event| event.time)
    }
}

/// What must happen to the file before new batches are appended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TailFix {
    /// Nothing: the file ends with a complete line.
    Clean,
    /// Cut the file to `len` bytes (a partial line or frame after it).
    Truncate {
        /// Bytes kept.
        len: u64,
    },
    /// The final line is complete but lacks its `\n`: the next batch starts
    /// with one.
    Newline,
    /// zstd: keep the first `keep` bytes and replace the rest with one frame
    /// holding `salvaged` (complete lines decoded from a truncated frame,
    /// ending in `\n`).
    Rewrite {
        /// File bytes kept (whole frames).
        keep: u64,
        /// Decompressed bytes to store after them.
        salvaged: Vec<u8>,
    },
}

/// Reads session logs.
///
/// A log is the header line then one event per line. What a crash can leave
/// at the end of a log is a *torn tail*: the final write stopped early, so
/// the file ends inside a line (plain) or inside a zstd frame. The reader
/// keeps every complete line before that point, including complete lines
/// that could still be decoded from a truncated final frame, drops the
/// partial line and reports [`StoredSession::torn_tail`]. Anything wrong
/// before the end (an unparsable line, a bad header, a seq out of order, an
/// undecodable frame) is corruption, reported as [`StoreError::Corrupt`],
/// never skipped.
///
/// `sourceEventSeqs` is accepted both as a plain list of seqs and with runs
/// stored as nested `[start, end]` pairs (inclusive; §8.3 says the official
/// log stores runs of three or more that way, a shape no capture shows);
/// pairs are expanded, so [`SessionEvent::source_event_seqs`] is always the
/// plain list. A pair must satisfy `start <= end < seq`. This store writes
/// the plain form.
#[derive(Debug, Clone, Copy, Default)]
pub struct SessionReader;

impl SessionReader {
    /// Reads the whole log at `location` (a regular file owned by the
    /// runtime, opened without following a symbolic link).
    pub fn read(location: &SessionLocation) -> Result<StoredSession, StoreError> {
        let mut file = open_file(LOG_WHAT, &location.file, OpenOptions::new().read(true))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| StoreError::io("read", &location.file, e))?;
        Self::parse(location, &bytes)
    }

    /// Parses the bytes of the log at `location` (as read from its file).
    pub fn parse(location: &SessionLocation, bytes: &[u8]) -> Result<StoredSession, StoreError> {
        let file = location.file.as_path();
        let (text, frames) = match location.encoding {
            Encoding::Plain => (Cow::Borrowed(bytes), None),
            Encoding::Zstd => {
                let (text, frames) = decode_frames(file, bytes)?;
                (Cow::Owned(text), Some(frames))
            }
        };
        let mut lines = Lines::new(file, &location.id);
        let mut segments = text.split(|byte| *byte == b'\n');
        // What follows the last `\n` (empty when the text ends with one).
        let fragment = segments.next_back().unwrap_or_default();
        for line in segments {
            lines.parse_line(line)?;
        }
        // Whether the end of the text may be the remains of a torn write:
        // always for plain logs, for zstd only after a truncated frame.
        let tearable = frames.as_ref().is_none_or(|f| f.partial);
        let fragment_kept = !fragment.is_empty() && lines.parse_fragment(fragment, tearable)?;
        let torn_tail = !fragment.is_empty() || frames.as_ref().is_some_and(|f| f.partial);
        let start = text.len() - fragment.len();
        let tail = tail_fix(frames.as_ref(), &text, start, fragment_kept);
        let Some(header) = lines.header else {
            return Err(StoreError::corrupt(
                file,
                1,
                "missing session header (the log is empty or its first write was torn)",
            ));
        };
        Ok(StoredSession {
            header,
            events: lines.events,
            torn_tail,
            file: file.to_path_buf(),
            file_len: bytes.len() as u64,
            tail,
        })
    }
}

/// What must be done to the file before appending, given where its
/// trailing fragment starts in the (decompressed) `text` and whether that
/// fragment was kept as an event.
fn tail_fix(frames: Option<&Frames>, text: &[u8], start: usize, fragment_kept: bool) -> TailFix {
    let complete = start == text.len();
    match frames {
        None | Some(Frames { partial: false, .. }) if complete => TailFix::Clean,
        None | Some(Frames { partial: false, .. }) if fragment_kept => TailFix::Newline,
        None => TailFix::Truncate { len: start as u64 },
        Some(frames) => {
            let keep_end = if fragment_kept { text.len() } else { start };
            let (keep, from) = if keep_end >= frames.complete_out {
                (frames.complete_end as u64, frames.complete_out)
            } else {
                // The cut falls inside whole frames: re-encode everything.
                (0, 0)
            };
            let mut salvaged = text[from..keep_end].to_vec();
            if fragment_kept {
                salvaged.push(b'\n');
            }
            if salvaged.is_empty() {
                TailFix::Truncate { len: keep }
            } else {
                TailFix::Rewrite { keep, salvaged }
            }
        }
    }
}

/// Whether `bytes` is one complete JSON value.
fn is_json(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}

/// Where the complete frames of a zstd log end.
struct Frames {
    /// File offset after the last complete frame.
    complete_end: usize,
    /// Decompressed bytes produced by the complete frames.
    complete_out: usize,
    /// Whether a truncated frame follows them.
    partial: bool,
}

/// Decompresses concatenated frames; a truncated final frame contributes
/// what could be decoded from it.
fn decode_frames(file: &Path, bytes: &[u8]) -> Result<(Vec<u8>, Frames), StoreError> {
    let mut decoder = Decoder::new().map_err(|e| StoreError::io("start decoding", file, e))?;
    let mut out = Vec::with_capacity(bytes.len().saturating_mul(4));
    let mut chunk = vec![0u8; 1 << 16];
    let mut pos = 0;
    let mut complete_end = 0;
    let mut complete_out = 0;
    loop {
        let status = decoder
            .run_on_buffers(&bytes[pos..], &mut chunk)
            .map_err(|e| {
                let line = 1 + out.iter().filter(|b| **b == b'\n').count();
                StoreError::corrupt(
                    file,
                    line,
                    format!("undecodable zstd frame at byte {complete_end}: {e}"),
                )
            })?;
        pos += status.bytes_read;
        out.extend_from_slice(&chunk[..status.bytes_written]);
        if status.remaining == 0 {
            // A frame ended (and its output is flushed).
            complete_end = pos;
            complete_out = out.len();
            if pos == bytes.len() {
                break;
            }
            continue;
        }
        let output_full = status.bytes_written == chunk.len();
        let stuck = status.bytes_read == 0 && status.bytes_written == 0;
        if (pos == bytes.len() && !output_full) || stuck {
            break;
        }
    }
    let frames = Frames {
        complete_end,
        complete_out,
        partial: complete_end < bytes.len(),
    };
    Ok((out, frames))
}

/// Line-by-line state of a read.
struct Lines<'a> {
    file: &'a Path,
    id: &'a str,
    line: usize,
    header: Option<SessionHeader>,
    events: Vec<SessionEvent>,
}

impl<'a> Lines<'a> {
    fn new(file: &'a Path, id: &'a str) -> Self {
        Self {
            file,
            id,
            line: 0,
            header: None,
            events: Vec::new(),
        }
    }

    /// Parses the text after the last `\n`: whether it was kept as a line.
    /// When it may be a torn write (`tearable`) and is not whole JSON it is
    /// dropped; whole JSON that fails the checks (a seq out of order, say)
    /// is corruption, as is anything in a log whose end cannot be torn.
    fn parse_fragment(&mut self, fragment: &[u8], tearable: bool) -> Result<bool, StoreError> {
        match self.parse_line(fragment) {
            Ok(()) => Ok(true),
            Err(_) if tearable && !is_json(fragment) => Ok(false),
            Err(err) => Err(err),
        }
    }

    /// Parses the next line: the header first, then events.
    fn parse_line(&mut self, line: &[u8]) -> Result<(), StoreError> {
        self.line += 1;
        if self.header.is_none() {
            let header = self.parse_header(line)?;
            self.header = Some(header);
        } else {
            let event = self.parse_event(line)?;
            self.events.push(event);
        }
        Ok(())
    }

    fn corrupt(&self, reason: impl Into<String>) -> StoreError {
        StoreError::corrupt(self.file, self.line, reason)
    }

    fn parse_header(&self, line: &[u8]) -> Result<SessionHeader, StoreError> {
        let value: Value = serde_json::from_slice(line)
            .map_err(|e| self.corrupt(format!("session header is not JSON: {e}")))?;
        if value.get("type").and_then(Value::as_str) != Some("session") {
            return Err(self.corrupt("first line is not a session header"));
        }
        match value.get("version").and_then(Value::as_u64) {
            Some(FORMAT_VERSION) => {}
            Some(version) => {
                return Err(StoreError::UnsupportedVersion {
                    version,
                    file: self.file.to_path_buf(),
                });
            }
            None => return Err(self.corrupt("session header has no integer version")),
        }
        let header: SessionHeader = serde_json::from_value(value)
            .map_err(|e| self.corrupt(format!("bad session header: {e}")))?;
        if header.id != self.id {
            return Err(self.corrupt(format!(
                "header id \"{}\" does not match session \"{}\"",
                header.id, self.id
            )));
        }
        Ok(header)
    }

    fn parse_event(&self, line: &[u8]) -> Result<SessionEvent, StoreError> {
        let event: SessionEvent =
            lenient::from_slice(line).map_err(|e| self.corrupt(format!("bad event: {e}")))?;
        let expected = self.events.len() as u64;
        if event.seq != expected {
            return Err(self.corrupt(format!("expected seq {expected}, found {}", event.seq)));
        }
        if let Some(cited) = event
            .source_event_seqs
            .iter()
            .flatten()
            .find(|cited| **cited >= event.seq)
        {
            return Err(self.corrupt(format!(
                "event {} cites seq {cited}, not an earlier event",
                event.seq
            )));
        }
        Ok(event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = r#"{"type":"session","version":4,"id":"s","createdAt":1,"isSeeded":false,"delegationDepth":0}"#;

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
                err.starts_with(
                    "corrupt session log: /h/sessions/--w--/s/session.v4.jsonl: line 11: "
                ),
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
}
