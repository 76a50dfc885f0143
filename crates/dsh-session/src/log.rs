use crate::store::{SessionWriter, StoreError, SummaryTracker};
use dsh_protocol::JsonRope;
use dsh_protocol::catalog::{EventDraft, EventPayload, SessionEvent};
use dsh_protocol::methods::{SessionDeltaParams, SessionUsageParams};
use dsh_protocol::notifications::{SubagentFinishedParams, SubagentStartedParams};
use std::collections::VecDeque;
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

/// One serialised event exactly as it is written to the log and sent on the
/// wire: one compact JSON object (lone surrogates as `\udXXX` escapes), no
/// line break. Cloning shares the bytes: the log, the observers and queued
/// frames hold one copy of an event, however large, and a long string the
/// event repeats (a reply's text in its content, deltas and `block-end`) is
/// held once (see [`dsh_protocol::JsonRope`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventBytes(JsonRope);

impl EventBytes {
    /// The event's text as one contiguous copy.
    pub fn to_vec(&self) -> Vec<u8> {
        self.0.to_vec()
    }

    /// The event as text (a copy; UTF-8 by construction, validated here).
    pub fn to_text(&self) -> String {
        String::from_utf8(self.to_vec()).unwrap_or_default()
    }

    /// Length of the event's text in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the event's text is empty (never, for a serialised event).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// A shared handle to the event's bytes (no copy).
    pub fn shared(&self) -> JsonRope {
        self.0.clone()
    }
}

/// Receives every event of a published session, in append order, already
/// serialised, and the session's status transitions in order with them.
pub trait EventObserver: Send + Sync {
    /// One appended event.
    fn on_event(&self, session_id: &str, event: &EventBytes);
    /// A whole-agent status transition.
    fn on_status(&self, session_id: &str, status: SessionStatus);
    /// A change of the session tree (`subagent.started`,
    /// `subagent.finished`), ordered with the events of the session whose
    /// log announced it.
    fn on_tree(&self, notice: &TreeNotice) {
        let _ = notice;
    }
    /// A notification about the session that is not an event (never
    /// persisted), ordered with its events.
    fn on_live(&self, session_id: &str, notice: &LiveNotice) {
        let _ = (session_id, notice);
    }
    /// Whether [`on_delta`](Self::on_delta) wants deltas at all (checked
    /// once per model attempt and tool call, not per delta).
    fn wants_deltas(&self) -> bool {
        false
    }
    /// A streamed fragment (never persisted, not ordered with the events
    /// but before the event that commits it).
    fn on_delta(&self, delta: SessionDeltaParams) {
        let _ = delta;
    }
}

/// A notification about a session that is not one of its events: never
/// persisted, ordered after the events appended before it.
#[derive(Debug, Clone, PartialEq)]
pub enum LiveNotice {
    /// `session.usage` (dsh's extension).
    Usage(Box<SessionUsageParams>),
}

/// A session-tree notification, announced through a parent's log so that
/// it keeps its place among the parent's events.
#[derive(Debug, Clone, PartialEq)]
pub enum TreeNotice {
    /// A child was created (before any of its events is notified).
    Started(SubagentStartedParams),
    /// A child settled and its parent took the news.
    Finished(Box<SubagentFinishedParams>),
}

/// The append-only event log of one session: assigns `seq` (contiguous from
/// 0) and `time` (epoch ms, never decreasing), serialises each event once and
/// hands the same bytes to the persistence writer and to the observer while
/// the session is published.
///
/// # The wire never runs ahead of the log
///
/// With a writer, every event is written to the log file (one `write(2)`,
/// not an fsync: it survives the process being killed, not a power cut)
/// before the observer hears of it. When a write fails (a full disk, `EIO`),
/// the event is not notified: it stays buffered, the failure is reported on
/// stderr and by [`write_error`](Self::write_error), and every later event
/// and status transition waits behind it. The next write that succeeds (at
/// the next append or barrier) writes them all as one batch and notifies
/// them in order. A client therefore never sees a seq that a crash could
/// give to a different event.
pub struct EventLog {
    session_id: String,
    next_seq: u64,
    last_time: u64,
    observer: Option<Arc<dyn EventObserver>>,
    writer: Option<SessionWriter>,
    /// Events not yet written (so not yet notified), with the status
    /// transitions announced after them, in order.
    unwritten: VecDeque<Unwritten>,
    /// How many of the events at the front of `unwritten` the writer holds
    /// in its buffer (the others could not even be buffered yet).
    handed: usize,
    /// Why the last write failed; `None` once a write succeeds.
    write_error: Option<StoreError>,
    /// The long strings of the last event, offered to the next one (see
    /// [`dsh_protocol::to_rope_sharing`]); empty after an event without.
    recent: Vec<bytes::Bytes>,
    /// Keeps the session's summary sidecar for `session/list` (with a
    /// writer): saved when a `turn/end` or a `session/title` is written and
    /// when the log is synced.
    summary: SummaryTracker,
}

/// A session whose log cannot be written at the moment (see
/// [`EventLog::unwritable`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("session log of \"{session_id}\" cannot be written: {cause}")]
pub struct LogUnwritable {
    /// The session.
    pub session_id: String,
    /// Why the last write failed.
    pub cause: String,
}

impl LogUnwritable {
    /// The failure code a turn ended by it carries (`turn/end` reason
    /// `error`, `error.code`).
    pub const CODE: &'static str = "SESSION_LOG_UNWRITABLE";
}

/// What waits in [`EventLog::unwritten`].
enum Unwritten {
    /// An event, serialised.
    Event(EventBytes),
    /// A status transition announced after the events before it.
    Status(SessionStatus),
    /// A tree notification announced after the events before it.
    Tree(TreeNotice),
    /// A live notice announced after the events before it.
    Live(LiveNotice),
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
            unwritten: VecDeque::new(),
            handed: 0,
            write_error: None,
            recent: Vec::new(),
            summary: SummaryTracker::new(),
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

    /// A flush barrier: retries the write of events a failed write left
    /// unwritten, and notifies them once written. Every event is written
    /// when it is appended, so this does nothing while writes succeed.
    pub fn flush(&mut self) {
        self.write_through();
    }

    /// Writes what is unwritten and waits until the log is on stable
    /// storage (`fdatasync`).
    pub fn sync(&mut self) {
        self.write_through();
        if let Some(writer) = &mut self.writer
            && let Err(err) = writer.sync()
        {
            tracing::error!(session = %self.session_id, "session log not synced: {err}");
        }
        if let Some(writer) = &self.writer
            && self.unwritten.is_empty()
        {
            self.summary.save_if_changed(writer);
        }
    }

    /// Why the log cannot be written at the moment (the error of the last
    /// failed write), or `None` when the last write succeeded. While this is
    /// `Some`, appended events are kept and not notified.
    pub fn write_error(&self) -> Option<&StoreError> {
        self.write_error.as_ref()
    }

    /// [`write_error`](Self::write_error) as the error a client is given:
    /// `session log of "<id>" cannot be written: <cause>` (the operating
    /// system's error, e.g. `No space left on device (os error 28)`).
    pub fn unwritable(&self) -> Option<LogUnwritable> {
        self.write_error.as_ref().map(|err| LogUnwritable {
            session_id: self.session_id.clone(),
            cause: match err {
                StoreError::Io { source, .. } => source.to_string(),
                other => other.to_string(),
            },
        })
    }

    /// Events appended but not yet written, so not yet notified.
    pub fn unwritten_events(&self) -> usize {
        self.unwritten
            .iter()
            .filter(|entry| matches!(entry, Unwritten::Event(_)))
            .count()
    }

    /// Where the log is stored, if it is persisted.
    pub fn location(&self) -> Option<&crate::store::SessionLocation> {
        self.writer.as_ref().map(SessionWriter::location)
    }

    /// The session this log belongs to.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The seq the next event will get (= number of events so far).
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// Appends one event and returns its seq. The event is written to the
    /// log, then notified; if the write fails it is notified after a later
    /// write succeeds (see the type's documentation).
    pub fn append<D: EventPayload>(
        &mut self,
        draft: EventDraft<D>,
    ) -> Result<u64, serde_json::Error> {
        let seq = self.next_seq;
        let time = draft.time.unwrap_or_else(now_ms).max(self.last_time);
        let summarized = matches!(draft.kind(), "turn/end" | "session/title");
        let kind = draft.kind().to_owned();
        let envelope = SessionEvent {
            ignorable: dsh_protocol::catalog::ignorable(&kind),
            kind,
            seq,
            time,
            data: &draft.data,
            source_event_seqs: draft.source_event_seqs,
            surface_op: draft.surface_op,
        };
        // Serialised once; the same bytes are written and notified. A long
        // text the last event held is shared, not copied again.
        let (rope, recent) = dsh_protocol::to_rope_sharing(&envelope, &self.recent)?;
        self.recent = recent;
        let raw = EventBytes(rope);
        self.next_seq += 1;
        self.last_time = time;
        if self.writer.is_none() {
            if let Some(observer) = &self.observer {
                observer.on_event(&self.session_id, &raw);
            }
        } else {
            self.summary
                .observe(&envelope.kind, seq, time, || raw.to_vec());
            self.unwritten.push_back(Unwritten::Event(raw));
            self.write_through();
            if let Some(writer) = &self.writer
                && summarized
                && self.unwritten.is_empty()
            {
                self.summary.save(writer);
            }
        }
        Ok(seq)
    }

    /// Announces a status transition, ordered with the events: while events
    /// before it are unwritten, it waits for them.
    pub fn status(&mut self, status: SessionStatus) {
        if self.unwritten.is_empty() {
            if let Some(observer) = &self.observer {
                observer.on_status(&self.session_id, status);
            }
        } else {
            self.unwritten.push_back(Unwritten::Status(status));
        }
    }

    /// Announces a session-tree notification, ordered with the events like
    /// [`status`](Self::status).
    pub fn announce(&mut self, notice: TreeNotice) {
        if self.unwritten.is_empty() {
            if let Some(observer) = &self.observer {
                observer.on_tree(&notice);
            }
        } else {
            self.unwritten.push_back(Unwritten::Tree(notice));
        }
    }

    /// Announces `notice` after the events appended so far (never
    /// persisted; dropped while the log is not published).
    pub fn announce_live(&mut self, notice: LiveNotice) {
        if self.unwritten.is_empty() {
            if let Some(observer) = &self.observer {
                observer.on_live(&self.session_id, &notice);
            }
        } else {
            self.unwritten.push_back(Unwritten::Live(notice));
        }
    }

    /// The observer, while the log is published and it wants deltas.
    pub fn delta_observer(&self) -> Option<Arc<dyn EventObserver>> {
        self.observer
            .as_ref()
            .filter(|observer| observer.wants_deltas())
            .cloned()
    }

    /// Starts notifying this log's events and transitions to `observer`
    /// (a child's log is published only after its creation events are
    /// written, and after its parent announced it).
    pub fn publish(&mut self, observer: Arc<dyn EventObserver>) {
        self.observer = Some(observer);
    }

    /// Hands every unwritten event to the writer (in order, stopping at one
    /// it refuses), writes them, and on success notifies everything written
    /// and the status transitions between them.
    fn write_through(&mut self) {
        let Some(writer) = &mut self.writer else {
            return;
        };
        if self.unwritten.is_empty() {
            return;
        }
        // Events before one the writer refuses are still written and
        // notified; that one and everything after it wait.
        let handed = hand_over(writer, &self.unwritten, &mut self.handed);
        let flushed = writer.flush();
        if flushed.is_ok() {
            self.notify_written();
        }
        match handed.and(flushed) {
            Ok(()) => {
                if let Some(err) = self.write_error.take() {
                    tracing::warn!(session = %self.session_id, "session log written again after: {err}");
                }
            }
            Err(err) => {
                let changed = self
                    .write_error
                    .as_ref()
                    .is_none_or(|last| last.to_string() != err.to_string());
                if changed {
                    tracing::error!(
                        session = %self.session_id,
                        unwritten = self.unwritten_events(),
                        "session log not written; events are kept and not notified until a write succeeds: {err}"
                    );
                }
                self.write_error = Some(err);
            }
        }
    }

    /// Notifies the events the writer has just written (the first
    /// `handed` of `unwritten`) and the status transitions among and right
    /// after them.
    fn notify_written(&mut self) {
        while let Some(entry) = self.unwritten.front() {
            match entry {
                Unwritten::Event(_) if self.handed == 0 => break,
                Unwritten::Event(raw) => {
                    if let Some(observer) = &self.observer {
                        observer.on_event(&self.session_id, raw);
                    }
                    self.handed -= 1;
                }
                Unwritten::Status(status) => {
                    if let Some(observer) = &self.observer {
                        observer.on_status(&self.session_id, *status);
                    }
                }
                Unwritten::Tree(notice) => {
                    if let Some(observer) = &self.observer {
                        observer.on_tree(notice);
                    }
                }
                Unwritten::Live(notice) => {
                    if let Some(observer) = &self.observer {
                        observer.on_live(&self.session_id, notice);
                    }
                }
            }
            self.unwritten.pop_front();
        }
    }
}

/// Buffers in `writer` the events of `unwritten` after the first `handed`
/// (which it already holds), counting each one it accepts.
fn hand_over(
    writer: &mut SessionWriter,
    unwritten: &VecDeque<Unwritten>,
    handed: &mut usize,
) -> Result<(), StoreError> {
    let events = unwritten.iter().filter_map(|entry| match entry {
        Unwritten::Event(raw) => Some(raw),
        Unwritten::Status(_) | Unwritten::Tree(_) | Unwritten::Live(_) => None,
    });
    for raw in events.skip(*handed) {
        writer.append_rope(&raw.0)?;
        *handed += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_protocol::catalog::{Event, RawEvent};
    use serde_json::json;

    /// An event of any type, for tests of the log itself.
    fn raw(kind: &str, data: serde_json::Value) -> Event {
        Event::Unknown(RawEvent {
            kind: kind.to_owned(),
            data,
        })
    }
    use std::sync::Mutex;

    #[derive(Default)]
    struct Record(Mutex<Vec<String>>);

    impl EventObserver for Record {
        fn on_event(&self, session_id: &str, event: &EventBytes) {
            if let Ok(mut v) = self.0.lock() {
                v.push(format!("{session_id} {}", event.to_text()));
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
            log.append(EventDraft::new(raw("turn/start", json!({"turn": 1}))))
                .ok(),
            Some(0)
        );
        log.status(SessionStatus::Running);
        let draft = EventDraft::surfaced(raw("tool/result", json!({}))).citing(vec![0]);
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

    /// Records, for every notified event, its seq and whether the log on
    /// disk held it at that moment.
    struct DiskCheck {
        location: crate::store::SessionLocation,
        seen: Mutex<Vec<String>>,
    }

    impl EventObserver for DiskCheck {
        fn on_event(&self, _session_id: &str, event: &EventBytes) {
            let value: serde_json::Value =
                serde_json::from_str(&event.to_text()).unwrap_or_default();
            let seq = value["seq"].as_u64().unwrap_or(u64::MAX);
            let stored = crate::store::SessionReader::read(&self.location)
                .map(|s| {
                    s.events
                        .iter()
                        .any(|e| e.seq == seq && e.kind == value["type"])
                })
                .unwrap_or(false);
            if let Ok(mut v) = self.seen.lock() {
                v.push(format!("{seq} {stored}"));
            }
        }
        fn on_status(&self, _session_id: &str, status: SessionStatus) {
            if let Ok(mut v) = self.seen.lock() {
                v.push(format!("{status:?}"));
            }
        }
    }

    fn logged(home: &std::path::Path) -> (EventLog, Arc<DiskCheck>) {
        use crate::store::{Encoding, SessionHeader, SessionStore, SessionWriter};
        let store = SessionStore::new(home);
        let header = SessionHeader::root("s", 1, Some("/ws".to_owned()));
        let writer = SessionWriter::create(&store, &header, Encoding::Zstd).unwrap();
        let check = Arc::new(DiskCheck {
            location: writer.location().clone(),
            seen: Mutex::default(),
        });
        let log =
            EventLog::new("s", Some(check.clone() as Arc<dyn EventObserver>)).with_writer(writer);
        (log, check)
    }

    fn seen(check: &DiskCheck) -> Vec<String> {
        check.seen.lock().map(|v| v.clone()).unwrap_or_default()
    }

    #[test]
    fn every_event_is_on_disk_before_it_is_notified() {
        let home = tempfile::tempdir().unwrap();
        let (mut log, check) = logged(home.path());
        // None of these settles anything: today's barriers would not write them.
        for kind in ["turn/start", "step/start", "job/registered", "tool/call"] {
            assert!(log.append(EventDraft::new(raw(kind, json!({})))).is_ok());
        }
        assert_eq!(seen(&check), ["0 true", "1 true", "2 true", "3 true"]);
        assert!(log.write_error().is_none());
        assert_eq!(log.unwritten_events(), 0);
    }

    #[test]
    fn a_failed_write_holds_back_that_event_and_everything_after_it() {
        let home = tempfile::tempdir().unwrap();
        let (mut log, check) = logged(home.path());
        assert!(
            log.append(EventDraft::new(raw("turn/start", json!({}))))
                .is_ok()
        );
        if let Some(writer) = log.writer.as_mut() {
            writer.failing_writes = 3;
        }
        assert!(
            log.append(EventDraft::new(raw("job/registered", json!({}))))
                .is_ok()
        );
        log.status(SessionStatus::Running);
        assert!(
            log.append(EventDraft::new(raw("tool/call", json!({}))))
                .is_ok()
        );
        log.flush(); // a barrier retries, and fails too
        assert_eq!(seen(&check), ["0 true"], "nothing unwritten is notified");
        assert_eq!(log.unwritten_events(), 2);
        let error = log
            .write_error()
            .map(ToString::to_string)
            .unwrap_or_default();
        assert!(error.contains("No space left on device"), "{error}");
        // The next write succeeds: everything goes out in order.
        assert!(
            log.append(EventDraft::new(raw("tool/result", json!({}))))
                .is_ok()
        );
        assert_eq!(
            seen(&check),
            ["0 true", "1 true", "Running", "2 true", "3 true"]
        );
        assert!(log.write_error().is_none());
        assert_eq!(log.unwritten_events(), 0);
        log.status(SessionStatus::Idle);
        assert_eq!(seen(&check).last().map(String::as_str), Some("Idle"));
    }

    #[test]
    fn a_barrier_writes_and_notifies_what_a_failed_write_held_back() {
        let home = tempfile::tempdir().unwrap();
        let (mut log, check) = logged(home.path());
        assert!(
            log.append(EventDraft::new(raw("turn/start", json!({}))))
                .is_ok()
        );
        if let Some(writer) = log.writer.as_mut() {
            writer.failing_writes = 1;
        }
        assert!(
            log.append(EventDraft::new(raw("job/registered", json!({}))))
                .is_ok()
        );
        log.status(SessionStatus::Idle);
        assert_eq!(seen(&check), ["0 true"]);
        log.sync();
        assert_eq!(seen(&check), ["0 true", "1 true", "Idle"]);
        let stored = log
            .writer
            .as_ref()
            .map(|w| crate::store::SessionReader::read(w.location()));
        let seqs: Vec<u64> = match stored {
            Some(Ok(stored)) => stored.events.iter().map(|e| e.seq).collect(),
            _ => Vec::new(),
        };
        assert_eq!(seqs, [0, 1]);
    }
}
