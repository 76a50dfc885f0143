//! `todo_write`: replace the session's todo list.

use super::TypedTool;
use super::spec;
use crate::{ToolContext, ToolOutput};
use dsh_protocol::catalog::ToolSpec;
use dsh_protocol::catalog::{Todo, TodoStatus, TodoWrite as TodoWritten, ToolEvent};
use serde::Deserialize;
use serde_json::json;

const DESCRIPTION: &str = "Keep a todo list for multi-step work. Each call replaces the whole list, so always send every item with its current status: pending, in_progress (normally one item at a time) or completed. Update it as you go so the plan and progress stay visible.";

#[derive(Deserialize)]
pub(crate) struct Args {
    todos: Vec<Todo>,
}

/// The `todo_write` tool.
pub(crate) struct TodoWrite {
    spec: ToolSpec,
}

impl TodoWrite {
    pub(crate) fn new() -> Self {
        let items = json!({
            "type": "array",
            "description": "The complete todo list, in order.",
            "items": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "content": {"type": "string", "description": "What the step is, in a short imperative sentence."},
                    "status": {
                        "type": "string",
                        "description": "Where the step stands.",
                        "enum": ["pending", "in_progress", "completed"]
                    }
                },
                "required": ["content", "status"]
            }
        });
        Self {
            spec: spec(
                "todo_write",
                DESCRIPTION,
                vec![("todos", items)],
                &["todos"],
            ),
        }
    }
}

impl TypedTool for TodoWrite {
    type Args = Args;
    const BATCHED: bool = false;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, a: Args, ctx: ToolContext) -> ToolOutput {
        let todos = a.todos;
        ctx.host.emit(ToolEvent::TodoWrite(TodoWritten {
            todos: todos.clone(),
        }));
        ctx.state.set_todos(todos.clone());
        let count = |status: TodoStatus| todos.iter().filter(|t| t.status == status).count();
        // The official runtime's words (its `acp` profile shows them).
        let summary = format!(
            "Updated todo list: {} pending, {} in progress, {} completed.",
            count(TodoStatus::Pending),
            count(TodoStatus::InProgress),
            count(TodoStatus::Completed)
        );
        ToolOutput::text(summary).with_meta(json!({"todos": todos}))
    }
}
