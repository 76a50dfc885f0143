//! A stored session read under its lock, before anything is written:
//! [`LockedSession`] (its events kept), [`LockedLog`] (its events
//! visited), both a [`Locked`], and the [`SessionWriter`] constructors that
//! start from one ([`SessionWriter::resume`], [`SessionWriter::lock_stored`],
//! [`SessionWriter::lock_each`]).

use super::error::StoreError;
use super::header::SessionHeader;
use super::layout::SessionLocation;
use super::lock::SessionLock;
use super::reader::{SessionReader, StoredLog, StoredSession, TailFix};
use super::workspace::resume_workspace;
use super::writer::SessionWriter;
use dsh_protocol::catalog::SessionEvent;
use std::path::{Path, PathBuf};

/// What a read of a log leaves that resume needs before writing: its
/// header and how its end must be fixed.
pub trait ReadLog {
    /// Line 1.
    fn header(&self) -> &SessionHeader;
    /// What must happen to the file before appending.
    fn tail(&self) -> &TailFix;
}

impl ReadLog for StoredSession {
    fn header(&self) -> &SessionHeader {
        &self.header
    }
    fn tail(&self) -> &TailFix {
        &self.tail
    }
}

impl ReadLog for StoredLog {
    fn header(&self) -> &SessionHeader {
        &self.header
    }
    fn tail(&self) -> &TailFix {
        &self.tail
    }
}

/// A stored session whose lock is held and whose log was read (as `S`),
/// not yet reopened for writing: nothing on disk has changed. Dropping it
/// releases the lock; [`into_writer`](Self::into_writer) repairs a torn tail
/// and reopens the log for appending.
#[derive(Debug)]
pub struct Locked<S> {
    location: SessionLocation,
    lock: SessionLock,
    stored: S,
}

/// A locked session read whole, its events kept.
pub type LockedSession = Locked<StoredSession>;

/// A locked session whose events went to a visitor
/// ([`SessionReader::read_each`]).
pub type LockedLog = Locked<StoredLog>;

impl<S: ReadLog> Locked<S> {
    /// Takes the lock of the log at `location` (or fails with
    /// [`StoreError::Locked`]), then reads it with `read`.
    fn take(
        location: &SessionLocation,
        read: impl FnOnce(&SessionLocation) -> Result<S, StoreError>,
    ) -> Result<Self, StoreError> {
        let lock = SessionLock::acquire(&location.lock_file(), &location.id)?;
        let stored = read(location)?;
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
    pub fn stored(&self) -> &S {
        &self.stored
    }

    /// The workspace to resume the session in, given the runtime's
    /// `initialize` cwd: see [`resume_workspace`].
    pub fn workspace(&self, cwd: &Path) -> Result<PathBuf, StoreError> {
        resume_workspace(&self.location, self.stored.header(), cwd)
    }

    /// Repairs a torn tail and reopens the log for appending (see
    /// [`SessionWriter::open_append`]), keeping the lock.
    pub fn into_writer(self) -> Result<(SessionWriter, S), StoreError> {
        let writer = SessionWriter::reopen(&self.location, self.lock, self.stored.tail())?;
        Ok((writer, self.stored))
    }
}

impl LockedSession {
    /// Locks and reads the whole log at `location`.
    pub(crate) fn lock(location: &SessionLocation) -> Result<Self, StoreError> {
        Self::take(location, SessionReader::read)
    }
}

impl LockedLog {
    /// Locks the log at `location` and reads it, handing its events to
    /// `visit`.
    pub(crate) fn lock<D: serde::de::DeserializeOwned>(
        location: &SessionLocation,
        visit: impl FnMut(SessionEvent<D>),
    ) -> Result<Self, StoreError> {
        Self::take(location, |location| {
            SessionReader::read_each(location, visit)
        })
    }
}

/// The ways to reopen a stored session that lock it before reading it.
impl SessionWriter {
    /// Takes the lock of the log at `location`, then reads it and reopens it
    /// for appending (as [`open_append`](Self::open_append), without the
    /// window between reading and locking).
    pub fn resume(location: &SessionLocation) -> Result<(Self, StoredSession), StoreError> {
        Self::lock_stored(location)?.into_writer()
    }

    /// Takes the lock of the log at `location` and reads it, without
    /// changing anything on disk yet: the caller can check the stored
    /// session (its workspace, say) before
    /// [`LockedSession::into_writer`] repairs a torn tail and reopens it
    /// for appending, or drop it to release the lock.
    pub fn lock_stored(location: &SessionLocation) -> Result<LockedSession, StoreError> {
        LockedSession::lock(location)
    }

    /// As [`lock_stored`](Self::lock_stored), handing the events to `visit`
    /// as they are read instead of keeping them (see
    /// [`SessionReader::read_each`](super::SessionReader::read_each)): resuming a long log this way keeps
    /// only what the visitor keeps.
    pub fn lock_each<D: serde::de::DeserializeOwned>(
        location: &SessionLocation,
        visit: impl FnMut(SessionEvent<D>),
    ) -> Result<LockedLog, StoreError> {
        LockedLog::lock(location, visit)
    }
}
