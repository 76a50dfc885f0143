//! Background jobs that run outside this library (a `workflow` run in the
//! background) but are listed, read and stopped with `job_list`,
//! `job_output` and `job_kill` like the session's `bash` jobs.

use dsh_protocol::catalog::JobStatus;
use std::time::Duration;

/// How a foreign job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignEnd {
    /// `completed`, `failed` or `killed`.
    pub status: JobStatus,
    /// Shown after the status (`2 agents`, the error, the kill reason).
    pub detail: String,
    /// When it ended (epoch ms).
    pub finished_at: u64,
}

/// A background job owned by the agent rather than by the tool library.
pub trait ForeignJob: Send + Sync {
    /// `<kind>-<16 hex>`.
    fn id(&self) -> &str;
    /// `workflow`.
    fn kind(&self) -> &str;
    /// What the job runs, as listed.
    fn label(&self) -> &str;
    /// Start time (epoch ms).
    fn started_at(&self) -> u64;
    /// Its end, once it ended.
    fn end(&self) -> Option<ForeignEnd>;
    /// The output produced since the last call (the first call after the
    /// end includes the job's result); empty when there is none.
    fn take_output(&self) -> String;
    /// Asks the job to stop, recording `reason`; returns at once.
    fn kill(&self, reason: &str);
    /// Waits until the job ended or `timeout` passed; returns whether it
    /// ended.
    fn wait(
        &self,
        timeout: Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send + '_>>;
}
