use crate::RpcError;
use crate::handlers;
use crate::publish::Publisher;
use dsh_agent::{Agent, AgentConfig, Profile, Start};
use dsh_llm::{Provider, ProviderRegistry, RetryPolicy, Route};
use dsh_protocol::methods::{EmptyResult, SESSION_PROMPT, SESSION_RESUME, SESSION_WAIT, SHUTDOWN};
use dsh_protocol::{FrameWriter, Incoming, JsonObject, LineReader, Outgoing, Request, classify};
use dsh_session::store::{
    Encoding, ResumeFacts, SessionHeader, SessionStore, SessionWriter, repair_closers, resume_facts,
};
use dsh_session::{EventLog, EventObserver, now_ms};
use dsh_tools::ToolSet;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::io::AsyncRead;

/// What the process-wide server is built from.
pub struct ServerConfig {
    /// The profile every agent runs with.
    pub profile: Arc<Profile>,
    /// Mounts providers for `initialize` routes.
    pub registry: ProviderRegistry,
    /// Where sessions are stored (`DSH_HOME/sessions`).
    pub store: SessionStore,
    /// How session logs are encoded (zstd in `sdk`, plain in `sdk-minimal`).
    pub encoding: Encoding,
    /// The profile's tool library.
    pub tools: Arc<ToolSet>,
    /// How failed model attempts are retried.
    pub retry: RetryPolicy,
    /// The runtime process's cwd, against which a relative `initialize.cwd`
    /// resolves.
    pub process_cwd: PathBuf,
}

/// The route and workspace committed by the last successful `initialize`.
#[derive(Clone)]
pub(crate) struct Initialized {
    pub route: Route,
    pub provider: Arc<dyn Provider>,
    pub cwd: PathBuf,
}

#[derive(Default)]
pub(crate) struct Registry {
    pub initialized: Option<Initialized>,
    pub sessions: HashMap<String, Arc<Agent>>,
    /// Sessions being resumed (their log is read off the request loop).
    pub opening: HashSet<String>,
    pub shutting_down: bool,
}

/// The SDK server: method handlers over a session registry.
#[derive(Clone)]
pub struct Server {
    inner: Arc<ServerInner>,
}

pub(crate) struct ServerInner {
    pub writer: FrameWriter,
    pub config: ServerConfig,
    muted: Arc<AtomicBool>,
    state: Mutex<Registry>,
}

/// Why [`serve`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// A `shutdown` request was answered.
    Shutdown,
    /// The input ended.
    EndOfInput,
}

impl Server {
    /// A server writing frames to `writer`.
    pub fn new(config: ServerConfig, writer: FrameWriter) -> Self {
        Self {
            inner: Arc::new(ServerInner {
                writer,
                config,
                muted: Arc::new(AtomicBool::new(false)),
                state: Mutex::new(Registry::default()),
            }),
        }
    }

    pub(crate) fn inner(&self) -> &ServerInner {
        &self.inner
    }

    pub(crate) fn registry(&self) -> MutexGuard<'_, Registry> {
        // Every critical section leaves the registry consistent; recover
        // from a panic elsewhere rather than wedge the process.
        self.inner
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn publisher(&self) -> Arc<Publisher> {
        Arc::new(Publisher::new(
            self.inner.writer.clone(),
            Arc::clone(&self.inner.muted),
        ))
    }

    fn agent_config(
        &self,
        id: &str,
        init: Initialized,
        workspace: PathBuf,
        log: EventLog,
    ) -> AgentConfig {
        AgentConfig {
            session_id: id.to_owned(),
            profile: Arc::clone(&self.inner.config.profile),
            route: init.route,
            provider: init.provider,
            retry: self.inner.config.retry.clone(),
            workspace,
            log,
            tools: Arc::clone(&self.inner.config.tools),
        }
    }

    /// The committed route, or `NotInitialized` / `ShuttingDown`.
    pub(crate) fn initialized(&self) -> Result<Initialized, RpcError> {
        let registry = self.registry();
        if registry.shutting_down {
            return Err(RpcError::ShuttingDown);
        }
        registry.initialized.clone().ok_or(RpcError::NotInitialized)
    }

    /// The open session `id`, created lazily with the committed route. A
    /// session stored on disk but not open must be resumed first.
    ///
    /// Creating claims the id on disk before anything is accepted: the
    /// session directory is made and its kernel lock taken here, so a second
    /// runtime sharing `DSH_HOME` that asks for the same new id gets
    /// `session "<id>" is already owned by an active write handle` (or
    /// `already exists` once the log is written) and writes nothing.
    pub(crate) fn open_session(&self, id: &str) -> Result<Arc<Agent>, RpcError> {
        let init = self.initialized()?;
        let mut registry = self.registry();
        if let Some(agent) = registry.sessions.get(id) {
            return Ok(Arc::clone(agent));
        }
        if registry.opening.contains(id) {
            return Err(RpcError::AlreadyOpen(id.to_owned()));
        }
        let header =
            SessionHeader::root(id, now_ms(), Some(init.cwd.to_string_lossy().into_owned()));
        let writer = SessionWriter::create(
            &self.inner.config.store,
            &header,
            self.inner.config.encoding,
        )?;
        let log =
            EventLog::new(id, Some(self.publisher() as Arc<dyn EventObserver>)).with_writer(writer);
        let workspace = init.cwd.clone();
        let agent = Arc::new(Agent::create(
            self.agent_config(id, init, workspace, log),
            Start::New,
        ));
        agent.flush();
        registry.sessions.insert(id.to_owned(), Arc::clone(&agent));
        Ok(agent)
    }

    /// Opens a stored session: takes its lock, reads it, checks that it
    /// belongs to the initialized workspace (the workspace, the sandbox
    /// root, is the `initialize` cwd, never taken from the log: see
    /// [`dsh_session::store::resume_workspace`]), appends the repair of an
    /// interrupted last turn and `session/end-seed` (to disk only) and
    /// restores the agent with the committed route. Nothing is created or
    /// changed when this fails.
    ///
    /// The log is read and repaired on a blocking thread, without the
    /// registry lock: other sessions are served meanwhile. While it runs,
    /// the id is "opening": a second resume, or a prompt that would create
    /// it, gets `SDK session is already open or opening`.
    pub(crate) async fn resume_session(&self, id: &str) -> Result<(), RpcError> {
        let init = self.initialized()?;
        {
            let mut registry = self.registry();
            if registry.sessions.contains_key(id) || !registry.opening.insert(id.to_owned()) {
                return Err(RpcError::AlreadyOpen(id.to_owned()));
            }
        }
        let opening = Opening { server: self, id };
        let store = self.inner.config.store.clone();
        let cwd = init.cwd.clone();
        let owned_id = id.to_owned();
        let read = tokio::task::spawn_blocking(move || read_stored(&store, &owned_id, &cwd))
            .await
            .map_err(|err| RpcError::Internal(format!("resume of \"{id}\" failed: {err}")))??;
        let mut registry = self.registry();
        opening.release(&mut registry);
        if registry.shutting_down {
            return Err(RpcError::ShuttingDown);
        }
        let log = EventLog::new(id, Some(self.publisher() as Arc<dyn EventObserver>))
            .with_writer(read.writer)
            .resumed(read.next_seq, read.last_time);
        let config = self.agent_config(id, init, read.workspace, log);
        let agent = Agent::create(config, Start::Resumed(Box::new(read.facts)));
        registry.sessions.insert(id.to_owned(), Arc::new(agent));
        Ok(())
    }

    /// The session `id` if it is open in this process.
    pub(crate) fn session(&self, id: &str) -> Option<Arc<Agent>> {
        self.registry().sessions.get(id).cloned()
    }

    /// Stops everything: no further notifications, agents disposed (running
    /// turns are cancelled). Idempotent.
    pub fn shutdown(&self) {
        self.inner.muted.store(true, Ordering::SeqCst);
        let sessions = {
            let mut registry = self.registry();
            registry.shutting_down = true;
            std::mem::take(&mut registry.sessions)
        };
        for agent in sessions.values() {
            agent.dispose();
        }
        drop(sessions);
    }

    /// Handles one request and returns its result.
    pub(crate) async fn handle(
        &self,
        method: &str,
        params: &JsonObject,
    ) -> Result<Value, RpcError> {
        handlers::dispatch(self, method, params).await
    }

    /// Queues the answer to `request`.
    pub(crate) fn respond(&self, request: &Request, result: Result<Value, RpcError>) {
        let frame = match result {
            Ok(value) => Outgoing::response(&request.id, &value).unwrap_or_else(|err| {
                Outgoing::error(
                    &request.id,
                    &RpcError::Internal(err.to_string()).to_string(),
                )
            }),
            Err(err) => Outgoing::error(&request.id, &err.to_string()),
        };
        self.inner.writer.send(frame);
    }
}

/// A stored session read back for resume: what the agent is restored from.
struct Resumed {
    writer: SessionWriter,
    facts: ResumeFacts,
    next_seq: u64,
    last_time: u64,
    workspace: PathBuf,
}

/// Reads, checks and repairs the stored session `id` (blocking I/O: runs
/// on a blocking thread). See [`Server::resume_session`].
fn read_stored(store: &SessionStore, id: &str, cwd: &Path) -> Result<Resumed, RpcError> {
    let location = store
        .locate(id)?
        .ok_or_else(|| RpcError::NotFound(id.to_owned()))?;
    // Lock and read, then check the workspace before anything is written:
    // a refusal drops the lock and leaves the log as it was.
    let locked = SessionWriter::lock_stored(&location)?;
    let workspace = locked.workspace(cwd)?;
    let (mut writer, stored) = locked.into_writer()?;
    let mut events = stored.events;
    let mut next_seq = events.last().map_or(0, |e| e.seq + 1);
    for closer in repair_closers(&events, now_ms()) {
        let event = closer.into_event(next_seq, now_ms());
        writer.append_event(&event)?;
        events.push(
            event
                .to_raw()
                .map_err(|err| RpcError::Internal(err.to_string()))?,
        );
        next_seq += 1;
    }
    writer.flush()?;
    writer.sync()?;
    let facts = resume_facts(&events)?;
    let last_time = events.last().map_or(0, |e| e.time);
    Ok(Resumed {
        writer,
        facts,
        next_seq,
        last_time,
        workspace,
    })
}

/// An id marked "opening" in the registry, unmarked when dropped (on every
/// error path of a resume) or [released](Opening::release).
struct Opening<'a> {
    server: &'a Server,
    id: &'a str,
}

impl Opening<'_> {
    /// Unmarks the id under the caller's registry lock.
    fn release(self, registry: &mut Registry) {
        registry.opening.remove(self.id);
        // Only references: nothing is leaked, and the lock the caller holds
        // must not be taken again by `drop`.
        std::mem::forget(self);
    }
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        self.server.registry().opening.remove(self.id);
    }
}

/// Serves requests read from `input` until `shutdown` or end of input.
/// Every response and notification is queued on the server's writer; the
/// caller flushes it before exiting.
///
/// `session/wait` requests run concurrently; every one of them is answered
/// before this returns (disposal releases the waiters), so no request goes
/// unanswered at shutdown or end of input.
pub async fn serve<R: AsyncRead + Unpin>(server: &Server, input: R) -> std::io::Result<Exit> {
    let mut waits = tokio::task::JoinSet::new();
    let exit = serve_lines(server, input, &mut waits).await;
    server.shutdown();
    while waits.join_next().await.is_some() {}
    if let Ok((Exit::Shutdown, Some(request))) = &exit {
        server.respond(request, handlers::result(&EmptyResult {}));
    }
    exit.map(|(exit, _)| exit)
}

/// Reads and dispatches requests until `shutdown` (returned, to be answered
/// once the waits are) or end of input.
async fn serve_lines<R: AsyncRead + Unpin>(
    server: &Server,
    input: R,
    waits: &mut tokio::task::JoinSet<()>,
) -> std::io::Result<(Exit, Option<Request>)> {
    let mut lines = LineReader::new(input);
    while let Some(line) = lines.next_line().await? {
        let incoming = classify(line);
        // The parsed request owns everything it needs: a long line's buffer
        // is not kept alive while the request is handled.
        lines.release();
        let request = match incoming {
            Incoming::Request(request) => request,
            Incoming::Invalid(invalid) => {
                server.inner.writer.send(invalid.answer());
                continue;
            }
            other => {
                tracing::debug!("input line ignored: {other:?}");
                continue;
            }
        };
        match request.method.as_str() {
            SHUTDOWN => return Ok((Exit::Shutdown, Some(request))),
            SESSION_PROMPT => handlers::prompt::handle(server, request),
            // Resume reads a log of any size: it must not hold up the
            // requests after it; like waits, it is answered before exit.
            SESSION_WAIT | SESSION_RESUME => {
                let server = server.clone();
                waits.spawn(async move {
                    let result = server.handle(&request.method, &request.params).await;
                    server.respond(&request, result);
                });
            }
            _ => {
                let result = server.handle(&request.method, &request.params).await;
                server.respond(&request, result);
            }
        }
        // Finished waits need not be kept.
        while waits.try_join_next().is_some() {}
    }
    Ok((Exit::EndOfInput, None))
}
