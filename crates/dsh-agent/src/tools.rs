//! Tool dispatch. No tool is built in yet: every call gets the official
//! `UNKNOWN_TOOL` error result, which the model can act on.

use crate::prose;
use dsh_session::text_block;
use serde_json::{Value, json};

/// What a tool call produced.
pub struct ToolOutcome {
    /// Result blocks.
    pub content: Vec<Value>,
    /// Whether the call failed.
    pub is_error: bool,
    /// `tool/result.data.error`: `{name, code}` of a structured failure.
    pub error: Option<Value>,
}

/// Runs one call of tool `name`.
pub fn dispatch(name: &str, _arguments: &str) -> ToolOutcome {
    ToolOutcome {
        content: vec![text_block(prose::unknown_tool(name))],
        is_error: true,
        error: Some(json!({"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"})),
    }
}
