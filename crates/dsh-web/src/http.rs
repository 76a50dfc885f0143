//! The HTTP side: every request passes the [`Guard`], then the token
//! exchange or the cookie check, then its route. Bodies are bounded, the
//! live channel is bounded in subscribers and in backlog, and every
//! response carries a restrictive Content-Security-Policy.

use crate::assets;
use crate::auth::Auth;
use crate::bridge::{Bridge, Live};
use crate::guard::Guard;
use bytes::Bytes;
use dsh_protocol::methods::ApprovalResponse;
use futures_util::StreamExt;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, COOKIE, LOCATION, REFERRER_POLICY,
    SET_COOKIE, X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use hyper::{Method, Request, Response, StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};
use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;

/// Largest request body read (1 MiB).
pub const BODY_MAX_BYTES: usize = 1024 * 1024;

/// Most live channels open at once.
pub const LIVE_MAX: usize = 64;

/// How often an idle live channel sends a comment (proxies close silent
/// connections).
const KEEPALIVE: Duration = Duration::from_secs(15);

/// What no page of this server may do: load from or talk to anything but
/// this origin, run inline script, or be framed.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; \
img-src 'self' data:; base-uri 'none'; frame-ancestors 'none'; form-action 'none'";

/// The response body type.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// Everything a request may need.
pub struct App {
    /// The token and cookies.
    pub auth: Auth,
    /// Host and Origin checks.
    pub guard: Guard,
    /// The server behind the page.
    pub bridge: Bridge,
    /// Live channels open now.
    pub live: Arc<AtomicUsize>,
}

fn respond(status: StatusCode, kind: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(Full::new(body.into()).boxed_unsync());
    *response.status_mut() = status;
    let headers = response.headers_mut();
    for (name, value) in [
        (CONTENT_TYPE, kind),
        (CACHE_CONTROL, "no-store"),
        (CONTENT_SECURITY_POLICY, CSP),
        (X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (X_FRAME_OPTIONS, "DENY"),
        (REFERRER_POLICY, "no-referrer"),
    ] {
        if let Ok(value) = value.parse() {
            headers.insert(name, value);
        }
    }
    response
}

fn text(status: StatusCode, body: &str) -> Response<Body> {
    respond(status, "text/plain; charset=utf-8", body.to_owned())
}

fn json_response(value: &Value) -> Response<Body> {
    respond(StatusCode::OK, "application/json", value.to_string())
}

/// Answers one request.
pub async fn handle(app: Arc<App>, request: Request<Incoming>) -> Response<Body> {
    if let Err(refusal) = app.guard.check(request.headers()) {
        return text(StatusCode::FORBIDDEN, refusal.text());
    }
    let method = request.method().clone();
    let path = request.uri().path().to_owned();
    if method == Method::GET
        && path == "/"
        && let Some(cookie) = app.auth.exchange(request.uri().query())
    {
        let mut response = text(StatusCode::SEE_OTHER, "");
        let headers = response.headers_mut();
        if let (Ok(location), Ok(cookie)) = ("./".parse(), app.auth.set_cookie(&cookie).parse()) {
            headers.insert(LOCATION, location);
            headers.insert(SET_COOKIE, cookie);
        }
        return response;
    }
    let cookies = request
        .headers()
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok());
    if !app.auth.authorized(cookies) {
        return text(
            StatusCode::UNAUTHORIZED,
            "dsh web authentication required; reopen the URL printed by dsh web.",
        );
    }
    match (method, path.as_str()) {
        (Method::GET, "/api/info") => json_response(app.bridge.info()),
        (Method::GET, "/api/events") => live(&app),
        (Method::GET, "/api/live") => upgrade(&app, request),
        (Method::POST, "/api/rpc") => match body::<RpcCall>(request).await {
            Ok(call) => json_response(&app.bridge.rpc(&call.method, call.params).await),
            Err(refused) => refused,
        },
        (Method::POST, "/api/approval") => match body::<Answer>(request).await {
            Ok(answer) => {
                let response = ApprovalResponse {
                    decision: answer.decision,
                    message: answer.message,
                };
                if app.bridge.answer(answer.id, response) {
                    json_response(&json!({}))
                } else {
                    text(StatusCode::NOT_FOUND, "no approval with that id is waiting")
                }
            }
            Err(refused) => refused,
        },
        (Method::GET, "/") => page("index.html"),
        (Method::GET, path) => page(path.trim_start_matches('/')),
        _ => text(StatusCode::METHOD_NOT_ALLOWED, "method not allowed"),
    }
}

fn page(name: &str) -> Response<Body> {
    match assets::get(name) {
        Some((kind, body)) => respond(StatusCode::OK, kind, body),
        None => text(StatusCode::NOT_FOUND, "not found"),
    }
}

/// `POST /api/rpc`'s body.
#[derive(Deserialize)]
struct RpcCall {
    method: String,
    #[serde(default)]
    params: Value,
}

/// `POST /api/approval`'s body.
#[derive(Deserialize)]
struct Answer {
    id: u64,
    decision: dsh_protocol::methods::ApprovalDecision,
    #[serde(default)]
    message: Option<String>,
}

/// Reads a JSON body of at most [`BODY_MAX_BYTES`].
async fn body<T: for<'de> Deserialize<'de>>(
    request: Request<Incoming>,
) -> Result<T, Response<Body>> {
    let bytes = match Limited::new(request.into_body(), BODY_MAX_BYTES)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return Err(text(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("request body larger than {BODY_MAX_BYTES} bytes"),
            ));
        }
    };
    serde_json::from_slice(&bytes).map_err(|err| {
        text(
            StatusCode::BAD_REQUEST,
            &format!("the request body is not what this endpoint takes: {err}"),
        )
    })
}

/// `GET /api/live`: the live channel as a WebSocket (see `socket`).
fn upgrade(app: &Arc<App>, mut request: Request<Incoming>) -> Response<Body> {
    let headers = request.headers();
    let wants = headers
        .get(hyper::header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let version = headers
        .get(hyper::header::SEC_WEBSOCKET_VERSION)
        .is_some_and(|v| v == "13");
    let Some(key) = headers
        .get(hyper::header::SEC_WEBSOCKET_KEY)
        .filter(|_| wants && version)
    else {
        return text(
            StatusCode::BAD_REQUEST,
            "the live channel is a WebSocket (version 13)",
        );
    };
    if app.live.fetch_add(1, Ordering::Relaxed) >= LIVE_MAX {
        app.live.fetch_sub(1, Ordering::Relaxed);
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("too many live connections (at most {LIVE_MAX})"),
        );
    }
    let open = Open(Arc::clone(&app.live));
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    let (receiver, waiting) = app.bridge.subscribe();
    let upgrading = hyper::upgrade::on(&mut request);
    tokio::spawn(async move {
        let _open = open;
        match upgrading.await {
            Ok(upgraded) => crate::socket::serve(upgraded, receiver, waiting).await,
            Err(err) => tracing::debug!("a live channel upgrade failed: {err}"),
        }
    });
    let mut response = text(StatusCode::SWITCHING_PROTOCOLS, "");
    let headers = response.headers_mut();
    headers.remove(CONTENT_TYPE);
    for (name, value) in [
        (hyper::header::UPGRADE, "websocket"),
        (hyper::header::CONNECTION, "Upgrade"),
        (hyper::header::SEC_WEBSOCKET_ACCEPT, accept.as_str()),
    ] {
        if let Ok(value) = value.parse() {
            headers.insert(name, value);
        }
    }
    response
}

/// Counts a live channel while it is open.
struct Open(Arc<AtomicUsize>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// `GET /api/events`: the live channel (Server-Sent Events).
fn live(app: &App) -> Response<Body> {
    if app.live.fetch_add(1, Ordering::Relaxed) >= LIVE_MAX {
        app.live.fetch_sub(1, Ordering::Relaxed);
        return text(
            StatusCode::SERVICE_UNAVAILABLE,
            &format!("too many live connections (at most {LIVE_MAX})"),
        );
    }
    let open = Open(Arc::clone(&app.live));
    let (receiver, waiting) = app.bridge.subscribe();
    let mut first = b": live\n\n".to_vec();
    for event in waiting {
        first.extend_from_slice(&event.sse());
    }
    let first = Bytes::from(first);
    let stream = futures_util::stream::unfold(
        (receiver, Some(first), open, false),
        |(mut receiver, first, open, ended)| async move {
            if let Some(first) = first {
                return Some((
                    Ok::<_, Infallible>(Frame::data(first)),
                    (receiver, None, open, false),
                ));
            }
            if ended {
                return None;
            }
            let message = tokio::select! {
                message = receiver.recv() => message,
                () = tokio::time::sleep(KEEPALIVE) => {
                    return Some((Ok(Frame::data(Bytes::from_static(b": keepalive\n\n"))),
                        (receiver, None, open, false)));
                }
            };
            match message {
                Ok(message) => Some((
                    Ok(Frame::data(message.sse())),
                    (receiver, None, open, false),
                )),
                // Too far behind: the page reconnects and catches up from
                // `session/events`.
                Err(RecvError::Lagged(_)) => Some((
                    Ok(Frame::data(Live::new("lagged", &json!({})).sse())),
                    (receiver, None, open, true),
                )),
                Err(RecvError::Closed) => None,
            }
        },
    );
    let mut response = respond(StatusCode::OK, "text/event-stream", Bytes::new());
    *response.body_mut() = StreamBody::new(StreamExt::boxed(stream)).boxed_unsync();
    response
}
