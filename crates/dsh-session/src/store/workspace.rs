//! Which workspace a stored session resumes in: [`resume_workspace`].

use super::error::StoreError;
use super::header::SessionHeader;
use super::layout::SessionLocation;
use super::names::project_key;
use std::fs;
use std::path::{Path, PathBuf};

/// The workspace (the sandbox root) a stored session resumes in: the
/// runtime's `initialize` cwd, once it is checked against the log.
///
/// The header's `cwd` is not trusted as the workspace: anyone who can
/// rewrite the log (a model that could write `DSH_HOME`) could otherwise
/// widen the sandbox, to `/` say. Instead:
///
/// * the header's `cwd` must belong in the project directory the log was
///   found in (`project_key` of it equals the `--<key>--` directory name,
///   `_no-cwd` without a cwd); otherwise the log is corrupt
///   ([`StoreError::Corrupt`], line 1);
/// * `cwd` must equal the header's `cwd`, as given or once both are
///   canonicalised (symbolic links, `..`); otherwise
///   [`StoreError::WorkspaceMismatch`] tells the client which cwd to
///   initialize with;
/// * a header without `cwd` resumes in `cwd`.
///
/// The official runtime lets the stored `cwd` win (§5.3); this is a
/// deliberate difference.
pub fn resume_workspace(
    location: &SessionLocation,
    header: &SessionHeader,
    cwd: &Path,
) -> Result<PathBuf, StoreError> {
    let stored = header.cwd.as_deref().map(Path::new);
    let expected = project_key(stored);
    let actual = location
        .dir
        .parent()
        .and_then(Path::file_name)
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    if expected != actual {
        let reason = match &header.cwd {
            Some(stored) => format!(
                "the header cwd \"{stored}\" belongs in the project directory {expected}, but the log is in {actual}"
            ),
            None => format!(
                "the header has no cwd (project directory {expected}), but the log is in {actual}"
            ),
        };
        return Err(StoreError::corrupt(&location.file, 1, reason));
    }
    match stored {
        None => Ok(cwd.to_path_buf()),
        Some(stored) if stored == cwd || same_directory(stored, cwd) => Ok(cwd.to_path_buf()),
        Some(stored) => Err(StoreError::WorkspaceMismatch {
            id: location.id.clone(),
            stored: stored.to_path_buf(),
            given: cwd.to_path_buf(),
        }),
    }
}

/// Whether both paths exist and canonicalise to the same directory.
fn same_directory(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Encoding, SessionStore};
    use std::os::unix::fs::symlink;

    fn header(cwd: Option<&Path>) -> SessionHeader {
        SessionHeader::root("s", 1, cwd.map(|c| c.to_string_lossy().into_owned()))
    }

    fn check(stored: Option<&Path>, dir_cwd: Option<&Path>, cwd: &Path) -> Result<PathBuf, String> {
        let location = SessionStore::new("/h").location_for(dir_cwd, "s", Encoding::Plain);
        resume_workspace(&location, &header(stored), cwd).map_err(|e| e.to_string())
    }

    #[test]
    fn the_initialize_cwd_is_used_when_it_matches() {
        let root = tempfile::tempdir().unwrap();
        let ws = root.path().join("ws");
        fs::create_dir(&ws).unwrap();
        let link = root.path().join("link");
        symlink(&ws, &link).unwrap();
        let dotted = root.path().join("ws/../ws");
        assert_eq!(check(Some(&ws), Some(&ws), &ws), Ok(ws.clone()));
        // A symlinked or unnormalised spelling of the same directory: the
        // initialize cwd, as given, is the workspace.
        assert_eq!(check(Some(&ws), Some(&ws), &link), Ok(link.clone()));
        assert_eq!(check(Some(&link), Some(&link), &ws), Ok(ws.clone()));
        assert_eq!(check(Some(&ws), Some(&ws), &dotted), Ok(dotted));
        // Equal as given, even when it no longer exists.
        let gone = Path::new("/nonexistent/ws");
        assert_eq!(check(Some(gone), Some(gone), gone), Ok(gone.to_path_buf()));
        // No stored cwd: the initialize cwd.
        assert_eq!(check(None, None, &ws), Ok(ws.clone()));
    }

    #[test]
    fn another_workspace_is_refused_with_the_right_cwd() {
        let err = check(
            Some(Path::new("/home/user/ws")),
            Some(Path::new("/home/user/ws")),
            Path::new("/home/user/other"),
        );
        assert_eq!(
            err,
            Err("session \"s\" belongs to the workspace /home/user/ws, but this runtime was initialized with /home/user/other; initialize with that cwd to resume it".to_owned())
        );
    }

    #[test]
    fn a_header_cwd_outside_its_project_directory_is_corrupt() {
        let err = check(
            Some(Path::new("/")),
            Some(Path::new("/home/user/ws")),
            Path::new("/"),
        );
        assert_eq!(
            err,
            Err("corrupt session log: /h/sessions/--home-user-ws--/s/session.v4.jsonl: line 1: the header cwd \"/\" belongs in the project directory --root--, but the log is in --home-user-ws--".to_owned())
        );
        let err = check(None, Some(Path::new("/w")), Path::new("/w"));
        assert_eq!(
            err,
            Err("corrupt session log: /h/sessions/--w--/s/session.v4.jsonl: line 1: the header has no cwd (project directory _no-cwd), but the log is in --w--".to_owned())
        );
        assert!(check(Some(Path::new("/w")), None, Path::new("/w")).is_err());
    }
}
