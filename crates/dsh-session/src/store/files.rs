//! The names of the files in a session directory, known to the layout
//! that finds logs and to the index that records them.

/// The lock file of a session directory (empty, never deleted).
pub const LOCK_FILE: &str = "session.lock";
/// The plain log file name (profile `sdk-minimal`).
pub const PLAIN_FILE: &str = "session.v4.jsonl";
/// The zstd log file name (profile `sdk`).
pub const ZSTD_FILE: &str = "session.v4.jsonl.zstd";
