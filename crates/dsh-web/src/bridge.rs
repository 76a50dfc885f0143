//! The page's way into the agent core: one in-process SDK server (the same
//! `dsh-server` every front end drives) and the `dsh-client` connected to
//! it. The page's requests pass through as SDK requests; the server's
//! notifications and approval requests are broadcast to every open page
//! on the live channel, and any page may answer an approval.

use bytes::Bytes;
use dsh_client::{ApprovalHandler, Client, ClientError};
use dsh_protocol::FrameWriter;
use dsh_protocol::methods::{ApprovalDecision, ApprovalRequestParams, ApprovalResponse};
use dsh_server::{Server, ServerConfig, serve};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{broadcast, oneshot};
use tokio::task::JoinHandle;
use tokio_util::io::SyncIoBridge;

/// Bytes buffered in the in-memory pipe between client and server.
const PIPE_BYTES: usize = 1 << 20;

/// Live messages kept for a page that reads slowly; past it the page's
/// stream ends and it catches up from `session/events`.
const LIVE_BACKLOG: usize = 4096;

/// The SDK methods a page may call (not `shutdown`).
const METHODS: [&str; 11] = [
    "initialize",
    "session/prompt",
    "session/resume",
    "session/cancel",
    "session/list",
    "session/events",
    "session/usage",
    "session/fork",
    "session/wait",
    "session/working-directory/get",
    "session/working-directory/set",
];

/// Why the bridge could not start.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// The server's writer thread could not start.
    #[error("cannot start the session server: {0}")]
    Writer(std::io::Error),
    /// `initialize` with the launch's route failed.
    #[error("{0}")]
    Initialize(String),
}

/// An approval put to the pages: its event, and where its answer goes.
struct Question {
    event: Arc<Live>,
    answer: oneshot::Sender<ApprovalResponse>,
}

/// Approvals put to the pages and not answered yet.
#[derive(Default)]
struct Waiting {
    next: AtomicU64,
    questions: Mutex<HashMap<u64, Question>>,
}

/// The server, its client and the live channel.
pub struct Bridge {
    client: Client,
    live: broadcast::Sender<Arc<Live>>,
    waiting: Arc<Waiting>,
    serving: JoinHandle<()>,
    info: Value,
}

/// One message of the live channel: its kind (`notification`,
/// `approval`, `approval-settled`, `lagged`) and its JSON data.
#[derive(Debug, Clone)]
pub struct Live {
    /// The kind.
    pub event: &'static str,
    /// The data, serialised.
    pub data: String,
}

impl Live {
    /// A message of `event` carrying `data`.
    pub fn new(event: &'static str, data: &Value) -> Arc<Self> {
        Arc::new(Self {
            event,
            data: data.to_string(),
        })
    }

    /// As a Server-Sent Event.
    pub fn sse(&self) -> Bytes {
        Bytes::from(format!("event: {}\ndata: {}\n\n", self.event, self.data))
    }

    /// As a WebSocket text message: `{"event": …, "data": …}`.
    pub fn frame(&self) -> String {
        format!("{{\"event\":\"{}\",\"data\":{}}}", self.event, self.data)
    }
}

impl Bridge {
    /// Starts the server, initializes it with the launch's route in
    /// `cwd`, and starts broadcasting.
    pub async fn start(
        config: ServerConfig,
        cwd: &Path,
        provider: &str,
        model: &str,
    ) -> Result<Self, BridgeError> {
        let (ours, theirs) = tokio::io::duplex(PIPE_BYTES);
        let (requests, frames) = tokio::io::split(theirs);
        let (writer, _writer_thread) =
            FrameWriter::spawn(SyncIoBridge::new(frames)).map_err(BridgeError::Writer)?;
        let server = Server::new(config, writer);
        let serving = tokio::spawn(async move {
            if let Err(err) = serve(&server, requests).await {
                tracing::warn!("the web session server stopped reading: {err}");
            }
        });
        let (reader, writer) = tokio::io::split(ours);
        let client = Client::connect(reader, writer, cwd);
        let (live, _) = broadcast::channel(LIVE_BACKLOG);
        let mut notifications = client.forward();
        let sender = live.clone();
        tokio::spawn(async move {
            while let Some(note) = notifications.recv().await {
                let message = json!({"method": note.method, "params": note.params});
                let _ = sender.send(Live::new("notification", &message));
            }
        });
        let waiting = Arc::new(Waiting::default());
        client.set_approval_handler(approval_handler(&waiting, &live));
        let bridge = Self {
            client,
            live,
            waiting,
            serving,
            info: json!({
                "version": env!("CARGO_PKG_VERSION"),
                "workspace": cwd,
                "provider": provider,
                "model": model,
            }),
        };
        let answer = bridge
            .rpc(
                "initialize",
                json!({"cwd": cwd, "provider": provider, "model": model}),
            )
            .await;
        if let Some(message) = answer.pointer("/error/message").and_then(Value::as_str) {
            return Err(BridgeError::Initialize(message.to_owned()));
        }
        Ok(bridge)
    }

    /// The defaults a new session starts from.
    pub fn info(&self) -> &Value {
        &self.info
    }

    /// A new subscriber to the live channel, and the approvals waiting now
    /// (a page opened or reloaded while a tool waits sees the question; it
    /// may also come on the channel: a page keeps one card per id).
    pub fn subscribe(&self) -> (broadcast::Receiver<Arc<Live>>, Vec<Arc<Live>>) {
        let receiver = self.live.subscribe();
        let mut waiting: Vec<(u64, Arc<Live>)> = self
            .waiting
            .questions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|(id, question)| (*id, Arc::clone(&question.event)))
            .collect();
        waiting.sort_by_key(|(id, _)| *id);
        (
            receiver,
            waiting.into_iter().map(|(_, event)| event).collect(),
        )
    }

    /// One SDK request from a page: `{"result": …}` or `{"error":
    /// {"message": …}}`. `initialize` always declares the capabilities the
    /// page relies on (approvals, deltas, usage).
    pub async fn rpc(&self, method: &str, mut params: Value) -> Value {
        if !METHODS.contains(&method) {
            return json!({"error": {"message": format!("{method} is not available to the page")}});
        }
        if method == "initialize"
            && let Some(params) = params.as_object_mut()
        {
            params.insert(
                "protocolVersion".into(),
                json!(dsh_protocol::methods::PROTOCOL_VERSION),
            );
            params.insert(
                "clientCapabilities".into(),
                json!({"approvals": true, "deltas": true, "usage": true}),
            );
        }
        match self.client.request(method, Some(params)).await {
            Ok(result) => json!({ "result": result }),
            Err(ClientError::Rpc { message, .. }) => json!({"error": {"message": message}}),
            Err(err) => json!({"error": {"message": err.to_string()}}),
        }
    }

    /// Answers the approval `id`; `false` when it is not waiting (answered
    /// already, or withdrawn).
    pub fn answer(&self, id: u64, response: ApprovalResponse) -> bool {
        let sender = self
            .waiting
            .questions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&id);
        sender.is_some_and(|question| question.answer.send(response).is_ok())
    }

    /// Shuts the server down: `shutdown` is answered once its sessions
    /// are closed and their logs synced.
    pub async fn stop(&self) {
        if let Err(err) = self.client.shutdown().await {
            tracing::warn!("the web session server did not shut down cleanly: {err}");
        }
        self.serving.abort();
    }
}

/// Puts each approval to every page and waits for the first answer; a
/// page that never answers leaves the server's own time limit to decide.
fn approval_handler(
    waiting: &Arc<Waiting>,
    live: &broadcast::Sender<Arc<Live>>,
) -> ApprovalHandler {
    let waiting = Arc::clone(waiting);
    let live = live.clone();
    Arc::new(move |params: ApprovalRequestParams| {
        let id = waiting.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (sender, answer) = oneshot::channel();
        let event = Live::new("approval", &json!({"id": id, "params": params}));
        waiting
            .questions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(
                id,
                Question {
                    event: Arc::clone(&event),
                    answer: sender,
                },
            );
        let settled = Settled {
            id,
            waiting: Arc::clone(&waiting),
            live: live.clone(),
        };
        let _ = live.send(event);
        Box::pin(async move {
            let _settled = settled;
            answer.await.unwrap_or(ApprovalResponse {
                decision: ApprovalDecision::Reject,
                message: Some("the page was closed".into()),
            })
        })
    })
}

/// Withdraws an approval from the pages when it is answered or dropped.
struct Settled {
    id: u64,
    waiting: Arc<Waiting>,
    live: broadcast::Sender<Arc<Live>>,
}

impl Drop for Settled {
    fn drop(&mut self) {
        self.waiting
            .questions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.id);
        let _ = self
            .live
            .send(Live::new("approval-settled", &json!({"id": self.id})));
    }
}
