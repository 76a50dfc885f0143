//! What the HTTP providers share: the client, base URLs, failure mapping of
//! HTTP errors and transport problems, and streaming with an idle timeout.

use crate::LlmFailureCode;
use crate::sse::{SseDecoder, SseEvent};
use crate::{ChunkSender, LlmFailure, Millis, ReplyCap, ReplyLimits, StreamChunk};
use futures_util::StreamExt;
use reqwest::header::HeaderMap;
use serde_json::Value;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

/// The `user-agent` of every model request.
pub const USER_AGENT: &str = concat!("dsh-rs/", env!("CARGO_PKG_VERSION"));

/// Default idle-stream timeout: a stream silent this long fails with `TIMEOUT`.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// Why a base URL is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid base URL \"{url}\": {reason}")]
pub struct BaseUrlError {
    /// The URL as given.
    pub url: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Validates an http(s) base URL without credentials, query or fragment and
/// returns it without a trailing `/`.
pub fn base_url(url: &str) -> Result<String, BaseUrlError> {
    let error = |reason| BaseUrlError {
        url: url.to_owned(),
        reason,
    };
    let parsed = reqwest::Url::parse(url).map_err(|_| error("not a URL"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(error("only http and https are supported"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(error("credentials in the URL are not allowed"));
    }
    if parsed.query().is_some() || parsed.fragment().is_some() {
        return Err(error("a query or fragment is not allowed"));
    }
    Ok(url.trim_end_matches('/').to_owned())
}

/// The HTTP client shared by a provider: no redirects, rustls with ring.
///
/// Building it loads the platform's TLS root certificates (hundreds of
/// file operations under `/etc/ssl`), so providers hold a [`LazyClient`]
/// that builds it on their first request rather than at start-up.
pub fn client() -> Result<reqwest::Client, reqwest::Error> {
    // Installing the process-wide crypto provider fails harmlessly when one
    // is already installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(30))
        .build()
}

/// The [`client`] of one provider, built on first use: mounting a provider
/// (or launching the runtime) reads no certificate, its first request does.
/// Clones share the one client. A failed build is not kept: the next
/// request tries again.
#[derive(Debug, Clone, Default)]
pub struct LazyClient {
    cell: Arc<OnceLock<reqwest::Client>>,
}

impl LazyClient {
    /// A client not yet built.
    pub fn new() -> Self {
        Self::default()
    }

    /// The client, built now if this is its first use. Building reads
    /// files: call it from a request's task, not from a provider's
    /// non-blocking `start`.
    pub fn get(&self) -> Result<&reqwest::Client, reqwest::Error> {
        if let Some(client) = self.cell.get() {
            return Ok(client);
        }
        // Two first requests at once may both build; one client is kept.
        let built = client()?;
        Ok(self.cell.get_or_init(|| built))
    }

    /// The client of `provider`'s request: a build failure is a
    /// `TRANSPORT` failure (retried like one) whose message is the one
    /// `initialize` gave when providers built their clients at mount.
    pub fn for_request(&self, provider: &str) -> Result<&reqwest::Client, LlmFailure> {
        self.get().map_err(|err| {
            tracing::warn!("{provider}: cannot create an HTTP client: {}", causes(&err));
            LlmFailure::new(
                LlmFailureCode::Transport,
                format!("provider \"{provider}\": cannot create an HTTP client: {err}"),
            )
        })
    }

    /// Whether the client has been built (by a first request).
    #[cfg(test)]
    pub fn is_built(&self) -> bool {
        self.cell.get().is_some()
    }
}

/// A transport failure (`TRANSPORT`, or `TIMEOUT` for timeouts). The wire
/// message is the official one (`<label> transport failed`); the cause
/// chain goes to the diagnostics log. URLs never carry credentials and keys
/// travel only in headers, so no secret can appear in either.
pub fn transport_failure(label: &str, err: &reqwest::Error) -> LlmFailure {
    let cause = causes(err);
    if err.is_timeout() {
        return LlmFailure::new(
            LlmFailureCode::Timeout,
            format!("{label} request timed out: {cause}"),
        );
    }
    tracing::warn!("{label} transport failed: {cause}");
    LlmFailure::new(
        LlmFailureCode::Transport,
        format!("{label} transport failed"),
    )
}

/// An error's message followed by its causes, `: `-separated (URLs never
/// carry credentials and keys travel only in headers, so no secret can
/// appear).
pub(crate) fn causes(err: &reqwest::Error) -> String {
    let mut text = String::new();
    let mut source: Option<&dyn std::error::Error> = Some(err);
    while let Some(e) = source {
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&e.to_string());
        source = e.source();
    }
    text
}

/// Maps a non-2xx response to a failure: the body's `error.message` (or
/// `message`), the status, the request id and any retry-after.
pub fn http_failure(status: u16, headers: &HeaderMap, body: &[u8]) -> LlmFailure {
    let json: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let error = json.get("error").unwrap_or(&json);
    let message = error
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .or_else(|| error.as_str().map(str::to_owned))
        .filter(|m| !m.trim().is_empty())
        .unwrap_or_else(|| {
            // A body that is not JSON (an HTML error page, plain text) is
            // the best message there is; a JSON body without one is not.
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            if text.is_empty() || !json.is_null() {
                format!("HTTP {status}")
            } else {
                text.chars().take(500).collect()
            }
        });
    let kind = error
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let code = classify(status, kind, &message);
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    LlmFailure {
        message,
        code,
        status: Some(status),
        provider_retry_after_ms: header("retry-after")
            .and_then(|v| retry_after_ms(&v, SystemTime::now())),
        request_id: header("request-id")
            .or_else(|| header("x-request-id"))
            .or_else(|| header("x-deepseek-request-id")),
    }
}

fn classify(status: u16, kind: &str, message: &str) -> LlmFailureCode {
    let lower = message.to_lowercase();
    if matches!(status, 401 | 403) || matches!(kind, "authentication_error" | "permission_error") {
        LlmFailureCode::Auth
    } else if status == 402 || lower.contains("quota") || lower.contains("insufficient balance") {
        LlmFailureCode::Quota
    } else if status == 429 || kind == "rate_limit_error" {
        LlmFailureCode::RateLimit
    } else if [
        "context length",
        "context window",
        "maximum context",
        "too many tokens",
        "prompt is too long",
    ]
    .iter()
    .any(|w| lower.contains(w))
    {
        LlmFailureCode::ContextWindowExceeded
    } else if matches!(status, 400 | 413 | 422) || kind == "invalid_request_error" {
        LlmFailureCode::InvalidRequest
    } else if status >= 500 || matches!(kind, "api_error" | "overloaded_error") {
        LlmFailureCode::Server
    } else {
        LlmFailureCode::Other(format!("HTTP_{status}"))
    }
}

/// `retry-after` as the official runtime reads it: delay-seconds written
/// as digits with an optional fraction (no sign, exponent or surrounding
/// space), else an HTTP date relative to `now`. A delay that is not
/// positive (`0`, `0.0`, a past date) or cannot be read is no request: the
/// normal back-off applies. (The official runtime also reads the other
/// forms JavaScript's `Date.parse` knows, such as ISO 8601; providers send
/// HTTP dates.)
pub fn retry_after_ms(value: &str, now: SystemTime) -> Option<Millis> {
    if let Some(seconds) = delay_seconds(value) {
        return Millis::new(seconds * 1000.0);
    }
    let at = httpdate::parse_http_date(value).ok()?;
    let ms = at.duration_since(now).ok()?.as_millis();
    Millis::new(ms as f64)
}

/// `1`, `1.5`: ASCII digits, optionally `.` and more digits.
fn delay_seconds(value: &str) -> Option<f64> {
    let (whole, fraction) = value.split_once('.').unwrap_or((value, "0"));
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(whole) && digits(fraction))
        .then(|| value.parse().ok())
        .flatten()
}

/// How one streamed request is bounded.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// A silence this long fails with `TIMEOUT`.
    pub idle: Duration,
    /// The size caps.
    pub limits: ReplyLimits,
    /// The request's `max_tokens` (the reply cap derives from it).
    pub max_tokens: u64,
}

/// One streamed model request: sends `request` (an answer must start
/// within `bounds.idle`), maps a non-2xx answer to its failure (reading at
/// most `error_body_bytes` of its body), and feeds each SSE event of a 2xx
/// answer to `translate`, forwarding its chunks to `out`, until `translate`
/// reports the end of the reply. A body that ends first fails with
/// `closed()`; a body larger than the reply cap fails with
/// `MALFORMED_RESPONSE` as soon as it passes it. A dropped receiver (an
/// aborted attempt) stops the stream quietly.
pub async fn stream_chunks(
    label: &str,
    request: reqwest::RequestBuilder,
    bounds: Bounds,
    out: &ChunkSender,
    mut translate: impl FnMut(&SseEvent) -> Result<(Vec<StreamChunk>, bool), LlmFailure>,
    closed: impl FnOnce() -> LlmFailure,
) -> Result<(), LlmFailure> {
    let idle = bounds.idle;
    let response = match tokio::time::timeout(idle, request.send()).await {
        Err(_) => {
            let ms = idle.as_millis();
            return Err(LlmFailure::new(
                LlmFailureCode::Timeout,
                format!("{label} sent no response within {ms} ms"),
            ));
        }
        Ok(Err(err)) => return Err(transport_failure(label, &err)),
        Ok(Ok(response)) => response,
    };
    if !response.status().is_success() {
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bound = bounds.limits.error_body_bytes;
        let body = tokio::time::timeout(idle, read_bounded(response, bound))
            .await
            .unwrap_or_default();
        if u64::try_from(body.len()).unwrap_or(u64::MAX) > bound {
            tracing::warn!(
                "{label}: HTTP {status} error body longer than {bound} bytes ({}); the rest was not read",
                crate::ERROR_BODY_BYTES_VAR
            );
        }
        return Err(http_failure(status, &headers, &body));
    }
    let mut failure = None;
    let mut done = false;
    let mut delivered = true;
    let cap = bounds.limits.reply_cap(bounds.max_tokens);
    read_sse(label, response, idle, cap, |event| {
        match translate(&event) {
            Ok((chunks, end)) => {
                delivered = chunks.into_iter().all(|chunk| out.send(chunk).is_ok());
                done = end;
                delivered && !done
            }
            Err(f) => {
                failure = Some(f);
                false
            }
        }
    })
    .await?;
    match failure {
        Some(f) => Err(f),
        None if done || !delivered => Ok(()),
        None => Err(closed()),
    }
}

/// Reads at most `bound` bytes of a body, plus the rest of the chunk that
/// passes it (so a longer body is recognisable); a broken body ends the
/// read with what arrived.
pub(crate) async fn read_bounded(response: reqwest::Response, bound: u64) -> Vec<u8> {
    let mut body = response.bytes_stream();
    let mut read = Vec::new();
    while u64::try_from(read.len()).unwrap_or(u64::MAX) <= bound {
        match body.next().await {
            Some(Ok(bytes)) => read.extend_from_slice(&bytes),
            Some(Err(_)) | None => break,
        }
    }
    read
}

/// Reads an SSE response, calling `on_event` for each event until it
/// returns `false`. Fails with `TIMEOUT` when no bytes arrive for `idle`,
/// with `TRANSPORT` when the connection breaks, with `MALFORMED_RESPONSE`
/// when the body grows past `cap`; returns `Ok(())` at the end of the body
/// (the caller decides whether the stream was complete).
async fn read_sse(
    label: &str,
    response: reqwest::Response,
    idle: Duration,
    cap: ReplyCap,
    mut on_event: impl FnMut(SseEvent) -> bool,
) -> Result<(), LlmFailure> {
    let mut decoder = SseDecoder::new();
    let mut body = response.bytes_stream();
    let mut received = 0u64;
    loop {
        let next = tokio::time::timeout(idle, body.next()).await.map_err(|_| {
            LlmFailure::new(
                LlmFailureCode::Timeout,
                format!(
                    "{label} stream was idle for more than {} ms",
                    idle.as_millis()
                ),
            )
        })?;
        let bytes = match next {
            None => return Ok(()),
            Some(Ok(bytes)) => bytes,
            // A broken connection is a transport failure (retryable); a
            // body that simply ends is judged by the caller.
            Some(Err(err)) => return Err(transport_failure(label, &err)),
        };
        received = received.saturating_add(u64::try_from(bytes.len()).unwrap_or(u64::MAX));
        if received > cap.bytes {
            return Err(cap.exceeded(label));
        }
        for event in decoder.push(&bytes) {
            if !on_event(event) {
                return Ok(());
            }
        }
    }
}

/// A server on 127.0.0.1 that answers every connection with HTTP 500 and
/// an `api_error` body; returns its base URL (`http://127.0.0.1:<port>`).
#[cfg(test)]
pub(crate) fn failing_server() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            // The request is small: one read takes its head, which is all
            // that matters before the answer.
            let mut buf = [0u8; 65536];
            let _ = stream.read(&mut buf);
            let body = r#"{"type":"error","error":{"type":"api_error","message":"down"}}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://127.0.0.1:{port}")
}

/// How the first request of `provider` (mounted as `name`, against a
/// failing server) finishes: its failure.
#[cfg(test)]
pub(crate) async fn first_failure(provider: &dyn crate::Provider, name: &str) -> LlmFailure {
    let (out, mut chunks) = tokio::sync::mpsc::unbounded_channel();
    provider.start(
        crate::ModelRequest {
            session_id: "s".into(),
            route: crate::Route {
                provider: name.into(),
                model: "m".into(),
                reasoning_effort: None,
                max_tokens: None,
            },
            system: "sys".into(),
            messages: Vec::new(),
            tools: std::sync::Arc::new(Vec::new()),
            compact: false,
        },
        out,
    );
    while let Some(chunk) = chunks.recv().await {
        if let crate::StreamChunk::Finish {
            reason: crate::FinishReason::Error { failure },
            ..
        } = chunk
        {
            return failure;
        }
    }
    panic!("no failure");
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn a_lazy_client_is_built_once_on_first_use_and_shared_by_clones() {
        let lazy = LazyClient::new();
        let clone = lazy.clone();
        assert!(!lazy.is_built() && !clone.is_built());
        let first: *const reqwest::Client = clone.get().unwrap();
        assert!(lazy.is_built(), "a clone's first use builds the one client");
        let again: *const reqwest::Client = lazy.for_request("p").unwrap();
        assert_eq!(first, again, "built once");
    }

    fn failure(status: u16, body: &str) -> LlmFailure {
        let mut headers = HeaderMap::new();
        headers.insert("x-request-id", HeaderValue::from_static("req-1"));
        headers.insert("retry-after", HeaderValue::from_static("2"));
        http_failure(status, &headers, body.as_bytes())
    }

    #[test]
    fn http_errors_map_to_the_official_codes() {
        let body = |kind: &str, msg: &str| {
            format!(r#"{{"type":"error","error":{{"type":"{kind}","message":"{msg}"}}}}"#)
        };
        let cases = [
            (401, body("authentication_error", "invalid api key"), "AUTH"),
            (403, body("permission_error", "nope"), "AUTH"),
            (402, body("billing_error", "pay up"), "QUOTA"),
            (
                400,
                body("invalid_request_error", "Insufficient Balance"),
                "QUOTA",
            ),
            (429, body("rate_limit_error", "slow down"), "RATE_LIMIT"),
            (
                400,
                body(
                    "invalid_request_error",
                    "prompt is too long: 2000000 tokens > maximum context",
                ),
                "CONTEXT_WINDOW_EXCEEDED",
            ),
            (400, body("invalid_request_error", "bad"), "INVALID_REQUEST"),
            (413, body("request_too_large", "big"), "INVALID_REQUEST"),
            (500, body("api_error", "fake internal error"), "SERVER"),
            (529, body("overloaded_error", "busy"), "SERVER"),
            (418, body("teapot", "short and stout"), "HTTP_418"),
        ];
        for (status, body, code) in cases {
            let f = failure(status, &body);
            assert_eq!(f.code, code, "{status} {body}");
            assert_eq!(f.status, Some(status));
            assert_eq!(f.request_id.as_deref(), Some("req-1"));
            assert_eq!(f.provider_retry_after_ms.map(Millis::get), Some(2000.0));
        }
        assert_eq!(
            failure(
                500,
                r#"{"type":"error","error":{"type":"api_error","message":"fake internal error"}}"#
            )
            .message,
            "fake internal error"
        );
        assert_eq!(failure(502, "").message, "HTTP 502");
        assert_eq!(
            failure(
                500,
                r#"{"type":"error","error":{"type":"api_error","message":" "}}"#
            )
            .message,
            "HTTP 500"
        );
        assert_eq!(
            failure(502, "<html>bad gateway</html>").message,
            "<html>bad gateway</html>"
        );
    }

    // Expected values measured on the official runtime.
    #[test]
    fn retry_after_reads_positive_seconds_and_future_dates_only() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let ms = |value: &str| retry_after_ms(value, now).map(Millis::get);
        assert_eq!(ms("1"), Some(1000.0));
        assert_eq!(ms("1.5"), Some(1500.0));
        assert_eq!(ms("2.0000"), Some(2000.0));
        assert_eq!(ms("0.0004"), Some(0.4));
        assert_eq!(ms("0.1234567"), Some(123.4567));
        assert_eq!(ms("99999"), Some(99_999_000.0));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(3));
        assert_eq!(ms(&later), Some(3000.0));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(3600));
        for ignored in [
            "0", "00", "0.0", "-0", "-1", "+1", "1e0", "0x10", "Infinity", "1.", ".5", " 2 ", "",
            "soon", &earlier,
        ] {
            assert_eq!(ms(ignored), None, "{ignored:?}");
        }
    }

    #[test]
    fn base_urls_are_validated() {
        assert_eq!(
            base_url("http://127.0.0.1:8000/").as_deref(),
            Ok("http://127.0.0.1:8000")
        );
        assert!(base_url("ftp://x").is_err());
        assert!(base_url("https://user:pw@x").is_err());
        assert!(base_url("https://x/?a=1").is_err());
        assert!(base_url("not a url").is_err());
    }
}
