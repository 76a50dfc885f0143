//! Why a web search failed. Each message is the sentence after `Error: `
//! in the tool result; none carries the key.

use crate::LlmFailure;

/// Why a search gave no answer.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SearchError {
    /// No key is configured.
    #[error(
        "web search needs an API key: set DEEPSEEK_API_KEY in the runtime's environment (the SDK's api_key= sets it)"
    )]
    MissingCredential,
    /// The key cannot be sent in a header.
    #[error("the API key for web search contains characters outside printable ASCII")]
    InvalidCredential,
    /// The API answered with an HTTP error (after any retries).
    #[error("the search API answered HTTP {}: {}", .0.status.unwrap_or_default(), .0.message)]
    Http(LlmFailure),
    /// The request could not be sent or the answer not received.
    #[error("the search request failed: {0}")]
    Transport(String),
    /// The answer is not a Messages API reply.
    #[error("the search answer could not be read: {0}")]
    Unreadable(String),
    /// The answer is larger than the bound.
    #[error(
        "the search answer is larger than {limit} bytes (the bound set by DSH_WEB_SEARCH_MAX_BYTES)"
    )]
    TooLarge {
        /// The bound, in bytes.
        limit: u64,
    },
    /// The answer holds no `web_search_tool_result` block: no search ran.
    #[error(
        "the search answer holds no web_search_tool_result block, so no web search was run for the query"
    )]
    NoResults,
    /// Every result block of the answer is a search error.
    #[error("the web search failed with error code \"{0}\"")]
    ResultError(String),
}

/// Why the search client cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchSetupError {
    /// The base URL is unusable.
    #[error("{0}")]
    BaseUrl(String),
}
