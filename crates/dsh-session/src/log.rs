use crate::store::SessionWriter;
use serde::Serialize;
use serde_json::value::RawValue;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Whole-agent activity state as announced by `session.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStatus {
    /// Working on a turn.
    Running,
    /// Nothing left to do.
    Idle,
}

/// Receives every event of a published session, in append order, already
/// serialised, and the session's status transitions in order with them.
pub trait EventObserver: Send + Sync {
    /// One appended event.
    fn on_event(&self, session_id: &str, event: &RawValue);
    /// A whole-agent status transition.
    fn on_status(&self, session_id: &str, status: SessionStatus);
}

/// An event before the log has given it a `seq` and `time`.
pub struct EventDraft<'a, D: Serialize> {
    /// Event type.
    pub kind: &'a str,
    /// Payload.
    pub data: &'a D,
    /// Cited seqs (`tool/result` → its `tool/call`).
    pub source_event_seqs: Option<&'a [u64]>,
    /// `true` for model-visible messages (`surfaceOp: "append"`).
    pub surface_append: bool,
}

impl<'a, D: Serialize> EventDraft<'a, D> {
    /// A plain event.
    pub fn new(kind: &'a str, data: &'a D) -> Self {
        Self {
            kind,
            data,
            source_event_seqs: None,
            surface_append: false,
        }
    }

    /// A model-visible message event (`surfaceOp: "append"`).
    pub fn surfaced(kind: &'a str, data: &'a D) -> Self {
        Self {
            surface_append: true,
            ..Self::new(kind, data)
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Envelope<'a, D: Serialize> {
    #[serde(rename = "type")]
    kind: &'a str,
    seq: u64,
    time: u64,
    data: &'a D,
    #[serde(skip_serializing_if = "Option::is_none")]
    source_event_seqs: Option<&'a [u64]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    surface_op: Option<&'static str>,
}

/// The append-only event log of one session: assigns `seq` (contiguous from
/// 0) and `time` (epoch ms, never decreasing), serialises each event once and
/// hands the same bytes to the persistence writer (buffered until
/// [`flush`](Self::flush)) and to the observer while the session is
/// published.
pub struct EventLog {
    session_id: String,
    next_seq: u64,
    last_time: u64,
    observer: Option<Arc<dyn EventObserver>>,
    writer: Option<SessionWriter>,
}

impl EventLog {
    /// An empty log whose events are published to `observer`.
    pub fn new(session_id: impl Into<String>, observer: Option<Arc<dyn EventObserver>>) -> Self {
        Self {
            session_id: session_id.into(),
            next_seq: 0,
            last_time: 0,
            observer,
            writer: None,
        }
    }

    /// Persists every event through `writer` from now on.
    pub fn with_writer(mut self, writer: SessionWriter) -> Self {
        self.writer = Some(writer);
        self
    }

    /// Continues a stored log whose next seq is `next_seq` and whose last
    /// event has time `last_time`.
    pub fn resumed(mut self, next_seq: u64, last_time: u64) -> Self {
        self.next_seq = next_seq;
        self.last_time = last_time;
        self
    }

    /// Hands buffered events to the operating system (a flush barrier).
    /// Failures are reported on stderr and the events stay buffered for the
    /// next barrier.
    pub fn flush(&mut self) {
        if let Some(writer) = &mut self.writer
            && let Err(err) = writer.flush()
        {
            tracing::error!(session = %self.session_id, "session log not written (kept for retry): {err}");
        }
    }

    /// Flushes and waits until the log is on stable storage.
    pub fn sync(&mut self) {
        if let Some(writer) = &mut self.writer
            && let Err(err) = writer.flush().and_then(|()| writer.sync())
        {
            tracing::error!(session = %self.session_id, "session log not synced: {err}");
        }
    }

    /// The session this log belongs to.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The seq the next event will get (= number of events so far).
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Appends one event and returns its seq.
    pub fn append<D: Serialize>(
        &mut self,
        draft: EventDraft<'_, D>,
    ) -> Result<u64, serde_json::Error> {
        let seq = self.next_seq;
        let time = now_ms().max(self.last_time);
        let envelope = Envelope {
            kind: draft.kind,
            seq,
            time,
            data: draft.data,
            source_event_seqs: draft.source_event_seqs,
            surface_op: draft.surface_append.then_some("append"),
        };
        let raw = serde_json::value::to_raw_value(&envelope)?;
        self.next_seq += 1;
        self.last_time = time;
        if let Some(writer) = &mut self.writer
            && let Err(err) = writer.append_raw(&raw)
        {
            tracing::error!(session = %self.session_id, seq, "event not persisted: {err}");
        }
        if crate::events::SETTLING.contains(&draft.kind) {
            self.flush();
        }
        if let Some(observer) = &self.observer {
            observer.on_event(&self.session_id, &raw);
        }
        Ok(seq)
    }

    /// Announces a status transition, ordered with the events.
    pub fn status(&self, status: SessionStatus) {
        if let Some(observer) = &self.observer {
            observer.on_status(&self.session_id, status);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Record(Mutex<Vec<String>>);

    impl EventObserver for Record {
        fn on_event(&self, session_id: &str, event: &RawValue) {
            if let Ok(mut v) = self.0.lock() {
                v.push(format!("{session_id} {}", event.get()));
            }
        }
        fn on_status(&self, session_id: &str, status: SessionStatus) {
            if let Ok(mut v) = self.0.lock() {
                v.push(format!("{session_id} {status:?}"));
            }
        }
    }

    #[test]
    fn seqs_are_contiguous_and_envelopes_ordered() {
        let record = Arc::new(Record::default());
        let mut log = EventLog::new("s", Some(record.clone() as Arc<dyn EventObserver>));
        assert_eq!(
            log.append(EventDraft::new("turn/start", &json!({"turn": 1})))
                .ok(),
            Some(0)
        );
        log.status(SessionStatus::Running);
        let seqs = [0u64];
        let data = json!({});
        let draft = EventDraft {
            source_event_seqs: Some(&seqs),
            ..EventDraft::surfaced("tool/result", &data)
        };
        assert_eq!(log.append(draft).ok(), Some(1));
        let got = record.0.lock().map(|v| v.clone()).unwrap_or_default();
        assert_eq!(got.len(), 3);
        assert!(got[0].starts_with(r#"s {"type":"turn/start","seq":0,"time":"#));
        assert_eq!(got[1], "s Running");
        assert!(
            got[2].ends_with(r#","data":{},"sourceEventSeqs":[0],"surfaceOp":"append"}"#),
            "{}",
            got[2]
        );
    }
}
