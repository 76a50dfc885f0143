//! Session-wide facts: title, request configuration, policies, working
//! directory, resume markers.

use super::kind;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `session/title {title, messageSeqs, source}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionTitle {
    /// The title.
    pub title: String,
    /// Seqs of the messages it was made from.
    pub message_seqs: Vec<u64>,
    /// How it was made.
    pub source: TitleSource,
}
kind!(SessionTitle, "session/title");

/// `session/title.source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[schemars(transform = super::other_kind)]
pub enum TitleSource {
    /// Cut from the first prompt.
    Fallback,
    /// Another way (written by another runtime).
    #[serde(other)]
    Other,
}

/// `request/header {header, reason}`: the request configuration, announced
/// before the first request and again after a resume. A writer borrows the
/// tool list (`T = &[ToolSpec]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RequestHeader<T = Value> {
    /// The configuration.
    pub header: RequestHeaderBody<T>,
    /// Why it is announced.
    pub reason: HeaderReason,
}
kind!(RequestHeader<T>, "request/header");

/// `request/header.header {config, adapterDefaults?, tools?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestHeaderBody<T = Value> {
    /// Provider, model, effort and token cap, in the route's order.
    pub config: Value,
    /// Which of `config`'s values are defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter_defaults: Option<Value>,
    /// The tools advertised (absent when there are none: the official reader
    /// refuses an empty list).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<super::ToolSpec>", length(min = 1))]
    pub tools: Option<T>,
}

/// `request/header.reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HeaderReason {
    /// The session's first request.
    Initial,
    /// The first request after a resume.
    Resume,
    /// The first request of a new series: the history before it was
    /// rewritten (a compaction), or a goal's continuation round begins.
    Series,
}

/// `request/context {provider, model, contextWindow, systemPromptUpdate?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestContext<S = String> {
    /// The provider.
    pub provider: S,
    /// The model.
    pub model: S,
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// How the model takes a changed system prompt (`in-history`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt_update: Option<S>,
}
kind!(RequestContext<S>, "request/context");

/// `permission/preset {preset}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct PermissionPreset<S = String> {
    /// The permission mode the session starts with.
    pub preset: S,
}
kind!(PermissionPreset<S>, "permission/preset");

/// `sandbox/mode {mode, source?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SandboxMode<S = String> {
    /// The sandbox mode.
    pub mode: S,
    /// Where it comes from (`delegation` for a child agent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<S>,
}
kind!(SandboxMode<S>, "sandbox/mode");

/// `approval/policy {policy, source?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalPolicy<S = String> {
    /// When the session asks for approval.
    pub policy: S,
    /// Where it comes from (`delegation` for a child agent's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<S>,
}
kind!(ApprovalPolicy<S>, "approval/policy");

/// `working-directory/change {cwd}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct WorkingDirectoryChange {
    /// The new effective directory.
    pub cwd: String,
}
kind!(WorkingDirectoryChange, "working-directory/change");

/// `session/end-seed {}`: appended by every resume, disk only; `{"inherited":
/// true}` ends the events a forked child copied from its parent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SessionEndSeed {
    /// Set on the seam of a fork's inherited events.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inherited: Option<bool>,
}
kind!(SessionEndSeed, "session/end-seed");
