//! Path resolution and the workspace containment check of the file tools.

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
