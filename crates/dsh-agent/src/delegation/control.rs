//! `send_message`, `interrupt_agent` and `list_agents`: what an agent may do
//! with the agents around it.

use super::error::{DelegationError, parse};
use super::{MAX_DEPTH, prose};
use crate::core::{Core, Delivery};
use dsh_session::{UserMessage, text_block};
use dsh_tools::ToolOutput;
use serde::Deserialize;
use std::sync::Arc;

/// Source kind of a message from another agent (`form: "relay"`).
const AGENT_MESSAGE: &str = "agent-message";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct SendArgs {
    agent_id: String,
    message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AgentArgs {
    agent_id: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    #[serde(default)]
    scope: Option<Scope>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
enum Scope {
    Children,
    Descendants,
}

/// `send_message {agent_id, message}`: to one of this agent's children or
/// to its parent. The recipient gets it on its next step when running, or
/// as a new turn when idle.
pub(crate) fn send_message(core: &Core, arguments: &str) -> ToolOutput {
    match send(core, arguments) {
        Ok(id) => ToolOutput::text(format!("message delivered to agent {id}")),
        Err(refusal) => refusal.into(),
    }
}

fn send(core: &Core, arguments: &str) -> Result<String, DelegationError> {
    let args: SendArgs = parse(arguments)?;
    if args.message.trim().is_empty() {
        return Err(DelegationError::InvalidArgs(
            "\"message\" must not be empty".to_owned(),
        ));
    }
    if args.agent_id == core.id {
        return Err(DelegationError::NotAChild(args.agent_id));
    }
    let message = UserMessage::relay(
        AGENT_MESSAGE,
        vec![
            text_block(prose::agent_message_heading(&core.id)),
            text_block(args.message),
        ],
        &core.id,
    );
    let delivered = if let Some(agent) = core.child(&args.agent_id) {
        agent.core().deliver(message, Delivery::Relay, None)
    } else if let Some(parent) = core
        .lineage
        .parent
        .as_ref()
        .filter(|p| p.id == args.agent_id)
        .and_then(|p| p.core.upgrade())
    {
        parent.deliver(message, Delivery::Relay, None)
    } else {
        false
    };
    if delivered {
        Ok(args.agent_id)
    } else {
        Err(DelegationError::Unavailable(args.agent_id))
    }
}

/// `interrupt_agent {agent_id}`: stops the running turn of a child.
pub(crate) fn interrupt_agent(core: &Core, arguments: &str) -> ToolOutput {
    match interrupt(core, arguments) {
        Ok(id) => ToolOutput::text(format!("interrupt requested for agent {id}")),
        Err(refusal) => refusal.into(),
    }
}

fn interrupt(core: &Core, arguments: &str) -> Result<String, DelegationError> {
    let args: AgentArgs = parse(arguments)?;
    if args.agent_id == core.id {
        return Err(DelegationError::SelfInterrupt(args.agent_id));
    }
    let Some(agent) = core.child(&args.agent_id) else {
        // Deliberate difference: the official runtime answers as if an
        // unknown id had been interrupted.
        return Err(DelegationError::Unavailable(args.agent_id));
    };
    agent.interrupt();
    Ok(args.agent_id)
}

/// `list_agents {scope?}`: this agent's children (default) or all its
/// descendants, one line each as the official runtime lists them:
/// `<id> [running|inactive] — <label>` (descendants also show
/// `parent=<id> depth=<n>`), or `(no subagents)`.
pub(crate) fn list_agents(core: &Core, arguments: &str) -> ToolOutput {
    let args: ListArgs = match parse(arguments) {
        Ok(args) => args,
        Err(refusal) => return refusal.into(),
    };
    let scope = args.scope.unwrap_or(Scope::Children);
    let mut lines = Vec::new();
    collect(core, scope, &mut lines, MAX_DEPTH + 1);
    if lines.is_empty() {
        return ToolOutput::text("(no subagents)");
    }
    ToolOutput::text(lines.join("\n"))
}

/// Appends the children of `core` (and, for descendants, theirs) to `out`,
/// at most `levels` deep.
fn collect(core: &Core, scope: Scope, out: &mut Vec<String>, levels: u64) {
    if levels == 0 {
        return;
    }
    let children: Vec<(String, String, Arc<crate::Agent>)> = core
        .children()
        .iter()
        .map(|c| (c.id.clone(), c.label.clone(), Arc::clone(&c.agent)))
        .collect();
    for (id, label, agent) in children {
        let child = agent.core();
        let status = if child.is_running() {
            "running"
        } else {
            "inactive"
        };
        out.push(match scope {
            Scope::Children => format!("{id} [{status}] — {label}"),
            Scope::Descendants => format!(
                "{id} [{status}] parent={} depth={} — {label}",
                core.id, child.lineage.depth
            ),
        });
        if scope == Scope::Descendants {
            collect(child, scope, out, levels - 1);
        }
    }
}
