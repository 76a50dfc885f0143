use serde::{Deserialize, Serialize};

/// A failed model attempt, as carried by `finish` chunks and `turn/end`.
///
/// Key order `message, code, status, providerRetryAfterMs, requestId`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(rename_all = "camelCase")]
#[error("{code}: {message}")]
pub struct LlmFailure {
    /// Human-readable cause (for HTTP errors, the provider's error message).
    pub message: String,
    /// Stable code: `SERVER`, `AUTH`, `STREAM_CLOSED`, `UNSUPPORTED_CONTENT`…
    pub code: String,
    /// HTTP status, for HTTP failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Server-requested delay before a retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_retry_after_ms: Option<u64>,
    /// The provider's request id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl LlmFailure {
    /// A failure with only a message and a code.
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code: code.into(),
            status: None,
            provider_retry_after_ms: None,
            request_id: None,
        }
    }
}
