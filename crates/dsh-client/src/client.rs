use crate::Session;
use dsh_protocol::methods::{
    INITIALIZE, SESSION_RESUME, SESSION_WAIT, SHUTDOWN, WORKING_DIRECTORY_GET,
    WORKING_DIRECTORY_SET,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::{broadcast, oneshot};

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
    /// The runtime's stdout closed before the answer.
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

/// A running runtime and the JSON-RPC connection to it.
pub struct HarnessClient {
    child: Child,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    pending: Pending,
    notifications: broadcast::Sender<Notification>,
    stderr_tail: Arc<Mutex<Vec<String>>>,
    next_id: AtomicU64,
    cwd: PathBuf,
}

const STDERR_LINES: usize = 400;

impl HarnessClient {
    /// Launches `dsh --profile <profile>` in `cwd` with `DSH_HOME` set.
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
        let pending: Pending = Arc::default();
        let (notifications, _) = broadcast::channel(4096);
        let stderr_tail: Arc<Mutex<Vec<String>>> = Arc::default();
        tokio::spawn(read_frames(
            stdout,
            Arc::clone(&pending),
            notifications.clone(),
            Arc::clone(&stderr_tail),
        ));
        let tail = Arc::clone(&stderr_tail);
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
        Ok(Self {
            child,
            stdin: tokio::sync::Mutex::new(Some(stdin)),
            pending,
            notifications,
            stderr_tail,
            next_id: AtomicU64::new(1),
            cwd: config.cwd,
        })
    }

    /// Notifications from now on (every session of the runtime).
    pub fn subscribe(&self) -> broadcast::Receiver<Notification> {
        self.notifications.subscribe()
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
            let mut stdin = self.stdin.lock().await;
            let Some(stdin) = stdin.as_mut() else {
                return Err(self.closed());
            };
            stdin.write_all(line.as_bytes()).await?;
            stdin.flush().await?;
        }
        rx.await.unwrap_or_else(|_| Err(self.closed()))
    }

    fn closed(&self) -> ClientError {
        let tail = self
            .stderr_tail
            .lock()
            .map(|t| t.join("\n"))
            .unwrap_or_default();
        ClientError::Closed {
            stderr: if tail.is_empty() {
                String::new()
            } else {
                format!("; stderr:\n{tail}")
            },
        }
    }

    /// `initialize` with the client's cwd.
    pub async fn initialize(&self, provider: &str, model: &str) -> Result<Value, ClientError> {
        let params = json!({"cwd": self.cwd, "provider": provider, "model": model});
        self.request(INITIALIZE, Some(params)).await
    }

    /// A handle on session `id` (created by the runtime on first use).
    pub fn session(&self, id: impl Into<String>) -> Session<'_> {
        Session::new(self, id.into())
    }

    /// `session/resume`: reopens a stored session.
    pub async fn resume(&self, id: &str) -> Result<Session<'_>, ClientError> {
        self.request(SESSION_RESUME, Some(json!({"sessionId": id})))
            .await?;
        Ok(self.session(id))
    }

    /// `session/working-directory/get`.
    pub async fn working_directory(&self, id: &str) -> Result<String, ClientError> {
        let result = self
            .request(WORKING_DIRECTORY_GET, Some(json!({"sessionId": id})))
            .await?;
        cwd_of(&result)
    }

    /// `session/working-directory/set`.
    pub async fn set_working_directory(&self, id: &str, path: &str) -> Result<String, ClientError> {
        let result = self
            .request(
                WORKING_DIRECTORY_SET,
                Some(json!({"sessionId": id, "path": path})),
            )
            .await?;
        cwd_of(&result)
    }

    /// `session/wait`: returns once the session is idle.
    pub async fn wait(&self, id: &str) -> Result<(), ClientError> {
        self.request(SESSION_WAIT, Some(json!({"sessionId": id})))
            .await
            .map(drop)
    }

    /// `shutdown`, then waits for the runtime to exit (killing it if it
    /// does not within 5 s) and returns its exit status.
    pub async fn close(mut self) -> Result<ExitStatus, ClientError> {
        let answered =
            tokio::time::timeout(Duration::from_secs(5), self.request(SHUTDOWN, None)).await;
        self.stdin.lock().await.take();
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

fn cwd_of(result: &Value) -> Result<String, ClientError> {
    result["cwd"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| ClientError::Protocol(format!("no cwd in {result}")))
}

/// Reads stdout frames: answers go to their waiter, notifications to the
/// subscribers; lines that are not JSON objects are skipped.
async fn read_frames(
    stdout: tokio::process::ChildStdout,
    pending: Pending,
    notifications: broadcast::Sender<Notification>,
    stderr_tail: Arc<Mutex<Vec<String>>>,
) {
    let mut lines = BufReader::new(stdout).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(Value::Object(mut frame)) = serde_json::from_str::<Value>(&line) else {
            tracing::debug!("skipped a line that is not a frame");
            continue;
        };
        if let Some(Value::String(method)) = frame.remove("method") {
            let params = frame.remove("params").unwrap_or(Value::Null);
            let _ = notifications.send(Notification { method, params });
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
    let tail = stderr_tail.lock().map(|t| t.join("\n")).unwrap_or_default();
    let waiters: Vec<_> = pending
        .lock()
        .map(|mut p| p.drain().collect())
        .unwrap_or_default();
    for (_, waiter) in waiters {
        let stderr = if tail.is_empty() {
            String::new()
        } else {
            format!("; stderr:\n{tail}")
        };
        let _ = waiter.send(Err(ClientError::Closed { stderr }));
    }
}
