//! Resume's pass over a stored log, one event at a time: [`ResumeScan`].

use super::error::StoreError;
use super::facts::{ResumeFacts, typed};
use super::repair::Tail;
use dsh_protocol::catalog::{AssistantMessageEvent, Event, EventDraft, SessionEvent};
use dsh_protocol::message::AssistantMessage;
use serde::de::IgnoredAny;
use serde_json::Value;
use serde_json::value::RawValue;

/// The [`ResumeFacts`] and the [`repair_closers`](super::repair_closers)
/// of a log, built as its events go by (from
/// [`SessionReader::read_each`](super::SessionReader::read_each), say), so
/// that no list of every event is kept: each event is typed once and only
/// what resume restores (the history, the inbox, the open step's calls)
/// stays.
///
/// ```
/// use dsh_session::store::ResumeScan;
/// # use dsh_protocol::catalog::SessionEvent;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let events: Vec<SessionEvent> = Vec::new();
/// let mut scan = ResumeScan::new();
/// for event in &events {
///     scan.push(event);
/// }
/// let (facts, closers) = scan.finish(1_796_008_700_000);
/// assert_eq!(facts?.last_turn, 0);
/// assert_eq!(closers.len(), 1); // the `session/end-seed`
/// # Ok(())
/// # }
/// ```
#[derive(Default)]
pub struct ResumeScan {
    tail: Tail,
    facts: ResumeFacts,
    /// The first event the facts could not take; later events only move
    /// the tail.
    error: Option<StoreError>,
}

impl ResumeScan {
    /// A scan before the first event.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the next event of the log (seq order). An event that does not
    /// fit its type is not an error here: the facts stop at it and
    /// [`finish`](Self::finish) reports it (as [`resume_facts`] would),
    /// while the repair passes over it, so that resume can still report
    /// what comes first (a corrupt line further on, the workspace check)
    /// and append the closers before failing, as it does over a list.
    ///
    /// [`resume_facts`]: super::resume_facts
    pub fn push(&mut self, event: &SessionEvent) {
        let typed = typed(event);
        self.tail.push(event, typed.as_ref().ok());
        if self.error.is_some() {
            return;
        }
        if let Err(err) = typed.and_then(|typed| self.facts.apply(event, typed)) {
            self.error = Some(err);
        }
    }

    /// [`push`](Self::push) of an event read with its payload as JSON
    /// text ([`SessionReader::read_each`](super::SessionReader::read_each)
    /// into `SessionEvent<Box<RawValue>>`): the payload is typed straight
    /// from the text, and an `assistant/message`'s `stream` (most of a log's
    /// bytes) is checked but never built, since resume does not restore it.
    pub fn push_raw(&mut self, event: &SessionEvent<Box<RawValue>>) {
        let typed = typed_raw(event);
        self.tail.push(event, typed.as_ref().ok());
        if self.error.is_some() {
            return;
        }
        if let Err(err) = typed.and_then(|typed| self.facts.apply(event, typed)) {
            self.error = Some(err);
        }
    }

    /// The facts of the events taken (or the first event they could not
    /// take) and the closers to append, as [`resume_facts`] and
    /// [`repair_closers`] give them over the same events; `now_ms` is the
    /// time of the `session/end-seed`. The closers' own facts (the
    /// interrupted tool results) are not in the facts: add them with
    /// [`ResumeFacts::push`] once they have their seqs.
    ///
    /// [`resume_facts`]: super::resume_facts
    /// [`repair_closers`]: super::repair_closers
    pub fn finish(self, now_ms: u64) -> (Result<ResumeFacts, StoreError>, Vec<EventDraft<Event>>) {
        let facts = match self.error {
            Some(err) => Err(err),
            None => Ok(self.facts),
        };
        (facts, self.tail.closers(now_ms))
    }
}

/// The typed payload of a raw event, its `stream` left out (see
/// [`ResumeScan::push_raw`]), or why it does not fit its type.
fn typed_raw(event: &SessionEvent<Box<RawValue>>) -> Result<Event, StoreError> {
    let data = event.data.get();
    let typed = if event.kind == <AssistantMessageEvent as dsh_protocol::catalog::EventKind>::KIND {
        serde_json::from_str::<AssistantMessageEvent<AssistantMessage, IgnoredAny>>(data).map(|a| {
            Event::AssistantMessage(AssistantMessageEvent {
                turn: a.turn,
                step: a.step,
                message: a.message,
                usage: a.usage,
                stream: Value::Null,
            })
        })
    } else {
        Event::parse_str(&event.kind, data)
    };
    typed.map_err(|e| {
        // Worded as when typed from a value: no position inside the payload.
        let text = e.to_string();
        let text = match text.rfind(" at line ") {
            Some(at) if e.line() > 0 => &text[..at],
            _ => &text,
        };
        StoreError::BadEvent {
            seq: event.seq,
            reason: format!("{}: {text}", event.kind),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{repair_closers, resume_facts};
    use serde_json::{Value, json};

    fn event(seq: u64, kind: &str, data: Value) -> SessionEvent {
        SessionEvent {
            kind: kind.to_owned(),
            seq,
            time: 100 + seq,
            data,
            source_event_seqs: None,
            surface_op: None,
            ignorable: None,
        }
    }

    fn scanned(events: &[SessionEvent]) -> (Result<ResumeFacts, StoreError>, Vec<Value>) {
        let mut scan = ResumeScan::new();
        let mut raw_scan = ResumeScan::new();
        for event in events {
            scan.push(event);
            raw_scan.push_raw(&raw(event));
        }
        let (facts, closers) = scan.finish(7);
        let (raw_facts, raw_closers) = raw_scan.finish(7);
        let closers: Vec<Value> = closers.iter().map(|d| json!([d.time, d.data])).collect();
        // Typed from the text, the scan rebuilds the same.
        let raw_closers: Vec<Value> = raw_closers
            .iter()
            .map(|d| json!([d.time, d.data]))
            .collect();
        assert_eq!(closers, raw_closers);
        assert_eq!(
            facts.as_ref().map_err(ToString::to_string),
            raw_facts.as_ref().map_err(ToString::to_string)
        );
        (facts, closers)
    }

    /// `event` as the raw reader gives it.
    fn raw(event: &SessionEvent) -> SessionEvent<Box<RawValue>> {
        SessionEvent {
            kind: event.kind.clone(),
            seq: event.seq,
            time: event.time,
            data: RawValue::from_string(event.data.to_string()).unwrap(),
            source_event_seqs: event.source_event_seqs.clone(),
            surface_op: event.surface_op.clone(),
            ignorable: event.ignorable,
        }
    }

    #[test]
    fn the_scan_gives_what_the_list_functions_give() {
        let call = json!({"type": "tool-call", "id": "c1", "name": "bash", "arguments": "{}"});
        let assistant =
            json!({"role": "assistant", "content": [call], "source": {"kind": "model"}, "id": "a"});
        let user = json!({"content": [{"type": "text", "text": "hi"}], "source": {"kind": "user"}, "role": "user", "id": "u"});
        let mut events = vec![
            event(0, "turn/start", json!({"turn": 2})),
            event(1, "step/start", json!({"turn": 2, "step": 1})),
            event(2, "user/message", user),
            event(
                3,
                "assistant/message",
                json!({"turn": 2, "step": 1, "message": assistant, "stream": []}),
            ),
        ];
        let (facts, closers) = scanned(&events);
        assert_eq!(facts.ok(), resume_facts(&events).ok());
        let listed: Vec<Value> = repair_closers(&events, 7)
            .iter()
            .map(|d| json!([d.time, d.data]))
            .collect();
        assert_eq!(closers, listed);
        assert_eq!(closers.len(), 4);
        // An event that does not fit its type: the facts report it, the
        // repair still closes the turn.
        events.push(event(4, "turn/start", json!({"turn": "x"})));
        let (facts, closers) = scanned(&events);
        let err = facts.err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(
            Some(err),
            resume_facts(&events).err().map(|e| e.to_string())
        );
        assert_eq!(closers.len(), 4);
    }
}
