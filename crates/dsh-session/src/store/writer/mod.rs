//! The one write handle of a session log: [`SessionWriter`].

mod batch;
mod replace;

use super::claim::{Claim, claim};
use super::compress;
use super::error::StoreError;
use super::fsutil::sync_data;
use super::header::{FORMAT_VERSION, SessionHeader};
use super::layout::{Encoding, LOG_WHAT, SessionLocation, SessionStore};
use super::lock::SessionLock;
use super::reader::{StoredSession, TailFix};
use crate::private_fs::open_file;
use dsh_protocol::JsonRope;
use dsh_protocol::catalog::SessionEvent;
use replace::{rewrite_tail, sync_dirs};
use serde_json::value::RawValue;
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};

/// Event lines at least this long, with nothing buffered before them, are
/// written straight from the caller's bytes ([`SessionWriter::append_rope`]).
const DIRECT_BYTES: usize = 64 * 1024;

/// The one write handle of a session log.
///
/// # Lifecycle
///
/// * [`SessionWriter::create`] claims the id before returning: it checks
///   that no log with the id exists anywhere under `sessions/`, creates the
///   missing directories (mode 0700: `DSH_HOME`, `sessions/`, the project
///   directory, the session directory), opens `session.lock` (empty, 0600)
///   and takes an exclusive non-blocking kernel `flock` on it for the
///   writer's lifetime, so a second creator of the id, here or in another
///   process, is refused at once (see `claim` for the errors). Unlike the
///   official runtime, whose created session has no footprint until its
///   first write (§11.4), the session directory and its lock file exist
///   from creation; the log does not.
/// * The first [`flush`](SessionWriter::flush) that has events to write
///   writes the header line and the buffered events as the first batch into
///   a temporary file that is renamed to the log name (0600). The log
///   therefore never exists without a complete first batch, header included.
/// * A writer dropped without ever writing removes its lock file and empty
///   directories again, leaving no footprint. A crashed creator leaves a
///   directory holding only an unlocked `session.lock`, which
///   [`SessionStore::locate`] ignores and a later creation reuses.
/// * [`SessionWriter::open_append`] (or [`SessionWriter::resume`], which
///   locks before reading) reopens an existing log: it takes the lock,
///   removes a torn tail the reader found, and appends after the existing
///   content (new zstd frames after the old ones).
/// * The lock belongs to the writer's open file description of
///   `session.lock`: a second writer fails with [`StoreError::Locked`]
///   whether it is in another process or in this one, and dropping the
///   writer releases it. `session.lock` is never deleted once a log exists.
/// * Every file is opened without following a symbolic link and must be a
///   regular file owned by the runtime ([`StoreError::Refused`] otherwise).
///
/// # Batches
///
/// [`append`](SessionWriter::append) buffers one event line: the exact bytes
/// given plus `\n` (`sourceEventSeqs` is written as given, as a plain list;
/// the reader also accepts `[start,end]` runs). [`flush`](SessionWriter::flush)
/// writes everything buffered as one batch with one `write` to the end of
/// the file: for [`Encoding::Zstd`] one zstd frame (with a content checksum),
/// for [`Encoding::Plain`] the bytes as they are. Appending never reads the
/// file, so its cost is proportional to the batch, not to the log.
///
/// If a write fails, the file is cut back to its previous length and the
/// batch stays buffered, so a later flush retries it; if even the cut fails
/// the writer is poisoned and refuses further writes rather than append
/// after partial bytes.
///
/// # Durability: `flush` does not fsync
///
/// [`flush`](SessionWriter::flush) hands the batch to the kernel and
/// returns: the events survive the process being killed, not a machine
/// crash. [`sync`](SessionWriter::sync) flushes and then `fdatasync`s the log
/// (and, once, `fsync`s the directories whose entries the first flush or a
/// tail repair created or renamed), which also survives power loss. The
/// session's [`EventLog`](crate::EventLog) flushes after every event, before
/// notifying it (one batch, so one zstd frame, per event while writes
/// succeed); sync belongs at the few points where losing the tail of a
/// session to a power cut matters more than a few milliseconds (session
/// disposal, shutdown, after a resume repair). Measured with
/// `examples/store_flush_cost.rs` on the development machine (ext4 on a
/// virtio disk, release build, events of ≈300 bytes): a flush costs ≈7–9 µs
/// per batch with zstd whether it holds 1 or 10 events (compressing is most
/// of it: ≈5 µs per frame) and ≈2–4 µs plain, a sync ≈0.2–1.2 ms with
/// either (it varies with the device), i.e. 25 to 300 times more, all of it
/// the device flush. What a
/// machine crash costs an unsynced log is its end (on Linux file systems in
/// their default ordered-data modes, appended data reaches the disk before
/// the size that covers it); a final write cut short is the torn tail the
/// reader tolerates and [`SessionWriter::open_append`] repairs.
///
/// Dropping a writer flushes what is still buffered (a failure is logged with
/// `tracing`, as `Drop` cannot return it); call [`close`](SessionWriter::close)
/// to see the error.
pub struct SessionWriter {
    location: SessionLocation,
    sink: Sink,
    /// Buffered bytes: the header line before the first write, then event
    /// lines, each ending in `\n`.
    buf: Vec<u8>,
    /// Events in `buf`.
    buffered: usize,
    /// Tests: this many writes of the open log fail with `ENOSPC`.
    #[cfg(test)]
    pub(crate) failing_writes: usize,
}

/// Where flushed batches go.
enum Sink {
    /// Created: the directory exists and the lock is held; no log yet.
    Claimed {
        /// The claim.
        claim: Claim,
        /// The store the session is created in.
        store: SessionStore,
    },
    /// The log is open and locked.
    Open(OpenLog),
    /// A failed write could not be undone. The lock (if any) is kept while
    /// the writer lives, so nobody else appends after the partial bytes.
    Poisoned {
        /// The lock, kept until the writer is dropped.
        _lock: Option<SessionLock>,
    },
}

/// An open, locked log.
struct OpenLog {
    file: File,
    _lock: SessionLock,
    /// Bytes in the file (all of them complete batches).
    len: u64,
    /// Directories with entries not yet made durable by `sync`.
    unsynced_dirs: Vec<PathBuf>,
}

impl std::fmt::Debug for SessionWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionWriter")
            .field("location", &self.location)
            .field("on_disk", &self.is_on_disk())
            .field("buffered", &self.buffered)
            .finish()
    }
}

impl SessionWriter {
    /// A writer for a new session described by `header`, stored in the
    /// project directory of `header.cwd` with `encoding`. The session
    /// directory is created and its lock taken now; the log is written at
    /// the first [`flush`](Self::flush) with events.
    ///
    /// Fails with [`StoreError::AlreadyExists`] when a log with the id exists
    /// anywhere under `sessions/`, with [`StoreError::Locked`] when another
    /// live handle (a creator that has not written yet) holds a lock of the
    /// id, with [`StoreError::Refused`] when an entry on the way is a
    /// symbolic link or not the runtime's, and with
    /// [`StoreError::InvalidHeader`] for a header of another format version
    /// or with an empty id.
    pub fn create(
        store: &SessionStore,
        header: &SessionHeader,
        encoding: Encoding,
    ) -> Result<Self, StoreError> {
        if header.version != FORMAT_VERSION {
            return Err(StoreError::InvalidHeader {
                reason: format!(
                    "version {} (this store writes version {FORMAT_VERSION})",
                    header.version
                ),
            });
        }
        if header.id.is_empty() {
            return Err(StoreError::InvalidHeader {
                reason: "empty session id".to_owned(),
            });
        }
        let location =
            store.location_for(header.cwd.as_deref().map(Path::new), &header.id, encoding);
        let mut buf = serde_json::to_vec(header).map_err(|e| StoreError::InvalidHeader {
            reason: e.to_string(),
        })?;
        buf.push(b'\n');
        let claim = claim(store, &location)?;
        Ok(Self {
            location,
            sink: Sink::Claimed {
                claim,
                store: store.clone(),
            },
            buf,
            buffered: 0,
            #[cfg(test)]
            failing_writes: 0,
        })
    }

    /// Reopens the log at `location` for appending, given what
    /// [`SessionReader::read`](super::SessionReader::read) returned for it: takes the lock (or fails with
    /// [`StoreError::Locked`]), checks that the file is still the one that
    /// was read ([`StoreError::Stale`] otherwise), removes a torn tail
    /// without losing complete events, and positions new batches after the
    /// existing content.
    ///
    /// Torn tails: a partial plain line is cut off (`ftruncate` + `fdatasync`);
    /// a plain final line that only lacks its `\n` is kept and the next batch
    /// starts with the `\n`; a truncated zstd frame from which nothing could
    /// be decoded is cut off the same way; one that still held complete lines
    /// is replaced by a fresh frame holding those lines, written to a
    /// temporary file (synced) that is renamed over the log (directory
    /// synced), so a crash during the repair leaves either the old or the
    /// new file, never less.
    pub fn open_append(
        location: &SessionLocation,
        stored: &StoredSession,
    ) -> Result<Self, StoreError> {
        if stored.file != location.file {
            return Err(StoreError::Stale {
                file: location.file.clone(),
            });
        }
        let lock = SessionLock::acquire(&location.lock_file(), &location.id)?;
        let len = fs::symlink_metadata(&location.file)
            .map_err(|e| StoreError::io("inspect", &location.file, e))?
            .len();
        if len != stored.file_len {
            return Err(StoreError::Stale {
                file: location.file.clone(),
            });
        }
        Self::reopen(location, lock, &stored.tail)
    }

    pub(crate) fn reopen(
        location: &SessionLocation,
        lock: SessionLock,
        tail: &TailFix,
    ) -> Result<Self, StoreError> {
        let mut buf = Vec::new();
        let mut unsynced_dirs = Vec::new();
        match tail {
            TailFix::Clean => {}
            TailFix::Newline => buf.push(b'\n'),
            TailFix::Truncate { len } => {
                let file = open_file(LOG_WHAT, &location.file, OpenOptions::new().write(true))?;
                file.set_len(*len)
                    .map_err(|e| StoreError::io("truncate", &location.file, e))?;
                sync_data(&file, &location.file)?;
            }
            TailFix::Rewrite { keep, salvaged } => {
                rewrite_tail(location, *keep, salvaged)?;
                unsynced_dirs.push(location.dir.clone());
                sync_dirs(&mut unsynced_dirs)?;
            }
        }
        let file = open_file(LOG_WHAT, &location.file, OpenOptions::new().append(true))?;
        let len = file
            .metadata()
            .map_err(|e| StoreError::io("inspect", &location.file, e))?
            .len();
        Ok(Self {
            location: location.clone(),
            sink: Sink::Open(OpenLog {
                file,
                _lock: lock,
                len,
                unsynced_dirs,
            }),
            buf,
            buffered: 0,
            #[cfg(test)]
            failing_writes: 0,
        })
    }

    /// Where the log is (or will be).
    pub fn location(&self) -> &SessionLocation {
        &self.location
    }

    /// Whether the log exists on disk (the first batch was written or the
    /// log was reopened).
    pub fn is_on_disk(&self) -> bool {
        matches!(self.sink, Sink::Open(_))
    }

    /// Events appended but not yet flushed.
    pub fn buffered_events(&self) -> usize {
        self.buffered
    }

    /// Bytes of the log file written so far (0 before the first write).
    pub fn file_len(&self) -> u64 {
        match &self.sink {
            Sink::Open(log) => log.len,
            _ => 0,
        }
    }

    /// Buffers one event line: `line` as given (one compact JSON envelope,
    /// no `\n`; lone-surrogate markers written back as `\udXXX` escapes, see
    /// [`dsh_protocol::surrogates`]) plus `\n`.
    pub fn append(&mut self, line: &str) -> Result<(), StoreError> {
        self.append_bytes(line.as_bytes())
    }

    /// One serialised event (compact JSON whose lone surrogates are already
    /// escapes, so it is stored as given) and the `\n` that ends its line.
    /// A large event with nothing buffered before it is written at once,
    /// straight from its segments (one batch, as [`flush`](Self::flush)
    /// would write it: for zstd one frame, compressed as it is written), so
    /// that a huge event is never copied whole; anything else is buffered as
    /// by [`append`](Self::append).
    pub fn append_rope(&mut self, event: &JsonRope) -> Result<(), StoreError> {
        self.check_line(event.is_empty(), event.contains(b'\n'))?;
        let direct = event.len() >= DIRECT_BYTES
            && self.buffered == 0
            && self.buf.is_empty()
            && matches!(self.sink, Sink::Open(_));
        if !direct {
            self.buf.reserve(event.len() + 1);
            for segment in event.segments() {
                self.buf.extend_from_slice(segment);
            }
            self.buf.push(b'\n');
            self.buffered += 1;
            return Ok(());
        }
        let file = self.location.file.clone();
        match self.location.encoding {
            Encoding::Plain => self.write_open_with(|out| event.write_line_to(out)),
            Encoding::Zstd => self.write_open_with(|out| compress::write_frame(out, event, &file)),
        }
    }

    /// [`append`](Self::append) for a line given as UTF-8 bytes.
    pub fn append_bytes(&mut self, line: &[u8]) -> Result<(), StoreError> {
        self.check_line(line.is_empty(), memchr::memchr(b'\n', line).is_some())?;
        self.buf.reserve(line.len() + 1);
        dsh_protocol::surrogates::decode_into(&mut self.buf, line);
        self.buf.push(b'\n');
        self.buffered += 1;
        Ok(())
    }

    /// Refuses a line while the writer is poisoned, and an event line that
    /// is `empty` or holds a line break.
    fn check_line(&self, empty: bool, line_break: bool) -> Result<(), StoreError> {
        if matches!(self.sink, Sink::Poisoned { .. }) {
            return Err(self.poisoned());
        }
        if !(empty || line_break) {
            return Ok(());
        }
        Err(StoreError::InvalidEvent {
            id: self.location.id.clone(),
            reason: if empty {
                "empty line".to_owned()
            } else {
                "a line break inside the event".to_owned()
            },
        })
    }

    /// Buffers one already-serialised event (see [`append`](Self::append)).
    pub fn append_raw(&mut self, event: &RawValue) -> Result<(), StoreError> {
        self.append(event.get())
    }

    /// Serialises `event` (official key order) and buffers it.
    pub fn append_event<D: serde::Serialize>(
        &mut self,
        event: &SessionEvent<D>,
    ) -> Result<(), StoreError> {
        let line = serde_json::to_string(event).map_err(|e| StoreError::InvalidEvent {
            id: self.location.id.clone(),
            reason: e.to_string(),
        })?;
        self.append(&line)
    }

    /// Writes everything buffered as one batch (one zstd frame, or the plain
    /// bytes) with one write; creates the session on disk at its first call
    /// with events. Does not fsync (see [`sync`](Self::sync)). A no-op when
    /// nothing is buffered.
    pub fn flush(&mut self) -> Result<(), StoreError> {
        match &self.sink {
            Sink::Poisoned { .. } => Err(self.poisoned()),
            Sink::Claimed { .. } if self.buffered == 0 => Ok(()),
            Sink::Claimed { .. } => self.first_write(),
            Sink::Open(_) if self.buf.is_empty() => Ok(()),
            Sink::Open(_) => self.write_batch(),
        }
    }

    /// [`flush`](Self::flush), then `fdatasync` the log and `fsync` the
    /// directories whose entries are not yet durable.
    pub fn sync(&mut self) -> Result<(), StoreError> {
        self.flush()?;
        if let Sink::Open(log) = &mut self.sink {
            sync_data(&log.file, &self.location.file)?;
            sync_dirs(&mut log.unsynced_dirs)?;
        }
        Ok(())
    }

    /// Flushes and releases the lock, reporting a failed final write (the
    /// unwritten events are then discarded, not retried on drop).
    pub fn close(mut self) -> Result<(), StoreError> {
        let result = self.flush();
        if result.is_err() {
            self.buf.clear();
            self.buffered = 0;
        }
        result
    }

    fn poisoned(&self) -> StoreError {
        StoreError::Poisoned {
            id: self.location.id.clone(),
        }
    }
}

impl Drop for SessionWriter {
    fn drop(&mut self) {
        let pending = self.buffered > 0 || (self.is_on_disk() && !self.buf.is_empty());
        if pending && let Err(err) = self.flush() {
            tracing::warn!(session = %self.location.id, "session log not flushed on drop: {err}");
        }
        if let Sink::Claimed { claim, store } =
            std::mem::replace(&mut self.sink, Sink::Poisoned { _lock: None })
        {
            claim.abandon(&store, &self.location);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writers_can_move_between_threads() {
        fn send<T: Send>() {}
        send::<SessionWriter>();
        send::<StoredSession>();
    }
}
