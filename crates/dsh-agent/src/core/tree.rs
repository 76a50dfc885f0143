//! The session tree as the core knows it: where an agent sits
//! ([`Lineage`], [`ParentLink`]), the children it keeps ([`Child`]), and
//! the three interfaces through which features grow the tree without the
//! core knowing how: the process's [`SessionHost`] (logs and registration),
//! the [`Spawner`] (creates a child agent with its profile's features) and
//! a [`ChildSink`] (where a child's news goes instead of a notice).

use super::agent::Agent;
use super::shared::Core;
use super::start::{AgentConfig, Start};
use super::tools::AgentTool;
use dsh_protocol::catalog::SubagentProvider;
use dsh_session::store::SessionHeader;
use dsh_session::{EventLog, EventObserver};
use std::sync::{Arc, Weak};

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
    /// The parent, while it lives.
    pub(crate) core: Weak<Core>,
    /// Where the child's news goes instead of a notice to the parent (a
    /// workflow's children; absent after a resume).
    pub(crate) sink: Option<Arc<dyn ChildSink>>,
}

impl ParentLink {
    /// A link to `parent` for a child started as `provider` with `label`.
    pub fn to(parent: &Agent, provider: SubagentProvider, label: &str) -> Self {
        Self::of(parent.core(), provider, label)
    }

    /// See [`ParentLink::to`].
    pub(crate) fn of(parent: &Core, provider: SubagentProvider, label: &str) -> Self {
        Self {
            id: parent.id.clone(),
            provider,
            label: label.to_owned(),
            core: parent.this.clone(),
            sink: None,
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
    /// The parent's turn that started it (`None`: adopted while idle,
    /// e.g. restored on resume).
    pub parent_turn: Option<u32>,
}

/// What a child's news is made of when it settles.
pub(crate) struct ChildNews {
    /// The client's `subagent.finished`.
    pub finished: Box<dsh_protocol::notifications::SubagentFinishedParams>,
    /// The text of its last reply (empty when the turn did not complete).
    pub closing: String,
}

/// Receives a child's news in place of the parent's model (a workflow's
/// run hears of its children this way).
pub(crate) trait ChildSink: Send + Sync {
    /// Takes the news of `child` settling under `parent`; gives it back
    /// when this sink no longer listens (the parent's model gets it then).
    fn settled(&self, parent: &Core, child: &Core, news: ChildNews) -> Result<(), ChildNews>;
}

/// A child agent to create: its configuration, how it starts, and the
/// tools it has beyond its profile's (a workflow child's
/// `structured_output`).
pub(crate) struct ChildSpec {
    /// As for any agent.
    pub config: AgentConfig,
    /// [`Start::Child`].
    pub start: Start,
    /// Extra tools of this child only.
    pub tools: Vec<Arc<dyn AgentTool>>,
}

/// Creates agents with their profile's features (the builder implements
/// it; the core and the features that start children only call it).
pub(crate) trait Spawner: Send + Sync {
    /// Creates and starts the agent `spec` describes.
    fn spawn(&self, spec: ChildSpec) -> Arc<Agent>;
}
