//! The SDK JSON-RPC server.
//!
//! [`serve`] reads request lines, dispatches them to the method handlers and
//! writes every response and notification through one
//! [`FrameWriter`](dsh_protocol::FrameWriter). Requests are admitted in
//! arrival order; a request that waits (`session/wait`) runs concurrently, so
//! its response is written whenever it settles. Every failure is one
//! [`RpcError`], mapped once to a `-32603` error frame.

mod error;
mod handlers;
mod params;
mod publish;
mod server;

pub use error::RpcError;
pub use server::{Exit, Server, ServerConfig, serve};
