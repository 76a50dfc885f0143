//! Bounded capture of one output stream of a job.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;

/// Bytes kept in memory before the stream moves to a spill file.
const MEMORY_LIMIT: usize = 256 * 1024;

/// Bytes of recent output kept in memory once the stream has spilled; more
/// than the display limit, so the visible tail is always complete.
const TAIL_KEEP: usize = 64 * 1024;

/// One captured stream: everything in memory while small, then a spill file
/// holding the whole stream plus an in-memory tail.
#[derive(Debug, Default)]
pub(crate) struct Capture {
    recent: Vec<u8>,
    total: u64,
    spill: Option<(PathBuf, File)>,
    spill_failed: bool,
}

impl Capture {
    /// Appends `data`; once memory use is too high, moves the stream to the
    /// file `spill` creates (called at most once; on failure only the tail
    /// is kept).
    pub(crate) fn push(
        &mut self,
        data: &[u8],
        spill: impl FnOnce() -> io::Result<(PathBuf, File)>,
    ) {
        self.total += data.len() as u64;
        if let Some((_, file)) = &mut self.spill
            && file.write_all(data).is_err()
        {
            self.spill_failed = true;
        }
        self.recent.extend_from_slice(data);
        if self.spill.is_none() && !self.spill_failed && self.recent.len() > MEMORY_LIMIT {
            match spill().and_then(|(path, mut file)| {
                file.write_all(&self.recent)?;
                Ok((path, file))
            }) {
                Ok(spilled) => self.spill = Some(spilled),
                Err(_) => self.spill_failed = true,
            }
        }
        if self.recent.len() > 2 * TAIL_KEEP && (self.spill.is_some() || self.spill_failed) {
            let cut = self.recent.len() - TAIL_KEEP;
            self.recent.drain(..cut);
        }
    }

    /// Whether the in-memory bytes are only a tail of the stream.
    pub(crate) fn is_partial(&self) -> bool {
        self.total > self.recent.len() as u64
    }

    /// The bytes held in memory (the whole stream unless partial).
    pub(crate) fn recent(&self) -> &[u8] {
        &self.recent
    }

    /// Whether nothing was captured.
    pub(crate) fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// Copies the whole stream into `out`, from the spill file when there
    /// is one (read through its open descriptor, never reopened by name);
    /// `false` when only the tail could be copied.
    pub(crate) fn copy_all(&mut self, out: &mut File) -> io::Result<bool> {
        match &self.spill {
            Some((_, file)) => {
                copy_from_start(file, out)?;
                Ok(!self.spill_failed)
            }
            None => {
                out.write_all(&self.recent)?;
                Ok(!self.is_partial())
            }
        }
    }

    /// Removes the spill file, if any.
    pub(crate) fn discard_spill(&mut self) {
        if let Some((path, _)) = self.spill.take() {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Copies `source` from its first byte into `out`, leaving the offset of
/// `source` (where the stream is appended) alone.
fn copy_from_start(source: &File, out: &mut File) -> io::Result<()> {
    let mut buffer = vec![0; 64 * 1024];
    let mut offset = 0;
    loop {
        match source.read_at(&mut buffer, offset) {
            Ok(0) => return Ok(()),
            Ok(read) => {
                out.write_all(&buffer[..read])?;
                offset += read as u64;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
}
