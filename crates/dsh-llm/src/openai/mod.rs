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

use crate::http::{self, read_sse};
use crate::{ChunkSender, FinishReason, LlmFailure, ModelRequest, Provider, StreamChunk};
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
}

/// The chat-completions route.
pub struct OpenAiCompatible {
    config: Arc<OpenAiConfig>,
    client: reqwest::Client,
}

impl OpenAiCompatible {
    /// A provider over `config`.
    pub fn new(config: OpenAiConfig, client: reqwest::Client) -> Self {
        Self {
            config: Arc::new(config),
            client,
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
            let mut post = client
                .post(format!("{}/chat/completions", config.base_url))
                .header("user-agent", http::USER_AGENT)
                .header("content-type", "application/json")
                .header("accept", "text/event-stream");
            if let Some(key) = config
                .api_key
                .as_deref()
                .map(str::trim)
                .filter(|k| !k.is_empty())
            {
                post = post.bearer_auth(key);
            }
            let response =
                match tokio::time::timeout(config.idle_timeout, post.body(body.to_string()).send())
                    .await
                {
                    Err(_) => {
                        let ms = config.idle_timeout.as_millis();
                        return fail(
                            &out,
                            LlmFailure::new(
                                "TIMEOUT",
                                format!("{LABEL} sent no response within {ms} ms"),
                            ),
                        );
                    }
                    Ok(Err(err)) => return fail(&out, http::transport_failure(LABEL, &err)),
                    Ok(Ok(response)) => response,
                };
            if !response.status().is_success() {
                let status = response.status().as_u16();
                let headers = response.headers().clone();
                let body = match tokio::time::timeout(config.idle_timeout, response.bytes()).await {
                    Ok(Ok(bytes)) => bytes.to_vec(),
                    _ => Vec::new(),
                };
                return fail(&out, http::http_failure(status, &headers, &body));
            }
            let mut translator = stream::Translator::new(&request.route.model);
            let mut failure = None;
            let read = read_sse(
                LABEL,
                response,
                config.idle_timeout,
                |event| match translator.data(&event.data) {
                    Ok(chunks) => {
                        chunks.into_iter().all(|chunk| out.send(chunk).is_ok())
                            && !translator.done()
                    }
                    Err(f) => {
                        failure = Some(f);
                        false
                    }
                },
            )
            .await;
            if let Some(f) = failure.or(read.err()) {
                return fail(&out, f);
            }
            if !translator.done() {
                fail(
                    &out,
                    LlmFailure::new(
                        "STREAM_CLOSED",
                        format!("{LABEL} stream ended before [DONE]"),
                    ),
                );
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
