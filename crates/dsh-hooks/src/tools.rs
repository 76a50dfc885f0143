//! dsh's tools as hook scripts know them: Claude Code's tool names (and
//! Codex's `apply_patch`) for matchers and `tool_name`, Claude Code's
//! field names in `tool_input`, and the way back for `updatedInput`.

use serde_json::{Map, Value};
use std::path::Path;

/// Claude Code's name for dsh's tool `tool` (the tool's own name when
/// Claude Code has none: `working_directory`, `mcp__…`).
pub fn claude_name(tool: &str) -> &str {
    match tool {
        "bash" => "Bash",
        "read" | "read_image" => "Read",
        "write" => "Write",
        "edit" => "Edit",
        "glob" => "Glob",
        "grep" => "Grep",
        "web_fetch" => "WebFetch",
        "web_search" => "WebSearch",
        "subagent" | "subagent_fork" => "Task",
        "todo_write" => "TodoWrite",
        "job_output" => "BashOutput",
        "job_kill" => "KillShell",
        "skill" => "Skill",
        "exit_plan_mode" => "ExitPlanMode",
        other => other,
    }
}

/// Every name a matcher may use for `tool`: Claude Code's, dsh's own, and
/// Codex's `apply_patch` for the file-writing tools.
pub fn match_names(tool: &str) -> Vec<&str> {
    let mut names = vec![claude_name(tool)];
    if names[0] != tool {
        names.push(tool);
    }
    if matches!(tool, "write" | "edit") {
        names.push("apply_patch");
    }
    names
}

/// Argument renames between dsh (left) and Claude Code (right), per tool.
fn renames(tool: &str) -> &'static [(&'static str, &'static str)] {
    match tool {
        "bash" => &[("timeoutMs", "timeout")],
        "grep" => &[("include", "glob")],
        _ => &[],
    }
}

/// Whether `tool`'s `file_path` is shown absolute (Claude Code's tools
/// take absolute paths).
fn has_file_path(tool: &str) -> bool {
    matches!(tool, "read" | "read_image" | "write" | "edit")
}

/// `tool_input` for a call of `tool` with `arguments` (as the model wrote
/// them) in `cwd`: Claude Code's field names, `file_path` absolute; other
/// fields as given. Arguments that are not an object are passed as they
/// are.
pub fn tool_input(tool: &str, arguments: &Value, cwd: &Path) -> Value {
    let Some(object) = arguments.as_object() else {
        return arguments.clone();
    };
    let renames = renames(tool);
    let mut input = Map::with_capacity(object.len());
    for (key, value) in object {
        let key = renames
            .iter()
            .find(|(dsh, _)| dsh == key)
            .map_or(key.as_str(), |(_, claude)| claude);
        let value = match (key, value) {
            ("file_path", Value::String(path)) if has_file_path(tool) => {
                Value::String(cwd.join(path).to_string_lossy().into_owned())
            }
            _ => value.clone(),
        };
        input.insert(key.to_owned(), value);
    }
    Value::Object(input)
}

/// dsh's arguments from a hook's `updatedInput` for `tool`: it replaces
/// the input whole (as in Claude Code), with Claude Code's field names
/// turned back into dsh's.
pub fn arguments_from(tool: &str, updated: &Map<String, Value>) -> Value {
    let renames = renames(tool);
    let mut arguments = Map::with_capacity(updated.len());
    for (key, value) in updated {
        let key = renames
            .iter()
            .find(|(_, claude)| claude == key)
            .map_or(key.as_str(), |(dsh, _)| dsh);
        arguments.insert(key.to_owned(), value.clone());
    }
    Value::Object(arguments)
}

/// `tool_response` of a call of `tool` that ended with `text`: `output`
/// and `success` for every tool; `stdout`, `stderr` and `interrupted` for
/// `bash`; `filePath` for the file tools.
pub fn tool_response(tool: &str, input: &Value, text: &str, failed: bool, aborted: bool) -> Value {
    let mut response = Map::new();
    if tool == "bash" {
        response.insert("stdout".into(), Value::from(text));
        response.insert("stderr".into(), Value::from(""));
        response.insert("interrupted".into(), Value::Bool(aborted));
        response.insert("isImage".into(), Value::Bool(false));
    }
    if has_file_path(tool)
        && let Some(path) = input.get("file_path")
    {
        response.insert("filePath".into(), path.clone());
    }
    response.insert("output".into(), Value::from(text));
    response.insert("success".into(), Value::Bool(!failed));
    Value::Object(response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inputs_use_claude_code_names_and_absolute_paths() {
        let cwd = Path::new("/ws");
        assert_eq!(claude_name("bash"), "Bash");
        assert_eq!(claude_name("subagent_fork"), "Task");
        assert_eq!(claude_name("mcp__gh__issue"), "mcp__gh__issue");
        assert_eq!(match_names("edit"), ["Edit", "edit", "apply_patch"]);
        assert_eq!(match_names("working_directory"), ["working_directory"]);
        let input = tool_input("bash", &json!({"command": "ls", "timeoutMs": 5000}), cwd);
        assert_eq!(input, json!({"command": "ls", "timeout": 5000}));
        let input = tool_input(
            "write",
            &json!({"file_path": "a/.env", "content": "x"}),
            cwd,
        );
        assert_eq!(input, json!({"file_path": "/ws/a/.env", "content": "x"}));
        let input = tool_input("write", &json!({"file_path": "/abs/f"}), cwd);
        assert_eq!(input["file_path"], "/abs/f");
        assert_eq!(
            tool_input("grep", &json!({"pattern": "x", "include": "*.rs"}), cwd),
            json!({"pattern": "x", "glob": "*.rs"})
        );
        assert_eq!(tool_input("bash", &json!("raw"), cwd), json!("raw"));
    }

    #[test]
    fn updated_input_replaces_the_arguments_with_dsh_names() {
        let updated = json!({"command": "ls -la", "timeout": 10});
        let Some(updated) = updated.as_object() else {
            panic!("an object");
        };
        assert_eq!(
            arguments_from("bash", updated),
            json!({"command": "ls -la", "timeoutMs": 10})
        );
        let response = tool_response(
            "write",
            &json!({"file_path": "/ws/f"}),
            "Wrote",
            false,
            false,
        );
        assert_eq!(response["filePath"], "/ws/f");
        assert_eq!(response["success"], true);
        let response = tool_response("bash", &json!({}), "out", true, true);
        assert_eq!(response["stdout"], "out");
        assert_eq!(response["interrupted"], true);
        assert_eq!(response["success"], false);
    }
}
