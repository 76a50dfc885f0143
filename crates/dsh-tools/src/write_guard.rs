//! The rules `write` and `edit` enforce before touching a file: the
//! session's sandbox mode and read-before-write.

use crate::jobs::render::sandbox_marker;
use crate::output::Failure;
use crate::session::FileStamp;
use crate::{PermissionMode, ToolContext, paths};
use std::path::Path;

/// Refuses writes the session's mode does not allow: none in `read-only`,
/// only inside the workspace in `workspace-write`.
pub(crate) fn check_mode(ctx: &ToolContext, path: &Path) -> Result<(), Failure> {
    let shown = path.display();
    match ctx.mode {
        PermissionMode::DangerFullAccess => Ok(()),
        PermissionMode::ReadOnly => Err(Failure(format!(
            "Error: cannot write {shown}: the session is read-only, so no file may be changed.\n{}",
            sandbox_marker(ctx.mode)
        ))),
        PermissionMode::WorkspaceWrite => {
            if paths::is_within(path, &ctx.workspace) {
                Ok(())
            } else {
                Err(Failure(format!(
                    "Error: cannot write {shown}: it is outside the workspace {}, and files may only be changed inside it.\n{}",
                    ctx.workspace.display(),
                    sandbox_marker(ctx.mode)
                )))
            }
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
