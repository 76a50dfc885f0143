//! The `workflow` and `structured_output` tools as the model sees them
//! (the `workflow` schema as in Appendix B; the descriptions are this
//! project's own).

use dsh_protocol::catalog::ToolSpec;
use serde_json::{Value, json};

/// The tool's name.
pub(crate) const WORKFLOW: &str = "workflow";

/// The tool a child asked for structured output reports it with.
pub(crate) const STRUCTURED_OUTPUT: &str = "structured_output";

/// The `workflow` tool.
pub(crate) fn spec() -> ToolSpec {
    let text = |description: &str| json!({"type": "string", "description": description});
    ToolSpec {
        name: WORKFLOW.into(),
        description: "Run a JavaScript workflow that orchestrates child agents, for work that splits into many agent tasks (fan-out over files or items, staged research then writing). The script is the body of an async function: it may await, and what it returns (plain JSON data) is the tool's result. It sees only these hooks: agent(prompt, {label, phase, schema, model}) starts a child agent with a fresh context and the same tools and resolves to its final answer (with schema: the object it reports; null when the child fails); parallel([() => agent(...), ...]) runs the functions together and resolves to their results in order; pipeline(items, ...stages) passes every item through the stages (each stage gets the previous value and the original item); phase(title) names the phase of the agents started after it; log(...values) records a progress line; args holds this call's args. There is no file system, network, process or timer access, and a run has a CPU-time and a memory limit. Children are written the task in full: they know nothing of this conversation. With run_in_background the call returns a job id at once and a notice arrives when the run ends.".into(),
        parameters: json!({
            "type": "object",
            "properties": {
                "script": text("The JavaScript body of an async function, e.g. `const a = await agent(\"...\"); return {a};`."),
                "meta": {
                    "type": "object",
                    "additionalProperties": true,
                    "properties": {
                        "name": text("A short name for the workflow (labels its child agents and its job)."),
                        "description": text("What the workflow does, in one sentence."),
                        "whenToUse": text("When this workflow is the right tool, for whoever reuses it."),
                        "phases": {
                            "type": "array",
                            "description": "The phases the script goes through, in order.",
                            "items": {
                                "type": "object",
                                "additionalProperties": true,
                                "properties": {
                                    "title": text("The phase's title, as passed to phase()."),
                                    "detail": text("What happens in the phase."),
                                    "provider": text("The provider its agents use."),
                                    "model": text("The model its agents use."),
                                },
                                "required": ["title"],
                            },
                        },
                    },
                    "required": ["name", "description"],
                },
                "args": {"type": "object", "additionalProperties": true, "description": "JSON values the script reads as `args`."},
                "run_in_background": {"type": "boolean", "description": "Return a job id at once and report the result as a notice when the run ends (default false)."},
            },
            "required": ["script", "meta"],
        }),
    }
}

/// The `structured_output` tool of a child asked for structured output:
/// its parameters are the schema the workflow gave.
pub(crate) fn structured_output(schema: &Value) -> ToolSpec {
    ToolSpec {
        name: STRUCTURED_OUTPUT.into(),
        description: "Report the result of your task as structured data. Call it once, when the work is done, with arguments that match this tool's schema exactly; your turn ends when it is recorded.".into(),
        parameters: schema.clone(),
    }
}
