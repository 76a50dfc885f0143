//! Requests for another sandbox (`sandbox_permissions`, with its
//! `justification`). The checks, their order and their texts are the
//! official runtime's, as observed:
//!
//! - `sandbox_permissions` equal to the session's mode: nothing to check;
//! - otherwise a `justification` is required and must not be blank;
//! - a narrower mode is refused (it is not an escalation);
//! - a wider mode is asked for (`approval/asked`, reason
//!   `escalate sandbox to <mode>: <justification>`);
//! - a non-blank `justification` without `sandbox_permissions` is refused.
//!
//! Who decides a request for a wider mode (dsh's extension, issue 27): a
//! deny rule, then an allow rule, then an earlier `allow-session` grant,
//! then the client through an [`Approver`] when it declared `approvals`.
//! With none of these the request is decided `unavailable` and refused, as
//! on the official runtime. Every path that does not end in an approval
//! refuses the call: the tool never runs on a timeout, an error answer, a
//! closed client, a cancelled turn or a shutdown.

use crate::{PermissionMode, ToolContext, ToolErrorCode, ToolOutput};
use dsh_protocol::catalog::{
    ApprovalAsked, ApprovalDecided, ApprovalDecider, ApprovalOutcome, ApprovalScope, ToolEvent,
};
use dsh_protocol::methods::{ApprovalDecision, ApprovalRule, ApprovalRules};
use serde_json::Value;
use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a client has to answer by default.
pub const DEFAULT_APPROVAL_TIMEOUT: Duration = Duration::from_secs(300);

/// What decides a session's requests for wider access.
pub struct Approvals {
    /// Policy rules, applied before anyone is asked.
    pub rules: ApprovalRules,
    /// The client, when it declared `approvals`.
    pub approver: Option<Arc<dyn Approver>>,
    /// How long the client has to answer; `None` waits for ever.
    pub timeout: Option<Duration>,
    /// `(tool, mode)` pairs granted for the rest of the session.
    grants: Mutex<HashSet<(String, PermissionMode)>>,
    /// Tools whose calls were allowed for the rest of the session.
    call_grants: Mutex<HashSet<String>>,
}

impl Approvals {
    /// Approvals decided by `rules`, then `approver` (if any) within
    /// `timeout`.
    pub fn new(
        rules: ApprovalRules,
        approver: Option<Arc<dyn Approver>>,
        timeout: Option<Duration>,
    ) -> Self {
        Self {
            rules,
            approver,
            timeout,
            grants: Mutex::new(HashSet::new()),
            call_grants: Mutex::new(HashSet::new()),
        }
    }

    /// The same rules, approver and timeout, with no grant yet (for a
    /// new session, e.g. a subagent's).
    pub fn fresh(&self) -> Self {
        Self::new(self.rules.clone(), self.approver.clone(), self.timeout)
    }

    fn granted(&self, tool: &str, mode: PermissionMode) -> bool {
        self.grants
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(&(tool.to_owned(), mode))
    }

    fn grant(&self, tool: &str, mode: PermissionMode) {
        self.grants
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert((tool.to_owned(), mode));
    }
}

impl Approvals {
    fn call_granted(&self, tool: &str) -> bool {
        self.call_grants
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(tool)
    }

    fn grant_call(&self, tool: &str) {
        self.call_grants
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(tool.to_owned());
    }
}

impl Default for Approvals {
    /// The official behaviour: no rule, no approver.
    fn default() -> Self {
        Self::new(
            ApprovalRules::default(),
            None,
            Some(DEFAULT_APPROVAL_TIMEOUT),
        )
    }
}

/// One request put to the client.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalQuestion {
    /// The session whose tool asks.
    pub session_id: String,
    /// The request's id (`approval/asked.id`).
    pub approval_id: String,
    /// The tool asking.
    pub tool_name: String,
    /// Its call id.
    pub call_id: String,
    /// The call's arguments.
    pub arguments: Value,
    /// `approval/asked.reason`.
    pub reason: String,
}

/// How the client answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApproverAnswer {
    /// A decision, with the client's message.
    Decided(ApprovalDecision, Option<String>),
    /// An error response, or an answer that is not a decision.
    Failed(String),
    /// The client cannot answer (it does not know the method, its input
    /// is closed).
    Unavailable(String),
    /// The runtime is shutting down.
    Cancelled,
}

/// The future of an [`Approver`]'s answer.
pub type ApproverFuture = Pin<Box<dyn Future<Output = ApproverAnswer> + Send>>;

/// The client side of approvals: puts a question to the client.
pub trait Approver: Send + Sync {
    /// Asks the client; resolves with its answer.
    fn ask(&self, question: ApprovalQuestion) -> ApproverFuture;
}

/// A call's request for wider access, as [`check_escalation`] reads it.
pub(crate) struct Escalation<'a> {
    /// `sandbox_permissions`.
    pub requested: Option<&'a str>,
    /// `justification`.
    pub justification: Option<&'a str>,
    /// What rules match by prefix: the `bash` command or the `file_path`.
    pub subject: &'a str,
    /// The call's arguments shown to the client.
    pub arguments: Value,
}

/// Longest string argument shown to the client whole; a longer one is cut
/// there (at a character boundary) with a note of what was left out.
const SHOWN_MAX_BYTES: usize = 16 * 1024;

/// `text` as an argument shown to the client (see [`SHOWN_MAX_BYTES`]).
pub(crate) fn shown(text: &str) -> Value {
    if text.len() <= SHOWN_MAX_BYTES {
        return Value::from(text);
    }
    let kept = crate::lines::prefix_within(text, SHOWN_MAX_BYTES);
    Value::from(format!("{kept}…[{} more bytes]", text.len() - kept.len()))
}

/// Checks a call's `sandbox_permissions` and `justification` against the
/// session's mode: `None` when the call may run (with `ctx.mode` widened
/// when a wider mode was approved), or the refused result. A request for
/// a wider mode is recorded (`approval/asked`, `approval/decided`).
pub(crate) async fn check_escalation(
    ctx: &mut ToolContext,
    tool: &str,
    escalation: Escalation<'_>,
) -> Option<ToolOutput> {
    let Escalation {
        requested,
        justification,
        subject,
        arguments,
    } = escalation;
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
    let reason = format!("escalate sandbox to {requested}: {justification}");
    emit_asked(ctx, &id, tool, &reason);
    let approvals = Arc::clone(&ctx.approvals);
    let matches = |rules: &[ApprovalRule]| {
        rules
            .iter()
            .any(|rule| rule_matches(rule, tool, requested, subject))
    };
    let verdict = if matches(&approvals.rules.deny) {
        Verdict::rejected(ApprovalDecider::Rule, "denied by a policy rule")
    } else if matches(&approvals.rules.allow) {
        Verdict::approved(ApprovalDecider::Rule, ApprovalScope::Once)
    } else if approvals.granted(tool, requested) {
        Verdict::approved(ApprovalDecider::SessionGrant, ApprovalScope::Session)
    } else if let Some(approver) = &approvals.approver {
        let question = question(ctx, &id, tool, arguments, reason);
        let answer = ask(approver.as_ref(), question, approvals.timeout, ctx).await;
        if matches!(
            answer,
            Verdict {
                scope: Some(ApprovalScope::Session),
                ..
            }
        ) {
            approvals.grant(tool, requested);
        }
        answer
    } else {
        Verdict::official_unavailable()
    };
    emit_decided(ctx, id, &verdict);
    let refused = refusal(&verdict, &format!("sandbox escalation to \"{requested}\""));
    if refused.is_none() {
        ctx.mode = requested;
    }
    refused
}

/// Records `approval/asked`.
fn emit_asked(ctx: &ToolContext, id: &str, tool: &str, reason: &str) {
    ctx.host.emit(ToolEvent::ApprovalAsked(ApprovalAsked {
        id: id.to_owned(),
        tool_name: tool.to_owned(),
        call_id: ctx.call_id.clone(),
        reason: reason.to_owned(),
    }));
}

/// The question put to the client about a call of `tool`.
fn question(
    ctx: &ToolContext,
    id: &str,
    tool: &str,
    arguments: Value,
    reason: String,
) -> ApprovalQuestion {
    ApprovalQuestion {
        session_id: ctx.session_id.clone(),
        approval_id: id.to_owned(),
        tool_name: tool.to_owned(),
        call_id: ctx.call_id.clone(),
        arguments,
        reason,
    }
}

/// Records `approval/decided`.
fn emit_decided(ctx: &ToolContext, id: String, verdict: &Verdict) {
    ctx.host.emit(ToolEvent::ApprovalDecided(ApprovalDecided {
        id,
        outcome: verdict.outcome,
        decided_by: verdict.by,
        scope: verdict.scope,
        message: verdict.message.clone(),
    }));
}

/// `None` when `verdict` approved, else the refused result for `what`
/// (`sandbox escalation to "<mode>"`, `the call of <tool>`).
fn refusal(verdict: &Verdict, what: &str) -> Option<ToolOutput> {
    match verdict.outcome {
        ApprovalOutcome::Approved => None,
        ApprovalOutcome::Unavailable => Some(ToolOutput::failure(format!(
            "Error: {what} requires approval, but no approval channel is available"
        ))),
        ApprovalOutcome::Rejected => Some(ToolOutput::failure(format!(
            "Error: {what} was rejected: {}",
            verdict.message.as_deref().unwrap_or("no reason given")
        ))),
        ApprovalOutcome::Cancelled => {
            Some(ToolOutput::failure("Error: tool call aborted").with_error(ToolErrorCode::Aborted))
        }
    }
}

/// What a tool from another source says of its own calls (an MCP
/// server's `readOnlyHint` / `destructiveHint` annotations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallHints {
    /// The tool does not change its environment.
    pub read_only: bool,
    /// The tool may destroy data (MCP's default for a tool that is not
    /// read-only).
    pub destructive: bool,
}

/// Whether a call of `tool` (a tool from another source, e.g. an MCP
/// server's) may run: `None` when it may, or the refused result. In order:
/// a deny rule refuses; an allow rule, a read-only tool or an earlier
/// `allow-session` grant runs; with a client that answers approvals, a
/// tool not annotated non-destructive is asked about (`approval/asked`,
/// `approval/decided` recorded); without one it runs, except in a
/// `read-only` session. Rules match `tool` exactly, `*`, or a prefix
/// ending in `*` (`mcp__github__*`).
pub async fn check_call(
    ctx: &ToolContext,
    tool: &str,
    hints: CallHints,
    arguments: &Value,
) -> Option<ToolOutput> {
    let approvals = Arc::clone(&ctx.approvals);
    let matches = |rules: &[ApprovalRule]| {
        rules.iter().any(|rule| {
            let named = match rule.tool.strip_suffix('*') {
                Some(prefix) => tool.starts_with(prefix),
                None => rule.tool == tool,
            };
            named
                && rule.command_prefix.is_none()
                && rule.path_prefix.is_none()
                && rule
                    .mode
                    .as_deref()
                    .is_none_or(|m| m.parse::<PermissionMode>() == Ok(ctx.mode))
        })
    };
    if matches(&approvals.rules.deny) {
        return Some(ToolOutput::failure(format!(
            "Error: the call of {tool} was refused by a policy rule"
        )));
    }
    if matches(&approvals.rules.allow) || hints.read_only || approvals.call_granted(tool) {
        return None;
    }
    let Some(approver) = &approvals.approver else {
        return (ctx.mode == PermissionMode::ReadOnly).then(|| {
            ToolOutput::failure(format!(
                "Error: MCP tool \"{tool}\" is not read-only and this session is read-only"
            ))
        });
    };
    if !hints.destructive {
        return None;
    }
    let id = uuid::Uuid::new_v4().to_string();
    let reason = format!("call {tool}");
    emit_asked(ctx, &id, tool, &reason);
    let question = question(ctx, &id, tool, arguments.clone(), reason);
    let verdict = ask(approver.as_ref(), question, approvals.timeout, ctx).await;
    if verdict.scope == Some(ApprovalScope::Session) {
        approvals.grant_call(tool);
    }
    emit_decided(ctx, id, &verdict);
    refusal(&verdict, &format!("the call of {tool}"))
}

/// Whether a call of `tool` may run when something other than a rule
/// asks for the client's word (a `PreToolUse` hook's `ask`): `None` when
/// the client approved, else the refused result. `approval/asked` (with
/// `reason`) and `approval/decided` are recorded. Without a client that
/// answers approvals the call is refused (fail closed); an `allow-session`
/// answer approves this call only (the hook asks again next time).
pub async fn ask_for_call(
    ctx: &ToolContext,
    tool: &str,
    arguments: &Value,
    reason: String,
) -> Option<ToolOutput> {
    let approvals = Arc::clone(&ctx.approvals);
    let id = uuid::Uuid::new_v4().to_string();
    emit_asked(ctx, &id, tool, &reason);
    let verdict = match &approvals.approver {
        Some(approver) => {
            let question = question(ctx, &id, tool, arguments.clone(), reason);
            ask(approver.as_ref(), question, approvals.timeout, ctx).await
        }
        None => Verdict::official_unavailable(),
    };
    emit_decided(ctx, id, &verdict);
    refusal(&verdict, &format!("the call of {tool}"))
}

/// Puts `question` to the client, bounded by `timeout` and the call's
/// cancellation.
async fn ask(
    approver: &dyn Approver,
    question: ApprovalQuestion,
    timeout: Option<Duration>,
    ctx: &ToolContext,
) -> Verdict {
    ctx.host
        .asking_client(&question.tool_name, &question.reason);
    let asked = approver.ask(question);
    let answered = async {
        match timeout {
            Some(limit) => tokio::time::timeout(limit, asked).await.ok(),
            None => Some(asked.await),
        }
    };
    let answer = tokio::select! {
        answer = answered => answer,
        () = ctx.cancel.cancelled() => return Verdict::cancelled("the turn was cancelled"),
    };
    let by = ApprovalDecider::Client;
    match answer {
        None => Verdict::rejected(
            by,
            &format!(
                "no answer within {} ms",
                timeout.map_or(0, |t| t.as_millis())
            ),
        ),
        Some(ApproverAnswer::Decided(ApprovalDecision::AllowOnce, _)) => {
            Verdict::approved(by, ApprovalScope::Once)
        }
        Some(ApproverAnswer::Decided(ApprovalDecision::AllowSession, _)) => {
            Verdict::approved(by, ApprovalScope::Session)
        }
        Some(ApproverAnswer::Decided(ApprovalDecision::Reject, message)) => {
            Verdict::rejected(by, message.as_deref().unwrap_or("the client rejected it"))
        }
        Some(ApproverAnswer::Failed(why)) => Verdict::rejected(by, &why),
        Some(ApproverAnswer::Unavailable(why)) => Verdict {
            outcome: ApprovalOutcome::Unavailable,
            by: Some(by),
            scope: None,
            message: Some(why),
        },
        Some(ApproverAnswer::Cancelled) => Verdict::cancelled("the runtime is shutting down"),
    }
}

/// How a request was decided.
struct Verdict {
    outcome: ApprovalOutcome,
    by: Option<ApprovalDecider>,
    scope: Option<ApprovalScope>,
    message: Option<String>,
}

impl Verdict {
    fn approved(by: ApprovalDecider, scope: ApprovalScope) -> Self {
        Self {
            outcome: ApprovalOutcome::Approved,
            by: Some(by),
            scope: Some(scope),
            message: None,
        }
    }

    fn rejected(by: ApprovalDecider, message: &str) -> Self {
        Self {
            outcome: ApprovalOutcome::Rejected,
            by: Some(by),
            scope: None,
            message: Some(message.to_owned()),
        }
    }

    fn cancelled(message: &str) -> Self {
        Self {
            outcome: ApprovalOutcome::Cancelled,
            by: Some(ApprovalDecider::Runtime),
            scope: None,
            message: Some(message.to_owned()),
        }
    }

    /// No approver: the official event, with nothing of dsh's.
    fn official_unavailable() -> Self {
        Self {
            outcome: ApprovalOutcome::Unavailable,
            by: None,
            scope: None,
            message: None,
        }
    }
}

/// Whether `rule` covers `tool` asking for `mode` on `subject` (the
/// command or the path): every field the rule gives must match.
fn rule_matches(rule: &ApprovalRule, tool: &str, mode: PermissionMode, subject: &str) -> bool {
    let tool_matches = rule.tool == "*" || rule.tool == tool;
    let mode_matches = rule
        .mode
        .as_deref()
        .is_none_or(|wanted| wanted.parse::<PermissionMode>() == Ok(mode));
    let command_matches = rule
        .command_prefix
        .as_deref()
        .is_none_or(|prefix| tool == "bash" && subject.trim_start().starts_with(prefix));
    let path_matches = rule
        .path_prefix
        .as_deref()
        .is_none_or(|prefix| tool != "bash" && subject.starts_with(prefix));
    tool_matches && mode_matches && command_matches && path_matches
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(tool: &str) -> ApprovalRule {
        ApprovalRule {
            tool: tool.to_owned(),
            mode: None,
            command_prefix: None,
            path_prefix: None,
        }
    }

    #[test]
    fn a_rule_matches_only_when_every_field_it_gives_matches() {
        let full = PermissionMode::DangerFullAccess;
        assert!(rule_matches(&rule("*"), "write", full, "a.txt"));
        assert!(!rule_matches(&rule("bash"), "write", full, "a.txt"));
        let git = ApprovalRule {
            command_prefix: Some("git ".into()),
            ..rule("bash")
        };
        assert!(rule_matches(&git, "bash", full, "  git push"));
        assert!(!rule_matches(&git, "bash", full, "gitx; rm -rf /"));
        // A command prefix never matches a file tool, a path prefix never
        // matches bash.
        assert!(!rule_matches(
            &ApprovalRule {
                command_prefix: Some("a".into()),
                ..rule("*")
            },
            "write",
            full,
            "a.txt"
        ));
        assert!(!rule_matches(
            &ApprovalRule {
                path_prefix: Some("/".into()),
                ..rule("*")
            },
            "bash",
            full,
            "/bin/true"
        ));
        let workspace_only = ApprovalRule {
            mode: Some("workspace-write".into()),
            ..rule("*")
        };
        assert!(!rule_matches(&workspace_only, "bash", full, "ls"));
        assert!(rule_matches(
            &workspace_only,
            "bash",
            PermissionMode::WorkspaceWrite,
            "ls"
        ));
        let unknown_mode = ApprovalRule {
            mode: Some("everything".into()),
            ..rule("*")
        };
        assert!(!rule_matches(&unknown_mode, "bash", full, "ls"));
    }
}
