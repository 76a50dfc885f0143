//! A server's tools as the model sees them: `mcp__<server>__<tool>`, the
//! server's input schema, bounded; a tool that cannot be offered is
//! skipped and reported once.

use dsh_protocol::catalog::ToolSpec;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::Mutex;

/// Longest full tool name the providers accept.
const MAX_TOOL_NAME: usize = 64;

/// Longest description kept (longer ones are cut).
const MAX_DESCRIPTION: usize = 8 * 1024;

/// Largest input schema accepted, as JSON.
const MAX_SCHEMA_BYTES: usize = 64 * 1024;

/// Most tools taken from one server.
pub(crate) const MAX_TOOLS: usize = 128;

/// One tool of a server, ready to advertise.
#[derive(Debug)]
pub struct RemoteTool {
    /// The tool's name on its server.
    pub remote: String,
    /// Name, description and schema as the model sees them.
    pub spec: ToolSpec,
    /// `readOnlyHint: true`.
    pub read_only: bool,
    /// Not `destructiveHint: false` (the MCP default is destructive).
    pub destructive: bool,
}

/// The model-facing name of `tool` on `server`.
pub fn full_name(server: &str, tool: &str) -> String {
    format!("mcp__{server}__{tool}")
}

/// Converts a server's tool list, skipping (and reporting once, through
/// `reported`) the tools that cannot be offered.
pub(crate) fn convert(
    server: &str,
    tools: Vec<rmcp::model::Tool>,
    reported: &Mutex<HashSet<String>>,
) -> Vec<RemoteTool> {
    let mut out = Vec::new();
    for tool in tools {
        let remote = tool.name.to_string();
        match offer(server, &tool) {
            Ok(converted) if out.len() < MAX_TOOLS => out.push(converted),
            Ok(_) => report(
                reported,
                server,
                &remote,
                &format!("the server lists more than {MAX_TOOLS} tools"),
            ),
            Err(why) => report(reported, server, &remote, &why),
        }
    }
    out.sort_by(|a, b| a.spec.name.cmp(&b.spec.name));
    out.dedup_by(|a, b| a.spec.name == b.spec.name);
    out
}

fn report(reported: &Mutex<HashSet<String>>, server: &str, tool: &str, why: &str) {
    let first = reported
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(format!("{tool}\0{why}"));
    if first {
        tracing::warn!("mcp server {server}: tool \"{tool}\" is skipped: {why}");
    }
}

fn offer(server: &str, tool: &rmcp::model::Tool) -> Result<RemoteTool, String> {
    let name = full_name(server, &tool.name);
    if name.len() > MAX_TOOL_NAME
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(format!(
            "its full name \"{name}\" is not 1 to {MAX_TOOL_NAME} letters, digits, '_' or '-'"
        ));
    }
    let schema = Value::Object((*tool.input_schema).clone());
    if let Some(problem) = schema_problem(&schema) {
        return Err(format!("its input schema is unusable: {problem}"));
    }
    let size = serde_json::to_string(&schema).map_or(usize::MAX, |s| s.len());
    if size > MAX_SCHEMA_BYTES {
        return Err(format!("its input schema is over {MAX_SCHEMA_BYTES} bytes"));
    }
    let mut description = tool
        .description
        .as_deref()
        .or(tool.title.as_deref())
        .unwrap_or_default()
        .to_owned();
    if description.len() > MAX_DESCRIPTION {
        let mut cut = MAX_DESCRIPTION;
        while !description.is_char_boundary(cut) {
            cut -= 1;
        }
        description.truncate(cut);
    }
    let annotations = tool.annotations.as_ref();
    let read_only = annotations.and_then(|a| a.read_only_hint).unwrap_or(false);
    let destructive = !read_only && annotations.and_then(|a| a.destructive_hint).unwrap_or(true);
    Ok(RemoteTool {
        remote: tool.name.to_string(),
        spec: ToolSpec {
            name,
            description,
            parameters: schema,
        },
        read_only,
        destructive,
    })
}

/// What makes `schema` unusable as a tool's parameters: the top must be an
/// object schema, and the keywords the runtime checks must be well formed.
fn schema_problem(schema: &Value) -> Option<String> {
    match schema.get("type") {
        Some(Value::String(kind)) if kind == "object" => {}
        None if schema.get("properties").is_some() => {}
        other => {
            return Some(format!(
                "\"type\" must be \"object\", not {}",
                other.map_or("absent".to_owned(), Value::to_string)
            ));
        }
    }
    keyword_problem(schema, "", 0)
}

fn keyword_problem(schema: &Value, at: &str, depth: usize) -> Option<String> {
    if depth > 32 {
        return Some(format!("{at}: nested deeper than 32 levels"));
    }
    let Value::Object(map) = schema else {
        // `true`/`false` schemas are valid JSON Schema.
        return (!schema.is_boolean()).then(|| format!("{at}: a schema must be an object"));
    };
    if let Some(kind) = map.get("type") {
        let known = |k: &Value| {
            k.as_str().is_some_and(|k| {
                matches!(
                    k,
                    "object" | "array" | "string" | "number" | "integer" | "boolean" | "null"
                )
            })
        };
        let ok = match kind {
            Value::Array(kinds) => kinds.iter().all(known),
            single => known(single),
        };
        if !ok {
            return Some(format!("{at}: unknown \"type\" {kind}"));
        }
    }
    if let Some(required) = map.get("required")
        && !required
            .as_array()
            .is_some_and(|r| r.iter().all(Value::is_string))
    {
        return Some(format!("{at}: \"required\" must be a list of names"));
    }
    if let Some(enumeration) = map.get("enum")
        && !enumeration.is_array()
    {
        return Some(format!("{at}: \"enum\" must be a list"));
    }
    if let Some(properties) = map.get("properties") {
        let Value::Object(properties) = properties else {
            return Some(format!("{at}: \"properties\" must be an object"));
        };
        for (name, sub) in properties {
            if let Some(problem) = keyword_problem(sub, &format!("{at}/{name}"), depth + 1) {
                return Some(problem);
            }
        }
    }
    if let Some(items) = map.get("items") {
        return keyword_problem(items, &format!("{at}[]"), depth + 1);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn tool(name: &str, schema: Value) -> rmcp::model::Tool {
        let Value::Object(schema) = schema else {
            panic!("schema must be an object");
        };
        rmcp::model::Tool::new(name.to_owned(), "does a thing", Arc::new(schema))
    }

    #[test]
    fn good_tools_are_offered_and_bad_ones_skipped_once() {
        let reported = Mutex::new(HashSet::new());
        let tools = vec![
            tool(
                "echo",
                json!({"type": "object", "properties": {"text": {"type": "string"}}}),
            ),
            tool("bad type", json!({"type": "object"})),
            tool("arr", json!({"type": "array"})),
            tool(
                "weird",
                json!({"type": "object", "properties": {"a": {"type": "strung"}}}),
            ),
            tool("req", json!({"type": "object", "required": "a"})),
        ];
        let offered = convert("s", tools.clone(), &reported);
        assert_eq!(
            offered
                .iter()
                .map(|t| t.spec.name.as_str())
                .collect::<Vec<_>>(),
            ["mcp__s__echo"]
        );
        assert!(offered[0].destructive && !offered[0].read_only);
        assert_eq!(reported.lock().map(|r| r.len()).unwrap_or(0), 4);
        convert("s", tools, &reported);
        assert_eq!(reported.lock().map(|r| r.len()).unwrap_or(0), 4);
        let long = "x".repeat(60);
        assert!(convert("s", vec![tool(&long, json!({"type": "object"}))], &reported).is_empty());
    }
}
