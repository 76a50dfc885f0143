//! `dsh acp`: the Agent Client Protocol (ACP, version 1) on stdio, over
//! the same agent core, session store and sandbox as the SDK profile.
//!
//! The front end is a protocol adapter, like `dsh-server` is for the SDK
//! protocol: each ACP session is served by its own in-process SDK server
//! (a [`dsh_server::Server`] driven by a [`dsh_client::Client`] over an
//! in-memory pipe), and ACP requests become SDK requests: `session/prompt`
//! → `session/prompt`, `session/cancel` → `session/cancel`,
//! `session/load` → `session/resume` + `session/events`, `session/list` →
//! `session/list`; the server's `session.event` and `session.delta`
//! notifications become `session/update`s, its `approval/request`s
//! become `session/request_permission`. Turns, tools and storage are never
//! reimplemented here, and a session created over ACP is an ordinary
//! stored session that the SDK profile can resume (and the other way
//! round). The connection itself is the protocol's Rust SDK,
//! `agent-client-protocol`. `docs/acp.md` describes every method.
//!
//! # Layers
//!
//! Layer 1 is the bottom; a module uses only those in its layer or below
//! (`dsh-repo-checks`' layering test holds this list to the code):
//!
//! 1. `error`, `transport`, `content`, `mcp_servers`, `options`, `tools` —
//!    the error type; the bounded line transport; prompt content, MCP
//!    servers and settings in their SDK form; how tools show
//! 2. `updates`, `permission`, `host`, `editor` — notifications as session
//!    updates; approvals as permission requests; one session's in-process
//!    server; the client's editor as the file tools' source and sink
//! 3. `session` — one ACP session
//! 4. `front` — every method, over the connection's sessions
//! 5. `serve` — the connection

mod content;
mod editor;
mod error;
mod front;
mod host;
mod mcp_servers;
mod options;
mod permission;
mod serve;
mod session;
mod tools;
mod transport;
mod updates;

pub use error::AcpError;
pub use front::{AGENT_NAME, AcpConfig, PROTOCOL_VERSION};
pub use serve::serve;
pub use transport::MAX_LINE_BYTES;
