//! Reading a session log back: [`SessionReader`], [`StoredSession`].

use super::error::StoreError;
use super::header::{FORMAT_VERSION, SessionHeader};
use super::layout::{Encoding, LOG_WHAT, SessionLocation};
use crate::private_fs::open_file;
use dsh_protocol::catalog::SessionEvent;
use dsh_protocol::lenient;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fs::OpenOptions;
use std::io::{Cursor, ErrorKind, Read, Seek};
use std::marker::PhantomData;
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

/// A session log as read by [`SessionReader::read_each`]: everything but
/// its events, which went to the visitor.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredLog {
    /// Line 1.
    pub header: SessionHeader,
    /// The seq the next appended event gets (the number of events).
    pub next_seq: u64,
    /// The `time` of the last event (`None` without events).
    pub last_time: Option<u64>,
    /// As [`StoredSession::torn_tail`].
    pub torn_tail: bool,
    pub(crate) file: PathBuf,
    pub(crate) file_len: u64,
    pub(crate) tail: TailFix,
}

impl StoredSession {
    /// The log `log` with its `events`.
    fn new(log: StoredLog, events: Vec<SessionEvent>) -> Self {
        Self {
            header: log.header,
            events,
            torn_tail: log.torn_tail,
            file: log.file,
            file_len: log.file_len,
            tail: log.tail,
        }
    }

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
pub enum TailFix {
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
        let mut events = Vec::new();
        let log = Self::read_each(location, |event| events.push(event))?;
        Ok(StoredSession::new(log, events))
    }

    /// Reads the log at `location` as [`read`](Self::read) does, handing
    /// each complete event to `visit` in seq order instead of keeping it:
    /// memory stays bounded by the longest line (plain) or the largest
    /// frame (zstd), however long the log. The checks are the same, so is
    /// the error; on an error the events already visited are to be
    /// discarded (the log is corrupt).
    pub fn read_each<D: DeserializeOwned>(
        location: &SessionLocation,
        visit: impl FnMut(SessionEvent<D>),
    ) -> Result<StoredLog, StoreError> {
        let file = open_file(LOG_WHAT, &location.file, OpenOptions::new().read(true))?;
        scan(location, file, visit)
    }

    /// Parses the bytes of the log at `location` (as read from its file).
    pub fn parse(location: &SessionLocation, bytes: &[u8]) -> Result<StoredSession, StoreError> {
        let mut events = Vec::new();
        let log = scan(location, Cursor::new(bytes), |event| events.push(event))?;
        Ok(StoredSession::new(log, events))
    }
}

/// Bytes read from the log file at a time.
const CHUNK: usize = 1 << 16;

/// Reads the log in `source` (the bytes of the log at `location`),
/// visiting its events.
fn scan<R: Read + Seek, D: DeserializeOwned>(
    location: &SessionLocation,
    mut source: R,
    visit: impl FnMut(SessionEvent<D>),
) -> Result<StoredLog, StoreError> {
    let file = location.file.as_path();
    let mut text = Text::new(Lines::new(file, &location.id, visit));
    let mut input = Input::new(&mut source, file);
    let frames = match location.encoding {
        Encoding::Plain => {
            while let Some(chunk) = input.fill()? {
                let len = chunk.len();
                text.feed(chunk);
                input.consume(len);
            }
            None
        }
        Encoding::Zstd => {
            text.framed = true;
            let mut out = |out: &[u8], frame_ended| {
                text.feed(out);
                if frame_ended {
                    text.since_frame.clear();
                }
            };
            Some(decode_frames(file, &mut input, &mut out)?)
        }
    };
    input.drain()?;
    let file_len = input.read;
    let Text {
        mut lines,
        partial: fragment,
        len: text_len,
        since_frame,
        ..
    } = text;
    if let Some(err) = lines.error.take() {
        return Err(err);
    }
    // Whether the end of the text may be the remains of a torn write:
    // always for plain logs, for zstd only after a truncated frame.
    let tearable = frames.as_ref().is_none_or(|f| f.partial);
    let fragment_kept = !fragment.is_empty() && lines.parse_fragment(&fragment, tearable)?;
    let torn_tail = !fragment.is_empty() || frames.as_ref().is_some_and(|f| f.partial);
    let start = text_len - fragment.len() as u64;
    let ends = TextEnd {
        len: text_len,
        start,
        fragment_kept,
        since_frame: &since_frame,
    };
    let tail = tail_fix(frames.as_ref(), &ends, || {
        // The rare cut inside whole frames: decode the kept text again.
        source
            .rewind()
            .map_err(|e| StoreError::io("read", file, e))?;
        let mut input = Input::new(&mut source, file);
        let mut prefix = Vec::new();
        decode_frames(file, &mut input, &mut |out: &[u8], _| {
            prefix.extend_from_slice(out);
        })?;
        Ok(prefix)
    })?;
    let Some(header) = lines.header else {
        return Err(StoreError::corrupt(
            file,
            1,
            "missing session header (the log is empty or its first write was torn)",
        ));
    };
    Ok(StoredLog {
        header,
        next_seq: lines.next_seq,
        last_time: lines.last_time,
        torn_tail,
        file: file.to_path_buf(),
        file_len,
        tail,
    })
}

/// Where the (decompressed) text of a log ends.
struct TextEnd<'a> {
    /// Its length.
    len: u64,
    /// Where its trailing fragment (after the last `\n`) starts.
    start: u64,
    /// Whether that fragment was kept as an event.
    fragment_kept: bool,
    /// The text after the last complete zstd frame.
    since_frame: &'a [u8],
}

/// What must be done to the file before appending, given where the text
/// ends; `prefix` decodes the text of whole frames again for the rare cut
/// inside them.
fn tail_fix(
    frames: Option<&Frames>,
    end: &TextEnd<'_>,
    prefix: impl FnOnce() -> Result<Vec<u8>, StoreError>,
) -> Result<TailFix, StoreError> {
    let complete = end.start == end.len;
    Ok(match frames {
        None | Some(Frames { partial: false, .. }) if complete => TailFix::Clean,
        None | Some(Frames { partial: false, .. }) if end.fragment_kept => TailFix::Newline,
        None => TailFix::Truncate { len: end.start },
        Some(frames) => {
            let keep_end = if end.fragment_kept {
                end.len
            } else {
                end.start
            };
            let (keep, mut salvaged) = if keep_end >= frames.complete_out {
                let kept = usize::try_from(keep_end - frames.complete_out)
                    .map_or(end.since_frame, |n| &end.since_frame[..n]);
                (frames.complete_end, kept.to_vec())
            } else {
                // The cut falls inside whole frames: re-encode everything.
                let mut text = prefix()?;
                text.truncate(usize::try_from(keep_end).unwrap_or(usize::MAX));
                (0, text)
            };
            if end.fragment_kept {
                salvaged.push(b'\n');
            }
            if salvaged.is_empty() {
                TailFix::Truncate { len: keep }
            } else {
                TailFix::Rewrite { keep, salvaged }
            }
        }
    })
}

/// Whether `bytes` is one complete JSON value.
fn is_json(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}

/// The log file, read [`CHUNK`] bytes at a time.
struct Input<'a, R> {
    source: &'a mut R,
    file: &'a Path,
    buf: Vec<u8>,
    /// The unconsumed bytes are `buf[pos..end]`.
    pos: usize,
    end: usize,
    /// Bytes read from the file so far.
    read: u64,
}

impl<'a, R: Read> Input<'a, R> {
    fn new(source: &'a mut R, file: &'a Path) -> Self {
        Self {
            source,
            file,
            buf: vec![0; CHUNK],
            pos: 0,
            end: 0,
            read: 0,
        }
    }

    /// The unconsumed bytes, reading more when there are none; `None` at
    /// the end of the file.
    fn fill(&mut self) -> Result<Option<&[u8]>, StoreError> {
        if self.pos == self.end {
            let n = loop {
                match self.source.read(&mut self.buf) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(e) => return Err(StoreError::io("read", self.file, e)),
                }
            };
            self.read += n as u64;
            self.pos = 0;
            self.end = n;
        }
        Ok((self.pos < self.end).then(|| &self.buf[self.pos..self.end]))
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
    }

    /// Reads (and drops) the rest of the file, counting its bytes.
    fn drain(&mut self) -> Result<(), StoreError> {
        self.pos = self.end;
        while self.fill()?.is_some() {
            self.pos = self.end;
        }
        Ok(())
    }
}

/// The decompressed text of a log, split into lines as it arrives.
struct Text<'a, D, V> {
    lines: Lines<'a, D, V>,
    /// The text after the last `\n` so far.
    partial: Vec<u8>,
    /// Bytes of text so far.
    len: u64,
    /// The text since the last complete zstd frame ended.
    since_frame: Vec<u8>,
    /// Whether [`since_frame`](Self::since_frame) is kept (zstd).
    framed: bool,
}

impl<'a, D: DeserializeOwned, V: FnMut(SessionEvent<D>)> Text<'a, D, V> {
    fn new(lines: Lines<'a, D, V>) -> Self {
        Self {
            lines,
            partial: Vec::new(),
            len: 0,
            since_frame: Vec::new(),
            framed: false,
        }
    }

    /// Takes the next bytes of text: each line completed is parsed (until
    /// one fails: the rest is only counted, an undecodable frame after it
    /// being the error reported).
    fn feed(&mut self, mut chunk: &[u8]) {
        self.len += chunk.len() as u64;
        if self.framed {
            self.since_frame.extend_from_slice(chunk);
        }
        while let Some(at) = memchr::memchr(b'\n', chunk) {
            let (line, rest) = (&chunk[..at], &chunk[at + 1..]);
            if self.partial.is_empty() {
                self.lines.take(line);
            } else {
                self.partial.extend_from_slice(line);
                self.lines.take(&self.partial);
                self.partial.clear();
            }
            chunk = rest;
        }
        self.partial.extend_from_slice(chunk);
    }
}

/// Where the complete frames of a zstd log end.
struct Frames {
    /// File offset after the last complete frame.
    complete_end: u64,
    /// Decompressed bytes produced by the complete frames.
    complete_out: u64,
    /// Whether a truncated frame follows them.
    partial: bool,
}

/// Decompresses concatenated frames from `input` into `out`; a truncated
/// final frame contributes what could be decoded from it.
fn decode_frames<R: Read>(
    file: &Path,
    input: &mut Input<'_, R>,
    out: &mut impl FnMut(&[u8], bool),
) -> Result<Frames, StoreError> {
    let mut decoder = Decoder::new().map_err(|e| StoreError::io("start decoding", file, e))?;
    let mut chunk = vec![0u8; CHUNK];
    let mut pos = 0u64;
    let mut written = 0u64;
    let mut newlines = 0usize;
    let mut complete_end = 0;
    let mut complete_out = 0;
    loop {
        let bytes = input.fill()?.unwrap_or_default();
        let status = decoder.run_on_buffers(bytes, &mut chunk).map_err(|e| {
            StoreError::corrupt(
                file,
                1 + newlines,
                format!("undecodable zstd frame at byte {complete_end}: {e}"),
            )
        })?;
        input.consume(status.bytes_read);
        pos += status.bytes_read as u64;
        let produced = &chunk[..status.bytes_written];
        written += produced.len() as u64;
        newlines += memchr::memchr_iter(b'\n', produced).count();
        let frame_ended = status.remaining == 0;
        out(produced, frame_ended);
        let at_end = input.fill()?.is_none();
        if frame_ended {
            // A frame ended (and its output is flushed).
            complete_end = pos;
            complete_out = written;
            if at_end {
                break;
            }
            continue;
        }
        let output_full = status.bytes_written == chunk.len();
        let stuck = status.bytes_read == 0 && status.bytes_written == 0;
        if (at_end && !output_full) || stuck {
            break;
        }
    }
    let partial = input.fill()?.is_some() || complete_end < pos;
    Ok(Frames {
        complete_end,
        complete_out,
        partial,
    })
}

/// Line-by-line state of a read.
struct Lines<'a, D, V> {
    file: &'a Path,
    id: &'a str,
    line: usize,
    header: Option<SessionHeader>,
    /// The seq the next event must have.
    next_seq: u64,
    /// The `time` of the last event.
    last_time: Option<u64>,
    /// The first line that failed: nothing after it is parsed.
    error: Option<StoreError>,
    visit: V,
    /// What the events' `data` is read as.
    data: PhantomData<fn() -> D>,
}

impl<'a, D: DeserializeOwned, V: FnMut(SessionEvent<D>)> Lines<'a, D, V> {
    fn new(file: &'a Path, id: &'a str, visit: V) -> Self {
        Self {
            file,
            id,
            line: 0,
            header: None,
            next_seq: 0,
            last_time: None,
            error: None,
            visit,
            data: PhantomData,
        }
    }

    /// A complete line (its `\n` seen): parsed unless an earlier one
    /// failed.
    fn take(&mut self, line: &[u8]) {
        if self.error.is_none()
            && let Err(err) = self.parse_line(line)
        {
            self.error = Some(err);
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

    /// Parses the next line: the header first, then events (visited).
    fn parse_line(&mut self, line: &[u8]) -> Result<(), StoreError> {
        self.line += 1;
        if self.header.is_none() {
            let header = self.parse_header(line)?;
            self.header = Some(header);
        } else {
            let event = self.parse_event(line)?;
            self.next_seq += 1;
            self.last_time = Some(event.time);
            (self.visit)(event);
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

    fn parse_event(&self, line: &[u8]) -> Result<SessionEvent<D>, StoreError> {
        let event: SessionEvent<D> =
            lenient::from_slice(line).map_err(|e| self.corrupt(format!("bad event: {e}")))?;
        let expected = self.next_seq;
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
}
