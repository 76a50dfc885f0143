//! The method table: every client → runtime method, how it runs and which
//! handler answers it.

use crate::error::RpcError;
use crate::handlers::{history, initialize, prompt, session, sessions, working_directory};
use crate::server::Server;
use dsh_protocol::Request;
use dsh_protocol::methods::{
    EmptyResult, INITIALIZE, SESSION_CANCEL, SESSION_EVENTS, SESSION_PROMPT, SESSION_RESUME,
    SESSION_USAGE, SESSION_WAIT, SHUTDOWN, WORKING_DIRECTORY_GET, WORKING_DIRECTORY_SET,
};
use dsh_protocol::methods::{SESSION_FORK, SESSION_LIST};

/// A client → runtime method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `initialize`.
    Initialize,
    /// `session/prompt`.
    Prompt,
    /// `session/resume`.
    Resume,
    /// `session/wait`.
    Wait,
    /// `session/working-directory/get`.
    GetWorkingDirectory,
    /// `session/working-directory/set`.
    SetWorkingDirectory,
    /// `shutdown`.
    Shutdown,
    /// `session/cancel` (dsh's extension).
    Cancel,
    /// `session/events` (dsh's extension).
    Events,
    /// `session/list` (dsh's extension).
    List,
    /// `session/fork` (dsh's extension).
    Fork,
    /// `session/usage` (dsh's extension).
    Usage,
}

/// How the request loop runs a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunMode {
    /// Handled and answered before the next line is read.
    Inline,
    /// Handled before the next line is read; the handler queues the answer
    /// itself while it holds the agent lock, so the receipt precedes the
    /// turn's events.
    Acknowledged,
    /// Spawned: later requests are served meanwhile. Answered before the
    /// request loop returns.
    Concurrent,
    /// Ends the request loop; answered once the server has shut down and
    /// every concurrent request is answered.
    Shutdown,
}

impl Method {
    /// The method called `name`, or `unknown DeepSeek Harness SDK runtime
    /// method: <name>`.
    pub fn parse(name: &str) -> Result<Self, RpcError> {
        Ok(match name {
            INITIALIZE => Self::Initialize,
            SESSION_PROMPT => Self::Prompt,
            SESSION_RESUME => Self::Resume,
            SESSION_WAIT => Self::Wait,
            WORKING_DIRECTORY_GET => Self::GetWorkingDirectory,
            WORKING_DIRECTORY_SET => Self::SetWorkingDirectory,
            SHUTDOWN => Self::Shutdown,
            SESSION_CANCEL => Self::Cancel,
            SESSION_EVENTS => Self::Events,
            SESSION_LIST => Self::List,
            SESSION_FORK => Self::Fork,
            SESSION_USAGE => Self::Usage,
            other => return Err(RpcError::UnknownMethod(other.to_owned())),
        })
    }

    /// How requests of this method run.
    pub fn run_mode(self) -> RunMode {
        match self {
            // A cancel is handled before the next line is read: a prompt
            // sent after it is not cancelled by it.
            Self::Initialize
            | Self::GetWorkingDirectory
            | Self::SetWorkingDirectory
            | Self::Cancel => RunMode::Inline,
            Self::Prompt => RunMode::Acknowledged,
            // A wait lasts until the session is idle; a resume reads a log
            // of any size. Neither may hold up the requests after it.
            Self::Resume | Self::Wait | Self::Events | Self::Usage => RunMode::Concurrent,
            // Both read the store off the loop: the logs of a fork, every
            // session directory of a listing.
            Self::List | Self::Fork => RunMode::Concurrent,
            Self::Shutdown => RunMode::Shutdown,
        }
    }
}

/// Handles `request` as `method` and queues its answer.
pub async fn dispatch(server: &Server, method: Method, request: Request) {
    let Request { id, params, .. } = request;
    match method {
        Method::Initialize => server.respond(&id, initialize::handle(server, params)),
        Method::Prompt => prompt::handle(server, &id, params),
        Method::Resume => server.respond(&id, session::resume(server, params).await),
        Method::Wait => session::wait(server, params, |result| server.respond(&id, result)).await,
        Method::GetWorkingDirectory => server.respond(&id, working_directory::get(server, params)),
        Method::SetWorkingDirectory => server.respond(&id, working_directory::set(server, params)),
        Method::Cancel => server.respond(&id, session::cancel(server, params)),
        Method::Events => server.respond(&id, history::events(server, params).await),
        Method::List => server.respond(&id, sessions::list(server, params).await),
        Method::Fork => server.respond(&id, sessions::fork(server, params).await),
        Method::Usage => server.respond(&id, history::usage(server, params).await),
        // The request loop has shut the server down.
        Method::Shutdown => server.respond(&id, Ok(EmptyResult {})),
    }
}
