//! Model providers.
//!
//! A [`Provider`] turns a [`ModelRequest`] into a stream of
//! [`StreamChunk`]s (`block-start`, deltas, `block-end`, `usage`, `finish`).
//! The agent timestamps each chunk, feeds it to a [`StreamRecorder`] (the
//! compact durable `stream` array of `assistant/message`) and an
//! [`Accumulator`] (the settled message: content, usage, replay state, or an
//! [`LlmFailure`]).
//!
//! Providers built in: `scripted` (offline and deterministic, see
//! [`scripted`]) and `deepseek-official`.

mod accumulate;
mod chunk;
mod deepseek;
mod failure;
mod provider;
mod record;
mod registry;
mod route;

pub mod scripted;

pub use accumulate::{Accumulator, Settled};
pub use chunk::{BlockType, FinishReason, StreamChunk, Usage};
pub use failure::LlmFailure;
pub use provider::{ChunkSender, ModelRequest, Provider, ToolSpec};
pub use record::StreamRecorder;
pub use registry::{ProviderRegistry, RouteError};
pub use route::{DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOKENS, EFFORTS, ModelInfo, Route};
