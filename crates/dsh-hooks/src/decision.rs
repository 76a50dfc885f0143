//! What an event's runs decide, by Claude Code's rules.
//!
//! Exit code 0 continues; its stdout, when it is a JSON object, may decide
//! (`continue`/`stopReason`, `decision: "block"` with `reason`,
//! `hookSpecificOutput.permissionDecision` / `permissionDecisionReason` /
//! `updatedInput` / `additionalContext`, `systemMessage`); otherwise, for
//! `UserPromptSubmit` and `SessionStart`, it is context for the model.
//! Exit code 2 blocks, with stderr as the reason (for the events that
//! cannot be blocked, stderr is shown to the client). Any other end (another
//! code, a signal, a time-out, too much output, a failed start) is an error
//! shown to the client, and the event goes on as if the hook had not run.

use crate::event::HookEvent;
use crate::runner::{HookRun, RunStatus};
use serde::Serialize;
use serde_json::{Map, Value};

/// What one run decided (as recorded).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    /// Nothing: the event goes on.
    None,
    /// `PreToolUse`: the call may run.
    Allow,
    /// `PreToolUse`: the call is refused.
    Deny,
    /// `PreToolUse`: the client is asked.
    Ask,
    /// The prompt is refused, the model is told (`PostToolUse`), or the
    /// agent keeps working (`Stop`).
    Block,
    /// `continue: false`: the agent stops.
    Stop,
    /// It added context for the model.
    Context,
    /// It failed; the event goes on.
    Error,
}

/// One run and what it decided.
#[derive(Debug, Clone)]
pub struct Judged {
    /// The run.
    pub run: HookRun,
    /// Its decision.
    pub decision: Decision,
    /// The reason it gave (or, for an error, what went wrong).
    pub reason: Option<String>,
    /// What it told the user (`systemMessage`), or a note on its output
    /// (a JSON object that did not parse, read as text).
    pub message: Option<String>,
}

/// What an event's runs decided together.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Every run, in configuration order.
    pub runs: Vec<Judged>,
    /// `continue: false`: the agent stops, with this reason.
    pub stop: Option<String>,
    /// The event is blocked (a tool call refused, a prompt refused, the
    /// model told, the agent kept working), with these reasons joined.
    pub block: Option<String>,
    /// `PreToolUse`: the client is to be asked, with this reason.
    pub ask: Option<String>,
    /// `PreToolUse`: the first `updatedInput` given.
    pub updated_input: Option<Map<String, Value>>,
    /// Context for the model, in order.
    pub context: Vec<String>,
}

/// The default reason of a `continue: false` without `stopReason`.
const STOPPED: &str = "a hook stopped the agent";

/// Judges `runs` of `event`.
pub fn judge(event: HookEvent, runs: Vec<HookRun>) -> Outcome {
    let mut outcome = Outcome::default();
    let mut blocks: Vec<String> = Vec::new();
    for run in runs {
        let mut message = None;
        let (decision, reason) = judge_one(event, &run, &mut outcome, &mut message);
        match decision {
            Decision::Deny | Decision::Block => blocks.push(reason.clone().unwrap_or_default()),
            Decision::Ask if outcome.ask.is_none() => {
                outcome.ask = Some(reason.clone().unwrap_or_default());
            }
            Decision::Stop if outcome.stop.is_none() => {
                outcome.stop = Some(reason.clone().unwrap_or_else(|| STOPPED.into()));
            }
            _ => {}
        }
        outcome.runs.push(Judged {
            run,
            decision,
            reason,
            message,
        });
    }
    if !blocks.is_empty() {
        outcome.block = Some(blocks.join("\n"));
    }
    outcome
}

/// Whether stdout that is not JSON is context for the model.
fn text_is_context(event: HookEvent) -> bool {
    matches!(event, HookEvent::UserPromptSubmit | HookEvent::SessionStart)
}

/// Whether exit code 2 blocks `event` (else its stderr is only shown).
fn blockable(event: HookEvent) -> bool {
    matches!(
        event,
        HookEvent::PreToolUse
            | HookEvent::PostToolUse
            | HookEvent::UserPromptSubmit
            | HookEvent::Stop
            | HookEvent::SubagentStop
    )
}

fn block_decision(event: HookEvent) -> Decision {
    if event == HookEvent::PreToolUse {
        Decision::Deny
    } else {
        Decision::Block
    }
}

fn judge_one(
    event: HookEvent,
    run: &HookRun,
    outcome: &mut Outcome,
    message: &mut Option<String>,
) -> (Decision, Option<String>) {
    match run.status {
        RunStatus::Exited(0) => {}
        RunStatus::Exited(2) => {
            let stderr = run.stderr.trim();
            let reason = if stderr.is_empty() {
                format!("blocked by hook `{}`", run.command)
            } else {
                stderr.to_owned()
            };
            if blockable(event) {
                return (block_decision(event), Some(reason));
            }
            return (
                Decision::Error,
                Some(format!("exited with code 2: {reason}")),
            );
        }
        ref status => {
            let stderr = run.stderr.trim();
            let mut reason = status.describe();
            if !stderr.is_empty() {
                reason.push_str(": ");
                reason.push_str(stderr);
            }
            return (Decision::Error, Some(reason));
        }
    }
    let stdout = run.stdout.trim();
    if !stdout.starts_with('{') {
        if text_is_context(event) && !stdout.is_empty() {
            outcome.context.push(stdout.to_owned());
            return (Decision::Context, None);
        }
        return (Decision::None, None);
    }
    let Ok(Value::Object(output)) = serde_json::from_str::<Value>(stdout) else {
        *message =
            Some("its output starts with `{` but is not a JSON object; it was read as text".into());
        if text_is_context(event) {
            outcome.context.push(stdout.to_owned());
            return (Decision::Context, None);
        }
        return (Decision::None, None);
    };
    judge_json(event, &output, outcome, message)
}

fn string(object: &Map<String, Value>, key: &str) -> Option<String> {
    object
        .get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn judge_json(
    event: HookEvent,
    output: &Map<String, Value>,
    outcome: &mut Outcome,
    message: &mut Option<String>,
) -> (Decision, Option<String>) {
    *message = string(output, "systemMessage");
    let specific = output.get("hookSpecificOutput").and_then(Value::as_object);
    let mut decision = Decision::None;
    let mut reason = string(output, "reason");
    if let Some(context) = specific.and_then(|s| string(s, "additionalContext")) {
        outcome.context.push(context);
        decision = Decision::Context;
    }
    if output.get("continue") == Some(&Value::Bool(false)) {
        return (Decision::Stop, string(output, "stopReason"));
    }
    match output.get("decision").and_then(Value::as_str) {
        Some("block") if blockable(event) => {
            decision = block_decision(event);
            reason.get_or_insert_with(|| "blocked by a hook".into());
        }
        Some("approve") if event == HookEvent::PreToolUse => decision = Decision::Allow,
        _ => {}
    }
    if event == HookEvent::PreToolUse
        && let Some(specific) = specific
    {
        let why = string(specific, "permissionDecisionReason");
        match specific.get("permissionDecision").and_then(Value::as_str) {
            Some("deny") => {
                decision = Decision::Deny;
                reason = why.or(reason).or_else(|| Some("denied by a hook".into()));
            }
            Some("ask") if decision != Decision::Deny => {
                decision = Decision::Ask;
                reason = why.or(reason);
            }
            Some("allow") if decision == Decision::None || decision == Decision::Context => {
                decision = Decision::Allow;
                reason = why.or(reason);
            }
            _ => {}
        }
        if decision != Decision::Deny
            && let Some(Value::Object(updated)) = specific.get("updatedInput")
            && outcome.updated_input.is_none()
        {
            outcome.updated_input = Some(updated.clone());
        }
    }
    (decision, reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SourceKind;
    use std::time::Duration;

    fn ran(status: RunStatus, stdout: &str, stderr: &str) -> HookRun {
        HookRun {
            command: "hook.sh".into(),
            source: SourceKind::Home,
            duration: Duration::from_millis(1),
            status,
            stdout: stdout.into(),
            stderr: stderr.into(),
        }
    }

    fn ok(stdout: &str) -> HookRun {
        ran(RunStatus::Exited(0), stdout, "")
    }

    #[test]
    fn exit_codes_decide_as_in_claude_code() {
        let out = judge(
            HookEvent::PreToolUse,
            vec![ran(RunStatus::Exited(2), "", "no rm -rf\n")],
        );
        assert_eq!(out.block.as_deref(), Some("no rm -rf"));
        assert_eq!(out.runs[0].decision, Decision::Deny);
        let out = judge(
            HookEvent::PreToolUse,
            vec![ran(RunStatus::Exited(1), "", "oops")],
        );
        assert_eq!(out.block, None);
        assert_eq!(out.runs[0].decision, Decision::Error);
        assert_eq!(
            out.runs[0].reason.as_deref(),
            Some("exited with code 1: oops")
        );
        let out = judge(
            HookEvent::SessionEnd,
            vec![ran(RunStatus::Exited(2), "", "x")],
        );
        assert_eq!((out.block, out.runs[0].decision), (None, Decision::Error));
        let out = judge(
            HookEvent::Stop,
            vec![ran(RunStatus::TimedOut(Duration::from_secs(1)), "", "")],
        );
        assert_eq!(
            out.runs[0].reason.as_deref(),
            Some("timed out after 1000 ms")
        );
        let out = judge(HookEvent::UserPromptSubmit, vec![ok("Branch: main\n")]);
        assert_eq!(out.context, ["Branch: main"]);
        let out = judge(HookEvent::PreToolUse, vec![ok("just talking")]);
        assert!(out.context.is_empty() && out.runs[0].decision == Decision::None);
    }

    #[test]
    fn json_output_decides_and_deny_wins() {
        let deny = r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":".env is protected"}}"#;
        let allow = r#"{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"command":"ls -la"}}}"#;
        let ask = r#"{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"sure?"}}"#;
        let out = judge(HookEvent::PreToolUse, vec![ok(allow), ok(deny), ok(ask)]);
        assert_eq!(out.block.as_deref(), Some(".env is protected"));
        assert_eq!(out.ask.as_deref(), Some("sure?"));
        assert_eq!(
            out.updated_input.map(Value::Object),
            Some(serde_json::json!({"command": "ls -la"}))
        );
        let decisions: Vec<Decision> = out.runs.iter().map(|j| j.decision).collect();
        assert_eq!(decisions, [Decision::Allow, Decision::Deny, Decision::Ask]);
        let out = judge(
            HookEvent::Stop,
            vec![ok(r#"{"decision":"block","reason":"run the tests first"}"#)],
        );
        assert_eq!(out.block.as_deref(), Some("run the tests first"));
        let out = judge(
            HookEvent::PostToolUse,
            vec![ok(
                r#"{"continue":false,"stopReason":"enough","systemMessage":"halted"}"#,
            )],
        );
        assert_eq!(out.stop.as_deref(), Some("enough"));
        assert_eq!(out.runs[0].message.as_deref(), Some("halted"));
        let out = judge(
            HookEvent::SessionStart,
            vec![ok(
                r#"{"hookSpecificOutput":{"additionalContext":"TODO: x"}}"#,
            )],
        );
        assert_eq!(out.context, ["TODO: x"]);
        let out = judge(HookEvent::UserPromptSubmit, vec![ok("{not json")]);
        assert_eq!(out.context, ["{not json"]);
        let note = out.runs[0].message.as_deref().unwrap_or_default();
        assert!(note.contains("not a JSON object"), "{note}");
        let out = judge(HookEvent::PreToolUse, vec![ok(r#"{"decision":"approve"}"#)]);
        assert_eq!(out.runs[0].decision, Decision::Allow);
    }
}
