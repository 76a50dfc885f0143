//! Files opened beneath the workspace through a descriptor of its root, so
//! that no symbolic link leads a write outside it and nothing can be
//! swapped between a check and the use.
//!
//! Every lookup is one `openat2` call relative to the root descriptor with
//! `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`: the kernel resolves the whole
//! path and refuses (`EXDEV`) any link, `..` or absolute link that would
//! leave the root, atomically. Where the kernel lacks `openat2` (`ENOSYS`)
//! the path is walked one component at a time with `O_NOFOLLOW`, refusing
//! every symbolic link (`ELOOP`), even one that would stay inside.

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Attempts of an `openat2` call the kernel asks to retry (`EAGAIN`: a
/// concurrent rename made it unsure a lookup stayed beneath the root).
const RETRIES: usize = 16;

/// Mode of a directory created for the model (the umask applies).
const DIR_MODE: u32 = 0o777;

/// Mode of a file created for the model (the umask applies).
const FILE_MODE: u32 = 0o666;

/// An open workspace root under which paths are resolved.
#[derive(Debug)]
pub(crate) struct Root {
    fd: OwnedFd,
    lexical: PathBuf,
    canonical: PathBuf,
}

/// Whether `err` means the path left the root through a symbolic link (or,
/// on the fallback walk, went through any symbolic link).
pub(crate) fn is_escape(err: &io::Error) -> bool {
    matches!(errno(err), Some(Errno::XDEV | Errno::LOOP))
}

impl Root {
    /// Opens `workspace` (which may itself be reached through links) as an
    /// `O_PATH` directory descriptor.
    pub(crate) fn open(workspace: &Path) -> io::Result<Self> {
        let canonical = workspace.canonicalize()?;
        let fd = rustix::fs::open(
            &canonical,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self {
            fd,
            lexical: workspace.to_path_buf(),
            canonical,
        })
    }

    /// `path` (absolute, lexically normalised) relative to the root: under
    /// the workspace as given, under its canonical form, or, once the
    /// existing part of `path` is canonicalised, under that. `None` when
    /// it lies outside. The result is only a name to resolve beneath the
    /// root; links in it are checked when it is opened.
    pub(crate) fn relative(&self, path: &Path) -> Option<PathBuf> {
        let rel = path
            .strip_prefix(&self.lexical)
            .or_else(|_| path.strip_prefix(&self.canonical))
            .map(Path::to_path_buf)
            .ok()
            .or_else(|| {
                crate::paths::canonical_prefix(path)
                    .strip_prefix(&self.canonical)
                    .map(Path::to_path_buf)
                    .ok()
            })?;
        rel.components()
            .all(|c| matches!(c, Component::Normal(_)))
            .then_some(rel)
    }

    /// Creates the missing parent directories of `rel`, one at a time, each
    /// with `mkdirat` in a parent opened beneath the root.
    pub(crate) fn create_parents(&self, rel: &Path) -> io::Result<()> {
        let Some(parent) = rel.parent().filter(|p| !p.as_os_str().is_empty()) else {
            return Ok(());
        };
        if self.open_dir(parent).is_ok() {
            return Ok(());
        }
        let mut prefix = PathBuf::new();
        for part in parent.components() {
            let dir = self.open_dir(&prefix)?;
            match rustix::fs::mkdirat(&dir, part.as_os_str(), Mode::from_raw_mode(DIR_MODE)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(err) => return Err(err.into()),
            }
            prefix.push(part);
        }
        self.open_dir(parent).map(drop)
    }

    /// Opens `rel` for writing, creating it or truncating it, and says
    /// whether this call created it.
    pub(crate) fn create_or_truncate(&self, rel: &Path) -> io::Result<(File, bool)> {
        create_or_truncate(|flags, mode| self.open_at(rel, flags, mode))
    }

    /// Opens the existing file `rel` for reading and writing, without
    /// blocking (a FIFO opens at once; the caller checks the type).
    pub(crate) fn open_existing(&self, rel: &Path) -> io::Result<File> {
        self.open_at(
            rel,
            OFlags::RDWR | crate::regular::OPEN_FLAGS,
            Mode::empty(),
        )
        .map(File::from)
    }

    fn open_dir(&self, rel: &Path) -> io::Result<OwnedFd> {
        self.open_at(rel, OFlags::PATH | OFlags::DIRECTORY, Mode::empty())
    }

    fn open_at(&self, rel: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
        open_beneath(self.fd.as_fd(), rel, flags, mode)
    }
}

/// Opens a file for writing with `open` (given the flags and mode of each
/// attempt), creating or truncating it; `true` when this call created it.
pub(crate) fn create_or_truncate(
    open: impl Fn(OFlags, Mode) -> io::Result<OwnedFd>,
) -> io::Result<(File, bool)> {
    // Non-blocking: a FIFO without a reader fails (ENXIO) instead of
    // waiting for one; the caller checks the type of what opened.
    let write = OFlags::WRONLY | OFlags::CREATE | crate::regular::OPEN_FLAGS;
    let mode = Mode::from_raw_mode(FILE_MODE);
    match open(write | OFlags::EXCL, mode) {
        Ok(fd) => return Ok((File::from(fd), true)),
        Err(err) if errno(&err) != Some(Errno::EXIST) => return Err(err),
        Err(_) => {}
    }
    // The name exists: a file, or a link (O_EXCL never follows one).
    match open(
        OFlags::WRONLY | OFlags::TRUNC | crate::regular::OPEN_FLAGS,
        Mode::empty(),
    ) {
        Ok(fd) => Ok((File::from(fd), false)),
        // A link to a file that does not exist yet (or the file went away
        // meanwhile): create the file it names.
        Err(err) if errno(&err) == Some(Errno::NOENT) => {
            let fd = open(write | OFlags::TRUNC, mode)?;
            Ok((File::from(fd), true))
        }
        Err(err) => Err(err),
    }
}

fn errno(err: &io::Error) -> Option<Errno> {
    err.raw_os_error().map(Errno::from_raw_os_error)
}

/// Opens `rel` beneath `dir` with `openat2`, falling back to [`walk`].
fn open_beneath(dir: BorrowedFd<'_>, rel: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    let name = if rel.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rel
    };
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    for _ in 0..RETRIES {
        match rustix::fs::openat2(dir, name, flags | OFlags::CLOEXEC, mode, resolve) {
            Err(Errno::AGAIN) => continue,
            Err(Errno::NOSYS) => return walk(dir, rel, flags, mode),
            other => return other.map_err(io::Error::from),
        }
    }
    Err(Errno::AGAIN.into())
}

/// Opens `rel` beneath `dir` one component at a time, refusing every
/// symbolic link with `ELOOP`: the fallback where `openat2` is missing.
fn walk(dir: BorrowedFd<'_>, rel: &Path, flags: OFlags, mode: Mode) -> io::Result<OwnedFd> {
    let mut parts = Vec::new();
    for component in rel.components() {
        match component {
            Component::Normal(part) => parts.push(part),
            // Only plain names are resolved here; `..` or a root could leave.
            _ => return Err(Errno::XDEV.into()),
        }
    }
    let Some((last, parents)) = parts.split_last() else {
        return rustix::fs::openat(dir, ".", flags | OFlags::CLOEXEC, mode).map_err(Into::into);
    };
    let mut current: Option<OwnedFd> = None;
    for part in parents {
        let base = current.as_ref().map_or(dir, |fd| fd.as_fd());
        current = Some(step_dir(base, part)?);
    }
    let base = current.as_ref().map_or(dir, |fd| fd.as_fd());
    if flags.contains(OFlags::DIRECTORY) && flags.contains(OFlags::PATH) {
        return step_dir(base, last);
    }
    rustix::fs::openat(
        base,
        *last,
        flags | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    )
    .map_err(Into::into)
}

/// Opens the directory `name` in `base` without following a link.
fn step_dir(base: BorrowedFd<'_>, name: &OsStr) -> io::Result<OwnedFd> {
    // With O_PATH | O_NOFOLLOW a link opens as itself; fstat tells.
    let fd = rustix::fs::openat(
        base,
        name,
        OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    match FileType::from_raw_mode(rustix::fs::fstat(&fd)?.st_mode) {
        FileType::Directory => Ok(fd),
        FileType::Symlink => Err(Errno::LOOP.into()),
        _ => Err(Errno::NOTDIR.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::unix::fs::symlink;

    fn ok<T, E: std::fmt::Debug>(result: Result<T, E>) -> T {
        result.unwrap_or_else(|err| panic!("{err:?}"))
    }

    /// A workspace `ws` and an `outside` directory side by side.
    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = ok(tempfile::tempdir());
        let ws = ok(dir.path().canonicalize()).join("ws");
        let outside = ok(dir.path().canonicalize()).join("outside");
        ok(std::fs::create_dir(&ws));
        ok(std::fs::create_dir(&outside));
        (dir, ws, outside)
    }

    #[test]
    fn relative_accepts_the_lexical_and_the_canonical_workspace() {
        let (dir, ws, _) = dirs();
        let via = dir.path().join("via");
        ok(symlink(&ws, &via));
        let root = ok(Root::open(&via));
        assert_eq!(root.relative(&via.join("a/b")), Some(PathBuf::from("a/b")));
        assert_eq!(root.relative(&ws.join("a/b")), Some(PathBuf::from("a/b")));
        assert_eq!(root.relative(&ws), Some(PathBuf::new()));
        assert_eq!(root.relative(&dir.path().join("outside/x")), None);
    }

    #[test]
    fn creates_files_and_parents_and_reports_creation() {
        let (_dir, ws, _) = dirs();
        let root = ok(Root::open(&ws));
        let rel = Path::new("a/b/c.txt");
        ok(root.create_parents(rel));
        let (mut file, created) = ok(root.create_or_truncate(rel));
        assert!(created);
        ok(file.write_all(b"one"));
        let (mut file, created) = ok(root.create_or_truncate(rel));
        assert!(!created);
        ok(file.write_all(b"2"));
        assert_eq!(ok(std::fs::read_to_string(ws.join(rel))), "2");
        let mut text = String::new();
        ok(ok(root.open_existing(rel)).read_to_string(&mut text));
        assert_eq!(text, "2");
    }

    #[test]
    fn links_out_of_the_root_are_refused() {
        let (_dir, ws, outside) = dirs();
        ok(symlink(outside.join("new.txt"), ws.join("dangling")));
        ok(symlink(&outside, ws.join("out")));
        ok(symlink("../outside", ws.join("up")));
        ok(std::fs::write(outside.join("kept.txt"), "kept"));
        let root = ok(Root::open(&ws));
        for rel in ["dangling", "out/x", "up/x", "out/kept.txt"] {
            let err = match root.create_or_truncate(Path::new(rel)) {
                Ok(_) => panic!("{rel} opened"),
                Err(err) => err,
            };
            assert!(is_escape(&err), "{rel}: {err}");
        }
        let err = match root.create_parents(Path::new("out/sub/f")) {
            Ok(()) => panic!("parents created outside"),
            Err(err) => err,
        };
        assert!(is_escape(&err), "{err}");
        let edit = root.open_existing(Path::new("out/kept.txt"));
        assert!(edit.is_err_and(|err| is_escape(&err)));
        assert_eq!(
            ok(std::fs::read_to_string(outside.join("kept.txt"))),
            "kept"
        );
        assert_eq!(ok(std::fs::read_dir(&outside)).count(), 1);
    }

    #[test]
    fn links_inside_the_root_are_followed() {
        let (_dir, ws, _) = dirs();
        ok(std::fs::create_dir_all(ws.join("real/dir")));
        ok(symlink("real/dir", ws.join("inner")));
        let root = ok(Root::open(&ws));
        ok(root.create_parents(Path::new("inner/x/y.txt")));
        let (_, created) = ok(root.create_or_truncate(Path::new("inner/x/y.txt")));
        assert!(created);
        assert!(ws.join("real/dir/x/y.txt").is_file());
    }

    #[test]
    fn the_fallback_walk_refuses_every_link() {
        let (_dir, ws, outside) = dirs();
        ok(std::fs::create_dir_all(ws.join("real/dir")));
        ok(std::fs::write(ws.join("real/dir/f.txt"), "f"));
        ok(symlink("real/dir", ws.join("inner")));
        ok(symlink(&outside, ws.join("out")));
        ok(symlink(outside.join("new.txt"), ws.join("dangling")));
        let root = ok(Root::open(&ws));
        let dir = root.fd.as_fd();
        let write = OFlags::WRONLY | OFlags::CREATE;
        let mode = Mode::from_raw_mode(0o600);
        let file = walk(
            dir,
            Path::new("real/dir/f.txt"),
            OFlags::RDONLY,
            Mode::empty(),
        );
        assert!(file.is_ok());
        let made = walk(dir, Path::new("real/dir/new.txt"), write, mode);
        assert!(made.is_ok());
        let parent = walk(
            dir,
            Path::new("real/dir"),
            OFlags::PATH | OFlags::DIRECTORY,
            mode,
        );
        assert!(parent.is_ok());
        for rel in ["inner/f.txt", "out/x", "dangling", "inner"] {
            let err = match walk(dir, Path::new(rel), write, mode) {
                Ok(_) => panic!("{rel} opened"),
                Err(err) => err,
            };
            assert_eq!(errno(&err), Some(Errno::LOOP), "{rel}: {err}");
            assert!(is_escape(&err));
        }
        let as_dir = walk(
            dir,
            Path::new("out"),
            OFlags::PATH | OFlags::DIRECTORY,
            mode,
        );
        assert!(as_dir.is_err_and(|err| errno(&err) == Some(Errno::LOOP)));
        let dotdot = walk(dir, Path::new("../outside/x"), write, mode);
        assert!(dotdot.is_err_and(|err| is_escape(&err)));
        assert_eq!(ok(std::fs::read_dir(&outside)).count(), 0);
    }
}
