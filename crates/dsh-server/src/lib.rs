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
//! Modules only use the ones below them: `serve` (the request loop) →
//! `method` (the table) → `handlers` → `server` (the session registry),
//! `publish`, `error`.

mod children;
mod error;
mod handlers;
mod method;
mod publish;
mod serve;
mod server;

pub use error::RpcError;
pub use serve::{Exit, serve};
pub use server::{Server, ServerConfig};
