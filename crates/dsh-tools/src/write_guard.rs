//! The rules `write` and `edit` enforce before touching a file: the
//! session's sandbox mode and read-before-write (worded and classified as
//! the official runtime does), and the [`Target`] through which they then
//! touch it.

use crate::approval::Escalation;
use crate::beneath::{self, Root};
use crate::jobs::render::sandbox_marker;
use crate::output::Refusal;
use crate::paths::Resolved;
use crate::session::FileStamp;
use crate::{PermissionMode, ToolContext, ToolOutput, paths};
use dsh_protocol::catalog::ToolErrorCode;
use std::fs::File;
use std::path::{Path, PathBuf};

/// Where a file-changing tool may act: anywhere by path
/// (`danger-full-access`), or only beneath the workspace root through its
/// descriptor (`workspace-write`), so no link leads outside.
pub(crate) enum Target {
    /// Unrestricted access by path.
    Anywhere,
    /// Access beneath the workspace root; `rel` is the path relative to it.
    Beneath {
        /// The open workspace root.
        root: Root,
        /// The target relative to the root.
        rel: PathBuf,
    },
}

impl Target {
    /// Hands `content` for `path` to the client's editor (`None` when it
    /// does not write files). The editor writes by path, not through the
    /// workspace's descriptor, so beneath the workspace the path must still
    /// resolve to itself first: a directory swapped for a link since the
    /// checks (by a command running meanwhile) refuses the write rather
    /// than let the editor follow it out.
    pub(crate) fn hand_to_editor(
        &self,
        editor: &dyn crate::EditorFiles,
        path: &Path,
        content: &str,
    ) -> Option<Result<(), String>> {
        if let Target::Beneath { .. } = self
            && let Some(parent) = path.parent()
            && std::fs::canonicalize(parent).ok().as_deref() != Some(parent)
        {
            return Some(Err(format!(
                "{} no longer leads where it was checked; nothing was written",
                parent.display()
            )));
        }
        editor.write_text(path, content)
    }

    /// Creates the missing parent directories of `path`.
    pub(crate) fn create_parents(&self, path: &Path) -> std::io::Result<()> {
        match self {
            Target::Anywhere => match path.parent() {
                Some(parent) => std::fs::create_dir_all(parent),
                None => Ok(()),
            },
            Target::Beneath { root, rel } => root.create_parents(rel),
        }
    }

    /// Opens `path` for writing, creating or truncating it; `true` when
    /// this call created it.
    pub(crate) fn create_or_truncate(&self, path: &Path) -> std::io::Result<(File, bool)> {
        match self {
            Target::Anywhere => beneath::create_or_truncate(|flags, mode| {
                rustix::fs::open(path, flags, mode).map_err(Into::into)
            }),
            Target::Beneath { root, rel } => root.create_or_truncate(rel),
        }
    }

    /// Opens the existing file `path` for reading and writing, without
    /// blocking (a FIFO opens at once; the caller checks the type).
    pub(crate) fn open_existing(&self, path: &Path) -> std::io::Result<File> {
        match self {
            Target::Anywhere => rustix::fs::open(
                path,
                rustix::fs::OFlags::RDWR | crate::regular::OPEN_FLAGS,
                rustix::fs::Mode::empty(),
            )
            .map(File::from)
            .map_err(Into::into),
            Target::Beneath { root, rel } => root.open_existing(rel),
        }
    }

    /// The model-facing error of a failed `action` (e.g. "write") on the
    /// path shown as `shown`: a path that leaves the workspace through a
    /// symbolic link (swapped in after the path was resolved) is a sandbox
    /// denial.
    pub(crate) fn failure(
        &self,
        ctx: &ToolContext,
        action: &str,
        shown: &Path,
        err: &std::io::Error,
    ) -> ToolOutput {
        match self {
            Target::Beneath { .. } if beneath::is_escape(err) => sandbox_denied(ctx.mode),
            _ => ToolOutput::failure(format!(
                "Error: cannot {action} \"{}\": {err}",
                shown.display()
            )),
        }
    }
}

/// The official refusal of a change the session's sandbox mode does not
/// allow (`FS_SANDBOX_DENIED`): the sandbox marker, then the hint that the
/// call may be retried with `sandbox_permissions`.
pub(crate) fn sandbox_denied(mode: PermissionMode) -> ToolOutput {
    ToolOutput::failure(format!(
        "Error: {}\n[sandbox: escalation available — retry this exact operation once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]",
        sandbox_marker(mode)
    ))
    .with_error(ToolErrorCode::FsSandboxDenied)
}

/// Refuses writes the session's mode does not allow: none in `read-only`,
/// only inside the workspace in `workspace-write` (`path` is the resolved
/// path, links followed). Returns the [`Target`] every later access to
/// `path` must go through.
pub(crate) fn check_mode(ctx: &ToolContext, path: &Path) -> Result<Target, Refusal> {
    match ctx.mode {
        PermissionMode::DangerFullAccess => Ok(Target::Anywhere),
        PermissionMode::ReadOnly => Err(sandbox_denied(ctx.mode).into()),
        PermissionMode::WorkspaceWrite => {
            if !paths::is_within(path, &ctx.workspace) {
                return Err(sandbox_denied(ctx.mode).into());
            }
            let root = Root::open(&ctx.workspace).map_err(|err| -> Refusal {
                ToolOutput::failure(format!(
                    "Error: cannot write \"{}\": the workspace {} cannot be opened: {err}",
                    path.display(),
                    ctx.workspace.display()
                ))
                .into()
            })?;
            let rel = root
                .relative(path)
                .ok_or_else(|| Refusal::new(sandbox_denied(ctx.mode)))?;
            Ok(Target::Beneath { root, rel })
        }
    }
}

/// `Error: cannot modify "<path>": file has not been read …`
/// (`FS_NOT_OBSERVED`): `write` over an existing file, or `edit` of any
/// path, the session has not read.
pub(crate) fn not_observed(shown: &Path) -> ToolOutput {
    ToolOutput::failure(format!(
        "Error: cannot modify \"{}\": file has not been read — read the file, then retry",
        shown.display()
    ))
    .with_error(ToolErrorCode::FsNotObserved)
}

/// `Error: cannot <action> "<path>": file changed since it was read …`
/// (`FS_STALE_VERSION`).
pub(crate) fn changed_since_read(action: &str, shown: &Path) -> ToolOutput {
    ToolOutput::failure(format!(
        "Error: cannot {action} \"{}\": file changed since it was read — re-read the file, then retry",
        shown.display()
    ))
    .with_error(ToolErrorCode::FsStaleVersion)
}

/// Whether the file at `path` is no longer what the session saw.
pub(crate) fn changed(seen: FileStamp, path: &Path) -> bool {
    FileStamp::of(path) != Some(seen)
}

/// The shared frame of a file-changing tool call: decides a request for
/// wider access (see [`crate::approval`]; without an approval it is
/// declined), resolves `file_path` against the
/// session directory (links and `..` followed on the file system), and
/// runs `change` off the async runtime. `what` names the action in the
/// error of a crashed blocking task.
pub(crate) async fn change_file(
    mut ctx: ToolContext,
    tool: &str,
    escalation: Escalation<'_>,
    file_path: &str,
    what: &str,
    change: impl FnOnce(&ToolContext, &Resolved) -> ToolOutput + Send + 'static,
) -> ToolOutput {
    if let Some(declined) = crate::approval::check_escalation(&mut ctx, tool, escalation).await {
        return declined;
    }
    let file_path = file_path.to_owned();
    let task =
        tokio::task::spawn_blocking(move || match paths::resolve_file(&ctx.cwd, &file_path) {
            Ok(resolved) => change(&ctx, &resolved),
            Err(out) => *out,
        });
    task.await
        .unwrap_or_else(|err| ToolOutput::failure(format!("Error: {what} the file failed: {err}")))
}
