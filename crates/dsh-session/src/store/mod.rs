//! Session logs on disk (§11): `DSH_HOME/sessions/<project>/<id>/`.
//!
//! * [`names`]: the project key of a working directory and the encoded
//!   session id segment.
//! * [`SessionHeader`]: line 1 of a log.
//! * [`SessionStore`] / [`SessionLocation`] / [`Encoding`]: where logs are,
//!   finding one by id across project directories.
//! * [`SessionWriter`]: the one write handle of a session (kernel lock,
//!   batches, zstd frames); its docs say when data is durable.
//! * [`SessionReader`] / [`StoredSession`]: reading a log back, torn tails,
//!   corruption, `sourceEventSeqs` runs.
//! * [`repair_closers`] / [`resume_facts`]: the closers resume appends to an
//!   interrupted turn, and the facts resume rebuilds from a log;
//!   [`ResumeScan`] builds both event by event, for
//!   [`SessionReader::read_each`] (a log streamed, not held).
//! * [`LockedSession`] / [`LockedLog`] / [`resume_workspace`]: a stored session read under
//!   its lock before anything is written, and the check of the workspace it
//!   resumes in.
//! * [`SessionSummary`] / [`SummaryTracker`]: what `session/list` shows of
//!   a session, kept in a sidecar beside `sessions/` and read back without
//!   reading the log; [`SessionStore::list_sessions`]: a page of the stored
//!   sessions, newest first ([`ListQuery`], [`ListPage`]).
//! * [`SessionStore::fork_session`]: a new root session holding a stored
//!   session's events through a completed turn ([`ForkRequest`],
//!   [`Forked`], [`ForkError`]).
//!
//! Create, write, resume:
//!
//! ```
//! use dsh_session::store::{
//!     Encoding, SessionHeader, SessionStore, SessionWriter, repair_closers,
//! };
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let home = tempfile::tempdir()?;
//! let store = SessionStore::new(home.path());
//! let header = SessionHeader::root("s-1", 1_796_008_646_846, Some("/home/user/ws".into()));
//! let mut writer = SessionWriter::create(&store, &header, Encoding::Zstd)?;
//! writer.append(r#"{"type":"turn/start","seq":0,"time":1796008646858,"data":{"turn":1}}"#)?;
//! writer.flush()?; // the session appears on disk now
//! drop(writer); // releases the lock
//!
//! let location = store.locate("s-1")?.ok_or("not found")?;
//! let (mut writer, stored) = SessionWriter::resume(&location)?;
//! for (seq, draft) in (stored.next_seq()..).zip(repair_closers(&stored.events, 1_796_008_700_000)) {
//!     // Closers carry their time; the second argument is for drafts without one.
//!     writer.append_event(&draft.into_event(seq, dsh_session::now_ms()))?;
//! }
//! writer.sync()?;
//! # Ok(())
//! # }
//! ```

mod claim;
mod compress;
mod error;
mod facts;
mod files;
mod fork;
mod fsutil;
mod goal_facts;
mod header;
mod index;
mod layout;
mod listing;
mod lock;
mod locked;
mod raw_log;
mod reader;
mod repair;
mod scan;
mod summary;
mod workspace;
mod writer;

pub mod names;

pub use error::StoreError;
pub use facts::{HistoryEntry, PendingInbox, ResumeFacts, resume_facts};
pub use files::{LOCK_FILE, PLAIN_FILE, ZSTD_FILE};
pub use fork::{ForkError, ForkRequest, Forked};
pub use goal_facts::GoalFacts;
pub use header::{FORMAT_VERSION, HeaderType, SessionHeader};
pub use layout::{Encoding, SessionLocation, SessionStore};
pub use listing::{
    AGGREGATE_AFTER, ListKey, ListPage, ListQuery, ListedSession, decode_session_id,
};
pub use locked::{Locked, LockedLog, LockedSession, ReadLog};
pub use names::{NO_CWD_DIR, encode_session_id, project_key};
pub use reader::{SessionReader, StoredLog, StoredSession};
pub use repair::repair_closers;
pub use scan::ResumeScan;
pub use summary::{ForkSource, SessionSummary, SummaryTracker};
pub use workspace::resume_workspace;
pub use writer::SessionWriter;
