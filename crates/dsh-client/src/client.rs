use crate::Session;
use dsh_protocol::methods::{
    APPROVAL_REQUEST, ApprovalRequestParams, ApprovalResponse, CancelParams, CancelResult,
    EmptyResult, EventsParams, EventsResult, INITIALIZE, InitializeExtensions, InitializeParams,
    SESSION_CANCEL, SESSION_EVENTS, SESSION_RESUME, SESSION_WAIT, SHUTDOWN, SessionParams,
    SetWorkingDirectoryParams, WORKING_DIRECTORY_GET, WORKING_DIRECTORY_SET,
    WorkingDirectoryResult,
};
use dsh_protocol::methods::{
    ForkParams, ForkResult, ListParams, ListResult, SESSION_FORK, SESSION_LIST, SESSION_USAGE,
    UsageParams, UsageResult,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::future::Future;
use std::ops::Deref;
use std::path::PathBuf;
use std::pin::Pin;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::{broadcast, mpsc, oneshot};

/// How to launch the runtime.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The runtime executable.
    pub dsh_bin: PathBuf,
    /// `sdk` (default) or `sdk-minimal`.
    pub profile: String,
    /// `DSH_HOME` of the runtime (always explicit).
    pub dsh_home: PathBuf,
    /// The workspace: the runtime's cwd and the `initialize` cwd.
    pub cwd: PathBuf,
    /// Extra environment variables for the runtime.
    pub env: Vec<(String, String)>,
}

impl ClientConfig {
    /// A configuration for the `sdk` profile.
    pub fn new(
        dsh_bin: impl Into<PathBuf>,
        dsh_home: impl Into<PathBuf>,
        cwd: impl Into<PathBuf>,
    ) -> Self {
        Self {
            dsh_bin: dsh_bin.into(),
            profile: "sdk".into(),
            dsh_home: dsh_home.into(),
            cwd: cwd.into(),
            env: Vec::new(),
        }
    }
}

/// Why a client call failed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The runtime could not be started.
    #[error("cannot start {bin}: {source}")]
    Spawn {
        /// The executable.
        bin: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The runtime answered with an error frame; `message` is its text.
    #[error("{message} (code {code})")]
    Rpc {
        /// The JSON-RPC error code.
        code: i64,
        /// The error message, verbatim.
        message: String,
    },
    /// The runtime's output closed before the answer.
    #[error("the runtime closed its output{stderr}")]
    Closed {
        /// The last lines the runtime wrote to stderr, if any.
        stderr: String,
    },
    /// Writing to the runtime failed.
    #[error("cannot write to the runtime: {0}")]
    Io(#[from] std::io::Error),
    /// A frame did not have the expected shape.
    #[error("unexpected answer from the runtime: {0}")]
    Protocol(String),
}

/// A runtime → client notification.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// `session.event`, `session.status`, `subagent.started`, …
    pub method: String,
    /// Its params.
    pub params: Value,
}

type Pending = Arc<Mutex<HashMap<String, oneshot::Sender<Result<Value, ClientError>>>>>;
type Tail = Arc<Mutex<Vec<String>>>;
type Writer = Arc<tokio::sync::Mutex<Option<Box<dyn AsyncWrite + Unpin + Send>>>>;

/// Answers the runtime's `approval/request` (see
/// [`Client::set_approval_handler`]).
pub type ApprovalHandler = Arc<
    dyn Fn(ApprovalRequestParams) -> Pin<Box<dyn Future<Output = ApprovalResponse> + Send>>
        + Send
        + Sync,
>;

type Handler = Arc<Mutex<Option<ApprovalHandler>>>;
type Sinks = Arc<Mutex<Vec<mpsc::UnboundedSender<Notification>>>>;

/// JSON-RPC's "method not found", the answer to a runtime request the
/// client has no handler for.
const METHOD_NOT_FOUND: i64 = -32601;

/// A JSON-RPC connection to a runtime over any pair of byte streams.
pub struct Client {
    writer: Writer,
    approvals: Handler,
    pending: Pending,
    notifications: broadcast::Sender<Notification>,
    sinks: Sinks,
    stderr_tail: Tail,
    next_id: AtomicU64,
    cwd: PathBuf,
}

/// A runtime launched as a subprocess, and the [`Client`] on its stdio
/// (every [`Client`] method is available on it).
pub struct HarnessClient {
    client: Client,
    child: Child,
}

const STDERR_LINES: usize = 400;

impl Client {
    /// Talks to a runtime that reads requests from `writer` and writes
    /// frames to `reader`; `cwd` is the workspace [`initialize`](Self::initialize)
    /// sends. Frames are read by a task on the current Tokio runtime.
    ///
    /// # Panics
    ///
    /// Outside a Tokio runtime.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    /// let (ours, theirs) = tokio::io::duplex(4096);
    /// let (reader, writer) = tokio::io::split(ours);
    /// let client = dsh_client::Client::connect(reader, writer, "/ws");
    /// // A runtime that answers the one request it reads.
    /// tokio::spawn(async move {
    ///     let (input, mut output) = tokio::io::split(theirs);
    ///     let mut lines = BufReader::new(input).lines();
    ///     let request: serde_json::Value =
    ///         serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    ///     assert_eq!(request["params"]["cwd"], "/ws");
    ///     let answer = serde_json::json!({"jsonrpc": "2.0", "id": request["id"],
    ///         "result": {"serverInfo": {"name": "demo", "version": "1"}}});
    ///     output.write_all(format!("{answer}\n").as_bytes()).await.unwrap();
    /// });
    /// let info = client.initialize("scripted", "echo").await.unwrap();
    /// assert_eq!(info["serverInfo"]["name"], "demo");
    /// # }
    /// ```
    pub fn connect(
        reader: impl AsyncRead + Unpin + Send + 'static,
        writer: impl AsyncWrite + Unpin + Send + 'static,
        cwd: impl Into<PathBuf>,
    ) -> Self {
        let pending: Pending = Arc::default();
        let (notifications, _) = broadcast::channel(4096);
        let stderr_tail: Tail = Arc::default();
        let writer: Writer = Arc::new(tokio::sync::Mutex::new(Some(Box::new(writer))));
        let approvals: Handler = Arc::default();
        let sinks: Sinks = Arc::default();
        tokio::spawn(read_frames(
            reader,
            Frames {
                pending: Arc::clone(&pending),
                notifications: notifications.clone(),
                sinks: Arc::clone(&sinks),
                stderr_tail: Arc::clone(&stderr_tail),
                writer: Arc::clone(&writer),
                approvals: Arc::clone(&approvals),
            },
        ));
        Self {
            writer,
            approvals,
            pending,
            notifications,
            sinks,
            stderr_tail,
            next_id: AtomicU64::new(1),
            cwd: cwd.into(),
        }
    }

    /// Notifications from now on (every session of the runtime).
    pub fn subscribe(&self) -> broadcast::Receiver<Notification> {
        self.notifications.subscribe()
    }

    /// Every notification from now on, in order, none dropped: unlike
    /// [`subscribe`](Self::subscribe)'s bounded broadcast, a slow reader
    /// is never skipped past (what it has not read waits in memory). The
    /// stream ends when the runtime's output does.
    pub fn forward(&self) -> mpsc::UnboundedReceiver<Notification> {
        let (tx, rx) = mpsc::unbounded_channel();
        if let Ok(mut sinks) = self.sinks.lock() {
            sinks.push(tx);
        }
        rx
    }

    /// Sends one request and waits for its answer.
    pub async fn request(&self, method: &str, params: Option<Value>) -> Result<Value, ClientError> {
        let id = format!("dsh-client-{}", self.next_id.fetch_add(1, Ordering::SeqCst));
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id.clone(), tx);
        }
        let mut frame = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            frame["params"] = params;
        }
        let line = format!("{frame}\n");
        {
            let mut writer = self.writer.lock().await;
            let Some(writer) = writer.as_mut() else {
                return Err(self.closed());
            };
            writer.write_all(line.as_bytes()).await?;
            writer.flush().await?;
        }
        rx.await.unwrap_or_else(|_| Err(self.closed()))
    }

    /// Any request: `method` with typed params (the structs of
    /// [`dsh_protocol::methods`]), its result read as `R`.
    pub async fn call<R: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<R, ClientError> {
        let params =
            serde_json::to_value(params).map_err(|e| ClientError::Protocol(e.to_string()))?;
        let result = self.request(method, Some(params)).await?;
        serde_json::from_value(result).map_err(|e| ClientError::Protocol(format!("{method}: {e}")))
    }

    pub(crate) fn closed(&self) -> ClientError {
        closed(&self.stderr_tail)
    }

    /// `initialize` with the client's cwd (the official params only).
    pub async fn initialize(&self, provider: &str, model: &str) -> Result<Value, ClientError> {
        self.initialize_with(provider, model, &InitializeExtensions::default())
            .await
    }

    /// `initialize` with dsh's extension fields (client capabilities,
    /// approval timeout and rules); declare `approvals` only with a handler
    /// set ([`set_approval_handler`](Self::set_approval_handler)), or every
    /// approval is answered "method not found" and fails closed.
    pub async fn initialize_with(
        &self,
        provider: &str,
        model: &str,
        extensions: &InitializeExtensions,
    ) -> Result<Value, ClientError> {
        let mut params = serde_json::to_value(InitializeParams {
            cwd: self.cwd.to_string_lossy().into_owned(),
            provider: provider.to_owned(),
            model: model.to_owned(),
            reasoning_effort: None,
            max_tokens: None,
        })
        .map_err(|e| ClientError::Protocol(e.to_string()))?;
        let extra =
            serde_json::to_value(extensions).map_err(|e| ClientError::Protocol(e.to_string()))?;
        if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
            params.extend(extra);
        }
        self.request(INITIALIZE, Some(params)).await
    }

    /// Answers the runtime's `approval/request` with `handler` from now on
    /// (each request on a task of its own).
    pub fn set_approval_handler(&self, handler: ApprovalHandler) {
        if let Ok(mut slot) = self.approvals.lock() {
            *slot = Some(handler);
        }
    }

    /// `session/cancel` (dsh's extension): stops the session's running
    /// turn; `drop_queued` also drops the prompts queued behind it,
    /// `keep_jobs` keeps the background jobs it started.
    pub async fn cancel(
        &self,
        id: &str,
        drop_queued: bool,
        keep_jobs: bool,
    ) -> Result<CancelResult, ClientError> {
        let params = CancelParams {
            session_id: id.to_owned(),
            drop_queued,
            keep_jobs,
        };
        self.call(SESSION_CANCEL, &params).await
    }

    /// `session/events` (dsh's extension): the stored events of session
    /// `id` after `after_seq` (all when `None`), at most `limit` (the
    /// runtime's page size when `None`).
    pub async fn events(
        &self,
        id: &str,
        after_seq: Option<u64>,
        limit: Option<usize>,
    ) -> Result<EventsResult, ClientError> {
        let params = EventsParams {
            session_id: id.to_owned(),
            after_seq,
            limit,
        };
        self.call(SESSION_EVENTS, &params).await
    }

    /// `session/usage` (dsh's extension): session `id`'s token counts and
    /// cost, in total, per model and per turn, summed from its log.
    pub async fn usage(&self, id: &str) -> Result<UsageResult, ClientError> {
        let params = UsageParams {
            session_id: id.to_owned(),
        };
        self.call(SESSION_USAGE, &params).await
    }

    /// `session/list` (dsh's extension): a page of the sessions stored in
    /// the runtime's `DSH_HOME`, newest activity first; pass the page's
    /// `next_cursor` as `params.cursor` for the next one.
    pub async fn list_sessions(&self, params: &ListParams) -> Result<ListResult, ClientError> {
        self.call(SESSION_LIST, params).await
    }

    /// `session/fork` (dsh's extension): a new stored session holding
    /// session `id`'s events through the last turn that ended at or before
    /// `at_seq` (the last completed turn when `None`), named `new_id` (a
    /// new UUID when `None`). Resume it to prompt it.
    pub async fn fork_session(
        &self,
        id: &str,
        at_seq: Option<u64>,
        new_id: Option<&str>,
    ) -> Result<ForkResult, ClientError> {
        let params = ForkParams {
            session_id: id.to_owned(),
            at_seq,
            new_session_id: new_id.map(str::to_owned),
        };
        self.call(SESSION_FORK, &params).await
    }

    /// A handle on session `id` (created by the runtime on first use).
    pub fn session(&self, id: impl Into<String>) -> Session<'_> {
        Session::new(self, id.into())
    }

    /// `session/resume`: reopens a stored session.
    pub async fn resume(&self, id: &str) -> Result<Session<'_>, ClientError> {
        self.call::<EmptyResult>(SESSION_RESUME, &session_params(id))
            .await?;
        Ok(self.session(id))
    }

    /// `session/working-directory/get`.
    pub async fn working_directory(&self, id: &str) -> Result<String, ClientError> {
        let result: WorkingDirectoryResult = self
            .call(WORKING_DIRECTORY_GET, &session_params(id))
            .await?;
        Ok(result.cwd)
    }

    /// `session/working-directory/set`.
    pub async fn set_working_directory(&self, id: &str, path: &str) -> Result<String, ClientError> {
        let params = SetWorkingDirectoryParams {
            session_id: id.to_owned(),
            path: path.to_owned(),
        };
        let result: WorkingDirectoryResult = self.call(WORKING_DIRECTORY_SET, &params).await?;
        Ok(result.cwd)
    }

    /// `session/wait`: returns once the session is idle.
    pub async fn wait(&self, id: &str) -> Result<(), ClientError> {
        self.call::<EmptyResult>(SESSION_WAIT, &session_params(id))
            .await
            .map(drop)
    }

    /// `shutdown`, then closes the runtime's input.
    pub async fn shutdown(&self) -> Result<(), ClientError> {
        let answered = self.request(SHUTDOWN, None).await.map(drop);
        self.close_input().await;
        answered
    }

    async fn close_input(&self) {
        self.writer.lock().await.take();
    }
}

impl HarnessClient {
    /// Launches `dsh --profile <profile>` in `cwd` with `DSH_HOME` set and
    /// connects a [`Client`] to its stdio.
    pub async fn spawn(config: ClientConfig) -> Result<Self, ClientError> {
        let mut command = Command::new(&config.dsh_bin);
        command
            .args(["--profile", &config.profile])
            .current_dir(&config.cwd)
            .env("DSH_HOME", &config.dsh_home)
            .envs(config.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|source| ClientError::Spawn {
            bin: config.dsh_bin.clone(),
            source,
        })?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(ClientError::Protocol(
                "the runtime's stdio is not piped".into(),
            ));
        };
        let client = Client::connect(stdout, stdin, config.cwd);
        let tail = Arc::clone(&client.stderr_tail);
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if let Ok(mut tail) = tail.lock() {
                    if tail.len() == STDERR_LINES {
                        tail.remove(0);
                    }
                    tail.push(line);
                }
            }
        });
        Ok(Self { client, child })
    }

    /// `shutdown`, then waits for the runtime to exit (killing it if it
    /// does not within 5 s) and returns its exit status.
    pub async fn close(mut self) -> Result<ExitStatus, ClientError> {
        let answered =
            tokio::time::timeout(Duration::from_secs(5), self.client.request(SHUTDOWN, None)).await;
        self.client.close_input().await;
        if !matches!(answered, Ok(Ok(_))) {
            let _ = self.child.start_kill();
        }
        match tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await {
            Ok(status) => Ok(status?),
            Err(_) => {
                self.child.start_kill()?;
                Ok(self.child.wait().await?)
            }
        }
    }
}

impl Deref for HarnessClient {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

fn session_params(id: &str) -> SessionParams {
    SessionParams {
        session_id: id.to_owned(),
    }
}

/// [`ClientError::Closed`] with the runtime's last stderr lines.
fn closed(stderr_tail: &Mutex<Vec<String>>) -> ClientError {
    let tail = stderr_tail.lock().map(|t| t.join("\n")).unwrap_or_default();
    ClientError::Closed {
        stderr: if tail.is_empty() {
            String::new()
        } else {
            format!("; stderr:\n{tail}")
        },
    }
}

/// What the frame reader delivers to.
struct Frames {
    pending: Pending,
    notifications: broadcast::Sender<Notification>,
    sinks: Sinks,
    stderr_tail: Tail,
    writer: Writer,
    approvals: Handler,
}

/// Reads frames: answers go to their waiter, notifications to the
/// subscribers, the runtime's requests to the approval handler (or are
/// answered "method not found"); lines that are not JSON objects are
/// skipped.
async fn read_frames(reader: impl AsyncRead + Unpin, frames: Frames) {
    let Frames {
        pending,
        notifications,
        sinks,
        stderr_tail,
        writer,
        approvals,
    } = frames;
    let mut lines = BufReader::new(reader).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(Value::Object(mut frame)) = serde_json::from_str::<Value>(&line) else {
            tracing::debug!("skipped a line that is not a frame");
            continue;
        };
        if let Some(Value::String(method)) = frame.remove("method") {
            let params = frame.remove("params").unwrap_or(Value::Null);
            match frame.remove("id") {
                Some(id) => {
                    let handler = approvals.lock().ok().and_then(|h| h.clone());
                    tokio::spawn(answer_request(
                        Arc::clone(&writer),
                        handler,
                        id,
                        method,
                        params,
                    ));
                }
                None => {
                    let notification = Notification { method, params };
                    if let Ok(mut sinks) = sinks.lock() {
                        sinks.retain(|sink| sink.send(notification.clone()).is_ok());
                    }
                    let _ = notifications.send(notification);
                }
            }
            continue;
        }
        let Some(id) = frame
            .get("id")
            .map(|id| id.as_str().map_or_else(|| id.to_string(), str::to_owned))
        else {
            continue;
        };
        let waiter = pending.lock().ok().and_then(|mut p| p.remove(&id));
        let Some(waiter) = waiter else { continue };
        let answer = match frame.remove("error") {
            Some(error) => Err(ClientError::Rpc {
                code: error["code"].as_i64().unwrap_or(0),
                message: error["message"].as_str().unwrap_or_default().to_owned(),
            }),
            None => Ok(frame.remove("result").unwrap_or(Value::Null)),
        };
        let _ = waiter.send(answer);
    }
    let waiters: Vec<_> = pending
        .lock()
        .map(|mut p| p.drain().collect())
        .unwrap_or_default();
    for (_, waiter) in waiters {
        let _ = waiter.send(Err(closed(&stderr_tail)));
    }
}

/// Answers one request of the runtime: `approval/request` through the
/// handler, anything else (or without a handler) "method not found".
async fn answer_request(
    writer: Writer,
    handler: Option<ApprovalHandler>,
    id: Value,
    method: String,
    params: Value,
) {
    let frame = match (method.as_str(), handler) {
        (APPROVAL_REQUEST, Some(handler)) => match serde_json::from_value(params) {
            Ok(params) => {
                let answer = handler(params).await;
                json!({"jsonrpc": "2.0", "id": id, "result": answer})
            }
            Err(err) => json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32602, "message": format!("invalid {APPROVAL_REQUEST} params: {err}")}}),
        },
        _ => json!({"jsonrpc": "2.0", "id": id,
            "error": {"code": METHOD_NOT_FOUND, "message": format!("method not found: {method}")}}),
    };
    let line = format!("{frame}\n");
    if let Some(writer) = writer.lock().await.as_mut() {
        let written = writer.write_all(line.as_bytes()).await;
        if written.is_ok() {
            let _ = writer.flush().await;
        }
    }
}
