//! Session logs on disk (§11): `DSH_HOME/sessions/<project>/<id>/`.
//!
//! * [`names`]: the project key of a working directory and the encoded
//!   session id segment.
//! * [`SessionHeader`]: line 1 of a log.
//! * [`SessionStore`] / [`SessionLocation`] / [`Encoding`]: where logs are,
//!   finding one by id across project directories.
//! * [`SessionWriter`]: the one write handle of a session (kernel lock,
//!   batches, zstd frames).
//! * [`SessionReader`] / [`StoredSession`]: reading a log back, torn tails,
//!   corruption.
//! * [`repair`]: the closers resume appends to an interrupted turn, and the
//!   facts resume rebuilds from a log.

mod error;
mod fsutil;
mod header;
mod layout;
mod lock;
mod reader;
mod writer;

pub mod names;

pub use error::StoreError;
pub use header::{FORMAT_VERSION, HeaderType, SessionHeader};
pub use layout::{Encoding, LOCK_FILE, PLAIN_FILE, SessionLocation, SessionStore, ZSTD_FILE};
pub use names::{NO_CWD_DIR, encode_session_id, project_key};
pub use reader::{SessionReader, StoredSession};
pub use writer::SessionWriter;
