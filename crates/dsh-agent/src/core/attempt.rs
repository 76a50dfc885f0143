//! A step's model call: streamed attempts, retried by the policy, one
//! recovery through the features when the context window is exceeded,
//! and the reply recorded (`assistant/message`) into the history.

use super::deltas::DeltaTap;
use super::shared::Core;
use super::state::interrupted;
use crate::offload;
use dsh_llm::{Accumulator, FinishReason, LlmFailureCode, ModelRequest, Settled, StreamRecorder};
use dsh_protocol::catalog::{
    AssistantMessageEvent, EventDraft, LlmRetry, LlmRetryStarted, RetryMode, TurnEndReason,
};
use dsh_session::{AssistantMessage, Message, new_message_id, now_ms};
use dsh_tools::CancellationToken;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Calls the model for step `step` of `turn` until it answers, and
/// records the reply. `Err` carries how the turn ends (the step is closed
/// already): the retries ran out, it was interrupted, or the reply hit
/// the token cap.
pub(super) async fn reply(
    core: &Core,
    turn: u32,
    step: u32,
    mut request: ModelRequest,
    cancel: &CancellationToken,
) -> Result<Arc<Message>, TurnEndReason> {
    let mut retry = 0u32;
    let mut attempts = 0u32;
    let mut recovered = false;
    let retry_id = new_message_id();
    let deltas = core.state().log.delta_observer();
    let (stream, content, usage, replay_state, finish) = loop {
        let (stream, settled) = match &deltas {
            None => attempt(core, request.clone(), cancel).await,
            Some(observer) => {
                let mut tap = DeltaTap::new(Arc::clone(observer), &core.id, turn, step, attempts);
                attempt_with(core, request.clone(), cancel, Some(&mut tap)).await
            }
        };
        attempts += 1;
        let Some(settled) = settled else {
            let mut state = core.state();
            state.record_attempt(turn, step, &stream);
            state.end_step(turn, step);
            return Err(interrupted());
        };
        let failure = match settled {
            Settled::Message {
                content,
                usage,
                replay_state,
                finish,
            } => break (stream, content, usage, replay_state, finish),
            Settled::Failed(failure) => failure,
        };
        core.state().record_attempt(turn, step, &stream);
        if failure.code == LlmFailureCode::ContextWindowExceeded && !recovered {
            // One recovery whatever the pressure, then the same attempt
            // over the rewritten history.
            recovered = true;
            match window_exceeded(core, turn, cancel).await {
                Ok(true) => {
                    request.messages = core.state().history().messages();
                    continue;
                }
                Ok(false) => {
                    core.state().end_step(turn, step);
                    return Err(TurnEndReason::Error { error: failure });
                }
                Err(reason) => {
                    core.state().end_step(turn, step);
                    return Err(reason);
                }
            }
        }
        let delay_ms = {
            let mut state = core.state();
            retry += 1;
            let Some(delay_ms) = core.retry.delay_ms(retry, &failure) else {
                state.end_step(turn, step);
                return Err(TurnEndReason::Error { error: failure });
            };
            let policy_key = core.retry.policy_key();
            state.event(LlmRetry {
                retry_id: retry_id.as_str(),
                turn,
                step,
                provider: core.route.provider.as_str(),
                mode: RetryMode::Normal,
                policy_key: policy_key.as_str(),
                retry,
                max_retries: core.retry.max_retries,
                delay_ms,
                failure,
            });
            delay_ms
        };
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs_f64(delay_ms.get() / 1000.0)) => {}
            () = cancel.cancelled() => {
                core.state().end_step(turn, step);
                return Err(interrupted());
            }
        }
        core.state().event(LlmRetryStarted {
            retry_id: retry_id.as_str(),
            turn,
            step,
            retry,
        });
    };
    let mut state = core.state();
    let message = AssistantMessage::from_model(
        content,
        &core.route.provider,
        &core.route.model,
        replay_state,
    );
    let total = usage.as_ref().map(|u| u.total_tokens);
    let bytes = offload::content_bytes(&message.content) + stream.text_bytes();
    let seq = offload::emit_sized(bytes, || {
        state.emit(EventDraft::surfaced(AssistantMessageEvent {
            turn,
            step,
            message: &message,
            usage,
            stream: &stream,
        }))
    });
    drop(stream);
    let message = state
        .history
        .push_reply(seq, turn, Message::Assistant(message), total);
    for feature in core.hooks.iter() {
        feature.replied(core, &mut state, turn, step, usage.as_ref());
    }
    if finish == FinishReason::MaxTokens {
        state.end_step(turn, step);
        return Err(TurnEndReason::MaxTokens);
    }
    // Pending from now: disposal closes each with a result.
    state.pending_calls = tool_calls(&message)
        .map(|(id, _, _)| (id.to_owned(), None))
        .collect();
    Ok(message)
}

/// Asks the features to make room after a `CONTEXT_WINDOW_EXCEEDED`
/// reply: `Ok(true)` once one rewrote the history.
async fn window_exceeded(
    core: &Core,
    turn: u32,
    cancel: &CancellationToken,
) -> Result<bool, TurnEndReason> {
    for feature in core.hooks.iter() {
        if feature.window_exceeded(core, turn, cancel).await? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Streams one model attempt; returns the `stream` records and how it
/// settled, or `None` when `cancel` stopped it first (the provider's
/// stream is dropped).
pub(crate) async fn attempt(
    core: &Core,
    request: ModelRequest,
    cancel: &CancellationToken,
) -> (StreamRecorder, Option<Settled>) {
    attempt_with(core, request, cancel, None).await
}

/// [`attempt`], showing each chunk to `tap` as it arrives (and letting
/// it hand on what it holds whenever the stream waits).
async fn attempt_with(
    core: &Core,
    request: ModelRequest,
    cancel: &CancellationToken,
    mut tap: Option<&mut DeltaTap>,
) -> (StreamRecorder, Option<Settled>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    core.provider.start(request, tx);
    let mut recorder = StreamRecorder::new();
    let mut accumulator = Accumulator::new();
    let mut stopped = false;
    loop {
        if cancel.is_cancelled() {
            stopped = true;
            break;
        }
        let ready = match rx.try_recv() {
            Ok(chunk) => Some(chunk),
            Err(_) => {
                if let Some(tap) = tap.as_deref_mut() {
                    tap.flush();
                }
                None
            }
        };
        let chunk = match ready {
            Some(chunk) => Some(chunk),
            None => tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    stopped = true;
                    break;
                }
                chunk = rx.recv() => chunk,
            },
        };
        let Some(chunk) = chunk else {
            break;
        };
        if let Some(tap) = tap.as_deref_mut() {
            tap.chunk(&chunk);
        }
        // The recorder first: at a block end it drops the block's delta
        // strings, and the accumulator reads the chunk it kept.
        if let Some(chunk) = recorder.push(now_ms(), chunk) {
            accumulator.push(chunk);
        }
        if accumulator.finished() {
            break;
        }
    }
    // What streamed before a stop is handed on too (the attempt is void).
    if let Some(tap) = tap {
        tap.flush();
    }
    if stopped {
        return (recorder, None);
    }
    (recorder, Some(accumulator.settle(core.provider.name())))
}

/// The `tool-call` blocks of an assistant message, in model order.
pub(super) fn tool_calls(message: &Message) -> impl Iterator<Item = (&str, &str, &str)> {
    let content = match message {
        Message::Assistant(message) => &message.content[..],
        _ => &[],
    };
    content.iter().filter_map(tool_call)
}

/// `(id, name, arguments)` of a `tool-call` block.
fn tool_call(block: &Value) -> Option<(&str, &str, &str)> {
    if block.get("type")?.as_str()? != "tool-call" {
        return None;
    }
    Some((
        block.get("id")?.as_str()?,
        block.get("name")?.as_str()?,
        block
            .get("arguments")
            .and_then(Value::as_str)
            .unwrap_or("{}"),
    ))
}
