//! The `openai-compatible` provider: OpenAI-style chat completions, streamed.
//!
//! Works with DeepSeek's OpenAI-format endpoint (`https://api.deepseek.com`),
//! vLLM (`http://host:8000/v1`), llama.cpp server (`http://host:8080/v1`) and
//! Ollama (`http://host:11434/v1`). `POST {base}/chat/completions` with
//! `authorization: Bearer <key>` when a key is configured.
//!
//! Body: `model`, `messages`, `stream: true`,
//! `stream_options: {include_usage: true}`, `max_tokens`, `tools` (when
//! any), and `reasoning_effort` only when `initialize` gave an effort other
//! than `off` (servers that do not know the field are not sent it).

mod serialize;
mod stream;

use crate::LlmFailureCode;
use crate::http;
use crate::sse::SseEvent;
use crate::{
    ChunkSender, FinishReason, LlmFailure, ModelRequest, Provider, ReplyLimits, StreamChunk,
};
use std::sync::Arc;
use std::time::Duration;

/// Provider name.
pub const NAME: &str = "openai-compatible";
const LABEL: &str = "OpenAI-compatible chat completions";

/// How the provider reaches the server.
#[derive(Debug, Clone)]
pub struct OpenAiConfig {
    /// Validated base URL (no trailing `/`), e.g. `http://127.0.0.1:8000/v1`.
    pub base_url: String,
    /// Bearer token, if the server needs one.
    pub api_key: Option<String>,
    /// A stream silent this long fails with `TIMEOUT`.
    pub idle_timeout: Duration,
    /// Size caps on replies and error bodies.
    pub limits: ReplyLimits,
}

/// The chat-completions route.
pub struct OpenAiCompatible {
    config: Arc<OpenAiConfig>,
    /// Built at the first request, not at mount.
    client: http::LazyClient,
}

impl OpenAiCompatible {
    /// A provider over `config`; its HTTP client (and so the TLS roots)
    /// is built at its first request.
    pub fn new(config: OpenAiConfig) -> Self {
        Self {
            config: Arc::new(config),
            client: http::LazyClient::new(),
        }
    }
}

impl Provider for OpenAiCompatible {
    fn name(&self) -> &str {
        NAME
    }

    fn replay_kind(&self) -> &str {
        "openai-chat"
    }

    fn start(&self, request: ModelRequest, out: ChunkSender) {
        let body = match serialize::body(&request) {
            Ok(body) => body,
            Err(failure) => return fail(&out, failure),
        };
        let config = Arc::clone(&self.config);
        let client = self.client.clone();
        tokio::spawn(async move {
            // The bytes are made here; the value (which may stand for long
            // history text) is gone before the request is sent.
            let bytes = match body.into_bytes(LABEL) {
                Ok(bytes) => bytes,
                Err(failure) => return fail(&out, failure),
            };
            let client = match client.for_request(NAME) {
                Ok(client) => client,
                Err(failure) => return fail(&out, failure),
            };
            let mut post = client
                .post(format!("{}/chat/completions", config.base_url))
                .header("user-agent", http::USER_AGENT)
                .header("content-type", "application/json")
                .header("accept", "text/event-stream")
                .body(bytes);
            if let Some(key) = config
                .api_key
                .as_deref()
                .map(str::trim)
                .filter(|k| !k.is_empty())
            {
                post = post.bearer_auth(key);
            }
            let mut translator = stream::Translator::new(&request.route.model);
            let translate = |event: &SseEvent| {
                translator
                    .data(&event.data)
                    .map(|chunks| (chunks, translator.done()))
            };
            let closed = || {
                LlmFailure::new(
                    LlmFailureCode::StreamClosed,
                    format!("{LABEL} stream ended before [DONE]"),
                )
            };
            let streamed = http::stream_chunks(
                LABEL,
                post,
                http::Bounds {
                    idle: config.idle_timeout,
                    limits: config.limits,
                    max_tokens: request.route.max_tokens(),
                },
                &out,
                translate,
                closed,
            );
            if let Err(failure) = streamed.await {
                fail(&out, failure);
            }
        });
    }
}

fn fail(out: &ChunkSender, failure: LlmFailure) {
    let _ = out.send(StreamChunk::Finish {
        reason: FinishReason::Error { failure },
        replay_state: None,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_http_client_is_built_at_the_first_request_not_at_mount() {
        let provider = OpenAiCompatible::new(OpenAiConfig {
            base_url: http::failing_server(),
            api_key: None,
            idle_timeout: Duration::from_secs(10),
            limits: ReplyLimits::default(),
        });
        assert!(!provider.client.is_built(), "mounting builds no client");
        let failure = http::first_failure(&provider, NAME).await;
        assert_eq!(failure.code.to_string(), "SERVER", "{failure:?}");
        assert_eq!(failure.message, "down");
        assert!(provider.client.is_built(), "the first request built it");
    }
}
