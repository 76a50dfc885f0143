//! The Landlock ruleset of each restricted mode.

use crate::PermissionMode;
use landlock::{
    ABI, Access, AccessFs, BitFlags, CompatLevel, Compatible, RulesetAttr, RulesetCreatedAttr,
    RulesetStatus, path_beneath_rules,
};
use std::path::{Path, PathBuf};

/// The newest ABI whose rights the ruleset asks for (best effort above
/// [`MIN_LANDLOCK_ABI`](super::MIN_LANDLOCK_ABI), which is required).
const TARGET_ABI: ABI = ABI::V7;

/// Devices that commands may write in every restricted mode.
const WRITABLE_DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Restricts the calling thread (and everything it later executes) to
/// `mode`: read and execute everywhere, write only to the workspace and the
/// temporary directories (`workspace-write`) or to nothing but harmless
/// devices (`read-only`). Fails unless the kernel enforces the rights of
/// ABI 3 at least.
pub(crate) fn confine(mode: PermissionMode, workspace: &Path) -> Result<(), String> {
    let handled = handled_rights();
    let mut writable: Vec<PathBuf> = WRITABLE_DEVICES.iter().map(PathBuf::from).collect();
    if mode == PermissionMode::WorkspaceWrite {
        writable.push(workspace.to_path_buf());
        writable.extend(temp_dirs());
    }
    let status = landlock::Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V3))
        .and_then(|ruleset| {
            ruleset
                .set_compatibility(CompatLevel::BestEffort)
                .handle_access(handled)
        })
        .and_then(|ruleset| ruleset.create())
        .and_then(|created| {
            created.add_rules(path_beneath_rules(["/"], AccessFs::from_read(TARGET_ABI)))
        })
        .and_then(|created| created.add_rules(path_beneath_rules(&writable, handled)))
        .and_then(|created| created.restrict_self())
        .map_err(|err| format!("Landlock refused the ruleset: {err}"))?;
    if status.ruleset == RulesetStatus::NotEnforced {
        return Err("the kernel did not enforce the Landlock ruleset".to_owned());
    }
    if !status.no_new_privs {
        return Err("no_new_privs could not be set".to_owned());
    }
    Ok(())
}

/// Every file-system right up to [`TARGET_ABI`] except device ioctls, which
/// are no file write and are left alone.
fn handled_rights() -> BitFlags<AccessFs> {
    let mut rights = AccessFs::from_all(TARGET_ABI);
    rights.remove(AccessFs::IoctlDev);
    rights
}

/// The temporary directories writable in `workspace-write` mode.
fn temp_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
        PathBuf::from("/dev/shm"),
    ];
    let from_env = std::env::temp_dir();
    if !dirs.contains(&from_env) {
        dirs.push(from_env);
    }
    dirs
}
