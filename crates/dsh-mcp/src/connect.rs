//! Opening a connection to a server: a child process in its own process
//! group with a scrubbed environment, or a streamable-HTTP endpoint, then
//! the MCP handshake through rmcp.

use crate::bounded::{BoundedLines, Refusal};
use crate::config::{ServerConfig, Transport};
use rmcp::model::{ClientCapabilities, ClientInfo, Implementation};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use std::collections::HashMap;
use std::collections::HashSet;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Most bytes of one stderr line of a server copied to the runtime's log.
const STDERR_LINE_MAX: usize = 2048;

/// Redirects an HTTP server may answer with before a request fails.
const MAX_REDIRECTS: usize = 5;

/// The client side of one connection: notices `tools/list_changed`.
pub(crate) struct Handler {
    changed: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientInfo {
        ClientInfo::new(
            ClientCapabilities::default(),
            Implementation::new("dsh", env!("CARGO_PKG_VERSION")),
        )
    }

    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.changed.store(true, Ordering::Release);
        std::future::ready(())
    }
}

/// A live connection.
pub(crate) struct Connection {
    /// The rmcp client.
    pub service: RunningService<RoleClient, Handler>,
    /// Set when the server said its tools changed.
    pub changed: Arc<AtomicBool>,
    /// Why the reader of a stdio server's output gave up, if it did.
    pub refusal: Refusal,
    /// The process of a stdio server (the leader of its process group).
    pub child: Option<ProcessGroup>,
}

/// The process groups of a hub's stdio servers, so that a shutdown can
/// kill them all at once, synchronously, whatever state their servers
/// are in; once closed, no new server starts.
#[derive(Default)]
pub(crate) struct Processes {
    groups: Mutex<HashSet<i32>>,
    closed: AtomicBool,
}

impl Processes {
    /// Records a group; false (and the group is killed) once closed.
    fn add(&self, pgid: rustix::process::Pid) -> bool {
        let mut groups = self.groups.lock().unwrap_or_else(PoisonError::into_inner);
        if self.closed.load(Ordering::Acquire) {
            kill_group(pgid);
            return false;
        }
        groups.insert(pgid.as_raw_nonzero().get());
        true
    }

    fn remove(&self, pgid: rustix::process::Pid) {
        self.groups
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&pgid.as_raw_nonzero().get());
    }

    /// Kills every group and refuses new ones.
    pub(crate) fn kill_all(&self) {
        let groups = {
            let mut groups = self.groups.lock().unwrap_or_else(PoisonError::into_inner);
            self.closed.store(true, Ordering::Release);
            std::mem::take(&mut *groups)
        };
        for pgid in groups
            .into_iter()
            .filter_map(rustix::process::Pid::from_raw)
        {
            kill_group(pgid);
        }
    }
}

fn kill_group(pgid: rustix::process::Pid) {
    let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
}

/// A child process and the group it leads; the group is killed when this
/// is dropped, so no server outlives its connection.
pub(crate) struct ProcessGroup {
    child: Child,
    pgid: Option<rustix::process::Pid>,
    processes: Arc<Processes>,
}

impl ProcessGroup {
    /// Kills the whole group and reaps the leader.
    pub(crate) async fn kill(mut self) {
        self.signal_group();
        let _ = self.child.kill().await;
    }

    fn signal_group(&self) {
        if let Some(pgid) = self.pgid {
            kill_group(pgid);
            self.processes.remove(pgid);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.signal_group();
        let _ = self.child.start_kill();
    }
}

/// Why a server could not be reached.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConnectError {
    /// The program could not be started.
    #[error("could not start \"{command}\": {source}")]
    Spawn {
        /// The program.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// The HTTP client could not be built.
    #[error("could not start: {0}")]
    Http(String),
    /// The runtime is shutting down: no server starts any more.
    #[error("could not start: the runtime is shutting down")]
    Stopping,
    /// The handshake failed.
    #[error("could not start: the MCP handshake failed: {0}")]
    Handshake(String),
    /// The handshake took too long.
    #[error("could not start: no MCP handshake within {} ms", .0.as_millis())]
    Timeout(Duration),
}

/// What a connection needs besides the server's own configuration.
pub(crate) struct ConnectOptions<'a> {
    /// The working directory of a stdio server without its own `cwd`.
    pub workspace: &'a Path,
    /// The largest message a stdio server may send.
    pub message_max_bytes: usize,
    /// How long the handshake may take.
    pub handshake_timeout: Duration,
    /// Where the process group of a stdio server is recorded.
    pub processes: &'a Arc<Processes>,
    /// Variables a stdio server does not inherit.
    pub hidden_env: &'a dsh_tools::HiddenEnv,
}

/// Starts the server and completes the handshake.
pub(crate) async fn connect(
    config: &ServerConfig,
    options: &ConnectOptions<'_>,
) -> Result<Connection, ConnectError> {
    let changed = Arc::new(AtomicBool::new(false));
    let handler = Handler {
        changed: Arc::clone(&changed),
    };
    let refusal = Refusal::default();
    let (service, child) = match &config.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => {
            let cwd = cwd.as_deref().unwrap_or(options.workspace);
            let mut child = spawn(&config.name, command, args, env, cwd, options)?;
            let (Some(stdin), Some(stdout)) = (child.child.stdin.take(), child.child.stdout.take())
            else {
                return Err(ConnectError::Handshake(
                    "the server's pipes are missing".into(),
                ));
            };
            let stdout = BoundedLines::new(stdout, options.message_max_bytes, refusal.clone());
            let service =
                handshake(handler.serve((stdout, stdin)), options.handshake_timeout).await;
            match service {
                Ok(service) => (service, Some(child)),
                Err(err) => {
                    child.kill().await;
                    return Err(refusal.reason().map_or(err, ConnectError::Handshake));
                }
            }
        }
        Transport::Http { url, headers } => {
            // Installing the process-wide crypto provider fails harmlessly
            // when one is already installed.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let client = reqwest::Client::builder()
                .connect_timeout(options.handshake_timeout)
                .redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS))
                .build()
                .map_err(|e| ConnectError::Http(e.to_string()))?;
            let mut custom = HashMap::new();
            for (name, value) in headers {
                if let (Ok(name), Ok(value)) = (
                    reqwest::header::HeaderName::from_bytes(name.as_bytes()),
                    reqwest::header::HeaderValue::from_str(value),
                ) {
                    custom.insert(name, value);
                }
            }
            let transport = StreamableHttpClientTransport::with_client(
                client,
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(custom),
            );
            (
                handshake(handler.serve(transport), options.handshake_timeout).await?,
                None,
            )
        }
    };
    Ok(Connection {
        service,
        changed,
        refusal,
        child,
    })
}

async fn handshake<E: std::fmt::Display>(
    serve: impl Future<Output = Result<RunningService<RoleClient, Handler>, E>>,
    limit: Duration,
) -> Result<RunningService<RoleClient, Handler>, ConnectError> {
    match tokio::time::timeout(limit, serve).await {
        Ok(Ok(service)) => Ok(service),
        Ok(Err(err)) => Err(ConnectError::Handshake(err.to_string())),
        Err(_) => Err(ConnectError::Timeout(limit)),
    }
}

/// Spawns a stdio server: its own process group, the runtime's environment
/// without the provider credentials `bash` never sees, plus `env`; its
/// stderr copied line by line (bounded) to the runtime's log.
fn spawn(
    name: &str,
    command: &str,
    args: &[String],
    env: &std::collections::BTreeMap<String, String>,
    cwd: &Path,
    options: &ConnectOptions<'_>,
) -> Result<ProcessGroup, ConnectError> {
    let processes = options.processes;
    if processes.closed.load(Ordering::Acquire) {
        return Err(ConnectError::Stopping);
    }
    let hidden = options.hidden_env;
    let mut cmd = Command::new(command);
    cmd.args(args)
        .env_clear()
        .envs(std::env::vars_os().filter(|(key, _)| !hidden.hides(key)))
        .envs(env)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let mut child = cmd.spawn().map_err(|source| ConnectError::Spawn {
        command: command.to_owned(),
        source,
    })?;
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pgid) = pgid
        && !processes.add(pgid)
    {
        return Err(ConnectError::Stopping);
    }
    if let Some(stderr) = child.stderr.take() {
        let name = name.to_owned();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr);
            let mut line = Vec::new();
            loop {
                line.clear();
                // A line is read to its end but only its start is kept.
                match read_line_capped(&mut lines, &mut line).await {
                    Ok(0) | Err(_) => break,
                    Ok(_) => tracing::info!(
                        "mcp server {name}: {}",
                        String::from_utf8_lossy(&line).trim_end()
                    ),
                }
            }
        });
    }
    Ok(ProcessGroup {
        child,
        pgid,
        processes: Arc::clone(processes),
    })
}

/// Reads one line, keeping at most [`STDERR_LINE_MAX`] bytes of it.
async fn read_line_capped<R: tokio::io::AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(total);
        }
        let (used, done) = match memchr_newline(buf) {
            Some(at) => (at + 1, true),
            None => (buf.len(), false),
        };
        let room = STDERR_LINE_MAX.saturating_sub(line.len());
        line.extend_from_slice(&buf[..used.min(room)]);
        reader.consume(used);
        total += used;
        if done {
            return Ok(total);
        }
    }
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}
