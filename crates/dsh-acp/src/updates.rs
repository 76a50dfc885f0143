//! The SDK server's notifications of one session as ACP session updates.
//!
//! Live, text and reasoning come from `session.delta` as the model writes
//! them; a block that had no delta (a provider that does not stream) is
//! sent whole from its `assistant/message` event, so the chunks of a block
//! joined are always its committed text. A `bash` call's output streams
//! into its `tool_call_update` (the last [`OUTPUT_TAIL_BYTES`] of it). On
//! `session/load` the same translation replays the stored events, with the
//! user's prompts as `user_message_chunk`s.

use crate::tools;
use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::SessionNotification;
use dsh_protocol::catalog::{ApprovalOutcome, Event, SessionEvent, TodoStatus, TurnEndReason};
use dsh_protocol::methods::{DeltaKind, SessionDeltaParams};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// How much of a running command's output an update carries (its end).
pub const OUTPUT_TAIL_BYTES: usize = 16 << 10;

/// The context window assumed before the session reports its own.
const DEFAULT_CONTEXT_WINDOW: u64 = 1_000_000;

/// A block of a step's reply: (turn, step, index).
type BlockKey = (u32, u32, u32);

/// The tool calls of a session already shown with a `tool_call` update:
/// the translator and the permission requests share it, so a call asked
/// about before its event arrives is shown once, then updated.
pub type Announced = Arc<Mutex<HashSet<String>>>;

/// Translates one session's notifications into ACP `update` objects.
pub struct Translator {
    cwd: PathBuf,
    context_window: u64,
    /// Whether stored user prompts are sent (`session/load`).
    replay: bool,
    /// The arguments of calls whose result has not come.
    calls: HashMap<String, (String, Value)>,
    /// Blocks that streamed as deltas (text and reasoning).
    streamed: HashSet<(BlockKey, bool)>,
    /// Running commands' output so far (its tail).
    outputs: HashMap<String, String>,
    /// How the last turn ended.
    last_end: Option<TurnEndReason>,
    /// The call each pending approval is about.
    approvals: HashMap<String, String>,
    /// Calls already shown.
    announced: Announced,
    /// The message id the chunks of a streaming step carry, (turn, step) →
    /// id: made up at its first delta (the stored message's id is only
    /// known once the step ends) and kept by its unstreamed blocks.
    step_ids: HashMap<(u32, u32), String>,
}

impl Translator {
    /// A translator for live updates of a session in `cwd`.
    pub fn live(cwd: PathBuf, announced: Announced) -> Self {
        Self::new(cwd, false, announced)
    }

    /// A translator replaying a stored session in `cwd`.
    pub fn replay(cwd: PathBuf) -> Self {
        Self::new(cwd, true, Announced::default())
    }

    fn new(cwd: PathBuf, replay: bool, announced: Announced) -> Self {
        Self {
            cwd,
            context_window: DEFAULT_CONTEXT_WINDOW,
            replay,
            calls: HashMap::new(),
            streamed: HashSet::new(),
            outputs: HashMap::new(),
            last_end: None,
            approvals: HashMap::new(),
            announced,
            step_ids: HashMap::new(),
        }
    }

    /// How the last turn seen ended, taken.
    pub fn take_end(&mut self) -> Option<TurnEndReason> {
        self.last_end.take()
    }

    /// The update a delta makes, if any.
    pub fn delta(&mut self, delta: &SessionDeltaParams) -> Option<Value> {
        let key = (delta.turn, delta.step, delta.index);
        let mut step_id = || {
            self.step_ids
                .entry((delta.turn, delta.step))
                .or_insert_with(|| uuid::Uuid::new_v4().to_string())
                .clone()
        };
        match delta.kind {
            DeltaKind::Text => {
                let id = step_id();
                self.streamed.insert((key, true));
                Some(chunk("agent_message_chunk", &delta.delta, Some(&id)))
            }
            DeltaKind::Reasoning => {
                let id = step_id();
                self.streamed.insert((key, false));
                Some(chunk("agent_thought_chunk", &delta.delta, Some(&id)))
            }
            DeltaKind::ToolOutput => {
                let call = delta.call_id.as_deref()?;
                let output = self.outputs.entry(call.to_owned()).or_default();
                output.push_str(&delta.delta);
                keep_tail(output, OUTPUT_TAIL_BYTES);
                Some(json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call,
                    "status": "in_progress",
                    "content": [text_content(output)],
                }))
            }
            DeltaKind::ToolArguments => None,
        }
    }

    /// The updates an event makes.
    pub fn event(&mut self, event: &SessionEvent) -> Vec<Value> {
        let Ok(typed) = event.typed() else {
            return Vec::new();
        };
        match typed {
            Event::UserMessage(message) if self.replay && message.source["kind"] == "user" => {
                message
                    .content
                    .iter()
                    .filter(|block| block["type"] == "text")
                    .map(|block| {
                        chunk(
                            "user_message_chunk",
                            block["text"].as_str().unwrap_or_default(),
                            Some(&message.id),
                        )
                    })
                    .collect()
            }
            Event::AssistantMessage(reply) => {
                let mut out = Vec::new();
                let id = self
                    .step_ids
                    .remove(&(reply.turn, reply.step))
                    .unwrap_or_else(|| reply.message.id.clone());
                for (index, block) in reply.message.content.iter().enumerate() {
                    let key = (
                        reply.turn,
                        reply.step,
                        u32::try_from(index).unwrap_or(u32::MAX),
                    );
                    let text = block["text"].as_str().unwrap_or_default();
                    let (update, is_text) = match block["type"].as_str() {
                        Some("text") => ("agent_message_chunk", true),
                        Some("reasoning") => ("agent_thought_chunk", false),
                        _ => continue,
                    };
                    if !text.is_empty() && !self.streamed.remove(&(key, is_text)) {
                        out.push(chunk(update, text, Some(&id)));
                    }
                }
                if let Some(usage) = &reply.usage {
                    out.push(json!({
                        "sessionUpdate": "usage_update",
                        "used": usage.input_tokens + usage.output_tokens,
                        "size": self.context_window,
                    }));
                }
                out
            }
            Event::RequestContext(context) => {
                self.context_window = context.context_window;
                Vec::new()
            }
            Event::ToolCall(call) => {
                let args = serde_json::from_str::<Value>(&call.arguments)
                    .unwrap_or_else(|_| Value::String(call.arguments.clone()));
                // A call asking for a wider sandbox waits for its approval
                // (`pending`) unless a rule or the mode decides at once; the
                // decision, or its result, moves it on.
                let escalates = args["sandbox_permissions"]
                    .as_str()
                    .is_some_and(|m| !m.is_empty());
                let mut update = json!({
                    "sessionUpdate": "tool_call",
                    "toolCallId": call.call_id,
                    "title": tools::title(&call.name, &args),
                    "kind": tools::kind(&call.name),
                    "status": if escalates { "pending" } else { "in_progress" },
                    "rawInput": args,
                });
                let locations = tools::locations(&call.name, &args, &self.cwd);
                if !locations.is_empty() {
                    update["locations"] = Value::Array(locations);
                }
                // Shown already by its permission request: updated instead.
                let first = self
                    .announced
                    .lock()
                    .map_or(true, |mut set| set.insert(call.call_id.clone()));
                if !first {
                    update["sessionUpdate"] = json!("tool_call_update");
                }
                self.calls.insert(call.call_id, (call.name, args));
                vec![update]
            }
            Event::ToolResult(result) => {
                let message = result.message;
                let call = self.calls.remove(&message.tool_call_id);
                self.outputs.remove(&message.tool_call_id);
                if let Ok(mut announced) = self.announced.lock() {
                    announced.remove(&message.tool_call_id);
                }
                let mut content: Vec<Value> = message
                    .content
                    .iter()
                    .filter(|block| block["type"] == "text")
                    .map(|block| text_content(block["text"].as_str().unwrap_or_default()))
                    .collect();
                let diffs = result
                    .meta
                    .as_ref()
                    .and_then(|meta| meta.get("diffs"))
                    .and_then(Value::as_array);
                for diff in diffs.into_iter().flatten() {
                    let path = diff["path"]
                        .as_str()
                        .map(|p| tools::absolute(p, &self.cwd))
                        .or_else(|| {
                            call.as_ref()
                                .and_then(|(_, args)| args["file_path"].as_str())
                                .map(|p| tools::absolute(p, &self.cwd))
                        });
                    if let Some(path) = path {
                        content.push(json!({
                            "type": "diff",
                            "path": path,
                            "oldText": diff["oldText"],
                            "newText": diff["newText"].as_str().unwrap_or_default(),
                        }));
                    }
                }
                // A file `write` created has no hunks: all of it is new.
                if diffs.is_none_or(Vec::is_empty)
                    && !message.is_error
                    && let Some(("write", args)) =
                        call.as_ref().map(|(name, args)| (name.as_str(), args))
                    && let (Some(path), Some(text)) =
                        (args["file_path"].as_str(), args["content"].as_str())
                {
                    content.push(json!({
                        "type": "diff",
                        "path": tools::absolute(path, &self.cwd),
                        "oldText": null,
                        "newText": text,
                    }));
                }
                let status = if message.is_error {
                    "failed"
                } else {
                    "completed"
                };
                vec![json!({
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": message.tool_call_id,
                    "status": status,
                    "content": content,
                })]
            }
            Event::TodoWrite(todos) => {
                let entries: Vec<Value> = todos
                    .todos
                    .iter()
                    .map(|todo| {
                        let status = match todo.status {
                            TodoStatus::Pending => "pending",
                            TodoStatus::InProgress => "in_progress",
                            TodoStatus::Completed => "completed",
                        };
                        json!({"content": todo.content, "priority": "medium", "status": status})
                    })
                    .collect();
                vec![json!({"sessionUpdate": "plan", "entries": entries})]
            }
            Event::SessionTitle(title) => {
                vec![json!({"sessionUpdate": "session_info_update", "title": title.title})]
            }
            // The permission request shows a call waiting for an approval
            // as `pending`; allowed, it runs.
            Event::ApprovalAsked(asked) => {
                self.approvals.insert(asked.id, asked.call_id);
                Vec::new()
            }
            Event::ApprovalDecided(decided) => match self.approvals.remove(&decided.id) {
                Some(call) if decided.outcome == ApprovalOutcome::Approved => {
                    vec![status_update(&call, "in_progress")]
                }
                _ => Vec::new(),
            },
            Event::TurnEnd(end) => {
                self.last_end = Some(end.reason);
                Vec::new()
            }
            _ => Vec::new(),
        }
    }
}

/// A tool call's new status.
pub fn status_update(call: &str, status: &str) -> Value {
    json!({"sessionUpdate": "tool_call_update", "toolCallId": call, "status": status})
}

/// Sends `update` as a `session/update` of session `id`.
pub fn send(connection: &ConnectionTo<Client>, id: &str, update: Value) {
    match serde_json::from_value::<SessionNotification>(json!({"sessionId": id, "update": update}))
    {
        Ok(notification) => {
            if let Err(err) = connection.send_notification(notification) {
                tracing::debug!("a session update was not sent: {err:?}");
            }
        }
        Err(err) => tracing::warn!("a session update does not fit the ACP schema: {err}"),
    }
}

/// A message or thought chunk of text.
fn chunk(update: &str, text: &str, message_id: Option<&str>) -> Value {
    let mut chunk = json!({"sessionUpdate": update, "content": {"type": "text", "text": text}});
    if let Some(id) = message_id {
        chunk["messageId"] = json!(id);
    }
    chunk
}

/// A tool call content item holding text.
fn text_content(text: &str) -> Value {
    json!({"type": "content", "content": {"type": "text", "text": text}})
}

/// Drops the start of `text` so that at most `max` bytes remain (cut at a
/// character boundary).
fn keep_tail(text: &mut String, max: usize) {
    if text.len() <= max {
        return;
    }
    let mut cut = text.len() - max;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    text.drain(..cut);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(kind: &str, data: Value) -> SessionEvent {
        serde_json::from_value(json!({"type": kind, "seq": 1, "time": 1, "data": data})).unwrap()
    }

    fn delta(kind: &str, index: u32, text: &str) -> SessionDeltaParams {
        serde_json::from_value(json!({"sessionId": "s", "turn": 1, "step": 1, "kind": kind,
            "index": index, "callId": "c1", "delta": text}))
        .unwrap()
    }

    fn reply(content: Value) -> SessionEvent {
        event(
            "assistant/message",
            json!({"turn": 1, "step": 1, "stream": {},
            "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
            "message": {"role": "assistant", "content": content, "source": {}, "id": "m1"}}),
        )
    }

    #[test]
    fn streamed_blocks_are_not_sent_twice_and_unstreamed_ones_are_sent_whole() {
        let mut t = Translator::live("/ws".into(), Announced::default());
        let first = t.delta(&delta("text", 1, "Hel")).unwrap();
        assert_eq!(first["content"]["text"], "Hel");
        let updates = t.event(&reply(json!([
            {"type": "reasoning", "text": "think"},
            {"type": "text", "text": "Hello"}
        ])));
        let kinds: Vec<&str> = updates
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["agent_thought_chunk", "usage_update"]);
        assert_eq!(updates[0]["content"]["text"], "think");
        // One id for the step's chunks, streamed or not.
        assert_eq!(updates[0]["messageId"], first["messageId"]);
        assert_eq!(updates[1]["used"], 15);
    }

    #[test]
    fn tool_calls_carry_kind_locations_output_and_diffs() {
        let mut t = Translator::live("/ws".into(), Announced::default());
        let call = t.event(&event(
            "tool/call",
            json!({"turn": 1, "step": 1, "callId": "c1", "name": "edit",
            "arguments": "{\"file_path\":\"a.txt\",\"old_string\":\"x\",\"new_string\":\"y\"}"}),
        ));
        assert_eq!(call[0]["kind"], "edit");
        assert_eq!(call[0]["locations"][0]["path"], "/ws/a.txt");
        let output = t.delta(&delta("tool-output", 1, "line\n")).unwrap();
        assert_eq!(output["content"][0]["content"]["text"], "line\n");
        let done = t.event(&event("tool/result", json!({"turn": 1, "step": 1,
            "message": {"role": "tool", "source": {}, "toolCallId": "c1", "isError": false, "id": "t1",
                        "content": [{"type": "text", "text": "edited"}]},
            "meta": {"diffs": [{"path": "a.txt", "oldText": "x", "newText": "y"}]}})));
        assert_eq!(done[0]["status"], "completed");
        assert_eq!(
            done[0]["content"][1],
            json!({"type": "diff", "path": "/ws/a.txt", "oldText": "x", "newText": "y"})
        );
    }

    #[test]
    fn output_keeps_its_tail_at_a_char_boundary() {
        let mut text = "é".repeat(10);
        keep_tail(&mut text, 5);
        assert_eq!(text, "éé");
    }

    #[test]
    fn replay_sends_user_prompts_and_plans() {
        let mut t = Translator::replay("/ws".into());
        let user = t.event(&event(
            "user/message",
            json!({"role": "user", "id": "u1",
            "source": {"kind": "user"}, "content": [{"type": "text", "text": "hi"}]}),
        ));
        assert_eq!(user[0]["sessionUpdate"], "user_message_chunk");
        let context = t.event(&event(
            "user/message",
            json!({"role": "user", "id": "u2",
            "source": {"kind": "runtime-context"}, "content": [{"type": "text", "text": "ctx"}]}),
        ));
        assert!(context.is_empty());
        let plan = t.event(&event(
            "todo/write",
            json!({"todos": [{"content": "a", "status": "in_progress"}]}),
        ));
        assert_eq!(plan[0]["entries"][0]["status"], "in_progress");
    }
}
