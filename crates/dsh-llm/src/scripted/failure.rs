//! A scripted failure: what a reply or a search answer fails with.

use serde::Deserialize;

/// A scripted failure.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedError {
    /// Failure code (`SERVER`, `AUTH`, …).
    pub code: String,
    /// Failure message.
    pub message: String,
    /// HTTP status to report.
    #[serde(default)]
    pub status: Option<u16>,
    /// Retry-after to report, in milliseconds.
    #[serde(default)]
    pub retry_after_ms: Option<u64>,
    /// A literal `retry-after` header value (instead of `retry_after_ms`),
    /// read as a real provider's header is: `"0"`, `"-1"`, `"soon"`, a date.
    #[serde(default)]
    pub retry_after: Option<String>,
    /// Request id to report.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Provider error type for HTTP error bodies (`api_error`, …); derived
    /// from the status when absent.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}
