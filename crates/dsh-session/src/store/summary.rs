//! Per-session summaries: what `session/list` shows of a session (title,
//! working directory, times, turns, parent, fork origin) without reading
//! its log.
//!
//! A summary is kept in a small sidecar file,
//! `DSH_HOME/session-summary/<encoded id>` (0600, written to a temporary
//! file renamed into place, so a reader sees a whole one or none), beside
//! `sessions/` rather than in it: the official runtime reads every entry of
//! `sessions/` as a project directory and fails on anything else. The
//! sidecar records how much of the log it summarises (`scanned`, the end of
//! the last whole batch) and the log file as it was then (its stamp:
//! length, modification time, inode):
//!
//! * the log is unchanged (same stamp): the summary is current;
//! * the log grew (same inode, at least `scanned` bytes): only the batches
//!   after `scanned` are read, and the summary moves on from them;
//! * anything else (no sidecar, another inode, a shorter log, a sidecar of
//!   another project directory): the log is read once from its header.
//!
//! dsh writes the sidecar of a session it runs as it writes the log
//! ([a tracker](crate::store::SummaryTracker), at every `turn/end` and
//! `session/title` and when the log is synced); a log written by the
//! official runtime or an older dsh gets its sidecar from the first listing
//! that reads it. Sidecars are a cache: losing one costs a read of the log,
//! never a wrong answer.

use super::error::StoreError;
use super::fsutil::create_temp;
use super::header::SessionHeader;
use super::layout::SessionLocation;
use super::names::encode_session_id;
use super::raw_log::{Item, each_line, open_log};
use super::writer::SessionWriter;
use crate::private_fs::{create_dir, open_file};
use serde::{Deserialize, Serialize};
use std::fs::{self, OpenOptions};
use std::io::{self, Read, Write};
use std::ops::ControlFlow;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The sidecar directory under `DSH_HOME`.
pub(crate) const SUMMARY_DIR: &str = "session-summary";
/// The sidecar format version.
const VERSION: u32 = 1;
/// What the sidecar directory is called in errors.
const DIR_WHAT: &str = "session summary directory";
/// What a sidecar is called in errors.
const FILE_WHAT: &str = "session summary";
/// The longest sidecar read (a summary holds a title and a few ids).
const MAX_SIDECAR: u64 = 1 << 20;
/// The type of the record a fork writes after its inherited events.
pub(crate) const FORKED: &str = "dsh/session-forked";

/// What `session/list` shows of one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    /// The session id (the header's).
    pub id: String,
    /// The last `session/title`, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The working directory the session was created in (the header's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Creation time, epoch milliseconds (the header's).
    pub created_at: u64,
    /// The time of the last event (the creation time without events).
    pub updated_at: u64,
    /// How many turns started.
    pub turns: u32,
    /// The parent of a subagent child (the header's `parentSession`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    /// Where a fork made by `session/fork` came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkSource>,
    /// The seq the next event gets (the number of events summarised).
    pub next_seq: u64,
}

/// The session and seq a fork was made from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkSource {
    /// The source session.
    #[serde(rename = "sourceSessionId")]
    pub session_id: String,
    /// The seq of the source's last event the fork holds (a `turn/end`).
    #[serde(rename = "sourceSeq")]
    pub seq: u64,
}

/// The log file as a summary saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LogStamp {
    /// Its length in bytes.
    pub(crate) len: u64,
    /// Its modification time, epoch nanoseconds.
    pub(crate) mtime_ns: u64,
    /// Its inode number.
    pub(crate) ino: u64,
}

impl LogStamp {
    /// The stamp of a log's metadata.
    pub(crate) fn of(meta: &fs::Metadata) -> Self {
        let secs = u64::try_from(meta.mtime()).unwrap_or(0);
        let nanos = u64::try_from(meta.mtime_nsec()).unwrap_or(0);
        Self {
            len: meta.len(),
            mtime_ns: secs.saturating_mul(1_000_000_000).saturating_add(nanos),
            ino: meta.ino(),
        }
    }

    /// The stamp of a log's `stat` (the same fields as [`LogStamp::of`]).
    // The types of `stat`'s fields differ between targets.
    #[allow(clippy::useless_conversion)]
    pub(crate) fn of_stat(stat: &rustix::fs::Stat) -> Self {
        let secs = u64::try_from(stat.st_mtime).unwrap_or(0);
        let nanos = u64::try_from(stat.st_mtime_nsec).unwrap_or(0);
        Self {
            len: u64::try_from(stat.st_size).unwrap_or(0),
            mtime_ns: secs.saturating_mul(1_000_000_000).saturating_add(nanos),
            ino: stat.st_ino,
        }
    }
}

/// A summary as stored in a sidecar and cached: what it was computed from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SummaryRecord {
    /// The sidecar format version.
    #[serde(rename = "v")]
    pub(crate) version: u32,
    /// The project directory the log is in.
    pub(crate) project: String,
    /// The file offset after the last whole batch summarised.
    pub(crate) scanned: u64,
    /// The log file when the summary was computed.
    pub(crate) log: LogStamp,
    /// The summary.
    pub(crate) summary: SessionSummary,
}

/// The envelope fields a summary reads from every event line.
#[derive(Deserialize)]
struct Peek {
    #[serde(rename = "type")]
    kind: String,
    seq: u64,
    time: u64,
}

/// `data.title` of a `session/title` line.
#[derive(Deserialize)]
struct TitleLine {
    data: TitleData,
}

#[derive(Deserialize)]
struct TitleData {
    title: String,
}

/// `data` of a fork record line.
#[derive(Deserialize)]
struct ForkLine {
    data: ForkSource,
}

/// Why a line does not fit the summary being built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Misfit(pub(crate) String);

impl SessionSummary {
    /// The summary of a log holding only `header`.
    pub(crate) fn of_header(header: &SessionHeader) -> Self {
        Self {
            id: header.id.clone(),
            title: None,
            cwd: header.cwd.clone(),
            created_at: header.created_at,
            updated_at: header.created_at,
            turns: 0,
            parent_session_id: header.parent_session.clone(),
            forked_from: None,
            next_seq: 0,
        }
    }

    /// Moves on past one event line (`line` is the whole event): it must
    /// have the next seq.
    pub(crate) fn apply_line(&mut self, line: &[u8]) -> Result<Peeked, Misfit> {
        let peek: Peek = dsh_protocol::lenient::from_slice(line)
            .map_err(|e| Misfit(format!("bad event: {e}")))?;
        if peek.seq != self.next_seq {
            return Err(Misfit(format!(
                "expected seq {}, found {}",
                self.next_seq, peek.seq
            )));
        }
        self.apply(&peek.kind, peek.seq, peek.time, || line.to_vec());
        Ok(Peeked {
            kind: peek.kind,
            seq: peek.seq,
        })
    }

    /// Moves on past one event of type `kind` (`line` gives its whole text
    /// when a `session/title` or a fork record needs reading).
    pub(crate) fn apply(
        &mut self,
        kind: &str,
        seq: u64,
        time: u64,
        line: impl FnOnce() -> Vec<u8>,
    ) {
        self.next_seq = seq + 1;
        self.updated_at = self.updated_at.max(time);
        match kind {
            "turn/start" => self.turns = self.turns.saturating_add(1),
            "session/title" => {
                if let Ok(titled) = dsh_protocol::lenient::from_slice::<TitleLine>(&line()) {
                    self.title = Some(titled.data.title);
                }
            }
            FORKED => {
                if let Ok(forked) = dsh_protocol::lenient::from_slice::<ForkLine>(&line()) {
                    self.forked_from = Some(forked.data);
                }
            }
            _ => {}
        }
    }
}

/// The type and seq of an event line a summary moved past.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Peeked {
    /// The event type.
    pub(crate) kind: String,
    /// Its seq.
    pub(crate) seq: u64,
}

/// Where the sidecars of `DSH_HOME` `home` are.
pub(crate) fn summary_dir(home: &Path) -> PathBuf {
    home.join(SUMMARY_DIR)
}

/// `DSH_HOME`, the project directory name and the encoded id of a session
/// directory (`DSH_HOME/sessions/<project>/<segment>`).
pub(crate) fn names_of(dir: &Path) -> Option<(PathBuf, String, String)> {
    let segment = dir.file_name()?.to_str()?.to_owned();
    let project_dir = dir.parent()?;
    let project = project_dir.file_name()?.to_str()?.to_owned();
    let home = project_dir.parent()?.parent()?.to_path_buf();
    Some((home, project, segment))
}

/// The sidecar of the session whose directory is named `segment`, if one
/// can be read (anything unreadable or of another version is no sidecar).
pub(crate) fn read_sidecar(home: &Path, segment: &str) -> Option<SummaryRecord> {
    let path = summary_dir(home).join(segment);
    let file = open_file(FILE_WHAT, &path, OpenOptions::new().read(true)).ok()?;
    let mut text = Vec::new();
    file.take(MAX_SIDECAR).read_to_end(&mut text).ok()?;
    let record: SummaryRecord = serde_json::from_slice(&text).ok()?;
    (record.version == VERSION && encode_session_id(&record.summary.id) == segment)
        .then_some(record)
}

/// A name for a temporary file in the sidecar directory that no other
/// writer (in this process or another) uses at the same time; `~` never
/// begins an encoded id.
pub(crate) fn temp_name() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("~tmp-{}-{n}", std::process::id())
}

/// Writes `bytes` as the file `name` of the sidecar directory of `home`
/// (created, 0700, when missing), through a temporary file renamed into
/// place.
pub(crate) fn replace_in_summary_dir(
    home: &Path,
    name: &str,
    bytes: &[u8],
) -> Result<(), StoreError> {
    let dir = summary_dir(home);
    create_dir(DIR_WHAT, &dir)?;
    let temp = dir.join(temp_name());
    let written = create_temp(&temp).and_then(|mut file| {
        file.write_all(bytes)
            .map_err(|e| StoreError::io("write", &temp, e))
    });
    let renamed = written.and_then(|()| {
        fs::rename(&temp, dir.join(name)).map_err(|e| StoreError::io("rename", &temp, e))
    });
    if renamed.is_err() {
        let _ = fs::remove_file(&temp);
    }
    renamed
}

/// Writes the sidecar of the session `record` summarises.
pub(crate) fn write_sidecar(home: &Path, record: &SummaryRecord) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec(record)
        .map_err(|e| StoreError::io("serialise", summary_dir(home), io::Error::other(e)))?;
    replace_in_summary_dir(home, &encode_session_id(&record.summary.id), &bytes)
}

/// The current summary of the log at `location` (in project directory
/// `project`), from `base` (a sidecar or cached summary of it) when the log
/// only grew since, else from the log's header on. The log's stamp is taken
/// before it is read, so a log appended to meanwhile is seen as changed by
/// the next look.
pub(crate) fn summarize(
    location: &SessionLocation,
    project: &str,
    base: Option<&SummaryRecord>,
) -> Result<SummaryRecord, StoreError> {
    let meta = fs::symlink_metadata(&location.file)
        .map_err(|e| StoreError::io("inspect", &location.file, e))?;
    let stamp = LogStamp::of(&meta);
    let base = base.filter(|base| base.project == project && base.summary.id == location.id);
    if let Some(base) = base {
        if base.log == stamp {
            return Ok(base.clone());
        }
        if base.log.ino == stamp.ino && stamp.len >= base.scanned {
            match read_from(location, base.scanned, Some(base.summary.clone())) {
                Ok((summary, scanned)) => {
                    return Ok(record(project, scanned, stamp, summary));
                }
                Err(err) => {
                    tracing::debug!(session = %location.id, "summary read again from the start: {err}");
                }
            }
        }
    }
    let (summary, scanned) = read_from(location, 0, None)?;
    Ok(record(project, scanned, stamp, summary))
}

/// A record of the current version.
pub(crate) fn record(
    project: &str,
    scanned: u64,
    log: LogStamp,
    summary: SessionSummary,
) -> SummaryRecord {
    SummaryRecord {
        version: VERSION,
        project: project.to_owned(),
        scanned,
        log,
        summary,
    }
}

/// Reads the batches of the log at `location` from `from` (the header when
/// `base` is `None`), moving `base` on; returns the summary of the whole
/// batches and where they end.
fn read_from(
    location: &SessionLocation,
    from: u64,
    base: Option<SessionSummary>,
) -> Result<(SessionSummary, u64), StoreError> {
    let mut file = open_log(&location.file)?;
    let corrupt = |reason: String| StoreError::corrupt(&location.file, 0, reason);
    let mut committed = base.clone();
    let mut working = base;
    let mut end = from;
    let mut misfit = None;
    each_line(&mut file, &location.file, location.encoding, from, |item| {
        match item {
            Item::Line(line) => {
                let step = match &mut working {
                    Some(summary) => summary.apply_line(line).map(drop),
                    None => header_summary(line, &location.id).map(|s| working = Some(s)),
                };
                if let Err(err) = step {
                    misfit = Some(err);
                    return ControlFlow::Break(());
                }
            }
            Item::BatchEnd(at) => {
                committed.clone_from(&working);
                end = at;
            }
        }
        ControlFlow::Continue(())
    })?;
    if let Some(Misfit(reason)) = misfit {
        return Err(corrupt(reason));
    }
    let summary = committed.ok_or_else(|| {
        corrupt("missing session header (the log is empty or its first write was torn)".to_owned())
    })?;
    Ok((summary, end))
}

/// The summary of a header line, which must name `id`.
fn header_summary(line: &[u8], id: &str) -> Result<SessionSummary, Misfit> {
    let header: SessionHeader =
        serde_json::from_slice(line).map_err(|e| Misfit(format!("bad session header: {e}")))?;
    if header.version != super::header::FORMAT_VERSION {
        return Err(Misfit(format!(
            "session format version {} is not supported",
            header.version
        )));
    }
    if header.id != id {
        return Err(Misfit(format!(
            "header id \"{}\" does not match session \"{id}\"",
            header.id
        )));
    }
    Ok(SessionSummary::of_header(&header))
}

/// Keeps the sidecar of a session this runtime writes: follows the events
/// written and saves the summary at a few points (see the module doc).
///
/// The first save of a session in this process reads its sidecar and what
/// the log holds after it (once); the events written afterwards are
/// followed in memory.
#[derive(Debug, Default)]
pub struct SummaryTracker {
    /// The summary of everything written, once known.
    state: Option<SessionSummary>,
    /// Events were followed since the last save.
    dirty: bool,
}

impl SummaryTracker {
    /// A tracker knowing nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Follows one event written to the log (`line` gives its text when
    /// the summary needs it).
    pub fn observe(&mut self, kind: &str, seq: u64, time: u64, line: impl FnOnce() -> Vec<u8>) {
        if let Some(state) = &mut self.state {
            state.apply(kind, seq, time, line);
            self.dirty = true;
        }
    }

    /// [`save`](Self::save) when events were followed since the last save
    /// (nothing when no save happened yet in this process).
    pub fn save_if_changed(&mut self, writer: &SessionWriter) {
        if self.dirty && self.state.is_some() {
            self.save(writer);
        }
    }

    /// Saves the sidecar of the log `writer` writes, every event appended
    /// so far being written (the caller checks). Failures are only logged:
    /// a missing sidecar costs a read of the log, never a wrong listing.
    pub fn save(&mut self, writer: &SessionWriter) {
        if let Err(err) = self.try_save(writer) {
            tracing::debug!(session = %writer.location().id, "session summary not saved: {err}");
            // Read it again next time rather than trust a state that may
            // have missed something.
            self.state = None;
        }
    }

    fn try_save(&mut self, writer: &SessionWriter) -> Result<(), StoreError> {
        let location = writer.location();
        if !writer.is_on_disk() {
            return Ok(());
        }
        let Some((home, project, _)) = names_of(&location.dir) else {
            return Ok(());
        };
        let record = match &self.state {
            None => {
                let base = read_sidecar(&home, &encode_session_id(&location.id));
                summarize(location, &project, base.as_ref())?
            }
            Some(state) => {
                let meta = fs::symlink_metadata(&location.file)
                    .map_err(|e| StoreError::io("inspect", &location.file, e))?;
                let stamp = LogStamp::of(&meta);
                record(
                    &project,
                    writer.file_len().min(stamp.len),
                    stamp,
                    state.clone(),
                )
            }
        };
        write_sidecar(&home, &record)?;
        self.state = Some(record.summary);
        self.dirty = false;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Encoding, SessionStore, SessionWriter};

    fn line(kind: &str, seq: u64, time: u64, data: &str) -> String {
        format!(r#"{{"type":"{kind}","seq":{seq},"time":{time},"data":{data}}}"#)
    }

    fn writer(home: &Path, id: &str, encoding: Encoding) -> SessionWriter {
        let store = SessionStore::new(home);
        let header = SessionHeader::root(id, 100, Some("/ws".into()));
        SessionWriter::create(&store, &header, encoding).unwrap()
    }

    fn project_of(location: &SessionLocation) -> String {
        names_of(&location.dir)
            .map(|(_, p, _)| p)
            .unwrap_or_default()
    }

    #[test]
    fn a_log_is_summarised_from_its_header_then_only_what_grew() {
        for encoding in [Encoding::Zstd, Encoding::Plain] {
            let home = tempfile::tempdir().unwrap();
            let mut w = writer(home.path(), "s/1", encoding);
            w.append(&line("turn/start", 0, 110, r#"{"turn":1}"#))
                .unwrap();
            w.append(&line(
                "session/title",
                1,
                120,
                r#"{"title":"Hello","messageSeqs":[],"source":{"kind":"fallback"}}"#,
            ))
            .unwrap();
            w.append(&line(
                "turn/end",
                2,
                130,
                r#"{"turn":1,"reason":{"kind":"completed"}}"#,
            ))
            .unwrap();
            w.flush().unwrap();
            let location = w.location().clone();
            let project = project_of(&location);
            let first = summarize(&location, &project, None).unwrap();
            assert_eq!(first.summary.title.as_deref(), Some("Hello"));
            assert_eq!(
                (
                    first.summary.turns,
                    first.summary.updated_at,
                    first.summary.next_seq
                ),
                (1, 130, 3)
            );
            assert_eq!(first.summary.cwd.as_deref(), Some("/ws"));
            assert_eq!(first.scanned, w.file_len());
            // Unchanged: the same record.
            assert_eq!(summarize(&location, &project, Some(&first)).unwrap(), first);
            // Grown: read on from `scanned`.
            w.append(&line("turn/start", 3, 140, r#"{"turn":2}"#))
                .unwrap();
            w.flush().unwrap();
            let second = summarize(&location, &project, Some(&first)).unwrap();
            assert_eq!((second.summary.turns, second.summary.updated_at), (2, 140));
            assert_eq!(second, summarize(&location, &project, None).unwrap());
            // A base that does not fit the log (another seq) is dropped.
            let mut wrong = first.clone();
            wrong.summary.next_seq = 7;
            wrong.log.len = 1;
            assert_eq!(
                summarize(&location, &project, Some(&wrong)).unwrap(),
                second
            );
        }
    }

    #[test]
    fn sidecars_round_trip_and_the_tracker_keeps_them_current() {
        let home = tempfile::tempdir().unwrap();
        let mut w = writer(home.path(), "tracked", Encoding::Zstd);
        let mut tracker = SummaryTracker::new();
        w.append(&line("turn/start", 0, 110, r#"{"turn":1}"#))
            .unwrap();
        w.flush().unwrap();
        tracker.observe("turn/start", 0, 110, Vec::new);
        // Nothing is known yet: only a save reads the log.
        tracker.save_if_changed(&w);
        assert!(read_sidecar(home.path(), "tracked").is_none());
        tracker.save(&w);
        let stored = read_sidecar(home.path(), "tracked").unwrap();
        assert_eq!((stored.summary.turns, stored.summary.next_seq), (1, 1));
        let title = line(
            "session/title",
            1,
            150,
            r#"{"title":"T","messageSeqs":[],"source":{"kind":"fallback"}}"#,
        );
        w.append(&title).unwrap();
        w.flush().unwrap();
        tracker.observe("session/title", 1, 150, || title.clone().into_bytes());
        tracker.save_if_changed(&w);
        let stored = read_sidecar(home.path(), "tracked").unwrap();
        assert_eq!(stored.summary.title.as_deref(), Some("T"));
        assert_eq!(stored.summary.updated_at, 150);
        let location = w.location().clone();
        // The saved record is current: summarising from it reads nothing.
        assert_eq!(
            summarize(&location, &stored.project, Some(&stored)).unwrap(),
            stored
        );
        let mode = fs::metadata(summary_dir(home.path()).join("tracked"))
            .map(|m| m.mode() & 0o777)
            .unwrap_or(0);
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_bad_line_or_header_is_corruption() {
        let home = tempfile::tempdir().unwrap();
        let mut w = writer(home.path(), "bad", Encoding::Plain);
        w.append(&line("turn/start", 5, 110, "{}")).unwrap();
        w.flush().unwrap();
        let location = w.location().clone();
        let err = summarize(&location, &project_of(&location), None).err();
        assert!(
            err.as_ref()
                .is_some_and(|e| e.to_string().contains("expected seq 0, found 5")),
            "{err:?}"
        );
        let other = SessionLocation::new("other", location.dir.clone(), Encoding::Plain);
        let err = summarize(&other, &project_of(&location), None).err();
        assert!(
            err.as_ref()
                .is_some_and(|e| e.to_string().contains("does not match")),
            "{err:?}"
        );
    }
}
