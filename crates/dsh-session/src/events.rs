//! Event type names of the catalogue that this runtime emits.

/// Inbox insertion (receipt, notice), claim or cancellation.
pub const INBOX_SPLICED: &str = "agent/inbox/spliced";
/// `{turn}`.
pub const TURN_START: &str = "turn/start";
/// `{turn, reason}`.
pub const TURN_END: &str = "turn/end";
/// `{turn, step}`.
pub const STEP_START: &str = "step/start";
/// `{turn, step}`.
pub const STEP_END: &str = "step/end";
/// `{turn, step, message}`.
pub const SYSTEM_MESSAGE: &str = "system/message";
/// The message itself.
pub const USER_MESSAGE: &str = "user/message";
/// `{turn, step, message, usage?, stream}`.
pub const ASSISTANT_MESSAGE: &str = "assistant/message";
/// `{turn, step, stream}`: a failed attempt.
pub const ASSISTANT_ATTEMPT: &str = "assistant/attempt";
/// `{header, reason}`.
pub const REQUEST_HEADER: &str = "request/header";
/// `{provider, model, contextWindow}`.
pub const REQUEST_CONTEXT: &str = "request/context";
/// `{title, messageSeqs, source}`.
pub const SESSION_TITLE: &str = "session/title";
/// `{turn, step, callId, name, arguments}`.
pub const TOOL_CALL: &str = "tool/call";
/// `{turn, step, message, meta?, error?}`.
pub const TOOL_RESULT: &str = "tool/result";
/// `{cwd}`.
pub const WORKING_DIRECTORY_CHANGE: &str = "working-directory/change";
/// `{preset}`.
pub const PERMISSION_PRESET: &str = "permission/preset";
/// `{mode}`.
pub const SANDBOX_MODE: &str = "sandbox/mode";
/// `{policy}`.
pub const APPROVAL_POLICY: &str = "approval/policy";
/// A failed attempt will be retried: `{retryId, turn, step, provider, mode, policyKey, retry, maxRetries, delayMs, failure}`.
pub const LLM_RETRY: &str = "llm/retry";
/// The back-off ended: `{retryId, turn, step, retry}`.
pub const LLM_RETRY_STARTED: &str = "llm/retry-started";
