//! Turns and steps, and the messages a step adds.

use super::{LlmFailure, Usage, kind};
use crate::message::{AssistantMessage, SystemMessage, UserMessage};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `turn/start {turn}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TurnStart {
    /// Turn number, from 1.
    pub turn: u32,
}
kind!(TurnStart, "turn/start");

/// `turn/end {turn, reason}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TurnEnd {
    /// Turn number.
    pub turn: u32,
    /// Why it ended.
    pub reason: TurnEndReason,
}
kind!(TurnEnd, "turn/end");

/// `turn/end.reason`: `{kind[, error | reason]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[schemars(transform = super::other_kind)]
pub enum TurnEndReason {
    /// The model answered without asking for more tools.
    Completed,
    /// The model's reply was cut at its token cap.
    MaxTokens,
    /// A model attempt failed for good, or the log could not be written.
    Error {
        /// What failed.
        error: LlmFailure,
    },
    /// The turn was stopped.
    Aborted {
        /// By what.
        reason: AbortReason,
    },
    /// The runtime stopped during the turn (written by resume repair).
    Interrupted,
    /// A hook refused the turn's prompt (`UserPromptSubmit`).
    Blocked,
    /// A reason this runtime does not know (read from another runtime).
    #[serde(other)]
    Other,
}

impl TurnEndReason {
    /// The reason's `kind`, or `None` for one this runtime does not know.
    pub fn kind(&self) -> Option<&'static str> {
        Some(match self {
            Self::Completed => "completed",
            Self::MaxTokens => "max-tokens",
            Self::Error { .. } => "error",
            Self::Aborted { .. } => "aborted",
            Self::Interrupted => "interrupted",
            Self::Blocked => "blocked",
            Self::Other => return None,
        })
    }
}

/// `turn/end.reason.reason` of an aborted turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
#[schemars(transform = super::other_kind)]
pub enum AbortReason {
    /// The session was disposed (shutdown, end of input).
    Disposed,
    /// The parent agent stopped the turn (`interrupt_agent`).
    Parent,
    /// The client stopped the turn (`session/cancel`, dsh's extension).
    Client,
    /// The prompt's budget ran out (`maxCostUsd` / `maxTurns`, dsh's
    /// extension).
    Budget {
        /// The limit reached.
        limit: BudgetLimit,
    },
    /// A hook stopped the agent (`continue: false`), with its
    /// `stopReason`.
    Hook {
        /// Why.
        reason: String,
    },
    /// A cause this runtime does not know.
    #[serde(other)]
    Other,
}

/// The limit of a prompt's budget that ended its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum BudgetLimit {
    /// `maxCostUsd`.
    #[serde(rename = "maxCostUsd")]
    MaxCostUsd,
    /// `maxTurns`.
    #[serde(rename = "maxTurns")]
    MaxTurns,
}

/// `step/start {turn, step}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StepStart {
    /// Turn number.
    pub turn: u32,
    /// Step number within the turn, from 1.
    pub step: u32,
}
kind!(StepStart, "step/start");

/// `step/end {turn, step}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StepEnd {
    /// Turn number.
    pub turn: u32,
    /// Step number.
    pub step: u32,
}
kind!(StepEnd, "step/end");

/// `system/message {turn, step, message}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SystemMessageEvent<M = SystemMessage> {
    /// Turn number.
    pub turn: u32,
    /// Step number.
    pub step: u32,
    /// The system prompt sent from this step on.
    pub message: M,
}
kind!(SystemMessageEvent<M>, "system/message");

kind!(UserMessage, "user/message");

/// `assistant/message {turn, step, message, usage?, stream}`. A writer
/// borrows the message and the stream records (`M = &AssistantMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AssistantMessageEvent<M = AssistantMessage, S = Value> {
    /// Turn number.
    pub turn: u32,
    /// Step number.
    pub step: u32,
    /// The settled reply.
    pub message: M,
    /// Token usage, when the provider reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// The compact stream records of the attempt.
    pub stream: S,
}
kind!(AssistantMessageEvent<M, S>, "assistant/message");

/// `assistant/attempt {turn, step, stream}`: a failed attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AssistantAttempt<S = Value> {
    /// Turn number.
    pub turn: u32,
    /// Step number.
    pub step: u32,
    /// The stream records of the attempt, ending in its failure.
    pub stream: S,
}
kind!(AssistantAttempt<S>, "assistant/attempt");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_keep_the_official_shapes() {
        let cases = [
            (TurnEndReason::Completed, r#"{"kind":"completed"}"#),
            (TurnEndReason::MaxTokens, r#"{"kind":"max-tokens"}"#),
            (TurnEndReason::Interrupted, r#"{"kind":"interrupted"}"#),
            (
                TurnEndReason::Aborted {
                    reason: AbortReason::Disposed,
                },
                r#"{"kind":"aborted","reason":{"kind":"disposed"}}"#,
            ),
        ];
        for (reason, text) in cases {
            assert_eq!(serde_json::to_string(&reason).unwrap(), text);
            assert_eq!(serde_json::from_str::<TurnEndReason>(text).unwrap(), reason);
        }
        let error = r#"{"kind":"error","error":{"message":"m","code":"SERVER","status":500}}"#;
        let reason: TurnEndReason = serde_json::from_str(error).unwrap();
        assert!(matches!(&reason, TurnEndReason::Error { error } if error.status == Some(500)));
        assert_eq!(serde_json::to_string(&reason).unwrap(), error);
        let later = r#"{"kind":"handed-off","to":"x"}"#;
        assert_eq!(
            serde_json::from_str::<TurnEndReason>(later).unwrap(),
            TurnEndReason::Other
        );
    }
}
