//! The session lock: an exclusive, non-blocking kernel `flock` on the empty
//! `session.lock` file of a session directory, held by the one write handle
//! for its lifetime and released when the handle's file description is
//! closed. The file itself is never deleted.
//!
//! `flock` locks belong to the open file description, so two handles in one
//! process exclude each other just as two processes do.

use super::error::StoreError;
use super::fsutil::open_private;
use rustix::fs::{FlockOperation, flock};
use rustix::io::Errno;
use std::fs::{File, OpenOptions};
use std::path::Path;

/// A held session lock; dropping it releases the lock.
#[derive(Debug)]
pub(crate) struct SessionLock {
    _file: File,
}

impl SessionLock {
    /// Opens (creating, mode 0600) `path` and takes the lock, or fails with
    /// [`StoreError::Locked`] when another live handle holds it.
    pub(crate) fn acquire(path: &Path, id: &str) -> Result<Self, StoreError> {
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        let file = open_private(&options, path)?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Self { _file: file }),
            Err(Errno::WOULDBLOCK) => Err(StoreError::Locked { id: id.to_owned() }),
            Err(err) => Err(StoreError::io("lock", path, err.into())),
        }
    }
}
