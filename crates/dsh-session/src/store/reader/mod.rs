//! Reading a session log back: [`SessionReader`], [`StoredSession`].

use super::error::StoreError;
use super::header::SessionHeader;
use super::layout::{Encoding, LOG_WHAT, SessionLocation};
use crate::private_fs::open_file;
use dsh_protocol::catalog::SessionEvent;
use serde::de::DeserializeOwned;
use std::fs::OpenOptions;
use std::io::{Cursor, Read, Seek};
use std::path::PathBuf;

mod input;
mod lines;
mod tail;
#[cfg(test)]
mod tests;

use input::{Input, decode_frames};
use lines::{Lines, Text};
use tail::{TextEnd, tail_fix};

pub use tail::TailFix;

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
