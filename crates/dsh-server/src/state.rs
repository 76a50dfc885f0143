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
    state: Mutex<Registry>,
}

impl ServerInner {
    /// The state of a server writing frames to `writer`.
    pub(crate) fn new(config: ServerConfig, writer: FrameWriter) -> Self {
        Self {
            client: Arc::new(ClientChannel::new(writer.clone())),
            writer,
            config,
            muted: Arc::new(AtomicBool::new(false)),
            wants: Arc::default(),
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
