//! Goals: the persisted objective that drives automatic continuation
//! rounds (`create_goal`, `update_goal`, the rounds themselves).

use super::kind;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `goal/change {kind, version, operation, goal, roundsStarted, createdAt,
/// updatedAt}`: the goal after one change. `kind` repeats the event type,
/// as the official runtime writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalChange {
    /// Always `goal/change`.
    pub kind: GoalChangeKind,
    /// Always 1.
    pub version: u32,
    /// What changed.
    pub operation: GoalOperation,
    /// The goal after the change.
    pub goal: GoalSnapshot,
    /// How many continuation rounds have started for the goal.
    pub rounds_started: u64,
    /// When the goal was created, epoch ms.
    pub created_at: u64,
    /// When this change was made, epoch ms.
    pub updated_at: u64,
}
kind!(GoalChange, "goal/change");

/// The literal `goal/change` in a `goal/change` payload.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum GoalChangeKind {
    /// `goal/change`
    #[default]
    #[serde(rename = "goal/change")]
    Value,
}

/// `goal/change.operation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GoalOperation {
    /// `create_goal`.
    Create,
    /// `update_goal` `edit`.
    Edit,
    /// `update_goal` `pause`, or disposal of a session with an armed goal.
    Pause,
    /// `update_goal` `resume`.
    Resume,
    /// `update_goal` `complete`.
    Complete,
    /// `update_goal` `blocked`, or the round limit reached.
    Block,
}

/// `goal/change.goal {id, revision, objective, phase, maxGoalRounds,
/// blockedReason?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GoalSnapshot {
    /// `goal-<uuid>`.
    pub id: String,
    /// 1 at creation, + 1 at every change.
    pub revision: u64,
    /// What the rounds work toward.
    pub objective: String,
    /// Where the goal stands.
    pub phase: GoalPhase,
    /// How many rounds may start before the goal is blocked.
    pub max_goal_rounds: u64,
    /// Why a `blocked` goal is blocked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_reason: Option<BlockedReason>,
}

/// `goal.phase`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum GoalPhase {
    /// Rounds may run.
    Active,
    /// Stopped until a person resumes it.
    Paused,
    /// Stopped for a reason the model or the round limit gave.
    Blocked,
    /// Done.
    Complete,
}

impl GoalPhase {
    /// The phase as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Paused => "paused",
            Self::Blocked => "blocked",
            Self::Complete => "complete",
        }
    }
}

/// `goal.blockedReason {code, message}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct BlockedReason {
    /// `model-reported` or `round-limit`.
    pub code: BlockedCode,
    /// The reason, in words.
    pub message: String,
}

/// `blockedReason.code`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum BlockedCode {
    /// The model reported the goal blocked (`update_goal` `blocked`).
    ModelReported,
    /// The goal used up its rounds.
    RoundLimit,
}
