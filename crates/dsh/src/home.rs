//! `DSH_HOME` at launch: created private when missing (the sandbox denies
//! it to commands by path, so it must exist), and a warning when other
//! users can write it.

use dsh_session::private_fs::{PrivateFsError, create_dir_all};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Group- and world-write bits.
const OTHERS_WRITE: u32 = 0o022;

/// Creates `home` (and missing ancestors) with mode 0700 whatever the umask
/// when it does not exist, then warns on stderr (via `tracing`) when `home`
/// or its `sessions` directory is group- or world-writable: other users
/// could then plant or rewrite session logs.
pub fn prepare(home: &Path) -> Result<(), PrivateFsError> {
    create_dir_all(home)?;
    warn_if_shared("DSH_HOME", home);
    warn_if_shared("DSH_HOME sessions directory", &home.join("sessions"));
    Ok(())
}

/// Warns when the directory `path` (followed if it is a link) exists and is
/// group- or world-writable.
fn warn_if_shared(what: &str, path: &Path) {
    let Ok(meta) = fs::metadata(path) else {
        return;
    };
    let mode = meta.permissions().mode() & 0o7777;
    if mode & OTHERS_WRITE != 0 {
        tracing::warn!(
            "{what} {} is group- or world-writable (mode {mode:04o}); other users could tamper with its sessions: chmod 700 it",
            path.display()
        );
    }
}
