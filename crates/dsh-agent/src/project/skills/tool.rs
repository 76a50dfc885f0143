//! The `skill {name}` tool: the body of a skill, with the directory its
//! relative paths resolve against.

use super::scan;
use crate::project::prose;
use dsh_protocol::catalog::{ToolErrorCode, ToolSpec};
use dsh_tools::ToolOutput;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

/// The tool's name.
pub(crate) const SKILL: &str = "skill";

/// Most characters of an unknown name repeated in the refusal.
const MAX_ECHOED_NAME_CHARS: usize = 200;

/// The tool as the model sees it (Appendix B schema).
pub(crate) fn spec() -> ToolSpec {
    ToolSpec {
        name: SKILL.into(),
        description: prose::SKILL_TOOL.into(),
        parameters: json!({
            "type": "object",
            "properties": {"name": {"type": "string", "description": prose::SKILL_NAME}},
            "required": ["name"],
        }),
    }
}

/// Runs one call in the working directory `cwd`; `home` is the user's own
/// skills directory. The files are read on a blocking thread.
pub(crate) async fn run(cwd: PathBuf, home: Option<PathBuf>, arguments: &str) -> ToolOutput {
    let name = match name_of(arguments) {
        Ok(name) => name,
        Err(problem) => {
            return ToolOutput::failure(format!("Error: invalid arguments: {problem}"))
                .with_error(ToolErrorCode::InvalidArgs);
        }
    };
    tokio::task::spawn_blocking(move || load(&cwd, home.as_deref(), &name))
        .await
        .unwrap_or_else(|err| {
            ToolOutput::failure(format!("Error: the skill was not loaded: {err}"))
        })
}

/// The `name` argument, or what is wrong with the arguments.
fn name_of(arguments: &str) -> Result<String, String> {
    let value: Value = serde_json::from_str(crate::tool_args::or_empty_object(arguments))
        .map_err(|err| err.to_string())?;
    let Value::Object(map) = value else {
        return Err("the arguments must be a JSON object".to_owned());
    };
    match map.get("name") {
        None | Some(Value::Null) => Err("missing required property \"name\"".to_owned()),
        Some(Value::String(name)) => Ok(name.clone()),
        Some(_) => Err("\"name\" must be a string".to_owned()),
    }
}

/// The result of loading `name` now.
fn load(cwd: &Path, home: Option<&Path>, name: &str) -> ToolOutput {
    let skills = scan::Cache::quiet().scan(&scan::roots(cwd, home));
    let found = skills.iter().find(|skill| skill.name == name);
    let Some((skill, body)) = found.and_then(|s| Some((s, scan::body(&s.file, name)?))) else {
        let echoed: String = name.chars().take(MAX_ECHOED_NAME_CHARS).collect();
        let known: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
        return ToolOutput::failure(format!(
            "Error: skill {} is unknown or no longer available{}",
            Value::from(echoed),
            prose::known_skills(&known)
        ));
    };
    let dir = skill.dir.display().to_string();
    ToolOutput::text(format!(
        "<skill_content name=\"{}\">\n<skill_resources>\n{}\n</skill_resources>\n\n<skill_instructions>\n{body}\n</skill_instructions>\n</skill_content>",
        skill.name,
        prose::skill_resources(&dir)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_skill_loads_with_its_directory_and_an_unknown_one_lists_the_known() {
        let dir = tempfile::tempdir().unwrap();
        let skill = dir.path().join(".dsh/skills/alpha");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: alpha\ndescription: A.\n---\n# Alpha\nRun ./a.sh\n",
        )
        .unwrap();
        let cwd = dir.path().to_path_buf();
        let out = run(cwd.clone(), None, r#"{"name":"alpha"}"#).await;
        assert!(!out.is_error);
        assert_eq!(
            out.text_content(),
            format!(
                "<skill_content name=\"alpha\">\n<skill_resources>\n{}\n</skill_resources>\n\n<skill_instructions>\n# Alpha\nRun ./a.sh\n</skill_instructions>\n</skill_content>",
                prose::skill_resources(&skill.display().to_string())
            )
        );
        let out = run(cwd.clone(), None, r#"{"name":"nope"}"#).await;
        assert!(out.is_error && out.error.is_none());
        assert_eq!(
            out.text_content(),
            "Error: skill \"nope\" is unknown or no longer available (available: alpha)"
        );
        let out = run(cwd.clone(), None, "{}").await;
        assert_eq!(
            out.text_content(),
            "Error: invalid arguments: missing required property \"name\""
        );
        assert_eq!(
            out.error.as_ref().map(|e| e.code.as_str()),
            Some("INVALID_ARGS")
        );
        let out = run(cwd, None, r#"{"name":5}"#).await;
        assert_eq!(
            out.text_content(),
            "Error: invalid arguments: \"name\" must be a string"
        );
    }
}
