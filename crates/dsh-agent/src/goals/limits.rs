//! The bounds of a goal (what the official runtime accepts).

/// Rounds a goal may start when `max_goal_rounds` is not given.
pub(crate) const DEFAULT_MAX_ROUNDS: u64 = 256;

/// Longest objective (and blocked reason) accepted, in bytes after
/// trimming: each round message repeats the objective.
pub(crate) const MAX_TEXT_BYTES: usize = 16 * 1024;

/// The round from which a continuation round may report its goal blocked.
pub(crate) const BLOCK_THRESHOLD: u64 = 3;
