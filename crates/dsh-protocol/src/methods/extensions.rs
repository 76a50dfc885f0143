//! dsh's protocol extensions, all opt-in: what `initialize` may add (the
//! client's capabilities, the approval settings) and what the runtime
//! then answers, `session/cancel`, and the `approval/request` the runtime
//! sends to a client that declared `approvals`. A client that sends none
//! of these fields sees the official protocol unchanged.

pub use super::extension_error::ExtensionError;
use super::validate::{MAX_SAFE_INTEGER, count_up_to, non_empty_string, optional, safe_integer};
use crate::JsonObject;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `session/cancel`: stop a session's running turn.
pub const SESSION_CANCEL: &str = "session/cancel";

/// `session/events`: a page of a session's stored events after a seq.
pub const SESSION_EVENTS: &str = "session/events";

/// Most events one `session/events` page holds (and its default).
pub const EVENTS_PAGE_MAX: usize = 10_000;

/// `approval/request`: a request the runtime sends to its client.
pub const APPROVAL_REQUEST: &str = "approval/request";

/// The extension protocol's version, answered as `protocolVersion` to a
/// client that sends one or declares capabilities.
pub const PROTOCOL_VERSION: &str = "dsh-1";

/// What a client declares in `initialize.clientCapabilities` (an object of
/// booleans; unknown keys are ignored).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("additionalProperties" = {"type": "boolean"}))]
#[serde(rename_all = "camelCase")]
pub struct ClientCapabilities {
    /// The client answers `approval/request`.
    #[serde(default)]
    pub approvals: bool,
    /// The client wants `session.delta` notifications.
    #[serde(default)]
    pub deltas: bool,
    /// The client wants `session.usage` notifications.
    #[serde(default)]
    pub usage: bool,
}

/// The extensions this runtime supports, answered as
/// `initialize.capabilities` to a client that asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeCapabilities {
    /// `session/cancel`.
    pub cancel: bool,
    /// `approval/request`, when the client declares `approvals`.
    pub approvals: bool,
    /// `approvalRules` in `initialize`.
    pub approval_rules: bool,
    /// `session/events`.
    pub session_events: bool,
    /// `session.delta`, when the client declares `deltas`.
    pub deltas: bool,
    /// `session.usage` (when the client declares `usage`), `session/usage`,
    /// `initialize.prices`.
    pub usage: bool,
    /// `maxCostUsd` and `maxTurns` in `session/prompt`.
    pub budgets: bool,
    /// `session/list`.
    pub session_list: bool,
    /// `session/fork`.
    pub session_fork: bool,
    /// `mcpServers` and `projectMcp` in `initialize`, the `mcp.server`
    /// notification.
    pub mcp: bool,
    /// `hooks` and `projectHooks` in `initialize`; command hooks in
    /// Claude Code's format.
    pub hooks: bool,
}

impl RuntimeCapabilities {
    /// Everything this build supports.
    pub const ALL: Self = Self {
        cancel: true,
        approvals: true,
        approval_rules: true,
        session_events: true,
        deltas: true,
        usage: true,
        budgets: true,
        session_list: true,
        session_fork: true,
        mcp: true,
        hooks: true,
    };
}

/// The extension fields of `initialize`'s params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InitializeExtensions {
    /// The extension protocol version the client speaks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub protocol_version: Option<String>,
    /// What the client can do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "ClientCapabilities")]
    pub client_capabilities: Option<ClientCapabilities>,
    /// How long an `approval/request` waits for its answer, in
    /// milliseconds; `0` waits for ever. Default 300000 (5 minutes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64", range(max = MAX_SAFE_INTEGER))]
    pub approval_timeout_ms: Option<u64>,
    /// Policy rules applied before asking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "ApprovalRules")]
    pub approval_rules: Option<ApprovalRules>,
    /// Prices per model for `session.usage` and budgets (USD per million
    /// tokens); the defaults are DeepSeek's published prices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "super::usage::PriceTable")]
    pub prices: Option<super::usage::PriceTable>,
    /// MCP servers for the sessions created afterwards: a list of
    /// `{name, command, args?, env?, cwd?, timeoutMs?}` (stdio) or
    /// `{name, url, headers?, timeoutMs?}` (streamable HTTP) objects,
    /// checked by the runtime when it mounts them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<JsonObject>")]
    pub mcp_servers: Option<Value>,
    /// Also read the workspace's `.mcp.json` (off by default: a cloned
    /// repository is attacker-controlled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_mcp: Option<bool>,
    /// Command hooks for the sessions created afterwards, in Claude Code's
    /// `hooks` shape (event name → `[{matcher, hooks: [{type: "command",
    /// command, timeout}]}]`), checked by the runtime.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "JsonObject")]
    pub hooks: Option<Value>,
    /// Also run the workspace's hooks (`.claude/settings.json`,
    /// `.claude/settings.local.json`, `.codex/hooks.json`); off by
    /// default: a cloned repository is attacker-controlled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_hooks: Option<bool>,
}

impl InitializeExtensions {
    /// Whether the client asked for anything beyond the official protocol
    /// (then the result names the runtime's capabilities).
    pub fn any(&self) -> bool {
        self.protocol_version.is_some() || self.client_capabilities.is_some()
    }
}

/// Allow and deny rules for requests of wider access: deny wins, then
/// allow, then the client is asked (or, without one, the request fails
/// closed as on the official runtime).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRules {
    /// Requests these rules match are approved without asking.
    #[serde(default)]
    pub allow: Vec<ApprovalRule>,
    /// Requests these rules match are rejected without asking.
    #[serde(default)]
    pub deny: Vec<ApprovalRule>,
}

/// One rule: every field given must match (data only; nothing the model
/// wrote is run to match it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalRule {
    /// The tool (`bash`, `write`, `edit`), or `*` for any.
    pub tool: String,
    /// The access asked for (`workspace-write`, `danger-full-access`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// `bash`: the command starts with this text (after leading blanks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_prefix: Option<String>,
    /// `write`/`edit`: the `file_path` as written starts with this text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_prefix: Option<String>,
}

/// Params of `session/cancel`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelParams {
    /// The session whose turn stops.
    #[schemars(length(min = 1))]
    pub session_id: String,
    /// Also drop the prompts queued behind the turn (default: they stay
    /// queued and run next).
    #[serde(default)]
    pub drop_queued: bool,
    /// Keep the background jobs the turn started (default: killed).
    #[serde(default)]
    pub keep_jobs: bool,
}

/// Result of `session/cancel`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CancelResult {
    /// The turn cancelled, or `null` when the session had none running.
    pub turn: Option<u32>,
    /// How many queued prompts were dropped (`dropQueued`).
    pub dropped_prompts: usize,
}

/// Params of `approval/request` (runtime → client).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequestParams {
    /// The session whose tool asks (a subagent's own session id; its
    /// `rootSessionId` names the session the client prompted).
    pub session_id: String,
    /// The root session of the tree.
    pub root_session_id: String,
    /// The request's id, as in the `approval/asked` event.
    pub approval_id: String,
    /// The tool asking.
    pub tool_name: String,
    /// Its call id.
    pub call_id: String,
    /// The call's arguments (long strings cut).
    pub arguments: Value,
    /// Why it asks, as in `approval/asked.reason`.
    pub reason: String,
    /// The decisions the client may answer.
    pub options: Vec<ApprovalDecision>,
}

/// The client's answer to `approval/request`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalResponse {
    /// What the client decided.
    pub decision: ApprovalDecision,
    /// With a rejection: passed to the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `approval/request` decisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalDecision {
    /// Run this call with the access asked for.
    AllowOnce,
    /// Run it, and the session's later calls of the same tool asking for
    /// the same access, without asking again.
    AllowSession,
    /// Do not run it.
    Reject,
}

impl ApprovalDecision {
    /// Every decision, in the order offered.
    pub const ALL: [Self; 3] = [Self::AllowOnce, Self::AllowSession, Self::Reject];
}

/// Params of `session/events`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventsParams {
    /// The session (open in this process or stored in `DSH_HOME`).
    #[schemars(length(min = 1))]
    pub session_id: String,
    /// Only events with a greater seq (absent: from the first event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_seq: Option<u64>,
    /// Most events returned, 1 to 10000 (default 10000); a page also ends
    /// after 16 MiB of event data (always holding at least one event).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 10000))]
    pub limit: Option<usize>,
}

/// Result of `session/events`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventsResult {
    /// The events, in seq order, as stored.
    pub events: Vec<crate::catalog::SessionEvent>,
    /// Whether the log holds events after the page (ask again with
    /// `afterSeq` set to the last event's seq).
    pub more: bool,
    /// The seq of the log's last event when it was read (`null` for an
    /// empty log): notifications of later seqs follow; a client merging
    /// both by seq misses nothing and keeps nothing twice.
    pub last_seq: Option<u64>,
}

impl InitializeExtensions {
    /// Takes the extension fields out of `initialize`'s params (the rest
    /// is the official params, validated as before).
    pub fn take(params: &mut JsonObject) -> Result<Self, ExtensionError> {
        let protocol_version = match params.remove("protocolVersion") {
            None => None,
            Some(Value::String(version)) => Some(version),
            Some(_) => return Err(ExtensionError::ProtocolVersion),
        };
        let client_capabilities = match params.remove("clientCapabilities") {
            None => None,
            Some(Value::Object(map)) => {
                if !map.values().all(Value::is_boolean) {
                    return Err(ExtensionError::ClientCapabilities);
                }
                let flag = |name: &str| map.get(name).and_then(Value::as_bool) == Some(true);
                Some(ClientCapabilities {
                    approvals: flag("approvals"),
                    deltas: flag("deltas"),
                    usage: flag("usage"),
                })
            }
            Some(_) => return Err(ExtensionError::ClientCapabilities),
        };
        let approval_timeout_ms = match params.remove("approvalTimeoutMs") {
            None => None,
            Some(value) => Some(
                value
                    .as_u64()
                    .filter(|ms| *ms <= MAX_SAFE_INTEGER)
                    .ok_or(ExtensionError::ApprovalTimeout)?,
            ),
        };
        let approval_rules = match params.remove("approvalRules") {
            None => None,
            Some(value) => Some(
                serde_json::from_value(value)
                    .map_err(|err| ExtensionError::ApprovalRules(err.to_string()))?,
            ),
        };
        let prices = super::usage::PriceTable::take(params)?;
        let mcp_servers = params.remove("mcpServers").filter(|v| !v.is_null());
        let project_mcp = match params.remove("projectMcp") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(flag)) => Some(flag),
            Some(_) => return Err(ExtensionError::ProjectMcp),
        };
        let hooks = match params.remove("hooks") {
            None | Some(Value::Null) => None,
            Some(hooks @ Value::Object(_)) => Some(hooks),
            Some(_) => {
                return Err(ExtensionError::Hooks("hooks must be an object".into()));
            }
        };
        let project_hooks = match params.remove("projectHooks") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(flag)) => Some(flag),
            Some(_) => return Err(ExtensionError::ProjectHooks),
        };
        Ok(Self {
            protocol_version,
            client_capabilities,
            approval_timeout_ms,
            approval_rules,
            prices,
            mcp_servers,
            project_mcp,
            hooks,
            project_hooks,
        })
    }
}

impl EventsParams {
    /// `sessionId` (non-empty string), `afterSeq` (absent, `null` or a
    /// non-negative safe integer), `limit` (absent, `null` or 1–10000).
    pub fn validate(mut params: JsonObject) -> Result<Self, ExtensionError> {
        let session_id =
            non_empty_string(&mut params, "sessionId").ok_or(ExtensionError::EventsSessionId)?;
        let after_seq = optional(
            &mut params,
            "afterSeq",
            safe_integer,
            ExtensionError::EventsAfterSeq,
        )?;
        let limit = optional(
            &mut params,
            "limit",
            count_up_to(EVENTS_PAGE_MAX),
            ExtensionError::EventsLimit,
        )?;
        Ok(Self {
            session_id,
            after_seq,
            limit,
        })
    }
}

impl CancelParams {
    /// `sessionId` (non-empty string), then the optional flags (booleans).
    pub fn validate(mut params: JsonObject) -> Result<Self, ExtensionError> {
        let session_id =
            non_empty_string(&mut params, "sessionId").ok_or(ExtensionError::CancelSessionId)?;
        let mut flag = |name: &'static str| match params.remove(name) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(value)) => Ok(value),
            Some(_) => Err(ExtensionError::CancelFlag(name)),
        };
        Ok(Self {
            session_id,
            drop_queued: flag("dropQueued")?,
            keep_jobs: flag("keepJobs")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        }
    }

    #[test]
    fn initialize_without_extensions_takes_nothing() {
        let mut params = object(json!({"cwd": "/w", "model": "m"}));
        let taken = InitializeExtensions::take(&mut params);
        assert_eq!(taken, Ok(InitializeExtensions::default()));
        assert!(!InitializeExtensions::default().any());
        assert_eq!(params.len(), 2);
    }

    #[test]
    fn extensions_are_taken_and_unknown_capabilities_ignored() {
        let mut params = object(json!({
            "cwd": "/w", "protocolVersion": "dsh-1",
            "clientCapabilities": {"approvals": true, "somethingNew": false},
            "approvalTimeoutMs": 0,
            "approvalRules": {"deny": [{"tool": "bash", "commandPrefix": "rm "}]},
        }));
        let taken = InitializeExtensions::take(&mut params).unwrap_or_default();
        assert!(taken.any());
        assert_eq!(
            taken.client_capabilities,
            Some(ClientCapabilities {
                approvals: true,
                ..ClientCapabilities::default()
            })
        );
        assert_eq!(taken.approval_timeout_ms, Some(0));
        let rules = taken.approval_rules.unwrap_or_default();
        assert_eq!(rules.deny[0].command_prefix.as_deref(), Some("rm "));
        assert_eq!(params.keys().collect::<Vec<_>>(), ["cwd"]);
    }

    #[test]
    fn bad_extension_fields_are_refused_with_their_name() {
        for (field, value, error) in [
            ("protocolVersion", json!(1), ExtensionError::ProtocolVersion),
            (
                "clientCapabilities",
                json!({"approvals": "yes"}),
                ExtensionError::ClientCapabilities,
            ),
            (
                "clientCapabilities",
                json!([true]),
                ExtensionError::ClientCapabilities,
            ),
            (
                "approvalTimeoutMs",
                json!(-1),
                ExtensionError::ApprovalTimeout,
            ),
            (
                "approvalTimeoutMs",
                json!(1.5),
                ExtensionError::ApprovalTimeout,
            ),
        ] {
            let mut params = object(json!({ field: value }));
            assert_eq!(
                InitializeExtensions::take(&mut params),
                Err(error),
                "{field}"
            );
        }
        let mut params =
            object(json!({"approvalRules": {"allow": [{"tool": "bash", "regex": "."}]}}));
        let err = InitializeExtensions::take(&mut params).err();
        assert!(
            matches!(&err, Some(ExtensionError::ApprovalRules(text)) if text.contains("regex")),
            "{err:?}"
        );
    }

    #[test]
    fn cancel_params_are_checked() {
        assert_eq!(
            CancelParams::validate(object(json!({"sessionId": "s", "dropQueued": true}))),
            Ok(CancelParams {
                session_id: "s".into(),
                drop_queued: true,
                keep_jobs: false
            })
        );
        assert_eq!(
            CancelParams::validate(object(json!({"sessionId": ""}))),
            Err(ExtensionError::CancelSessionId)
        );
        assert_eq!(
            CancelParams::validate(object(json!({"sessionId": "s", "keepJobs": 1}))),
            Err(ExtensionError::CancelFlag("keepJobs"))
        );
    }
}
