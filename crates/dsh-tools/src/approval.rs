//! Requests for another sandbox (`sandbox_permissions`, with its
//! `justification`). No approver exists in the SDK profiles, so every
//! request for wider access fails closed. The checks, their order and their
//! texts are the official runtime's, as observed:
//!
//! - `sandbox_permissions` equal to the session's mode: nothing to check;
//! - otherwise a `justification` is required and must not be blank;
//! - a narrower mode is refused (it is not an escalation);
//! - a wider mode is asked for (`approval/asked`, reason
//!   `escalate sandbox to <mode>: <justification>`), decided `unavailable`,
//!   and refused;
//! - a non-blank `justification` without `sandbox_permissions` is refused.

use crate::{PermissionMode, ToolContext, ToolOutput};
use dsh_protocol::catalog::{ApprovalAsked, ApprovalDecided, ApprovalOutcome, ToolEvent};

/// Checks a call's `sandbox_permissions` and `justification` against the
/// session's mode: `None` when the call may run in the session's sandbox,
/// or the refused result (recording the approval request and its
/// `unavailable` outcome when wider access was asked for).
pub(crate) fn check_escalation(
    ctx: &ToolContext,
    tool: &str,
    requested: Option<&str>,
    justification: Option<&str>,
) -> Option<ToolOutput> {
    let requested: Option<PermissionMode> = requested.and_then(|mode| mode.parse().ok());
    let Some(requested) = requested else {
        return justification
            .filter(|j| !j.trim().is_empty())
            .map(|_| {
                ToolOutput::failure(
                    "Error: invalid escalation: justification is only valid together with sandbox_permissions",
                )
            });
    };
    let mode = ctx.mode;
    if requested == mode {
        return None;
    }
    let Some(justification) = justification else {
        return Some(ToolOutput::failure(
            "Error: invalid escalation: sandbox_permissions requires a justification",
        ));
    };
    if justification.trim().is_empty() {
        return Some(ToolOutput::failure(
            "Error: invalid justification: expected a non-empty sentence",
        ));
    }
    if requested < mode {
        return Some(ToolOutput::failure(format!(
            "Error: sandbox escalation to \"{requested}\" is not strictly wider than this call's current \"{mode}\" mode"
        )));
    }
    let id = uuid::Uuid::new_v4().to_string();
    ctx.host.emit(ToolEvent::ApprovalAsked(ApprovalAsked {
        id: id.clone(),
        tool_name: tool.to_owned(),
        call_id: ctx.call_id.clone(),
        reason: format!("escalate sandbox to {requested}: {justification}"),
    }));
    ctx.host.emit(ToolEvent::ApprovalDecided(ApprovalDecided {
        id,
        outcome: ApprovalOutcome::Unavailable,
    }));
    Some(ToolOutput::failure(format!(
        "Error: sandbox escalation to \"{requested}\" requires approval, but no approval channel is available"
    )))
}
