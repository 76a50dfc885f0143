//! [`Core`]: what an [`Agent`](super::Agent) handle, its loop task, its
//! tools and its features share.

use super::hooks::Hooks;
use super::state::{AgentState, Delivery};
use super::tools::Roster;
use super::tree::{Child, Lineage, SessionHost, Spawner};
use crate::profile::Profile;
use dsh_llm::{Provider, RetryPolicy, Route};
use dsh_session::{TreeNotice, UserMessage};
use dsh_tools::{CancellationToken, SessionTools, ToolHost};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use tokio::sync::Notify;

/// One agent's fixed configuration, its services and its locked state.
///
/// Lock order: an agent's `children` list is never held while any
/// agent's state is taken (copy the children out first); an agent's state
/// is never held while another agent's state is taken. No lock is held
/// across an `.await`.
pub(crate) struct Core {
    /// The session id (also the agent id).
    pub id: String,
    /// Profile behaviour.
    pub profile: Arc<Profile>,
    /// The model route.
    pub route: Route,
    /// The route's provider.
    pub provider: Arc<dyn Provider>,
    /// How failed model attempts are retried.
    pub retry: RetryPolicy,
    /// The session's workspace (sandbox root).
    pub workspace: PathBuf,
    /// The tools and what the model is told of them.
    pub roster: Arc<Roster>,
    /// The context window requests are measured against.
    pub context_window: u64,
    /// Estimated tokens of the system prompt and the tools, sent with
    /// every request.
    pub fixed_tokens: u64,
    /// The system prompt of this agent's profile and model.
    pub system_prompt: String,
    /// Per-session tool state: files read, jobs, todos, persistent shell.
    pub session_tools: Arc<SessionTools>,
    /// Where library tools append events.
    pub tool_host: Arc<dyn ToolHost>,
    /// The features, called at the core's fixed points.
    pub hooks: Hooks,
    /// Cancelled when the agent is disposed; running tools stop.
    pub cancel: CancellationToken,
    /// Wakes the loop task when a turn is begun.
    pub wake: Notify,
    /// Where the agent sits in its session tree.
    pub lineage: Lineage,
    /// Creates child sessions (absent: delegation is unavailable).
    pub sessions: Option<Arc<dyn SessionHost>>,
    /// Creates child agents with their features.
    pub spawner: Arc<dyn Spawner>,
    /// This agent, for the links its children and jobs keep.
    pub this: Weak<Core>,
    /// The agent's mutable state (see [`Core::state`]).
    state: Mutex<AgentState>,
    /// The children this agent started, oldest first.
    children: Mutex<Vec<Child>>,
}

/// The parts of a [`Core`] its creator chooses (see [`Core::new`]).
pub(crate) struct CoreParts {
    pub id: String,
    pub profile: Arc<Profile>,
    pub route: Route,
    pub provider: Arc<dyn Provider>,
    pub retry: RetryPolicy,
    pub workspace: PathBuf,
    pub roster: Arc<Roster>,
    pub context_window: u64,
    pub system_prompt: String,
    pub hooks: Hooks,
    pub cancel: CancellationToken,
    pub lineage: Lineage,
    pub sessions: Option<Arc<dyn SessionHost>>,
    pub spawner: Arc<dyn Spawner>,
}

impl Core {
    /// A core over `state`; `tool_host` makes the library's host from a
    /// link to the core.
    pub fn new(
        parts: CoreParts,
        state: AgentState,
        tool_host: impl FnOnce(Weak<Core>) -> Arc<dyn ToolHost>,
    ) -> Arc<Self> {
        let fixed_tokens = parts.roster.tokens() + crate::estimate::text(parts.system_prompt.len());
        Arc::new_cyclic(|weak| Self {
            id: parts.id,
            profile: parts.profile,
            route: parts.route,
            provider: parts.provider,
            retry: parts.retry,
            workspace: parts.workspace,
            roster: parts.roster,
            context_window: parts.context_window,
            fixed_tokens,
            system_prompt: parts.system_prompt,
            session_tools: Arc::new(SessionTools::new()),
            tool_host: tool_host(weak.clone()),
            hooks: parts.hooks,
            cancel: parts.cancel,
            wake: Notify::new(),
            lineage: parts.lineage,
            sessions: parts.sessions,
            spawner: parts.spawner,
            this: weak.clone(),
            state: Mutex::new(state),
            children: Mutex::new(Vec::new()),
        })
    }

    /// Locks the state. A panic while the lock was held cannot leave the
    /// state half-updated in a way later appends depend on (every mutation
    /// is a complete event append), so a poisoned lock is recovered.
    pub fn state(&self) -> MutexGuard<'_, AgentState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Delivers a message for the model (see [`AgentState::deliver`]) and
    /// wakes the loop when that began a turn. Returns whether it was
    /// delivered (not to a disposed agent).
    pub fn deliver(
        &self,
        message: UserMessage,
        delivery: Delivery,
        on_claim: Option<TreeNotice>,
    ) -> bool {
        let mut state = self.state();
        let Some(woke) = state.deliver(message, delivery, on_claim) else {
            return false;
        };
        if woke {
            self.wake.notify_one();
        }
        state.log.flush();
        true
    }

    /// Whether a turn is running or about to run.
    pub fn is_running(&self) -> bool {
        self.state().is_running()
    }

    /// Locks the list of children (see the lock order on [`Core`]).
    pub fn children(&self) -> MutexGuard<'_, Vec<Child>> {
        self.children
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The children's agents, oldest first (copied out of the list, so
    /// their states may be taken).
    pub fn child_agents(&self) -> Vec<Arc<super::Agent>> {
        self.children()
            .iter()
            .map(|c| Arc::clone(&c.agent))
            .collect()
    }

    /// A child by id.
    pub fn child(&self, id: &str) -> Option<Arc<super::Agent>> {
        self.children()
            .iter()
            .find(|c| c.id == id)
            .map(|c| Arc::clone(&c.agent))
    }
}
