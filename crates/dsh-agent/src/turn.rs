//! One turn: steps of model attempts and tool calls.

use crate::agent::Inner;
use crate::profile::ProfileKind;
use crate::state::State;
use crate::{prose, tools};
use dsh_llm::{Accumulator, FinishReason, ModelRequest, Settled, StreamRecorder};
use dsh_session::{
    AssistantMessage, EventDraft, LogUnwritable, Message, SystemMessage, UserMessage, events,
    new_message_id, now_ms, text_block, text_of,
};
use dsh_tools::ToolOutput;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Runs the steps of turn `turn` over the `claimed` messages and returns the
/// `turn/end` reason. `turn/end` itself is appended by the caller.
pub(crate) async fn run(inner: &Inner, turn: u32, claimed: Vec<UserMessage>) -> Value {
    if claimed.is_empty() {
        return json!({"kind": "completed"});
    }
    let mut claimed = claimed;
    let mut step = 0u32;
    loop {
        step += 1;
        let request = {
            let mut state = inner.state();
            state.start_step(turn, step);
            // Pre-step barrier.
            state.log.flush();
            if let Some(reason) = log_failure(&state) {
                state.end_step(turn, step);
                return reason;
            }
            if step > 1 {
                claimed = state.claim_next_step();
            }
            let request =
                prepare_request(inner, &mut state, turn, step, std::mem::take(&mut claimed));
            if let Some(reason) = log_failure(&state) {
                state.end_step(turn, step);
                return reason;
            }
            request
        };
        let mut retry = 0u32;
        let retry_id = new_message_id();
        let (stream, content, usage, replay_state, finish) = loop {
            let (stream, settled) = attempt(inner, request.clone()).await;
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
            let delay_ms = {
                let mut state = inner.state();
                state.event(
                    events::ASSISTANT_ATTEMPT,
                    &AttemptData {
                        turn,
                        step,
                        stream: &stream,
                    },
                );
                retry += 1;
                let Some(delay_ms) = inner.retry.delay_ms(retry, &failure) else {
                    state.end_step(turn, step);
                    return json!({"kind": "error", "error": failure});
                };
                state.event(
                    events::LLM_RETRY,
                    &json!({
                        "retryId": retry_id,
                        "turn": turn,
                        "step": step,
                        "provider": inner.route.provider,
                        "mode": "normal",
                        "policyKey": inner.retry.policy_key(),
                        "retry": retry,
                        "maxRetries": inner.retry.max_retries,
                        "delayMs": delay_ms,
                        "failure": failure,
                    }),
                );
                delay_ms
            };
            tokio::time::sleep(Duration::from_secs_f64(delay_ms.get() / 1000.0)).await;
            inner.state().event(
                events::LLM_RETRY_STARTED,
                &json!({"retryId": retry_id, "turn": turn, "step": step, "retry": retry}),
            );
        };
        let calls = {
            let mut state = inner.state();
            let message = AssistantMessage {
                role: Default::default(),
                content,
                source: json!({
                    "kind": "model",
                    "provider": inner.route.provider,
                    "model": inner.route.model,
                    "replayState": replay_state,
                }),
                id: new_message_id(),
            };
            let data = AssistantData {
                turn,
                step,
                message: &message,
                usage: usage.as_ref(),
                stream: &stream,
            };
            state.emit(EventDraft::surfaced(events::ASSISTANT_MESSAGE, &data));
            drop(stream);
            let calls: Vec<(String, String, String)> =
                message.content.iter().filter_map(tool_call).collect();
            state.history.push(Arc::new(Message::Assistant(message)));
            if finish == FinishReason::MaxTokens {
                state.end_step(turn, step);
                return json!({"kind": "max-tokens"});
            }
            state.pending_calls = calls.iter().map(|(id, _, _)| (id.clone(), None)).collect();
            calls
        };
        // Calls run one after another, in model order; each result is
        // committed before the next call starts.
        for (n, (call_id, name, arguments)) in calls.iter().enumerate() {
            let (call_seq, cwd) = {
                let mut state = inner.state();
                let seq = state.event(
                    events::TOOL_CALL,
                    &json!({"turn": turn, "step": step, "callId": call_id, "name": name, "arguments": arguments}),
                );
                if let Some(pending) = state.pending_calls.iter_mut().find(|(id, _)| id == call_id)
                {
                    pending.1 = Some(seq);
                }
                // Barrier before a tool runs: its call is on disk first.
                state.log.flush();
                if let Some(reason) = log_failure(&state) {
                    // No tool runs whose call is not on disk: this call and
                    // the ones after it get a failed result.
                    for (i, (id, _, _)) in calls.iter().enumerate().skip(n) {
                        let seq = (i == n).then_some(seq);
                        state.tool_result(turn, step, id, seq, not_run(&reason));
                    }
                    state.end_step(turn, step);
                    return reason;
                }
                (seq, state.cwd.clone())
            };
            let output = tools::run(inner, call_id, name, arguments, cwd).await;
            inner
                .state()
                .tool_result(turn, step, call_id, Some(call_seq), output);
        }
        let mut state = inner.state();
        state.end_step(turn, step);
        if calls.is_empty() && state.next_step.is_empty() {
            return json!({"kind": "completed"});
        }
    }
}

/// `assistant/message` data: `{turn, step, message, usage?, stream}`,
/// serialised from borrows (the reply is not copied into a `Value`).
#[derive(serde::Serialize)]
struct AssistantData<'a> {
    turn: u32,
    step: u32,
    message: &'a AssistantMessage,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<&'a dsh_llm::Usage>,
    stream: &'a StreamRecorder,
}

/// `assistant/attempt` data: `{turn, step, stream}`.
#[derive(serde::Serialize)]
struct AttemptData<'a> {
    turn: u32,
    step: u32,
    stream: &'a StreamRecorder,
}

/// The `turn/end` reason of a turn stopped because its session log cannot
/// be written (a full disk, an I/O error): kind `error` with
/// `{message: "session log of \"<id>\" cannot be written: <cause>", code:
/// "SESSION_LOG_UNWRITABLE"}`. Nothing more of the turn is done (no model
/// request, no tool) while what it did is not on disk. The reason itself is
/// held back with the events until a write succeeds.
fn log_failure(state: &State) -> Option<Value> {
    state.log.unwritable().map(|err| {
        json!({
            "kind": "error",
            "error": {"message": err.to_string(), "code": LogUnwritable::CODE},
        })
    })
}

/// The result of a tool call that was not run because of `reason` (see
/// [`log_failure`]).
fn not_run(reason: &Value) -> ToolOutput {
    let message = reason
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    ToolOutput::failure(format!("Error: the tool was not run: {message}"))
        .with_error("SessionLogError", LogUnwritable::CODE)
}

/// `(id, name, arguments)` of a `tool-call` block.
fn tool_call(block: &Value) -> Option<(String, String, String)> {
    if block.get("type")?.as_str()? != "tool-call" {
        return None;
    }
    Some((
        block.get("id")?.as_str()?.to_owned(),
        block.get("name")?.as_str()?.to_owned(),
        block
            .get("arguments")
            .and_then(Value::as_str)
            .unwrap_or("{}")
            .to_owned(),
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
        state.emit(EventDraft::surfaced(
            events::SYSTEM_MESSAGE,
            &json!({"turn": turn, "step": step, "message": message}),
        ));
        state.system_prompt = Some(system.clone());
    }
    let mut prompt: Option<(u64, String)> = None;
    for message in claimed {
        let seq = state.emit(EventDraft::surfaced(events::USER_MESSAGE, &message));
        if message.source_kind() == Some("user") {
            prompt = Some((seq, title_source(&message.content)));
        }
        state.history.push(Arc::new(Message::User(message)));
    }
    let context = runtime_context(inner, state);
    if state.runtime_context.as_deref() != Some(context.content_text()) {
        state.runtime_context = Some(context.content_text().to_owned());
        state.emit(EventDraft::surfaced(events::USER_MESSAGE, &context.message));
        state.history.push(Arc::new(Message::User(context.message)));
    }
    if let Some(reason) = state.header_reason.take() {
        let (config, defaults) = inner.route.header_config();
        let mut header = Map::new();
        header.insert("config".into(), config);
        if let Some(defaults) = defaults {
            header.insert("adapterDefaults".into(), defaults);
        }
        // The official reader refuses an empty `tools` list: omit it.
        if !inner.specs.is_empty() {
            header.insert("tools".into(), json!(*inner.specs));
        }
        state.event(
            events::REQUEST_HEADER,
            &json!({"header": header, "reason": reason}),
        );
    }
    if !state.context_announced {
        let info = inner.route.model_info();
        let mut data = Map::new();
        data.insert("provider".into(), json!(inner.route.provider));
        data.insert("model".into(), json!(inner.route.model));
        data.insert("contextWindow".into(), json!(info.context_window));
        if let Some(update) = info.system_prompt_update {
            data.insert("systemPromptUpdate".into(), json!(update));
        }
        state.event(events::REQUEST_CONTEXT, &data);
        state.context_announced = true;
    }
    if let Some((seq, text)) = prompt
        && !state.titled
        && let title = prose::fallback_title(&text)
        && !title.is_empty()
    {
        state.event(
            events::SESSION_TITLE,
            &json!({"title": title, "messageSeqs": [seq], "source": {"kind": "fallback"}}),
        );
        state.titled = true;
    }
    // Barrier before the model request.
    state.log.flush();
    ModelRequest {
        session_id: inner.id.clone(),
        route: inner.route.clone(),
        system,
        messages: state.history.clone(),
        tools: inner.specs.clone(),
    }
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
    }
    let text = prose::context_text(&sections);
    let sections: Vec<Value> = sections
        .iter()
        .map(|s| json!({"name": s.name, "text": s.text}))
        .collect();
    let source = json!({"kind": "runtime-context", "form": "snapshot", "sections": sections});
    RuntimeContext {
        message: UserMessage::new(vec![text_block(text)], source),
    }
}

/// Streams one model attempt; returns the `stream` records and how it settled.
async fn attempt(inner: &Inner, request: ModelRequest) -> (StreamRecorder, Settled) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    inner.provider.start(request, tx);
    let mut recorder = StreamRecorder::new();
    let mut accumulator = Accumulator::new();
    while let Some(chunk) = rx.recv().await {
        accumulator.push(&chunk);
        recorder.push(now_ms(), chunk);
        if accumulator.finished() {
            break;
        }
    }
    (recorder, accumulator.settle(inner.provider.name()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::text_block;

    #[test]
    fn title_source_joins_blocks_and_skips_leading_whitespace() {
        let content = vec![
            text_block("  \n"),
            json!({"type": "image"}),
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
