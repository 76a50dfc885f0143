//! One ACP session's SDK server, in process.
//!
//! Every ACP session is served by its own `dsh-server` [`Server`], driven
//! by a [`dsh_client::Client`] over an in-memory pipe exactly as a client
//! drives the SDK profile over stdio: `initialize` with the session's
//! workspace, route, MCP servers and dsh's extensions (approvals answered
//! by the client, deltas), then `session/prompt`, `session/cancel`,
//! `session/resume`, `session/events`, `shutdown`. A session's settings
//! (workspace, mode, route) are those of its server's `initialize` and
//! profile, so one server per session lets sessions differ; a settings
//! change restarts the server and resumes the session in it.

use crate::error::AcpError;
use crate::options::Settings;
use dsh_client::{ApprovalHandler, Client, ClientError, Notification};
use dsh_protocol::FrameWriter;
use dsh_protocol::methods::{EventsResult, INITIALIZE, SESSION_PROMPT};
use dsh_server::{Server, ServerConfig, serve};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::io::SyncIoBridge;

/// Bytes the in-memory pipe between the server and its client buffers.
const PIPE_BYTES: usize = 1 << 16;

/// How long a resume waits for a session's lock that a stopped server of
/// this process is releasing.
const RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// How often it looks.
const RELEASE_POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// The end of the SDK server's message for a session another writer holds.
const OWNED: &str = "is already owned by an active write handle";

/// The end of the SDK server's message for a session of another workspace,
/// which speaks of `initialize`.
const OTHER_WORKSPACE: &str = "; initialize with that cwd to resume it";

/// An SDK error of `session/resume` in the official `acp` profile's
/// words: a session of another workspace does not match the `cwd` asked
/// for; a session that is not stored is not resumable.
fn acp_words(id: &str, err: AcpError) -> AcpError {
    match err {
        AcpError::Runtime(message) if message.ends_with(OTHER_WORKSPACE) => {
            let asked = message
                .trim_end_matches(OTHER_WORKSPACE)
                .rsplit_once("initialized with ")
                .map_or("", |(_, cwd)| cwd)
                .to_owned();
            AcpError::InvalidParams(format!("session cwd does not match: {asked}"))
        }
        AcpError::Runtime(message) if message == format!("session \"{id}\" not found") => {
            AcpError::InvalidParams(format!("session is not resumable: {id}"))
        }
        other => other,
    }
}

/// What a session's server is started with.
pub struct HostSpec<'a> {
    /// The session's workspace.
    pub cwd: &'a Path,
    /// Route and mode.
    pub settings: &'a Settings,
    /// MCP servers, in the SDK's `initialize.mcpServers` form.
    pub mcp_servers: &'a [Value],
    /// The method the servers came with, for error messages.
    pub method: &'a str,
    /// The client's editor that file tools go through, if any.
    pub editor: Option<Arc<dyn dsh_tools::EditorFiles>>,
}

/// A running in-process SDK server and the client driving it.
pub struct Host {
    client: Client,
    serving: JoinHandle<()>,
}

impl Host {
    /// Starts a server from `base` with `spec`'s settings, answers its
    /// approval requests with `approvals` and initializes it; returns it
    /// and its notifications, in order.
    pub async fn start(
        base: &ServerConfig,
        spec: HostSpec<'_>,
        approvals: ApprovalHandler,
    ) -> Result<(Self, mpsc::UnboundedReceiver<Notification>), AcpError> {
        let mut config = base.clone();
        config.profile = Arc::new(base.profile.with_mode(spec.settings.mode));
        config.editor = spec.editor.clone();
        let (ours, theirs) = tokio::io::duplex(PIPE_BYTES);
        let (requests, frames) = tokio::io::split(theirs);
        // The writer thread ends once the server's last handle on it is
        // dropped; it is not joined.
        let (writer, _writer_thread) = FrameWriter::spawn(SyncIoBridge::new(frames))
            .map_err(|e| AcpError::Stopped(format!("cannot start a session server: {e}")))?;
        let server = Server::new(config, writer);
        let serving = tokio::spawn(async move {
            if let Err(err) = serve(&server, requests).await {
                tracing::warn!("a session server stopped reading: {err}");
            }
        });
        let (reader, writer) = tokio::io::split(ours);
        let client = Client::connect(reader, writer, spec.cwd);
        let notifications = client.forward();
        client.set_approval_handler(approvals);
        let host = Self { client, serving };
        let mut params = json!({
            "cwd": spec.cwd,
            "provider": spec.settings.provider,
            "model": spec.settings.model,
            "protocolVersion": dsh_protocol::methods::PROTOCOL_VERSION,
            "clientCapabilities": {"approvals": true, "deltas": true},
        });
        if let Some(effort) = &spec.settings.effort {
            params["reasoningEffort"] = json!(effort);
        }
        if !spec.mcp_servers.is_empty() {
            params["mcpServers"] = json!(spec.mcp_servers);
        }
        if let Err(err) = host.client.request(INITIALIZE, Some(params)).await {
            host.stop().await;
            return Err(match AcpError::from(err) {
                // The SDK's words name its own method; the client sent another.
                AcpError::Runtime(message) => AcpError::InvalidParams(
                    message
                        .strip_prefix("initialize ")
                        .map_or(message.clone(), |rest| format!("{} {rest}", spec.method)),
                ),
                other => other,
            });
        }
        Ok((host, notifications))
    }

    /// `session/prompt`; the message id of the prompt.
    pub async fn prompt(
        &self,
        id: &str,
        blocks: Vec<serde_json::Map<String, Value>>,
    ) -> Result<String, AcpError> {
        let receipt = self
            .client
            .request(
                SESSION_PROMPT,
                Some(json!({"sessionId": id, "contentBlocks": blocks})),
            )
            .await?;
        receipt["messageId"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| AcpError::Stopped("session/prompt answered without a messageId".into()))
    }

    /// `session/cancel`, dropping the prompts queued behind the turn.
    pub async fn cancel(&self, id: &str) -> Result<(), AcpError> {
        self.client.cancel(id, true, false).await?;
        Ok(())
    }

    /// `session/resume`. A session closed an instant ago (a settings
    /// change, `session/close` then `session/load`) may still be locked by
    /// the server that had it while that server's agent winds down: the
    /// resume is retried until the lock is free, for at most
    /// [`RELEASE_WAIT`].
    pub async fn resume(&self, id: &str) -> Result<(), AcpError> {
        let deadline = tokio::time::Instant::now() + RELEASE_WAIT;
        loop {
            match self.client.resume(id).await {
                Ok(_) => return Ok(()),
                Err(ClientError::Rpc { message, .. })
                    if message.ends_with(OWNED) && tokio::time::Instant::now() < deadline =>
                {
                    tokio::time::sleep(RELEASE_POLL).await;
                }
                Err(err) => return Err(acp_words(id, AcpError::from(err))),
            }
        }
    }

    /// A page of session `id`'s stored events after `after`.
    pub async fn events(&self, id: &str, after: Option<u64>) -> Result<EventsResult, AcpError> {
        Ok(self.client.events(id, after, None).await?)
    }

    /// The SDK client, for the requests above it does not wrap.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Shuts the server down: running turns stop, MCP servers are killed,
    /// the session's lock is released.
    pub async fn stop(mut self) {
        if let Err(err) = self.client.shutdown().await {
            tracing::debug!("a session server did not answer shutdown: {err}");
        }
        if let Err(err) = (&mut self.serving).await {
            tracing::warn!("a session server failed: {err}");
        }
    }
}
