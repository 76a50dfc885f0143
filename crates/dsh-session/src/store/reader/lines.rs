//! The text of a log split into lines as it arrives, and each line parsed
//! and checked: the header first, then events in seq order.

use crate::store::error::StoreError;
use crate::store::header::{FORMAT_VERSION, SessionHeader};
use dsh_protocol::catalog::SessionEvent;
use dsh_protocol::lenient;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::marker::PhantomData;
use std::path::Path;

/// Whether `bytes` is one complete JSON value.
fn is_json(bytes: &[u8]) -> bool {
    serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_ok()
}
/// The decompressed text of a log, split into lines as it arrives.
pub(super) struct Text<'a, D, V> {
    pub(super) lines: Lines<'a, D, V>,
    /// The text after the last `\n` so far.
    pub(super) partial: Vec<u8>,
    /// Bytes of text so far.
    pub(super) len: u64,
    /// The text since the last complete zstd frame ended.
    pub(super) since_frame: Vec<u8>,
    /// Whether [`since_frame`](Self::since_frame) is kept (zstd).
    pub(super) framed: bool,
}

impl<'a, D: DeserializeOwned, V: FnMut(SessionEvent<D>)> Text<'a, D, V> {
    pub(super) fn new(lines: Lines<'a, D, V>) -> Self {
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
    pub(super) fn feed(&mut self, mut chunk: &[u8]) {
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
/// Line-by-line state of a read.
pub(super) struct Lines<'a, D, V> {
    file: &'a Path,
    id: &'a str,
    line: usize,
    pub(super) header: Option<SessionHeader>,
    /// The seq the next event must have.
    pub(super) next_seq: u64,
    /// The `time` of the last event.
    pub(super) last_time: Option<u64>,
    /// The first line that failed: nothing after it is parsed.
    pub(super) error: Option<StoreError>,
    visit: V,
    /// What the events' `data` is read as.
    data: PhantomData<fn() -> D>,
}

impl<'a, D: DeserializeOwned, V: FnMut(SessionEvent<D>)> Lines<'a, D, V> {
    pub(super) fn new(file: &'a Path, id: &'a str, visit: V) -> Self {
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
    pub(super) fn parse_fragment(
        &mut self,
        fragment: &[u8],
        tearable: bool,
    ) -> Result<bool, StoreError> {
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
