//! Regular files only, read to a byte bound: how the file tools open what
//! they read or change, so that a device, a FIFO or a socket is refused
//! before it can block a call or stream without end, and a file that grows
//! while it is read never takes more memory than the limit.
//!
//! The type is checked twice: by path before opening (so opening a device
//! has no side effect), then on the opened descriptor (`fstat`), which is
//! what was really opened whatever happened to the name meanwhile. Opening
//! uses `O_NONBLOCK`, so a FIFO swapped in between never blocks the open.

use rustix::fs::{FileType, OFlags};
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Default of [`crate::ToolsConfig::file_max_bytes`]: the largest file
/// `read`, `edit` and `write` handle (64 MiB).
pub const DEFAULT_FILE_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// The variable that sets [`crate::ToolsConfig::file_max_bytes`].
pub const FILE_MAX_BYTES_VAR: &str = "DSH_FILE_MAX_BYTES";

/// Flags every open of a file the model names adds: never block on a
/// FIFO, never acquire a controlling terminal, never leak into children.
pub(crate) const OPEN_FLAGS: OFlags = OFlags::NONBLOCK
    .union(OFlags::NOCTTY)
    .union(OFlags::CLOEXEC);

/// What kind of non-regular file `file_type` is, e.g. "a FIFO"; `None`
/// for a regular file.
pub(crate) fn special_kind(file_type: FileType) -> Option<&'static str> {
    match file_type {
        FileType::RegularFile => None,
        FileType::Directory => Some("a directory"),
        FileType::Symlink => Some("a symbolic link"),
        FileType::Fifo => Some("a FIFO"),
        FileType::Socket => Some("a socket"),
        FileType::CharacterDevice => Some("a character device"),
        FileType::BlockDevice => Some("a block device"),
        FileType::Unknown => Some("not a file of a known kind"),
    }
}

/// The kind of non-regular file at `path` (links followed); `None` when
/// it is a regular file or cannot be examined (the open that follows
/// reports that).
pub(crate) fn special_at(path: &Path) -> Option<&'static str> {
    let stat = rustix::fs::stat(path).ok()?;
    special_kind(FileType::from_raw_mode(stat.st_mode))
}

/// The kind of non-regular file `file` is, `None` when it is regular.
pub(crate) fn special_open(file: &File) -> io::Result<Option<&'static str>> {
    let stat = rustix::fs::fstat(file)?;
    Ok(special_kind(FileType::from_raw_mode(stat.st_mode)))
}

/// The model-facing refusal of a non-regular file (`action`: "read",
/// "edit", "write").
pub(crate) fn not_regular(action: &str, path: &Path, kind: &str) -> String {
    format!(
        "Error: cannot {action} {}: not a regular file ({kind}).",
        path.display()
    )
}

/// Why a file could not be opened for reading.
pub(crate) enum OpenError {
    /// It is not a regular file: its kind.
    Special(&'static str),
    /// The open or the `fstat` failed.
    Io(io::Error),
}

/// Opens the regular file `path` read-only (links followed) without ever
/// blocking; anything else is refused with its kind.
pub(crate) fn open_read(path: &Path) -> Result<File, OpenError> {
    if let Some(kind) = special_at(path) {
        return Err(OpenError::Special(kind));
    }
    let fd = rustix::fs::open(path, OFlags::RDONLY | OPEN_FLAGS, rustix::fs::Mode::empty())
        .map_err(|err| OpenError::Io(err.into()))?;
    let file = File::from(fd);
    match special_open(&file) {
        Ok(None) => Ok(file),
        Ok(Some(kind)) => Err(OpenError::Special(kind)),
        Err(err) => Err(OpenError::Io(err)),
    }
}

/// The size `file` has now, from its descriptor.
pub(crate) fn size(file: &File) -> io::Result<u64> {
    Ok(u64::try_from(rustix::fs::fstat(file)?.st_size).unwrap_or(0))
}

/// Reads all of `file` if it holds at most `limit` bytes, else `None`;
/// never more than `limit + 1` bytes are read, however the file grows.
/// The buffer is sized once from the current size, so reading a file that
/// does not change allocates exactly what it holds.
pub(crate) fn read_bounded(file: &mut File, limit: u64) -> io::Result<Option<Vec<u8>>> {
    let hint = size(file)?.min(limit);
    let mut bytes = Vec::with_capacity(usize::try_from(hint).unwrap_or(0).saturating_add(1));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Ok(None);
    }
    Ok(Some(bytes))
}

/// The model-facing refusal of a file above the limit. `size` is what
/// `fstat` said, `None` when the file grew past the limit while read;
/// `hint` says what to do instead.
pub(crate) fn too_large(
    tool: &str,
    path: &Path,
    size: Option<u64>,
    limit: u64,
    hint: &str,
) -> String {
    let shown = path.display();
    let what = match size {
        Some(size) if size > limit => format!("{shown} is {size} bytes"),
        _ => format!("{shown} grew past {limit} bytes while it was read"),
    };
    format!(
        "Error: {what}, more than {tool} accepts ({limit} bytes, set by {FILE_MAX_BYTES_VAR}); {hint}."
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, Write};

    fn ok<T, E: std::fmt::Debug>(result: Result<T, E>) -> T {
        result.unwrap_or_else(|err| panic!("{err:?}"))
    }

    #[test]
    fn reads_up_to_the_limit_and_refuses_beyond() {
        let mut file = ok(tempfile::tempfile());
        ok(file.write_all(b"0123456789"));
        ok(file.rewind());
        assert_eq!(
            ok(read_bounded(&mut file, 10)).as_deref(),
            Some(&b"0123456789"[..])
        );
        ok(file.rewind());
        assert_eq!(ok(read_bounded(&mut file, 9)), None);
    }

    #[test]
    fn a_device_is_refused_by_path_and_a_regular_file_opens() {
        assert!(matches!(
            open_read(Path::new("/dev/zero")),
            Err(OpenError::Special("a character device"))
        ));
        let dir = ok(tempfile::tempdir());
        let path = dir.path().join("f");
        ok(std::fs::write(&path, "x"));
        assert!(open_read(&path).is_ok());
        assert!(matches!(
            open_read(dir.path()),
            Err(OpenError::Special("a directory"))
        ));
    }

    #[test]
    fn an_opened_device_is_recognised_on_the_descriptor() {
        let file = ok(File::open("/dev/null"));
        assert_eq!(ok(special_open(&file)), Some("a character device"));
    }

    #[test]
    fn a_device_read_stops_at_the_limit() {
        let mut zero = ok(File::open("/dev/zero"));
        assert_eq!(ok(read_bounded(&mut zero, 4096)), None);
    }
}
