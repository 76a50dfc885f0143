//! Resume repair (§10.5): the events appended when a stored log ends inside
//! an open turn, and the `session/end-seed` marker of every resume.

use crate::events::{
    ASSISTANT_MESSAGE, STEP_END, STEP_START, TOOL_CALL, TOOL_RESULT, TURN_END, TURN_START,
};
use crate::message::{ToolMessage, text_block};
use dsh_protocol::event::SessionEvent;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};

/// `session/end-seed`: appended by every resume, disk only.
pub const SESSION_END_SEED: &str = "session/end-seed";

/// An event to append, owned, before it has a seq.
#[derive(Debug, Clone, PartialEq)]
pub struct EventDraftOwned {
    /// Event type.
    pub kind: String,
    /// The `time` it must carry (epoch ms).
    pub time: u64,
    /// Payload.
    pub data: Value,
    /// Cited seqs.
    pub source_event_seqs: Option<Vec<u64>>,
    /// `surfaceOp: "append"` (model-visible messages).
    pub surface_append: bool,
}

impl EventDraftOwned {
    fn new(kind: &str, time: u64, data: Value) -> Self {
        Self {
            kind: kind.to_owned(),
            time,
            data,
            source_event_seqs: None,
            surface_append: false,
        }
    }

    /// The event with `seq` (official key order when serialised).
    pub fn into_event(self, seq: u64) -> SessionEvent {
        SessionEvent {
            kind: self.kind,
            seq,
            time: self.time,
            data: self.data,
            source_event_seqs: self.source_event_seqs,
            surface_op: self.surface_append.then(|| Value::from("append")),
            ignorable: None,
        }
    }
}

/// A tool call of the open step's last assistant message.
struct OpenCall {
    id: String,
    name: String,
}

/// Where the log stands at its end.
#[derive(Default)]
struct Tail {
    /// The open turn's number.
    turn: Option<u64>,
    /// The open step: `(turn, step)`.
    step: Option<(u64, u64)>,
    /// Tool calls of the open step's last `assistant/message`, model order.
    calls: Vec<OpenCall>,
    /// `tool/call` seq by call id, in the open step.
    recorded: HashMap<String, u64>,
    /// Call ids answered by a `tool/result` in the open step.
    answered: HashSet<String>,
}

impl Tail {
    fn reset_step(&mut self) {
        self.step = None;
        self.calls.clear();
        self.recorded.clear();
        self.answered.clear();
    }

    fn scan(events: &[SessionEvent]) -> Self {
        let mut tail = Self::default();
        for event in events {
            let data = &event.data;
            match event.kind.as_str() {
                TURN_START => {
                    tail.reset_step();
                    tail.turn = Some(uint(data, "turn").unwrap_or(0));
                }
                TURN_END => {
                    tail.reset_step();
                    tail.turn = None;
                }
                STEP_START => {
                    tail.reset_step();
                    let turn = uint(data, "turn").or(tail.turn).unwrap_or(0);
                    tail.step = Some((turn, uint(data, "step").unwrap_or(0)));
                }
                STEP_END => tail.reset_step(),
                ASSISTANT_MESSAGE if tail.step.is_some() => {
                    tail.calls = tool_calls(data);
                }
                TOOL_CALL if tail.step.is_some() => {
                    if let Some(id) = data.get("callId").and_then(Value::as_str) {
                        tail.recorded.insert(id.to_owned(), event.seq);
                    }
                }
                TOOL_RESULT if tail.step.is_some() => {
                    let message = data.get("message");
                    let id = message
                        .and_then(|m| m.get("toolCallId"))
                        .or_else(|| message.and_then(|m| m.get("source")?.get("callId")))
                        .and_then(Value::as_str);
                    if let Some(id) = id {
                        tail.answered.insert(id.to_owned());
                    }
                }
                _ => {}
            }
        }
        tail
    }
}

fn uint(data: &Value, key: &str) -> Option<u64> {
    data.get(key).and_then(Value::as_u64)
}

/// The `tool-call` blocks of an `assistant/message`'s message.
fn tool_calls(data: &Value) -> Vec<OpenCall> {
    let Some(content) = data
        .get("message")
        .and_then(|m| m.get("content"))
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    content
        .iter()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("tool-call"))
        .filter_map(|block| {
            Some(OpenCall {
                id: block.get("id")?.as_str()?.to_owned(),
                name: block
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
            })
        })
        .collect()
}

/// Our wording of an interrupted call whose outcome is unknown.
fn outcome_unknown_text(call: &OpenCall) -> String {
    format!(
        "Tool call {} ({}) was interrupted: the session stopped after the call was dispatched \
         and before its result was recorded. Its outcome is unknown; it may or may not have \
         taken effect. Retrying is not known to be safe: check the current state first, and \
         retry only if repeating the action is harmless.",
        call.name, call.id
    )
}

/// Our wording of an interrupted call that never ran.
fn not_started_text(call: &OpenCall) -> String {
    format!(
        "Tool call {} ({}) was not started: the session stopped before the call was \
         dispatched, so it had no effect. It is safe to retry.",
        call.name, call.id
    )
}

/// What to append to a stored log when resuming it (§10.5), in order, each
/// with the `time` it must carry; the caller gives them the seqs that follow
/// the log (`events.len()`, `+1`, …).
///
/// When the log ends inside an open turn:
///
/// 1. inside an open step, for each tool call of the step's last
///    `assistant/message` (model order) without a `tool/result` in that
///    step: an error `tool/result` (`data: {turn, step, message, error}`,
///    `surfaceOp: "append"`) whose message id is
///    `interrupted-tool-result-<callId>-<seq>`; with
///    `error: {name: "ToolOutcomeUnknownError", code: "TOOL_OUTCOME_UNKNOWN"}`
///    and `sourceEventSeqs: [<tool/call seq>]` if the call's `tool/call` was
///    recorded, else `error: {name: "ToolNotStartedError", code:
///    "TOOL_NOT_STARTED"}` and no `sourceEventSeqs`; the text says whether a
///    retry is safe;
/// 2. `step/end {turn, step}` if a step is open;
/// 3. `turn/end {turn, reason: {kind: "interrupted"}}`.
///
/// These reuse the `time` of the last stored event. Then
/// `session/end-seed {}` at `now_ms` (never earlier than the last event),
/// unless the log already ends with one and nothing was repaired.
pub fn repair_closers(events: &[SessionEvent], now_ms: u64) -> Vec<EventDraftOwned> {
    let next_seq = events.last().map_or(0, |event| event.seq + 1);
    let last_time = events.last().map_or(0, |event| event.time);
    let tail = Tail::scan(events);
    let mut drafts = Vec::new();
    if let Some(turn) = tail.turn {
        if let Some((step_turn, step)) = tail.step {
            for call in tail.calls.iter().filter(|c| !tail.answered.contains(&c.id)) {
                let seq = next_seq + drafts.len() as u64;
                let recorded = tail.recorded.get(&call.id).copied();
                let (text, error) = match recorded {
                    Some(_) => (
                        outcome_unknown_text(call),
                        json!({"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}),
                    ),
                    None => (
                        not_started_text(call),
                        json!({"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}),
                    ),
                };
                let mut message = ToolMessage::new(&call.id, vec![text_block(text)], true);
                message.id = format!("interrupted-tool-result-{}-{seq}", call.id);
                let data = json!({
                    "turn": step_turn,
                    "step": step,
                    "message": message,
                    "error": error,
                });
                drafts.push(EventDraftOwned {
                    source_event_seqs: recorded.map(|s| vec![s]),
                    surface_append: true,
                    ..EventDraftOwned::new(TOOL_RESULT, last_time, data)
                });
            }
            drafts.push(EventDraftOwned::new(
                STEP_END,
                last_time,
                json!({"turn": step_turn, "step": step}),
            ));
        }
        drafts.push(EventDraftOwned::new(
            TURN_END,
            last_time,
            json!({"turn": turn, "reason": {"kind": "interrupted"}}),
        ));
    }
    let ends_seeded = events
        .last()
        .is_some_and(|event| event.kind == SESSION_END_SEED);
    if !drafts.is_empty() || !ends_seeded {
        drafts.push(EventDraftOwned::new(
            SESSION_END_SEED,
            now_ms.max(last_time),
            json!({}),
        ));
    }
    drafts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(seq: u64, kind: &str, data: Value) -> SessionEvent {
        SessionEvent {
            kind: kind.to_owned(),
            seq,
            time: 1000 + seq,
            data,
            source_event_seqs: None,
            surface_op: None,
            ignorable: None,
        }
    }

    fn kinds(drafts: &[EventDraftOwned]) -> Vec<&str> {
        drafts.iter().map(|d| d.kind.as_str()).collect()
    }

    #[test]
    fn a_closed_log_only_gets_the_seed() {
        let events = vec![
            event(0, TURN_START, json!({"turn": 1})),
            event(
                1,
                TURN_END,
                json!({"turn": 1, "reason": {"kind": "completed"}}),
            ),
        ];
        let drafts = repair_closers(&events, 5000);
        assert_eq!(kinds(&drafts), [SESSION_END_SEED]);
        assert_eq!(drafts[0].time, 5000);
        assert_eq!(drafts[0].data, json!({}));
        let mut seeded = events;
        seeded.push(event(2, SESSION_END_SEED, json!({})));
        assert!(repair_closers(&seeded, 6000).is_empty());
        assert_eq!(kinds(&repair_closers(&[], 1)), [SESSION_END_SEED]);
    }

    #[test]
    fn an_open_turn_without_a_step_gets_turn_end() {
        let events = vec![event(0, TURN_START, json!({"turn": 3}))];
        let drafts = repair_closers(&events, 5000);
        assert_eq!(kinds(&drafts), [TURN_END, SESSION_END_SEED]);
        assert_eq!(
            drafts[0].data,
            json!({"turn": 3, "reason": {"kind": "interrupted"}})
        );
        assert_eq!(drafts[0].time, 1000);
        // The seed never goes back in time.
        assert_eq!(drafts[1].time, 5000);
        assert_eq!(repair_closers(&events, 10)[1].time, 1000);
    }

    #[test]
    fn into_event_uses_the_official_key_order() {
        let draft = EventDraftOwned {
            source_event_seqs: Some(vec![4]),
            surface_append: true,
            ..EventDraftOwned::new(TOOL_RESULT, 7, json!({"turn": 1}))
        };
        let line = serde_json::to_string(&draft.into_event(9)).unwrap_or_default();
        assert_eq!(
            line,
            r#"{"type":"tool/result","seq":9,"time":7,"data":{"turn":1},"sourceEventSeqs":[4],"surfaceOp":"append"}"#
        );
    }
}
