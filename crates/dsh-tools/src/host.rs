//! The agent-side sink for the session events tools append.

use dsh_protocol::catalog::ToolEvent;

/// Implemented by the agent: appends session events on behalf of tools.
///
/// Tools emit the events of [`ToolEvent`]. Background jobs may emit after
/// the tool call that started them has returned, from another task.
pub trait ToolHost: Send + Sync {
    /// Appends one session event.
    fn emit(&self, event: ToolEvent);
}

/// A host that drops every event (for callers that do not log events).
#[derive(Debug, Default, Clone, Copy)]
pub struct NullHost;

impl ToolHost for NullHost {
    fn emit(&self, _event: ToolEvent) {}
}
