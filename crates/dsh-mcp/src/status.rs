//! Where a server's state changes are told (the runtime sends them to the
//! client as `mcp.server`).

pub use dsh_protocol::methods::{McpServerParams as ServerStatus, McpServerState as ServerState};

/// Receives every state change of every server of a hub.
pub trait StatusSink: Send + Sync {
    /// `status` happened.
    fn status(&self, status: &ServerStatus);
}

/// A sink that only logs (for hubs nobody watches).
pub struct LogOnly;

impl StatusSink for LogOnly {
    fn status(&self, status: &ServerStatus) {
        tracing::debug!("mcp server {}: {:?}", status.name, status.state);
    }
}
