//! Listing the sessions of a store, newest first, a page at a time
//! ([`crate::store::SessionStore::list_sessions`]), without reading their
//! logs.
//!
//! A listing walks `sessions/` (every project directory, or only the one a
//! `cwd` filter names), takes the metadata of each log and serves its
//! summary from, in order: the process's cache (kept per `DSH_HOME`, valid
//! while the log's stamp, its length, modification time and inode, is
//! unchanged), the session's sidecar, or a read of what the log holds past
//! them (see the `summary` module). Over 10 000 unchanged sessions that is one
//! directory entry and one `stat` per session.
//!
//! The first listing in a process starts its cache from
//! `DSH_HOME/session-summary/~listing`, every summary in one file, which a
//! listing rewrites (a temporary file renamed into place) when it had to
//! compute at least [`crate::store::AGGREGATE_AFTER`] summaries anew: a new
//! process then reads one file instead of one sidecar per session. Like the
//! sidecars it is a cache, checked entry by entry against the logs.
//!
//! A session directory whose log cannot be summarised (corrupt, of another
//! format, unreadable, a header naming another id) is left out with a
//! warning, once per change of its log; it never fails the listing.

use super::error::StoreError;
use super::index::is_project_name;
use super::layout::{Encoding, SessionLocation, SessionStore};
use super::lock::SessionLock;
use super::names::{encode_session_id, project_key};
use super::summary::{
    LogStamp, SessionSummary, SummaryRecord, read_sidecar, replace_in_summary_dir, summarize,
    summary_dir, write_sidecar,
};
use crate::private_fs::{open_file, runtime_uid};
use rustix::fs::{AtFlags, FileType, statat};
use std::collections::{BTreeMap, HashMap};
use std::fs::{self, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The file holding every summary, read by a process's first listing.
const AGGREGATE: &str = "~listing";
/// A listing that computed this many summaries anew rewrites the
/// aggregate file.
pub const AGGREGATE_AFTER: usize = 64;
/// The largest aggregate file read.
const MAX_AGGREGATE: u64 = 256 << 20;
/// What the aggregate file is called in errors.
const AGGREGATE_WHAT: &str = "session summary list";

/// What to list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// Only sessions created in this working directory (compared as
    /// stored in the header, exactly).
    pub cwd: Option<String>,
    /// Only sessions whose title or id contains this text, compared
    /// without case.
    pub query: Option<String>,
    /// Only sessions after this position (the last of the previous page).
    pub after: Option<ListKey>,
    /// Most sessions returned.
    pub limit: usize,
}

/// A session's position in a listing: newest `updated_at` first, then by
/// id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListKey {
    /// The session's last activity, epoch milliseconds.
    pub updated_at: u64,
    /// The session id.
    pub session_id: String,
}

impl ListKey {
    /// Whether a session at `(updated_at, id)` comes after this position.
    fn precedes(&self, updated_at: u64, id: &str) -> bool {
        updated_at < self.updated_at
            || (updated_at == self.updated_at && id > self.session_id.as_str())
    }
}

/// One session of a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedSession {
    /// What the log says.
    pub summary: SessionSummary,
    /// Its session directory.
    pub dir: PathBuf,
}

impl ListedSession {
    /// Whether a live write handle (this process's or another's) holds the
    /// session's lock: it is open in a runtime. The lock is taken and
    /// released at once when it is free; an error reads as not held.
    pub fn is_locked(&self) -> bool {
        let path = self.dir.join(super::files::LOCK_FILE);
        SessionLock::is_held(&path).unwrap_or_else(|err| {
            tracing::debug!(lock = %path.display(), "session lock not probed: {err}");
            false
        })
    }
}

/// A page of a listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListPage {
    /// The sessions, newest first.
    pub sessions: Vec<ListedSession>,
    /// Where the next page starts, when there are more sessions.
    pub next: Option<ListKey>,
}

/// A cached summary, or a log that could not be summarised as it was.
#[derive(Debug, Clone)]
enum Cached {
    Good(SummaryRecord),
    Broken(LogStamp),
}

/// The summaries a process knows of one `DSH_HOME`, by
/// `<project>/<encoded id>`.
#[derive(Debug, Default)]
struct Cache {
    entries: HashMap<String, Cached>,
    /// Whether the aggregate file was read.
    loaded: bool,
}

/// Every cache of the process, by `DSH_HOME`.
static CACHES: Mutex<BTreeMap<PathBuf, Cache>> = Mutex::new(BTreeMap::new());

impl SessionStore {
    /// A page of the stored sessions matching `query`, newest activity
    /// first (ties by id); see the module doc for what it reads. Fails only
    /// when `sessions/` or a project directory named by the `cwd` filter
    /// cannot be read; a missing one lists nothing.
    pub fn list_sessions(&self, query: &ListQuery) -> Result<ListPage, StoreError> {
        let home = self.home().to_path_buf();
        let sessions = self.sessions_dir();
        let projects = match &query.cwd {
            Some(cwd) => vec![project_key(Some(Path::new(cwd)))],
            None => project_names(&sessions)?,
        };
        let mut caches = CACHES.lock().unwrap_or_else(PoisonError::into_inner);
        let cache = caches.entry(home.clone()).or_default();
        if !cache.loaded {
            cache.entries = load_aggregate(&home);
            cache.loaded = true;
        }
        let mut fresh = HashMap::with_capacity(cache.entries.len());
        let mut computed = 0;
        for project in &projects {
            let project_dir = sessions.join(project);
            // Logs are looked at relative to their project directory: a
            // short path for the kernel to walk, 10 000 times over.
            let opened = fs::read_dir(&project_dir)
                .and_then(|entries| Ok((entries, fs::File::open(&project_dir)?)));
            let (entries, handle) = match opened {
                Ok(opened) => opened,
                Err(err) if err.kind() == io::ErrorKind::NotFound => continue,
                Err(err) => {
                    tracing::warn!(dir = %project_dir.display(), "project directory not listed: {err}");
                    continue;
                }
            };
            for entry in entries.flatten() {
                if !entry.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                let name = entry.file_name();
                let Some(segment) = name.to_str() else {
                    continue;
                };
                let Some((encoding, stamp)) = find_log(&handle, &project_dir, segment) else {
                    continue;
                };
                let key = format!("{project}/{segment}");
                let cached = match cache.entries.remove(&key) {
                    Some(Cached::Good(record)) if record.log == stamp => Cached::Good(record),
                    Some(Cached::Broken(broken)) if broken == stamp => Cached::Broken(broken),
                    known => {
                        computed += 1;
                        let dir = entry.path();
                        let site = Site {
                            home: &home,
                            project,
                            segment,
                            dir: &dir,
                            encoding,
                            stamp,
                        };
                        resolve(&site, known)
                    }
                };
                fresh.insert(key, cached);
            }
        }
        if query.cwd.is_some() {
            // Only one project directory was walked: keep the others'.
            let walked: Vec<String> = projects.iter().map(|p| format!("{p}/")).collect();
            fresh.extend(
                cache
                    .entries
                    .drain()
                    .filter(|(key, _)| !walked.iter().any(|w| key.starts_with(w.as_str()))),
            );
        }
        cache.entries = fresh;
        if computed >= AGGREGATE_AFTER {
            save_aggregate(&home, &cache.entries);
        }
        Ok(page(&sessions, &cache.entries, query))
    }
}

/// The names of the project directories under `sessions`.
fn project_names(sessions: &Path) -> Result<Vec<String>, StoreError> {
    let entries = match fs::read_dir(sessions) {
        Ok(entries) => entries,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => return Err(StoreError::io("read directory", sessions, err)),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io("read directory", sessions, e))?;
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if let (true, Some(name)) = (is_dir, entry.file_name().to_str())
            && is_project_name(name)
        {
            names.push(name.to_owned());
        }
    }
    Ok(names)
}

/// The log of session directory `segment` of the project directory
/// `project` (open as `handle`) and its stamp: a regular file owned by the
/// runtime, not followed if it is a symbolic link (zstd first, as a session
/// directory never holds both).
fn find_log(handle: &fs::File, project: &Path, segment: &str) -> Option<(Encoding, LogStamp)> {
    for encoding in [Encoding::Zstd, Encoding::Plain] {
        let path = format!("{segment}/{}", encoding.file_name());
        let Ok(stat) = statat(handle, path.as_str(), AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile
            && stat.st_uid == runtime_uid()
        {
            return Some((encoding, LogStamp::of_stat(&stat)));
        }
        tracing::warn!(dir = %project.join(segment).display(), "session log not listed: not a regular file of this user");
        return None;
    }
    None
}

/// Where a session directory is.
struct Site<'a> {
    home: &'a Path,
    project: &'a str,
    segment: &'a str,
    dir: &'a Path,
    encoding: Encoding,
    stamp: LogStamp,
}

/// The summary of a session whose cached one (`known`) is missing or stale:
/// from its sidecar and what its log holds after it, saved back to the
/// sidecar when it changed.
fn resolve(site: &Site<'_>, known: Option<Cached>) -> Cached {
    let Some(id) = decode_session_id(site.segment) else {
        tracing::warn!(dir = %site.dir.display(), "session directory not listed: its name is not an encoded session id");
        return Cached::Broken(site.stamp);
    };
    let sidecar = read_sidecar(site.home, site.segment).filter(|r| r.project == site.project);
    let cached = match known {
        Some(Cached::Good(record)) => Some(record),
        _ => None,
    };
    // The base that covers more of the log.
    let base = match (cached, &sidecar) {
        (Some(cached), Some(side)) if side.log == site.stamp || side.scanned > cached.scanned => {
            Some(side.clone())
        }
        (Some(cached), _) => Some(cached),
        (None, side) => side.clone(),
    };
    let location = SessionLocation::new(id, site.dir.to_path_buf(), site.encoding);
    match summarize(&location, site.project, base.as_ref()) {
        Ok(record) => {
            if sidecar.as_ref() != Some(&record)
                && let Err(err) = write_sidecar(site.home, &record)
            {
                tracing::debug!(session = %location.id, "session summary not saved: {err}");
            }
            Cached::Good(record)
        }
        Err(err) => {
            tracing::warn!(dir = %site.dir.display(), "session not listed: {err}");
            Cached::Broken(site.stamp)
        }
    }
}

/// The page of `entries` that `query` asks for.
fn page(sessions: &Path, entries: &HashMap<String, Cached>, query: &ListQuery) -> ListPage {
    let needle = query.query.as_deref().map(str::to_lowercase);
    let mut matching: Vec<&SummaryRecord> = entries
        .values()
        .filter_map(|cached| match cached {
            Cached::Good(record) => Some(record),
            Cached::Broken(_) => None,
        })
        .filter(|record| {
            let summary = &record.summary;
            query
                .cwd
                .as_ref()
                .is_none_or(|cwd| summary.cwd.as_ref() == Some(cwd))
                && query
                    .after
                    .as_ref()
                    .is_none_or(|after| after.precedes(summary.updated_at, &summary.id))
                && needle.as_deref().is_none_or(|needle| {
                    summary.id.to_lowercase().contains(needle)
                        || summary
                            .title
                            .as_ref()
                            .is_some_and(|title| title.to_lowercase().contains(needle))
                })
        })
        .collect();
    let order = |a: &&SummaryRecord, b: &&SummaryRecord| {
        b.summary
            .updated_at
            .cmp(&a.summary.updated_at)
            .then_with(|| a.summary.id.cmp(&b.summary.id))
    };
    let limit = query.limit.max(1);
    if matching.len() > limit {
        matching.select_nth_unstable_by(limit, order);
        matching.truncate(limit + 1);
    }
    matching.sort_unstable_by(order);
    let more = matching.len() > limit;
    matching.truncate(limit);
    let next = match (more, matching.last()) {
        (true, Some(last)) => Some(ListKey {
            updated_at: last.summary.updated_at,
            session_id: last.summary.id.clone(),
        }),
        _ => None,
    };
    ListPage {
        sessions: matching
            .into_iter()
            .map(|record| ListedSession {
                dir: sessions
                    .join(&record.project)
                    .join(encode_session_id(&record.summary.id)),
                summary: record.summary.clone(),
            })
            .collect(),
        next,
    }
}

/// The summaries of the aggregate file of `home` (none when it is missing
/// or unreadable; a line that does not parse is skipped).
fn load_aggregate(home: &Path) -> HashMap<String, Cached> {
    let path = summary_dir(home).join(AGGREGATE);
    let mut text = Vec::new();
    let read = open_file(AGGREGATE_WHAT, &path, OpenOptions::new().read(true))
        .map_err(|err| err.to_string())
        .and_then(|file| {
            file.take(MAX_AGGREGATE)
                .read_to_end(&mut text)
                .map_err(|err| err.to_string())
        });
    if let Err(err) = read {
        tracing::debug!(file = %path.display(), "session summary list not read: {err}");
        return HashMap::new();
    }
    text.split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice::<SummaryRecord>(line).ok())
        .map(|record| {
            let key = format!(
                "{}/{}",
                record.project,
                encode_session_id(&record.summary.id)
            );
            (key, Cached::Good(record))
        })
        .collect()
}

/// Rewrites the aggregate file of `home` with every good entry (a failure
/// is logged: the file is only a cache).
fn save_aggregate(home: &Path, entries: &HashMap<String, Cached>) {
    let mut text = Vec::with_capacity(entries.len() * 320);
    for cached in entries.values() {
        if let Cached::Good(record) = cached
            && serde_json::to_writer(&mut text, record).is_ok()
        {
            text.push(b'\n');
        }
    }
    if let Err(err) = replace_in_summary_dir(home, AGGREGATE, &text) {
        tracing::debug!(home = %home.display(), "session summary list not saved: {err}");
    }
}

/// The session id a session directory name encodes (see
/// [`encode_session_id`]), `None` when the name is not one it writes.
pub fn decode_session_id(segment: &str) -> Option<String> {
    let mut units: Vec<u16> = Vec::with_capacity(segment.len());
    let mut rest = segment;
    while let Some(c) = rest.chars().next() {
        if c == '~' {
            let hex = rest.get(1..5)?;
            if !hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b))
            {
                return None;
            }
            units.push(u16::from_str_radix(hex, 16).ok()?);
            rest = &rest[5..];
        } else {
            let mut buf = [0u16; 2];
            units.extend_from_slice(c.encode_utf16(&mut buf));
            rest = &rest[c.len_utf8()..];
        }
    }
    let id = String::from_utf16(&units).ok()?;
    (encode_session_id(&id) == segment).then_some(id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{SessionHeader, SessionWriter};

    fn create(store: &SessionStore, id: &str, cwd: &str, created: u64, title: Option<&str>) {
        let header = SessionHeader::root(id, created, Some(cwd.to_owned()));
        let mut writer = SessionWriter::create(store, &header, Encoding::Zstd).unwrap();
        writer
            .append(&format!(
                r#"{{"type":"turn/start","seq":0,"time":{created},"data":{{"turn":1}}}}"#
            ))
            .unwrap();
        if let Some(title) = title {
            writer
                .append(&format!(
                    r#"{{"type":"session/title","seq":1,"time":{},"data":{{"title":"{title}","messageSeqs":[],"source":{{"kind":"fallback"}}}}}}"#,
                    created + 1
                ))
                .unwrap();
        }
        writer.close().unwrap();
    }

    fn ids(page: &ListPage) -> Vec<&str> {
        page.sessions
            .iter()
            .map(|s| s.summary.id.as_str())
            .collect()
    }

    fn query(limit: usize) -> ListQuery {
        ListQuery {
            limit,
            ..ListQuery::default()
        }
    }

    #[test]
    fn sessions_come_newest_first_a_page_at_a_time() {
        let home = tempfile::tempdir().unwrap();
        let store = SessionStore::new(home.path());
        assert_eq!(
            store.list_sessions(&query(10)).unwrap(),
            ListPage::default()
        );
        create(&store, "a", "/w1", 100, Some("Alpha task"));
        create(&store, "b", "/w2", 300, None);
        create(&store, "c", "/w1", 200, Some("gamma"));
        create(&store, "d", "/w1", 300, None);
        let all = store.list_sessions(&query(10)).unwrap();
        assert_eq!(ids(&all), ["b", "d", "c", "a"]);
        assert_eq!(all.next, None);
        let first = store.list_sessions(&query(3)).unwrap();
        assert_eq!(ids(&first), ["b", "d", "c"]);
        let second = store
            .list_sessions(&ListQuery {
                after: first.next.clone(),
                ..query(3)
            })
            .unwrap();
        assert_eq!((ids(&second), &second.next), (vec!["a"], &None));
        let in_w1 = store
            .list_sessions(&ListQuery {
                cwd: Some("/w1".into()),
                ..query(10)
            })
            .unwrap();
        assert_eq!(ids(&in_w1), ["d", "c", "a"]);
        let found = store
            .list_sessions(&ListQuery {
                query: Some("ALPHA".into()),
                ..query(10)
            })
            .unwrap();
        assert_eq!(ids(&found), ["a"]);
        assert_eq!(
            found.sessions[0].summary.title.as_deref(),
            Some("Alpha task")
        );
        let by_id = store
            .list_sessions(&ListQuery {
                query: Some("D".into()),
                ..query(10)
            })
            .unwrap();
        assert_eq!(ids(&by_id), ["d"]);
        // Every listed session has its sidecar now.
        for id in ["a", "b", "c", "d"] {
            assert!(read_sidecar(home.path(), id).is_some(), "{id}");
        }
    }

    #[test]
    fn a_corrupt_or_deleted_session_is_left_out_and_a_changed_one_read_again() {
        let home = tempfile::tempdir().unwrap();
        let store = SessionStore::new(home.path());
        create(&store, "good", "/w", 100, None);
        create(&store, "bad", "/w", 200, None);
        create(&store, "gone", "/w", 300, None);
        assert_eq!(
            ids(&store.list_sessions(&query(10)).unwrap()),
            ["gone", "bad", "good"]
        );
        let bad = store.locate("bad").unwrap().unwrap();
        fs::write(&bad.file, b"not zstd at all").unwrap();
        let gone = store.locate("gone").unwrap().unwrap();
        fs::remove_dir_all(&gone.dir).unwrap();
        assert_eq!(ids(&store.list_sessions(&query(10)).unwrap()), ["good"]);
        // A lock-only directory (a session being created) is not listed.
        fs::create_dir_all(home.path().join("sessions/--w--/new")).unwrap();
        fs::write(home.path().join("sessions/--w--/new/session.lock"), b"").unwrap();
        // The good session grows: its summary moves on.
        let location = store.locate("good").unwrap().unwrap();
        let (mut writer, _) = SessionWriter::resume(&location).unwrap();
        writer
            .append(r#"{"type":"turn/start","seq":1,"time":500,"data":{"turn":2}}"#)
            .unwrap();
        writer.flush().unwrap();
        let page = store.list_sessions(&query(10)).unwrap();
        assert_eq!(ids(&page), ["good"]);
        assert_eq!(
            (
                page.sessions[0].summary.turns,
                page.sessions[0].summary.updated_at
            ),
            (2, 500)
        );
        // The writer holds the lock.
        assert!(page.sessions[0].is_locked());
        drop(writer);
        assert!(!page.sessions[0].is_locked());
    }

    #[test]
    fn a_new_process_starts_from_the_aggregate_file() {
        let home = tempfile::tempdir().unwrap();
        let store = SessionStore::new(home.path());
        for i in 0..AGGREGATE_AFTER {
            create(&store, &format!("s{i:03}"), "/w", 1000 + i as u64, None);
        }
        let page = store.list_sessions(&query(5)).unwrap();
        assert_eq!(ids(&page), ["s063", "s062", "s061", "s060", "s059"]);
        let aggregate = load_aggregate(home.path());
        assert_eq!(aggregate.len(), AGGREGATE_AFTER);
        // Forget this process's cache and every sidecar: the next listing
        // is served from the file, without reading any log.
        CACHES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(home.path());
        for i in 0..AGGREGATE_AFTER {
            fs::remove_file(summary_dir(home.path()).join(format!("s{i:03}"))).unwrap();
        }
        assert_eq!(
            ids(&store.list_sessions(&query(2)).unwrap()),
            ["s063", "s062"]
        );
        assert!(read_sidecar(home.path(), "s063").is_none());
    }

    #[test]
    fn ids_decode_back_from_their_directory_names() {
        for id in ["plain-1.x_y", "a/b~c", "..", ".", "é😀 x", "~0041"] {
            assert_eq!(
                decode_session_id(&encode_session_id(id)).as_deref(),
                Some(id)
            );
        }
        for bad in ["~00", "~zzzz", "~0041", "~D800", "a~002f"] {
            assert_eq!(decode_session_id(bad), None, "{bad}");
        }
    }
}
