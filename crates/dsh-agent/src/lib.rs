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
//!
//! # Layers
//!
//! Each module imports only modules of its own layer or below (checked by
//! `crates/dsh-repo-checks/tests/layering.rs`, which also refuses import
//! loops):
//!
//! 1. `prose`, `profile`, `estimate`, `history`, `offload`, `tool_args` —
//!    support: model-facing text, profile settings, token estimates, the
//!    history, big-event offloading, argument checks.
//! 2. `core` — the agent core: the [`Agent`] handle, its state, the run
//!    loop, a turn's steps, model attempts, tool dispatch, and the
//!    interfaces features plug into. It names no feature.
//! 3. `delegation`, `web_search` — child agents (which later features
//!    start), and the web search tool of the library.
//! 4. `accounting`, `command_hooks`, `compaction`, `goals`, `plan_mode`,
//!    `project`, `repeat_guard`, `workflow`, `working_directory_tool` —
//!    the other features.
//! 5. `builder` — which features each profile has; the only module that
//!    names them all.
//!
//! # Type group
//!
//! One group of files names each other, because their types are mutually
//! recursive: a `Core` holds its state, its features' hooks, its tool
//! roster and its children, and those interfaces take the `Core` (or its
//! state, or create agents over one). The check allows a cycle among
//! exactly these files and fails if it grows or shrinks; the behaviour of
//! the loop (`run_loop`, `turn`, `attempt`, `calls`, `context`, `launch`,
//! `inbox`, `working_directory`) sits outside it, above it:
//! `src/core/agent.rs`, `src/core/hooks.rs`, `src/core/shared.rs`,
//! `src/core/start.rs`, `src/core/state.rs`, `src/core/tools.rs`,
//! `src/core/tree.rs`.
//!
//! # Extending the agent
//!
//! A feature reaches the loop only through `core`'s interfaces:
//!
//! * **A tool**: a type implementing `core::AgentTool` (its specs, and one
//!   call with a per-call context: the agent's core, the call, its
//!   directory and cancellation) in the feature's folder, answering a
//!   `ToolOutcome` (the result, and optionally a follow-up notice or the
//!   end of the turn); then one line in `builder::tools`.
//! * **A hook** at a fixed point of the loop (before a step, when the
//!   context window is exceeded, where a step's context is composed, when a
//!   turn starts and ends, when the agent settles, goes idle or is
//!   disposed, when its state is restored): a type implementing that method
//!   of `core::Feature`, its per-agent state kept in
//!   `AgentState::extension`; then one line in `builder::hooks`.
//! * **Children**: through `core::Spawner` (the builder creates a child
//!   with its profile's features) and a `core::ChildSink` (where a child's
//!   news goes instead of a notice to its parent).
//!
//! The core's state changes through methods that keep its invariants (an
//! inbox push has its splice event; `running` matches the announced
//! status); its lock order is written on `core::Core`.

mod accounting;
mod builder;
mod command_hooks;
mod compaction;
mod core;
mod delegation;
mod estimate;
mod goals;
mod history;
mod offload;
mod plan_mode;
mod profile;
mod project;
mod prose;
mod repeat_guard;
mod tool_args;
mod web_search;
mod workflow;
mod working_directory_tool;

pub use crate::core::{
    Agent, AgentConfig, HostError, Lineage, ParentLink, Seed, SessionHost, Start,
    WorkingDirectoryError,
};
pub use delegation::{MAX_ACTIVE_CHILDREN, MAX_DEPTH};
pub use profile::{ApprovalPolicy, PermissionMode, Profile, ProfileKind};
pub use web_search::{
    DEFAULT_TIMEOUT as WEB_SEARCH_DEFAULT_TIMEOUT, TIMEOUT_VAR as WEB_SEARCH_TIMEOUT_VAR, WebSearch,
};
