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
//! [`scripted`]), `deepseek-official` (DeepSeek's Messages API, see
//! [`deepseek`]) and `openai-compatible` (chat completions, see [`openai`]).
//! Failed attempts are retried by the agent under a [`RetryPolicy`].
//! [`search`] is the web search client of the `web_search` tool.
//!
//! # Layers
//!
//! Layer 1 is the bottom; a module uses only those in its layer or below
//! (`dsh-repo-checks`' layering test holds this list to the code):
//!
//! 1. `sse`, `chunk`, `accumulate`, `record`, `provider`, `route`, `retry`,
//!    `limits` — server-sent events; the stream's chunks, the settled
//!    message and the durable stream record; the `Provider` trait, routes,
//!    the retry policy and reply limits
//! 2. `http`, `long` — the HTTP side the providers share (requests,
//!    streamed bodies, error bodies, `retry-after`); long texts written
//!    into request bodies
//! 3. `deepseek`, `openai`, `scripted`, `search` — the providers, and the
//!    web search client
//! 4. `registry` — mounts the provider a route names

mod accumulate;
mod chunk;
mod http;
mod limits;
mod long;
mod provider;
mod record;
mod registry;
mod retry;
mod route;
pub mod sse;

pub mod deepseek;
pub mod openai;
pub mod scripted;
pub mod search;

pub use accumulate::{Accumulator, Settled};
pub use chunk::{BlockType, FinishReason, StreamChunk};
pub use dsh_protocol::catalog::{LlmFailure, LlmFailureCode, Millis, ToolSpec, Usage};
pub use http::DEFAULT_IDLE_TIMEOUT;
pub use limits::{
    BYTES_PER_TOKEN, DEFAULT_ERROR_BODY_BYTES, ERROR_BODY_BYTES_VAR, REPLY_BYTES_VAR, REPLY_MARGIN,
    ReplyCap, ReplyLimits,
};
pub use provider::{ChunkSender, ModelRequest, Provider};
pub use record::StreamRecorder;
pub use registry::{ProviderEnv, ProviderRegistry, RouteError};
pub use retry::{RETRYABLE, RetryPolicy};
pub use route::{DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_TOKENS, EFFORTS, ModelInfo, Route};
