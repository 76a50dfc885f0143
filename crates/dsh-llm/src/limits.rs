//! Size caps on what an HTTP provider may send back (issue 15, row 8).
//!
//! A reply's SSE body is capped per attempt at a size derived from the
//! request's `max_tokens`: [`BYTES_PER_TOKEN`] wire bytes per token plus
//! [`REPLY_MARGIN`]. A streamed token costs far less than that: its text is
//! a few bytes, and the event framing around it (one `content_block_delta`
//! or chat-completion chunk per token, the most verbose servers send) is
//! 110 to 250 bytes. An error body is read only up to a small bound before
//! it is mapped to a failure.

use crate::LlmFailure;
use crate::LlmFailureCode;

/// Wire bytes allowed per requested output token.
pub const BYTES_PER_TOKEN: u64 = 512;
/// Wire bytes allowed on top of `max_tokens × BYTES_PER_TOKEN`.
pub const REPLY_MARGIN: u64 = 1 << 20;
/// Default bound on the bytes of an HTTP error body that are read.
pub const DEFAULT_ERROR_BODY_BYTES: u64 = 64 << 10;
/// The variable that fixes the reply cap (bytes), whatever `max_tokens`.
pub const REPLY_BYTES_VAR: &str = "DSH_MAX_REPLY_BYTES";
/// The variable that changes the error-body bound (bytes).
pub const ERROR_BODY_BYTES_VAR: &str = "DSH_MAX_ERROR_BODY_BYTES";

/// The response size caps of the HTTP providers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyLimits {
    /// A fixed cap on a reply's body (`DSH_MAX_REPLY_BYTES`); `None`
    /// derives it from `max_tokens`.
    pub reply_bytes: Option<u64>,
    /// How much of an error body is read (`DSH_MAX_ERROR_BODY_BYTES`).
    pub error_body_bytes: u64,
}

impl Default for ReplyLimits {
    fn default() -> Self {
        Self {
            reply_bytes: None,
            error_body_bytes: DEFAULT_ERROR_BODY_BYTES,
        }
    }
}

impl ReplyLimits {
    /// The cap on one reply to a request for `max_tokens` tokens.
    pub fn reply_cap(&self, max_tokens: u64) -> ReplyCap {
        match self.reply_bytes {
            Some(bytes) => ReplyCap {
                bytes,
                derived_from: None,
            },
            None => ReplyCap {
                bytes: max_tokens
                    .saturating_mul(BYTES_PER_TOKEN)
                    .saturating_add(REPLY_MARGIN),
                derived_from: Some(max_tokens),
            },
        }
    }
}

/// The byte cap of one reply and where it comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyCap {
    /// Bytes of SSE body allowed.
    pub bytes: u64,
    /// The `max_tokens` it was derived from; `None` when set by the
    /// variable.
    pub derived_from: Option<u64>,
}

impl ReplyCap {
    /// The failure of a reply that went past the cap: `MALFORMED_RESPONSE`
    /// (a reply larger than any its token cap allows is not a reply; it is
    /// not retried, as a retry would stream the same again).
    pub fn exceeded(&self, label: &str) -> LlmFailure {
        let origin = match self.derived_from {
            Some(tokens) => format!(
                "max_tokens {tokens} × {BYTES_PER_TOKEN} bytes + {} MiB",
                REPLY_MARGIN >> 20
            ),
            None => format!("set by {REPLY_BYTES_VAR}"),
        };
        LlmFailure::new(
            LlmFailureCode::MalformedResponse,
            format!(
                "{label} reply exceeded its size cap of {} bytes ({origin}); set {REPLY_BYTES_VAR} to change it",
                self.bytes
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_follows_max_tokens_unless_fixed() {
        let limits = ReplyLimits::default();
        assert_eq!(limits.reply_cap(64).bytes, 64 * 512 + (1 << 20));
        assert_eq!(limits.reply_cap(u64::MAX).bytes, u64::MAX);
        let failure = limits.reply_cap(64).exceeded("X");
        assert_eq!(failure.code, "MALFORMED_RESPONSE");
        assert!(
            failure.message.contains("1081344 bytes (max_tokens 64")
                && failure.message.contains(REPLY_BYTES_VAR),
            "{}",
            failure.message
        );
        let fixed = ReplyLimits {
            reply_bytes: Some(10),
            ..limits
        };
        assert_eq!(fixed.reply_cap(64).bytes, 10);
        assert!(
            fixed
                .reply_cap(64)
                .exceeded("X")
                .message
                .contains("set by DSH_MAX_REPLY_BYTES")
        );
    }
}
