use dsh_agent::WorkingDirectoryError;
use dsh_llm::RouteError;
use dsh_protocol::methods::{ExtensionError, ParamError, SessionsParamError};
use dsh_session::LogUnwritable;
use dsh_session::attachments::AdmitError;
use dsh_session::store::{ForkError, StoreError};

/// Every way a request can fail. The `Display` text is the wire message,
/// which the Python SDK shows users verbatim.
#[derive(Debug, thiserror::Error)]
pub enum RpcError {
    /// No such method.
    #[error("unknown DeepSeek Harness SDK runtime method: {0}")]
    UnknownMethod(String),
    /// A method other than `initialize`/`shutdown` before `initialize`.
    #[error("SDK server is not initialized")]
    NotInitialized,
    /// A request after `shutdown` began.
    #[error("SDK server is shutting down")]
    ShuttingDown,
    /// A parameter failed validation; the text says which and how.
    #[error(transparent)]
    InvalidParams(#[from] ParamError),
    /// An extension's parameter failed validation.
    #[error(transparent)]
    InvalidExtension(#[from] ExtensionError),
    /// A `session/list` or `session/fork` parameter failed validation.
    #[error(transparent)]
    InvalidSessionsParams(#[from] SessionsParamError),
    /// `session/fork` cannot fork the session.
    #[error(transparent)]
    Fork(#[from] ForkError),
    /// A prompt's image block cannot be admitted.
    #[error(transparent)]
    Attachment(#[from] AdmitError),
    /// The route chosen at `initialize` cannot be mounted.
    #[error(transparent)]
    Route(#[from] RouteError),
    /// `session/resume` on a session open in this process.
    #[error("SDK session is already open or opening: {0}")]
    AlreadyOpen(String),
    /// `session/resume` on a session that does not exist.
    #[error("session \"{0}\" not found")]
    NotFound(String),
    /// `session/wait` on a session not open in this process.
    #[error("unknown SDK session: {0}")]
    UnknownSession(String),
    /// The session store refused (locked, corrupt, already exists, another
    /// workspace, a symbolic link or foreign entry, I/O…).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The session's log cannot be written (a full disk…): `session log of
    /// "<id>" cannot be written: <cause>`.
    #[error(transparent)]
    LogUnwritable(#[from] LogUnwritable),
    /// A result could not be serialised (a bug, reported rather than hidden).
    #[error("internal error: {0}")]
    Internal(String),
    /// A working-directory request failed.
    #[error(transparent)]
    WorkingDirectory(#[from] WorkingDirectoryError),
}
