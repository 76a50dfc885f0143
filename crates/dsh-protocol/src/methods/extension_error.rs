//! [`ExtensionError`]: why the params of one of dsh's extensions were
//! refused (its text is the wire message).

/// Why the extension fields of `initialize` were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExtensionError {
    /// `protocolVersion` is not a string.
    #[error("initialize protocolVersion must be a string")]
    ProtocolVersion,
    /// `clientCapabilities` is not an object of booleans.
    #[error("initialize clientCapabilities must be an object of booleans")]
    ClientCapabilities,
    /// `approvalTimeoutMs` is not a non-negative safe integer.
    #[error("initialize approvalTimeoutMs must be a non-negative safe integer (0 waits for ever)")]
    ApprovalTimeout,
    /// `approvalRules` does not fit its shape.
    #[error("initialize approvalRules: {0}")]
    ApprovalRules(String),
    /// `session/cancel`: `sessionId` is not a non-empty string.
    #[error("session/cancel requires a non-empty sessionId string")]
    CancelSessionId,
    /// `session/cancel`: `dropQueued` or `keepJobs` is not a boolean.
    #[error("session/cancel {0} must be a boolean")]
    CancelFlag(&'static str),
    /// `session/events`: `sessionId` is not a non-empty string.
    #[error("session/events requires a non-empty sessionId string")]
    EventsSessionId,
    /// `session/events`: `afterSeq` is not a non-negative safe integer.
    #[error("session/events afterSeq must be a non-negative safe integer")]
    EventsAfterSeq,
    /// `session/events`: `limit` is not an integer from 1 to 10000.
    #[error("session/events limit must be an integer from 1 to 10000")]
    EventsLimit,
    /// `initialize`: `prices` does not fit its shape.
    #[error("initialize prices: {0}")]
    Prices(String),
    /// `initialize`: `projectMcp` is not a boolean.
    #[error("initialize projectMcp must be a boolean")]
    ProjectMcp,
    /// `initialize`: `hooks` does not fit Claude Code's shape.
    #[error("initialize hooks: {0}")]
    Hooks(String),
    /// `initialize`: `projectHooks` is not a boolean.
    #[error("initialize projectHooks must be a boolean")]
    ProjectHooks,
    /// `initialize`: an MCP server configuration is unusable.
    #[error("initialize {0}")]
    McpServers(String),
    /// `session/usage`: `sessionId` is not a non-empty string.
    #[error("session/usage requires a non-empty sessionId string")]
    UsageSessionId,
    /// `session/prompt`: `maxCostUsd` is not a positive number.
    #[error("session/prompt maxCostUsd must be a positive number")]
    MaxCostUsd,
    /// `session/prompt`: `maxTurns` is not a positive integer.
    #[error("session/prompt maxTurns must be a positive integer")]
    MaxTurns,
}
