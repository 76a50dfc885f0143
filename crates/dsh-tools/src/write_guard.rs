//! The rules `write` and `edit` enforce before touching a file: the
//! session's sandbox mode and read-before-write, and the [`Target`] through
//! which they then touch it.

use crate::beneath::{self, Root};
use crate::jobs::render::sandbox_marker;
use crate::output::Failure;
use crate::session::FileStamp;
use crate::{PermissionMode, ToolContext, paths};
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

    /// The model-facing error of a failed `action` (e.g. "write") on
    /// `path`: a path that leaves the workspace through a symbolic link
    /// gets its own explanation and the sandbox marker.
    pub(crate) fn failure(
        &self,
        ctx: &ToolContext,
        action: &str,
        path: &Path,
        err: &std::io::Error,
    ) -> Failure {
        let shown = path.display();
        match self {
            Target::Beneath { .. } if beneath::is_escape(err) => Failure(format!(
                "Error: cannot {action} {shown}: it leads out of the workspace {} through a symbolic link, and files may only be changed inside it, so nothing was written. Links used by write and edit must stay inside the workspace and be relative.\n{}",
                ctx.workspace.display(),
                sandbox_marker(ctx.mode)
            )),
            _ => Failure(format!("Error: cannot {action} {shown}: {err}")),
        }
    }
}

/// Refuses writes the session's mode does not allow: none in `read-only`,
/// only inside the workspace in `workspace-write`. Returns the [`Target`]
/// every later access to `path` must go through.
pub(crate) fn check_mode(ctx: &ToolContext, path: &Path) -> Result<Target, Failure> {
    let shown = path.display();
    let outside = || {
        Failure(format!(
            "Error: cannot write {shown}: it is outside the workspace {}, and files may only be changed inside it.\n{}",
            ctx.workspace.display(),
            sandbox_marker(ctx.mode)
        ))
    };
    match ctx.mode {
        PermissionMode::DangerFullAccess => Ok(Target::Anywhere),
        PermissionMode::ReadOnly => Err(Failure(format!(
            "Error: cannot write {shown}: the session is read-only, so no file may be changed.\n{}",
            sandbox_marker(ctx.mode)
        ))),
        PermissionMode::WorkspaceWrite => {
            if !paths::is_within(path, &ctx.workspace) {
                return Err(outside());
            }
            let root = Root::open(&ctx.workspace).map_err(|err| {
                Failure(format!(
                    "Error: cannot write {shown}: the workspace {} cannot be opened: {err}",
                    ctx.workspace.display()
                ))
            })?;
            let rel = root.relative(path).ok_or_else(outside)?;
            Ok(Target::Beneath { root, rel })
        }
    }
}

/// Refuses to change an existing file the session has not read, or that
/// changed on disk since the session last read or wrote it.
pub(crate) fn check_read_first(ctx: &ToolContext, path: &Path) -> Result<(), Failure> {
    let Some(current) = FileStamp::of(path) else {
        return Ok(());
    };
    let shown = path.display();
    match ctx.state.seen(path) {
        None => Err(Failure(format!(
            "Error: {shown} already exists and has not been read in this session. Read it first, then change it."
        ))),
        Some(seen) if seen != current => Err(Failure(format!(
            "Error: {shown} has changed on disk since this session last read it. Read it again before changing it."
        ))),
        Some(_) => Ok(()),
    }
}

/// The shared frame of a file-changing tool call: declines a request for
/// wider access (approvals fail closed), resolves `file_path` against the
/// session directory, and runs `change` off the async runtime. `what` names
/// the action in the error of a crashed blocking task.
pub(crate) async fn change_file(
    ctx: ToolContext,
    tool: &str,
    escalation: (Option<&str>, Option<&str>),
    file_path: &str,
    what: &str,
    change: impl FnOnce(&ToolContext, &Path) -> crate::ToolOutput + Send + 'static,
) -> crate::ToolOutput {
    let (permissions, justification) = escalation;
    if let Some(declined) =
        crate::approval::check_escalation(&ctx, tool, permissions, justification)
    {
        return declined;
    }
    let path = paths::resolve(&ctx.cwd, file_path);
    let task = tokio::task::spawn_blocking(move || change(&ctx, &path));
    task.await.unwrap_or_else(|err| {
        crate::ToolOutput::failure(format!("Error: {what} the file failed: {err}"))
    })
}
