//! How an agent comes to be: its configuration ([`AgentConfig`]), how its
//! session starts ([`Start`]: new, resumed, a child), the features the
//! builder chose ([`Features`]), and how a state is restored.

use super::hooks::Hooks;
use super::state::AgentState;
use super::tools::Roster;
use super::tree::{Lineage, SessionHost, Spawner};
use crate::history::History;
use crate::profile::Profile;
use dsh_llm::{Provider, RetryPolicy, Route};
use dsh_protocol::catalog::{
    EventDraft, HeaderReason, SessionEndSeed, SessionEvent, SubagentDescriptor,
};
use dsh_session::store::ResumeFacts;
use dsh_session::{EventLog, text_of};
use dsh_tools::ToolSet;
use std::path::PathBuf;
use std::sync::Arc;

/// Everything needed to create an agent.
pub struct AgentConfig {
    /// The session id.
    pub session_id: String,
    /// Profile behaviour.
    pub profile: Arc<Profile>,
    /// The model route chosen at `initialize`.
    pub route: Route,
    /// The mounted provider of that route.
    pub provider: Arc<dyn Provider>,
    /// How failed model attempts are retried.
    pub retry: RetryPolicy,
    /// The session's workspace (header `cwd`): sandbox root and initial
    /// working directory.
    pub workspace: PathBuf,
    /// The session's event log: its observer receives events and status
    /// transitions, its writer (if any) persists them.
    pub log: EventLog,
    /// The profile's tool library (shared by every agent of the process).
    pub tools: Arc<ToolSet>,
    /// Creates child sessions for the delegation tools (absent: they answer
    /// that delegation is unavailable).
    pub sessions: Option<Arc<dyn SessionHost>>,
    /// Where the session sits in its tree.
    pub lineage: Lineage,
    /// Who decides its tools' requests for wider access (the default:
    /// as the official runtime, no rule and no approver).
    pub approvals: Arc<dsh_tools::Approvals>,
    /// Prices per model for usage figures and budgets.
    pub prices: Arc<dsh_protocol::methods::PriceTable>,
    /// The MCP servers whose tools the session offers (its subagents
    /// inherit them).
    pub mcp: Option<dsh_mcp::SessionServers>,
    /// The client's editor that file tools read and write through
    /// (`dsh acp`; its subagents inherit it); `None`: the disk.
    pub editor: Option<Arc<dyn dsh_tools::EditorFiles>>,
    /// The command hooks the session runs (Claude Code's format; its
    /// subagents inherit them); `None`: none.
    pub command_hooks: Option<Arc<dsh_hooks::SessionHooks>>,
}

/// How the session comes to be.
pub enum Start {
    /// A new session: the profile's creation events are appended.
    New,
    /// A stored session continues: its state is rebuilt from the log's
    /// facts and nothing is appended.
    Resumed(Box<ResumeFacts>),
    /// A new child session: a fork's inherited events (then
    /// `session/end-seed {"inherited": true}`), its descriptor and the
    /// delegated policies are appended (to disk only: the log is not
    /// published yet).
    Child {
        /// The child's `subagent/descriptor`.
        descriptor: Box<SubagentDescriptor>,
        /// What a fork inherits; `None` for a spawn (or a fork before any
        /// completed turn).
        seed: Option<Box<Seed>>,
    },
}

/// What a forked child inherits from its parent's completed turns.
pub struct Seed {
    /// The parent's events through its last `turn/end`, copied verbatim.
    pub events: Vec<SessionEvent>,
    /// The model-visible history they hold.
    pub history: History,
    /// The last completed turn's number (the child's next turn follows it).
    pub turn: u32,
    /// The system prompt and runtime context last sent in them.
    pub system_prompt: Option<String>,
    /// See `system_prompt`.
    pub runtime_context: Option<String>,
    /// Whether the parent had a title.
    pub titled: bool,
}

/// The features the builder chose for one agent.
pub(crate) struct Features {
    /// Called at the core's fixed points.
    pub hooks: Hooks,
    /// The agent's tools.
    pub roster: Arc<Roster>,
    /// Creates children with their own features.
    pub spawner: Arc<dyn Spawner>,
}

/// What a restored state takes over, from a stored log or a fork.
struct Restored {
    history: History,
    turn: u32,
    system_prompt: Option<String>,
    runtime_context: Option<String>,
    titled: bool,
}

impl AgentState {
    /// Copies a fork's inherited events into the child's log and takes over
    /// the state they describe.
    pub(super) fn inherit(&mut self, seed: Seed) {
        let hooks = self.hooks.clone();
        for event in seed.events {
            let data = match event.typed() {
                Ok(data) => data,
                Err(err) => {
                    tracing::error!(
                        session = self.log.session_id(),
                        "inherited event not copied: {err}"
                    );
                    continue;
                }
            };
            for feature in hooks.iter() {
                feature.inherited(self, &data);
            }
            self.emit(EventDraft {
                data,
                source_event_seqs: event.source_event_seqs,
                surface_op: event.surface_op,
                time: Some(event.time),
            });
        }
        self.event(SessionEndSeed {
            inherited: Some(true),
        });
        self.take_over(Restored {
            history: seed.history,
            turn: seed.turn,
            system_prompt: seed.system_prompt,
            runtime_context: seed.runtime_context,
            titled: seed.titled,
        });
    }

    /// Rebuilds the agent state of a stored session.
    pub(super) fn restore(&mut self, facts: ResumeFacts) {
        let hooks = self.hooks.clone();
        for feature in hooks.iter() {
            feature.resumed(self, &facts);
        }
        let turn = u32::try_from(facts.last_turn).unwrap_or(u32::MAX);
        // Everything stored is complete once repaired: a fork copies it all.
        self.completed = self.log.next_seq().checked_sub(1).map(|seq| (seq, turn));
        if let Some(cwd) = facts.cwd {
            self.cwd = PathBuf::from(cwd);
        }
        self.next_turn = facts.inbox.next_turn;
        self.next_step = facts.inbox.next_step;
        self.take_over(Restored {
            history: History::restored(facts.history),
            turn,
            system_prompt: facts.last_system.map(|m| joined(&m.content)),
            runtime_context: facts.last_runtime_context.map(|m| joined(&m.content)),
            titled: facts.has_title,
        });
    }

    /// Takes over a restored conversation: what the model saw, and that
    /// its next request continues a stored series.
    fn take_over(&mut self, restored: Restored) {
        self.history = restored.history;
        self.turn = restored.turn;
        self.system_prompt = restored.system_prompt;
        self.runtime_context = restored.runtime_context;
        self.titled = restored.titled;
        self.header_reason = Some(HeaderReason::Resume);
        self.context_announced = true;
        let hooks = self.hooks.clone();
        for feature in hooks.iter() {
            feature.restored(self);
        }
    }

    /// What a fork of this agent inherits now: the log through the last
    /// `turn/end` (its location and seq) and the state of the completed
    /// turns; `None` before any turn completed or for an unstored log.
    pub fn fork_point(&self) -> Option<(dsh_session::store::SessionLocation, u64, Seed)> {
        let (through, turn) = self.completed?;
        let location = self.log.location()?.clone();
        Some((
            location,
            through,
            Seed {
                events: Vec::new(),
                history: self.history.prefix(self.turn_history_start),
                turn,
                system_prompt: self.system_prompt.clone(),
                runtime_context: self.runtime_context.clone(),
                titled: self.titled,
            },
        ))
    }
}

/// The text blocks of `content`, joined.
fn joined(content: &[serde_json::Value]) -> String {
    text_of(content).collect()
}
