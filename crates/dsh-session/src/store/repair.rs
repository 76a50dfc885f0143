//! Resume repair (§10.5): the events appended when a stored log ends inside
//! an open turn, and the `session/end-seed` marker of every resume.

use dsh_protocol::catalog::{
    Event, EventDraft, SessionEndSeed, SessionEvent, StepEnd, ToolError, ToolErrorCode, ToolResult,
    TurnEnd, TurnEndReason,
};
use dsh_protocol::message::{AssistantMessage, ToolMessage, text_block};
use serde_json::Value;
use std::collections::{HashMap, HashSet};

/// A tool call of the open step's last assistant message.
struct OpenCall {
    id: String,
    name: String,
}

/// Where the log stands at its end, built event by event.
#[derive(Default)]
pub(crate) struct Tail {
    /// The seq after the last event.
    next_seq: u64,
    /// The `time` of the last event (0 without events).
    last_time: u64,
    /// Whether the last event is a `session/end-seed`.
    ends_seeded: bool,
    /// The open turn's number.
    turn: Option<u32>,
    /// The open step: `(turn, step)`.
    step: Option<(u32, u32)>,
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

    /// Takes the next event, with its payload when that fits its type (an
    /// event whose payload does not is passed over here: resume reports it
    /// when it rebuilds the history).
    pub(crate) fn push<D>(&mut self, event: &SessionEvent<D>, typed: Option<&Event>) {
        self.next_seq = event.seq + 1;
        self.last_time = event.time;
        self.ends_seeded = matches!(typed, Some(Event::SessionEndSeed(_)));
        let Some(typed) = typed else {
            return;
        };
        match typed {
            Event::TurnStart(start) => {
                self.reset_step();
                self.turn = Some(start.turn);
            }
            Event::TurnEnd(_) => {
                self.reset_step();
                self.turn = None;
            }
            Event::StepStart(start) => {
                self.reset_step();
                self.step = Some((start.turn, start.step));
            }
            Event::StepEnd(_) => self.reset_step(),
            Event::AssistantMessage(assistant) if self.step.is_some() => {
                self.calls = tool_calls(&assistant.message);
            }
            Event::ToolCall(call) if self.step.is_some() => {
                self.recorded.insert(call.call_id.clone(), event.seq);
            }
            Event::ToolResult(result) if self.step.is_some() => {
                self.answered.insert(result.message.tool_call_id.clone());
            }
            _ => {}
        }
    }

    /// The closers of the log taken so far: see [`repair_closers`].
    pub(crate) fn closers(self, now_ms: u64) -> Vec<EventDraft<Event>> {
        let (next_seq, last_time) = (self.next_seq, self.last_time);
        let mut drafts = Vec::new();
        if let Some(turn) = self.turn {
            if let Some((step_turn, step)) = self.step {
                for call in self.calls.iter().filter(|c| !self.answered.contains(&c.id)) {
                    let seq = next_seq + drafts.len() as u64;
                    let recorded = self.recorded.get(&call.id).copied();
                    let (text, code) = match recorded {
                        Some(_) => (
                            outcome_unknown_text(call),
                            ToolErrorCode::ToolOutcomeUnknown,
                        ),
                        None => (not_started_text(call), ToolErrorCode::ToolNotStarted),
                    };
                    let mut message = ToolMessage::new(&call.id, vec![text_block(text)], true);
                    message.id = format!("interrupted-tool-result-{}-{seq}", call.id);
                    let result = Event::ToolResult(ToolResult {
                        turn: step_turn,
                        step,
                        message,
                        meta: None,
                        error: Some(ToolError::new(code)),
                    });
                    drafts.push(
                        EventDraft::surfaced(result)
                            .citing(recorded.into_iter().collect())
                            .at(last_time),
                    );
                }
                let end = StepEnd {
                    turn: step_turn,
                    step,
                };
                drafts.push(EventDraft::new(Event::StepEnd(end)).at(last_time));
            }
            let end = TurnEnd {
                turn,
                reason: TurnEndReason::Interrupted,
            };
            drafts.push(EventDraft::new(Event::TurnEnd(end)).at(last_time));
        }
        if !drafts.is_empty() || !self.ends_seeded {
            let seed = Event::SessionEndSeed(SessionEndSeed::default());
            drafts.push(EventDraft::new(seed).at(now_ms.max(last_time)));
        }
        drafts
    }
}

/// The `tool-call` blocks of an assistant message.
fn tool_calls(message: &AssistantMessage) -> Vec<OpenCall> {
    message
        .content
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
pub fn repair_closers(events: &[SessionEvent], now_ms: u64) -> Vec<EventDraft<Event>> {
    let mut tail = Tail::default();
    for event in events {
        tail.push(event, event.typed().ok().as_ref());
    }
    tail.closers(now_ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::catalog::EventPayload;
    use serde_json::json;

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

    fn kinds(drafts: &[EventDraft<Event>]) -> Vec<&str> {
        drafts.iter().map(|d| d.data.kind()).collect()
    }

    fn data(draft: &EventDraft<Event>) -> Value {
        serde_json::to_value(&draft.data).unwrap()
    }

    #[test]
    fn a_closed_log_only_gets_the_seed() {
        let events = vec![
            event(0, "turn/start", json!({"turn": 1})),
            event(
                1,
                "turn/end",
                json!({"turn": 1, "reason": {"kind": "completed"}}),
            ),
        ];
        let drafts = repair_closers(&events, 5000);
        assert_eq!(kinds(&drafts), ["session/end-seed"]);
        assert_eq!(drafts[0].time, Some(5000));
        assert_eq!(data(&drafts[0]), json!({}));
        let mut seeded = events;
        seeded.push(event(2, "session/end-seed", json!({})));
        assert!(repair_closers(&seeded, 6000).is_empty());
        assert_eq!(kinds(&repair_closers(&[], 1)), ["session/end-seed"]);
    }

    #[test]
    fn an_open_turn_without_a_step_gets_turn_end() {
        let events = vec![event(0, "turn/start", json!({"turn": 3}))];
        let drafts = repair_closers(&events, 5000);
        assert_eq!(kinds(&drafts), ["turn/end", "session/end-seed"]);
        assert_eq!(
            data(&drafts[0]),
            json!({"turn": 3, "reason": {"kind": "interrupted"}})
        );
        assert_eq!(drafts[0].time, Some(1000));
        // The seed never goes back in time.
        assert_eq!(drafts[1].time, Some(5000));
        assert_eq!(repair_closers(&events, 10)[1].time, Some(1000));
    }

    #[test]
    fn an_open_call_gets_a_result_in_the_official_key_order() {
        let call = json!({"type": "tool-call", "id": "c1", "name": "bash", "arguments": "{}"});
        let assistant =
            json!({"role": "assistant", "content": [call], "source": {"kind": "model"}, "id": "a"});
        let events = vec![
            event(0, "turn/start", json!({"turn": 1})),
            event(1, "step/start", json!({"turn": 1, "step": 1})),
            event(
                2,
                "assistant/message",
                json!({"turn": 1, "step": 1, "message": assistant, "stream": []}),
            ),
            event(
                3,
                "tool/call",
                json!({"turn": 1, "step": 1, "callId": "c1", "name": "bash", "arguments": "{}"}),
            ),
        ];
        let drafts = repair_closers(&events, 5000);
        assert_eq!(
            kinds(&drafts),
            ["tool/result", "step/end", "turn/end", "session/end-seed"]
        );
        let result = drafts[0].clone().into_event(4, 0);
        let line = serde_json::to_string(&result).unwrap();
        assert!(
            line.starts_with(r#"{"type":"tool/result","seq":4,"time":1003,"data":{"turn":1,"step":1,"message":{"role":"tool","source":{"kind":"tool","callId":"c1"},"toolCallId":"c1","content":[{"type":"text","text":"Tool call bash (c1) was interrupted"#),
            "{line}"
        );
        assert!(
            line.ends_with(r#""isError":true,"id":"interrupted-tool-result-c1-4"},"error":{"name":"ToolOutcomeUnknownError","code":"TOOL_OUTCOME_UNKNOWN"}},"sourceEventSeqs":[3],"surfaceOp":"append"}"#),
            "{line}"
        );
    }
}
