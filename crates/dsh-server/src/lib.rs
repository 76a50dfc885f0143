//! The SDK JSON-RPC server.
//!
//! [`serve`] reads request lines and runs each one as the method table says:
//! which handler answers it and whether it is answered before the next line
//! is read, while the agent lock is held, concurrently (`session/wait`,
//! `session/resume`: answered whenever they settle) or last (`shutdown`).
//! Every response and notification is written through one
//! [`FrameWriter`](dsh_protocol::FrameWriter). Params are validated through
//! their [`dsh_protocol::methods`] types; every failure is one [`RpcError`],
//! mapped once to a `-32603` error frame.
//!
//! # Layers
//!
//! Layer 1 is the bottom; a module uses only those in its layer or below
//! (`dsh-repo-checks`' layering test holds this list to the code):
//!
//! 1. `publish`, `error`, `client` — the notifications agents publish; the
//!    one error type every request fails with; the requests the runtime
//!    sends its client
//! 2. `state` — what the server is built from, its committed route and its
//!    session registry
//! 3. `children` — the server as its agents' session host
//! 4. `server` — opens, resumes and shuts down sessions
//! 5. `handlers` — one module per group of methods
//! 6. `method` — the method table: which handler answers and how it is run
//! 7. `serve` — the request loop: reads lines and runs each request

mod children;
mod client;
mod error;
mod handlers;
mod method;
mod publish;
mod serve;
mod server;
mod state;

pub use error::RpcError;
pub use serve::{Exit, serve};
pub use server::Server;
pub use state::{HookSettings, McpSettings, ServerConfig};
