//! Finding the instruction files of a project and their digests.

use crate::project::fingerprint::Fingerprint;
use crate::project::root::Project;
use dsh_tools::{ReadRegularError, read_regular};
use sha1::{Digest, Sha1};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// File names read in every directory, in this order.
pub(crate) const CANDIDATES: [&str; 2] = ["AGENTS.md", "CLAUDE.md"];

/// Personal variants, read after [`CANDIDATES`] in the same directory.
pub(crate) const LOCAL_CANDIDATES: [&str; 2] = ["AGENTS.local.md", "CLAUDE.local.md"];

/// Largest instruction file read at all (a larger one is skipped).
pub(crate) const MAX_SOURCE_BYTES: u64 = 1024 * 1024;

/// An instruction file found in the project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    /// `<directory relative to the root>\0<file name>`: what identifies the
    /// file across steps.
    pub scope: String,
    /// The path relative to the root (`AGENTS.md`, `sub/CLAUDE.md`).
    pub path: String,
    /// The directory relative to the root, `.` for the root.
    pub dir: String,
    /// Where the file is.
    pub file: PathBuf,
    /// SHA-1 of its bytes, hex.
    pub digest: String,
}

/// The `scope` of `name` in the directory labelled `dir`.
pub(crate) fn scope(dir: &str, name: &str) -> String {
    format!("{dir}\0{name}")
}

/// The path of `name` in the directory labelled `dir`, relative to the
/// root.
pub(crate) fn path(dir: &str, name: &str) -> String {
    if dir == "." {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// Where a scope sorts: root first, deeper later; in a directory the
/// candidates in order, then the local variants.
pub(crate) fn order(scope: &str) -> (usize, &str, usize) {
    let (dir, name) = scope.split_once('\0').unwrap_or((".", scope));
    let depth = if dir == "." {
        0
    } else {
        dir.split('/').count()
    };
    let index = CANDIDATES
        .iter()
        .chain(LOCAL_CANDIDATES.iter())
        .position(|c| *c == name)
        .unwrap_or(usize::MAX);
    (depth, dir, index)
}

/// SHA-1 of `bytes` in lowercase hex.
pub(crate) fn digest(bytes: &[u8]) -> String {
    Sha1::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Digests of the files read before, by fingerprint, so that an unchanged
/// file is not read again at every step; and the paths already reported
/// as unreadable (one stderr line per path until it is fixed).
#[derive(Default)]
pub(crate) struct Cache {
    digests: HashMap<PathBuf, (Fingerprint, String)>,
    reported: HashSet<PathBuf>,
}

impl Cache {
    /// The instruction files of `project`, in message order.
    pub(crate) fn discover(&mut self, project: &Project) -> Vec<Found> {
        let mut found = Vec::new();
        let mut seen = HashSet::new();
        for dir in &project.dirs {
            let label = project.label(dir);
            for name in CANDIDATES.iter().chain(LOCAL_CANDIDATES.iter()) {
                let file = dir.join(name);
                if let Some(digest) = self.digest_of(&file) {
                    seen.insert(file.clone());
                    found.push(Found {
                        scope: scope(&label, name),
                        path: path(&label, name),
                        dir: label.clone(),
                        file,
                        digest,
                    });
                }
            }
        }
        self.digests.retain(|file, _| seen.contains(file));
        found
    }

    /// The digest of `file`, or `None` when nothing is there or it cannot
    /// be read (reported once on stderr).
    fn digest_of(&mut self, file: &Path) -> Option<String> {
        if let Err(err) = file.symlink_metadata() {
            if err.kind() != std::io::ErrorKind::NotFound {
                self.report(file, &err.to_string());
            }
            return None;
        }
        let (fingerprint, metadata) = match Fingerprint::at(file) {
            Ok(found) => found,
            Err(err) => {
                self.report(file, &err.to_string());
                return None;
            }
        };
        if !metadata.is_file() {
            self.report(file, "not a regular file");
            return None;
        }
        if let Some((known, digest)) = self.digests.get(file)
            && *known == fingerprint
        {
            return Some(digest.clone());
        }
        let bytes = self.read(file)?;
        let digest = digest(&bytes);
        self.digests
            .insert(file.to_owned(), (fingerprint, digest.clone()));
        Some(digest)
    }

    /// The bytes of `file`, or `None` (reported once) when it cannot be
    /// read or is larger than [`MAX_SOURCE_BYTES`].
    pub(crate) fn read(&mut self, file: &Path) -> Option<Vec<u8>> {
        match read_regular(file, MAX_SOURCE_BYTES) {
            Ok(bytes) => {
                self.reported.remove(file);
                Some(bytes)
            }
            Err(ReadRegularError::Io(err)) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => {
                self.report(file, &err.to_string());
                None
            }
        }
    }

    fn report(&mut self, file: &Path, why: &str) {
        if self.reported.insert(file.to_owned()) {
            tracing::warn!("instructions file {} skipped: {why}", file.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::root::locate;

    #[test]
    fn files_are_found_root_first_in_candidate_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
        for name in [
            "CLAUDE.local.md",
            "AGENTS.md",
            "CLAUDE.md",
            "sub/AGENTS.local.md",
            "sub/deeper/CLAUDE.md",
            "sub/deeper/x.md",
        ] {
            std::fs::write(root.join(name), name).unwrap();
        }
        // Not on the way to the working directory.
        std::fs::create_dir_all(root.join("other")).unwrap();
        std::fs::write(root.join("other/AGENTS.md"), "no").unwrap();
        let found = Cache::default().discover(&locate(&root.join("sub/deeper")));
        let paths: Vec<&str> = found.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "AGENTS.md",
                "CLAUDE.md",
                "CLAUDE.local.md",
                "sub/AGENTS.local.md",
                "sub/deeper/CLAUDE.md"
            ]
        );
        assert_eq!(found[3].scope, "sub\0AGENTS.local.md");
        assert_eq!(found[0].scope, ".\0AGENTS.md");
        assert_eq!(found[0].digest, digest(b"AGENTS.md"));
        let mut scopes: Vec<&str> = found.iter().map(|f| f.scope.as_str()).collect();
        scopes.sort_by_key(|s| order(s));
        assert_eq!(
            scopes,
            found.iter().map(|f| f.scope.as_str()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn unreadable_and_oversized_files_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("AGENTS.md")).unwrap();
        std::os::unix::fs::symlink(root.join("missing"), root.join("CLAUDE.md")).unwrap();
        let big = vec![b'x'; usize::try_from(MAX_SOURCE_BYTES).unwrap() + 1];
        std::fs::write(root.join("AGENTS.local.md"), big).unwrap();
        std::fs::write(root.join("CLAUDE.local.md"), "ok").unwrap();
        let mut cache = Cache::default();
        let found = cache.discover(&locate(root));
        assert_eq!(
            found.iter().map(|f| f.path.as_str()).collect::<Vec<_>>(),
            ["CLAUDE.local.md"]
        );
        assert_eq!(cache.reported.len(), 3);
    }

    #[test]
    fn a_changed_file_gets_a_new_digest() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("AGENTS.md");
        std::fs::write(&file, "one").unwrap();
        let mut cache = Cache::default();
        let project = locate(dir.path());
        assert_eq!(cache.discover(&project)[0].digest, digest(b"one"));
        std::fs::write(&file, "two!").unwrap();
        assert_eq!(cache.discover(&project)[0].digest, digest(b"two!"));
        assert_eq!(digest(b""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    }
}
