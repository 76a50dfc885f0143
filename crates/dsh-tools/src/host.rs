//! The agent-side sink for the session events tools append.

use dsh_protocol::catalog::ToolEvent;

/// Implemented by the agent: appends session events on behalf of tools.
///
/// Tools emit the events of [`ToolEvent`]. Background jobs may emit after
/// the tool call that started them has returned, from another task.
pub trait ToolHost: Send + Sync {
    /// Appends one session event.
    fn emit(&self, event: ToolEvent);

    /// A background job ended after the call that started it returned:
    /// the agent tells the model (a new turn when idle). Ignored by
    /// default.
    fn job_notice(&self, notice: JobNotice) {
        let _ = notice;
    }

    /// A call of `tool` waits for the client's approval (`reason`, as in
    /// `approval/asked`): the question is being put to it now. Ignored by
    /// default.
    fn asking_client(&self, tool: &str, reason: &str) {
        let _ = (tool, reason);
    }
}

/// The news of a background job's end, for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobNotice {
    /// The job.
    pub job_id: String,
    /// One line: the job, its command, status and exit.
    pub summary: String,
    /// The notice text (the summary and where to read the output).
    pub text: String,
}

/// A host that drops every event (for callers that do not log events).
#[derive(Debug, Default, Clone, Copy)]
pub struct NullHost;

impl ToolHost for NullHost {
    fn emit(&self, _event: ToolEvent) {}
}
