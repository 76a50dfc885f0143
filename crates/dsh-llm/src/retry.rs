//! The retry policy applied to failed model attempts (§13.9).

use crate::{LlmFailure, Millis};
use serde_json::json;

/// Codes worth another attempt.
pub const RETRYABLE: [&str; 5] = [
    "EMPTY_RESPONSE",
    "RATE_LIMIT",
    "SERVER",
    "TIMEOUT",
    "TRANSPORT",
];

/// Exponential back-off with jitter; `normal` mode.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Retries after the first attempt.
    pub max_retries: u32,
    /// Delay before the first retry, in ms.
    pub initial_ms: u64,
    /// Largest delay, in ms; a longer provider retry-after gives up.
    pub cap_ms: u64,
    /// Relative jitter (0.1 = ±10 %).
    pub jitter: f64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_retries: 5,
            initial_ms: 500,
            cap_ms: 10_000,
            jitter: 0.1,
        }
    }
}

impl RetryPolicy {
    /// The `policyKey` of `llm/retry` events: a JSON string of the policy.
    pub fn policy_key(&self) -> String {
        json!([
            "normal",
            self.max_retries,
            RETRYABLE,
            self.initial_ms,
            self.cap_ms,
            self.jitter
        ])
        .to_string()
    }

    /// The delay before retry number `retry` (1-based) after `failure`, or
    /// `None` to give up: not retryable, retries exhausted, or a provider
    /// retry-after longer than the cap.
    pub fn delay_ms(&self, retry: u32, failure: &LlmFailure) -> Option<Millis> {
        if retry == 0 || retry > self.max_retries || !RETRYABLE.contains(&failure.code.as_str()) {
            return None;
        }
        if let Some(after) = failure.provider_retry_after_ms {
            return (after.get() <= self.cap_ms as f64).then_some(after);
        }
        let exponent = i32::try_from(retry - 1).unwrap_or(i32::MAX);
        let base = (self.initial_ms as f64 * 2f64.powi(exponent)).min(self.cap_ms as f64);
        let factor = 1.0 + self.jitter * (fastrand::f64() * 2.0 - 1.0);
        Millis::new(base * factor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LlmFailureCode;

    #[test]
    fn the_default_policy_matches_the_official_key_and_timeline() {
        let policy = RetryPolicy::default();
        assert_eq!(
            policy.policy_key(),
            r#"["normal",5,["EMPTY_RESPONSE","RATE_LIMIT","SERVER","TIMEOUT","TRANSPORT"],500,10000,0.1]"#
        );
        let server = LlmFailure::new(LlmFailureCode::Server, "x");
        for (retry, base) in [
            (1, 500.0),
            (2, 1000.0),
            (3, 2000.0),
            (4, 4000.0),
            (5, 8000.0),
        ] {
            let delay = policy.delay_ms(retry, &server).map_or(-1.0, Millis::get);
            assert!(
                (base * 0.9..=base * 1.1).contains(&delay),
                "retry {retry}: {delay}"
            );
        }
        assert_eq!(policy.delay_ms(6, &server), None);
        let capped = RetryPolicy {
            max_retries: 10,
            ..RetryPolicy::default()
        };
        assert!(capped.delay_ms(9, &server).map_or(0.0, Millis::get) <= 11_000.0);
    }

    #[test]
    fn non_retryable_codes_and_long_retry_after_give_up() {
        let policy = RetryPolicy::default();
        for code in [
            "AUTH",
            "STREAM_CLOSED",
            "MISSING_CREDENTIAL",
            "UNSUPPORTED_CONTENT",
            "INVALID_REQUEST",
        ] {
            assert_eq!(
                policy.delay_ms(1, &LlmFailure::new(code.into(), "x")),
                None,
                "{code}"
            );
        }
        let mut limited = LlmFailure::new(LlmFailureCode::RateLimit, "x");
        limited.provider_retry_after_ms = Millis::new(1500.0);
        assert_eq!(policy.delay_ms(1, &limited).map(Millis::get), Some(1500.0));
        limited.provider_retry_after_ms = Millis::new(60_000.0);
        assert_eq!(policy.delay_ms(1, &limited), None);
    }
}
