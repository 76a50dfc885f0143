//! A child's news for its parent: when the child goes idle, its parent gets
//! a `subagent-settled` notice (a new turn if idle, the next step if
//! running) and the client `subagent.finished` once the parent claims it.

use super::ChildReport;
use crate::inner::Inner;
use crate::prose;
use crate::state::Delivery;
use dsh_protocol::message::{KeptMessage, Role};
use dsh_protocol::notifications::{SubagentFinishedParams, SubagentStopReason};
use dsh_session::{Message, TreeNotice, UserMessage, text_block};
use serde_json::Value;

/// Source kind of the notice.
const SETTLED: &str = "subagent-settled";

/// Tells the parent of `inner` (if it has one, still open) that `inner`
/// settled. Called by the child's loop after it went idle, with no lock
/// held.
pub(crate) fn settled(inner: &Inner) {
    let Some(link) = &inner.lineage.parent else {
        return;
    };
    let Some(parent) = link.inner.upgrade() else {
        return;
    };
    let (reason, last) = {
        let state = inner.state();
        if state.running || state.disposed {
            return;
        }
        (
            state.last_end.clone(),
            last_assistant_text(&state.history.messages()),
        )
    };
    let Some(reason) = reason else {
        return;
    };
    let stop = SubagentStopReason::of(&reason);
    // Only a reply that ended the turn is the child's last word (after an
    // error or an interrupt there is none, as the official runtime says).
    let last = match stop {
        SubagentStopReason::Completed | SubagentStopReason::MaxTokens => last,
        _ => Vec::new(),
    };
    let status = stop.status(inner.profile.max_tokens_as_success);
    let summary = prose::subagent_settled_summary(&inner.id, stop);
    let closing: String = last
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n");
    let finished = SubagentFinishedParams {
        provider: link.provider,
        agent_id: inner.id.clone(),
        parent_session_id: link.id.clone(),
        child_session_id: inner.id.clone(),
        status,
        stop_reason: stop,
        last_assistant_message: (!last.is_empty()).then_some(last),
    };
    if let Some(report) = link.report.as_ref().filter(|r| !r.tx.is_closed()) {
        // A workflow's child: the run hears of it, the parent's model
        // does not (the client still gets `subagent.finished`).
        parent
            .state()
            .log
            .announce(TreeNotice::Finished(Box::new(finished)));
        let structured = report
            .structured
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let _ = report.tx.send(ChildReport {
            stop,
            text: closing,
            structured,
        });
        return;
    }
    // As the official notice: the summary, then either a label and the
    // child's closing text, or a note that it left none.
    let content = if closing.is_empty() {
        vec![
            text_block(summary.clone()),
            text_block(prose::subagent_no_final_message(&link.label)),
        ]
    } else {
        vec![
            text_block(summary.clone()),
            text_block(prose::subagent_settled_label(&link.label)),
            text_block(closing),
        ]
    };
    let notice = UserMessage::inbox_notice(SETTLED, content, &summary, Some(&inner.id));
    parent.deliver(
        notice,
        Delivery::Notice,
        Some(TreeNotice::Finished(Box::new(finished))),
    );
}

/// The content of the last assistant message in `history`, verbatim
/// (reasoning included), or nothing when the child never answered.
fn last_assistant_text(history: &[KeptMessage]) -> Vec<Value> {
    history
        .iter()
        .rev()
        .filter(|m| m.role() == Role::Assistant)
        .find_map(|m| match m.get().as_ref() {
            Message::Assistant(reply) => Some(reply.content.clone()),
            _ => None,
        })
        .unwrap_or_default()
}
