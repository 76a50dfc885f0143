//! A fake model server for tests.
//!
//! Plays the same scenario files as the `scripted` provider (see
//! [`dsh_llm::scripted`]) over HTTP on 127.0.0.1, one reply per model request
//! in arrival order (per script, see below), in both protocols:
//!
//! * `POST /v1/messages` (and `/messages`): the Messages API, as SSE;
//! * `POST /v1/chat/completions` (and `/chat/completions`): chat
//!   completions, as SSE ending with `data: [DONE]`;
//! * `POST /v1/files`: `404`, as an API without the Files API answers;
//! * a Messages request (any path ending in `/messages`) whose `tools`
//!   hold a `web_search_*` server tool: a web search, answered with one
//!   plain JSON message from the scenario's `search` entries (see
//!   [`dsh_llm::scripted::SearchReply`]; without entries, a default answer
//!   with two results and a citation; once all are used, an HTTP 500).
//!
//! A reply's `error` becomes an HTTP error (status, `{"type":"error",
//! "error":{type, message}}`, `request-id` and `retry-after` headers);
//! `cut: true` ends the body cleanly after the first delta (the reply never
//! finishes); `reset: true` breaks the connection there instead; `stall_ms`
//! pauses after the first delta; `delta_gap_ms` pauses after every delta;
//! `delay_ms` delays the response headers.
//! `hostile` replies attack the client: `endless-text` (a stream of text
//! deltas that never ends), `endless-error-body` (an HTTP 500 whose body
//! never ends), `huge-delta {bytes}` (one text delta of that size) and
//! `huge-tool-call {name, arguments, field, bytes}` (one tool call whose
//! `field` argument is that large).
//! Every request is recorded (API keys redacted to their length).
//! `{{goal}}` in a reply's tool-call arguments stands for the last goal id
//! (`goal-<uuid>`) the request body shows, `{{job}}` for the last job id
//! (`bash-<16 hex>` or `workflow-<16 hex>`), `{{agent:N}}` for the id of
//! the N-th subagent (from 0) whose `started subagent <id>` result it
//! shows.
//!
//! A scenario's `agents` scripts answer concurrent agents: a request is
//! answered from the first `agents` entry whose `when` occurs in one of its
//! user prompts, else from the top-level `replies`. The server sees only the
//! body, so a user prompt is any text of a `role: user` message: `content`
//! as a string, or its `type: text` blocks (Messages API) or parts (chat
//! completions); `tool_result` blocks and other roles do not count. Each
//! script keeps its own position, advanced in arrival order, and a request
//! after a script's last reply gets an HTTP 500 naming the script
//! (`agent script "TASK-A"` or `top-level script`).

mod hostile;
mod render;
mod search;

use bytes::Bytes;
use dsh_llm::scripted::{Reply, Scenario, ScriptKey};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// Called with every recorded request as it arrives.
pub type RequestHook = Box<dyn Fn(&Value) + Send + Sync>;

/// The body type of every response.
type Body = BoxBody<Bytes, std::io::Error>;

/// A running fake server.
pub struct FakeServer {
    addr: SocketAddr,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

struct State {
    scenario: Scenario,
    /// The next reply of each script.
    next: Mutex<HashMap<ScriptKey, usize>>,
    requests: Mutex<Vec<Value>>,
    on_request: Option<RequestHook>,
    /// Which `search` entries have answered.
    search_used: Mutex<Vec<bool>>,
    /// The user texts of the search requests so far, and their signal.
    search_seen: Mutex<Vec<String>>,
    search_arrived: tokio::sync::Notify,
}

impl FakeServer {
    /// Starts serving `scenario` on an ephemeral 127.0.0.1 port.
    /// `on_request` sees every recorded request as it arrives.
    pub async fn start(
        scenario: Scenario,
        on_request: Option<RequestHook>,
    ) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            search_used: Mutex::new(vec![false; scenario.search.len()]),
            search_seen: Mutex::new(Vec::new()),
            search_arrived: tokio::sync::Notify::new(),
            scenario,
            next: Mutex::new(HashMap::new()),
            requests: Mutex::new(Vec::new()),
            on_request,
        });
        let shared = Arc::clone(&state);
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = Arc::clone(&shared);
                tokio::spawn(async move {
                    let service =
                        hyper::service::service_fn(move |req| handle(Arc::clone(&state), req));
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Self { addr, state, task })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Every request so far: `{seq, method, path, headers, body}`.
    pub fn requests(&self) -> Vec<Value> {
        self.state
            .requests
            .lock()
            .map(|r| r.clone())
            .unwrap_or_default()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn handle(
    state: Arc<State>,
    req: Request<Incoming>,
) -> Result<Response<Body>, std::io::Error> {
    let method = req.method().to_string();
    let path = req.uri().path().to_owned();
    let mut headers = Map::new();
    for (name, value) in req.headers() {
        let value = value.to_str().unwrap_or("<binary>");
        let shown = match name.as_str() {
            "x-api-key" | "authorization" => format!("<redacted len={}>", value.len()),
            _ => value.to_owned(),
        };
        headers.insert(name.as_str().to_owned(), json!(shown));
    }
    let bytes = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body: Value = dsh_protocol::lenient::from_slice(&bytes)
        .unwrap_or_else(|_| json!({"__raw__": String::from_utf8_lossy(&bytes)}));
    let record = {
        let mut requests = state
            .requests
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        let record = json!({"seq": requests.len() + 1, "method": method, "path": path, "headers": headers, "body": body});
        requests.push(record.clone());
        record
    };
    if let Some(on_request) = &state.on_request {
        on_request(&record);
    }
    if path.ends_with("/messages") && search::is_search(&body) {
        return answer_search(&state, &body).await;
    }
    let protocol = match path.trim_start_matches("/v1") {
        "/messages" => render::Protocol::Messages,
        "/chat/completions" => render::Protocol::Chat,
        _ => {
            return Ok(plain(
                StatusCode::NOT_FOUND,
                json!({"type": "error", "error": {"type": "not_found_error", "message": format!("no route {path}")}}),
            ));
        }
    };
    let prompts = user_prompts(&body);
    let script = state.scenario.script_for(&prompts);
    let reply = {
        let mut next = state
            .next
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        let index = next.entry(script.key).or_insert(0);
        let reply = script.replies.get(*index).cloned();
        *index += 1;
        reply
    };
    let mut reply = reply;
    if let Some(reply) = &mut reply {
        let body = String::from_utf8_lossy(&bytes);
        if let Some(goal) = dsh_llm::scripted::last_goal_id(&body) {
            reply.substitute_goal_id(goal);
        }
        if let Some(job) = dsh_llm::scripted::last_job_id(&body) {
            reply.substitute_job_id(job);
        }
        reply.substitute_agent_ids(&dsh_llm::scripted::started_agent_ids(&body));
    }
    let Some(reply) = reply else {
        return Ok(plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"type": "error", "error": {"type": "api_error", "message": format!("fake model: {script} has no reply left")}}),
        ));
    };
    if let Some(delay) = reply.delay_ms {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    if let Some(error) = &reply.error {
        return Ok(render::error_response(error));
    }
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("fake")
        .to_owned();
    if let Some(hostile) = &reply.hostile {
        return Ok(hostile::response(protocol, hostile, &model));
    }
    let input_tokens = u64::try_from(bytes.len() / 4).unwrap_or(u64::MAX);
    let events = render::events(protocol, &reply, &model, input_tokens);
    Ok(stream_frames(events, &reply))
}

/// Answers a web search request from the scenario's `search` entries (a
/// default answer when it has none; an HTTP 500 when all are used).
async fn answer_search(state: &State, body: &Value) -> Result<Response<Body>, std::io::Error> {
    let text = search::user_text(body);
    state
        .search_seen
        .lock()
        .map_err(|_| std::io::Error::other("poisoned"))?
        .push(text.clone());
    state.search_arrived.notify_waiters();
    let reply = if state.scenario.search.is_empty() {
        Some(search::default_reply(&text))
    } else {
        let mut used = state
            .search_used
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        search::pick(&state.scenario.search, &mut used, &text)
    };
    let Some(reply) = reply else {
        return Ok(plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"type": "error", "error": {"type": "api_error", "message": format!("fake model: no search reply left for {text:?}")}}),
        ));
    };
    if let Some(awaited) = &reply.after
        && !search_arrives(state, awaited).await?
    {
        return Ok(plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"type": "error", "error": {"type": "api_error", "message": format!("fake model: no search request for {awaited:?} arrived while {text:?} waited")}}),
        ));
    }
    if let Some(delay) = reply.delay_ms {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    if let Some(error) = &reply.error {
        return Ok(render::error_response(error));
    }
    let model = body.get("model").and_then(Value::as_str).unwrap_or("fake");
    Ok(plain(StatusCode::OK, search::body(&reply, &text, model)))
}

/// Waits (at most 10 s) until a search request whose user text contains
/// `awaited` has arrived; whether one did.
async fn search_arrives(state: &State, awaited: &str) -> Result<bool, std::io::Error> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let notified = state.search_arrived.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        let seen = state
            .search_seen
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?
            .iter()
            .any(|t| t.contains(awaited));
        if seen {
            return Ok(true);
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return Ok(false);
        }
    }
}

/// The texts of the `role: user` messages of a Messages or chat-completions
/// body: a string `content`, or each of its `type: text` blocks or parts.
fn user_prompts(body: &Value) -> Vec<&str> {
    let messages = body.get("messages").and_then(Value::as_array);
    messages
        .into_iter()
        .flatten()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .flat_map(|m| match m.get("content") {
            Some(Value::String(text)) => vec![text.as_str()],
            Some(Value::Array(blocks)) => blocks
                .iter()
                .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|b| b.get("text").and_then(Value::as_str))
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

fn plain(status: StatusCode, body: Value) -> Response<Body> {
    let mut response = Response::new(full(body.to_string()));
    *response.status_mut() = status;
    response.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("application/json"),
    );
    response
}

fn full(text: String) -> Body {
    Full::new(Bytes::from(text))
        .map_err(|never| match never {})
        .boxed()
}

/// Streams SSE frames; after the first delta frame, stalls and/or cuts.
fn stream_frames(frames: Vec<render::Frame>, reply: &Reply) -> Response<Body> {
    let (tx, rx) = mpsc::channel::<Result<Frame<Bytes>, std::io::Error>>(16);
    let (stall_ms, cut, reset) = (reply.stall_ms, reply.cut, reply.reset);
    let gap = reply.delta_gap_ms.map(Duration::from_millis);
    tokio::spawn(async move {
        let mut seen_delta = false;
        for frame in frames {
            if tx
                .send(Ok(Frame::data(Bytes::from(frame.text))))
                .await
                .is_err()
            {
                return;
            }
            if let Some(gap) = gap.filter(|_| frame.delta) {
                tokio::time::sleep(gap).await;
            }
            if frame.delta && !seen_delta {
                seen_delta = true;
                if let Some(stall) = stall_ms {
                    tokio::time::sleep(Duration::from_millis(stall)).await;
                }
                if cut {
                    return;
                }
                if reset {
                    // Let the frames already queued reach the socket before
                    // the connection is broken.
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    let _ = tx
                        .send(Err(std::io::Error::other("fake model: connection reset")))
                        .await;
                    return;
                }
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(stream)));
    response.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    response
}
