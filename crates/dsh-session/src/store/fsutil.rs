//! Small file system helpers of the store: leftover-replacing temporary
//! files and durability syncs. Creating and opening entries goes through
//! [`crate::private_fs`] (0600 / 0700, no symbolic links, owned by the
//! runtime).

use super::error::StoreError;
use crate::private_fs::create_file;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::Path;

/// What a temporary log file is called in errors.
pub(crate) const TEMP_LOG: &str = "temporary session log";

/// Creates a new file at `path` (removing a leftover entry first, without
/// following it) with mode 0600, opened for appending.
pub(crate) fn create_temp(path: &Path) -> Result<File, StoreError> {
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => return Err(StoreError::io("remove", path, err)),
    }
    Ok(create_file(
        TEMP_LOG,
        path,
        OpenOptions::new().append(true),
    )?)
}

/// `fdatasync` of an open file.
pub(crate) fn sync_data(file: &File, path: &Path) -> Result<(), StoreError> {
    rustix::fs::fdatasync(file).map_err(|e| StoreError::io("sync", path, e.into()))
}

/// `fsync` of a directory, making entries created or renamed in it durable.
/// The directory is opened read-only and only synced, so it may be reached
/// through a symbolic link (`DSH_HOME` itself may be one the user made).
pub(crate) fn sync_dir(path: &Path) -> Result<(), StoreError> {
    let dir = File::open(path).map_err(|e| StoreError::io("open", path, e))?;
    rustix::fs::fsync(&dir).map_err(|e| StoreError::io("sync", path, e.into()))
}
