//! The four runtime → client notifications.

use crate::catalog::{SessionEvent, SubagentProvider, TurnEndReason};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `session.event`.
pub const SESSION_EVENT: &str = "session.event";
/// `session.status`.
pub const SESSION_STATUS: &str = "session.status";
/// `subagent.started`.
pub const SUBAGENT_STARTED: &str = "subagent.started";
/// `subagent.finished`.
pub const SUBAGENT_FINISHED: &str = "subagent.finished";

/// Params of `session.event`: one event appended to a published session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionEventParams {
    /// The session the event belongs to.
    pub session_id: String,
    /// The event, byte for byte as persisted.
    pub event: SessionEvent,
}

/// Whole-agent activity state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// The agent started working.
    Running,
    /// The agent finished all queued work.
    Idle,
}

/// Params of `session.status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionStatusParams {
    /// The session whose agent changed state.
    pub session_id: String,
    /// The new state; never repeated.
    pub status: Status,
}

/// Params of `subagent.started`, sent before any event of the child.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubagentStartedParams {
    /// The parent session.
    pub parent_session_id: String,
    /// The new child session (a bare UUIDv4).
    pub child_session_id: String,
}

/// Params of `subagent.finished` (official key order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubagentFinishedParams {
    /// `spawn` (tool `subagent`) or `fork` (tool `subagent_fork`).
    pub provider: SubagentProvider,
    /// Equal to `child_session_id`.
    pub agent_id: String,
    /// The parent session.
    pub parent_session_id: String,
    /// The finished child.
    pub child_session_id: String,
    /// `ok` or `error`.
    pub status: SubagentStatus,
    /// How the child's last turn ended.
    pub stop_reason: SubagentStopReason,
    /// Content blocks of the child's final assistant output, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_assistant_message: Option<Vec<serde_json::Value>>,
}

/// `subagent.finished.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SubagentStatus {
    /// Completed (or cut at the token cap while that counts as success).
    Ok,
    /// Anything else.
    Error,
}

/// `subagent.finished.stopReason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SubagentStopReason {
    /// The turn completed.
    Completed,
    /// The turn was aborted or interrupted.
    Aborted,
    /// The reply was cut at the token cap.
    MaxTokens,
    /// The model refused (`blocked`; not produced by this runtime).
    Refusal,
    /// The turn failed.
    Error,
}

impl SubagentStopReason {
    /// The stop reason of a child whose last turn ended with `reason`.
    pub fn of(reason: &TurnEndReason) -> Self {
        match reason {
            TurnEndReason::Completed => Self::Completed,
            TurnEndReason::MaxTokens => Self::MaxTokens,
            TurnEndReason::Error { .. } => Self::Error,
            _ => Self::Aborted,
        }
    }

    /// `ok` for `completed`, and for `max-tokens` when the profile counts
    /// a cut reply as success; `error` otherwise.
    pub fn status(self, max_tokens_as_success: bool) -> SubagentStatus {
        match self {
            Self::Completed => SubagentStatus::Ok,
            Self::MaxTokens if max_tokens_as_success => SubagentStatus::Ok,
            _ => SubagentStatus::Error,
        }
    }
}
