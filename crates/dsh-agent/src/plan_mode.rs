//! Plan mode (`sdk` profile): `exit_plan_mode {plan}` asks the user to
//! approve a plan and leave plan mode.
//!
//! Nothing enters plan mode in the SDK profiles: no tool, no client method
//! and no event of the official runtime does (no `plan/mode` event was
//! ever seen there), and no client can answer the approval. So a session
//! is never in plan mode, and the call fails closed with the official
//! answer: `Error: exit_plan_mode is only available in plan mode` (an
//! error result without a code), after the schema check.

use crate::core::{AgentTool, HookFuture, ToolCall, ToolOutcome};
use crate::tool_args::{Kind, Property, check};
use dsh_protocol::catalog::ToolSpec;
use dsh_tools::ToolOutput;
use serde_json::json;

/// The tool's description (our own words).
const DESCRIPTION: &str = "Leave plan mode by presenting your plan for the user's approval. Only usable while the session is in plan mode; the user decides whether work goes ahead.";

/// The `plan` parameter's description.
const PLAN: &str = "The plan, as concise markdown steps.";

/// The tool's name.
const EXIT_PLAN_MODE: &str = "exit_plan_mode";

const PARAMETERS: &[Property] = &[Property {
    name: "plan",
    kind: Kind::Text,
    required: true,
}];

/// The `exit_plan_mode` tool.
pub(crate) struct PlanModeTool;

impl AgentTool for PlanModeTool {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![spec()]
    }

    fn call<'a>(&'a self, call: ToolCall<'a>) -> HookFuture<'a, ToolOutcome> {
        Box::pin(std::future::ready(exit_plan_mode(call.arguments).into()))
    }
}

/// The tool spec.
fn spec() -> ToolSpec {
    ToolSpec {
        name: EXIT_PLAN_MODE.into(),
        description: DESCRIPTION.into(),
        parameters: json!({
            "type": "object",
            "properties": {"plan": {"type": "string", "description": PLAN}},
            "required": ["plan"],
        }),
    }
}

/// `exit_plan_mode {plan}`: refused, the session not being in plan mode.
fn exit_plan_mode(arguments: &str) -> ToolOutput {
    match check(arguments, PARAMETERS) {
        Ok(_) => ToolOutput::failure("Error: exit_plan_mode is only available in plan mode"),
        Err(invalid) => invalid.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fails_closed_after_the_schema_check() {
        let out = exit_plan_mode(r#"{"plan":"1. do it"}"#);
        assert!(out.is_error && out.error.is_none());
        assert_eq!(
            out.text_content(),
            "Error: exit_plan_mode is only available in plan mode"
        );
        let out = exit_plan_mode("{}");
        assert_eq!(
            out.text_content(),
            "Error: invalid arguments: missing required property \"plan\""
        );
        assert_eq!(
            out.error.map(|e| e.code.to_string()).as_deref(),
            Some("INVALID_ARGS")
        );
    }
}
