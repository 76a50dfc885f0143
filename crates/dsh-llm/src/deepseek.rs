//! The `deepseek-official` route.
//!
//! Credentials are checked exactly as the official runtime does (a missing or
//! malformed key fails the attempt before any I/O). The Messages API client
//! itself is not part of this build yet: an attempt with a valid key fails
//! with a clear `NO_ADAPTER` error instead of pretending to answer.

use crate::{ChunkSender, FinishReason, LlmFailure, ModelRequest, Provider, StreamChunk};

/// Provider name.
pub const NAME: &str = "deepseek-official";

/// DeepSeek's Messages API route.
#[derive(Debug)]
pub struct DeepSeekOfficial {
    api_key: Option<String>,
}

impl DeepSeekOfficial {
    /// A route using `api_key`.
    pub fn new(api_key: Option<String>) -> Self {
        Self { api_key }
    }

    fn failure(&self) -> LlmFailure {
        match self.api_key.as_deref().map(str::trim) {
            None | Some("") => LlmFailure::new(
                "MISSING_CREDENTIAL",
                format!(
                    "{NAME}: no API key for provider route \"{NAME}\"; export DEEPSEEK_API_KEY in the runtime's environment (or pass api_key= to the SDK)"
                ),
            ),
            Some(key) if !key.bytes().all(|b| (0x21..=0x7e).contains(&b)) => LlmFailure::new(
                "INVALID_CREDENTIAL",
                format!("{NAME}: the API key contains characters outside printable ASCII"),
            ),
            Some(_) => LlmFailure::new(
                "NO_ADAPTER",
                format!(
                    "{NAME}: this build has no HTTP model client yet; use provider \"scripted\" for offline runs"
                ),
            ),
        }
    }
}

impl Provider for DeepSeekOfficial {
    fn name(&self) -> &str {
        NAME
    }

    fn replay_kind(&self) -> &str {
        "deepseek-messages"
    }

    fn start(&self, _request: ModelRequest, out: ChunkSender) {
        let failure = self.failure();
        let _ = out.send(StreamChunk::Finish {
            reason: FinishReason::Error { failure },
            replay_state: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_checked_before_any_io() {
        assert_eq!(
            DeepSeekOfficial::new(None).failure().code,
            "MISSING_CREDENTIAL"
        );
        assert_eq!(
            DeepSeekOfficial::new(Some("  ".into())).failure().code,
            "MISSING_CREDENTIAL"
        );
        assert_eq!(
            DeepSeekOfficial::new(Some("sk-é".into())).failure().code,
            "INVALID_CREDENTIAL"
        );
    }
}
