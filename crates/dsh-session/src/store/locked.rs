//! A stored session read under its lock, before anything is written:
//! [`LockedSession`] (its events kept), [`LockedLog`] (its events
//! visited).

use super::error::StoreError;
use super::layout::SessionLocation;
use super::lock::SessionLock;
use super::reader::{SessionReader, StoredLog, StoredSession};
use super::workspace::resume_workspace;
use super::writer::SessionWriter;
use dsh_protocol::catalog::SessionEvent;
use std::path::{Path, PathBuf};

/// A stored session whose lock is held and whose log was read, not yet
/// reopened for writing: nothing on disk has changed. Dropping it releases
/// the lock; [`into_writer`](Self::into_writer) repairs a torn tail and
/// reopens the log for appending.
#[derive(Debug)]
pub struct LockedSession {
    location: SessionLocation,
    lock: SessionLock,
    stored: StoredSession,
}

impl LockedSession {
    /// Takes the lock of the log at `location` (or fails with
    /// [`StoreError::Locked`]) and reads the log.
    pub(crate) fn lock(location: &SessionLocation) -> Result<Self, StoreError> {
        let lock = SessionLock::acquire(&location.lock_file(), &location.id)?;
        let stored = SessionReader::read(location)?;
        Ok(Self {
            location: location.clone(),
            lock,
            stored,
        })
    }

    /// Where the log is.
    pub fn location(&self) -> &SessionLocation {
        &self.location
    }

    /// The session as read.
    pub fn stored(&self) -> &StoredSession {
        &self.stored
    }

    /// The workspace to resume the session in, given the runtime's
    /// `initialize` cwd: see [`resume_workspace`].
    pub fn workspace(&self, cwd: &Path) -> Result<PathBuf, StoreError> {
        resume_workspace(&self.location, &self.stored.header, cwd)
    }

    /// Repairs a torn tail and reopens the log for appending (see
    /// [`SessionWriter::open_append`]), keeping the lock.
    pub fn into_writer(self) -> Result<(SessionWriter, StoredSession), StoreError> {
        let writer = SessionWriter::reopen(&self.location, self.lock, &self.stored.tail)?;
        Ok((writer, self.stored))
    }
}

/// A stored session whose lock is held and whose log was read by
/// [`SessionReader::read_each`] (its events went to a visitor), not yet
/// reopened for writing: as [`LockedSession`] without the events.
#[derive(Debug)]
pub struct LockedLog {
    location: SessionLocation,
    lock: SessionLock,
    stored: StoredLog,
}

impl LockedLog {
    /// Takes the lock of the log at `location` (or fails with
    /// [`StoreError::Locked`]) and reads the log, handing its events to
    /// `visit`.
    pub(crate) fn lock(
        location: &SessionLocation,
        visit: impl FnMut(SessionEvent),
    ) -> Result<Self, StoreError> {
        let lock = SessionLock::acquire(&location.lock_file(), &location.id)?;
        let stored = SessionReader::read_each(location, visit)?;
        Ok(Self {
            location: location.clone(),
            lock,
            stored,
        })
    }

    /// Where the log is.
    pub fn location(&self) -> &SessionLocation {
        &self.location
    }

    /// The log as read.
    pub fn stored(&self) -> &StoredLog {
        &self.stored
    }

    /// The workspace to resume the session in, given the runtime's
    /// `initialize` cwd: see [`resume_workspace`].
    pub fn workspace(&self, cwd: &Path) -> Result<PathBuf, StoreError> {
        resume_workspace(&self.location, &self.stored.header, cwd)
    }

    /// Repairs a torn tail and reopens the log for appending (see
    /// [`SessionWriter::open_append`]), keeping the lock.
    pub fn into_writer(self) -> Result<(SessionWriter, StoredLog), StoreError> {
        let writer = SessionWriter::reopen(&self.location, self.lock, &self.stored.tail)?;
        Ok((writer, self.stored))
    }
}
