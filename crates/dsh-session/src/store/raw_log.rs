//! A log's raw lines from a byte offset: the summaries of `session/list`
//! scan only what was appended since they were computed, and a fork copies
//! its source's lines byte for byte.
//!
//! Unlike [the reader](crate::store::SessionReader), which reads a whole log
//! from its header and checks every event, this reads the lines of the
//! batches from a batch boundary on (plain: any line start; zstd: a frame
//! start), hands each complete line to its visitor as it is, and reports
//! where each batch ends, so that a caller can keep only what whole batches
//! said: a torn final write (a partial line, a truncated frame) is never
//! part of what is committed. Memory is bounded by the longest line (plain)
//! or the output of one frame between line ends (zstd).

use super::error::StoreError;
use super::layout::{Encoding, LOG_WHAT};
use crate::private_fs::open_file;
use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Seek, SeekFrom};
use std::ops::ControlFlow;
use std::path::Path;
use zstd::stream::raw::{Decoder, Operation};

/// Bytes read from the file at a time.
const CHUNK: usize = 1 << 16;

/// What a visitor is handed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Item<'a> {
    /// One complete line, without its `\n` (empty lines are skipped).
    Line(&'a [u8]),
    /// Every line since the last batch end belongs to a whole batch that
    /// ends at this file offset: what they said can be committed.
    BatchEnd(u64),
}

/// Opens the log `path` for reading (a regular file owned by the runtime,
/// not followed if it is a symbolic link).
pub(crate) fn open_log(path: &Path) -> Result<File, StoreError> {
    Ok(open_file(LOG_WHAT, path, OpenOptions::new().read(true))?)
}

/// Hands the lines of the log `file` (at `path`, stored with `encoding`)
/// from file offset `from` (a batch boundary) to `visit`, with a
/// [`Item::BatchEnd`] after each whole batch, until the end of the file or
/// until `visit` breaks. Returns the offset after the last whole batch
/// visited (`from` when none was).
///
/// A zstd frame that cannot be decoded is corruption ([`StoreError::Corrupt`],
/// line 0: the line number is not known from an offset); a truncated final
/// frame or a final line without its `\n` is a torn tail, not visited.
pub(crate) fn each_line(
    file: &mut File,
    path: &Path,
    encoding: Encoding,
    from: u64,
    mut visit: impl FnMut(Item<'_>) -> ControlFlow<()>,
) -> Result<u64, StoreError> {
    file.seek(SeekFrom::Start(from))
        .map_err(|e| StoreError::io("read", path, e))?;
    match encoding {
        Encoding::Plain => plain_lines(file, path, from, &mut visit),
        Encoding::Zstd => zstd_lines(file, path, from, &mut visit),
    }
}

/// Reads up to one chunk into `buf`, retrying on `EINTR`.
fn read_chunk(file: &mut File, path: &Path, buf: &mut [u8]) -> Result<usize, StoreError> {
    loop {
        match file.read(buf) {
            Ok(n) => return Ok(n),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(StoreError::io("read", path, e)),
        }
    }
}

/// Splits `chunk` into lines after `partial` (the text since the last
/// `\n`), visiting each complete one; `at` is the file offset (plain) or
/// unused (zstd) of the text consumed so far, advanced past each line.
/// Returns `Break` when the visitor broke.
fn split(
    partial: &mut Vec<u8>,
    mut chunk: &[u8],
    mut on_line: impl FnMut(&[u8], usize) -> ControlFlow<()>,
) -> ControlFlow<()> {
    while let Some(at) = memchr::memchr(b'\n', chunk) {
        let (line, rest) = (&chunk[..at], &chunk[at + 1..]);
        let consumed = partial.len() + at + 1;
        let flow = if partial.is_empty() {
            on_line(line, consumed)
        } else {
            partial.extend_from_slice(line);
            let flow = on_line(partial, consumed);
            partial.clear();
            flow
        };
        flow?;
        chunk = rest;
    }
    partial.extend_from_slice(chunk);
    ControlFlow::Continue(())
}

/// The lines of a plain log: every complete line is a batch of its own.
fn plain_lines(
    file: &mut File,
    path: &Path,
    from: u64,
    visit: &mut impl FnMut(Item<'_>) -> ControlFlow<()>,
) -> Result<u64, StoreError> {
    let mut buf = vec![0u8; CHUNK];
    let mut partial = Vec::new();
    let mut end = from;
    loop {
        let n = read_chunk(file, path, &mut buf)?;
        if n == 0 {
            return Ok(end);
        }
        let flow = split(&mut partial, &buf[..n], |line, consumed| {
            if !line.is_empty() {
                visit(Item::Line(line))?;
            }
            end += consumed as u64;
            visit(Item::BatchEnd(end))
        });
        if flow.is_break() {
            return Ok(end);
        }
    }
}

/// The lines of a zstd log: a batch is one frame.
fn zstd_lines(
    file: &mut File,
    path: &Path,
    from: u64,
    visit: &mut impl FnMut(Item<'_>) -> ControlFlow<()>,
) -> Result<u64, StoreError> {
    let mut decoder = Decoder::new().map_err(|e| StoreError::io("start decoding", path, e))?;
    let mut input = vec![0u8; CHUNK];
    let mut output = vec![0u8; CHUNK];
    let mut partial = Vec::new();
    // File offset after the input consumed so far.
    let mut offset = from;
    let mut end = from;
    let (mut pos, mut filled, mut eof) = (0, 0, false);
    let undecodable = |end: u64, why: String| {
        StoreError::corrupt(
            path,
            0,
            format!("undecodable zstd frame at byte {end}: {why}"),
        )
    };
    loop {
        if pos == filled && !eof {
            filled = read_chunk(file, path, &mut input)?;
            pos = 0;
            eof = filled == 0;
        }
        let status = decoder
            .run_on_buffers(&input[pos..filled], &mut output)
            .map_err(|e| undecodable(end, e.to_string()))?;
        pos += status.bytes_read;
        offset += status.bytes_read as u64;
        let flow = split(&mut partial, &output[..status.bytes_written], |line, _| {
            if line.is_empty() {
                ControlFlow::Continue(())
            } else {
                visit(Item::Line(line))
            }
        });
        if flow.is_break() {
            return Ok(end);
        }
        if status.remaining == 0 && offset > end {
            // A frame ended, its output flushed. Batches end in `\n`; text
            // after the last one belongs to no line.
            partial.clear();
            end = offset;
            if visit(Item::BatchEnd(end)).is_break() {
                return Ok(end);
            }
        }
        if eof && status.bytes_written < output.len() {
            // Nothing more to decode: a truncated frame after `end` is a
            // torn tail.
            return Ok(end);
        }
        if !eof && status.bytes_read == 0 && status.bytes_written == 0 {
            return Err(undecodable(end, "no progress".to_owned()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn lines_of(path: &Path, encoding: Encoding, from: u64) -> (Vec<String>, Vec<u64>, u64) {
        let mut file = File::open(path).unwrap();
        let (mut lines, mut ends) = (Vec::new(), Vec::new());
        let end = each_line(&mut file, path, encoding, from, |item| {
            match item {
                Item::Line(line) => lines.push(String::from_utf8_lossy(line).into_owned()),
                Item::BatchEnd(at) => ends.push(at),
            }
            ControlFlow::Continue(())
        })
        .unwrap();
        (lines, ends, end)
    }

    #[test]
    fn plain_lines_end_their_own_batches_and_a_torn_line_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, b"h\na\n\nbb\ncc").unwrap();
        let (lines, ends, end) = lines_of(&path, Encoding::Plain, 0);
        assert_eq!(lines, ["h", "a", "bb"]);
        assert_eq!(ends, [2, 4, 5, 8]);
        assert_eq!(end, 8);
        let (lines, _, end) = lines_of(&path, Encoding::Plain, 4);
        assert_eq!((lines, end), (vec!["bb".to_owned()], 8));
    }

    #[test]
    fn zstd_frames_are_batches_and_a_truncated_frame_is_not_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let first = zstd::encode_all(&b"h\n"[..], 0).unwrap();
        let second = zstd::encode_all(&b"a\nb\n"[..], 0).unwrap();
        let third = zstd::encode_all(&b"c\n"[..], 0).unwrap();
        let mut bytes = [first.clone(), second.clone()].concat();
        std::fs::write(&path, &bytes).unwrap();
        let (lines, ends, end) = lines_of(&path, Encoding::Zstd, 0);
        assert_eq!(lines, ["h", "a", "b"]);
        let after_first = first.len() as u64;
        assert_eq!(ends, [after_first, bytes.len() as u64]);
        assert_eq!(end, bytes.len() as u64);
        let (lines, _, _) = lines_of(&path, Encoding::Zstd, after_first);
        assert_eq!(lines, ["a", "b"]);
        // A torn third frame: its lines may be visited, but no batch end
        // covers them.
        let whole = bytes.len() as u64;
        bytes.extend_from_slice(&third[..third.len() - 3]);
        let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.write_all(&bytes).unwrap();
        let (_, ends, end) = lines_of(&path, Encoding::Zstd, 0);
        assert_eq!(ends.last(), Some(&whole));
        assert_eq!(end, whole);
    }

    #[test]
    fn garbage_inside_a_zstd_log_is_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let mut bytes = zstd::encode_all(&b"h\n"[..], 0).unwrap();
        bytes.extend_from_slice(b"not a frame at all, definitely not");
        std::fs::write(&path, &bytes).unwrap();
        let mut file = File::open(&path).unwrap();
        let result = each_line(&mut file, &path, Encoding::Zstd, 0, |_| {
            ControlFlow::Continue(())
        });
        assert!(
            matches!(result, Err(StoreError::Corrupt { .. })),
            "{result:?}"
        );
    }

    #[test]
    fn a_visitor_can_stop_early() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        std::fs::write(&path, b"h\na\nb\n").unwrap();
        let mut file = File::open(&path).unwrap();
        let mut seen = 0;
        let end = each_line(&mut file, &path, Encoding::Plain, 0, |item| {
            if let Item::Line(_) = item {
                seen += 1;
                if seen == 2 {
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!((seen, end), (2, 2));
    }
}
