use crate::{Route, StreamChunk, ToolSpec};
use dsh_protocol::message::KeptMessage;
use std::sync::Arc;
use tokio::sync::mpsc;

/// Where a provider sends its chunks. Dropping the receiver aborts the
/// attempt: the provider stops at its next send.
pub type ChunkSender = mpsc::UnboundedSender<StreamChunk>;

/// Everything a provider needs for one model attempt.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    /// The session making the request (sent as a header by HTTP providers).
    pub session_id: String,
    /// Provider, model, effort, token cap.
    pub route: Route,
    /// The system prompt text.
    pub system: String,
    /// The model-visible history, oldest first (no system message); shared
    /// with the agent, so building a request does not copy messages.
    pub messages: Vec<KeptMessage>,
    /// Tools the model may call.
    pub tools: Arc<Vec<ToolSpec>>,
    /// Whether this is a compaction's summary call (HTTP providers mark it
    /// with `x-deepseek-harness-compact: 1`).
    pub compact: bool,
}

/// A model provider.
pub trait Provider: Send + Sync {
    /// The provider name used in routes and events (`scripted`, …).
    fn name(&self) -> &str;

    /// The replay-state `response.kind` this provider writes.
    fn replay_kind(&self) -> &str;

    /// Starts one attempt. The provider sends chunks to `out` and always ends
    /// with a `finish` chunk (a failure is a `finish` with kind `error`).
    /// Must not block: long work runs on a spawned task.
    fn start(&self, request: ModelRequest, out: ChunkSender);
}
