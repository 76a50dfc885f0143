//! The `deepseek-official` provider: DeepSeek's Anthropic-compatible
//! Messages API, streamed.
//!
//! `POST {base}/v1/messages` (base = `DEEPSEEK_BASE_URL`, default
//! `https://api.deepseek.com/anthropic`; a base already ending in `/v1` is
//! used as is) with `x-api-key`, `anthropic-version: 2023-06-01` and
//! `stream: true`. No session log, plugin inventory or user id is sent.

mod serialize;
mod stream;

use crate::LlmFailureCode;
use crate::http;
use crate::sse::SseEvent;
use crate::{
    ChunkSender, FinishReason, LlmFailure, ModelRequest, Provider, ReplyLimits, StreamChunk,
};
use dsh_session::attachments::AttachmentStore;
use std::sync::Arc;
use std::time::Duration;

/// Provider name.
pub const NAME: &str = "deepseek-official";
/// Base URL when `DEEPSEEK_BASE_URL` is unset.
pub const DEFAULT_BASE_URL: &str = "https://api.deepseek.com/anthropic";
const LABEL: &str = "DeepSeek Messages";

/// How the provider reaches the API.
#[derive(Debug, Clone)]
pub struct DeepSeekConfig {
    /// Validated base URL (no trailing `/`).
    pub base_url: String,
    /// The API key, if any (never logged or reported).
    pub api_key: Option<String>,
    /// A stream silent this long fails with `TIMEOUT`.
    pub idle_timeout: Duration,
    /// Size caps on replies and error bodies.
    pub limits: ReplyLimits,
    /// Where prompt images are stored.
    pub attachments: AttachmentStore,
}

impl DeepSeekConfig {
    fn messages_url(&self) -> String {
        if self.base_url.ends_with("/v1") {
            format!("{}/messages", self.base_url)
        } else {
            format!("{}/v1/messages", self.base_url)
        }
    }
}

/// DeepSeek's Messages API route.
pub struct DeepSeekOfficial {
    config: Arc<DeepSeekConfig>,
    /// Built at the first request, not at mount.
    client: http::LazyClient,
}

impl DeepSeekOfficial {
    /// A provider over `config`; its HTTP client (and so the TLS roots)
    /// is built at its first request.
    pub fn new(config: DeepSeekConfig) -> Self {
        Self {
            config: Arc::new(config),
            client: http::LazyClient::new(),
        }
    }
}

/// Checks a key the way the official runtime does: present, and printable
/// ASCII without spaces after trimming.
fn credential(api_key: Option<&str>) -> Result<String, LlmFailure> {
    match api_key.map(str::trim) {
        None | Some("") => Err(LlmFailure::new(
            LlmFailureCode::MissingCredential,
            format!(
                "{NAME}: no API key for provider route \"{NAME}\"; export DEEPSEEK_API_KEY in the runtime's environment (or pass api_key= to the SDK)"
            ),
        )),
        Some(key) if !key.bytes().all(|b| (0x21..=0x7e).contains(&b)) => Err(LlmFailure::new(
            LlmFailureCode::InvalidCredential,
            format!("{NAME}: the API key contains characters outside printable ASCII"),
        )),
        Some(key) => Ok(key.to_owned()),
    }
}

impl Provider for DeepSeekOfficial {
    fn name(&self) -> &str {
        NAME
    }

    fn replay_kind(&self) -> &str {
        "deepseek-messages"
    }

    fn start(&self, request: ModelRequest, out: ChunkSender) {
        let target = serialize::Target {
            accepts_images: request.route.model_info().accepts_images,
            attachments: &self.config.attachments,
        };
        let prepared = credential(self.config.api_key.as_deref())
            .and_then(|key| serialize::body(&request, &target).map(|body| (key, body)));
        let (key, body) = match prepared {
            Ok(prepared) => prepared,
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
                .post(config.messages_url())
                .header("user-agent", http::USER_AGENT)
                .header("content-type", "application/json")
                .header("accept", "text/event-stream")
                .header("x-api-key", key)
                .header("anthropic-version", "2023-06-01")
                .header("x-deepseek-harness-session-id", &request.session_id)
                .body(bytes);
            if request.compact {
                post = post.header("x-deepseek-harness-compact", "1");
            }
            let mut translator = stream::Translator::new(&request.route.model);
            let translate = |event: &SseEvent| {
                translator
                    .event(event)
                    .map(|chunks| (chunks, translator.done()))
            };
            let streamed = http::stream_chunks(
                LABEL,
                post,
                bounds(&config, &request),
                &out,
                translate,
                stream::stream_closed,
            );
            if let Err(failure) = streamed.await {
                fail(&out, failure);
            }
        });
    }
}

fn bounds(config: &DeepSeekConfig, request: &ModelRequest) -> http::Bounds {
    http::Bounds {
        idle: config.idle_timeout,
        limits: config.limits,
        max_tokens: request.route.max_tokens(),
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

    #[test]
    fn credentials_are_checked_before_any_io() {
        assert_eq!(
            credential(None)
                .err()
                .map(|f| f.code.to_string())
                .as_deref(),
            Some("MISSING_CREDENTIAL")
        );
        assert_eq!(
            credential(Some("  "))
                .err()
                .map(|f| f.code.to_string())
                .as_deref(),
            Some("MISSING_CREDENTIAL")
        );
        assert_eq!(
            credential(Some("sk-é"))
                .err()
                .map(|f| f.code.to_string())
                .as_deref(),
            Some("INVALID_CREDENTIAL")
        );
        assert_eq!(
            credential(Some("sk a"))
                .err()
                .map(|f| f.code.to_string())
                .as_deref(),
            Some("INVALID_CREDENTIAL")
        );
        assert_eq!(credential(Some(" sk-1 ")).ok().as_deref(), Some("sk-1"));
    }

    #[test]
    fn the_messages_url_appends_v1_once() {
        let config = |base: &str| DeepSeekConfig {
            base_url: base.into(),
            api_key: None,
            idle_timeout: Duration::from_secs(1),
            limits: ReplyLimits::default(),
            attachments: AttachmentStore::new(std::path::Path::new("/nonexistent")),
        };
        assert_eq!(
            config("http://127.0.0.1:8000").messages_url(),
            "http://127.0.0.1:8000/v1/messages"
        );
        assert_eq!(
            config("https://api.deepseek.com/anthropic").messages_url(),
            "https://api.deepseek.com/anthropic/v1/messages"
        );
        assert_eq!(config("http://h/v1").messages_url(), "http://h/v1/messages");
    }

    #[tokio::test]
    async fn the_http_client_is_built_at_the_first_request_not_at_mount() {
        let provider = DeepSeekOfficial::new(DeepSeekConfig {
            base_url: http::failing_server(),
            api_key: Some("sk-test".into()),
            idle_timeout: Duration::from_secs(10),
            limits: ReplyLimits::default(),
            attachments: AttachmentStore::new(std::path::Path::new("/nonexistent")),
        });
        assert!(!provider.client.is_built(), "mounting builds no client");
        let failure = http::first_failure(&provider, NAME).await;
        assert_eq!(failure.code.to_string(), "SERVER", "{failure:?}");
        assert_eq!(failure.message, "down");
        assert!(provider.client.is_built(), "the first request built it");
    }
}
