//! The session event log and its store.
//!
//! Everything observable about a session is an event (typed by
//! [`dsh_protocol::catalog`]) appended to its
//! [`EventLog`]. The log gives each event its `seq` and `time`, serialises it
//! **once**, and hands the same bytes to its [`EventObserver`] (the SDK server
//! wraps them in `session.event` notifications; the persistence sink writes
//! them to disk).
//!
//! [`store`] holds the on-disk side: the `DSH_HOME/sessions` layout and
//! names, the v4 log format (header line, one event per line, plain or one
//! zstd frame per batch), the session lock, reading back with torn-tail
//! tolerance, and the repair that resume appends to an interrupted turn.
//! [`attachments`] keeps prompt images by content hash.
//! [`private_fs`] creates and opens the runtime's files under `DSH_HOME`
//! (0600 / 0700, no symbolic links, owned by the runtime).
//!
//! # Layers
//!
//! Layer 1 is the bottom; a module uses only those in its layer or below
//! (`dsh-repo-checks`' layering test holds this list to the code):
//!
//! 1. `private_fs` — the runtime's own files and directories under
//!    `DSH_HOME`
//! 2. `store`, `attachments` — session logs on disk; prompt images by
//!    content hash
//! 3. `log` — the event log: numbers, times and serialises each event once
//!    for its observer and its writer

mod log;

pub mod attachments;
pub mod private_fs;
pub mod store;

pub use dsh_protocol::message::{
    AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage, new_message_id, text_block,
    text_of,
};
pub use log::{
    EventBytes, EventLog, EventObserver, LiveNotice, LogUnwritable, SessionStatus, TreeNotice,
    now_ms,
};
