//! Files replaced whole and durably: the temporary file beside the log, the
//! rewrite of a torn zstd tail and the directory syncs that make renames
//! durable.

use crate::private_fs::open_file;
use crate::store::compress;
use crate::store::error::StoreError;
use crate::store::fsutil::{create_temp, sync_data, sync_dir};
use crate::store::layout::{LOG_WHAT, SessionLocation};
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// `<file>.tmp` beside `file`.
pub(super) fn temp_path(file: &Path) -> PathBuf {
    let mut name = file
        .file_name()
        .map(|n| n.to_os_string())
        .unwrap_or_default();
    name.push(".tmp");
    file.with_file_name(name)
}

/// `fsync`s and forgets every directory in `dirs`.
pub(super) fn sync_dirs(dirs: &mut Vec<PathBuf>) -> Result<(), StoreError> {
    while let Some(dir) = dirs.last() {
        sync_dir(dir)?;
        dirs.pop();
    }
    Ok(())
}

/// Replaces everything after the first `keep` bytes of a zstd log with one
/// frame holding `salvaged`, via a synced temporary file renamed over it.
pub(super) fn rewrite_tail(
    location: &SessionLocation,
    keep: u64,
    salvaged: &[u8],
) -> Result<(), StoreError> {
    let source = open_file(LOG_WHAT, &location.file, OpenOptions::new().read(true))?;
    let temp = temp_path(&location.file);
    let result = (|| {
        let mut out = create_temp(&temp)?;
        let copied = io::copy(&mut source.take(keep), &mut out)
            .map_err(|e| StoreError::io("copy", &location.file, e))?;
        if copied != keep {
            return Err(StoreError::Stale {
                file: location.file.clone(),
            });
        }
        let frame = compress::frame(salvaged, &location.file)?;
        out.write_all(&frame)
            .map_err(|e| StoreError::io("write", &temp, e))?;
        sync_data(&out, &temp)?;
        fs::rename(&temp, &location.file).map_err(|e| StoreError::io("rename", &temp, e))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_files_sit_beside_the_log() {
        assert_eq!(
            temp_path(Path::new("/d/session.v4.jsonl.zstd")),
            Path::new("/d/session.v4.jsonl.zstd.tmp")
        );
    }
}
