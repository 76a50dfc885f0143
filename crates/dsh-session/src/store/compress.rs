//! zstd frames for session logs, from a process-wide pool of compressors.
//!
//! A compression context holds a few hundred KiB of tables once used. A
//! writer keeping its own would make memory grow with every open session
//! (≈315 KiB each, idle or not); the pool keeps at most [`IDLE_MAX`] idle
//! contexts for the whole process, so that cost stays fixed however many
//! sessions are open, and a batch still reuses a warm context instead of
//! allocating one (≈20 µs).

use super::error::StoreError;
use dsh_protocol::JsonRope;
use std::io::{self, Write};
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use zstd::bulk::Compressor;
use zstd::zstd_safe::CParameter;

/// zstd level of written frames (the library default).
const LEVEL: i32 = zstd::DEFAULT_COMPRESSION_LEVEL;

/// Frames of fewer bytes than this (most single events) use [`SMALL_LEVEL`].
const SMALL: usize = 1024;

/// zstd level of small frames: a fast level, whose literals are stored
/// rather than entropy-coded. Every event is written (so compressed) on its
/// own before it is notified; for a frame of a few hundred bytes this takes
/// ≈1.7 µs instead of ≈5 µs at level 3, for ≈7 % more bytes on a typical
/// session log.
const SMALL_LEVEL: i32 = -1;

/// Idle compressors kept for reuse; more are made while more batches are
/// compressed at once, and dropped after use.
const IDLE_MAX: usize = 4;

/// The idle compressors.
static POOL: Mutex<Vec<Compressor<'static>>> = Mutex::new(Vec::new());

/// `data` as one zstd frame (level 3, or [`SMALL_LEVEL`] under [`SMALL`]
/// bytes, with a content checksum), for the log `file` (named in errors).
pub(crate) fn frame(data: &[u8], file: &Path) -> Result<Vec<u8>, StoreError> {
    let leased = POOL.lock().unwrap_or_else(PoisonError::into_inner).pop();
    let mut compressor = match leased {
        Some(compressor) => compressor,
        None => new_compressor(file)?,
    };
    let level = if data.len() < SMALL {
        SMALL_LEVEL
    } else {
        LEVEL
    };
    let frame = compressor
        .set_parameter(CParameter::CompressionLevel(level))
        .and_then(|()| compressor.compress(data))
        .map_err(|e| StoreError::io("compress a batch for", file, e))?;
    let mut pool = POOL.lock().unwrap_or_else(PoisonError::into_inner);
    if pool.len() < IDLE_MAX {
        pool.push(compressor);
    }
    Ok(frame)
}

/// Writes `event` and the `\n` that ends its line to `out` as one zstd
/// frame (level 3, with its size and a content checksum), compressed as it
/// is written: a huge event is never held compressed in memory whole.
pub(crate) fn write_frame(out: &mut impl Write, event: &JsonRope, file: &Path) -> io::Result<()> {
    let mut encoder = zstd::stream::write::Encoder::new(out, LEVEL)?;
    encoder.include_checksum(true)?;
    encoder.set_pledged_src_size(Some(event.len() as u64 + 1))?;
    event.write_line_to(&mut encoder)?;
    encoder.finish().map(drop).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("compress an event for {}: {e}", file.display()),
        )
    })
}

/// A compressor for log frames.
fn new_compressor(file: &Path) -> Result<Compressor<'static>, StoreError> {
    let mut compressor =
        Compressor::new(LEVEL).map_err(|e| StoreError::io("start compressing", file, e))?;
    compressor
        .set_parameter(CParameter::ChecksumFlag(true))
        .map_err(|e| StoreError::io("start compressing", file, e))?;
    Ok(compressor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_decode_to_their_input_and_carry_a_checksum() {
        let line = b"{\"type\":\"turn/start\",\"seq\":0,\"data\":{\"turn\":1}}\n";
        for data in [line.repeat(2), line.repeat(200)] {
            let frame = frame(&data, Path::new("/log")).unwrap_or_default();
            assert_eq!(zstd::decode_all(frame.as_slice()).ok(), Some(data.clone()));
            assert!(frame.len() < data.len(), "{} bytes compressed", data.len());
            // Frame header descriptor: bit 2 is the content checksum flag.
            assert_eq!(frame.get(4).map(|d| d & 0b100), Some(0b100));
            // A second frame from the pooled compressor is the same bytes.
            assert_eq!(super::frame(&data, Path::new("/log")).ok(), Some(frame));
        }
    }

    #[test]
    fn the_pool_keeps_a_bounded_number_of_idle_compressors() {
        let threads: Vec<_> = (0..IDLE_MAX * 3)
            .map(|_| std::thread::spawn(|| frame(b"x\n", Path::new("/log")).is_ok()))
            .collect();
        for thread in threads {
            assert_eq!(thread.join().ok(), Some(true));
        }
        let idle = POOL.lock().map(|p| p.len()).unwrap_or(usize::MAX);
        assert!(idle <= IDLE_MAX, "{idle} idle compressors");
    }
}
