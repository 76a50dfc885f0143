//! The tools themselves, one module each.

pub(crate) mod bash;
pub(crate) mod edit;
pub(crate) mod glob;
pub(crate) mod grep;
pub(crate) mod jobs;
pub(crate) mod read;
pub(crate) mod read_image;
pub(crate) mod shell;
pub(crate) mod todo_write;
pub(crate) mod web_fetch;
pub(crate) mod write;

use crate::output::Refusal;
use crate::{Tool, ToolContext, ToolFuture, ToolOutput, args};
use dsh_protocol::catalog::ToolSpec;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::future::Future;

/// A tool whose arguments are parsed into [`TypedTool::Args`] before it
/// runs: parsing, schema errors and boxing live once, in [`Typed`].
pub(crate) trait TypedTool: Send + Sync {
    /// The parsed arguments.
    type Args: DeserializeOwned + Send + 'static;
    /// Whether calls with valid arguments join a batch ([`Tool::batched`]).
    const BATCHED: bool;
    /// Name, description and schema.
    fn spec(&self) -> &ToolSpec;
    /// Runs one call with valid arguments.
    fn call(&self, args: Self::Args, ctx: ToolContext) -> impl Future<Output = ToolOutput> + Send;
}

/// The [`Tool`] of a [`TypedTool`].
pub(crate) struct Typed<T>(pub T);

impl<T: TypedTool> Tool for Typed<T> {
    fn spec(&self) -> &ToolSpec {
        self.0.spec()
    }

    fn batched(&self, arguments: &str) -> bool {
        T::BATCHED && args::parse::<T::Args>(self.0.spec(), arguments).is_ok()
    }

    fn run(&self, arguments: &str, ctx: ToolContext) -> ToolFuture<'_> {
        let parsed = args::parse::<T::Args>(self.0.spec(), arguments);
        Box::pin(async move {
            match parsed {
                Ok(args) => self.0.call(args, ctx).await,
                Err(out) => out.into(),
            }
        })
    }
}

/// Refuses a `file_path` that is empty or only whitespace, with the
/// official text.
pub(crate) fn require_file_path(file_path: &str) -> Result<(), Refusal> {
    if file_path.trim().is_empty() {
        return Err(ToolOutput::failure("Error: file_path must be a non-empty string").into());
    }
    Ok(())
}

/// A spec from its name, description and `(property, schema)` list (kept
/// in order) plus the required property names.
pub(crate) fn spec(
    name: &str,
    description: &str,
    properties: Vec<(&str, Value)>,
    required: &[&str],
) -> ToolSpec {
    let mut props = Map::new();
    for (key, schema) in properties {
        props.insert(key.to_owned(), schema);
    }
    let parameters = if required.is_empty() {
        json!({"type": "object", "properties": props})
    } else {
        json!({"type": "object", "properties": props, "required": required})
    };
    ToolSpec {
        name: name.to_owned(),
        description: description.to_owned(),
        parameters,
    }
}

/// `{"type":"string","description":…}`.
pub(crate) fn string(description: &str) -> Value {
    json!({"type": "string", "description": description})
}

/// `{"type":"number","description":…}`.
pub(crate) fn number(description: &str) -> Value {
    json!({"type": "number", "description": description})
}

/// `{"type":"boolean","description":…}`.
pub(crate) fn boolean(description: &str) -> Value {
    json!({"type": "boolean", "description": description})
}

/// The `sandbox_permissions` property shared by bash, write and edit.
pub(crate) fn sandbox_permissions() -> Value {
    json!({
        "type": "string",
        "description": "Ask for wider file-system access than the session's mode for this one call. The request needs approval, and when nobody can approve it the call is declined, so leave this out unless the task cannot be done otherwise.",
        "enum": ["workspace-write", "danger-full-access"]
    })
}

/// The `justification` property shared by bash, write and edit.
pub(crate) fn justification() -> Value {
    string(
        "Why the wider access in sandbox_permissions is needed; shown to whoever approves the request.",
    )
}
