//! Private files and directories under `DSH_HOME`.
//!
//! Everything the runtime creates there is mode 0600 (files) or 0700
//! (directories) whatever the umask: the mode is given at creation and set
//! again explicitly afterwards (a umask can only remove bits, and an odd one
//! could remove the owner's). Files are opened with `O_NOFOLLOW` (and
//! `O_EXCL` when created) and, once open, checked to be regular files owned
//! by the runtime's effective uid; directories the runtime manages are
//! checked (without following a final symbolic link) to be directories it
//! owns. Anything else is refused with [`PrivateFsError::Refused`], never
//! followed.
//!
//! The checks concern the final path component; intermediate directories
//! are checked when this module creates or verifies them, not re-checked at
//! every open.

use rustix::fs::OFlags;
use rustix::io::Errno;
use std::fmt;
use std::fs::{self, DirBuilder, File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Mode of every file the runtime creates under `DSH_HOME`.
pub const FILE_MODE: u32 = 0o600;
/// Mode of every directory the runtime creates under `DSH_HOME`.
pub const DIR_MODE: u32 = 0o700;

/// Why an existing file system entry is not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// A symbolic link where a file or directory of the runtime belongs.
    Symlink,
    /// Not a regular file (a directory, a FIFO, a device, …).
    NotRegularFile,
    /// Not a directory.
    NotDirectory,
    /// Owned by another user.
    Owner {
        /// The entry's owner.
        owner: u32,
        /// The runtime's effective uid.
        runtime: u32,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Symlink => f.write_str("is a symbolic link"),
            Self::NotRegularFile => f.write_str("is not a regular file"),
            Self::NotDirectory => f.write_str("is not a directory"),
            Self::Owner { owner, runtime } => write!(
                f,
                "is owned by uid {owner}, not by this runtime's uid {runtime}"
            ),
        }
    }
}

/// A failure to create, open or verify a private entry.
#[derive(Debug, thiserror::Error)]
pub enum PrivateFsError {
    /// The operating system refused.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done (`create directory`, `open`, …).
        action: &'static str,
        /// The entry.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// The entry exists but is not one the runtime may use.
    #[error("{what} {} {refusal}: refusing it", path.display())]
    Refused {
        /// What the entry should have been (`session log`, …).
        what: &'static str,
        /// The entry.
        path: PathBuf,
        /// What is wrong with it.
        refusal: Refusal,
    },
}

impl PrivateFsError {
    fn io(action: &'static str, path: &Path, source: io::Error) -> Self {
        Self::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }

    fn refused(what: &'static str, path: &Path, refusal: Refusal) -> Self {
        Self::Refused {
            what,
            path: path.to_path_buf(),
            refusal,
        }
    }

    /// Whether this is an I/O error of kind `kind`.
    pub fn is_io_kind(&self, kind: io::ErrorKind) -> bool {
        matches!(self, Self::Io { source, .. } if source.kind() == kind)
    }
}

/// The runtime's effective uid, the owner every private entry must have.
pub fn runtime_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Checks the metadata of an entry that should be a regular file
/// (`metadata` must not have followed a final symbolic link).
fn check_file(what: &'static str, path: &Path, meta: &fs::Metadata) -> Result<(), PrivateFsError> {
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Err(PrivateFsError::refused(what, path, Refusal::Symlink));
    }
    if !kind.is_file() {
        return Err(PrivateFsError::refused(what, path, Refusal::NotRegularFile));
    }
    check_owner(what, path, meta)
}

/// Checks the metadata of an entry that should be a directory.
fn check_dir(what: &'static str, path: &Path, meta: &fs::Metadata) -> Result<(), PrivateFsError> {
    let kind = meta.file_type();
    if kind.is_symlink() {
        return Err(PrivateFsError::refused(what, path, Refusal::Symlink));
    }
    if !kind.is_dir() {
        return Err(PrivateFsError::refused(what, path, Refusal::NotDirectory));
    }
    check_owner(what, path, meta)
}

fn check_owner(what: &'static str, path: &Path, meta: &fs::Metadata) -> Result<(), PrivateFsError> {
    let runtime = runtime_uid();
    if meta.uid() != runtime {
        return Err(PrivateFsError::refused(
            what,
            path,
            Refusal::Owner {
                owner: meta.uid(),
                runtime,
            },
        ));
    }
    Ok(())
}

/// `O_NOFOLLOW | O_CLOEXEC` as `custom_flags` takes them.
fn no_follow() -> i32 {
    // Both flags are small positive constants.
    (OFlags::NOFOLLOW | OFlags::CLOEXEC).bits() as i32
}

/// Maps an open error: a final symbolic link (`ELOOP` under `O_NOFOLLOW`,
/// `ENOTDIR` under `O_DIRECTORY`) is a refusal, anything else an I/O error.
fn open_error(
    what: &'static str,
    action: &'static str,
    path: &Path,
    err: io::Error,
) -> PrivateFsError {
    let code = err.raw_os_error();
    let maybe_link =
        code == Some(Errno::LOOP.raw_os_error()) || code == Some(Errno::NOTDIR.raw_os_error());
    if maybe_link && fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        PrivateFsError::refused(what, path, Refusal::Symlink)
    } else {
        PrivateFsError::io(action, path, err)
    }
}

/// Checks an opened file: a regular file owned by the runtime.
fn verify_open(what: &'static str, path: &Path, file: File) -> Result<File, PrivateFsError> {
    let meta = file
        .metadata()
        .map_err(|e| PrivateFsError::io("inspect", path, e))?;
    check_file(what, path, &meta)?;
    Ok(file)
}

/// Opens the existing file `path` (never following a final symbolic link)
/// with `options` (access flags only) and checks that it is a regular file
/// owned by the runtime. `what` names it in errors (`session log`, …).
pub fn open_file(
    what: &'static str,
    path: &Path,
    options: &OpenOptions,
) -> Result<File, PrivateFsError> {
    let mut options = options.clone();
    options.custom_flags(no_follow());
    let file = options
        .open(path)
        .map_err(|e| open_error(what, "open", path, e))?;
    verify_open(what, path, file)
}

/// Creates the new file `path` (`O_CREAT | O_EXCL | O_NOFOLLOW`, mode 0600
/// whatever the umask) opened with `options` (access flags only). Fails
/// with an [`io::ErrorKind::AlreadyExists`] I/O error when anything, a
/// symbolic link included, is already there.
pub fn create_file(
    what: &'static str,
    path: &Path,
    options: &OpenOptions,
) -> Result<File, PrivateFsError> {
    let mut options = options.clone();
    options
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(no_follow());
    let file = options
        .open(path)
        .map_err(|e| open_error(what, "create", path, e))?;
    file.set_permissions(Permissions::from_mode(FILE_MODE))
        .map_err(|e| PrivateFsError::io("set permissions of", path, e))?;
    verify_open(what, path, file)
}

/// Opens `path` with `options`, creating it as [`create_file`] does when it
/// does not exist; an existing entry is opened as [`open_file`] does.
pub fn open_or_create_file(
    what: &'static str,
    path: &Path,
    options: &OpenOptions,
) -> Result<File, PrivateFsError> {
    match create_file(what, path, options) {
        Err(err) if err.is_io_kind(io::ErrorKind::AlreadyExists) => open_file(what, path, options),
        other => other,
    }
}

/// Whether `path` is a regular file owned by the runtime (`Ok(false)` when
/// nothing is there; a refusal for anything else that is there).
pub fn file_exists(what: &'static str, path: &Path) -> Result<bool, PrivateFsError> {
    match fs::symlink_metadata(path) {
        Ok(meta) => check_file(what, path, &meta).map(|()| true),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(err) => Err(PrivateFsError::io("inspect", path, err)),
    }
}

/// Checks that `path` is a directory (not a symbolic link to one) owned by
/// the runtime.
pub fn verify_dir(what: &'static str, path: &Path) -> Result<(), PrivateFsError> {
    let meta = fs::symlink_metadata(path).map_err(|e| PrivateFsError::io("inspect", path, e))?;
    check_dir(what, path, &meta)
}

/// Opens the directory `path` (for `fsync` or `flock`), refusing a symbolic
/// link or a directory owned by someone else.
pub fn open_dir(what: &'static str, path: &Path) -> Result<File, PrivateFsError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(no_follow() | OFlags::DIRECTORY.bits() as i32)
        .open(path)
        .map_err(|e| open_error(what, "open", path, e))?;
    let meta = file
        .metadata()
        .map_err(|e| PrivateFsError::io("inspect", path, e))?;
    check_dir(what, path, &meta)?;
    Ok(file)
}

/// Creates the directory `path` with mode 0700 unless it exists; an existing
/// one must be a directory owned by the runtime ([`verify_dir`]). Returns
/// whether it was created.
pub fn create_dir(what: &'static str, path: &Path) -> Result<bool, PrivateFsError> {
    match DirBuilder::new().mode(DIR_MODE).create(path) {
        Ok(()) => {
            fs::set_permissions(path, Permissions::from_mode(DIR_MODE))
                .map_err(|e| PrivateFsError::io("set permissions of", path, e))?;
            Ok(true)
        }
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
            verify_dir(what, path).map(|()| false)
        }
        Err(err) => Err(PrivateFsError::io("create directory", path, err)),
    }
}

/// Creates `path` and its missing ancestors, each with mode 0700 whatever
/// the umask. Existing ancestors and an existing `path` are used as they
/// are (`DSH_HOME` itself may be a symbolic link the user made).
pub fn create_dir_all(path: &Path) -> Result<(), PrivateFsError> {
    let mut missing = Vec::new();
    let mut cursor = Some(path);
    while let Some(dir) = cursor {
        match fs::metadata(dir) {
            Ok(meta) if meta.is_dir() => break,
            Ok(_) => {
                return Err(PrivateFsError::io(
                    "create directory",
                    dir,
                    io::Error::from(io::ErrorKind::NotADirectory),
                ));
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                missing.push(dir);
                cursor = dir.parent().filter(|p| !p.as_os_str().is_empty());
            }
            Err(err) => return Err(PrivateFsError::io("inspect", dir, err)),
        }
    }
    for dir in missing.into_iter().rev() {
        match DirBuilder::new().mode(DIR_MODE).create(dir) {
            Ok(()) => fs::set_permissions(dir, Permissions::from_mode(DIR_MODE))
                .map_err(|e| PrivateFsError::io("set permissions of", dir, e))?,
            // Created meanwhile by someone else: used as it is.
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => {}
            Err(err) => return Err(PrivateFsError::io("create directory", dir, err)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    fn temp() -> tempfile::TempDir {
        tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"))
    }

    fn mode(path: &Path) -> u32 {
        fs::symlink_metadata(path)
            .map(|m| m.permissions().mode() & 0o7777)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn rw() -> OpenOptions {
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        options
    }

    #[test]
    fn created_entries_are_private() {
        let root = temp();
        let deep = root.path().join("a/b/c");
        must(create_dir_all(&deep));
        for dir in ["a", "a/b", "a/b/c"] {
            assert_eq!(mode(&root.path().join(dir)), 0o700, "{dir}");
        }
        assert!(must(create_dir("d", &deep.join("d"))));
        assert!(!must(create_dir("d", &deep.join("d"))));
        let file = deep.join("f");
        must(create_file("f", &file, &rw()));
        assert_eq!(mode(&file), 0o600);
        assert!(must(file_exists("f", &file)));
        assert!(!must(file_exists("f", &deep.join("none"))));
        let err = create_file("f", &file, &rw()).err();
        assert!(err.is_some_and(|e| e.is_io_kind(io::ErrorKind::AlreadyExists)));
        must(open_or_create_file("f", &file, &rw()));
        must(open_dir("d", &deep));
    }

    #[test]
    fn symbolic_links_are_refused_not_followed() {
        let root = temp();
        let target = root.path().join("target");
        fs::write(&target, b"secret").unwrap();
        let link = root.path().join("link");
        symlink(&target, &link).unwrap();
        let expected = format!(
            "session log {} is a symbolic link: refusing it",
            link.display()
        );
        for result in [
            open_file("session log", &link, &rw()).map(drop),
            open_or_create_file("session log", &link, &rw()).map(drop),
            file_exists("session log", &link).map(drop),
        ] {
            assert_eq!(result.err().map(|e| e.to_string()), Some(expected.clone()));
        }
        // A dangling link is not created through either.
        let dangling = root.path().join("dangling");
        symlink(root.path().join("nowhere"), &dangling).unwrap();
        assert!(open_or_create_file("session lock", &dangling, &rw()).is_err());
        assert!(!root.path().join("nowhere").exists());
        assert_eq!(
            fs::read(&target).unwrap_or_default(),
            b"secret",
            "the target is untouched"
        );
        // Directories: a link to one is refused, so is a file.
        let dir_link = root.path().join("dir-link");
        symlink(root.path(), &dir_link).unwrap();
        let err = create_dir("project directory", &dir_link).err();
        assert_eq!(
            err.map(|e| e.to_string()),
            Some(format!(
                "project directory {} is a symbolic link: refusing it",
                dir_link.display()
            ))
        );
        assert!(matches!(
            open_dir("d", &dir_link),
            Err(PrivateFsError::Refused {
                refusal: Refusal::Symlink,
                ..
            })
        ));
        assert!(matches!(
            create_dir("d", &target),
            Err(PrivateFsError::Refused {
                refusal: Refusal::NotDirectory,
                ..
            })
        ));
        assert!(matches!(
            open_file("f", root.path(), &OpenOptions::new().read(true).clone()),
            Err(PrivateFsError::Refused {
                refusal: Refusal::NotRegularFile,
                ..
            })
        ));
    }

    #[test]
    fn owner_refusals_name_both_uids() {
        let text = PrivateFsError::refused(
            "session log",
            Path::new("/h/s.jsonl"),
            Refusal::Owner {
                owner: 0,
                runtime: 1000,
            },
        )
        .to_string();
        assert_eq!(
            text,
            "session log /h/s.jsonl is owned by uid 0, not by this runtime's uid 1000: refusing it"
        );
    }

    fn must<T>(result: Result<T, PrivateFsError>) -> T {
        result.unwrap()
    }
}
