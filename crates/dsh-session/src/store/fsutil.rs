//! Small file system helpers: private modes (files 0600, directories 0700)
//! whatever the umask, and durability syncs.

use super::error::StoreError;
use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Mode of session files.
pub(crate) const FILE_MODE: u32 = 0o600;
/// Mode of session directories.
pub(crate) const DIR_MODE: u32 = 0o700;

/// Opens `path` with `options`, creating it with mode 0600 if it does not
/// exist (the mode is set explicitly after creation so the umask cannot
/// widen or narrow it).
pub(crate) fn open_private(options: &OpenOptions, path: &Path) -> Result<File, StoreError> {
    let mut create = options.clone();
    create.create_new(true).mode(FILE_MODE);
    match create.open(path) {
        Ok(file) => {
            file.set_permissions(Permissions::from_mode(FILE_MODE))
                .map_err(|e| StoreError::io("set permissions of", path, e))?;
            Ok(file)
        }
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => options
            .open(path)
            .map_err(|e| StoreError::io("open", path, e)),
        Err(err) => Err(StoreError::io("create", path, err)),
    }
}

/// Creates a new file at `path` (removing a leftover one first) with mode
/// 0600, opened for appending.
pub(crate) fn create_private(path: &Path) -> Result<File, StoreError> {
    match fs::remove_file(path) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::NotFound => {}
        Err(err) => return Err(StoreError::io("remove", path, err)),
    }
    let file = OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(FILE_MODE)
        .open(path)
        .map_err(|e| StoreError::io("create", path, e))?;
    file.set_permissions(Permissions::from_mode(FILE_MODE))
        .map_err(|e| StoreError::io("set permissions of", path, e))?;
    Ok(file)
}

/// Creates directory `path` with mode 0700 unless it exists; returns whether
/// it was created.
pub(crate) fn ensure_dir(path: &Path) -> Result<bool, StoreError> {
    match DirBuilder::new().mode(DIR_MODE).create(path) {
        Ok(()) => {
            fs::set_permissions(path, Permissions::from_mode(DIR_MODE))
                .map_err(|e| StoreError::io("set permissions of", path, e))?;
            Ok(true)
        }
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists && path.is_dir() => Ok(false),
        Err(err) => Err(StoreError::io("create directory", path, err)),
    }
}

/// Creates `path` and its missing ancestors with mode 0700.
pub(crate) fn ensure_dir_all(path: &Path) -> Result<(), StoreError> {
    if path.is_dir() {
        return Ok(());
    }
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
        .map_err(|e| StoreError::io("create directory", path, e))
}

/// `fdatasync` of an open file.
pub(crate) fn sync_data(file: &File, path: &Path) -> Result<(), StoreError> {
    rustix::fs::fdatasync(file).map_err(|e| StoreError::io("sync", path, e.into()))
}

/// `fsync` of a directory, making entries created or renamed in it durable.
pub(crate) fn sync_dir(path: &Path) -> Result<(), StoreError> {
    let dir = File::open(path).map_err(|e| StoreError::io("open", path, e))?;
    rustix::fs::fsync(&dir).map_err(|e| StoreError::io("sync", path, e.into()))
}
