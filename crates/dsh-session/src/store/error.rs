//! The one error type of the store.

use crate::private_fs::{PrivateFsError, Refusal};
use std::io;
use std::path::PathBuf;

/// Everything that can go wrong reading, locating or writing session logs.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file system operation failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done (`create directory`, `write`, …).
        action: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: io::Error,
    },
    /// An entry of the store is not one the runtime may use: a symbolic
    /// link, not a regular file or directory, or owned by another user.
    #[error("{what} {} {refusal}: refusing it", path.display())]
    Refused {
        /// What the entry should have been (`session log`, `session lock`, …).
        what: &'static str,
        /// The entry.
        path: PathBuf,
        /// What is wrong with it.
        refusal: Refusal,
    },
    /// Resuming a session from another workspace than the one it belongs
    /// to (the stored header `cwd`).
    #[error(
        "session \"{id}\" belongs to the workspace {}, but this runtime was initialized with {}; initialize with that cwd to resume it",
        stored.display(),
        given.display()
    )]
    WorkspaceMismatch {
        /// The session id.
        id: String,
        /// The header's `cwd`.
        stored: PathBuf,
        /// The `initialize` cwd.
        given: PathBuf,
    },
    /// Another live write handle (this process or another) holds the
    /// session's kernel lock.
    #[error("session \"{id}\" is already owned by an active write handle")]
    Locked {
        /// The session id.
        id: String,
    },
    /// Creating a session whose id already has a log somewhere under
    /// `sessions/`.
    #[error("session \"{id}\" already exists")]
    AlreadyExists {
        /// The session id.
        id: String,
    },
    /// Two project directories hold a log for the same session id.
    #[error(
        "session \"{id}\" is stored more than once: {} and {}",
        first.display(),
        second.display()
    )]
    Duplicate {
        /// The session id.
        id: String,
        /// One session directory.
        first: PathBuf,
        /// Another session directory.
        second: PathBuf,
    },
    /// One session directory holds both `session.v4.jsonl` and
    /// `session.v4.jsonl.zstd`.
    #[error(
        "session directory {} holds both a plain and a zstd session log",
        dir.display()
    )]
    MixedEncoding {
        /// The session directory.
        dir: PathBuf,
    },
    /// A log of another format generation than 4.
    #[error("session format version {version} is not supported: {}", file.display())]
    UnsupportedVersion {
        /// The version found (file name or header).
        version: u64,
        /// The file.
        file: PathBuf,
    },
    /// The log cannot be trusted: a bad line before the end, a bad header,
    /// a seq out of order, an undecodable zstd frame.
    #[error("corrupt session log: {}: line {line}: {reason}", file.display())]
    Corrupt {
        /// The log file.
        file: PathBuf,
        /// 1-based line of the decompressed log (the header is line 1).
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A parsed event does not have the shape its type requires.
    #[error("corrupt session log: event {seq}: {reason}")]
    BadEvent {
        /// The event's seq.
        seq: u64,
        /// What is wrong.
        reason: String,
    },
    /// A header that cannot start a session (wrong version, empty id, …).
    #[error("invalid session header: {reason}")]
    InvalidHeader {
        /// What is wrong.
        reason: String,
    },
    /// An event line that cannot be written as one log line.
    #[error("invalid event line for session \"{id}\": {reason}")]
    InvalidEvent {
        /// The session id.
        id: String,
        /// What is wrong.
        reason: String,
    },
    /// The log file is not the one a [`StoredSession`](super::StoredSession)
    /// was read from (it changed or belongs to another session).
    #[error("session log {} changed since it was read; read it again", file.display())]
    Stale {
        /// The log file.
        file: PathBuf,
    },
    /// An earlier write failed and its partial bytes could not be removed,
    /// so the writer refuses to append after them.
    #[error(
        "session \"{id}\" log writer is unusable after a failed write that could not be undone"
    )]
    Poisoned {
        /// The session id.
        id: String,
    },
}

impl From<PrivateFsError> for StoreError {
    fn from(err: PrivateFsError) -> Self {
        match err {
            PrivateFsError::Io {
                action,
                path,
                source,
            } => Self::Io {
                action,
                path,
                source,
            },
            PrivateFsError::Refused {
                what,
                path,
                refusal,
            } => Self::Refused {
                what,
                path,
                refusal,
            },
        }
    }
}

impl StoreError {
    /// An [`StoreError::Io`] for `action` on `path`.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// A [`StoreError::Corrupt`].
    pub(crate) fn corrupt(
        file: impl Into<PathBuf>,
        line: usize,
        reason: impl Into<String>,
    ) -> Self {
        Self::Corrupt {
            file: file.into(),
            line,
            reason: reason.into(),
        }
    }
}
