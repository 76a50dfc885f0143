//! One turn: steps of model attempts and tool calls.

use crate::inner::Inner;
use crate::profile::ProfileKind;
use crate::state::State;
use crate::{compaction, offload, prose, tools};
use dsh_llm::{
    Accumulator, FinishReason, LlmFailure, LlmFailureCode, ModelRequest, Settled, StreamRecorder,
};
use dsh_protocol::catalog::{
    AbortReason, AssistantAttempt, AssistantMessageEvent, EventDraft, LlmRetry, LlmRetryStarted,
    RequestContext, RequestHeader, RequestHeaderBody, RetryMode, SessionTitle, SystemMessageEvent,
    TitleSource, ToolCall, ToolErrorCode, TurnEndReason,
};
use dsh_session::{
    AssistantMessage, Message, SystemMessage, UserMessage, new_message_id, now_ms, text_block,
    text_of,
};
use dsh_tools::{CancellationToken, ToolOutput};
use serde_json::Value;
use std::time::Duration;
use tokio::sync::mpsc;

/// Runs the steps of turn `turn` over the `claimed` messages and returns the
/// `turn/end` reason. `turn/end` itself is appended by the caller.
pub(crate) async fn run(inner: &Inner, turn: u32, claimed: Vec<UserMessage>) -> TurnEndReason {
    if claimed.is_empty() {
        return TurnEndReason::Completed;
    }
    let mut claimed = claimed;
    let mut step = 0u32;
    let cancel = inner.state().turn_cancel.clone();
    loop {
        step += 1;
        // Compaction runs before the step opens, with what the step will
        // add counted in.
        if let Some(reason) = compaction::before_step(inner, turn, &claimed, &cancel).await {
            return reason;
        }
        let request = {
            let mut state = inner.state();
            state.start_step(turn, step);
            // Pre-step barrier.
            state.log.flush();
            if let Some(reason) = log_failure(&state) {
                state.end_step(turn, step);
                return reason;
            }
            let request =
                prepare_request(inner, &mut state, turn, step, std::mem::take(&mut claimed));
            if let Some(reason) = log_failure(&state) {
                state.end_step(turn, step);
                return reason;
            }
            request
        };
        let mut request = request;
        let mut retry = 0u32;
        let mut recovered = false;
        let retry_id = new_message_id();
        let (stream, content, usage, replay_state, finish) = loop {
            let (stream, settled) = attempt(inner, request.clone(), &cancel).await;
            let Some(settled) = settled else {
                let mut state = inner.state();
                offload::emit_sized(stream.text_bytes(), || {
                    state.event(AssistantAttempt {
                        turn,
                        step,
                        stream: &stream,
                    })
                });
                state.end_step(turn, step);
                return interrupted();
            };
            let failure = match settled {
                Settled::Message {
                    content,
                    usage,
                    replay_state,
                    finish,
                } => {
                    break (stream, content, usage, replay_state, finish);
                }
                Settled::Failed(failure) => failure,
            };
            if failure.code == LlmFailureCode::ContextWindowExceeded && !recovered {
                // One compaction whatever the pressure, then the same
                // attempt over the condensed history.
                inner.state().event(AssistantAttempt {
                    turn,
                    step,
                    stream: &stream,
                });
                recovered = true;
                match compaction::recover(inner, turn, &cancel).await {
                    Ok(true) => {
                        request.messages = inner.state().history.messages();
                        continue;
                    }
                    Ok(false) => {
                        inner.state().end_step(turn, step);
                        return TurnEndReason::Error { error: failure };
                    }
                    Err(reason) => {
                        inner.state().end_step(turn, step);
                        return reason;
                    }
                }
            }
            let delay_ms = {
                let mut state = inner.state();
                offload::emit_sized(stream.text_bytes(), || {
                    state.event(AssistantAttempt {
                        turn,
                        step,
                        stream: &stream,
                    })
                });
                retry += 1;
                let Some(delay_ms) = inner.retry.delay_ms(retry, &failure) else {
                    state.end_step(turn, step);
                    return TurnEndReason::Error { error: failure };
                };
                let policy_key = inner.retry.policy_key();
                state.event(LlmRetry {
                    retry_id: retry_id.as_str(),
                    turn,
                    step,
                    provider: inner.route.provider.as_str(),
                    mode: RetryMode::Normal,
                    policy_key: policy_key.as_str(),
                    retry,
                    max_retries: inner.retry.max_retries,
                    delay_ms,
                    failure,
                });
                delay_ms
            };
            tokio::select! {
                () = tokio::time::sleep(Duration::from_secs_f64(delay_ms.get() / 1000.0)) => {}
                () = cancel.cancelled() => {
                    inner.state().end_step(turn, step);
                    return interrupted();
                }
            }
            inner.state().event(LlmRetryStarted {
                retry_id: retry_id.as_str(),
                turn,
                step,
                retry,
            });
        };
        let reply = {
            let mut state = inner.state();
            let message = AssistantMessage::from_model(
                content,
                &inner.route.provider,
                &inner.route.model,
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
            if finish == FinishReason::MaxTokens {
                state.end_step(turn, step);
                return TurnEndReason::MaxTokens;
            }
            state.pending_calls = tool_calls(&message)
                .map(|(id, _, _)| (id.to_owned(), None))
                .collect();
            message
        };
        // The calls are read from the message in the history: a large
        // argument text is not copied to run its call.
        let calls: Vec<(&str, &str, &str)> = tool_calls(&reply).collect();
        // Calls run one after another, in model order; each result is
        // committed before the next call starts. A run of consecutive
        // delegation calls records all its `tool/call`s first (the
        // official runtime runs them as one parallel batch).
        let mut n = 0;
        while n < calls.len() {
            let end = batch_end(&calls, n);
            if cancel.is_cancelled() {
                let mut state = inner.state();
                for (id, _, _) in calls.iter().skip(n) {
                    state.tool_result(turn, step, id, None, prose::interrupted_tool_result());
                }
                state.end_step(turn, step);
                return interrupted();
            }
            let (seqs, cwd) = {
                let mut state = inner.state();
                let mut seqs = Vec::with_capacity(end - n);
                for (call_id, name, arguments) in &calls[n..end] {
                    let seq = offload::emit_sized(arguments.len(), || {
                        state.event(ToolCall {
                            turn,
                            step,
                            call_id,
                            name,
                            arguments,
                        })
                    });
                    if let Some(pending) =
                        state.pending_calls.iter_mut().find(|(id, _)| id == call_id)
                    {
                        pending.1 = Some(seq);
                    }
                    seqs.push(seq);
                }
                // Barrier before a tool runs: its call is on disk first.
                state.log.flush();
                if let Some(reason) = log_failure(&state) {
                    // No tool runs whose call is not on disk: these calls and
                    // the ones after them get a failed result.
                    for (i, (id, _, _)) in calls.iter().enumerate().skip(n) {
                        let seq = seqs.get(i - n).copied();
                        state.tool_result(turn, step, id, seq, not_run(&reason));
                    }
                    state.end_step(turn, step);
                    return reason;
                }
                (seqs, state.cwd.clone())
            };
            // A batch's results are committed once all its calls ran, in
            // model order.
            let mut outputs = Vec::with_capacity(end - n);
            for (call_id, name, arguments) in &calls[n..end] {
                outputs
                    .push(tools::run(inner, call_id, name, arguments, cwd.clone(), &cancel).await);
            }
            let mut state = inner.state();
            for (((call_id, _, _), call_seq), output) in calls[n..end].iter().zip(seqs).zip(outputs)
            {
                state.tool_result(turn, step, call_id, Some(call_seq), output);
            }
            drop(state);
            n = end;
        }
        let mut state = inner.state();
        state.end_step(turn, step);
        if cancel.is_cancelled() {
            return interrupted();
        }
        if calls.is_empty() && state.next_step.is_empty() {
            return TurnEndReason::Completed;
        }
        // A workflow's child ends its turn once its structured output is
        // recorded.
        if crate::workflow::recorded(inner) {
            return TurnEndReason::Completed;
        }
        // What arrived during the step joins the next one: claimed between
        // the two steps, as the official runtime does.
        claimed = state.claim_next_step();
    }
}

/// The end of the batch of calls starting at `start`: consecutive calls of
/// the tools the official runtime runs in parallel (`subagent`,
/// `subagent_fork`), or the one call at `start`.
fn batch_end(calls: &[(&str, &str, &str)], start: usize) -> usize {
    let parallel = |name: &str| matches!(name, "subagent" | "subagent_fork");
    if !parallel(calls[start].1) {
        return start + 1;
    }
    calls[start..]
        .iter()
        .position(|(_, name, _)| !parallel(name))
        .map_or(calls.len(), |len| start + len)
}

/// The `turn/end` reason of a turn stopped because its session log cannot
/// be written (a full disk, an I/O error): kind `error` with
/// `{message: "session log of \"<id>\" cannot be written: <cause>", code:
/// "SESSION_LOG_UNWRITABLE"}`. Nothing more of the turn is done (no model
/// request, no tool) while what it did is not on disk. The reason itself is
/// held back with the events until a write succeeds.
pub(crate) fn log_failure(state: &State) -> Option<TurnEndReason> {
    state.log.unwritable().map(|err| TurnEndReason::Error {
        error: LlmFailure::new(LlmFailureCode::SessionLogUnwritable, err.to_string()),
    })
}

/// The result of a tool call that was not run because of `reason` (see
/// [`log_failure`]).
fn not_run(reason: &TurnEndReason) -> ToolOutput {
    let message = match reason {
        TurnEndReason::Error { error } => error.message.as_str(),
        _ => "",
    };
    ToolOutput::failure(format!("Error: the tool was not run: {message}"))
        .with_error(ToolErrorCode::SessionLogUnwritable)
}

/// The `tool-call` blocks of an assistant message, in model order.
fn tool_calls(message: &Message) -> impl Iterator<Item = (&str, &str, &str)> {
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

/// Appends the step's context events (system prompt, claimed messages,
/// runtime context, header, model context, title) and builds the request.
fn prepare_request(
    inner: &Inner,
    state: &mut State,
    turn: u32,
    step: u32,
    claimed: Vec<UserMessage>,
) -> ModelRequest {
    let system = inner.system_prompt.clone();
    if state.system_prompt.as_deref() != Some(system.as_str()) {
        let message = SystemMessage::prompt(&system);
        state.emit(EventDraft::surfaced(SystemMessageEvent {
            turn,
            step,
            message: &message,
        }));
        state.system_prompt = Some(system.clone());
    }
    let mut prompt: Option<(u64, String)> = None;
    for message in claimed {
        let bytes = offload::content_bytes(&message.content);
        let seq = offload::emit_sized(bytes, || state.emit(EventDraft::surfaced(&message)));
        if message.source_kind() == Some("user") {
            prompt = Some((seq, title_source(&message.content)));
        }
        state.history.push(seq, turn, Message::User(message));
    }
    let project = inner.profile.reads_project_context();
    let cwd = state.cwd.clone();
    if project && let Some(message) = state.project.instructions(&cwd) {
        surface_user(state, turn, message);
    }
    let context = runtime_context(inner, state);
    if state.runtime_context.as_deref() != Some(context.content_text()) {
        state.runtime_context = Some(context.content_text().to_owned());
        let seq = state.emit(EventDraft::surfaced(&context.message));
        state
            .history
            .push(seq, turn, Message::User(context.message));
    }
    if project
        && let Some(message) = state
            .project
            .catalog(&cwd, inner.profile.skills_home.as_deref())
    {
        surface_user(state, turn, message);
    }
    if let Some(reason) = state.header_reason.take() {
        let (config, adapter_defaults) = inner.route.header_config();
        let header = RequestHeaderBody {
            config,
            adapter_defaults,
            // The official reader refuses an empty `tools` list: omit it.
            tools: (!inner.specs.is_empty()).then_some(&inner.specs[..]),
        };
        state.event(RequestHeader { header, reason });
    }
    if !state.context_announced {
        let info = inner.route.model_info();
        state.event(RequestContext {
            provider: inner.route.provider.as_str(),
            model: inner.route.model.as_str(),
            context_window: inner.budget.window,
            system_prompt_update: info.system_prompt_update,
        });
        state.context_announced = true;
    }
    if let Some((seq, text)) = prompt
        && !state.titled
        && let title = prose::fallback_title(&text)
        && !title.is_empty()
    {
        state.event(SessionTitle {
            title,
            message_seqs: vec![seq],
            source: TitleSource::Fallback,
        });
        state.titled = true;
    }
    // Barrier before the model request.
    state.log.flush();
    ModelRequest {
        session_id: inner.id.clone(),
        route: inner.route.clone(),
        system,
        messages: state.history.messages(),
        compact: false,
        tools: inner.specs.clone(),
    }
}

/// Appends a runtime-made user message of `turn` and adds it to the
/// history.
fn surface_user(state: &mut State, turn: u32, message: UserMessage) {
    let seq = state.emit(EventDraft::surfaced(&message));
    state.history.push(seq, turn, Message::User(message));
}

/// Bytes of prompt text, after its leading whitespace, that the fallback
/// title is made from: far more than a title keeps, and a huge prompt is not
/// copied to make it.
const TITLE_SOURCE_BYTES: usize = 4096;

/// The prompt's text blocks joined by spaces, from the first non-whitespace
/// character, cut (at a character boundary) after [`TITLE_SOURCE_BYTES`].
fn title_source(content: &[Value]) -> String {
    let mut text = String::new();
    for block in text_of(content) {
        if !text.is_empty() {
            text.push(' ');
        }
        let block = if text.trim_start().is_empty() {
            text.clear();
            block.trim_start()
        } else {
            block
        };
        let room = TITLE_SOURCE_BYTES.saturating_sub(text.len());
        let mut cut = room.min(block.len());
        while !block.is_char_boundary(cut) {
            cut -= 1;
        }
        text.push_str(&block[..cut]);
        if text.len() >= TITLE_SOURCE_BYTES {
            break;
        }
    }
    text
}

struct RuntimeContext {
    message: UserMessage,
}

impl RuntimeContext {
    fn content_text(&self) -> &str {
        text_of(&self.message.content).next().unwrap_or_default()
    }
}

fn runtime_context(inner: &Inner, state: &State) -> RuntimeContext {
    let mut sections = vec![prose::working_directory_section(&state.cwd)];
    if inner.profile.kind == ProfileKind::Sdk {
        sections.push(prose::sandbox_section(
            inner.profile.permission_mode.as_str(),
            &inner.workspace,
        ));
        sections.push(prose::approval_section(inner.profile.approval.as_str()));
        if let Some(parent) = &inner.lineage.parent {
            sections.extend(prose::delegation_sections(
                inner.lineage.depth,
                crate::delegation::MAX_DEPTH,
                &parent.id,
            ));
        }
    }
    let text = prose::context_text(&sections);
    let sections = sections.iter().map(|s| (s.name, s.text.as_str()));
    RuntimeContext {
        message: UserMessage::runtime_context(vec![text_block(text)], sections),
    }
}

/// The reason of a turn stopped by `interrupt_agent`: aborted by the
/// parent.
pub(crate) fn interrupted() -> TurnEndReason {
    TurnEndReason::Aborted {
        reason: AbortReason::Parent,
    }
}

/// Streams one model attempt; returns the `stream` records and how it
/// settled, or `None` when `cancel` stopped it first (the provider's
/// stream is dropped).
pub(crate) async fn attempt(
    inner: &Inner,
    request: ModelRequest,
    cancel: &CancellationToken,
) -> (StreamRecorder, Option<Settled>) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    inner.provider.start(request, tx);
    let mut recorder = StreamRecorder::new();
    let mut accumulator = Accumulator::new();
    loop {
        let chunk = tokio::select! {
            biased;
            () = cancel.cancelled() => return (recorder, None),
            chunk = rx.recv() => chunk,
        };
        let Some(chunk) = chunk else {
            break;
        };
        // The recorder first: at a block end it drops the block's delta
        // strings, and the accumulator reads the chunk it kept.
        if let Some(chunk) = recorder.push(now_ms(), chunk) {
            accumulator.push(chunk);
        }
        if accumulator.finished() {
            break;
        }
    }
    (recorder, Some(accumulator.settle(inner.provider.name())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::text_block;

    #[test]
    fn title_source_joins_blocks_and_skips_leading_whitespace() {
        let content = vec![
            text_block("  \n"),
            serde_json::json!({"type": "image"}),
            text_block("  hello"),
            text_block("world "),
        ];
        assert_eq!(title_source(&content), "hello world ");
    }

    #[test]
    fn title_source_is_bounded_and_cut_at_a_character() {
        let huge = "é".repeat(TITLE_SOURCE_BYTES);
        let text = title_source(&[text_block(huge)]);
        assert!(text.len() <= TITLE_SOURCE_BYTES && text.len() > TITLE_SOURCE_BYTES - 2);
        assert!(text.chars().all(|c| c == 'é'));
    }
}
