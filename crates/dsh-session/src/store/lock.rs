//! The store's kernel locks.
//!
//! * [`SessionLock`]: an exclusive, non-blocking `flock` on the empty
//!   `session.lock` file of a session directory, held by the one write
//!   handle for its lifetime and released when the handle's file
//!   description is closed.
//! * [`CreationLock`]: a short exclusive `flock` on the `sessions/`
//!   directory itself, held while a new session is claimed (and while an
//!   abandoned claim is cleaned up), so that creators of one id in different
//!   project directories, in this process or another, are serialised.
//!
//! `flock` locks belong to the open file description, so two handles in one
//! process exclude each other just as two processes do.

use super::error::StoreError;
use crate::private_fs::{open_dir, open_file, open_or_create_file};
use rustix::fs::{FlockOperation, flock};
use rustix::io::Errno;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

/// What a lock file is called in errors.
pub(crate) const LOCK_WHAT: &str = "session lock";

/// A held session lock; dropping it releases the lock.
#[derive(Debug)]
pub(crate) struct SessionLock {
    _file: File,
}

impl SessionLock {
    /// Opens (creating, mode 0600) `path` and takes the lock, or fails with
    /// [`StoreError::Locked`] when another live handle holds it. A symbolic
    /// link, a non-file or a file of another user there is refused.
    pub(crate) fn acquire(path: &Path, id: &str) -> Result<Self, StoreError> {
        let file = open_or_create_file(LOCK_WHAT, path, OpenOptions::new().read(true).write(true))?;
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Self { _file: file }),
            Err(Errno::WOULDBLOCK) => Err(StoreError::Locked { id: id.to_owned() }),
            Err(err) => Err(StoreError::io("lock", path, err.into())),
        }
    }

    /// Whether a live handle holds the lock at `path` (which is not
    /// created when missing: `Ok(false)`). The lock is taken and released
    /// at once when it is free.
    pub(crate) fn is_held(path: &Path) -> Result<bool, StoreError> {
        let file = match open_file(LOCK_WHAT, path, OpenOptions::new().read(true)) {
            Ok(file) => file,
            Err(err) if err.is_io_kind(io::ErrorKind::NotFound) => return Ok(false),
            Err(err) => return Err(err.into()),
        };
        match flock(&file, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(false),
            Err(Errno::WOULDBLOCK) => Ok(true),
            Err(err) => Err(StoreError::io("lock", path, err.into())),
        }
    }
}

/// The held creation lock of a `sessions/` directory; dropping it releases
/// the lock.
#[derive(Debug)]
pub(crate) struct CreationLock {
    _dir: File,
}

impl CreationLock {
    /// Waits for and takes the creation lock of `sessions` (which must
    /// exist). It is only ever held for a few file system operations.
    pub(crate) fn acquire(sessions: &Path) -> Result<Self, StoreError> {
        let dir = open_dir("sessions directory", sessions)?;
        flock(&dir, FlockOperation::LockExclusive)
            .map_err(|e| StoreError::io("lock", sessions, e.into()))?;
        Ok(Self { _dir: dir })
    }
}
