//! Claiming a new session id before anything is accepted for it.
//!
//! A session being created owns its id from the start: its directory exists
//! and its `session.lock` is held before the creator answers anything, so a
//! second creator of the same id, in this process or another runtime sharing
//! `DSH_HOME`, is refused at once instead of also accepting and losing its
//! turns later. The log itself still appears only at the first write.

use super::error::StoreError;
use super::files::LOCK_FILE;
use super::layout::{PROJECT_DIR, SESSION_DIR, SESSIONS_DIR, SessionLocation, SessionStore, probe};
use super::lock::{CreationLock, SessionLock};
use crate::private_fs::{create_dir, create_dir_all};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// A claimed new session: its directory exists, its lock is held, no log
/// is written yet.
#[derive(Debug)]
pub(crate) struct Claim {
    /// The held session lock.
    pub(crate) lock: SessionLock,
    /// Directories whose new entries are not yet durable.
    pub(crate) unsynced_dirs: Vec<PathBuf>,
}

/// Claims `location` for a new session: creates the missing directories
/// (0700), takes the session lock and writes the id's index entry
/// (`DSH_HOME/session-index`), all while holding the creation lock of `sessions/`,
/// after checking that no log of the id exists and that no other live
/// handle holds a lock of the id.
///
/// The checks cost O(1): the session directory the index names for the id
/// and the one being claimed are probed, no project directory is scanned.
/// The first claim in a `DSH_HOME` whose index is not yet complete builds it
/// (one scan), so logs already written by the official runtime or an older
/// dsh are found too. A log such a runtime writes later, in another project
/// directory, is not indexed and is not seen by a claim.
///
/// Errors: [`StoreError::AlreadyExists`] when a log of the id exists;
/// [`StoreError::Locked`] when another handle holds a lock of the id while
/// it has no log yet. That other handle is a creator of the same id that
/// has not written yet (resume needs a log), so the session is not on disk
/// but is owned: "already owned by an active write handle" is the true
/// answer, "already exists" would not be.
pub(crate) fn claim(store: &SessionStore, location: &SessionLocation) -> Result<Claim, StoreError> {
    let id = location.id.as_str();
    let already_exists = || StoreError::AlreadyExists { id: id.to_owned() };
    let stored = || -> Result<bool, StoreError> {
        Ok(store.locate_indexed(id)?.is_some() || probe(id, &location.dir)?.is_some())
    };
    if stored()? {
        return Err(already_exists());
    }
    let project = parent(&location.dir)?;
    let (Some(project_name), Some(segment)) = (
        project.file_name().and_then(|n| n.to_str()),
        location.dir.file_name().and_then(|n| n.to_str()),
    ) else {
        return Err(StoreError::io(
            "create directory",
            &location.dir,
            io::Error::other("session directory is not named by the store"),
        ));
    };
    let sessions = store.sessions_dir();
    let mut unsynced_dirs = Vec::new();
    create_dir_all(store.home())?;
    if create_dir(SESSIONS_DIR, &sessions)? {
        unsynced_dirs.push(store.home().to_path_buf());
    }
    let _creating = CreationLock::acquire(&sessions)?;
    let index = store.index();
    if index.create()? {
        unsynced_dirs.push(store.home().to_path_buf());
    }
    if !index.is_complete()? {
        index.build(&sessions)?;
    }
    if stored()? {
        return Err(already_exists());
    }
    if let Some(dir) = store.indexed_dir(id)?
        && SessionLock::is_held(&dir.join(LOCK_FILE))?
    {
        return Err(StoreError::Locked { id: id.to_owned() });
    }
    if create_dir(PROJECT_DIR, project)? {
        unsynced_dirs.push(sessions);
    }
    if create_dir(SESSION_DIR, &location.dir)? {
        unsynced_dirs.push(project.to_path_buf());
    }
    let lock = SessionLock::acquire(&location.lock_file(), id)?;
    index.insert(segment, project_name)?;
    unsynced_dirs.push(index.dir().to_path_buf());
    Ok(Claim {
        lock,
        unsynced_dirs,
    })
}

impl Claim {
    /// Gives up a claim that was never written to: removes its lock file and
    /// then its session and project directories if they are empty, under
    /// the creation lock (so no creator opens the lock file meanwhile), and
    /// releases the lock. Failures only leave a directory holding at most
    /// `session.lock`, which [`SessionStore::locate`] ignores and a later
    /// creation reuses; they are logged at debug level.
    pub(crate) fn abandon(self, store: &SessionStore, location: &SessionLocation) {
        let _creating = match CreationLock::acquire(&store.sessions_dir()) {
            Ok(lock) => lock,
            Err(err) => {
                tracing::debug!(session = %location.id, "unused session directory kept: {err}");
                return;
            }
        };
        let removed = remove_index_entry(store, location)
            .and_then(|()| remove(&location.lock_file(), |p| fs::remove_file(p)))
            .and_then(|()| remove(&location.dir, |p| fs::remove_dir(p)));
        drop(self.lock);
        // The project directory usually holds other sessions.
        let removed = removed.and_then(|()| match location.dir.parent() {
            Some(project) => match remove(project, |p| fs::remove_dir(p)) {
                Err(err) if err.kind() == io::ErrorKind::DirectoryNotEmpty => Ok(()),
                other => other,
            },
            None => Ok(()),
        });
        if let Err(err) = removed {
            tracing::debug!(session = %location.id, "unused session directory kept: {err}");
        }
    }
}

/// Removes the index entry of an abandoned claim if it names its project.
fn remove_index_entry(store: &SessionStore, location: &SessionLocation) -> io::Result<()> {
    let names = location
        .dir
        .parent()
        .and_then(Path::file_name)
        .zip(location.dir.file_name());
    let Some((project, segment)) = names.and_then(|(p, s)| p.to_str().zip(s.to_str())) else {
        return Ok(());
    };
    store
        .index()
        .remove(segment, project)
        .map_err(io::Error::other)
}

/// Removes `path` with `op`; a missing entry is fine.
fn remove(path: &Path, op: fn(&Path) -> io::Result<()>) -> io::Result<()> {
    match op(path) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

/// The project directory of a session directory.
fn parent(dir: &Path) -> Result<&Path, StoreError> {
    dir.parent().ok_or_else(|| {
        StoreError::io(
            "create directory",
            dir,
            io::Error::other("session directory has no parent"),
        )
    })
}
