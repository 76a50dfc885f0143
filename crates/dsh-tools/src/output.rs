//! What a tool call produces.

use dsh_protocol::catalog::{ToolError, ToolErrorCode};
use serde::Serialize;
use serde_json::{Value, json};

/// The result of one tool call: the tool message's content and flags, plus
/// the optional `meta` and `error` of the `tool/result` event.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolOutput {
    /// Content blocks of the tool message (`{"type":"text","text":…}`, …).
    pub content: Vec<Value>,
    /// The tool message's `isError`.
    pub is_error: bool,
    /// `tool/result.data.meta`, when the tool reports one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// `tool/result.data.error`, for structured failures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
}

impl ToolOutput {
    /// A successful result made of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![text_block(text)],
            is_error: false,
            meta: None,
            error: None,
        }
    }

    /// A failed result made of one text block. The text is used as given;
    /// by convention it starts with `Error: `.
    pub fn failure(text: impl Into<String>) -> Self {
        Self {
            content: vec![text_block(text)],
            is_error: true,
            meta: None,
            error: None,
        }
    }

    /// Sets the structured `error` (`{name, code}`, the name following
    /// from the code).
    pub fn with_error(mut self, code: ToolErrorCode) -> Self {
        self.error = Some(ToolError::new(code));
        self
    }

    /// Sets `meta`.
    pub fn with_meta(mut self, meta: Value) -> Self {
        self.meta = Some(meta);
        self
    }

    /// The concatenated text of every text block (handy for tests and logs).
    pub fn text_content(&self) -> String {
        self.content
            .iter()
            .filter_map(|block| block.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A `{"type":"text","text":…}` content block.
pub fn text_block(text: impl Into<String>) -> Value {
    json!({"type": "text", "text": text.into()})
}

/// The result of a call to a tool that does not exist:
/// `Error: unknown tool "<name>"` with `error {ToolNotFoundError, UNKNOWN_TOOL}`.
pub fn unknown_tool(name: &str) -> ToolOutput {
    ToolOutput {
        content: vec![text_block(format!("Error: unknown tool \"{name}\""))],
        is_error: true,
        meta: None,
        error: Some(ToolError::new(ToolErrorCode::UnknownTool)),
    }
}

/// A failed result carried in a `Result`, boxed (a [`ToolOutput`] is large).
pub(crate) type Refusal = Box<ToolOutput>;

/// A failed call in the making: the `Error: …` text of its result. Kept
/// small so it can travel in `Result`s; converts into a [`ToolOutput`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Failure(pub(crate) String);

impl From<Failure> for ToolOutput {
    fn from(failure: Failure) -> Self {
        ToolOutput::failure(failure.0)
    }
}
