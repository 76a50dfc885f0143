//! Everything a tool call may use besides its arguments.

use crate::{Approvals, PermissionMode, SessionTools, ToolHost};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The context of one tool call.
#[derive(Clone)]
pub struct ToolContext {
    /// The session making the call (the `owner` of the jobs it starts).
    pub session_id: String,
    /// The model's id for this call.
    pub call_id: String,
    /// The session's effective working directory; relative paths resolve
    /// against it.
    pub cwd: PathBuf,
    /// The sandbox root: the `cwd` of the session header.
    pub workspace: PathBuf,
    /// The session's file-system permission mode.
    pub mode: PermissionMode,
    /// Where tools append session events.
    pub host: Arc<dyn ToolHost>,
    /// Per-session tool state: files read, jobs, todos, persistent shell.
    pub state: Arc<SessionTools>,
    /// Cancelled when the turn is aborted; a running call stops early.
    pub cancel: CancellationToken,
    /// Who decides the call's requests for wider access (rules, grants,
    /// the client); the default decides as the official runtime does.
    pub approvals: Arc<Approvals>,
    /// Sees what a `bash` command writes while the call waits for it
    /// (streamed to a client that asked; `None`: nobody watches).
    pub output_tap: Option<Arc<dyn OutputTap>>,
    /// The client's editor, when `read`, `write` and `edit` go through it
    /// (`dsh acp` with a client offering `fs`); `None`: the disk only.
    pub editor: Option<Arc<dyn EditorFiles>>,
}

/// Text files as the client's editor has them: open buffers with their
/// unsaved changes. The file tools keep every rule of their own (the
/// sandbox mode, read-before-write, sizes, special files) and check them
/// on disk first; only the text read and written goes through the editor.
/// Called on a blocking thread.
pub trait EditorFiles: Send + Sync {
    /// The text of `path` as the editor has it; `None` when the editor
    /// does not read files, `Some(Err)` when it could not.
    fn read_text(&self, path: &Path) -> Option<Result<String, String>>;
    /// Writes `content` to `path` through the editor (which saves it);
    /// `None` when the editor does not write files, `Some(Err)` with the
    /// reason (worded for the model) when it could not.
    fn write_text(&self, path: &Path, content: &str) -> Option<Result<(), String>>;
}

/// Sees a foreground command's output as it is read.
pub trait OutputTap: Send + Sync {
    /// `data` was read from the command's file descriptor `fd` (1 stdout,
    /// 2 stderr). Called on a blocking thread, in order per descriptor.
    fn output(&self, fd: u32, data: &[u8]);
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("session_id", &self.session_id)
            .field("call_id", &self.call_id)
            .field("cwd", &self.cwd)
            .field("workspace", &self.workspace)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}
