//! MCP servers as tool sources for the DeepSeek Harness runtime, on the
//! official Rust SDK for the Model Context Protocol (`rmcp`).
//!
//! A runtime holds one [`McpHub`]; each session asks it for the servers
//! its configuration names ([`McpHub::session`]) and gets the runtime's
//! server of the same configuration when there is one. A server starts on
//! the first step that needs its tools ([`SessionServers::roster`]), is
//! restarted with back-off after it dies, and is stopped (its whole
//! process group killed) by [`McpHub::shutdown`].
//!
//! Tools appear as `mcp__<server>__<tool>`; a call ([`McpTool::call`]) is
//! checked against the tool's schema, passes the approval path, is bounded
//! by the server's timeout and the turn's cancellation, and its result is
//! mapped to tool-result blocks under the built-in tools' size caps. A
//! stdio server's output is held to the protocol by a reader that refuses
//! an overlong or non-JSON line (rmcp's own line reader has no bound).
//!
//! Configuration comes from `initialize` ([`config::from_list`]) and from
//! `.mcp.json` files in Claude Code's format ([`config::from_file_map`]).
//!
//! # Layers
//!
//! Layer 1 is the bottom; a module uses only those in its layer or below
//! (`dsh-repo-checks`' layering test holds this list to the code):
//!
//! 1. `config`, `bounded`, `status`, `tools`, `result` — configuration;
//!    the bounded reader of a server's output; state notices; tool specs;
//!    result mapping
//! 2. `connect` — starting a connection
//! 3. `server` — one server's life
//! 4. `hub` — the servers of a runtime and of a session

mod bounded;
pub mod config;
mod connect;
mod hub;
mod result;
mod server;
mod status;
mod tools;

pub use config::{ConfigError, ServerConfig, Source, Transport};
pub use hub::{HubError, McpHub, McpRoster, McpTool, SessionServers};
pub use result::ResultStore;
pub use server::{CallError, McpServer, ServerOptions};
pub use status::{LogOnly, ServerState, ServerStatus, StatusSink};
pub use tools::{RemoteTool, full_name};

/// Default largest message a stdio server may send
/// (`DSH_MCP_MESSAGE_MAX_BYTES` overrides).
pub const DEFAULT_MESSAGE_MAX_BYTES: usize = 16 * 1024 * 1024;

/// The variable that overrides [`DEFAULT_MESSAGE_MAX_BYTES`].
pub const MESSAGE_MAX_BYTES_VAR: &str = "DSH_MCP_MESSAGE_MAX_BYTES";

/// Default limit of a server's start (process, handshake, tool list).
pub const DEFAULT_START_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);
