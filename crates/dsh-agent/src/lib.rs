//! The agent loop.
//!
//! An [`Agent`] owns one session: its [`EventLog`](dsh_session::EventLog),
//! its two inboxes (`next-turn`: one prompt per turn; `next-step`: context
//! injected at the next step boundary), the model-visible history and the
//! working directory. [`Agent::prompt`] enqueues a prompt and, when the agent
//! is idle, starts a turn before returning, so the receipt, `running`,
//! `turn/start` and the claim precede the `session/prompt` response. A
//! background task then runs the turn's steps: model attempt → tool calls →
//! next step, until the model stops.

mod agent;
mod compaction;
mod delegation;
mod goals;
mod history;
mod inner;
mod offload;
mod plan_mode;
mod profile;
mod project;
mod prose;
mod state;
mod tool_args;
mod tools;
mod turn;
mod web_search;
mod workflow;
mod working_directory;

pub use agent::{Agent, AgentConfig, Seed, Start};
pub use delegation::{HostError, Lineage, MAX_ACTIVE_CHILDREN, MAX_DEPTH, ParentLink, SessionHost};
pub use profile::{ApprovalPolicy, PermissionMode, Profile, ProfileKind};
pub use web_search::{
    DEFAULT_TIMEOUT as WEB_SEARCH_DEFAULT_TIMEOUT, TIMEOUT_VAR as WEB_SEARCH_TIMEOUT_VAR, WebSearch,
};
pub use working_directory::WorkingDirectoryError;
