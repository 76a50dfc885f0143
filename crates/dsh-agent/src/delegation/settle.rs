//! A child's news for its parent: when the child goes idle, its parent gets
//! a `subagent-settled` notice (a new turn if idle, the next step if
//! running) and the client `subagent.finished` once the parent claims it.

use super::prose;
use crate::core::{ChildNews, Core, Delivery};
use dsh_protocol::message::{KeptMessage, Role};
use dsh_protocol::notifications::{SubagentFinishedParams, SubagentStopReason};
use dsh_session::{Message, TreeNotice, UserMessage, text_block};
use serde_json::Value;

/// Source kind of the notice.
const SETTLED: &str = "subagent-settled";

/// Tells the parent of `core` (if it has one, still open) that `core`
/// settled. Called by the child's loop after it went idle, with no lock
/// held.
pub(crate) fn settled(core: &Core) {
    let Some(link) = &core.lineage.parent else {
        return;
    };
    let Some(parent) = link.core.upgrade() else {
        return;
    };
    let (reason, last) = {
        let state = core.state();
        if state.is_running() || state.is_disposed() {
            return;
        }
        (
            state.last_end().cloned(),
            last_assistant_text(&state.history().messages()),
        )
    };
    let Some(reason) = reason else {
        return;
    };
    let stop = SubagentStopReason::of(&reason);
    // `lastAssistantMessage` is the child's last reply whatever ended its
    // turn (after an error or an interrupt too, as the official runtime
    // sends it); only a reply that ended the turn is its closing word in
    // the notice.
    let closing_reply: &[Value] = match stop {
        SubagentStopReason::Completed | SubagentStopReason::MaxTokens => &last,
        _ => &[],
    };
    let status = stop.status(core.profile.max_tokens_as_success);
    let summary = prose::subagent_settled_summary(&core.id, stop);
    let closing: String = closing_reply
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n");
    let finished = SubagentFinishedParams {
        provider: link.provider,
        agent_id: core.id.clone(),
        parent_session_id: link.id.clone(),
        child_session_id: core.id.clone(),
        status,
        stop_reason: stop,
        last_assistant_message: (!last.is_empty()).then_some(last),
    };
    let news = ChildNews {
        finished: Box::new(finished),
        closing,
    };
    let ChildNews { finished, closing } = match &link.sink {
        // A workflow's child: the run hears of it, the parent's model
        // does not (unless the run no longer listens).
        Some(sink) => match sink.settled(&parent, core, news) {
            Ok(()) => return,
            Err(news) => news,
        },
        None => news,
    };
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
    let notice = UserMessage::inbox_notice(SETTLED, content, &summary, Some(&core.id));
    parent.deliver(
        notice,
        Delivery::Notice,
        Some(TreeNotice::Finished(finished)),
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
