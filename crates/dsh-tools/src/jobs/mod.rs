//! Background-capable shell jobs of a session.

mod capture;
mod job;
pub(crate) mod render;
mod spawn;
mod spill;

pub(crate) use job::{Job, JobEnd, Outcome, kill_group, lock, now_ms};
pub(crate) use spawn::start;
pub(crate) use spill::SpillDir;
