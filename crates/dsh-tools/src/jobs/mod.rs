//! Background-capable shell jobs of a session.

mod capture;
mod job;
mod quota;
pub(crate) mod render;
mod spawn;
mod spill;

pub(crate) use job::{ABORTED, Job, JobEnd, Outcome, kill_group, lock, now_ms};
pub use quota::{
    DEFAULT_SPILL_MAX_BYTES, DEFAULT_SPILL_SESSION_MAX_BYTES, KEEP_TOOL_OUTPUT_VAR,
    SPILL_MAX_BYTES_VAR, SPILL_SESSION_MAX_BYTES_VAR, SpillLimits,
};
pub(crate) use quota::{SpillQuota, SpillTarget};
pub(crate) use spawn::start;
pub(crate) use spill::SpillDir;
