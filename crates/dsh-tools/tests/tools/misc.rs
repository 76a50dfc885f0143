//! Tool sets and specs, unknown tools, todo_write, modes and result
//! serialisation.

use crate::common::{Fixture, ok, some, text};
use dsh_tools::{
    PermissionMode, TodoStatus, ToolOutput, ToolsConfig, sdk_minimal_tools, sdk_tools, unknown_tool,
};
use serde_json::{Value, json};

/// Appendix B schemas of the tools this crate implements, descriptions
/// removed.
const OFFICIAL: &[&str] = &[
    r#"{"name":"bash","input_schema":{"type":"object","properties":{"description":{"type":"string"},"command":{"type":"string"},"timeoutMs":{"type":"number"},"workdir":{"type":"string"},"run_in_background":{"type":"boolean"},"sandbox_permissions":{"type":"string","enum":["workspace-write","danger-full-access"]},"justification":{"type":"string"}},"required":["description","command"]}}"#,
    r#"{"name":"edit","input_schema":{"type":"object","properties":{"file_path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"},"replace_all":{"type":"boolean"},"sandbox_permissions":{"type":"string","enum":["workspace-write","danger-full-access"]},"justification":{"type":"string"}},"required":["file_path","old_string","new_string"]}}"#,
    r#"{"name":"glob","input_schema":{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"}},"required":["pattern"]}}"#,
    r#"{"name":"grep","input_schema":{"type":"object","properties":{"pattern":{"type":"string"},"path":{"type":"string"},"include":{"type":"string"}},"required":["pattern"]}}"#,
    r#"{"name":"job_kill","input_schema":{"type":"object","properties":{"job_id":{"type":"string"},"reason":{"type":"string"}},"required":["job_id"]}}"#,
    r#"{"name":"job_list","input_schema":{"type":"object","properties":{}}}"#,
    r#"{"name":"job_output","input_schema":{"type":"object","properties":{"job_id":{"type":"string"},"wait":{"type":"boolean"},"timeout_ms":{"type":"number"}},"required":["job_id"]}}"#,
    r#"{"name":"read","input_schema":{"type":"object","properties":{"file_path":{"type":"string"},"offset":{"type":"number"},"limit":{"type":"number"}},"required":["file_path"]}}"#,
    r#"{"name":"read_image","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}}"#,
    r#"{"name":"todo_write","input_schema":{"type":"object","properties":{"todos":{"type":"array","items":{"type":"object","additionalProperties":false,"properties":{"content":{"type":"string"},"status":{"type":"string","enum":["pending","in_progress","completed"]}},"required":["content","status"]}}},"required":["todos"]}}"#,
    r#"{"name":"web_fetch","input_schema":{"type":"object","properties":{"url":{"type":"string"}},"required":["url"]}}"#,
    r#"{"name":"write","input_schema":{"type":"object","properties":{"file_path":{"type":"string"},"content":{"type":"string"},"sandbox_permissions":{"type":"string","enum":["workspace-write","danger-full-access"]},"justification":{"type":"string"}},"required":["file_path","content"]}}"#,
];

/// Removes every `description` keyword (a string value), keeping
/// properties that happen to be named `description`.
fn strip(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, v)| !(k.as_str() == "description" && v.is_string()))
                .map(|(k, v)| (k.clone(), strip(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(strip).collect()),
        other => other.clone(),
    }
}

#[test]
fn sdk_specs_match_the_official_schemas_in_order() {
    let set = sdk_tools(ToolsConfig::new(std::env::temp_dir()));
    let specs = set.specs();
    let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "bash",
            "edit",
            "glob",
            "grep",
            "job_kill",
            "job_list",
            "job_output",
            "read",
            "read_image",
            "todo_write",
            "web_fetch",
            "write"
        ]
    );
    for (spec, official) in specs.iter().zip(OFFICIAL) {
        let ours = json!({"name": spec.name, "input_schema": strip(&spec.parameters)});
        assert_eq!(
            ok(serde_json::to_string(&ours), "json"),
            *official,
            "{}",
            spec.name
        );
        assert!(
            spec.description.len() > 40,
            "{} needs a description",
            spec.name
        );
        // Every property carries a description of our own.
        if let Some(props) = spec.parameters["properties"].as_object() {
            for (name, schema) in props {
                assert!(schema["description"].is_string(), "{}.{name}", spec.name);
            }
        }
    }
}

#[test]
fn minimal_set_has_a_command_only_bash() {
    let set = sdk_minimal_tools(ToolsConfig::new(std::env::temp_dir()));
    assert_eq!(set.names(), ["bash", "read_image"]);
    let bash = some(set.get("bash"), "bash");
    assert_eq!(
        ok(
            serde_json::to_string(&strip(&bash.spec().parameters)),
            "json"
        ),
        r#"{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}"#
    );
    assert!(!bash.batched(r#"{"command":"ls"}"#));
    let read_image = some(set.get("read_image"), "read_image");
    assert!(read_image.batched(r#"{"file_path":"a.png"}"#));
    // A call the schema refuses stands alone.
    assert!(!read_image.batched("{}"));
}

#[tokio::test]
async fn unknown_tools_get_the_official_error() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx.call("no_such_tool", "{\"x\":1}").await;
    assert_eq!(out, unknown_tool("no_such_tool"));
    assert_eq!(
        ok(serde_json::to_value(&out), "json"),
        json!({
            "content": [{"type": "text", "text": "Error: unknown tool \"no_such_tool\""}],
            "isError": true,
            "error": {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"}
        })
    );
    let plain = ToolOutput::text("x").with_meta(json!({"a": 1}));
    assert_eq!(
        ok(serde_json::to_value(&plain), "json"),
        json!({"content": [{"type": "text", "text": "x"}], "isError": false, "meta": {"a": 1}})
    );
}

#[tokio::test]
async fn todo_write_replaces_the_list_and_logs_it() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let args = r#"{"todos":[{"content":"plan","status":"completed"},{"content":"build","status":"in_progress"},{"content":"test","status":"pending"}]}"#;
    let out = fx.call("todo_write", args).await;
    assert!(!out.is_error);
    assert_eq!(
        text(&out),
        "Updated todo list: 1 pending, 1 in progress, 1 completed."
    );
    let logged = fx.host.of_kind("todo/write");
    assert_eq!(
        logged,
        [json!({"todos": [
            {"content": "plan", "status": "completed"},
            {"content": "build", "status": "in_progress"},
            {"content": "test", "status": "pending"}
        ]})]
    );
    assert_eq!(fx.state.todos()[1].status, TodoStatus::InProgress);
    fx.call("todo_write", r#"{"todos":[]}"#).await;
    assert!(fx.state.todos().is_empty());
}

#[test]
fn permission_modes_parse_and_order() {
    for mode in PermissionMode::ALL {
        assert_eq!(mode.as_str().parse::<PermissionMode>(), Ok(mode));
        assert_eq!(mode.to_string(), mode.as_str());
    }
    assert!(PermissionMode::ReadOnly < PermissionMode::WorkspaceWrite);
    assert!(PermissionMode::WorkspaceWrite < PermissionMode::DangerFullAccess);
    let err = "root"
        .parse::<PermissionMode>()
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some(
            "permission mode must be read-only, workspace-write or danger-full-access, got \"root\""
        )
    );
}
