//! Path resolution and the workspace containment check of the file tools.

use crate::ToolOutput;
use crate::output::Refusal;
use dsh_protocol::catalog::ToolErrorCode;
use std::path::{Component, Path, PathBuf};

/// Resolves a path argument: a leading `~/` expands to `$HOME`, a relative
/// path is joined to `cwd`, and `.`/`..` components are removed lexically.
pub(crate) fn resolve(cwd: &Path, input: &str) -> PathBuf {
    let expanded = match input.strip_prefix("~/") {
        Some(rest) => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(rest),
            None => PathBuf::from(input),
        },
        None if input == "~" => std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(input)),
        None => PathBuf::from(input),
    };
    let joined = if expanded.is_absolute() {
        expanded
    } else {
        cwd.join(expanded)
    };
    normalize(&joined)
}

/// Removes `.` and `..` components without touching the file system.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The path with symlinks resolved as far as it exists: the deepest
/// existing ancestor is canonicalised and the rest appended.
pub(crate) fn canonical_prefix(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return out;
        }
        match (
            existing.file_name().map(|n| n.to_os_string()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// Whether `path` lies inside `root` once symlinks are resolved.
pub(crate) fn is_within(path: &Path, root: &Path) -> bool {
    canonical_prefix(path).starts_with(canonical_prefix(root))
}

/// `path` displayed for the model.
pub(crate) fn display(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// A `file_path` argument as the file tools resolve it, the way the
/// official runtime does: `display` names it in error messages, `real` is
/// what is opened and what successful results name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// The argument joined to the working directory (or taken as given
    /// when absolute) with empty and `.` segments dropped; `..` is kept.
    pub(crate) display: PathBuf,
    /// The physical path: every existing segment with its symbolic links
    /// resolved and `..` applied to the real directory, then the missing
    /// rest appended as written. A dangling link as the last segment is
    /// kept as the link itself.
    pub(crate) real: PathBuf,
}

/// Why a `file_path` cannot be resolved.
#[derive(Debug)]
pub(crate) enum ResolveError {
    /// A segment before the last names something other than a directory.
    NotDirectory,
    /// A `..` follows a directory that does not exist.
    CrossesMissing,
    /// Examining a segment failed (a link loop: `ELOOP`; `EACCES`).
    Io(std::io::Error),
}

/// `raw` joined to `cwd` (unless absolute), empty and `.` segments
/// dropped, `..` kept: how the file tools name a path in their errors.
pub(crate) fn display_path(cwd: &Path, raw: &str) -> PathBuf {
    let mut out = if raw.starts_with('/') {
        PathBuf::from("/")
    } else {
        cwd.to_path_buf()
    };
    for segment in segments(raw) {
        out.push(segment);
    }
    out
}

fn segments(raw: &str) -> impl Iterator<Item = &str> {
    raw.split('/').filter(|s| !s.is_empty() && *s != ".")
}

/// Resolves `raw` against `cwd` one segment at a time on the file system
/// (see [`Resolved`]). No `~` expansion: `~` is an ordinary name, as in
/// the official runtime.
pub(crate) fn resolve_physical(cwd: &Path, raw: &str) -> Result<Resolved, ResolveError> {
    let display = display_path(cwd, raw);
    let mut real = if raw.starts_with('/') {
        PathBuf::from("/")
    } else {
        cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf())
    };
    let parts: Vec<&str> = segments(raw).collect();
    let mut missing = false;
    for (index, segment) in parts.iter().enumerate() {
        let last = index + 1 == parts.len();
        if *segment == ".." {
            if missing {
                return Err(ResolveError::CrossesMissing);
            }
            real.pop();
            continue;
        }
        real.push(segment);
        if missing {
            continue;
        }
        match std::fs::symlink_metadata(&real) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => missing = true,
            Err(err) => return Err(ResolveError::Io(err)),
            Ok(meta) => {
                if meta.file_type().is_symlink() {
                    match real.canonicalize() {
                        Ok(target) => real = target,
                        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                            missing = true;
                            continue;
                        }
                        Err(err) => return Err(ResolveError::Io(err)),
                    }
                }
                if !last && !real.is_dir() {
                    return Err(ResolveError::NotDirectory);
                }
            }
        }
    }
    Ok(Resolved { display, real })
}

/// Resolves a file tool's `file_path` (see [`resolve_physical`]), or the
/// failed result worded as the official runtime words it: a segment that
/// is not a directory or a `..` after a missing one is `FS_NOT_FOUND`, a
/// link loop is Node's own message.
pub(crate) fn resolve_file(cwd: &Path, raw: &str) -> Result<Resolved, Refusal> {
    resolve_physical(cwd, raw).map_err(|err| {
        let shown = display_path(cwd, raw);
        let shown = shown.display();
        let why = match err {
            ResolveError::NotDirectory => "a parent path segment is not a directory",
            ResolveError::CrossesMissing => "parent traversal crosses a missing directory",
            ResolveError::Io(err) if err.raw_os_error() == Some(ELOOP) => {
                return ToolOutput::failure(format!(
                    "Error: ELOOP: too many symbolic links encountered, realpath '{shown}'"
                ))
                .into();
            }
            ResolveError::Io(err) => {
                return ToolOutput::failure(format!("Error: cannot resolve \"{shown}\": {err}"))
                    .into();
            }
        };
        ToolOutput::failure(format!("Error: cannot resolve \"{shown}\": {why}"))
            .with_error(ToolErrorCode::FsNotFound)
            .into()
    })
}

/// `ELOOP`: too many symbolic links.
const ELOOP: i32 = rustix::io::Errno::LOOP.raw_os_error();

#[cfg(test)]
mod tests {
    use super::*;

    fn ok<T, E: std::fmt::Debug>(result: Result<T, E>) -> T {
        result.unwrap_or_else(|err| panic!("{err:?}"))
    }

    #[test]
    fn the_display_path_keeps_dotdot_and_drops_dots_and_empty_segments() {
        let cwd = Path::new("/ws");
        assert_eq!(display_path(cwd, "./a//b/"), Path::new("/ws/a/b"));
        assert_eq!(display_path(cwd, "a/../b"), Path::new("/ws/a/../b"));
        assert_eq!(display_path(cwd, "/x/./y"), Path::new("/x/y"));
        assert_eq!(display_path(cwd, "~/x"), Path::new("/ws/~/x"));
    }

    #[test]
    fn links_and_dotdot_are_resolved_physically() {
        let dir = ok(tempfile::tempdir());
        let ws = ok(dir.path().canonicalize());
        ok(std::fs::create_dir_all(ws.join("e/sub")));
        ok(std::fs::write(ws.join("e/top.txt"), "t"));
        ok(std::fs::write(ws.join("notes.txt"), "n"));
        ok(std::os::unix::fs::symlink("e/sub", ws.join("ln_dir")));
        ok(std::os::unix::fs::symlink("nowhere", ws.join("dangling")));
        ok(std::os::unix::fs::symlink("loop", ws.join("loop")));
        let real = |raw: &str| ok(resolve_physical(&ws, raw)).real;
        assert_eq!(real("ln_dir/../top.txt"), ws.join("e/top.txt"));
        assert_eq!(real("ln_dir/new/x"), ws.join("e/sub/new/x"));
        assert_eq!(real("dangling"), ws.join("dangling"));
        ok(std::fs::create_dir(ws.join("d")));
        assert_eq!(real("d/../notes.txt"), ws.join("notes.txt"));
        assert!(matches!(
            resolve_physical(&ws, "notes.txt/x"),
            Err(ResolveError::NotDirectory)
        ));
        assert!(matches!(
            resolve_physical(&ws, "notes.txt/.."),
            Err(ResolveError::NotDirectory)
        ));
        assert!(matches!(
            resolve_physical(&ws, "nope/x/../y"),
            Err(ResolveError::CrossesMissing)
        ));
        assert!(matches!(
            resolve_physical(&ws, "loop/x"),
            Err(ResolveError::Io(err)) if err.raw_os_error() == Some(ELOOP)
        ));
    }
}
