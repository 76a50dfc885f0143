//! The Landlock ruleset of each restricted mode.

use super::{MIN_LANDLOCK_ABI, NETWORK_LANDLOCK_ABI, NetworkAccess, SCOPE_LANDLOCK_ABI};
use crate::PermissionMode;
use landlock::{
    ABI, Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};
use std::path::{Path, PathBuf};

/// The newest ABI whose rights the ruleset asks for (best effort above
/// [`MIN_LANDLOCK_ABI`], which is required).
const TARGET_ABI: ABI = ABI::V7;

/// The ABI whose rights a ruleset for `abi` (as the launcher decided it,
/// possibly capped) asks for: never above [`TARGET_ABI`].
fn ruleset_abi(abi: u8) -> ABI {
    match abi {
        0 => ABI::Unsupported,
        1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        6 => ABI::V6,
        _ => TARGET_ABI,
    }
}

/// Devices that commands may write in every restricted mode.
const WRITABLE_DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// The directories a command may write in `mode`: the workspace and the
/// temporary directories in `workspace-write`, none in `read-only`.
/// Existing ones only, canonical, so that they match the mount table.
pub(crate) fn writable_roots(mode: PermissionMode, workspace: &Path) -> Vec<PathBuf> {
    if mode != PermissionMode::WorkspaceWrite {
        return Vec::new();
    }
    let mut roots: Vec<PathBuf> = Vec::new();
    for dir in std::iter::once(workspace.to_path_buf()).chain(temp_dirs()) {
        if let Ok(real) = dir.canonicalize()
            && real.is_dir()
            && !roots.contains(&real)
        {
            roots.push(real);
        }
    }
    roots
}

/// Restricts the calling thread (and everything it later executes) to
/// `mode`: read and execute everywhere, write only to `writable` (from
/// [`writable_roots`]) and harmless devices; with [`NetworkAccess::Denied`]
/// no TCP `connect` or `bind`; where the kernel scopes them (ABI 6), no
/// signal and no abstract unix socket to a process outside the domain.
/// Asks for the rights of `abi` at most (the kernel's ABI, or lower under
/// `DSH_LANDLOCK_ABI_MAX`), so a capped launch gets exactly the ruleset an
/// older kernel would. Fails unless `abi` and the kernel give the file
/// rights of ABI 3 at least (and the network rights of ABI 4 when the
/// network is denied).
pub(crate) fn confine(writable: &[PathBuf], network: NetworkAccess, abi: u8) -> Result<(), String> {
    if abi < MIN_LANDLOCK_ABI {
        return Err(format!(
            "Landlock ABI {abi} is in use but at least ABI {MIN_LANDLOCK_ABI} is needed"
        ));
    }
    if network == NetworkAccess::Denied && abi < NETWORK_LANDLOCK_ABI {
        return Err(format!(
            "DSH_SANDBOX_NETWORK=off needs Landlock ABI {NETWORK_LANDLOCK_ABI} but ABI {abi} is in use"
        ));
    }
    let target = ruleset_abi(abi);
    let handled = handled_rights(target);
    let mut writable: Vec<PathBuf> = writable.to_vec();
    writable.extend(WRITABLE_DEVICES.iter().map(PathBuf::from));
    let status = landlock::Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V3))
        .and_then(|ruleset| match network {
            NetworkAccess::Denied => ruleset.handle_access(AccessNet::from_all(ABI::V4)),
            NetworkAccess::Open => Ok(ruleset),
        })
        .and_then(|ruleset| {
            ruleset
                .set_compatibility(CompatLevel::BestEffort)
                .handle_access(handled)
        })
        .and_then(|ruleset| {
            if abi >= SCOPE_LANDLOCK_ABI {
                ruleset.scope(Scope::from_all(ABI::V6))
            } else {
                Ok(ruleset)
            }
        })
        .and_then(|ruleset| ruleset.create())
        .and_then(|created| {
            created.add_rules(path_beneath_rules(["/"], AccessFs::from_read(target)))
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

/// Every file-system right up to `abi` except device ioctls, which are no
/// file write and are left alone.
fn handled_rights(abi: ABI) -> BitFlags<AccessFs> {
    let mut rights = AccessFs::from_all(abi);
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
