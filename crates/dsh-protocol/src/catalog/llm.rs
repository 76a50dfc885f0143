//! Model attempts: their failures, usage and retries.

use super::{LlmFailureCode, kind};
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A failed model attempt, as carried by `finish` chunks and `turn/end`.
///
/// Key order `message, code, status, providerRetryAfterMs, requestId`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema, thiserror::Error)]
#[serde(rename_all = "camelCase")]
#[error("{code}: {message}")]
pub struct LlmFailure {
    /// Human-readable cause (for HTTP errors, the provider's error message).
    pub message: String,
    /// Stable code.
    pub code: LlmFailureCode,
    /// HTTP status, for HTTP failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// Server-requested delay before a retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider_retry_after_ms: Option<Millis>,
    /// The provider's request id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

impl LlmFailure {
    /// A failure with only a message and a code.
    pub fn new(code: LlmFailureCode, message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            code,
            status: None,
            provider_retry_after_ms: None,
            request_id: None,
        }
    }
}

/// A delay in milliseconds (a provider's `retry-after`, a back-off): finite
/// and positive, with its fraction (`retry-after: 0.0004` is 0.4 ms, as the
/// official runtime reports it). Written as JavaScript writes numbers: an
/// integer when whole.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Millis(f64);

// Invariant: the value is never NaN (see `new`), so equality is total.
impl Eq for Millis {}

impl Millis {
    /// `ms` if it is finite and positive; a zero, negative or non-finite
    /// delay is no request at all.
    pub fn new(ms: f64) -> Option<Self> {
        (ms.is_finite() && ms > 0.0).then_some(Self(ms))
    }

    /// The delay in milliseconds.
    pub fn get(self) -> f64 {
        self.0
    }
}

/// Largest integer a JSON number carries exactly (`2^53`).
const EXACT_INTEGER_LIMIT: f64 = 9_007_199_254_740_992.0;

impl Serialize for Millis {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0.fract() == 0.0 && self.0 < EXACT_INTEGER_LIMIT {
            // Whole and below 2^53: the cast is exact.
            serializer.serialize_u64(self.0 as u64)
        } else {
            serializer.serialize_f64(self.0)
        }
    }
}

// Written by hand: the derive would describe the private `f64` field, not
// the positive number on the wire.
impl JsonSchema for Millis {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Millis".into()
    }

    fn schema_id() -> std::borrow::Cow<'static, str> {
        concat!(module_path!(), "::Millis").into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "A delay in milliseconds: a positive number, written as an integer when whole.",
            "type": "number",
            "exclusiveMinimum": 0
        })
    }
}

impl<'de> Deserialize<'de> for Millis {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let ms = f64::deserialize(deserializer)?;
        Self::new(ms)
            .ok_or_else(|| serde::de::Error::custom("retry-after must be a positive number"))
    }
}

/// Token usage of one model reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    /// Prompt tokens (not counting cache reads).
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_tokens: Option<u64>,
    /// Prompt tokens written to the provider's cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_tokens: Option<u64>,
    /// Of the generated tokens, reasoning tokens (OpenAI-compatible
    /// providers' `completion_tokens_details.reasoning_tokens`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// Sum of all of the above.
    pub total_tokens: u64,
}

impl Usage {
    /// Usage without cache figures; `totalTokens` = input + output.
    pub fn new(input_tokens: u64, output_tokens: u64) -> Self {
        Self {
            input_tokens,
            output_tokens,
            cache_read_tokens: None,
            cache_write_tokens: None,
            reasoning_tokens: None,
            total_tokens: input_tokens + output_tokens,
        }
    }
}

/// `llm/retry.mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RetryMode {
    /// The only mode this runtime retries in.
    Normal,
}

/// `llm/retry {retryId, turn, step, provider, mode, policyKey, retry,
/// maxRetries, delayMs, failure}`: a failed attempt will be retried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LlmRetry<S = String> {
    /// Shared by every retry of one step.
    pub retry_id: S,
    /// Turn number.
    pub turn: u32,
    /// Step number.
    pub step: u32,
    /// Provider of the failed attempt.
    pub provider: S,
    /// Retry mode.
    pub mode: RetryMode,
    /// The policy's identity (a JSON text).
    pub policy_key: S,
    /// This retry's number, from 1.
    pub retry: u32,
    /// The policy's limit.
    pub max_retries: u32,
    /// Back-off before the retry.
    pub delay_ms: Millis,
    /// Why the attempt failed.
    pub failure: LlmFailure,
}
kind!(LlmRetry<S>, "llm/retry");

/// `llm/retry-started {retryId, turn, step, retry}`: the back-off ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LlmRetryStarted<S = String> {
    /// As in the `llm/retry` before it.
    pub retry_id: S,
    /// Turn number.
    pub turn: u32,
    /// Step number.
    pub step: u32,
    /// This retry's number.
    pub retry: u32,
}
kind!(LlmRetryStarted<S>, "llm/retry-started");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millis_are_positive_and_written_as_javascript_writes_them() {
        assert_eq!(Millis::new(0.0), None);
        assert_eq!(Millis::new(-1.0), None);
        assert_eq!(Millis::new(f64::INFINITY), None);
        let mut failure = LlmFailure::new(LlmFailureCode::RateLimit, "slow down");
        failure.provider_retry_after_ms = Millis::new(1500.0);
        let json = serde_json::to_string(&failure).unwrap_or_default();
        assert_eq!(
            json,
            r#"{"message":"slow down","code":"RATE_LIMIT","providerRetryAfterMs":1500}"#
        );
        failure.provider_retry_after_ms = Millis::new(0.4);
        let json = serde_json::to_string(&failure).unwrap_or_default();
        assert!(json.ends_with(r#""providerRetryAfterMs":0.4}"#), "{json}");
        let back: LlmFailure = serde_json::from_str(&json).unwrap();
        assert_eq!(back, failure);
        assert!(
            serde_json::from_str::<LlmFailure>(
                r#"{"message":"m","code":"c","providerRetryAfterMs":0}"#
            )
            .is_err()
        );
    }
}
