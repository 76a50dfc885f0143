//! Streaming deltas (dsh's extension): `session.delta` notifications
//! carrying a reply's text, reasoning and tool-call arguments as the
//! provider streams them, and a `bash` call's output as the command
//! writes it. Never persisted; the committed events stay the record.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `session.delta`.
pub const SESSION_DELTA: &str = "session.delta";

/// What a delta continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DeltaKind {
    /// A text block of the reply.
    Text,
    /// A reasoning block of the reply.
    Reasoning,
    /// The raw JSON arguments of a tool-call block.
    ToolArguments,
    /// What a running `bash` call's command writes.
    ToolOutput,
}

/// Params of `session.delta`. Deltas with the same `turn`, `step`,
/// `attempt`, `kind`, `index` and `callId` continue one another, in
/// order; joined, a block's deltas equal the block the step's
/// `assistant/message` commits. Under backpressure consecutive deltas are
/// joined into fewer, larger ones (never dropped).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDeltaParams {
    /// The session.
    pub session_id: String,
    /// The turn.
    pub turn: u32,
    /// The step.
    pub step: u32,
    /// The model attempt of the step, from 0: a retried step streams
    /// again under the next number, and the deltas of the attempts before
    /// it are void. Absent for the first attempt and for tool output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    /// What it continues.
    pub kind: DeltaKind,
    /// The reply's block index (text, reasoning, tool arguments), or the
    /// file descriptor of the output (1 stdout, 2 stderr).
    pub index: u32,
    /// The tool call (tool arguments and output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The text.
    pub delta: String,
}
