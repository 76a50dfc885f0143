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
    /// Who decides the tools' requests for wider access.
    pub approvals: Arc<dsh_tools::Approvals>,
    /// Prices per model for usage figures and budgets.
    pub prices: Arc<dsh_protocol::methods::PriceTable>,
    /// The MCP servers whose tools the session offers.
    pub mcp: Option<dsh_mcp::SessionServers>,
    /// The client's editor that file tools go through, if any.
    pub editor: Option<Arc<dyn dsh_tools::EditorFiles>>,
    /// The command hooks the session runs, if any.
    pub command_hooks: Option<Arc<dsh_hooks::SessionHooks>>,
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
    /// Waiters answering at this agent's idle (see [`Core::hold_idle`]).
    pub(super) idle_holds: std::sync::atomic::AtomicUsize,
    /// Told when an idle hold is released.
    pub(super) idle_released: Notify,
    /// The agent's mutable state (see [`Core::state`]).
    pub(super) state: Mutex<AgentState>,
    /// The children this agent started, oldest first.
    pub(super) children: Mutex<Vec<Child>>,
}

/// Longest an idle's hooks wait for the waiters it released to answer.
const IDLE_HOLD_MAX: std::time::Duration = std::time::Duration::from_secs(1);

/// How often that wait looks again at a waiter still working (one whose
/// tree is not idle yet does not answer at this idle).
const IDLE_HOLD_POLL: std::time::Duration = std::time::Duration::from_millis(5);

/// A waiter answering at an agent's idle (see [`Core::hold_idle`]).
pub(crate) struct IdleHold<'a>(&'a Core);

impl Drop for IdleHold<'_> {
    fn drop(&mut self) {
        self.0
            .idle_holds
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        self.0.idle_released.notify_one();
    }
}

impl Core {
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

    /// Holds this agent's idle hooks back while a waiter answers (its
    /// response is queued before the guard drops), so a waiter released at
    /// an idle is answered before work the idle begins (a goal's round).
    pub fn hold_idle(&self) -> IdleHold<'_> {
        self.idle_holds
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        IdleHold(self)
    }

    /// Waits, after the agent went idle, until the waiters it released
    /// have answered (see [`Core::hold_idle`]). Returns at once when none
    /// holds it, when the agent runs again or a child works (a waiter on
    /// the tree then waits on); [`IDLE_HOLD_MAX`] bounds it under load.
    pub async fn let_waiters_answer(&self) {
        let deadline = tokio::time::Instant::now() + IDLE_HOLD_MAX;
        loop {
            if self.idle_holds.load(std::sync::atomic::Ordering::SeqCst) == 0
                || self.is_running()
                || self.child_agents().iter().any(|c| !c.tree_quiet())
            {
                return;
            }
            let released = self.idle_released.notified();
            let step = (tokio::time::Instant::now() + IDLE_HOLD_POLL).min(deadline);
            tokio::select! {
                () = released => {}
                () = tokio::time::sleep_until(step) => {}
            }
            if tokio::time::Instant::now() >= deadline {
                return;
            }
        }
    }

    /// A child by id.
    pub fn child(&self, id: &str) -> Option<Arc<super::Agent>> {
        self.children()
            .iter()
            .find(|c| c.id == id)
            .map(|c| Arc::clone(&c.agent))
    }
}
