//! The private directory long job outputs are saved in, and the files in
//! it: the directory has mode 0700 and belongs to the runtime's user, and
//! every file is created new, never through a link, with mode 0600.
//!
//! Both modes are set explicitly with `fchmod`, whatever the umask. A name
//! that already exists (a planted link or file) is never followed nor
//! truncated: creating it fails, and that spill is given up (the job keeps
//! the in-memory tail of its output) rather than picking another name, so
//! the names the model sees stay predictable.

use rustix::fd::OwnedFd;
use rustix::fs::{FileType, Mode, OFlags};
use rustix::io::Errno;
use std::fs::File;
use std::io;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

/// Mode of the spill directory.
const DIR_MODE: u32 = 0o700;

/// Mode of every spill file.
const FILE_MODE: u32 = 0o600;

/// An open spill directory, checked to be private.
#[derive(Debug)]
pub(crate) struct SpillDir {
    path: PathBuf,
    fd: OwnedFd,
}

impl SpillDir {
    /// Creates the directory `path` (mode 0700, its missing ancestors with
    /// the usual modes) or opens it if it exists. Refuses a symbolic link,
    /// something other than a directory, or a directory of another user; a
    /// directory of ours with a wider mode is narrowed to 0700.
    pub(crate) fn open(path: &Path) -> io::Result<Self> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        match std::fs::DirBuilder::new().mode(DIR_MODE).create(path) {
            Ok(()) => {}
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(err),
        }
        let shown = path.display();
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        // O_NOFOLLOW refuses a link (with ENOTDIR next to O_DIRECTORY);
        // the lstat only words the error.
        let fd = rustix::fs::open(path, flags, Mode::empty()).map_err(|err| {
            let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            match err {
                Errno::LOOP | Errno::NOTDIR if link => {
                    io::Error::other(format!("{shown} is a symbolic link"))
                }
                Errno::NOTDIR => io::Error::other(format!("{shown} is not a directory")),
                other => io::Error::other(format!("cannot open {shown}: {other}")),
            }
        })?;
        let stat = rustix::fs::fstat(&fd)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::Directory {
            return Err(io::Error::other(format!("{shown} is not a directory")));
        }
        let me = rustix::process::geteuid().as_raw();
        if stat.st_uid != me {
            return Err(io::Error::other(format!(
                "{shown} belongs to user {}, not to this runtime's user {me}",
                stat.st_uid
            )));
        }
        if stat.st_mode & 0o7777 != DIR_MODE {
            rustix::fs::fchmod(&fd, Mode::from_raw_mode(DIR_MODE))?;
        }
        Ok(Self {
            path: path.to_path_buf(),
            fd,
        })
    }

    /// Creates the new file `name` in the directory, open for reading and
    /// writing, with mode 0600. Fails if the name exists in any form.
    pub(crate) fn create(&self, name: &str) -> io::Result<(PathBuf, File)> {
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW;
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            flags | OFlags::CLOEXEC,
            Mode::from_raw_mode(FILE_MODE),
        )
        .map_err(|err| match err {
            Errno::EXIST => io::Error::other(format!(
                "{} already exists; it is left alone",
                self.path.join(name).display()
            )),
            other => other.into(),
        })?;
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(FILE_MODE))?;
        Ok((self.path.join(name), File::from(fd)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::unix::fs::{PermissionsExt, symlink};

    fn ok<T, E: std::fmt::Debug>(result: Result<T, E>) -> T {
        result.unwrap_or_else(|err| panic!("{err:?}"))
    }

    fn mode(path: &Path) -> u32 {
        ok(std::fs::symlink_metadata(path)).permissions().mode() & 0o7777
    }

    #[test]
    fn creates_a_private_directory_and_private_files() {
        let dir = ok(tempfile::tempdir());
        let path = dir.path().join("home/tool-output");
        let spill = ok(SpillDir::open(&path));
        assert_eq!(mode(&path), 0o700);
        let (file_path, mut file) = ok(spill.create("job.log"));
        assert_eq!(file_path, path.join("job.log"));
        ok(file.write_all(b"data"));
        assert_eq!(mode(&file_path), 0o600);
        assert_eq!(ok(std::fs::read_to_string(&file_path)), "data");
    }

    #[test]
    fn narrows_an_existing_directory_of_ours() {
        let dir = ok(tempfile::tempdir());
        let path = dir.path().join("wide");
        ok(std::fs::create_dir(&path));
        ok(std::fs::set_permissions(
            &path,
            std::fs::Permissions::from_mode(0o777),
        ));
        ok(SpillDir::open(&path));
        assert_eq!(mode(&path), 0o700);
    }

    #[test]
    fn refuses_a_link_or_a_file_as_the_directory() {
        let dir = ok(tempfile::tempdir());
        let real = dir.path().join("real");
        ok(std::fs::create_dir(&real));
        ok(std::fs::set_permissions(
            &real,
            std::fs::Permissions::from_mode(0o755),
        ));
        let link = dir.path().join("link");
        ok(symlink(&real, &link));
        let err = ok(SpillDir::open(&link).map(drop).err().ok_or("opened"));
        assert!(err.to_string().contains("symbolic link"), "{err}");
        assert_eq!(mode(&real), 0o755, "the link's target was changed");
        let file = dir.path().join("file");
        ok(std::fs::write(&file, "x"));
        let err = ok(SpillDir::open(&file).map(drop).err().ok_or("opened"));
        assert!(err.to_string().contains("not a directory"), "{err}");
    }

    #[test]
    fn never_follows_nor_truncates_an_existing_name() {
        let dir = ok(tempfile::tempdir());
        let outside = dir.path().join("outside.txt");
        ok(std::fs::write(&outside, "untouched"));
        let spill = ok(SpillDir::open(&dir.path().join("spill")));
        ok(symlink(&outside, dir.path().join("spill/a.log")));
        ok(symlink(
            dir.path().join("absent"),
            dir.path().join("spill/b.log"),
        ));
        ok(std::fs::write(dir.path().join("spill/c.log"), "planted"));
        for name in ["a.log", "b.log", "c.log"] {
            let err = ok(spill.create(name).map(drop).err().ok_or("created"));
            assert!(err.to_string().contains("already exists"), "{err}");
        }
        assert_eq!(ok(std::fs::read_to_string(&outside)), "untouched");
        assert!(!dir.path().join("absent").exists());
        assert_eq!(
            ok(std::fs::read_to_string(dir.path().join("spill/c.log"))),
            "planted"
        );
    }
}
