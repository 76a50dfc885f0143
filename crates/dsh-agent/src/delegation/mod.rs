//! Delegation: child agents started by a parent's `subagent` and
//! `subagent_fork` calls, the messages agents send each other, and the
//! notice a parent gets when a child settles.
//!
//! A child is an in-process [`Agent`](crate::Agent) with its own session and log, created
//! through the process's [`SessionHost`] (the server: it owns the store and
//! the client connection). The parent keeps the child's handle; the child
//! keeps a weak link to its parent, so a disposed parent never keeps a
//! child's news waiting.

mod control;
mod error;
mod prose;
mod settle;
mod spawn;
mod specs;

pub(crate) use error::DelegationError;
pub(crate) use spawn::{ChildPlan, create_child};

use crate::core::{AgentTool, Core, Feature, HookFuture, SessionHost, ToolCall, ToolOutcome};
use dsh_protocol::catalog::{SubagentProvider, ToolSpec};
use std::sync::Arc;

/// How deep a session tree may grow: a root's children may not delegate.
pub const MAX_DEPTH: u64 = 1;

/// How many children of one parent may be working at once.
pub const MAX_ACTIVE_CHILDREN: usize = 8;

/// The delegation feature: a child's news goes to its parent when it
/// settles, and a child's runtime context says where it sits.
pub(crate) struct Delegation;

impl Feature for Delegation {
    fn settled(&self, core: &Core) {
        settle::settled(core);
    }

    fn runtime_sections(&self, core: &Core, sections: &mut Vec<crate::prose::Section>) {
        if let Some(parent) = &core.lineage.parent {
            sections.extend(prose::delegation_sections(
                core.lineage.depth,
                MAX_DEPTH,
                &parent.id,
            ));
        }
    }
}

/// `subagent`, `subagent_fork`, `send_message`, `interrupt_agent` and
/// `list_agents`.
pub(crate) struct DelegationTools;

impl AgentTool for DelegationTools {
    fn specs(&self) -> Vec<ToolSpec> {
        specs::specs()
    }

    /// `subagent`/`subagent_fork` calls whose arguments fit the schema
    /// join a batch (the official runtime starts them in parallel).
    fn batched(&self, name: &str, arguments: &str) -> bool {
        matches!(name, "subagent" | "subagent_fork") && spawn::fits_schema(arguments)
    }

    fn call<'a>(&'a self, call: ToolCall<'a>) -> HookFuture<'a, ToolOutcome> {
        let core = call.core;
        let arguments = call.arguments;
        Box::pin(async move {
            match call.name {
                "subagent" => spawn::spawn(core, arguments, SubagentProvider::Spawn).await,
                "subagent_fork" => spawn::spawn(core, arguments, SubagentProvider::Fork).await,
                "send_message" => control::send_message(core, arguments),
                "interrupt_agent" => control::interrupt_agent(core, arguments),
                _ => control::list_agents(core, arguments),
            }
            .into()
        })
    }
}

/// The host `core` creates children through, if it may delegate at all
/// (not too deep, a host present).
pub(crate) fn host(core: &Core) -> Result<Arc<dyn SessionHost>, DelegationError> {
    if core.lineage.depth >= MAX_DEPTH {
        return Err(DelegationError::TooDeep {
            depth: core.lineage.depth + 1,
            max: MAX_DEPTH,
        });
    }
    core.sessions.clone().ok_or(DelegationError::NoHost)
}
