//! What the [`Agent`](crate::Agent) handle, its loop task and its tools
//! share.

use crate::compaction::Budget;
use crate::delegation::{Child, Lineage, SessionHost};
use crate::profile::Profile;
use crate::state::{Delivery, State};
use dsh_llm::{Provider, RetryPolicy, Route};
use dsh_protocol::catalog::ToolSpec;
use dsh_session::{TreeNotice, UserMessage};
use dsh_tools::{CancellationToken, SessionTools, ToolHost, ToolSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use tokio::sync::Notify;

/// Shared between the [`Agent`] handle and its loop task.
pub(crate) struct Inner {
    pub id: String,
    pub profile: Arc<Profile>,
    pub route: Route,
    pub provider: Arc<dyn Provider>,
    pub retry: RetryPolicy,
    pub workspace: PathBuf,
    /// The tool library.
    pub tools: Arc<ToolSet>,
    /// What the model is told it may call.
    pub specs: Arc<Vec<ToolSpec>>,
    /// When and how much to compact.
    pub budget: Budget,
    /// Estimated tokens of the system prompt and the tools, sent with
    /// every request.
    pub fixed_tokens: u64,
    /// The system prompt of this agent's profile and model.
    pub system_prompt: String,
    /// Per-session tool state: files read, jobs, todos, persistent shell.
    pub session_tools: Arc<SessionTools>,
    /// Where tools append events.
    pub host: Arc<dyn ToolHost>,
    /// Cancelled when the agent is disposed; running tools stop.
    pub cancel: CancellationToken,
    /// The agent's mutable state (see [`Inner::state`]).
    pub state: Mutex<State>,
    /// Wakes the loop task when a turn is begun.
    pub wake: Notify,
    /// Where the agent sits in its session tree.
    pub lineage: Lineage,
    /// Creates child sessions (absent: delegation is unavailable).
    pub sessions: Option<Arc<dyn SessionHost>>,
    /// The children this agent started, oldest first.
    pub children: Mutex<Vec<Child>>,
    /// This agent, for the links its children keep.
    pub this: Weak<Inner>,
}

impl Inner {
    /// Locks the state. A panic while the lock was held cannot leave the
    /// state half-updated in a way later appends depend on (every mutation
    /// is a complete event append), so a poisoned lock is recovered.
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Delivers a message for the model (see [`State::deliver`]) and wakes
    /// the loop when that began a turn. Returns whether it was delivered
    /// (not to a disposed agent).
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
        self.state().running
    }

    /// Locks the list of children (never held with [`Inner::state`] of
    /// another agent taken after it; see [`crate::delegation`]).
    pub fn children(&self) -> MutexGuard<'_, Vec<Child>> {
        self.children
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
