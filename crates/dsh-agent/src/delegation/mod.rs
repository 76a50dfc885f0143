//! Delegation: child agents started by a parent's `subagent` and
//! `subagent_fork` calls, the messages agents send each other, and the
//! notice a parent gets when a child settles.
//!
//! A child is an in-process [`Agent`] with its own session and log, created
//! through the process's [`SessionHost`] (the server: it owns the store and
//! the client connection). The parent keeps the child's handle; the child
//! keeps a weak link to its parent, so a disposed parent never keeps a
//! child's news waiting.

mod control;
mod error;
mod settle;
mod spawn;
mod specs;

pub(crate) use control::{interrupt_agent, list_agents, send_message};
pub(crate) use error::DelegationError;
pub(crate) use settle::settled;
pub(crate) use spawn::{ChildPlan, create_child, spawn};
pub(crate) use specs::{DELEGATION_TOOLS, specs};

use crate::agent::Agent;
use crate::inner::Inner;
use dsh_protocol::catalog::SubagentProvider;
use dsh_session::store::SessionHeader;
use dsh_session::{EventLog, EventObserver};
use std::sync::{Arc, Weak};

/// How deep a session tree may grow: a root's children may not delegate.
pub const MAX_DEPTH: u64 = 1;

/// How many children of one parent may be working at once.
pub const MAX_ACTIVE_CHILDREN: usize = 8;

/// Why the host could not create or register a child session.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct HostError(pub String);

/// What the process offers its agents to create child sessions
/// (implemented by the server, which owns the store and the connection).
pub trait SessionHost: Send + Sync {
    /// Creates the child's session on disk (directory, lock, `header`) and
    /// returns its log, persisted but not yet published.
    fn create_log(&self, header: &SessionHeader) -> Result<EventLog, HostError>;
    /// The observer that publishes sessions to the client.
    fn observer(&self) -> Arc<dyn EventObserver>;
    /// Registers a new child as an open session the client can address
    /// (prompt, wait, working directory); refused while shutting down.
    fn register(&self, agent: &Arc<Agent>) -> Result<(), HostError>;
}

/// Where an agent sits in its session tree.
#[derive(Clone, Default)]
pub struct Lineage {
    /// 0 for a root session, its parent's + 1 for a child.
    pub depth: u64,
    /// The parent of a child.
    pub parent: Option<ParentLink>,
}

/// A child's link to its parent.
#[derive(Clone)]
pub struct ParentLink {
    /// The parent session.
    pub id: String,
    /// How the child was started.
    pub provider: SubagentProvider,
    /// The task's short description.
    pub label: String,
    pub(crate) inner: Weak<Inner>,
    /// Where the child reports when it settles, instead of a notice to
    /// the parent (a workflow's children; absent after a resume).
    pub(crate) report: Option<Report>,
}

/// How a workflow's child reports to the run that started it.
#[derive(Clone)]
pub(crate) struct Report {
    /// Receives the child's news when it settles.
    pub tx: tokio::sync::mpsc::UnboundedSender<ChildReport>,
    /// The schema of the child's `structured_output` tool, when the run
    /// asked for structured output.
    pub schema: Option<Arc<serde_json::Value>>,
    /// What the child reported through `structured_output`.
    pub structured: Arc<std::sync::Mutex<Option<serde_json::Value>>>,
}

/// A workflow child's news: how its turn ended and what it answered.
#[derive(Debug)]
pub(crate) struct ChildReport {
    /// How the turn ended.
    pub stop: dsh_protocol::notifications::SubagentStopReason,
    /// The text of its last reply (empty when the turn did not complete).
    pub text: String,
    /// Its structured output, when it reported one.
    pub structured: Option<serde_json::Value>,
}

impl ParentLink {
    /// A link to `parent` for a child started as `provider` with `label`.
    pub fn to(parent: &Agent, provider: SubagentProvider, label: &str) -> Self {
        Self::of(parent.inner(), provider, label)
    }

    pub(crate) fn of(parent: &Inner, provider: SubagentProvider, label: &str) -> Self {
        Self {
            id: parent.id.clone(),
            provider,
            label: label.to_owned(),
            inner: parent.this.clone(),
            report: None,
        }
    }
}

/// A child as its parent knows it.
pub(crate) struct Child {
    /// The child's session id (also its agent id).
    pub id: String,
    /// The task's short description.
    pub label: String,
    /// The child.
    pub agent: Arc<Agent>,
}

/// A child of `inner` by id.
pub(crate) fn child(inner: &Inner, id: &str) -> Option<Arc<Agent>> {
    inner
        .children()
        .iter()
        .find(|c| c.id == id)
        .map(|c| Arc::clone(&c.agent))
}
