//! The delegation tools as the model sees them (Appendix B schemas; the
//! descriptions are this project's own).

use dsh_protocol::catalog::ToolSpec;
use serde_json::json;

fn task_parameters(fork: bool) -> serde_json::Value {
    let prompt = if fork {
        "The task for the child. It already knows this conversation up to the current turn, so say what to do, not the background."
    } else {
        "The complete task for the child. It starts with no knowledge of this conversation: include every fact, path and constraint it needs, and what to report back."
    };
    json!({
        "type": "object",
        "properties": {
            "cwd": {"type": "string", "description": "Working directory of the child (relative paths resolve against yours). Defaults to your current directory."},
            "description": {"type": "string", "description": "A short label for the task (three to six words), shown in agent lists and notices."},
            "prompt": {"type": "string", "description": prompt},
        },
        "required": ["description", "prompt"],
    })
}

/// The five tool specs.
pub(crate) fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "interrupt_agent".into(),
            description: "Stop the current turn of one of your child agents. The child keeps its history and can be given new work with send_message; you are told when it has settled.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"agent_id": {"type": "string", "description": "Id of the child agent to interrupt."}},
                "required": ["agent_id"],
            }),
        },
        ToolSpec {
            name: "list_agents".into(),
            description: "List the agents you started, with their task labels and whether each is running or how its last turn ended.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"scope": {"type": "string", "description": "children (default): the agents you started; descendants: also the agents they started.", "enum": ["children", "descendants"]}},
            }),
        },
        ToolSpec {
            name: "send_message".into(),
            description: "Send a message to one of your child agents, or to your parent agent if you are a child. A running recipient reads it at its next step; an idle one starts a new turn for it.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "agent_id": {"type": "string", "description": "Id of the recipient: a child agent's id, or your parent's session id."},
                    "message": {"type": "string", "description": "The message text."},
                },
                "required": ["agent_id", "message"],
            }),
        },
        ToolSpec {
            name: "subagent".into(),
            description: "Start a child agent that works on a task in the background with its own fresh context and the same tools. Returns the child's id at once; when the child finishes you receive its final answer as a notice. Use it for independent work that can run in parallel with yours.".into(),
            parameters: task_parameters(false),
        },
        ToolSpec {
            name: "subagent_fork".into(),
            description: "Start a child agent that inherits this conversation's completed turns and works on a task in the background. Returns the child's id at once; when the child finishes you receive its final answer as a notice.".into(),
            parameters: task_parameters(true),
        },
    ]
}
