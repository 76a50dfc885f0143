//! Bounded capture of one output stream of a job.
//!
//! Small output stays in memory. Past [`MEMORY_LIMIT`] the stream moves to
//! a spill file that holds at most the stream's first `head` bytes and a
//! ring of its last `tail` bytes (see [`SpillLimits`]); what falls between
//! is counted and replaced by a marker when the stream is copied out. Every
//! byte the file grows by is taken from the session's [`SpillQuota`]; once
//! the quota is used up the file stops growing and the rest is counted as
//! unsaved.

use super::quota::{SpillLimits, SpillQuota, dropped_marker, unsaved_marker};
use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

/// Bytes kept in memory before the stream moves to a spill file.
const MEMORY_LIMIT: usize = 256 * 1024;

/// Bytes of recent output kept in memory once the stream has spilled; more
/// than the display limit, so the visible tail is always complete.
const TAIL_KEEP: usize = 64 * 1024;

/// One captured stream: everything in memory while small, then a bounded
/// spill file plus an in-memory tail.
#[derive(Debug)]
pub(crate) struct Capture {
    recent: Vec<u8>,
    total: u64,
    spill: Option<SpillFile>,
    spill_failed: bool,
    limits: SpillLimits,
    quota: Arc<SpillQuota>,
}

/// The spill file of a stream: `[head][ring]`.
#[derive(Debug)]
struct SpillFile {
    path: PathBuf,
    file: File,
    /// Bytes of the head written (at most `limits.head()`).
    head_len: u64,
    /// Bytes of the stream after the head; the ring holds the last
    /// `min(after_head, tail)` of them, byte `k` at `head + k % tail`.
    after_head: u64,
    /// Bytes that came after the quota refused to grow the file.
    unsaved: u64,
}

impl SpillFile {
    /// Bytes the file occupies.
    fn len(&self, limits: &SpillLimits) -> u64 {
        self.head_len + self.after_head.min(limits.tail())
    }

    /// Bytes of the stream that are in neither the head nor the ring.
    fn dropped(&self, limits: &SpillLimits) -> u64 {
        self.after_head - self.after_head.min(limits.tail())
    }

    /// Appends `data`: the head first, then the ring. Takes the growth of
    /// the file from `quota` up front; when it does not fit, nothing more
    /// is written.
    fn append(&mut self, data: &[u8], limits: &SpillLimits, quota: &SpillQuota) -> io::Result<()> {
        if self.unsaved > 0 {
            self.unsaved += data.len() as u64;
            return Ok(());
        }
        let (head, tail) = (limits.head(), limits.tail());
        let to_head = data
            .len()
            .min(usize::try_from(head - self.head_len).unwrap_or(usize::MAX));
        let rest = &data[to_head..];
        let before = self.len(limits);
        let after =
            self.head_len + to_head as u64 + (self.after_head + rest.len() as u64).min(tail);
        if !quota.try_take(after - before) {
            self.unsaved += data.len() as u64;
            return Ok(());
        }
        self.write(data, to_head, limits)
            .inspect_err(|_| quota.give_back(after - before))
    }

    /// Writes `data` (its first `to_head` bytes to the head, the rest to
    /// the ring) and advances the lengths.
    fn write(&mut self, data: &[u8], to_head: usize, limits: &SpillLimits) -> io::Result<()> {
        let (head, tail) = (limits.head(), limits.tail());
        let rest = &data[to_head..];
        self.file.write_all_at(&data[..to_head], self.head_len)?;
        self.head_len += to_head as u64;
        if rest.is_empty() {
            return Ok(());
        }
        let mut index = self.after_head;
        self.after_head += rest.len() as u64;
        if tail == 0 {
            return Ok(());
        }
        let mut rest = rest;
        if rest.len() as u64 > tail {
            let skip = rest.len() - usize::try_from(tail).unwrap_or(usize::MAX);
            index += skip as u64;
            rest = &rest[skip..];
        }
        while !rest.is_empty() {
            let at = index % tail;
            let room = usize::try_from(tail - at).unwrap_or(usize::MAX);
            let (now, later) = rest.split_at(rest.len().min(room));
            self.file.write_all_at(now, head + at)?;
            index += now.len() as u64;
            rest = later;
        }
        Ok(())
    }

    /// Copies the head, the drop marker if bytes were dropped, the ring
    /// in stream order and the quota marker if bytes were not saved.
    fn copy_to(&self, out: &mut File, limits: &SpillLimits, quota: &SpillQuota) -> io::Result<()> {
        let head = limits.head();
        let tail = limits.tail();
        copy_range(&self.file, 0, self.head_len, out)?;
        let dropped = self.dropped(limits);
        if dropped > 0 {
            out.write_all(dropped_marker(dropped, limits).as_bytes())?;
        }
        let kept = self.after_head.min(tail);
        if kept > 0 {
            let start = if self.after_head <= tail {
                0
            } else {
                self.after_head % tail
            };
            copy_range(&self.file, head + start, kept - start, out)?;
            if start > 0 {
                copy_range(&self.file, head, start, out)?;
            }
        }
        if self.unsaved > 0 {
            out.write_all(unsaved_marker(self.unsaved, quota).as_bytes())?;
        }
        Ok(())
    }
}

impl Capture {
    /// An empty capture whose spill obeys `limits` and `quota`.
    pub(crate) fn new(limits: SpillLimits, quota: Arc<SpillQuota>) -> Self {
        Self {
            recent: Vec::new(),
            total: 0,
            spill: None,
            spill_failed: false,
            limits,
            quota,
        }
    }

    /// Appends `data`; once memory use is too high, moves the stream to the
    /// file `spill` creates (called at most once; on failure only the tail
    /// is kept).
    pub(crate) fn push(
        &mut self,
        data: &[u8],
        spill: impl FnOnce() -> io::Result<(PathBuf, File)>,
    ) {
        self.total += data.len() as u64;
        if let Some(file) = &mut self.spill
            && file.append(data, &self.limits, &self.quota).is_err()
        {
            self.spill_failed = true;
        }
        self.recent.extend_from_slice(data);
        if self.spill.is_none() && !self.spill_failed && self.recent.len() > MEMORY_LIMIT {
            match spill() {
                Ok((path, file)) => {
                    let mut file = SpillFile {
                        path,
                        file,
                        head_len: 0,
                        after_head: 0,
                        unsaved: 0,
                    };
                    match file.append(&self.recent, &self.limits, &self.quota) {
                        Ok(()) => self.spill = Some(file),
                        Err(_) => {
                            self.spill = Some(file);
                            self.spill_failed = true;
                            self.discard_spill();
                        }
                    }
                }
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

    /// Bytes a copy of the stream takes at most (markers included).
    pub(crate) fn copy_len(&self) -> u64 {
        const MARKERS: u64 = 512;
        match &self.spill {
            Some(file) => file.len(&self.limits) + MARKERS,
            None => self.recent.len() as u64,
        }
    }

    /// Bytes of the stream left out of its saved copy: dropped between
    /// head and tail, and not saved for the quota.
    pub(crate) fn left_out(&self) -> (u64, u64) {
        match &self.spill {
            Some(file) => (file.dropped(&self.limits), file.unsaved),
            None => (0, 0),
        }
    }

    /// Copies the stream into `out`: from the spill file when there is one
    /// (read through its open descriptor, never reopened by name), with
    /// markers where bytes were left out; `false` when only the tail could
    /// be copied.
    pub(crate) fn copy_all(&mut self, out: &mut File) -> io::Result<bool> {
        match &self.spill {
            Some(file) => {
                file.copy_to(out, &self.limits, &self.quota)?;
                Ok(!self.spill_failed)
            }
            None => {
                out.write_all(&self.recent)?;
                Ok(!self.is_partial())
            }
        }
    }

    /// Removes the spill file, if any, giving its bytes back to the quota.
    pub(crate) fn discard_spill(&mut self) {
        if let Some(file) = self.spill.take() {
            self.quota.give_back(file.len(&self.limits));
            let _ = std::fs::remove_file(&file.path);
        }
    }

    /// Removes the spill file and never spills again (the session is
    /// disposed).
    pub(crate) fn close(&mut self) {
        self.discard_spill();
        self.spill_failed = true;
    }
}

/// Copies `len` bytes of `source` from `offset` into `out`, leaving the
/// offset of `source` alone.
fn copy_range(source: &File, offset: u64, len: u64, out: &mut File) -> io::Result<()> {
    let mut buffer = vec![0; 64 * 1024];
    let mut done = 0;
    while done < len {
        let want = usize::try_from(len - done)
            .unwrap_or(usize::MAX)
            .min(buffer.len());
        match source.read_at(&mut buffer[..want], offset + done) {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the spill file is shorter than recorded",
                ));
            }
            Ok(read) => {
                out.write_all(&buffer[..read])?;
                done += read as u64;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok<T, E: std::fmt::Debug>(result: Result<T, E>) -> T {
        result.unwrap_or_else(|err| panic!("{err:?}"))
    }

    /// Pushes `stream` in chunks of `chunk` bytes into a capture with a
    /// per-job cap of `job_max` and a quota of `session_max`, and returns
    /// its saved copy.
    fn saved(stream: &[u8], chunk: usize, job_max: u64, session_max: u64) -> (Vec<u8>, Capture) {
        let dir = ok(tempfile::tempdir());
        let limits = SpillLimits {
            job_max,
            session_max,
            keep: false,
        };
        let mut capture = Capture::new(limits, SpillQuota::new(session_max));
        for piece in stream.chunks(chunk) {
            capture.push(piece, || {
                let path = dir.path().join("spill");
                let file = File::options()
                    .read(true)
                    .write(true)
                    .create_new(true)
                    .open(&path)?;
                Ok((path, file))
            });
        }
        let out_path = dir.path().join("out");
        let mut out = ok(File::create(&out_path));
        assert!(ok(capture.copy_all(&mut out)));
        (ok(std::fs::read(&out_path)), capture)
    }

    fn stream(len: usize) -> Vec<u8> {
        (0..len).map(|i| ((i * 31 + i / 997) % 256) as u8).collect()
    }

    #[test]
    fn a_long_stream_keeps_its_head_and_tail_around_a_marker() {
        let data = stream(3 * MEMORY_LIMIT + 12_345);
        let job_max = 4 * 100_000;
        for chunk in [1000, 16 * 1024, 300_000] {
            let (copy, capture) = saved(&data, chunk, job_max, u64::MAX);
            let marker = dropped_marker((data.len() - 200_000) as u64, &capture.limits);
            let mut expected = data[..100_000].to_vec();
            expected.extend_from_slice(marker.as_bytes());
            expected.extend_from_slice(&data[data.len() - 100_000..]);
            assert_eq!(copy.len(), expected.len(), "chunk {chunk}");
            assert!(
                copy == expected,
                "chunk {chunk}: head, marker and tail differ"
            );
            assert_eq!(capture.left_out(), ((data.len() - 200_000) as u64, 0));
            let file = capture
                .spill
                .as_ref()
                .map(|file| ok(file.file.metadata()).len());
            assert_eq!(
                file,
                Some(200_000),
                "the spill file holds head and ring only"
            );
        }
    }

    #[test]
    fn a_stream_within_the_cap_is_saved_whole() {
        let data = stream(MEMORY_LIMIT + 50_000);
        let (copy, capture) = saved(&data, 4096, 4 * 1024 * 1024, u64::MAX);
        assert!(copy == data);
        assert_eq!(capture.left_out(), (0, 0));
    }

    #[test]
    fn the_quota_stops_the_file_and_says_how_much_was_not_saved() {
        let data = stream(MEMORY_LIMIT + 100_000);
        let quota = MEMORY_LIMIT as u64 + 40_000;
        let (copy, capture) = saved(&data, 10_000, 64 * 1024 * 1024, quota);
        let (_, unsaved) = capture.left_out();
        assert!(unsaved > 0 && unsaved <= 100_000, "{unsaved}");
        let kept = data.len() - unsaved as usize;
        let marker = unsaved_marker(unsaved, &capture.quota);
        assert!(copy.starts_with(&data[..kept]));
        assert_eq!(&copy[kept..], marker.as_bytes());
        assert!(marker.contains("DSH_SPILL_SESSION_MAX_BYTES"));
        capture_discard(capture);
    }

    fn capture_discard(mut capture: Capture) {
        let quota = capture.quota.clone();
        capture.discard_spill();
        assert!(
            quota.try_take(quota.max()),
            "discarding gave every byte back"
        );
    }
}
