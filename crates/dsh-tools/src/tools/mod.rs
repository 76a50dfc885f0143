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

use dsh_llm::ToolSpec;
use serde_json::{Map, Value, json};

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
