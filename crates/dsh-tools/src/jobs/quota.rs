//! The limits on saved job output: a per-job cap (the head and the tail of
//! each stream are kept) and a per-session quota shared by the session's
//! jobs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Default most bytes of one job's output saved to files.
pub const DEFAULT_SPILL_MAX_BYTES: u64 = 64 * 1024 * 1024;

/// Variable that changes [`DEFAULT_SPILL_MAX_BYTES`].
pub const SPILL_MAX_BYTES_VAR: &str = "DSH_SPILL_MAX_BYTES";

/// Default most bytes of saved output all jobs of one session hold at once.
pub const DEFAULT_SPILL_SESSION_MAX_BYTES: u64 = 1024 * 1024 * 1024;

/// Variable that changes [`DEFAULT_SPILL_SESSION_MAX_BYTES`].
pub const SPILL_SESSION_MAX_BYTES_VAR: &str = "DSH_SPILL_SESSION_MAX_BYTES";

/// Variable that, set to `1`, keeps a session's saved outputs after the
/// session is disposed.
pub const KEEP_TOOL_OUTPUT_VAR: &str = "DSH_KEEP_TOOL_OUTPUT";

/// How much job output is saved, and whether it outlives the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpillLimits {
    /// Most bytes saved per job (`DSH_SPILL_MAX_BYTES`): each of its two
    /// streams keeps its first and its last quarter of this.
    pub job_max: u64,
    /// Most bytes the saved outputs of one session hold
    /// (`DSH_SPILL_SESSION_MAX_BYTES`).
    pub session_max: u64,
    /// Keep the files when the session is disposed (`DSH_KEEP_TOOL_OUTPUT=1`).
    pub keep: bool,
}

impl Default for SpillLimits {
    fn default() -> Self {
        Self {
            job_max: DEFAULT_SPILL_MAX_BYTES,
            session_max: DEFAULT_SPILL_SESSION_MAX_BYTES,
            keep: false,
        }
    }
}

impl SpillLimits {
    /// Bytes of the start of one stream that are saved.
    pub(crate) fn head(&self) -> u64 {
        self.job_max / 4
    }

    /// Bytes of the end of one stream that are saved.
    pub(crate) fn tail(&self) -> u64 {
        self.job_max / 4
    }
}

/// Where and how much of a job's output is saved.
#[derive(Debug, Clone)]
pub(crate) struct SpillTarget {
    /// The spill directory.
    pub dir: std::path::PathBuf,
    /// The caps.
    pub limits: SpillLimits,
    /// The quota of the job's session.
    pub quota: Arc<SpillQuota>,
}

/// The bytes of saved output a session holds, against its quota.
#[derive(Debug)]
pub(crate) struct SpillQuota {
    used: AtomicU64,
    max: u64,
}

impl SpillQuota {
    /// An unused quota of `max` bytes.
    pub(crate) fn new(max: u64) -> Arc<Self> {
        Arc::new(Self {
            used: AtomicU64::new(0),
            max,
        })
    }

    /// The quota in bytes.
    pub(crate) fn max(&self) -> u64 {
        self.max
    }

    /// Takes `bytes` from the quota; `false` (nothing taken) when they do
    /// not fit.
    pub(crate) fn try_take(&self, bytes: u64) -> bool {
        self.used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                used.checked_add(bytes).filter(|total| *total <= self.max)
            })
            .is_ok()
    }

    /// Gives `bytes` back (files removed or shrunk).
    pub(crate) fn give_back(&self, bytes: u64) {
        let _ = self
            .used
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
                Some(used.saturating_sub(bytes))
            });
    }
}

/// `[... N bytes dropped ...]`: the marker between the saved head and tail.
pub(crate) fn dropped_marker(dropped: u64, limits: &SpillLimits) -> String {
    format!(
        "\n[... {dropped} bytes dropped here: the saved output keeps the first {} and the last {} bytes of each stream ({SPILL_MAX_BYTES_VAR}={}) ...]\n",
        limits.head(),
        limits.tail(),
        limits.job_max
    )
}

/// The marker after a stream whose later bytes did not fit the quota.
pub(crate) fn unsaved_marker(unsaved: u64, quota: &SpillQuota) -> String {
    format!(
        "\n[... the last {unsaved} bytes were not saved: the session's saved tool output reached its quota ({SPILL_SESSION_MAX_BYTES_VAR}={}) ...]\n",
        quota.max()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quota_refuses_what_does_not_fit_and_takes_back_what_is_freed() {
        let quota = SpillQuota::new(10);
        assert!(quota.try_take(6));
        assert!(!quota.try_take(5));
        assert!(quota.try_take(4));
        assert!(!quota.try_take(1));
        quota.give_back(7);
        assert!(quota.try_take(7));
        assert!(!quota.try_take(1));
    }
}
