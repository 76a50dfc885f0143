//! The agent core: the [`Agent`] handle, its [`AgentState`] and the loop
//! that runs turns of steps (model call → tool calls). It knows no
//! feature: features plug in through [`Feature`] (hooks at fixed points),
//! [`AgentTool`] (tools in the [`Roster`]) and the tree's [`Spawner`] and
//! [`ChildSink`]; the builder (`crate::builder`) wires them.
//!
//! Lock order (see [`Core`]): a children list is never held while an
//! agent's state is taken; one agent's state is never held while another
//! agent's state is taken; no lock is held across an `.await`. Every event
//! is appended under the state lock together with the change it records.

mod agent;
mod attempt;
mod calls;
mod context;
mod deltas;
mod hooks;
mod inbox;
mod launch;
mod run_loop;
mod shared;
mod start;
mod state;
mod tools;
mod tree;
mod turn;
mod working_directory;

pub use agent::Agent;
pub use start::{AgentConfig, Seed, Start};
pub use tree::{HostError, Lineage, ParentLink, SessionHost};
pub use working_directory::WorkingDirectoryError;

pub(crate) use attempt::attempt;
pub(crate) use hooks::{
    AfterTool, CallView, ContextSlot, Feature, Gate, HookFuture, Hooks, Stopping,
};
pub(crate) use launch::create;
pub(crate) use shared::Core;
pub(crate) use start::Features;
pub(crate) use state::interrupted;
pub(crate) use state::{AgentState, Delivery};
pub(crate) use tools::{AgentTool, Roster, ToolCall, ToolOutcome};
pub(crate) use tree::{Child, ChildNews, ChildSink, ChildSpec, Spawner};

#[cfg(test)]
mod tests;
