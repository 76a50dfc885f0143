//! What a torn tail needs before the log is appended to: [`TailFix`],
//! worked out from where the log's text ends.

use super::input::Frames;
use crate::store::error::StoreError;

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
/// Where the (decompressed) text of a log ends.
pub(super) struct TextEnd<'a> {
    /// Its length.
    pub(super) len: u64,
    /// Where its trailing fragment (after the last `\n`) starts.
    pub(super) start: u64,
    /// Whether that fragment was kept as an event.
    pub(super) fragment_kept: bool,
    /// The text after the last complete zstd frame.
    pub(super) since_frame: &'a [u8],
}
/// What must be done to the file before appending, given where the text
/// ends; `prefix` decodes the text of whole frames again for the rare cut
/// inside them.
pub(super) fn tail_fix(
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
