//! Automatic compaction. Before each step, when the next request would
//! carry more than the [`Budget`]'s threshold, the oldest whole turns of the
//! history are condensed by a summary call to the same provider
//! (`x-deepseek-harness-compact: 1`, at most 65,536 tokens) into a
//! checkpoint that replaces them: `compaction/start` → the call →
//! `compaction/summary` → the checkpoint `user/message` (`surfaceOp`
//! replace, citing the start, the summary and every shadowed message) →
//! `compaction/end`. A failed call ends with `compaction/end {error}` and
//! the turn goes on uncompacted; a `CONTEXT_WINDOW_EXCEEDED` reply gets one
//! compaction whatever the pressure ([`recover`]). The log keeps every
//! shadowed message: resume replays the replacement, so the history after a
//! crash is the compacted one.

mod plan;
mod prose;

use crate::core::{AgentState, Core, Feature, HookFuture};
use crate::estimate;
use crate::history::Entry;
use dsh_llm::{ModelRequest, Route, Settled};
use dsh_protocol::catalog::{
    CompactionEnd, CompactionStart, CompactionSummary, EventDraft, SeqRange, TurnEndReason,
};
use dsh_protocol::message::{KeptMessage, Role};
use dsh_session::{Message, ToolMessage, UserMessage, new_message_id, text_block};
use dsh_tools::CancellationToken;
use serde_json::{Value, json};
use std::sync::Arc;

/// Compactions at most before one step (the second condenses what the
/// first left when the pressure is still too high).
const MAX_PASSES: usize = 2;

/// A tool result longer than this many characters is cut in summary calls
/// (never in the log).
const PRUNE_OVER: usize = 8_192;
/// Characters of a cut result kept from its start.
const PRUNE_HEAD: usize = 4_096;
/// Characters of a cut result kept from its end.
const PRUNE_TAIL: usize = 1_024;

/// How one compaction went.
enum Pass {
    /// The span was replaced by a checkpoint.
    Compacted,
    /// The summary call failed: nothing changed.
    Failed,
    /// The turn must end (cancelled, or the log cannot be written).
    Stopped(TurnEndReason),
}

/// The compaction feature (stateless: an agent's budget follows from its
/// context window and route).
pub(crate) struct Compaction;

impl Feature for Compaction {
    fn before_step<'a>(
        &'a self,
        core: &'a Core,
        turn: u32,
        pending: &'a [UserMessage],
        cancel: &'a CancellationToken,
    ) -> HookFuture<'a, Option<TurnEndReason>> {
        Box::pin(before_step(core, turn, pending, cancel))
    }

    fn window_exceeded<'a>(
        &'a self,
        core: &'a Core,
        turn: u32,
        cancel: &'a CancellationToken,
    ) -> HookFuture<'a, Result<bool, TurnEndReason>> {
        Box::pin(recover(core, turn, cancel))
    }
}

/// The budget of `core`'s requests.
fn budget(core: &Core) -> plan::Budget {
    plan::Budget::new(core.context_window, core.route.max_tokens())
}

/// Compacts before a step of `turn` while the pressure of its request —
/// the history plus the `pending` messages the step will add — is above
/// the threshold. `Some(reason)` when the turn must end.
async fn before_step(
    core: &Core,
    turn: u32,
    pending: &[UserMessage],
    cancel: &CancellationToken,
) -> Option<TurnEndReason> {
    let pending: u64 = pending.iter().map(|m| estimate::content(&m.content)).sum();
    for _ in 0..MAX_PASSES {
        let end = {
            let state = core.state();
            let entries = state.history().entries();
            if plan::pressure(entries, pending, state.fixed_tokens(core)) <= budget(core).threshold
            {
                return None;
            }
            plan::span(entries, pending, budget(core).retain)?
        };
        match pass(core, turn, end, cancel).await {
            Pass::Compacted => {}
            Pass::Failed => return None,
            Pass::Stopped(reason) => return Some(reason),
        }
    }
    None
}

/// After a `CONTEXT_WINDOW_EXCEEDED` reply: one compaction whatever the
/// pressure. `Ok(true)` when the history changed (the attempt is worth
/// making again), `Err(reason)` when the turn must end.
async fn recover(
    core: &Core,
    turn: u32,
    cancel: &CancellationToken,
) -> Result<bool, TurnEndReason> {
    let end = {
        let state = core.state();
        plan::span(state.history().entries(), 0, budget(core).retain)
    };
    let Some(end) = end else {
        return Ok(false);
    };
    match pass(core, turn, end, cancel).await {
        Pass::Compacted => Ok(true),
        Pass::Failed => Ok(false),
        Pass::Stopped(reason) => Err(reason),
    }
}

/// Condenses the history entries `..end` (shortened to what a summary call
/// can carry).
async fn pass(core: &Core, turn: u32, end: usize, cancel: &CancellationToken) -> Pass {
    // The features hear of it first (`PreCompact` hooks); the compaction
    // is triggered by the window's pressure.
    for feature in core.hooks.iter() {
        feature.compacting(core, turn, "auto", cancel).await;
    }
    let id = new_message_id();
    let (request, start_seq, seqs, shadowed_tokens) = {
        let mut state = core.state();
        let entries = state.history().entries();
        let limit = budget(core)
            .summary_input(state.fixed_tokens(core))
            .saturating_sub(estimate::text(prose::INSTRUCTION.len()));
        // The span as the call carries it, cut once and measured so.
        let mut messages: Vec<KeptMessage> =
            entries[..end].iter().map(|e| pruned(&e.message)).collect();
        let sizes: Vec<u64> = messages
            .iter()
            .map(|m| estimate::message(&m.get()))
            .collect();
        let end = plan::fit(entries, &sizes, limit);
        messages.truncate(end);
        let span = &entries[..end];
        let seqs: Vec<u64> = span.iter().map(|e| e.seq).collect();
        let shadowed_tokens = span.iter().map(Entry::tokens).sum();
        messages.push(
            Message::User(UserMessage::new(
                vec![text_block(prose::INSTRUCTION)],
                json!({"kind": "compaction-instruction"}),
            ))
            .into(),
        );
        let start_seq = state.event(CompactionStart {
            compaction_id: id.as_str(),
            turn,
        });
        // Barrier before the summary call.
        state.flush();
        if let Some(reason) = state.log_failure() {
            return Pass::Stopped(reason);
        }
        let request = ModelRequest {
            session_id: core.id.clone(),
            route: Route {
                max_tokens: Some(budget(core).summary_max_tokens),
                ..core.route.clone()
            },
            system: core.system_prompt.clone(),
            messages,
            tools: Arc::clone(core.roster.specs()),
            compact: true,
        };
        (request, start_seq, seqs, shadowed_tokens)
    };
    let (_, settled) = crate::core::attempt(core, request, cancel).await;
    let mut state = core.state();
    let end_with = |state: &mut AgentState, error: Option<&str>| {
        state.event(CompactionEnd {
            compaction_id: id.as_str(),
            turn,
            error,
        });
        state.flush();
    };
    let (content, usage) = match settled {
        None => {
            end_with(&mut state, Some("interrupted"));
            return Pass::Stopped(crate::core::interrupted());
        }
        Some(Settled::Failed(failure)) => {
            tracing::warn!(session = %core.id, "compaction failed: {}", failure.message);
            end_with(&mut state, Some(&failure.message));
            return Pass::Failed;
        }
        Some(Settled::Message { content, usage, .. }) => (content, usage),
    };
    let summary: Vec<Value> = content
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .filter(|t| !t.trim().is_empty())
        .map(text_block)
        .collect();
    let unchanged = state
        .history()
        .entries()
        .iter()
        .map(|e| e.seq)
        .take(seqs.len())
        .eq(seqs.iter().copied());
    let (Some(&first), Some(&last), false, true) =
        (seqs.first(), seqs.last(), summary.is_empty(), unchanged)
    else {
        let error = if summary.is_empty() {
            "the summary call answered no text"
        } else {
            "the history changed during the summary call"
        };
        end_with(&mut state, Some(error));
        return Pass::Failed;
    };
    let mut blocks = Vec::with_capacity(summary.len() + 2);
    blocks.push(text_block(prose::CHECKPOINT_OPEN));
    blocks.extend(summary.iter().cloned());
    blocks.push(text_block(prose::CHECKPOINT_CLOSE));
    // A checkpoint no smaller than what it replaces gains nothing (the
    // official runtime refuses it with this message).
    let framed = estimate::content(&blocks);
    if framed >= shadowed_tokens {
        let error = format!(
            "summary is not smaller than the shadowed content ({framed} estimated framed tokens >= {shadowed_tokens})"
        );
        end_with(&mut state, Some(&error));
        return Pass::Failed;
    }
    let summary_seq = state.event(CompactionSummary {
        compaction_id: id.as_str(),
        summary: &summary,
        raw_output: &content,
        llm_stream_call: true,
        shadowed_range: SeqRange {
            start: first,
            end: last,
        },
        shadowed_seqs: seqs.clone(),
        shadowed_token_count: shadowed_tokens,
        provider: core.route.provider.as_str(),
        model: core.route.model.as_str(),
        max_tokens: Some(budget(core).summary_max_tokens),
        usage,
    });
    let checkpoint = UserMessage::compact_checkpoint(blocks, &id);
    let mut cited = vec![start_seq, summary_seq];
    cited.extend(&seqs);
    let seq = state.emit(EventDraft::replacing(&checkpoint, first, last).citing(cited));
    // The open turn's start moves with the history; the next request
    // starts a new series and context the checkpoint shadowed is sent
    // again.
    state.replace_history(
        seqs.len(),
        Entry::new(seq, turn, None, Message::User(checkpoint).into()),
    );
    end_with(&mut state, None);
    Pass::Compacted
}

/// `message` with the text of a tool result over [`PRUNE_OVER`]
/// characters cut to its first [`PRUNE_HEAD`] and last [`PRUNE_TAIL`]
/// characters; any other message shared as it is.
fn pruned(kept: &KeptMessage) -> KeptMessage {
    if kept.role() != Role::Tool {
        return kept.clone();
    }
    let message = kept.get();
    let Message::Tool(result) = message.as_ref() else {
        return kept.clone();
    };
    if !result.content.iter().any(|b| long_text(b).is_some()) {
        return kept.clone();
    }
    let content = result
        .content
        .iter()
        .map(|block| match long_text(block) {
            Some(text) => text_block(cut(text)),
            None => block.clone(),
        })
        .collect();
    KeptMessage::parsed(Message::Tool(ToolMessage {
        role: result.role,
        source: result.source.clone(),
        tool_call_id: result.tool_call_id.clone(),
        content,
        is_error: result.is_error,
        id: result.id.clone(),
    }))
}

/// The text of a text block over [`PRUNE_OVER`] characters.
fn long_text(block: &Value) -> Option<&str> {
    let text = block.get("text").and_then(Value::as_str)?;
    (block.get("type").and_then(Value::as_str) == Some("text")
        && text.len() > PRUNE_OVER
        && text.chars().count() > PRUNE_OVER)
        .then_some(text)
}

/// The head and the tail of `text` around a note of what was left out.
fn cut(text: &str) -> String {
    let chars = text.chars().count();
    let head_end = text
        .char_indices()
        .nth(PRUNE_HEAD)
        .map_or(text.len(), |(i, _)| i);
    let tail_start = text
        .char_indices()
        .nth(chars - PRUNE_TAIL)
        .map_or(text.len(), |(i, _)| i);
    let mut out = String::with_capacity(head_end + (text.len() - tail_start) + 64);
    out.push_str(&text[..head_end]);
    out.push_str(&prose::pruned(chars - PRUNE_HEAD - PRUNE_TAIL));
    out.push_str(&text[tail_start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_tool_results_keep_their_head_and_tail() {
        let text: String = (0..20_000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        // Packed, as a big resumed history keeps it.
        let message = KeptMessage::packed(Message::Tool(ToolMessage::new(
            "c1",
            vec![text_block(text.clone()), text_block("short")],
            false,
        )));
        let Message::Tool(cut) = pruned(&message).get().as_ref().clone() else {
            panic!("not a tool message");
        };
        let first = cut.content[0]["text"].as_str().unwrap();
        assert!(first.starts_with(&text[..PRUNE_HEAD]));
        assert!(first.ends_with(&text[text.len() - PRUNE_TAIL..]));
        assert!(first.contains("14880 characters"));
        assert_eq!(cut.content[1]["text"], "short");
        // A short result is shared, not copied.
        let short = Arc::new(Message::Tool(ToolMessage::new(
            "c2",
            vec![text_block("x")],
            false,
        )));
        assert!(Arc::ptr_eq(&pruned(&short.clone().into()).get(), &short));
    }
}
