//! The project root: the nearest directory at or above the working
//! directory that holds a marker (`.git`), else the working directory
//! itself (nothing above it is searched then).

use std::path::{Path, PathBuf};

/// Names whose presence marks a project root (a directory, or the file of
/// a git worktree).
pub(crate) const MARKERS: [&str; 1] = [".git"];

/// Most directories searched upward for a marker, and so most directories
/// whose instructions apply.
pub(crate) const MAX_DEPTH: usize = 64;

/// A working directory placed in its project.
pub(crate) struct Project {
    /// The directories from the root (first) down to the working directory
    /// (last).
    pub dirs: Vec<PathBuf>,
}

/// Places `cwd` (absolute) in its project.
pub(crate) fn locate(cwd: &Path) -> Project {
    let up = cwd
        .ancestors()
        .take(MAX_DEPTH)
        .position(|dir| {
            MARKERS
                .iter()
                .any(|marker| dir.join(marker).symlink_metadata().is_ok())
        })
        .unwrap_or(0);
    let mut dirs: Vec<PathBuf> = cwd
        .ancestors()
        .take(up + 1)
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    Project { dirs }
}

impl Project {
    /// The project root.
    pub(crate) fn root(&self) -> &Path {
        // `locate` always keeps the working directory itself.
        self.dirs.first().map_or(Path::new("."), PathBuf::as_path)
    }

    /// The root as seen from the working directory: `""` when they are the
    /// same, else `..` once per level (`../..`).
    pub(crate) fn relative_root(&self) -> String {
        vec![".."; self.dirs.len().saturating_sub(1)].join("/")
    }

    /// `dir` relative to the root, `.` for the root itself.
    pub(crate) fn label(&self, dir: &Path) -> String {
        match dir.strip_prefix(self.root()) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
            _ => ".".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_root_is_the_nearest_marked_ancestor() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("a/b/c");
        std::fs::create_dir_all(&deep).unwrap();
        std::fs::create_dir(dir.path().join("a/.git")).unwrap();
        let project = locate(&deep);
        assert_eq!(project.root(), dir.path().join("a"));
        assert_eq!(project.dirs.len(), 3);
        assert_eq!(project.relative_root(), "../..");
        assert_eq!(project.label(&deep), "b/c");
        assert_eq!(project.label(project.root()), ".");
        // A worktree's `.git` is a file.
        std::fs::write(dir.path().join("a/b/.git"), "gitdir: x\n").unwrap();
        let project = locate(&deep);
        assert_eq!(project.root(), dir.path().join("a/b"));
        assert_eq!(project.relative_root(), "..");
    }

    #[test]
    fn without_a_marker_the_working_directory_is_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        let project = locate(&sub);
        assert_eq!(project.dirs, std::slice::from_ref(&sub));
        assert_eq!(project.relative_root(), "");
        assert_eq!(project.label(&sub), ".");
    }

    #[test]
    fn the_search_upward_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let mut deep = dir.path().to_path_buf();
        for _ in 0..MAX_DEPTH {
            deep.push("d");
        }
        std::fs::create_dir_all(&deep).unwrap();
        // The marker is MAX_DEPTH levels up: out of reach.
        assert_eq!(locate(&deep).dirs, std::slice::from_ref(&deep));
        let near = deep.parent().unwrap();
        assert_eq!(locate(near).dirs.len(), MAX_DEPTH);
    }
}
