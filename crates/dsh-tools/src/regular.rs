//! Regular files only, read to a byte bound: how the file tools open what
//! they read or change, so that a device, a FIFO or a socket is refused
//! before it can block a call or stream without end, and a file that grows
//! while it is read never takes more memory than the limit.
//!
//! The type is checked twice: by path before opening (so opening a device
//! has no side effect), then on the opened descriptor (`fstat`), which is
//! what was really opened whatever happened to the name meanwhile. Opening
//! uses `O_NONBLOCK`, so a FIFO swapped in between never blocks the open.

use crate::ToolOutput;
use dsh_protocol::catalog::ToolErrorCode;
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

/// Whether something other than a regular file is at `path` (links
/// followed); `false` when nothing is there or it cannot be examined (the
/// open that follows reports that).
pub(crate) fn is_special_at(path: &Path) -> bool {
    rustix::fs::stat(path)
        .is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile)
}

/// Whether the open `file` is something other than a regular file.
pub(crate) fn is_special(file: &File) -> io::Result<bool> {
    let stat = rustix::fs::fstat(file)?;
    Ok(FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile)
}

/// The refusal of a non-regular file (`action`: "read", "edit", "write",
/// "search"), worded and classified as the official runtime does.
pub(crate) fn not_regular(action: &str, path: &Path) -> ToolOutput {
    ToolOutput::failure(format!(
        "Error: cannot {action} \"{}\": not a regular file",
        path.display()
    ))
    .with_error(ToolErrorCode::FsNotRegularFile)
}

/// Why a file could not be opened for reading.
pub(crate) enum OpenError {
    /// It is not a regular file.
    Special,
    /// The open or the `fstat` failed.
    Io(io::Error),
}

/// Opens the regular file `path` read-only (links followed) without ever
/// blocking; anything else is refused.
pub(crate) fn open_read(path: &Path) -> Result<File, OpenError> {
    if is_special_at(path) {
        return Err(OpenError::Special);
    }
    let fd = rustix::fs::open(path, OFlags::RDONLY | OPEN_FLAGS, rustix::fs::Mode::empty())
        .map_err(|err| OpenError::Io(err.into()))?;
    let file = File::from(fd);
    match is_special(&file) {
        Ok(false) => Ok(file),
        Ok(true) => Err(OpenError::Special),
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

/// Why [`read_regular`] read nothing.
#[derive(Debug, thiserror::Error)]
pub enum ReadRegularError {
    /// Something other than a regular file is there (links followed).
    #[error("not a regular file")]
    NotRegular,
    /// The file holds more than the limit.
    #[error("larger than {0} bytes")]
    TooLarge(u64),
    /// The open or the read failed (`NotFound` when nothing is there).
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Reads the regular file `path` (links followed) whole if it holds at most
/// `limit` bytes, never blocking on a FIFO and never reading more than
/// `limit + 1` bytes: how the runtime reads project files the model never
/// named (instructions, skills).
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, ReadRegularError> {
    let mut file = match open_read(path) {
        Ok(file) => file,
        Err(OpenError::Special) => return Err(ReadRegularError::NotRegular),
        Err(OpenError::Io(err)) => return Err(ReadRegularError::Io(err)),
    };
    read_bounded(&mut file, limit)?.ok_or(ReadRegularError::TooLarge(limit))
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
            Err(OpenError::Special)
        ));
        let dir = ok(tempfile::tempdir());
        let path = dir.path().join("f");
        ok(std::fs::write(&path, "x"));
        assert!(open_read(&path).is_ok());
        assert!(matches!(open_read(dir.path()), Err(OpenError::Special)));
    }

    #[test]
    fn read_regular_refuses_what_is_not_a_small_regular_file() {
        let dir = ok(tempfile::tempdir());
        let path = dir.path().join("f");
        ok(std::fs::write(&path, "0123"));
        assert_eq!(ok(read_regular(&path, 4)), b"0123");
        assert!(matches!(
            read_regular(&path, 3),
            Err(ReadRegularError::TooLarge(3))
        ));
        assert!(matches!(
            read_regular(dir.path(), 9),
            Err(ReadRegularError::NotRegular)
        ));
        assert!(matches!(
            read_regular(&dir.path().join("missing"), 9),
            Err(ReadRegularError::Io(err)) if err.kind() == io::ErrorKind::NotFound
        ));
    }

    #[test]
    fn an_opened_device_is_recognised_on_the_descriptor() {
        let file = ok(File::open("/dev/null"));
        assert!(ok(is_special(&file)));
    }

    #[test]
    fn a_fifo_never_blocks_an_open_and_is_recognised_on_the_descriptor() {
        let dir = ok(tempfile::tempdir());
        let path = dir.path().join("fifo");
        ok(rustix::fs::mknodat(
            rustix::fs::CWD,
            &path,
            FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        ));
        assert!(matches!(open_read(&path), Err(OpenError::Special)));
        // `write` opening it (no reader): an error at once, no wait.
        let write = crate::beneath::create_or_truncate(|flags, mode| {
            rustix::fs::open(&path, flags, mode).map_err(Into::into)
        });
        assert_eq!(
            write.err().and_then(|err| err.raw_os_error()),
            Some(rustix::io::Errno::NXIO.raw_os_error())
        );
        // `edit` opening it: opens at once, and fstat tells.
        let fd = ok(rustix::fs::open(
            &path,
            OFlags::RDWR | OPEN_FLAGS,
            rustix::fs::Mode::empty(),
        ));
        assert!(ok(is_special(&File::from(fd))));
    }

    #[test]
    fn a_device_read_stops_at_the_limit() {
        let mut zero = ok(File::open("/dev/zero"));
        assert_eq!(ok(read_bounded(&mut zero, 4096)), None);
    }
}
