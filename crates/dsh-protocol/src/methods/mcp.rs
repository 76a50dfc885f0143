//! MCP servers (dsh's extension): the `mcp.server` notification that tells
//! the client a configured server's state.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `mcp.server`: a configured MCP server changed state.
pub const MCP_SERVER: &str = "mcp.server";

/// A server's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum McpServerState {
    /// Its first start began.
    Starting,
    /// It answered the handshake and listed its tools (again, after
    /// `list_changed`).
    Ready,
    /// It could not start, or its connection ended; `error` says why,
    /// `retryInMs` when the next start may be tried.
    Failed,
    /// A start after a failure began; `attempt` counts the starts.
    Restarting,
}

/// Params of `mcp.server`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct McpServerParams {
    /// The server's configured name.
    pub name: String,
    /// Its new state.
    pub state: McpServerState,
    /// `ready`: the number of tools offered to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<usize>,
    /// `failed`: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `restarting`: which start this is (the first is 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u64>,
    /// `failed`: milliseconds before the next start may be tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_in_ms: Option<u64>,
}

impl McpServerParams {
    /// A notice of `name` entering `state`, with no detail yet.
    pub fn new(name: &str, state: McpServerState) -> Self {
        Self {
            name: name.to_owned(),
            state,
            tools: None,
            error: None,
            attempt: None,
            retry_in_ms: None,
        }
    }
}
