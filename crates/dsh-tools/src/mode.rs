//! The session's file-system permission mode.

use std::fmt;
use std::str::FromStr;

/// File-system permission mode of a session (`DSH_PERMISSION_MODE`).
///
/// The variants are ordered from the most to the least restrictive, so a
/// request for a wider mode compares greater than the session's mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PermissionMode {
    /// No writes anywhere (besides harmless devices such as `/dev/null`).
    ReadOnly,
    /// Writes only inside the workspace (the session's `cwd`) and the
    /// temporary directories.
    WorkspaceWrite,
    /// No file-system restriction at all.
    DangerFullAccess,
}

impl PermissionMode {
    /// Every mode, most restrictive first.
    pub const ALL: [PermissionMode; 3] = [
        PermissionMode::ReadOnly,
        PermissionMode::WorkspaceWrite,
        PermissionMode::DangerFullAccess,
    ];

    /// The wire name (`read-only`, `workspace-write`, `danger-full-access`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::DangerFullAccess => "danger-full-access",
        }
    }

    /// Whether this mode restricts the file system at all.
    pub fn is_restricted(self) -> bool {
        self != Self::DangerFullAccess
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A permission mode name that is none of the three known ones.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("permission mode must be read-only, workspace-write or danger-full-access, got \"{0}\"")]
pub struct ParsePermissionModeError(pub String);

impl FromStr for PermissionMode {
    type Err = ParsePermissionModeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "read-only" => Ok(Self::ReadOnly),
            "workspace-write" => Ok(Self::WorkspaceWrite),
            "danger-full-access" => Ok(Self::DangerFullAccess),
            other => Err(ParsePermissionModeError(other.to_owned())),
        }
    }
}
