//! The server's shared state: what it is built from, the route the last
//! `initialize` committed and the session registry, held by the
//! [`Server`](crate::server::Server) and, weakly, by its agents'
//! [`ChildHost`](crate::children::ChildHost).

use crate::client::{ClientChannel, RootApprover};
use crate::publish::{Publisher, Wants};
use dsh_agent::{Agent, Profile};
use dsh_llm::{Provider, ProviderRegistry, RetryPolicy, Route};
use dsh_protocol::FrameWriter;
use dsh_protocol::methods::ApprovalRules;
use dsh_protocol::methods::PriceTable;
use dsh_session::store::{Encoding, SessionStore};
use dsh_tools::{Approvals, Approver, ToolSet};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// What the process-wide server is built from.
#[derive(Clone)]
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
    /// Approval policy rules of the launch (`--patch` overlays'
    /// `approvalRules:`), applied before those an `initialize` adds.
    pub approval_rules: ApprovalRules,
    /// MCP servers of the launch and how every server is run.
    pub mcp: McpSettings,
    /// The client's editor that file tools go through (`dsh acp`); `None`:
    /// the disk.
    pub editor: Option<Arc<dyn dsh_tools::EditorFiles>>,
    /// Command hooks of the launch and how they run.
    pub hooks: HookSettings,
}

/// The hooks side of a launch.
#[derive(Clone, Default)]
pub struct HookSettings {
    /// Hooks of the launch (`DSH_HOME/hooks.json`, `--patch` overlays'
    /// `hooks:`), before those an `initialize` adds.
    pub launch: dsh_hooks::HookSet,
    /// Variables hidden from hooks (the sandbox's list).
    pub hidden: dsh_tools::HiddenEnv,
    /// Whether the workspace's hook files run without the client asking
    /// (`DSH_TRUST_PROJECT_HOOKS=1`).
    pub trust_project: bool,
}

/// The MCP side of a launch.
#[derive(Debug, Clone)]
pub struct McpSettings {
    /// Servers of the launch (`--patch` overlays' `mcpServers:`, `dsh
    /// headless --mcp`), after those an `initialize` names.
    pub servers: Vec<dsh_mcp::ServerConfig>,
    /// Limits every server shares.
    pub options: dsh_mcp::ServerOptions,
    /// Where results keep images and long texts.
    pub store: dsh_mcp::ResultStore,
}

/// The route and workspace committed by the last successful `initialize`.
#[derive(Clone)]
pub(crate) struct Initialized {
    pub route: Route,
    pub provider: Arc<dyn Provider>,
    pub cwd: PathBuf,
    pub approvals: ApprovalSettings,
    /// Prices per model for usage figures and budgets.
    pub prices: Arc<PriceTable>,
    /// MCP servers for new sessions: the client's, then the launch's.
    pub mcp_servers: Arc<Vec<dsh_mcp::ServerConfig>>,
    /// Whether a session also reads its workspace's `.mcp.json`.
    pub project_mcp: bool,
    /// Hooks for new sessions: the launch's, then the client's.
    pub hooks: Arc<dsh_hooks::HookSet>,
    /// Whether a session also runs its workspace's hook files.
    pub project_hooks: bool,
}

/// How the sessions created after an `initialize` decide requests for
/// wider access.
#[derive(Clone, Default)]
pub(crate) struct ApprovalSettings {
    pub rules: ApprovalRules,
    /// The client's channel, when it declared `approvals`.
    pub client: Option<Arc<ClientChannel>>,
    /// `None` waits for ever.
    pub timeout: Option<Duration>,
}

impl ApprovalSettings {
    /// The approvals of the root session `root` (its subagents ask
    /// through it).
    pub(crate) fn for_root(&self, root: &str) -> Arc<Approvals> {
        let approver = self.client.as_ref().map(|channel| {
            Arc::new(RootApprover {
                root: root.to_owned(),
                channel: Arc::clone(channel),
            }) as Arc<dyn Approver>
        });
        Arc::new(Approvals::new(self.rules.clone(), approver, self.timeout))
    }
}

/// The open sessions and what the process has committed to.
#[derive(Default)]
pub(crate) struct Registry {
    pub initialized: Option<Initialized>,
    pub sessions: HashMap<String, Arc<Agent>>,
    /// Sessions being resumed (their log is read off the request loop).
    pub opening: HashSet<String>,
    pub shutting_down: bool,
}

/// Everything the server shares with the agents it runs.
pub(crate) struct ServerInner {
    pub writer: FrameWriter,
    /// The runtime's requests to its client.
    pub client: Arc<ClientChannel>,
    pub config: ServerConfig,
    muted: Arc<AtomicBool>,
    /// The optional notifications the client asked for.
    pub wants: Arc<Wants>,
    /// The runtime's MCP servers.
    pub mcp: dsh_mcp::McpHub,
    state: Mutex<Registry>,
}

/// Sends `mcp.server` notifications (until shutdown mutes the runtime).
struct McpNotifier {
    writer: FrameWriter,
    muted: Arc<AtomicBool>,
}

impl dsh_mcp::StatusSink for McpNotifier {
    fn status(&self, status: &dsh_mcp::ServerStatus) {
        if self.muted.load(Ordering::SeqCst) {
            return;
        }
        match dsh_protocol::Outgoing::notification(dsh_protocol::methods::MCP_SERVER, status) {
            Ok(frame) => self.writer.send(frame),
            Err(err) => tracing::error!("mcp.server notification not sent: {err}"),
        }
    }
}

impl ServerInner {
    /// The state of a server writing frames to `writer`.
    pub(crate) fn new(config: ServerConfig, writer: FrameWriter) -> Self {
        let muted = Arc::new(AtomicBool::new(false));
        let notifier = McpNotifier {
            writer: writer.clone(),
            muted: Arc::clone(&muted),
        };
        let mcp = dsh_mcp::McpHub::new(
            config.mcp.options.clone(),
            config.mcp.store.clone(),
            Arc::new(notifier),
        );
        Self {
            client: Arc::new(ClientChannel::new(writer.clone())),
            writer,
            config,
            muted,
            wants: Arc::default(),
            mcp,
            state: Mutex::new(Registry::default()),
        }
    }

    pub(crate) fn registry(&self) -> MutexGuard<'_, Registry> {
        // Every critical section leaves the registry consistent; recover
        // from a panic elsewhere rather than wedge the process.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn publisher(&self) -> Arc<Publisher> {
        Arc::new(Publisher::new(
            self.writer.clone(),
            Arc::clone(&self.muted),
            Arc::clone(&self.wants),
        ))
    }

    /// Stops every notification from here on (shutdown).
    pub(crate) fn mute(&self) {
        self.muted.store(true, Ordering::SeqCst);
    }
}
