//! One server of a runtime: started on first need, shared by the sessions
//! naming it, restarted with back-off after it dies, stopped at shutdown.

use crate::bounded::Refusal;
use crate::config::ServerConfig;
use crate::connect::{ConnectOptions, Connection, Handler, ProcessGroup, Processes, connect};
use crate::status::{ServerState, ServerStatus, StatusSink};
use crate::tools::{self, RemoteTool};
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult, PaginatedRequestParams};
use rmcp::service::{Peer, RunningService, ServiceError};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// First delay before a dead server is started again; it doubles per
/// failure in a row up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);

/// Longest delay between start attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// A connection that lived this long before dying starts the back-off anew.
const HEALTHY_UPTIME: Duration = Duration::from_secs(30);

/// Most pages of `tools/list` read.
const MAX_PAGES: usize = 16;

/// Settings every server of a runtime shares.
#[derive(Debug, Clone)]
pub struct ServerOptions {
    /// The largest message a stdio server may send, in bytes.
    pub message_max_bytes: usize,
    /// How long starting (process, handshake, tool list) may take.
    pub start_timeout: Duration,
    /// Variables a stdio server never inherits (the list `bash` hides:
    /// the provider credentials and `DSH_SANDBOX_ENV_DENY`'s).
    pub hidden_env: dsh_tools::HiddenEnv,
}

/// Why a call did not get a result from the server.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The server cannot be reached now.
    #[error("{0}")]
    Unavailable(String),
    /// No answer in time.
    #[error("did not answer within {} ms", .0.as_millis())]
    Timeout(Duration),
    /// The connection ended during the call.
    #[error("closed the connection during the call{}", .0.as_deref().map(|r| format!(" ({r})")).unwrap_or_default())]
    Closed(Option<String>),
    /// The server answered with a JSON-RPC error.
    #[error("answered with an error: {0}")]
    Rpc(String),
    /// The request could not be carried (an HTTP server unreachable).
    #[error("could not be reached: {0}")]
    Transport(String),
    /// The turn was cancelled.
    #[error("the call was cancelled")]
    Cancelled,
}

/// A live connection and what it listed.
struct Live {
    peer: Peer<RoleClient>,
    service: Mutex<Option<RunningService<RoleClient, Handler>>>,
    child: Mutex<Option<ProcessGroup>>,
    changed: Arc<AtomicBool>,
    refusal: Refusal,
    since: Instant,
}

impl Live {
    fn closed(&self) -> bool {
        self.peer.is_transport_closed()
    }

    /// Ends the connection and kills the process group.
    async fn stop(&self) {
        let service = self
            .service
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(service) = service {
            let _ = tokio::time::timeout(Duration::from_millis(500), service.cancel()).await;
        }
        let child = self
            .child
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(child) = child {
            child.kill().await;
        }
    }
}

/// The server's link: down (never started, or dead and waiting), or up.
enum Link {
    Down {
        failures: u32,
        retry_at: Option<Instant>,
        error: Option<String>,
    },
    /// Up, with the failures in a row before this start.
    Up(Arc<Live>, u32),
    Stopped,
}

/// One configured server.
pub struct McpServer {
    config: ServerConfig,
    workspace: PathBuf,
    options: ServerOptions,
    status: Arc<dyn StatusSink>,
    processes: Arc<Processes>,
    link: tokio::sync::Mutex<Link>,
    tools: Mutex<Arc<Vec<Arc<RemoteTool>>>>,
    generation: AtomicU64,
    starts: AtomicU64,
    reported: Mutex<HashSet<String>>,
}

impl McpServer {
    /// A server not started yet.
    pub(crate) fn new(
        config: ServerConfig,
        workspace: PathBuf,
        options: ServerOptions,
        status: Arc<dyn StatusSink>,
        processes: Arc<Processes>,
    ) -> Self {
        Self {
            config,
            workspace,
            options,
            status,
            processes,
            link: tokio::sync::Mutex::new(Link::Down {
                failures: 0,
                retry_at: None,
                error: None,
            }),
            tools: Mutex::new(Arc::new(Vec::new())),
            generation: AtomicU64::new(0),
            starts: AtomicU64::new(0),
            reported: Mutex::new(HashSet::new()),
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.config.name
    }

    /// Changes whenever the tool list does.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    fn send(&self, state: ServerState, fill: impl FnOnce(&mut ServerStatus)) {
        let mut status = ServerStatus::new(&self.config.name, state);
        fill(&mut status);
        self.status.status(&status);
    }

    /// The tools to advertise for a step: starts the server if it is down
    /// and may be started now, refreshes the list after `list_changed`.
    /// A server waiting out its back-off keeps its last list (calls wait
    /// for the restart).
    pub async fn tools(&self) -> Arc<Vec<Arc<RemoteTool>>> {
        let _ = self.live(false, None).await;
        self.current_tools()
    }

    fn current_tools(&self) -> Arc<Vec<Arc<RemoteTool>>> {
        Arc::clone(
            &self
                .tools
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// The live connection, starting one when allowed: `wait` waits out a
    /// back-off (bounded by `deadline`), otherwise a server in back-off is
    /// unavailable.
    async fn live(&self, wait: bool, deadline: Option<Instant>) -> Result<Arc<Live>, String> {
        let mut link = self.link.lock().await;
        loop {
            match &*link {
                Link::Stopped => return Err("is stopped (the runtime is shutting down)".into()),
                Link::Up(live, _) if !live.closed() => {
                    let live = Arc::clone(live);
                    if live.changed.swap(false, Ordering::AcqRel) {
                        self.refresh(&live).await;
                    }
                    return Ok(live);
                }
                Link::Up(live, failures) => {
                    let live = Arc::clone(live);
                    *link = self.died(&live, *failures, None);
                }
                Link::Down {
                    retry_at: Some(at),
                    error,
                    ..
                } if *at > Instant::now() => {
                    let at = *at;
                    let why = error.clone().unwrap_or_default();
                    if !wait || deadline.is_some_and(|d| d < at) {
                        return Err(format!(
                            "is restarting (next attempt in {} ms): {why}",
                            at.saturating_duration_since(Instant::now()).as_millis()
                        ));
                    }
                    drop(link);
                    tokio::time::sleep_until(at.into()).await;
                    link = self.link.lock().await;
                }
                Link::Down { failures, .. } => {
                    let failures = *failures;
                    match self.start(failures).await {
                        Ok(live) => {
                            *link = Link::Up(Arc::clone(&live), failures);
                            return Ok(live);
                        }
                        Err(why) => {
                            let failures = failures + 1;
                            let delay = backoff(failures);
                            self.send(ServerState::Failed, |s| {
                                s.error = Some(why.clone());
                                s.retry_in_ms = Some(millis(delay));
                            });
                            *link = Link::Down {
                                failures,
                                retry_at: Some(Instant::now() + delay),
                                error: Some(why.clone()),
                            };
                            return Err(why);
                        }
                    }
                }
            }
        }
    }

    /// The link after `live` (started after `failures` failures in a row)
    /// died: down, retried after the back-off.
    fn died(&self, live: &Arc<Live>, failures: u32, during: Option<&str>) -> Link {
        let failures = if live.since.elapsed() >= HEALTHY_UPTIME {
            1
        } else {
            failures.saturating_add(1)
        };
        let delay = backoff(failures);
        let why = live
            .refusal
            .reason()
            .map(|r| format!("the server {r}"))
            .or_else(|| during.map(str::to_owned))
            .unwrap_or_else(|| "the server closed the connection".to_owned());
        tracing::warn!(
            "mcp server {}: {why}; restarting in {} ms",
            self.config.name,
            delay.as_millis()
        );
        self.send(ServerState::Failed, |s| {
            s.error = Some(why.clone());
            s.retry_in_ms = Some(millis(delay));
        });
        let stale = Arc::clone(live);
        tokio::spawn(async move { stale.stop().await });
        Link::Down {
            failures,
            retry_at: Some(Instant::now() + delay),
            error: Some(why),
        }
    }

    /// Starts a connection and reads the tool list.
    async fn start(&self, failures: u32) -> Result<Arc<Live>, String> {
        let attempt = self.starts.fetch_add(1, Ordering::AcqRel) + 1;
        if failures == 0 && attempt == 1 {
            self.send(ServerState::Starting, |_| {});
        } else {
            self.send(ServerState::Restarting, |s| s.attempt = Some(attempt));
        }
        let options = ConnectOptions {
            workspace: &self.workspace,
            message_max_bytes: self.options.message_max_bytes,
            handshake_timeout: self.options.start_timeout,
            processes: &self.processes,
            hidden_env: &self.options.hidden_env,
        };
        let Connection {
            service,
            changed,
            refusal,
            child,
        } = connect(&self.config, &options)
            .await
            .map_err(|e| e.to_string())?;
        let live = Arc::new(Live {
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            child: Mutex::new(child),
            changed,
            refusal,
            since: Instant::now(),
        });
        match tokio::time::timeout(self.options.start_timeout, self.list(&live)).await {
            Ok(Ok(count)) => {
                tracing::info!("mcp server {}: ready with {count} tools", self.config.name);
                self.send(ServerState::Ready, |s| s.tools = Some(count));
                Ok(live)
            }
            Ok(Err(why)) => {
                live.stop().await;
                Err(format!("could not start: tools/list failed: {why}"))
            }
            Err(_) => {
                live.stop().await;
                Err(format!(
                    "could not start: no tools/list answer within {} ms",
                    self.options.start_timeout.as_millis()
                ))
            }
        }
    }

    /// Reads the tool list into `self.tools`; the number of tools offered.
    async fn list(&self, live: &Live) -> Result<usize, String> {
        let mut listed = Vec::new();
        let mut cursor = None;
        for _ in 0..MAX_PAGES {
            let page = live
                .peer
                .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
                .await
                .map_err(|e| e.to_string())?;
            listed.extend(page.tools);
            if listed.len() > tools::MAX_TOOLS * 2 {
                break;
            }
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        let converted: Vec<Arc<RemoteTool>> =
            tools::convert(&self.config.name, listed, &self.reported)
                .into_iter()
                .map(Arc::new)
                .collect();
        let count = converted.len();
        *self
            .tools
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(converted);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(count)
    }

    async fn refresh(&self, live: &Live) {
        let refreshed = tokio::time::timeout(self.options.start_timeout, self.list(live)).await;
        match refreshed {
            Ok(Ok(count)) => self.send(ServerState::Ready, |s| s.tools = Some(count)),
            Ok(Err(why)) => {
                tracing::warn!("mcp server {}: tools/list failed: {why}", self.config.name)
            }
            Err(_) => tracing::warn!("mcp server {}: tools/list timed out", self.config.name),
        }
    }

    /// Calls `tool` with `arguments`, within the server's timeout and the
    /// turn's cancellation.
    pub async fn call(
        &self,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        cancel: &CancellationToken,
    ) -> Result<CallToolResult, CallError> {
        let timeout = self.config.timeout;
        let deadline = Instant::now() + timeout;
        let live = tokio::select! {
            live = self.live(true, Some(deadline)) => live.map_err(CallError::Unavailable)?,
            () = cancel.cancelled() => return Err(CallError::Cancelled),
            () = tokio::time::sleep_until(deadline.into()) => return Err(CallError::Timeout(timeout)),
        };
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let call = live.peer.call_tool(params);
        let outcome = tokio::select! {
            outcome = call => outcome,
            () = cancel.cancelled() => return Err(CallError::Cancelled),
            () = tokio::time::sleep_until(deadline.into()) => return Err(CallError::Timeout(timeout)),
        };
        match outcome {
            Ok(result) => Ok(result),
            Err(ServiceError::McpError(error)) => Err(CallError::Rpc(error.message.to_string())),
            Err(ServiceError::Timeout { .. }) => Err(CallError::Timeout(timeout)),
            Err(ServiceError::TransportClosed | ServiceError::Cancelled { .. }) => {
                Err(self.closed(&live).await)
            }
            Err(other) if live.closed() => {
                tracing::debug!("mcp server {}: {other}", self.config.name);
                Err(self.closed(&live).await)
            }
            Err(other) => Err(CallError::Transport(other.to_string())),
        }
    }

    /// Marks the server dead after its connection closed during a call.
    async fn closed(&self, live: &Arc<Live>) -> CallError {
        // Let the process's exit be seen before the reason is read.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let reason = live.refusal.reason().map(|r| format!("it {r}"));
        let mut link = self.link.lock().await;
        if let Link::Up(current, failures) = &*link
            && Arc::ptr_eq(current, live)
        {
            *link = self.died(live, *failures, Some("the connection closed during a call"));
        }
        CallError::Closed(reason)
    }

    /// Whether the server, started now if need be, offers `tool`: for a
    /// call of a tool the step did not list (its server could not start,
    /// or its list changed since): `Err` says why it cannot be called.
    pub async fn find(
        &self,
        tool: &str,
        cancel: &CancellationToken,
    ) -> Result<Arc<RemoteTool>, String> {
        let deadline = Instant::now() + self.config.timeout;
        tokio::select! {
            live = self.live(true, Some(deadline)) => { live?; }
            () = cancel.cancelled() => return Err("the call was cancelled".into()),
        }
        self.current_tools()
            .iter()
            .find(|t| t.remote == tool)
            .cloned()
            .ok_or_else(|| format!("has no tool \"{tool}\""))
    }

    /// Stops the server for good (shutdown).
    pub async fn stop(&self) {
        let mut link = self.link.lock().await;
        if let Link::Up(live, _) = std::mem::replace(&mut *link, Link::Stopped) {
            live.stop().await;
        }
    }
}

fn backoff(failures: u32) -> Duration {
    let doubled = FIRST_BACKOFF.saturating_mul(1 << failures.saturating_sub(1).min(10));
    doubled.min(MAX_BACKOFF)
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_back_off_doubles_to_its_cap() {
        assert_eq!(backoff(1), Duration::from_millis(500));
        assert_eq!(backoff(2), Duration::from_secs(1));
        assert_eq!(backoff(4), Duration::from_secs(4));
        assert_eq!(backoff(9), MAX_BACKOFF);
        assert_eq!(backoff(u32::MAX), MAX_BACKOFF);
    }
}
