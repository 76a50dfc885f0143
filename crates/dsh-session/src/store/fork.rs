//! Forking a stored session at a turn boundary
//! ([`crate::store::SessionStore::fork_session`]): a new root session whose
//! log starts with the source's events through the `turn/end` of a
//! completed turn.
//!
//! The fork's log is, after its own header (`isSeeded: true`, the source's
//! `cwd` and `agentPreset`, no `origin`, no `parentSession`: the official
//! runtime refuses every `origin` but `subagent` and every unknown header
//! key):
//!
//! 1. the source's events `0..=B`, copied line for line with their seqs,
//!    where `B` is the seq of the last `turn/end` at or before the seq
//!    asked for. The one change: the official runtime's delivery markers
//!    (`session-log-deepseek/delivery-accepted`) name their session, and
//!    it refuses a log whose markers name another, so their `sessionId`
//!    becomes the fork's;
//! 2. `session/end-seed {"inherited": true}` (seq `B + 1`), the seam the
//!    official runtime writes after the events a forked subagent inherits;
//! 3. `dsh/session-forked {sourceSessionId, sourceSeq}` (seq `B + 2`,
//!    `ignorable: true`, which the official runtime skips), naming the
//!    origin.
//!
//! The source is only read (without its lock: a live session can be
//! forked; its log is only appended to, and what a torn final write holds
//! is not read). A session that started subagents before `B` is refused:
//! the fork's log would name children whose logs belong to the source.

use super::error::StoreError;
use super::header::SessionHeader;
use super::layout::{Encoding, SessionLocation, SessionStore};
use super::raw_log::{Item, each_line, open_log};
use super::summary::{
    FORKED, ForkSource, LogStamp, SessionSummary, names_of, record, write_sidecar,
};
use super::writer::SessionWriter;
use dsh_protocol::JsonRope;
use serde_json::Value;
use std::fs;
use std::ops::ControlFlow;

/// The event type of the official runtime's delivery markers.
const DELIVERY: &str = "session-log-deepseek/delivery-accepted";
/// The event type naming a subagent child.
const CHILD: &str = "subagent/catalog";
/// Buffered bytes of copied lines after which they are written.
const BATCH_BYTES: usize = 1 << 20;

/// What to fork.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForkRequest {
    /// The source session.
    pub source: String,
    /// Fork at the last turn ending at or before this seq (default: the
    /// last completed turn).
    pub at_seq: Option<u64>,
    /// The fork's id (default: a new UUID).
    pub new_id: Option<String>,
    /// How the fork's log is stored.
    pub encoding: Encoding,
    /// Now, epoch milliseconds: the fork's creation time.
    pub now: u64,
}

/// A fork made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forked {
    /// The new session.
    pub session_id: String,
    /// The seq of the source's `turn/end` the fork ends with.
    pub forked_from_seq: u64,
    /// The turns the fork holds.
    pub turns: u32,
    /// The seq the fork's next event gets.
    pub next_seq: u64,
}

/// Why a session cannot be forked.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    /// No session has the source id.
    #[error("session \"{0}\" not found")]
    NotFound(String),
    /// The source has no `turn/end`.
    #[error("session \"{0}\" has no completed turn to fork")]
    NoCompleteTurn(String),
    /// The source has no `turn/end` at or before the seq asked for.
    #[error("session \"{id}\" has no completed turn ending at or before seq {at_seq}")]
    NoTurnAtOrBefore {
        /// The source.
        id: String,
        /// The seq asked for.
        at_seq: u64,
    },
    /// The source is a subagent child.
    #[error("session \"{id}\" is a subagent of \"{parent}\"; only root sessions can be forked")]
    Child {
        /// The source.
        id: String,
        /// Its parent.
        parent: String,
    },
    /// The source started subagents before the fork point.
    #[error(
        "session \"{id}\" started a subagent at seq {seq}, before the fork point; a session tree cannot be forked (fork at an earlier turn)"
    )]
    Subagents {
        /// The source.
        id: String,
        /// The seq of its first `subagent/catalog`.
        seq: u64,
    },
    /// The source's log did not hold the same events when copied as when
    /// read.
    #[error("session \"{0}\" changed while it was forked; try again")]
    Changed(String),
    /// The store refused (the new id exists or is locked, I/O, a corrupt
    /// source log…).
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Where the fork ends, as read from the source.
struct Plan {
    header: SessionHeader,
    /// The seq of the last `turn/end` kept.
    boundary: u64,
    /// The summary of the events through it.
    summary: SessionSummary,
}

impl SessionStore {
    /// Forks the stored session `request.source` (see the module doc).
    /// Nothing is left on disk when this fails.
    pub fn fork_session(&self, request: &ForkRequest) -> Result<Forked, ForkError> {
        let source = self
            .locate(&request.source)?
            .ok_or_else(|| ForkError::NotFound(request.source.clone()))?;
        let plan = plan(&source, request.at_seq)?;
        let id = request
            .new_id
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let mut header = SessionHeader::root(id.clone(), request.now, plan.header.cwd.clone());
        header.is_seeded = true;
        header.agent_preset.clone_from(&plan.header.agent_preset);
        let mut writer = SessionWriter::create(self, &header, request.encoding)?;
        let time = request.now.max(plan.summary.updated_at);
        let written = copy(&source, &plan, &id, &mut writer).and_then(|()| {
            seal(&mut writer, &header, &plan, &request.source, time).map_err(Into::into)
        });
        let summary = match written {
            Ok(summary) => summary,
            Err(err) => {
                discard(writer);
                return Err(err);
            }
        };
        save_summary(&writer, summary.clone());
        Ok(Forked {
            session_id: id,
            forked_from_seq: plan.boundary,
            turns: summary.turns,
            next_seq: summary.next_seq,
        })
    }
}

/// Reads the source to find the fork point: the last `turn/end` of a whole
/// batch at or before `at_seq`.
fn plan(source: &SessionLocation, at_seq: Option<u64>) -> Result<Plan, ForkError> {
    let id = source.id.as_str();
    let mut file = open_log(&source.file)?;
    let mut header: Option<SessionHeader> = None;
    let mut summary: Option<SessionSummary> = None;
    // A `turn/end` in the batch being read, and the last one of a whole
    // batch.
    let mut candidate: Option<(u64, SessionSummary)> = None;
    let mut boundary: Option<(u64, SessionSummary)> = None;
    let mut first_child: Option<u64> = None;
    let mut past = false;
    let mut misfit = None;
    each_line(&mut file, &source.file, source.encoding, 0, |item| {
        match item {
            Item::Line(line) => {
                let Some(summary) = &mut summary else {
                    match serde_json::from_slice::<SessionHeader>(line) {
                        Ok(read) if read.id == id => {
                            summary = Some(SessionSummary::of_header(&read));
                            header = Some(read);
                        }
                        Ok(read) => {
                            misfit = Some(format!("header names session \"{}\"", read.id));
                            return ControlFlow::Break(());
                        }
                        Err(err) => {
                            misfit = Some(format!("bad session header: {err}"));
                            return ControlFlow::Break(());
                        }
                    }
                    return ControlFlow::Continue(());
                };
                let peeked = match summary.apply_line(line) {
                    Ok(peeked) => peeked,
                    Err(err) => {
                        misfit = Some(err.0);
                        return ControlFlow::Break(());
                    }
                };
                if at_seq.is_some_and(|at| peeked.seq > at) {
                    past = true;
                } else if peeked.kind == "turn/end" {
                    candidate = Some((peeked.seq, summary.clone()));
                }
                if peeked.kind == CHILD && first_child.is_none() {
                    first_child = Some(peeked.seq);
                }
            }
            Item::BatchEnd(_) => {
                if candidate.is_some() {
                    boundary = candidate.take();
                }
                if past {
                    return ControlFlow::Break(());
                }
            }
        }
        ControlFlow::Continue(())
    })?;
    if let Some(reason) = misfit {
        return Err(StoreError::corrupt(&source.file, 0, reason).into());
    }
    let header = header
        .ok_or_else(|| StoreError::corrupt(&source.file, 1, "missing session header".to_owned()))?;
    if let Some(parent) = header.parent_session.clone() {
        return Err(ForkError::Child {
            id: id.to_owned(),
            parent,
        });
    }
    let Some((boundary, summary)) = boundary else {
        return Err(match at_seq {
            Some(at_seq) => ForkError::NoTurnAtOrBefore {
                id: id.to_owned(),
                at_seq,
            },
            None => ForkError::NoCompleteTurn(id.to_owned()),
        });
    };
    if let Some(seq) = first_child.filter(|seq| *seq <= boundary) {
        return Err(ForkError::Subagents {
            id: id.to_owned(),
            seq,
        });
    }
    Ok(Plan {
        header,
        boundary,
        summary,
    })
}

/// Copies the source's events `0..=boundary` into the fork's log, line for
/// line (delivery markers renamed).
fn copy(
    source: &SessionLocation,
    plan: &Plan,
    fork_id: &str,
    writer: &mut SessionWriter,
) -> Result<(), ForkError> {
    let mut file = open_log(&source.file)?;
    let mut header_seen = false;
    let mut next_seq = 0u64;
    let mut buffered = 0usize;
    let mut failed: Option<ForkError> = None;
    let changed = || ForkError::Changed(source.id.clone());
    each_line(&mut file, &source.file, source.encoding, 0, |item| {
        let Item::Line(line) = item else {
            return ControlFlow::Continue(());
        };
        if !header_seen {
            header_seen = true;
            return ControlFlow::Continue(());
        }
        let step = (|| {
            let value: Value = dsh_protocol::lenient::from_slice(line).map_err(|_| changed())?;
            if value.get("seq").and_then(Value::as_u64) != Some(next_seq) {
                return Err(changed());
            }
            let renamed = (value.get("type").and_then(Value::as_str) == Some(DELIVERY))
                .then(|| renamed_marker(value, &source.id, fork_id))
                .flatten();
            let bytes = match renamed {
                Some(text) => text,
                None => line.to_vec(),
            };
            buffered += bytes.len();
            writer.append_rope(&JsonRope::from_vec(bytes))?;
            if buffered >= BATCH_BYTES {
                writer.flush()?;
                buffered = 0;
            }
            Ok(())
        })();
        if let Err(err) = step {
            failed = Some(err);
            return ControlFlow::Break(());
        }
        next_seq += 1;
        if next_seq > plan.boundary {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })?;
    if let Some(err) = failed {
        return Err(err);
    }
    if next_seq != plan.boundary + 1 {
        return Err(changed());
    }
    Ok(())
}

/// A delivery marker naming `source`, renamed for the fork (compact JSON,
/// the keys in their order); `None` when it names another session.
fn renamed_marker(mut value: Value, source: &str, fork_id: &str) -> Option<Vec<u8>> {
    let session = value.get_mut("data")?.get_mut("sessionId")?;
    if session.as_str() != Some(source) {
        return None;
    }
    *session = Value::String(fork_id.to_owned());
    serde_json::to_vec(&value)
        .ok()
        .map(dsh_protocol::surrogates::decode)
}

/// Appends the seam and the fork record, and makes the log durable;
/// returns the fork's summary.
fn seal(
    writer: &mut SessionWriter,
    header: &SessionHeader,
    plan: &Plan,
    source: &str,
    time: u64,
) -> Result<SessionSummary, StoreError> {
    // The fork's own header facts, the source's events.
    let mut summary = SessionSummary {
        id: writer.location().id.clone(),
        created_at: header.created_at,
        updated_at: plan.summary.updated_at.max(header.created_at),
        ..plan.summary.clone()
    };
    let seam = serde_json::json!({
        "type": "session/end-seed",
        "seq": plan.boundary + 1,
        "time": time,
        "data": {"inherited": true},
    });
    let record = serde_json::json!({
        "type": FORKED,
        "seq": plan.boundary + 2,
        "time": time,
        "data": {"sourceSessionId": source, "sourceSeq": plan.boundary},
        "ignorable": true,
    });
    for event in [seam, record] {
        let line = event.to_string();
        writer.append(&line)?;
        let kind = event["type"].as_str().unwrap_or_default();
        let seq = event["seq"].as_u64().unwrap_or_default();
        summary.apply(kind, seq, time, || line.into_bytes());
    }
    writer.sync()?;
    summary.forked_from = Some(ForkSource {
        session_id: source.to_owned(),
        seq: plan.boundary,
    });
    Ok(summary)
}

/// Saves the fork's sidecar (a failure is only logged: a listing reads the
/// log instead).
fn save_summary(writer: &SessionWriter, summary: SessionSummary) {
    let location = writer.location();
    let saved = names_of(&location.dir)
        .ok_or(())
        .and_then(|(home, project, _)| {
            let meta = fs::symlink_metadata(&location.file).map_err(drop)?;
            let log = LogStamp::of(&meta);
            let record = record(&project, writer.file_len().min(log.len), log, summary);
            write_sidecar(&home, &record).map_err(drop)
        });
    if saved.is_err() {
        tracing::debug!(session = %location.id, "summary of the fork not saved");
    }
}

/// Removes a fork that could not be completed: its log (if a batch was
/// written), lock file and directory.
fn discard(writer: SessionWriter) {
    let location = writer.location().clone();
    // A writer that never wrote gives up its claim when dropped; one that
    // did flushes what it holds: the files go after it.
    drop(writer);
    if fs::symlink_metadata(&location.file).is_ok() {
        let _ = fs::remove_file(&location.file);
        let _ = fs::remove_file(location.lock_file());
        let _ = fs::remove_dir(&location.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::summary::read_sidecar;
    use crate::store::{SessionReader, SessionStore};

    const SOURCE: &str = "src";

    fn event(kind: &str, seq: u64, data: &str) -> String {
        format!(
            r#"{{"type":"{kind}","seq":{seq},"time":{},"data":{data}}}"#,
            1000 + seq
        )
    }

    /// A source with two completed turns and a third running; returns the
    /// store and the seq of each `turn/end`.
    fn source(home: &std::path::Path, encoding: Encoding, lines: &[String]) -> SessionStore {
        let store = SessionStore::new(home);
        let header = SessionHeader::root(SOURCE, 1, Some("/ws".into()));
        let mut writer = SessionWriter::create(&store, &header, encoding).unwrap();
        for line in lines {
            writer.append(line).unwrap();
            writer.flush().unwrap();
        }
        writer.close().unwrap();
        store
    }

    fn turns() -> Vec<String> {
        vec![
            event("turn/start", 0, r#"{"turn":1}"#),
            event(
                "session/title",
                1,
                r#"{"title":"First","messageSeqs":[],"source":{"kind":"fallback"}}"#,
            ),
            event(
                DELIVERY,
                2,
                r#"{"sessionId":"src","sessionFormatVersion":4,"throughSeq":1}"#,
            ),
            event("turn/end", 3, r#"{"turn":1,"reason":{"kind":"completed"}}"#),
            event("turn/start", 4, r#"{"turn":2}"#),
            event("turn/end", 5, r#"{"turn":2,"reason":{"kind":"completed"}}"#),
            event("turn/start", 6, r#"{"turn":3}"#),
        ]
    }

    fn request(at_seq: Option<u64>, new_id: &str) -> ForkRequest {
        ForkRequest {
            source: SOURCE.into(),
            at_seq,
            new_id: Some(new_id.into()),
            encoding: Encoding::Zstd,
            now: 5000,
        }
    }

    #[test]
    fn a_fork_holds_the_events_through_the_turn_boundary_then_its_seam() {
        for encoding in [Encoding::Zstd, Encoding::Plain] {
            let home = tempfile::tempdir().unwrap();
            let store = source(home.path(), encoding, &turns());
            let before = fs::read(store.locate(SOURCE).unwrap().unwrap().file).unwrap();
            let forked = store.fork_session(&request(Some(4), "f1")).unwrap();
            assert_eq!(
                forked,
                Forked {
                    session_id: "f1".into(),
                    forked_from_seq: 3,
                    turns: 1,
                    next_seq: 6,
                }
            );
            let location = store.locate("f1").unwrap().unwrap();
            let stored = SessionReader::read(&location).unwrap();
            assert!(stored.header.is_seeded);
            assert_eq!(stored.header.origin, None);
            assert_eq!(stored.header.cwd.as_deref(), Some("/ws"));
            let kinds: Vec<&str> = stored.events.iter().map(|e| e.kind.as_str()).collect();
            assert_eq!(
                kinds,
                [
                    "turn/start",
                    "session/title",
                    DELIVERY,
                    "turn/end",
                    "session/end-seed",
                    FORKED
                ]
            );
            assert_eq!(stored.events[2].data["sessionId"], "f1");
            assert_eq!(stored.events[5].ignorable, Some(true));
            assert_eq!(
                stored.events[5].data,
                serde_json::json!({"sourceSessionId": "src", "sourceSeq": 3})
            );
            // The source is untouched.
            let after = fs::read(store.locate(SOURCE).unwrap().unwrap().file).unwrap();
            assert_eq!(before, after);
            // The fork's sidecar is current.
            let sidecar = read_sidecar(home.path(), "f1").unwrap();
            assert_eq!(sidecar.summary.title.as_deref(), Some("First"));
            assert_eq!(
                sidecar.summary.forked_from,
                Some(ForkSource {
                    session_id: "src".into(),
                    seq: 3
                })
            );
            let again =
                super::super::summary::summarize(&location, &sidecar.project, None).unwrap();
            assert_eq!(again.summary, sidecar.summary);
            // By default: the last completed turn.
            let latest = store
                .fork_session(&ForkRequest {
                    new_id: None,
                    ..request(None, "")
                })
                .unwrap();
            assert_eq!((latest.forked_from_seq, latest.turns), (5, 2));
            assert!(store.exists(&latest.session_id).unwrap());
        }
    }

    #[test]
    fn forks_that_cannot_be_made_leave_nothing() {
        let home = tempfile::tempdir().unwrap();
        let store = source(home.path(), Encoding::Zstd, &turns());
        let message = |result: Result<Forked, ForkError>| {
            result.err().map(|e| e.to_string()).unwrap_or_default()
        };
        assert_eq!(
            message(store.fork_session(&request(Some(2), "x"))),
            "session \"src\" has no completed turn ending at or before seq 2"
        );
        assert_eq!(
            message(store.fork_session(&ForkRequest {
                source: "nobody".into(),
                ..request(None, "x")
            })),
            "session \"nobody\" not found"
        );
        assert_eq!(
            message(store.fork_session(&request(None, SOURCE))),
            "session \"src\" already exists"
        );
        assert!(!store.exists("x").unwrap());
        assert!(!home.path().join("sessions/--ws--/x").exists());
        let home = tempfile::tempdir().unwrap();
        let store = source(home.path(), Encoding::Zstd, &turns()[..3]);
        assert_eq!(
            message(store.fork_session(&request(None, "x"))),
            "session \"src\" has no completed turn to fork"
        );
        let mut with_child = turns();
        with_child.insert(1, event(CHILD, 1, r#"{"childId":"c","label":"l"}"#));
        let with_child: Vec<String> = with_child
            .iter()
            .enumerate()
            .map(|(seq, line)| {
                let mut value: Value = serde_json::from_str(line).unwrap();
                value["seq"] = seq.into();
                value.to_string()
            })
            .collect();
        let home = tempfile::tempdir().unwrap();
        let store = source(home.path(), Encoding::Zstd, &with_child);
        assert_eq!(
            message(store.fork_session(&request(None, "x"))),
            "session \"src\" started a subagent at seq 1, before the fork point; a session tree cannot be forked (fork at an earlier turn)"
        );
    }

    #[test]
    fn a_subagent_session_is_not_forked() {
        let home = tempfile::tempdir().unwrap();
        let store = SessionStore::new(home.path());
        let header = SessionHeader::subagent_child("kid", 1, Some("/ws".into()), "p", 1);
        let mut writer = SessionWriter::create(&store, &header, Encoding::Zstd).unwrap();
        for line in &turns()[..4] {
            writer.append(line).unwrap();
        }
        writer.close().unwrap();
        let result = store.fork_session(&ForkRequest {
            source: "kid".into(),
            ..request(None, "x")
        });
        assert!(matches!(result, Err(ForkError::Child { .. })), "{result:?}");
    }
}
