//! `structured_output`: how a workflow's child reports a result that
//! must match a schema. The value is checked, kept for the run, and the
//! child's turn ends after the step that recorded it.

use crate::delegation::Report;
use crate::inner::Inner;
use crate::tool_args::InvalidArgs;
use dsh_tools::ToolOutput;
use serde_json::Value;
use std::sync::PoisonError;

/// The report link of `inner` when it was asked for structured output.
pub(crate) fn asked(inner: &Inner) -> Option<&Report> {
    inner
        .lineage
        .parent
        .as_ref()
        .and_then(|link| link.report.as_ref())
        .filter(|report| report.schema.is_some())
}

/// Runs one `structured_output` call.
pub(crate) fn record(report: &Report, arguments: &str) -> ToolOutput {
    let Some(schema) = &report.schema else {
        return ToolOutput::failure("Error: structured output was not asked for");
    };
    let value = match serde_json::from_str::<Value>(if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    }) {
        Ok(value) => value,
        Err(err) => {
            return InvalidArgs(format!("the arguments are not JSON: {err}")).into();
        }
    };
    if let Err(problems) = dsh_workflow::validate(schema, &value) {
        return InvalidArgs(problems).into();
    }
    *report
        .structured
        .lock()
        .unwrap_or_else(PoisonError::into_inner) = Some(value);
    ToolOutput::text("Structured output recorded.")
}

/// Whether `inner` has recorded its structured output (its turn ends).
pub(crate) fn recorded(inner: &Inner) -> bool {
    asked(inner).is_some_and(|report| {
        report
            .structured
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    })
}
