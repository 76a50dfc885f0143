//! The one error type of the ACP front end, mapped once to a JSON-RPC
//! error of the ACP connection.

use agent_client_protocol::{Error as WireError, ErrorCode};
use dsh_client::ClientError;

/// Why an ACP request failed.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// The params do not fit the method (`-32602`).
    #[error("{0}")]
    InvalidParams(String),
    /// No session of this connection has the id (`-32602`, as a bad
    /// `sessionId` param).
    #[error("unknown session: {0}")]
    UnknownSession(String),
    /// The SDK server refused the request: its message as is (`-32603`).
    #[error("{0}")]
    Runtime(String),
    /// The turn a prompt started failed: the model's error (`-32603`).
    #[error("turn failed: {0}")]
    TurnFailed(String),
    /// The in-process SDK server could not be started or stopped answering.
    #[error("the runtime stopped: {0}")]
    Stopped(String),
}

impl AcpError {
    /// The JSON-RPC error the client gets, worded as the official `acp`
    /// profile words its errors (`Invalid params: …`, `Internal error: …`).
    pub fn to_wire(&self) -> WireError {
        match self {
            Self::InvalidParams(_) | Self::UnknownSession(_) => {
                WireError::new(ErrorCode::INVALID_PARAMS, format!("Invalid params: {self}"))
            }
            Self::Runtime(_) | Self::TurnFailed(_) | Self::Stopped(_) => {
                WireError::new(ErrorCode::INTERNAL_ERROR, format!("Internal error: {self}"))
            }
        }
    }
}

impl From<ClientError> for AcpError {
    fn from(err: ClientError) -> Self {
        match err {
            ClientError::Rpc { message, .. } => Self::Runtime(message),
            other => Self::Stopped(other.to_string()),
        }
    }
}

impl From<AcpError> for WireError {
    fn from(err: AcpError) -> Self {
        err.to_wire()
    }
}
