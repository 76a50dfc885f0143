//! The private directory long job outputs are saved in, and the files in
//! it: the directory has mode 0700 and belongs to the runtime's user, and
//! every file is created new, never through a link, with mode 0600.
//!
//! Both modes are set explicitly (`dsh_session::private_fs`, shared with the
//! session store), whatever the umask. A name
//! that already exists (a planted link or file) is never followed nor
//! truncated: creating it fails, and that spill is given up (the job keeps
//! the in-memory tail of its output) rather than picking another name, so
//! the names the model sees stay predictable.

use dsh_session::private_fs;
use std::fs::{File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// An opened spill directory, checked to be private.
#[derive(Debug)]
pub(crate) struct SpillDir {
    path: PathBuf,
}

impl SpillDir {
    /// Creates the directory `path` and its missing ancestors (mode 0700,
    /// as everything the runtime creates under `DSH_HOME`) or opens it if it
    /// exists. Refuses a symbolic link, something other than a directory, or
    /// a directory of another user; a directory of ours with a wider mode is
    /// narrowed to 0700.
    pub(crate) fn open(path: &Path) -> io::Result<Self> {
        if let Some(parent) = path.parent() {
            private_fs::create_dir_all(parent).map_err(io::Error::other)?;
        }
        private_fs::create_dir("tool output directory", path).map_err(io::Error::other)?;
        let mode = std::fs::symlink_metadata(path)?.permissions().mode() & 0o7777;
        if mode != private_fs::DIR_MODE {
            std::fs::set_permissions(path, Permissions::from_mode(private_fs::DIR_MODE))?;
        }
        Ok(Self {
            path: path.to_path_buf(),
        })
    }

    /// Creates the new file `name` in the directory, open for reading and
    /// writing, with mode 0600. Fails if the name exists in any form (a
    /// planted link is never followed nor truncated).
    pub(crate) fn create(&self, name: &str) -> io::Result<(PathBuf, File)> {
        let path = self.path.join(name);
        let file = private_fs::create_file(
            "tool output",
            &path,
            OpenOptions::new().read(true).write(true),
        )
        .map_err(|err| {
            if err.is_io_kind(io::ErrorKind::AlreadyExists) {
                io::Error::other(format!(
                    "{} already exists; it is left alone",
                    path.display()
                ))
            } else {
                io::Error::other(err)
            }
        })?;
        Ok((path, file))
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
