//! Tools as advertised, their calls and their results.

use super::{ToolErrorCode, kind};
use crate::message::ToolMessage;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool as advertised to the model: `{name, description, parameters}`
/// (also the `tools` of `request/header`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// What the tool does (our own prose).
    pub description: String,
    /// JSON schema of the arguments.
    pub parameters: Value,
}

/// `tool/call {turn, step, callId, name, arguments}`: a call about to run.
/// A writer borrows the strings (`S = &str`): the arguments can be large.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall<S = String> {
    /// Turn number.
    pub turn: u32,
    /// Step number.
    pub step: u32,
    /// The model's call id.
    pub call_id: S,
    /// The tool called.
    pub name: S,
    /// The arguments as the model wrote them (JSON text).
    pub arguments: S,
}
kind!(ToolCall<S>, "tool/call");

/// `tool/result {turn, step, message, meta?, error?}`. A writer borrows the
/// message (`M = &ToolMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ToolResult<M = ToolMessage> {
    /// Turn number.
    pub turn: u32,
    /// Step number.
    pub step: u32,
    /// The tool message the model sees.
    pub message: M,
    /// What the tool reports besides its text (`{"cwd":…}`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// The structured failure, for failures that have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
}
kind!(ToolResult<M>, "tool/result");

/// The structured failure of a call: `{name, code}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ToolError {
    /// Error class name, e.g. `ToolNotFoundError`.
    pub name: String,
    /// Machine-readable code, e.g. `UNKNOWN_TOOL`.
    pub code: ToolErrorCode,
}

impl ToolError {
    /// The failure `code`, named by its class.
    pub fn new(code: ToolErrorCode) -> Self {
        Self {
            name: code.class_name().to_owned(),
            code,
        }
    }
}
