//! Requests for a wider sandbox (`sandbox_permissions`). No approver exists
//! in the SDK profiles, so every such request fails closed.

use crate::{PermissionMode, ToolContext, ToolOutput};
use dsh_protocol::catalog::{ApprovalAsked, ApprovalDecided, ApprovalOutcome, ToolEvent};

/// When `requested` is wider than the session's mode: records the approval
/// request and its `unavailable` outcome, and returns the declined result.
/// A request within the session's mode needs no approval (`None`).
pub(crate) fn check_escalation(
    ctx: &ToolContext,
    tool: &str,
    requested: Option<&str>,
    justification: Option<&str>,
) -> Option<ToolOutput> {
    let requested: PermissionMode = requested?.parse().ok()?;
    if requested <= ctx.mode {
        return None;
    }
    let id = uuid::Uuid::new_v4().to_string();
    let reason = match justification.map(str::trim).filter(|j| !j.is_empty()) {
        Some(text) => text.to_owned(),
        None => format!("{tool} asks for {requested} access"),
    };
    ctx.host.emit(ToolEvent::ApprovalAsked(ApprovalAsked {
        id: id.clone(),
        tool_name: tool.to_owned(),
        call_id: ctx.call_id.clone(),
        reason,
    }));
    ctx.host.emit(ToolEvent::ApprovalDecided(ApprovalDecided {
        id,
        outcome: ApprovalOutcome::Unavailable,
    }));
    let mode = ctx.mode;
    Some(ToolOutput::failure(format!(
        "Error: this call asked for {requested} access, wider than the session's {mode} mode, and the request was declined: no approver is available in this session, so escalation requests always fail. Retry without sandbox_permissions and stay within what {mode} mode allows."
    )))
}
