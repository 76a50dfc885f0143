//! How a tool call shows in an editor: its ACP `kind`, a readable
//! `title` and the files it touches (`locations`).

use serde_json::{Value, json};
use std::path::Path;

/// The longest title shown; a longer one is cut with an ellipsis.
const TITLE_MAX_CHARS: usize = 120;

/// The ACP tool kind of dsh's tool `name`.
pub fn kind(name: &str) -> &'static str {
    match name {
        "bash" => "execute",
        "read" | "read_image" => "read",
        "write" | "edit" => "edit",
        "glob" | "grep" | "web_search" => "search",
        "web_fetch" => "fetch",
        "todo_write" | "exit_plan_mode" => "think",
        _ => "other",
    }
}

/// A one-line title for the call of `name` with `args`.
pub fn title(name: &str, args: &Value) -> String {
    let field = |key: &str| {
        args.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
    };
    let title = match name {
        "bash" => field("description")
            .map(str::to_owned)
            .or_else(|| field("command").map(|c| format!("Run `{c}`"))),
        "read" | "read_image" => field("file_path").map(|p| format!("Read {p}")),
        "write" => field("file_path").map(|p| format!("Write {p}")),
        "edit" => field("file_path").map(|p| format!("Edit {p}")),
        "glob" => field("pattern").map(|p| format!("Find files matching {p}")),
        "grep" => field("pattern").map(|p| format!("Search for {p}")),
        "web_fetch" => field("url").map(|u| format!("Fetch {u}")),
        "web_search" => args
            .get("queries")
            .and_then(Value::as_array)
            .map(|queries| {
                let queries: Vec<&str> = queries.iter().filter_map(Value::as_str).collect();
                format!("Search the web: {}", queries.join("; "))
            }),
        "todo_write" => Some("Update the plan".to_owned()),
        "subagent" | "subagent_fork" => field("description").map(|d| format!("Subagent: {d}")),
        "working_directory" => Some(match field("cd") {
            Some(dir) => format!("Change directory to {dir}"),
            None => "Show the working directory".to_owned(),
        }),
        _ => mcp_title(name),
    };
    one_line(&title.unwrap_or_else(|| name.to_owned()))
}

/// `mcp__server__tool` as `server: tool`.
fn mcp_title(name: &str) -> Option<String> {
    let rest = name.strip_prefix("mcp__")?;
    let (server, tool) = rest.split_once("__")?;
    Some(format!("{server}: {tool}"))
}

/// The files the call of `name` touches, absolute against `cwd`.
pub fn locations(name: &str, args: &Value, cwd: &Path) -> Vec<Value> {
    let key = match name {
        "read" | "read_image" | "write" | "edit" => "file_path",
        "glob" | "grep" => "path",
        _ => return Vec::new(),
    };
    let Some(path) = args
        .get(key)
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
    else {
        return Vec::new();
    };
    let mut location = json!({"path": absolute(path, cwd)});
    if name == "read"
        && let Some(offset) = args.get("offset").and_then(Value::as_u64)
    {
        location["line"] = json!(offset);
    }
    vec![location]
}

/// `path` made absolute against `cwd`.
pub fn absolute(path: &str, cwd: &Path) -> String {
    if Path::new(path).is_absolute() {
        path.to_owned()
    } else {
        cwd.join(path).to_string_lossy().into_owned()
    }
}

/// The first line of `text`, at most [`TITLE_MAX_CHARS`] characters.
fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let multi = text.lines().nth(1).is_some();
    let mut out: String = line.chars().take(TITLE_MAX_CHARS).collect();
    if multi || line.chars().count() > TITLE_MAX_CHARS {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_titles_and_locations() {
        assert_eq!(kind("bash"), "execute");
        assert_eq!(kind("edit"), "edit");
        assert_eq!(kind("mcp__x__y"), "other");
        assert_eq!(
            title(
                "bash",
                &json!({"description": "List files", "command": "ls"})
            ),
            "List files"
        );
        assert_eq!(
            title("bash", &json!({"command": "ls -la\nrm x"})),
            "Run `ls -la…"
        );
        assert_eq!(
            title("edit", &json!({"file_path": "src/a.rs"})),
            "Edit src/a.rs"
        );
        assert_eq!(title("mcp__files__list", &json!({})), "files: list");
        assert_eq!(title("job_list", &json!({})), "job_list");
        let cwd = Path::new("/ws");
        assert_eq!(
            locations("read", &json!({"file_path": "a.txt", "offset": 5}), cwd),
            vec![json!({"path": "/ws/a.txt", "line": 5})]
        );
        assert_eq!(
            locations("write", &json!({"file_path": "/abs/b"}), cwd),
            vec![json!({"path": "/abs/b"})]
        );
        assert!(locations("bash", &json!({"command": "ls"}), cwd).is_empty());
    }
}
