//! Method names and the typed params and results of every client → runtime
//! method.
//!
//! A client serialises the params types; a server builds them from a
//! request's params object with their `validate` functions, which check field
//! by field in the official order, each check with the official message
//! ([`ParamError`]).

mod deltas;
mod extension_error;
mod extensions;
mod mcp;
mod sessions;
mod usage;
mod validate;

pub use deltas::{DeltaKind, SESSION_DELTA, SessionDeltaParams};
pub use extensions::{
    APPROVAL_REQUEST, ApprovalDecision, ApprovalRequestParams, ApprovalResponse, ApprovalRule,
    ApprovalRules, CancelParams, CancelResult, ClientCapabilities, EVENTS_PAGE_MAX, EventsParams,
    EventsResult, ExtensionError, InitializeExtensions, PROTOCOL_VERSION, RuntimeCapabilities,
    SESSION_CANCEL, SESSION_EVENTS,
};
pub use mcp::{MCP_SERVER, McpServerParams, McpServerState};
pub use sessions::{
    ForkOrigin, ForkParams, ForkResult, LIST_PAGE_DEFAULT, LIST_PAGE_MAX, ListCursor, ListParams,
    ListResult, SESSION_FORK, SESSION_LIST, SessionActivity, SessionInfo, SessionsParamError,
};
pub use usage::{
    ANY_MODEL, Budget, ContextUsage, ModelPrice, PriceTable, SESSION_USAGE,
    SESSION_USAGE_NOTIFICATION, SessionUsageParams, TokenCounts, TurnUsage, UsageFigures,
    UsageLedger, UsageParams, UsageResult,
};
pub use validate::ParamError;

use crate::JsonObject;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use validate::MAX_SAFE_INTEGER;

/// `initialize`.
pub const INITIALIZE: &str = "initialize";
/// `session/prompt`.
pub const SESSION_PROMPT: &str = "session/prompt";
/// `session/resume`.
pub const SESSION_RESUME: &str = "session/resume";
/// `session/wait`.
pub const SESSION_WAIT: &str = "session/wait";
/// `session/working-directory/get`.
pub const WORKING_DIRECTORY_GET: &str = "session/working-directory/get";
/// `session/working-directory/set`.
pub const WORKING_DIRECTORY_SET: &str = "session/working-directory/set";
/// `shutdown`.
pub const SHUTDOWN: &str = "shutdown";

/// `initialize` provider when `provider` is absent or `null`.
pub const DEFAULT_PROVIDER: &str = "deepseek-official";
/// `initialize` model when `model` is absent or `null`.
pub const DEFAULT_MODEL: &str = "deepseek-v4-flash";

/// `serverInfo.name`, exactly as the official runtime reports it.
pub const SERVER_NAME: &str = "deepseek-harness-sdk-runtime";

/// Params of `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeParams {
    /// Workspace directory of sessions created afterwards (made absolute).
    pub cwd: String,
    /// Model provider (`deepseek-official`, `scripted`, …);
    /// [`DEFAULT_PROVIDER`] when absent or `null`.
    #[schemars(default = "default_provider")]
    pub provider: String,
    /// Model id, passed to the provider as is; [`DEFAULT_MODEL`] when absent
    /// or `null`.
    #[schemars(default = "default_model")]
    pub model: String,
    /// `off | low | high | max`; the provider default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(min = 1))]
    pub reasoning_effort: Option<String>,
    /// Output token cap per model request; the provider default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64", range(min = 1, max = MAX_SAFE_INTEGER))]
    pub max_tokens: Option<u64>,
}

/// Result of `initialize`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// Who answered.
    pub server_info: ServerInfo,
    /// The extension protocol version ([`PROTOCOL_VERSION`]), only when the
    /// client sent `protocolVersion` or `clientCapabilities`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// The extensions supported, under the same condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<RuntimeCapabilities>,
}

/// `serverInfo` of the `initialize` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerInfo {
    /// Always [`SERVER_NAME`].
    pub name: String,
    /// The implementation's own version.
    pub version: String,
}

/// Params of `session/prompt`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptParams {
    /// The session; created on first use.
    #[schemars(length(min = 1))]
    pub session_id: String,
    /// Content blocks of the prompt, passed through verbatim (after image
    /// admission).
    #[schemars(schema_with = "content_blocks_schema")]
    pub content_blocks: Vec<JsonObject>,
}

/// Result of `session/prompt`: an enqueue receipt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PromptResult {
    /// The id of the user message inside the receipt `agent/inbox/spliced`.
    pub message_id: String,
}

/// Params of `session/resume`, `session/wait` and
/// `session/working-directory/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionParams {
    /// The session addressed.
    pub session_id: String,
}

/// Params of `session/working-directory/set`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SetWorkingDirectoryParams {
    /// The session addressed.
    #[schemars(length(min = 1))]
    pub session_id: String,
    /// New directory, relative to the current effective directory or absolute.
    pub path: String,
}

/// Result of both working-directory methods.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct WorkingDirectoryResult {
    /// The effective directory, absolute and canonical.
    pub cwd: String,
}

/// The empty result `{}` of `session/resume`, `session/wait` and `shutdown`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct EmptyResult {}

/// The schema default of `initialize.provider`.
fn default_provider() -> String {
    DEFAULT_PROVIDER.to_owned()
}

/// The schema default of `initialize.model`.
fn default_model() -> String {
    DEFAULT_MODEL.to_owned()
}

/// `session/prompt.contentBlocks`: objects with a string `type`, any other
/// keys passed through.
fn content_blocks_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "array",
        "items": {
            "type": "object",
            "properties": {"type": {"type": "string"}},
            "required": ["type"]
        }
    })
}
