//! Where session logs live: `DSH_HOME/sessions/<project>/<id>/` (§11.1) and
//! finding one by id.

use super::error::StoreError;
use super::files::{LOCK_FILE, PLAIN_FILE, ZSTD_FILE};
use super::index::{SessionIndex, is_project_name};
use super::names::{encode_session_id, project_key};
use crate::private_fs::{file_exists, verify_dir};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// What a session log is called in errors.
pub(crate) const LOG_WHAT: &str = "session log";
/// What a session directory is called in errors.
pub(crate) const SESSION_DIR: &str = "session directory";
/// What a project directory is called in errors.
pub(crate) const PROJECT_DIR: &str = "project directory";
/// What `DSH_HOME/sessions` is called in errors.
pub(crate) const SESSIONS_DIR: &str = "sessions directory";

/// How a session log is stored. One session directory never holds both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// `session.v4.jsonl.zstd`: one zstd frame per written batch, frames
    /// concatenated (`zstd -dc` reads it).
    Zstd,
    /// `session.v4.jsonl`: the lines as they are.
    Plain,
}

impl Encoding {
    /// The log file name of this encoding.
    pub fn file_name(self) -> &'static str {
        match self {
            Self::Zstd => ZSTD_FILE,
            Self::Plain => PLAIN_FILE,
        }
    }
}

/// Where one session's log is (or will be).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLocation {
    /// The session id.
    pub id: String,
    /// `DSH_HOME/sessions/<project>/<encoded id>`.
    pub dir: PathBuf,
    /// The log file inside `dir`.
    pub file: PathBuf,
    /// How the log is stored.
    pub encoding: Encoding,
}

impl SessionLocation {
    /// The location of `id`'s log inside the session directory `dir`.
    pub fn new(id: impl Into<String>, dir: PathBuf, encoding: Encoding) -> Self {
        let file = dir.join(encoding.file_name());
        Self {
            id: id.into(),
            dir,
            file,
            encoding,
        }
    }

    /// The session's lock file.
    pub fn lock_file(&self) -> PathBuf {
        self.dir.join(LOCK_FILE)
    }
}

/// The session logs under one `DSH_HOME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionStore {
    home: PathBuf,
}

impl SessionStore {
    /// The store of `dsh_home` (nothing is touched until a session is
    /// created).
    pub fn new(dsh_home: impl Into<PathBuf>) -> Self {
        Self {
            home: dsh_home.into(),
        }
    }

    /// `DSH_HOME`.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// `DSH_HOME/sessions`.
    pub fn sessions_dir(&self) -> PathBuf {
        self.home.join("sessions")
    }

    /// Where a new session `id` created in `cwd` is stored.
    pub fn location_for(
        &self,
        cwd: Option<&Path>,
        id: &str,
        encoding: Encoding,
    ) -> SessionLocation {
        let dir = self
            .sessions_dir()
            .join(project_key(cwd))
            .join(encode_session_id(id));
        SessionLocation::new(id, dir, encoding)
    }

    /// Finds `id`'s log in any project directory (the original cwd is not
    /// needed). `Ok(None)` when there is none; an error when two project
    /// directories hold it, when one directory holds both encodings, or
    /// when only a log of another format generation is there.
    ///
    /// A session directory holding no log file (only `session.lock`: a
    /// session being created, or one whose creator crashed before its first
    /// write) does not count. A log that is a symbolic link, not a regular
    /// file or owned by another user, or that sits in such a directory, is
    /// refused ([`StoreError::Refused`]).
    ///
    /// The per-id index (`DSH_HOME/session-index`, see `index.rs`) is asked first:
    /// a session dsh created is found without a scan. Only an id the index
    /// does not place in a directory holding its log (a log written by the
    /// official runtime or an older dsh after the index was built, or no log
    /// at all) costs a scan of every project directory.
    pub fn locate(&self, id: &str) -> Result<Option<SessionLocation>, StoreError> {
        if let Some(location) = self.locate_indexed(id)? {
            return Ok(Some(location));
        }
        let mut found: Vec<SessionLocation> = Vec::new();
        for dir in self.session_dirs(id)? {
            if let Some(location) = probe(id, &dir)? {
                found.push(location);
            }
        }
        let mut found = found.into_iter();
        let first = found.next();
        if let (Some(first), Some(second)) = (&first, found.next()) {
            return Err(StoreError::Duplicate {
                id: id.to_owned(),
                first: first.dir.clone(),
                second: second.dir,
            });
        }
        Ok(first)
    }

    /// The session index of this `DSH_HOME`.
    pub(crate) fn index(&self) -> SessionIndex {
        SessionIndex::new(&self.home)
    }

    /// `id`'s log in the session directory its index entry names, in O(1):
    /// `Ok(None)` when there is no entry or that directory holds no log.
    pub(crate) fn locate_indexed(&self, id: &str) -> Result<Option<SessionLocation>, StoreError> {
        match self.indexed_dir(id)? {
            Some(dir) => probe(id, &dir),
            None => Ok(None),
        }
    }

    /// The session directory `id`'s index entry names, if there is one.
    pub(crate) fn indexed_dir(&self, id: &str) -> Result<Option<PathBuf>, StoreError> {
        let segment = encode_session_id(id);
        Ok(self
            .index()
            .project_of(&segment)?
            .map(|project| self.sessions_dir().join(project).join(segment)))
    }

    /// Every entry named for `id` in a project directory, with a log or
    /// without one (a session being created, or left by a crashed creator),
    /// sorted.
    pub(crate) fn session_dirs(&self, id: &str) -> Result<Vec<PathBuf>, StoreError> {
        let sessions = self.sessions_dir();
        let entries = match fs::read_dir(&sessions) {
            Ok(entries) => entries,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(StoreError::io("read directory", sessions, err)),
        };
        let segment = encode_session_id(id);
        let mut dirs = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io("read directory", &sessions, e))?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let is_project = is_project_name(name);
            let dir = entry.path().join(&segment);
            if is_project && present(&dir)? {
                dirs.push(dir);
            }
        }
        dirs.sort();
        Ok(dirs)
    }

    /// Whether `id` has a log anywhere under `sessions/`.
    pub fn exists(&self, id: &str) -> Result<bool, StoreError> {
        self.locate(id).map(|found| found.is_some())
    }
}

/// Whether `path` exists (a broken symlink counts as existing).
fn present(path: &Path) -> Result<bool, StoreError> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(err) if err.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error()) => {
            Ok(false)
        }
        Err(err) => Err(StoreError::io("inspect", path, err)),
    }
}

/// The log in session directory `dir`, if any. A log found must be a
/// regular file owned by the runtime, in a session directory and a project
/// directory that are real directories owned by the runtime (no symbolic
/// links); anything else is refused.
pub(crate) fn probe(id: &str, dir: &Path) -> Result<Option<SessionLocation>, StoreError> {
    // Another runtime may create the log between the two looks below; the
    // directory listing then shows it, and the look is repeated. Logs are
    // created far more rarely than three times in a row.
    for _ in 0..3 {
        if let Some(found) = probe_once(id, dir)? {
            return Ok(found);
        }
    }
    Ok(probe_once(id, dir)?.flatten())
}

/// One look at `dir` for [`probe`]: `None` when a log of this generation
/// appeared after the files were checked, so the look must be repeated.
fn probe_once(id: &str, dir: &Path) -> Result<Option<Option<SessionLocation>>, StoreError> {
    let zstd = present(&dir.join(ZSTD_FILE))?;
    let plain = present(&dir.join(PLAIN_FILE))?;
    if zstd || plain {
        if let Some(project) = dir.parent() {
            verify_dir(PROJECT_DIR, project)?;
        }
        verify_dir(SESSION_DIR, dir)?;
    }
    for (found, name) in [(zstd, ZSTD_FILE), (plain, PLAIN_FILE)] {
        if found {
            file_exists(LOG_WHAT, &dir.join(name))?;
        }
    }
    match (zstd, plain) {
        (true, true) => Err(StoreError::MixedEncoding {
            dir: dir.to_path_buf(),
        }),
        (true, false) => Ok(Some(Some(SessionLocation::new(
            id,
            dir.to_path_buf(),
            Encoding::Zstd,
        )))),
        (false, true) => Ok(Some(Some(SessionLocation::new(
            id,
            dir.to_path_buf(),
            Encoding::Plain,
        )))),
        (false, false) => other_generation(dir).map(|appeared| (!appeared).then_some(None)),
    }
}

/// Refuses a session directory that holds only a log of another format
/// generation (`session.jsonl` = 0, `session.v<N>.jsonl`), which this store
/// does not migrate. `Ok(true)` when the listing shows a log of this
/// generation after all: one created since the caller looked.
fn other_generation(dir: &Path) -> Result<bool, StoreError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(err) if err.raw_os_error() == Some(rustix::io::Errno::NOTDIR.raw_os_error()) => {
            return Ok(false);
        }
        Err(err) => return Err(StoreError::io("read directory", dir, err)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io("read directory", dir, e))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name == ZSTD_FILE || name == PLAIN_FILE {
            return Ok(true);
        }
        let stem = name.strip_suffix(".zstd").unwrap_or(name);
        let version = if stem == "session.jsonl" {
            Some(0)
        } else {
            stem.strip_prefix("session.v")
                .and_then(|rest| rest.strip_suffix(".jsonl"))
                .and_then(|n| n.parse::<u64>().ok())
        };
        if let Some(version) = version {
            return Err(StoreError::UnsupportedVersion {
                version,
                file: entry.path(),
            });
        }
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp() -> tempfile::TempDir {
        tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"))
    }

    fn touch(path: &Path) {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir: {e}"));
        }
        fs::write(path, b"").unwrap_or_else(|e| panic!("write: {e}"));
    }

    #[test]
    fn locations_follow_the_names() {
        let store = SessionStore::new("/h");
        let loc = store.location_for(Some(Path::new("/home/user/ws")), "s.1", Encoding::Zstd);
        assert_eq!(loc.dir, Path::new("/h/sessions/--home-user-ws--/s.1"));
        assert_eq!(
            loc.file,
            Path::new("/h/sessions/--home-user-ws--/s.1/session.v4.jsonl.zstd")
        );
        assert_eq!(
            loc.lock_file(),
            Path::new("/h/sessions/--home-user-ws--/s.1/session.lock")
        );
        let loc = store.location_for(None, "..", Encoding::Plain);
        assert_eq!(
            loc.file,
            Path::new("/h/sessions/_no-cwd/~002E~002E/session.v4.jsonl")
        );
    }

    #[test]
    fn locate_scans_every_project() {
        let home = temp();
        let store = SessionStore::new(home.path());
        assert_eq!(store.locate("a").ok(), Some(None));
        touch(&home.path().join("sessions/--x--/a/session.v4.jsonl.zstd"));
        touch(&home.path().join("sessions/_no-cwd/b/session.v4.jsonl"));
        touch(&home.path().join("sessions/--y--/lockonly/session.lock"));
        touch(
            &home
                .path()
                .join("sessions/not-a-project/c/session.v4.jsonl"),
        );
        let a = store.locate("a").unwrap();
        assert_eq!(a.map(|l| l.encoding), Some(Encoding::Zstd));
        let b = store.locate("b").unwrap();
        assert_eq!(b.map(|l| l.encoding), Some(Encoding::Plain));
        assert!(matches!(store.exists("lockonly"), Ok(false)));
        assert!(matches!(store.exists("c"), Ok(false)));
    }

    #[test]
    fn duplicates_mixed_and_old_generations_are_errors() {
        let home = temp();
        let store = SessionStore::new(home.path());
        touch(&home.path().join("sessions/--x--/d/session.v4.jsonl.zstd"));
        touch(&home.path().join("sessions/--y--/d/session.v4.jsonl"));
        let err = store
            .locate("d")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with("session \"d\" is stored more than once: "),
            "{err}"
        );
        touch(&home.path().join("sessions/--x--/m/session.v4.jsonl.zstd"));
        touch(&home.path().join("sessions/--x--/m/session.v4.jsonl"));
        assert!(matches!(
            store.locate("m"),
            Err(StoreError::MixedEncoding { .. })
        ));
        touch(&home.path().join("sessions/--x--/old/session.v3.jsonl.zstd"));
        let err = store
            .locate("old")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with("session format version 3 is not supported: "),
            "{err}"
        );
        touch(&home.path().join("sessions/--x--/v0/session.jsonl"));
        assert!(matches!(
            store.locate("v0"),
            Err(StoreError::UnsupportedVersion { version: 0, .. })
        ));
    }

    #[test]
    fn a_log_created_between_the_looks_is_found_not_refused() {
        let home = temp();
        let dir = home.path().join("s");
        fs::create_dir(&dir).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(other_generation(&dir), Ok(false)));
        // The state another runtime leaves after the file checks said "no
        // log": the listing now holds this generation's log.
        touch(&dir.join(ZSTD_FILE));
        assert!(matches!(other_generation(&dir), Ok(true)));
        assert!(matches!(probe_once("s", &dir), Ok(Some(Some(_)))));
        assert!(matches!(probe("s", &dir), Ok(Some(_))));
    }
}
