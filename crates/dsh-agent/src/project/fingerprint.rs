//! What tells that a file may have changed without reading it.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// Size, identity and change times of a file (links followed): equal
/// fingerprints mean the content read before still holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fingerprint {
    len: u64,
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl Fingerprint {
    /// The fingerprint of what `metadata` describes.
    pub(crate) fn of(metadata: &std::fs::Metadata) -> Self {
        Self {
            len: metadata.len(),
            dev: metadata.dev(),
            ino: metadata.ino(),
            mtime: (metadata.mtime(), metadata.mtime_nsec()),
            ctime: (metadata.ctime(), metadata.ctime_nsec()),
        }
    }

    /// The fingerprint of the file at `path`, if it can be examined.
    pub(crate) fn at(path: &Path) -> std::io::Result<(Self, std::fs::Metadata)> {
        let metadata = std::fs::metadata(path)?;
        Ok((Self::of(&metadata), metadata))
    }
}
