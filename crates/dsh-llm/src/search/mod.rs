//! The web search client: DeepSeek's Messages API with its native
//! `web_search` server tool, as the `web_search` tool uses it.
//!
//! One query is one `POST {base}/messages` (base =
//! `DSH_WEB_SEARCH_BASE_URL`, else the official runtime's
//! `DEEPSEEK_SEARCH_BASE_URL`, else [`DEFAULT_BASE_URL`]; the chat
//! provider's `DEEPSEEK_BASE_URL` is not used, as upstream) with
//! `x-api-key` and `authorization: Bearer` (the key of
//! `DEEPSEEK_API_KEY`), `anthropic-version: 2023-06-01` and
//! `accept: application/json`; the body asks the search model
//! ([`DEFAULT_MODEL`], thinking off, 4096 tokens) to search the query with
//! the `web_search_20250305` tool (at most 5 uses). The answer is one JSON
//! message (not a stream), read up to [`SearchConfig::max_bytes`]; its
//! `web_search_tool_result` blocks give the results and its text blocks'
//! citations the passages cited ([`SearchAnswer`]).
//!
//! Failed attempts are retried under the chat provider's [`RetryPolicy`]
//! (the same codes, back-off and retry-after rule); the key is sent only
//! in headers and never appears in errors or logs.

mod answer;
mod error;

pub use answer::{Citation, SearchAnswer, SearchHit};
pub use error::{SearchError, SearchSetupError};

use crate::{LlmFailure, LlmFailureCode, RetryPolicy, http};
use futures_util::StreamExt;
use reqwest::header::HeaderValue;
use serde_json::{Value, json};
use std::time::Duration;

/// The search API's root when neither `DSH_WEB_SEARCH_BASE_URL` nor
/// `DEEPSEEK_SEARCH_BASE_URL` is set: requests
/// go to `{base}/messages`.
pub const DEFAULT_BASE_URL: &str = "https://api.deepseek.com/anthropic/v1";
/// The model that runs the searches unless `DSH_WEB_SEARCH_MODEL` says
/// otherwise.
pub const DEFAULT_MODEL: &str = "deepseek-v4-flash";
/// The `anthropic-version` header (and the event's `apiVersion`).
pub const API_VERSION: &str = "2023-06-01";
/// Default bound on the bytes of one search answer read.
pub const DEFAULT_MAX_BYTES: u64 = 4 << 20;
/// The variable naming the search API's root (dsh's own; it wins over
/// [`OFFICIAL_BASE_URL_VAR`] when both are set).
pub const BASE_URL_VAR: &str = "DSH_WEB_SEARCH_BASE_URL";
/// The official runtime's variable naming the search API's root, used when
/// [`BASE_URL_VAR`] is unset.
pub const OFFICIAL_BASE_URL_VAR: &str = "DEEPSEEK_SEARCH_BASE_URL";
/// The variable naming the search model.
pub const MODEL_VAR: &str = "DSH_WEB_SEARCH_MODEL";
/// The variable bounding one search answer, in bytes.
pub const MAX_BYTES_VAR: &str = "DSH_WEB_SEARCH_MAX_BYTES";

/// `max_tokens` of a search request.
const MAX_TOKENS: u64 = 4096;
/// How many searches the search model may run for one query.
const MAX_USES: u64 = 5;
/// The server tool's type.
const TOOL_TYPE: &str = "web_search_20250305";
/// What the search model is asked, followed by the query.
const PROMPT: &str = "Search the web for this query and report what the sources say: ";

/// How the search client reaches the API.
#[derive(Debug, Clone)]
pub struct SearchConfig {
    /// The API root (`{base}/messages` is posted to); validated by
    /// [`SearchClient::new`].
    pub base_url: String,
    /// The search model.
    pub model: String,
    /// The API key (`DEEPSEEK_API_KEY`); checked before any request.
    pub api_key: Option<String>,
    /// Most bytes of one answer read (`DSH_WEB_SEARCH_MAX_BYTES`).
    pub max_bytes: u64,
    /// Most bytes of an HTTP error body read (`DSH_MAX_ERROR_BODY_BYTES`).
    pub error_body_bytes: u64,
    /// The retry policy of failed attempts (the chat provider's).
    pub retry: RetryPolicy,
}

impl SearchConfig {
    /// The defaults with `api_key`: DeepSeek's endpoint and search model,
    /// 4 MiB answers, 64 KiB error bodies, the default retry policy.
    pub fn new(api_key: Option<String>) -> Self {
        Self {
            base_url: DEFAULT_BASE_URL.to_owned(),
            model: DEFAULT_MODEL.to_owned(),
            api_key,
            max_bytes: DEFAULT_MAX_BYTES,
            error_body_bytes: crate::DEFAULT_ERROR_BODY_BYTES,
            retry: RetryPolicy::default(),
        }
    }
}

/// Sends search requests and reads their answers.
#[derive(Debug, Clone)]
pub struct SearchClient {
    config: SearchConfig,
    endpoint: String,
    /// Built at the first search, not at launch.
    client: http::LazyClient,
}

impl SearchClient {
    /// A client over `config`; refuses a base URL that is not http(s) or
    /// carries credentials, a query or a fragment. Its HTTP client (and so
    /// the TLS roots) is built at the first search.
    pub fn new(config: SearchConfig) -> Result<Self, SearchSetupError> {
        let base = http::base_url(&config.base_url)
            .map_err(|e| SearchSetupError::BaseUrl(e.to_string()))?;
        Ok(Self {
            endpoint: format!("{base}/messages"),
            config,
            client: http::LazyClient::new(),
        })
    }

    /// The URL every request is posted to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The `anthropic-version` sent.
    pub fn api_version(&self) -> &str {
        API_VERSION
    }

    /// The request body for `query`, keys in the official order.
    pub fn request_body(&self, query: &str) -> Value {
        json!({
            "model": self.config.model,
            "max_tokens": MAX_TOKENS,
            "messages": [{"role": "user", "content": [{"type": "text", "text": format!("{PROMPT}{query}")}]}],
            "tools": [{"type": TOOL_TYPE, "name": "web_search", "max_uses": MAX_USES}],
            "thinking": {"type": "disabled"},
        })
    }

    /// Checks the key as the chat provider does: present, and printable
    /// ASCII without spaces after trimming.
    pub fn check_credential(&self) -> Result<(), SearchError> {
        self.key_headers().map(drop)
    }

    /// The `x-api-key` and `authorization` values, marked sensitive (their
    /// `Debug` hides them).
    fn key_headers(&self) -> Result<(HeaderValue, HeaderValue), SearchError> {
        let key = match self.config.api_key.as_deref().map(str::trim) {
            None | Some("") => return Err(SearchError::MissingCredential),
            Some(key) => key,
        };
        if !key.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
            return Err(SearchError::InvalidCredential);
        }
        let sensitive = |text: &str| {
            HeaderValue::from_str(text)
                .map(|mut value| {
                    value.set_sensitive(true);
                    value
                })
                .map_err(|_| SearchError::InvalidCredential)
        };
        Ok((sensitive(key)?, sensitive(&format!("Bearer {key}"))?))
    }

    /// Sends `body` (from [`Self::request_body`]) and reads the answer,
    /// retrying failed attempts under the retry policy.
    pub async fn search(&self, body: &Value) -> Result<SearchAnswer, SearchError> {
        let (key, bearer) = self.key_headers()?;
        // Lone surrogates of the model's query go out as `\udXXX` escapes.
        let bytes = bytes::Bytes::from(dsh_protocol::surrogates::decode(
            body.to_string().into_bytes(),
        ));
        let mut retry = 0;
        loop {
            let error = match self.attempt(&key, &bearer, bytes.clone()).await {
                Ok(answer) => return Ok(answer),
                Err(error) => error,
            };
            retry += 1;
            let delay = retry_failure(&error).and_then(|f| self.config.retry.delay_ms(retry, &f));
            let Some(delay) = delay else {
                return Err(error);
            };
            tracing::warn!(
                "web search attempt {retry} failed ({error}); retrying in {:.0} ms",
                delay.get()
            );
            tokio::time::sleep(Duration::from_secs_f64(delay.get() / 1000.0)).await;
        }
    }

    async fn attempt(
        &self,
        key: &HeaderValue,
        bearer: &HeaderValue,
        body: bytes::Bytes,
    ) -> Result<SearchAnswer, SearchError> {
        // A client that cannot be built fails the attempt as a broken
        // connection does (and is tried again on a retry).
        let client = self.client.get().map_err(|e| {
            SearchError::Transport(format!(
                "cannot create an HTTP client: {}",
                http::causes(&e)
            ))
        })?;
        let response = client
            .post(&self.endpoint)
            .header("user-agent", http::USER_AGENT)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .header("x-api-key", key.clone())
            .header("authorization", bearer.clone())
            .header("anthropic-version", API_VERSION)
            .body(body)
            .send()
            .await
            .map_err(|e| SearchError::Transport(http::causes(&e)))?;
        let status = response.status();
        if !status.is_success() {
            let headers = response.headers().clone();
            let body = http::read_bounded(response, self.config.error_body_bytes).await;
            return Err(SearchError::Http(http::http_failure(
                status.as_u16(),
                &headers,
                &body,
            )));
        }
        let body = read_capped(response, self.config.max_bytes).await?;
        answer::parse(&body)
    }
}

/// Reads a body of at most `limit` bytes.
async fn read_capped(response: reqwest::Response, limit: u64) -> Result<Vec<u8>, SearchError> {
    let mut stream = response.bytes_stream();
    let mut body = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| SearchError::Transport(http::causes(&e)))?;
        if u64::try_from(body.len() + chunk.len()).unwrap_or(u64::MAX) > limit {
            return Err(SearchError::TooLarge { limit });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The failure the retry policy judges, for the errors worth judging: HTTP
/// errors by their code (`RATE_LIMIT`, `SERVER`, …) and broken
/// connections (`TRANSPORT`). Answers that arrived are not retried.
fn retry_failure(error: &SearchError) -> Option<LlmFailure> {
    match error {
        SearchError::Http(failure) => Some(failure.clone()),
        SearchError::Transport(message) => {
            Some(LlmFailure::new(LlmFailureCode::Transport, message.clone()))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(base: &str, key: Option<&str>) -> SearchClient {
        let mut config = SearchConfig::new(key.map(str::to_owned));
        config.base_url = base.to_owned();
        SearchClient::new(config).unwrap()
    }

    #[test]
    fn the_endpoint_is_the_base_plus_messages() {
        assert_eq!(
            client(DEFAULT_BASE_URL, None).endpoint(),
            "https://api.deepseek.com/anthropic/v1/messages"
        );
        assert_eq!(
            client("http://127.0.0.1:9/search/", None).endpoint(),
            "http://127.0.0.1:9/search/messages"
        );
        let mut config = SearchConfig::new(None);
        config.base_url = "https://user:pw@example.com".into();
        assert!(matches!(
            SearchClient::new(config),
            Err(SearchSetupError::BaseUrl(_))
        ));
    }

    #[test]
    fn the_body_has_the_official_keys_in_order() {
        let body = client(DEFAULT_BASE_URL, None).request_body("rust async");
        let keys: Vec<&str> = body
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(
            keys,
            ["model", "max_tokens", "messages", "tools", "thinking"]
        );
        assert_eq!(body["model"], DEFAULT_MODEL);
        assert_eq!(body["max_tokens"], 4096);
        assert_eq!(
            body["tools"],
            json!([{"type": "web_search_20250305", "name": "web_search", "max_uses": 5}])
        );
        assert_eq!(body["thinking"], json!({"type": "disabled"}));
        let text = body["messages"][0]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert!(text.ends_with(": rust async"), "{text}");
    }

    #[test]
    fn keys_are_checked_and_hidden() {
        let missing = client(DEFAULT_BASE_URL, Some("  ")).check_credential();
        assert_eq!(missing, Err(SearchError::MissingCredential));
        let absent = client(DEFAULT_BASE_URL, None).check_credential();
        assert_eq!(absent, Err(SearchError::MissingCredential));
        let bad = client(DEFAULT_BASE_URL, Some("sk é")).check_credential();
        assert_eq!(bad, Err(SearchError::InvalidCredential));
        let (key, bearer) = client(DEFAULT_BASE_URL, Some(" sk-secret "))
            .key_headers()
            .unwrap();
        assert_eq!(key.to_str().ok(), Some("sk-secret"));
        assert_eq!(bearer.to_str().ok(), Some("Bearer sk-secret"));
        assert!(!format!("{key:?}{bearer:?}").contains("sk-secret"));
    }

    #[test]
    fn http_and_transport_errors_are_retried_answers_are_not() {
        let policy = RetryPolicy::default();
        let judged = |e: SearchError| {
            retry_failure(&e)
                .and_then(|f| policy.delay_ms(1, &f))
                .is_some()
        };
        let http = |status: u16| {
            SearchError::Http(http::http_failure(
                status,
                &reqwest::header::HeaderMap::new(),
                br#"{"type":"error","error":{"type":"x","message":"m"}}"#,
            ))
        };
        assert!(judged(http(500)));
        assert!(judged(http(429)));
        assert!(!judged(http(401)));
        assert!(!judged(http(400)));
        assert!(judged(SearchError::Transport("reset".into())));
        assert!(!judged(SearchError::NoResults));
        assert!(!judged(SearchError::TooLarge { limit: 1 }));
        assert!(!judged(SearchError::Unreadable("x".into())));
    }
}
