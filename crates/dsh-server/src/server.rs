//! The server core: the session registry and what requests act on.

use crate::children::ChildHost;
use crate::error::RpcError;
use crate::publish::Publisher;
use crate::state::{Initialized, Registry, ServerConfig, ServerInner};
use dsh_agent::{Agent, AgentConfig, Lineage, ParentLink, Start};
use dsh_protocol::catalog::{SessionEvent, SubagentCatalog, SubagentProvider};
use dsh_protocol::{FrameWriter, Outgoing, RequestId};
use dsh_session::store::{
    ReadLog, ResumeFacts, ResumeScan, SessionHeader, SessionStore, SessionWriter,
};
use dsh_session::{EventLog, EventObserver, now_ms};
use serde::Serialize;
use serde_json::value::RawValue;
use std::path::{Path, PathBuf};
use std::sync::{Arc, MutexGuard};

/// The SDK server: method handlers over a session registry.
#[derive(Clone)]
pub struct Server {
    inner: Arc<ServerInner>,
}

impl Server {
    /// A server writing frames to `writer`.
    pub fn new(config: ServerConfig, writer: FrameWriter) -> Self {
        Self {
            inner: Arc::new(ServerInner::new(config, writer)),
        }
    }

    pub(crate) fn inner(&self) -> &ServerInner {
        &self.inner
    }

    pub(crate) fn registry(&self) -> MutexGuard<'_, Registry> {
        self.inner.registry()
    }

    /// The session store.
    pub(crate) fn store(&self) -> &SessionStore {
        &self.inner.config.store
    }

    pub(crate) fn publisher(&self) -> Arc<Publisher> {
        self.inner.publisher()
    }

    fn agent_config(
        &self,
        id: &str,
        init: Initialized,
        workspace: PathBuf,
        log: EventLog,
    ) -> AgentConfig {
        let command_hooks = self.command_hooks(&init, &workspace);
        AgentConfig {
            session_id: id.to_owned(),
            profile: Arc::clone(&self.inner.config.profile),
            route: init.route,
            provider: init.provider,
            retry: self.inner.config.retry.clone(),
            log,
            tools: Arc::clone(&self.inner.config.tools),
            sessions: Some(Arc::new(ChildHost(Arc::downgrade(&self.inner)))),
            lineage: Lineage::default(),
            approvals: init.approvals.for_root(id),
            prices: init.prices,
            mcp: self.mcp_servers(&init.mcp_servers, init.project_mcp, &workspace),
            editor: self.inner.config.editor.clone(),
            command_hooks,
            workspace,
        }
    }

    /// The hooks of a session in `workspace`: the launch's and the
    /// client's, then (when the client or the launch trusts the project)
    /// the workspace's hook files; `None` when no source was found.
    fn command_hooks(
        &self,
        init: &Initialized,
        workspace: &Path,
    ) -> Option<Arc<dsh_hooks::SessionHooks>> {
        let mut set = (*init.hooks).clone();
        if init.project_hooks || self.inner.config.hooks.trust_project {
            set.add_project(workspace);
        }
        // A source without hooks (a broken project file) is still recorded.
        (!set.sources().is_empty()).then(|| {
            Arc::new(dsh_hooks::SessionHooks {
                set,
                hidden: self.inner.config.hooks.hidden.clone(),
            })
        })
    }

    /// The MCP servers of a session in `workspace`: those of `initialize`
    /// and the launch, then (when the client allowed it) the workspace's
    /// `.mcp.json`. A project file that cannot be read or used is reported
    /// on stderr and skipped; so is a server past the runtime's limit.
    fn mcp_servers(
        &self,
        configured: &[dsh_mcp::ServerConfig],
        project: bool,
        workspace: &Path,
    ) -> Option<dsh_mcp::SessionServers> {
        let mut layers = vec![configured.to_vec()];
        if project {
            layers.push(project_mcp(workspace));
        }
        let servers = dsh_mcp::config::merge(layers);
        if servers.is_empty() {
            return None;
        }
        match self.inner.mcp.session(&servers, workspace) {
            Ok(servers) => Some(servers),
            Err(err) => {
                tracing::warn!("{err}; the session has no MCP tools");
                None
            }
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
            if let Some(open) = registry.sessions.get(id) {
                // A child its parent's resume reopened: resuming it again
                // re-announces the edge, as the official runtime does.
                if let Some(parent) = open.parent_id().and_then(|p| registry.sessions.get(p)) {
                    parent.announce_child(id);
                    return Ok(());
                }
                return Err(RpcError::AlreadyOpen(id.to_owned()));
            }
            if !registry.opening.insert(id.to_owned()) {
                return Err(RpcError::AlreadyOpen(id.to_owned()));
            }
        }
        let opening = Opening { server: self, id };
        let read = self.read_off_loop(id, &init).await?;
        let children = read.facts.children.clone();
        let depth = read.header.delegation_depth;
        let agent = {
            let mut registry = self.registry();
            opening.release(&mut registry);
            if registry.shutting_down {
                return Err(RpcError::ShuttingDown);
            }
            let lineage = Lineage {
                depth,
                parent: None,
            };
            let agent = Arc::new(self.restore(id, &init, read, lineage));
            registry.sessions.insert(id.to_owned(), Arc::clone(&agent));
            agent
        };
        if depth == 0 {
            self.resume_children(&agent, &init, children).await;
        }
        Ok(())
    }

    /// Reopens the children a resumed parent started (their interrupted
    /// turns are repaired like any resumed log), so that they can be
    /// listed, messaged and waited on again. A child that cannot be opened
    /// (gone, locked by another runtime, corrupt) is left out, with a line
    /// on stderr.
    async fn resume_children(
        &self,
        parent: &Arc<Agent>,
        init: &Initialized,
        children: Vec<SubagentCatalog>,
    ) {
        for child in children {
            let id = child.child_id.as_str();
            {
                let mut registry = self.registry();
                if registry.shutting_down {
                    return;
                }
                if let Some(open) = registry.sessions.get(id) {
                    if open.parent_id() == Some(parent.id()) {
                        parent.adopt(Arc::clone(open), &child.label);
                    }
                    continue;
                }
                if !registry.opening.insert(id.to_owned()) {
                    continue;
                }
            }
            let opening = Opening { server: self, id };
            let read = match self.read_off_loop(id, init).await {
                Ok(read) => read,
                Err(err) => {
                    tracing::warn!(
                        parent = parent.id(),
                        child = id,
                        "child of a resumed session not reopened: {err}"
                    );
                    continue;
                }
            };
            let agent = {
                let mut registry = self.registry();
                opening.release(&mut registry);
                if registry.shutting_down {
                    return;
                }
                let provider = read
                    .facts
                    .descriptor
                    .as_ref()
                    .map_or(SubagentProvider::Spawn, |d| d.provider);
                let lineage = Lineage {
                    depth: read.header.delegation_depth,
                    parent: Some(ParentLink::to(parent, provider, &child.label)),
                };
                let agent = Arc::new(self.restore(id, init, read, lineage));
                registry.sessions.insert(id.to_owned(), Arc::clone(&agent));
                agent
            };
            parent.adopt(agent, &child.label);
        }
    }

    /// Reads, checks and repairs the stored session `id` on a blocking
    /// thread (the request loop goes on meanwhile).
    async fn read_off_loop(&self, id: &str, init: &Initialized) -> Result<Resumed, RpcError> {
        let store = self.inner.config.store.clone();
        let cwd = init.cwd.clone();
        let owned_id = id.to_owned();
        tokio::task::spawn_blocking(move || read_stored(&store, &owned_id, &cwd))
            .await
            .map_err(|err| RpcError::Internal(format!("resume of \"{id}\" failed: {err}")))?
    }

    /// The agent of a stored session read back by [`read_stored`].
    fn restore(&self, id: &str, init: &Initialized, read: Resumed, lineage: Lineage) -> Agent {
        let log = EventLog::new(id, Some(self.publisher() as Arc<dyn EventObserver>))
            .with_writer(read.writer)
            .resumed(read.next_seq, read.last_time);
        let mut config = self.agent_config(id, init.clone(), read.workspace, log);
        if lineage.parent.is_some() {
            config.profile = Arc::new(config.profile.for_child());
        }
        config.lineage = lineage;
        Agent::create(config, Start::Resumed(Box::new(read.facts)))
    }

    /// The session `id` if it is open in this process.
    pub(crate) fn session(&self, id: &str) -> Option<Arc<Agent>> {
        self.registry().sessions.get(id).cloned()
    }

    /// Tells every open root session it is closing (their `SessionEnd`
    /// hooks run and are recorded), all at once, for at most `limit`.
    /// `end_of_input`: the client's input ended.
    pub async fn close_sessions(&self, end_of_input: bool, limit: std::time::Duration) {
        let roots: Vec<Arc<Agent>> = self
            .registry()
            .sessions
            .values()
            .filter(|agent| agent.parent_id().is_none())
            .cloned()
            .collect();
        if roots.is_empty() {
            return;
        }
        let closing = futures_util::future::join_all(roots.iter().map(|a| a.close(end_of_input)));
        if tokio::time::timeout(limit, closing).await.is_err() {
            tracing::warn!(
                "SessionEnd hooks still ran after {} s; not waited for",
                limit.as_secs()
            );
        }
    }

    /// Stops everything: no further notifications, agents disposed (running
    /// turns are cancelled). Idempotent.
    pub fn shutdown(&self) {
        self.inner.mute();
        // No MCP server outlives the runtime, whatever its agents do next.
        self.inner.mcp.kill_all();
        let sessions = {
            let mut registry = self.registry();
            registry.shutting_down = true;
            std::mem::take(&mut registry.sessions)
        };
        // Children first: no child's news reaches a parent already closed,
        // and every child's log is closed before its parent's.
        let mut agents: Vec<_> = sessions.into_values().collect();
        agents.sort_by_key(|agent| std::cmp::Reverse(agent.depth()));
        for agent in &agents {
            agent.dispose();
        }
        drop(agents);
    }

    /// Queues the answer to request `id`.
    pub(crate) fn respond<T: Serialize>(&self, id: &RequestId, result: Result<T, RpcError>) {
        match result {
            Ok(value) => match Outgoing::response(id, &value) {
                Ok(frame) => self.inner.writer.send(frame),
                Err(err) => self.respond_error(id, RpcError::Internal(err.to_string())),
            },
            Err(err) => self.respond_error(id, err),
        }
    }

    /// Queues the error answer to request `id`.
    pub(crate) fn respond_error(&self, id: &RequestId, err: RpcError) {
        self.inner
            .writer
            .send(Outgoing::error(id, &err.to_string()));
    }
}

/// A stored session read back for resume: what the agent is restored from.
struct Resumed {
    header: SessionHeader,
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
    // Lock and read (each event into the scan: the log is never held
    // whole), then check the workspace before anything is written: a
    // refusal drops the lock and leaves the log as it was.
    let mut scan = ResumeScan::new();
    // Payloads are typed from their text; streams are never built.
    let locked = SessionWriter::lock_each(&location, |event: SessionEvent<Box<RawValue>>| {
        scan.push_raw(&event);
    })?;
    let workspace = locked.workspace(cwd)?;
    let header = locked.stored().header().clone();
    let (mut writer, stored) = locked.into_writer()?;
    let (facts, closers) = scan.finish(now_ms());
    let mut next_seq = stored.next_seq;
    let mut last_time = stored.last_time.unwrap_or(0);
    let mut appended = Vec::with_capacity(closers.len());
    for closer in closers {
        let event = closer.into_event(next_seq, now_ms());
        writer.append_event(&event)?;
        appended.push(
            event
                .to_raw()
                .map_err(|err| RpcError::Internal(err.to_string()))?,
        );
        last_time = event.time;
        next_seq += 1;
    }
    writer.flush()?;
    writer.sync()?;
    // The closers' tool results join the history.
    let mut facts = facts?;
    for event in &appended {
        facts.push(event)?;
    }
    Ok(Resumed {
        header,
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

/// Largest `.mcp.json` read from a workspace.
const PROJECT_MCP_MAX_BYTES: u64 = 1024 * 1024;

/// The servers of `workspace`'s `.mcp.json` (Claude Code's format), or
/// none when it is absent or unusable (reported on stderr).
fn project_mcp(workspace: &Path) -> Vec<dsh_mcp::ServerConfig> {
    let path = workspace.join(".mcp.json");
    let text = match dsh_tools::read_regular(&path, PROJECT_MCP_MAX_BYTES) {
        Ok(bytes) => bytes,
        Err(dsh_tools::ReadRegularError::Io(err)) if err.kind() == std::io::ErrorKind::NotFound => {
            return Vec::new();
        }
        Err(err) => {
            tracing::warn!("{}: not read: {err}", path.display());
            return Vec::new();
        }
    };
    let lookup = |name: &str| std::env::var(name).ok();
    let parsed = serde_json::from_slice::<serde_json::Value>(&text)
        .map_err(|err| err.to_string())
        .and_then(|value| {
            dsh_mcp::config::from_file_map(&value, dsh_mcp::Source::Project, &lookup)
                .map_err(|err| err.to_string())
        });
    match parsed {
        Ok(servers) => servers,
        Err(err) => {
            tracing::warn!("{}: not used: {err}", path.display());
            Vec::new()
        }
    }
}
