//! The bytes of a log file: read a chunk at a time, and for zstd logs
//! decompressed frame by frame.

use crate::store::error::StoreError;
use std::io::{ErrorKind, Read};
use std::path::Path;
use zstd::stream::raw::{Decoder, Operation};

/// Bytes read from the log file at a time.
pub(super) const CHUNK: usize = 1 << 16;
/// The log file, read [`CHUNK`] bytes at a time.
pub(super) struct Input<'a, R> {
    source: &'a mut R,
    file: &'a Path,
    buf: Vec<u8>,
    /// The unconsumed bytes are `buf[pos..end]`.
    pos: usize,
    end: usize,
    /// Bytes read from the file so far.
    pub(super) read: u64,
}

impl<'a, R: Read> Input<'a, R> {
    pub(super) fn new(source: &'a mut R, file: &'a Path) -> Self {
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
    pub(super) fn fill(&mut self) -> Result<Option<&[u8]>, StoreError> {
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

    pub(super) fn consume(&mut self, n: usize) {
        self.pos += n;
    }

    /// Reads (and drops) the rest of the file, counting its bytes.
    pub(super) fn drain(&mut self) -> Result<(), StoreError> {
        self.pos = self.end;
        while self.fill()?.is_some() {
            self.pos = self.end;
        }
        Ok(())
    }
}
/// Where the complete frames of a zstd log end.
pub(super) struct Frames {
    /// File offset after the last complete frame.
    pub(super) complete_end: u64,
    /// Decompressed bytes produced by the complete frames.
    pub(super) complete_out: u64,
    /// Whether a truncated frame follows them.
    pub(super) partial: bool,
}
/// Decompresses concatenated frames from `input` into `out`; a truncated
/// final frame contributes what could be decoded from it.
pub(super) fn decode_frames<R: Read>(
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
