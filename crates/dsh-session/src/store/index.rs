//! The per-id index of session directories, so a session is found without
//! scanning every project directory.
//!
//! `DSH_HOME/session-index/<encoded id>` is a small file (0600) holding
//! the name of the project directory of the session, written under the
//! creation lock when the id is claimed (a temporary file renamed into
//! place, so a reader sees the whole entry or none). The marker
//! `session-index/~complete` says that every session directory present when the
//! index was built is indexed; it is written once, by the first claim in a
//! `DSH_HOME` without it (one scan), so logs written by the official
//! runtime or an older dsh are indexed too. `~` never begins an encoded id
//! (it always starts a `~XXXX` escape), so the marker and the temporary
//! file cannot collide with an entry.
//!
//! The index lives beside `sessions/`, not in it: the official runtime
//! reads every entry of `sessions/` as a project directory and fails on
//! anything else.
//!
//! The index is a hint: an entry is only believed after the session
//! directory it names is probed, a missing or unreadable entry falls back
//! to a scan in [`super::SessionStore::locate`].

use super::error::StoreError;
use super::names::NO_CWD_DIR;
use crate::private_fs::{create_dir, file_exists, open_file};
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// The index directory under `DSH_HOME`.
pub(crate) const INDEX_DIR: &str = "session-index";
/// The marker of a complete index.
const COMPLETE: &str = "~complete";
/// The temporary file an entry is written to before its rename.
const TEMP: &str = "~entry.tmp";
/// What an index entry is called in errors.
const ENTRY_WHAT: &str = "session index entry";
/// What the index directory is called in errors.
const INDEX_WHAT: &str = "session index directory";
/// The longest entry read (a project directory name is at most 255 bytes).
const MAX_ENTRY: u64 = 512;

/// Whether `name` is the name of a project directory under `sessions/`.
pub(crate) fn is_project_name(name: &str) -> bool {
    name == NO_CWD_DIR
        || (name.len() >= 4
            && name.starts_with("--")
            && name.ends_with("--")
            && !name.contains('/'))
}

/// The index of the `sessions/` directory of one `DSH_HOME`.
#[derive(Debug, Clone)]
pub(crate) struct SessionIndex {
    dir: PathBuf,
}

impl SessionIndex {
    /// The index of `DSH_HOME` `home` (nothing is touched).
    pub(crate) fn new(home: &Path) -> Self {
        Self {
            dir: home.join(INDEX_DIR),
        }
    }

    /// The project directory name the entry of `segment` (an encoded id)
    /// names, `None` when there is no entry or it is not a project name
    /// (a damaged entry is ignored: the caller scans).
    pub(crate) fn project_of(&self, segment: &str) -> Result<Option<String>, StoreError> {
        let path = self.dir.join(segment);
        let file = match open_file(ENTRY_WHAT, &path, OpenOptions::new().read(true)) {
            Ok(file) => file,
            Err(err)
                if err.is_io_kind(io::ErrorKind::NotFound)
                    || err.is_io_kind(io::ErrorKind::NotADirectory) =>
            {
                return Ok(None);
            }
            Err(err) => return Err(err.into()),
        };
        let mut text = String::new();
        if file.take(MAX_ENTRY).read_to_string(&mut text).is_err() {
            return Ok(None);
        }
        let name = text.trim_end_matches('\n');
        Ok(is_project_name(name).then(|| name.to_owned()))
    }

    /// Whether the index covers every session that was on disk when it was
    /// built.
    pub(crate) fn is_complete(&self) -> Result<bool, StoreError> {
        Ok(file_exists(ENTRY_WHAT, &self.dir.join(COMPLETE))?)
    }

    /// Creates the index directory (0700) if it is missing; returns whether
    /// it was created. The caller holds the creation lock.
    pub(crate) fn create(&self) -> Result<bool, StoreError> {
        Ok(create_dir(INDEX_WHAT, &self.dir)?)
    }

    /// The index directory.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes (or replaces) the entry of `segment` naming `project`. The
    /// caller holds the creation lock and has created the directory.
    pub(crate) fn insert(&self, segment: &str, project: &str) -> Result<(), StoreError> {
        let temp = self.dir.join(TEMP);
        let mut file = super::fsutil::create_temp(&temp)?;
        file.write_all(format!("{project}\n").as_bytes())
            .map_err(|e| StoreError::io("write", &temp, e))?;
        drop(file);
        let path = self.dir.join(segment);
        fs::rename(&temp, &path).map_err(|e| StoreError::io("rename", &temp, e))
    }

    /// Removes the entry of `segment` if it names `project`. The caller
    /// holds the creation lock.
    pub(crate) fn remove(&self, segment: &str, project: &str) -> Result<(), StoreError> {
        if self.project_of(segment)?.as_deref() != Some(project) {
            return Ok(());
        }
        let path = self.dir.join(segment);
        match fs::remove_file(&path) {
            Err(err) if err.kind() != io::ErrorKind::NotFound => {
                Err(StoreError::io("remove", path, err))
            }
            _ => Ok(()),
        }
    }

    /// Indexes every session directory under `sessions` that has no entry
    /// yet (the first of two holding one id wins) and writes the marker of
    /// a complete index. One scan of every project directory; the caller
    /// holds the creation lock and has created the directory.
    pub(crate) fn build(&self, sessions: &Path) -> Result<(), StoreError> {
        let read =
            |dir: &Path| fs::read_dir(dir).map_err(|e| StoreError::io("read directory", dir, e));
        for project in read(sessions)? {
            let project = project.map_err(|e| StoreError::io("read directory", sessions, e))?;
            let name = project.file_name();
            let Some(name) = name.to_str() else { continue };
            if !is_project_name(name) || !project.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let project_dir = project.path();
            for session in read(&project_dir)? {
                let session =
                    session.map_err(|e| StoreError::io("read directory", &project_dir, e))?;
                let segment = session.file_name();
                let Some(segment) = segment.to_str() else {
                    continue;
                };
                let has_log = [super::files::ZSTD_FILE, super::files::PLAIN_FILE]
                    .iter()
                    .any(|file| fs::symlink_metadata(session.path().join(file)).is_ok());
                if has_log || self.project_of(segment)?.is_none() {
                    self.insert(segment, name)?;
                }
            }
        }
        let marker = self.dir.join(COMPLETE);
        super::fsutil::create_temp(&marker).map(drop)
    }
}
