//! `working_directory {cd?}`: reports or changes the session directory, as
//! `session/working-directory/get|set` do (every profile has it).

use crate::core::{AgentTool, HookFuture, ToolCall, ToolOutcome};
use crate::{prose, tool_args};
use dsh_protocol::catalog::ToolSpec;
use dsh_tools::ToolOutput;
use serde_json::{Value, json};

/// The tool's name.
const WORKING_DIRECTORY: &str = "working_directory";

/// The `working_directory` tool.
pub(crate) struct WorkingDirectoryTool;

impl AgentTool for WorkingDirectoryTool {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: WORKING_DIRECTORY.into(),
            description: prose::WORKING_DIRECTORY_TOOL.into(),
            parameters: json!({
                "type": "object",
                "properties": {"cd": {"type": "string", "description": prose::WORKING_DIRECTORY_CD}},
            }),
        }]
    }

    fn call<'a>(&'a self, call: ToolCall<'a>) -> HookFuture<'a, ToolOutcome> {
        Box::pin(std::future::ready(run(&call).into()))
    }
}

fn run(call: &ToolCall<'_>) -> ToolOutput {
    let cd = match serde_json::from_str::<Value>(tool_args::or_empty_object(call.arguments)) {
        Ok(Value::Object(map)) => match map.get("cd") {
            None | Some(Value::Null) => None,
            Some(Value::String(cd)) => Some(cd.clone()),
            Some(_) => return ToolOutput::failure("Error: parameter \"cd\" must be a string"),
        },
        _ => return ToolOutput::failure("Error: arguments must be a JSON object"),
    };
    let core = call.core;
    let mut state = core.state();
    match cd {
        None => ToolOutput::text(prose::current_directory(
            &state.effective_cwd(&core.workspace),
        )),
        Some(cd) => match state.set_cwd(&cd) {
            Ok(dir) => ToolOutput::text(prose::current_directory(&dir)),
            Err(err) => ToolOutput::failure(format!("Error: {err}")),
        },
    }
}
