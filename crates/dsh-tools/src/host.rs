//! The agent-side sink for the session events tools append.

use serde_json::Value;

/// Implemented by the agent: appends session events on behalf of tools.
///
/// Tools emit `job/registered`, `job/settled`, `todo/write`,
/// `approval/asked` and `approval/decided`. Background jobs may emit after
/// the tool call that started them has returned, from another task.
pub trait ToolHost: Send + Sync {
    /// Appends one session event of type `kind` with payload `data`.
    fn emit(&self, kind: &str, data: Value);
}

/// A host that drops every event (for callers that do not log events).
#[derive(Debug, Default, Clone, Copy)]
pub struct NullHost;

impl ToolHost for NullHost {
    fn emit(&self, _kind: &str, _data: Value) {}
}
