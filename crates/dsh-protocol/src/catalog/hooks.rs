//! dsh's record of command hooks (Claude Code's and Codex's format): which
//! sources a session loaded, and every hook run. Both types are dsh's
//! extension, written with `ignorable: true` (as every `dsh/` type), so
//! the official runtime skips them when it resumes the session.

use super::kind;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `dsh/hooks-loaded {sources}`: the hook sources of a session, recorded
/// when its first turn in this process begins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct HooksLoaded {
    /// Every source, in the order its hooks run.
    pub sources: Vec<HookSource>,
}
kind!(HooksLoaded, "dsh/hooks-loaded");

/// One source of hooks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookSource {
    /// `home` (`DSH_HOME/hooks.json`), `patch`, `initialize`,
    /// `project-claude` (`.claude/settings.json`), `project-claude-local`
    /// (`.claude/settings.local.json`) or `project-codex`
    /// (`.codex/hooks.json`).
    pub kind: String,
    /// Its file, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// How many hooks it added.
    pub hooks: usize,
    /// What it holds that dsh does not run (`event PermissionRequest`,
    /// `PreToolUse hook of type prompt`).
    #[serde(default)]
    pub ignored: Vec<String>,
    /// Why it was not used (a project file that does not fit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// `dsh/hook-run`: one hook ran. Its output is not recorded, only what it
/// decided and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookRunEvent {
    /// The event (`PreToolUse`, `Stop`, …).
    pub event: String,
    /// The command run.
    pub command: String,
    /// The source it was configured in (as [`HookSource::kind`]).
    pub source: String,
    /// The turn it ran in, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// The tool call it ran for (`PreToolUse`, `PostToolUse`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
    /// The tool (dsh's name) of that call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_name: Option<String>,
    /// How long it ran, in milliseconds.
    pub duration_ms: u64,
    /// Its exit code; `null` when it did not exit by itself.
    pub exit_code: Option<i32>,
    /// `exited`, `signaled`, `timed-out`, `output-too-large`,
    /// `spawn-failed` or `cancelled`.
    pub status: String,
    /// `none`, `allow`, `deny`, `ask`, `block`, `stop`, `context` or
    /// `error`.
    pub decision: String,
    /// The reason it gave, or what went wrong (at most 2 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What it told the user (`systemMessage`), or a note on its output
    /// (at most 2 KiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
kind!(HookRunEvent, "dsh/hook-run");
