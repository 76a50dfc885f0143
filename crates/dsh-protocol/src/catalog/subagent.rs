//! Delegation: the events that describe a child agent in its own log
//! (`subagent/descriptor`) and in its parent's (`subagent/catalog`).

use super::kind;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a child came to be: `spawn` (tool `subagent`, a fresh context) or
/// `fork` (tool `subagent_fork`, the parent's completed turns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SubagentProvider {
    /// A fresh context.
    Spawn,
    /// Seeded with the parent's completed turns.
    Fork,
}

impl SubagentProvider {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Spawn => "spawn",
            Self::Fork => "fork",
        }
    }
}

/// `mode` of a child: `continuable` (it can be sent further messages after
/// it settles; the only mode observed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SubagentMode {
    /// Takes further messages after settling.
    Continuable,
}

/// `subagent/descriptor {version: 3, mode, provider, label, agentProvider,
/// agentModel, agentReasoningEffort}`: the first event of a child's log
/// (written before the child is published, never notified).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubagentDescriptor {
    /// Format generation: 3.
    pub version: u32,
    /// `continuable`.
    pub mode: SubagentMode,
    /// `spawn` or `fork`.
    pub provider: SubagentProvider,
    /// The task's short description (the tool's `description`).
    pub label: String,
    /// The model provider the child runs on (inherited).
    pub agent_provider: String,
    /// The model (inherited).
    pub agent_model: String,
    /// The reasoning effort (inherited, explicit); absent when a workflow
    /// chose the child's model (the model's default effort applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_reasoning_effort: Option<String>,
}
kind!(SubagentDescriptor, "subagent/descriptor");

impl SubagentDescriptor {
    /// The descriptor format written by this runtime.
    pub const VERSION: u32 = 3;
}

/// `subagent/catalog {version: 0, childId, childCreatedAt, mode, label}`:
/// the parent's record of a child it started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubagentCatalog {
    /// Format generation: 0.
    pub version: u32,
    /// The child session.
    pub child_id: String,
    /// The child's header `createdAt`.
    pub child_created_at: u64,
    /// `continuable`.
    pub mode: SubagentMode,
    /// The task's short description.
    pub label: String,
}
kind!(SubagentCatalog, "subagent/catalog");

impl SubagentCatalog {
    /// The catalog format written by this runtime.
    pub const VERSION: u32 = 0;
}

#[cfg(test)]
mod tests {
    use crate::catalog::{Event, EventPayload};

    #[test]
    fn official_delegation_events_parse_and_round_trip() {
        let descriptor = r#"{"version":3,"mode":"continuable","provider":"spawn","label":"Say hello","agentProvider":"deepseek-official","agentModel":"deepseek-v4-flash","agentReasoningEffort":"high"}"#;
        let catalog = r#"{"version":0,"childId":"77f213c4-6d86-481e-8f30-13237ea2021b","childCreatedAt":1796008674564,"mode":"continuable","label":"Say hello"}"#;
        for (kind, line) in [
            ("subagent/descriptor", descriptor),
            ("subagent/catalog", catalog),
        ] {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            let event = Event::parse(kind, &value).unwrap();
            assert_eq!(event.kind(), kind);
            assert!(!matches!(event, Event::Unknown(_)));
            assert_eq!(serde_json::to_string(&event).unwrap(), line);
        }
    }
}
