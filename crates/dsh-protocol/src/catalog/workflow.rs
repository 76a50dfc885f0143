//! Workflow events: `tool-workflow/run-start`, `tool-workflow/agent-start`,
//! `tool-workflow/agent-end` and `tool-workflow/run-end`, written to the
//! log of the session whose `workflow` call runs the script.

use super::kind;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `tool-workflow/run-start {runId, name}`: a script began to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowRunStart {
    /// UUIDv4 naming the run in its events.
    pub run_id: String,
    /// `meta.name`.
    pub name: String,
}
kind!(WorkflowRunStart, "tool-workflow/run-start");

/// `tool-workflow/agent-start {runId, seq, label, phase?, childId}`: the
/// script's `agent()` call number `seq` started a child.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowAgentStart {
    /// See [`WorkflowRunStart::run_id`].
    pub run_id: String,
    /// 1 for the run's first `agent()` call.
    pub seq: u64,
    /// The call's `label`, else the start of its prompt.
    pub label: String,
    /// The call's phase (its `phase` option, else the script's current one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The child session.
    pub child_id: String,
}
kind!(WorkflowAgentStart, "tool-workflow/agent-start");

/// `tool-workflow/agent-end {runId, seq, outcome}`: that child settled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowAgentEnd {
    /// See [`WorkflowRunStart::run_id`].
    pub run_id: String,
    /// As in its `agent-start`.
    pub seq: u64,
    /// How the child's work ended.
    pub outcome: WorkflowAgentOutcome,
}
kind!(WorkflowAgentEnd, "tool-workflow/agent-end");

/// `tool-workflow/agent-end.outcome`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WorkflowAgentOutcome {
    /// The child answered (and reported its structured output when asked).
    Completed,
    /// The child's turn failed, or it never reported its structured output.
    Failed,
    /// The child was stopped with the run.
    Cancelled,
}

/// `tool-workflow/run-end {runId, stopReason}`: the script finished.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowRunEnd {
    /// See [`WorkflowRunStart::run_id`].
    pub run_id: String,
    /// How the run ended.
    pub stop_reason: WorkflowStopReason,
}
kind!(WorkflowRunEnd, "tool-workflow/run-end");

/// `tool-workflow/run-end.stopReason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WorkflowStopReason {
    /// The script returned a value.
    Completed,
    /// The script threw, returned something that is not JSON, or hit a
    /// limit.
    Error,
    /// The run was stopped (turn interrupted, session disposed, `job_kill`).
    Cancelled,
}
