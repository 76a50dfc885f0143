//! A workflow run in the background: a foreign job of its session
//! (`workflow-<16 hex>`), listed, read and stopped by the job tools.

use dsh_protocol::catalog::{JobRegistered, JobSettled, JobStatus, JobToolCall, SettleCause};
use dsh_session::now_ms;
use dsh_tools::{CancellationToken, ForeignEnd, ForeignJob};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::watch;

/// Most bytes of unread output a job keeps; older lines are dropped.
const MAX_UNREAD_BYTES: usize = 64 * 1024;

/// What changes while the job runs.
#[derive(Default)]
struct Progress {
    /// Output not read yet (log lines, then the result once it ended).
    unread: String,
    /// Whether lines were dropped since the last read.
    dropped: bool,
    /// Its end.
    end: Option<ForeignEnd>,
    /// Why it was asked to stop.
    kill_reason: Option<String>,
}

/// One background workflow run.
pub(crate) struct WorkflowJob {
    id: String,
    name: String,
    owner: String,
    call_id: String,
    started_at: u64,
    progress: Mutex<Progress>,
    ended: watch::Sender<bool>,
    /// Cancelled by `job_kill` and by the session's shutdown.
    pub cancel: CancellationToken,
}

impl WorkflowJob {
    /// A job for the run of `name` started by call `call_id` of `owner`.
    pub(crate) fn new(owner: &str, call_id: &str, name: &str, cancel: CancellationToken) -> Self {
        let hex = uuid::Uuid::new_v4().simple().to_string();
        Self {
            id: format!("workflow-{}", &hex[..16]),
            name: name.to_owned(),
            owner: owner.to_owned(),
            call_id: call_id.to_owned(),
            started_at: now_ms(),
            progress: Mutex::new(Progress::default()),
            ended: watch::Sender::new(false),
            cancel,
        }
    }

    fn progress(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `job/registered`.
    pub(crate) fn registered(&self) -> JobRegistered {
        JobRegistered {
            job_id: self.id.clone(),
            owner: self.owner.clone(),
            kind: super::spec::WORKFLOW.to_owned(),
            label: self.name.clone(),
            started_at: self.started_at,
            tool_call: JobToolCall {
                call_id: self.call_id.clone(),
                root_call_id: self.call_id.clone(),
            },
        }
    }

    /// Adds one line of output.
    pub(crate) fn log(&self, line: &str) {
        let mut progress = self.progress();
        push_bounded(&mut progress, line);
    }

    /// Why the job was asked to stop, if it was.
    pub(crate) fn kill_reason(&self) -> Option<String> {
        self.progress().kill_reason.clone()
    }

    /// Records the end (`result` is the text the call would have
    /// answered) and returns `job/settled`.
    pub(crate) fn finish(&self, result: &str, status: JobStatus, detail: String) -> JobSettled {
        let finished_at = now_ms();
        let cause = if status == JobStatus::Killed {
            SettleCause::Kill
        } else {
            SettleCause::Producer
        };
        {
            let mut progress = self.progress();
            push_bounded(&mut progress, result);
            progress.end = Some(ForeignEnd {
                status,
                detail: detail.clone(),
                finished_at,
            });
        }
        self.ended.send_replace(true);
        JobSettled {
            job: self.registered(),
            finished_at,
            status,
            cause,
            producer_reported: true,
            detail,
        }
    }
}

/// Appends `line` to the unread output, dropping the oldest lines past
/// [`MAX_UNREAD_BYTES`].
fn push_bounded(progress: &mut Progress, line: &str) {
    if !progress.unread.is_empty() {
        progress.unread.push('\n');
    }
    progress.unread.push_str(line);
    if progress.unread.len() > MAX_UNREAD_BYTES {
        let excess = progress.unread.len() - MAX_UNREAD_BYTES;
        let cut = progress.unread[excess..]
            .find('\n')
            .map_or(progress.unread.len(), |at| excess + at + 1);
        progress.unread.drain(..cut);
        progress.dropped = true;
    }
}

impl ForeignJob for WorkflowJob {
    fn id(&self) -> &str {
        &self.id
    }

    fn kind(&self) -> &str {
        super::spec::WORKFLOW
    }

    fn label(&self) -> &str {
        &self.name
    }

    fn started_at(&self) -> u64 {
        self.started_at
    }

    fn end(&self) -> Option<ForeignEnd> {
        self.progress().end.clone()
    }

    fn take_output(&self) -> String {
        let mut progress = self.progress();
        let text = std::mem::take(&mut progress.unread);
        if std::mem::take(&mut progress.dropped) {
            format!(
                "[earlier output dropped: more than {MAX_UNREAD_BYTES} bytes were not read]\n{text}"
            )
        } else {
            text
        }
    }

    fn kill(&self, reason: &str) {
        {
            let mut progress = self.progress();
            if progress.end.is_some() {
                return;
            }
            progress
                .kill_reason
                .get_or_insert_with(|| reason.to_owned());
        }
        self.cancel.cancel();
    }

    fn wait(
        &self,
        timeout: Duration,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send + '_>> {
        let mut ended = self.ended.subscribe();
        Box::pin(async move {
            tokio::time::timeout(timeout, ended.wait_for(|ended| *ended))
                .await
                .is_ok_and(|r| r.is_ok())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_read_once_and_bounded() {
        let job = WorkflowJob::new("s", "c", "wf", CancellationToken::new());
        assert!(job.id().starts_with("workflow-") && job.id().len() == 25);
        job.log("one");
        job.log("two");
        assert_eq!(job.take_output(), "one\ntwo");
        assert_eq!(job.take_output(), "");
        for _ in 0..100 {
            job.log(&"x".repeat(1000));
        }
        let text = job.take_output();
        assert!(
            text.starts_with("[earlier output dropped"),
            "{}",
            &text[..80]
        );
        assert!(text.len() <= MAX_UNREAD_BYTES + 200);
    }

    #[tokio::test]
    async fn kill_cancels_and_finish_settles() {
        let job = WorkflowJob::new("s", "c", "wf", CancellationToken::new());
        assert!(!job.wait(Duration::from_millis(10)).await);
        job.kill("enough");
        assert!(job.cancel.is_cancelled());
        assert_eq!(job.kill_reason().as_deref(), Some("enough"));
        let settled = job.finish(
            "Error: workflow run cancelled",
            JobStatus::Killed,
            "enough".into(),
        );
        assert_eq!(settled.cause, SettleCause::Kill);
        assert!(job.wait(Duration::from_millis(10)).await);
        assert_eq!(job.end().map(|e| e.status), Some(JobStatus::Killed));
        assert_eq!(job.take_output(), "Error: workflow run cancelled");
    }
}
