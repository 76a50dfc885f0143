//! Why a goal tool refused, mapped once to its tool result: the official
//! runtime's texts and codes where it was observed (`GoalError` for the
//! goal's own rules, `HarnessError` for the tools' policy).

use dsh_protocol::catalog::{GoalPhase, ToolErrorCode};
use dsh_tools::ToolOutput;
use serde_json::Value;

use super::limits::{BLOCK_THRESHOLD, MAX_TEXT_BYTES};
use crate::tool_args::InvalidArgs;

/// A refused goal call.
#[derive(Debug, thiserror::Error)]
pub(crate) enum GoalError {
    /// The arguments do not fit the schema.
    #[error(transparent)]
    InvalidArgs(#[from] InvalidArgs),
    /// There is no goal to update.
    #[error("Error: no current goal")]
    NotFound,
    /// The call names another goal or revision than the current one.
    #[error(
        "Error: stale goal ref {} revision {}; current is {} revision {revision}",
        quoted(given_id),
        js_number(*given_revision),
        quoted(id)
    )]
    Stale {
        /// The goal named.
        given_id: String,
        /// The revision named.
        given_revision: f64,
        /// The current goal.
        id: String,
        /// Its revision.
        revision: u64,
    },
    /// A goal that is not complete exists.
    #[error("Error: goal {} already exists with phase \"{}\"", quoted(id), phase.as_str())]
    AlreadyExists {
        /// The existing goal.
        id: String,
        /// Its phase.
        phase: GoalPhase,
    },
    /// The objective is empty once trimmed.
    #[error("Error: goal objective must be a non-empty string")]
    EmptyObjective,
    /// The objective is longer than this runtime keeps (no such bound was
    /// seen on the official runtime).
    #[error("Error: goal objective must be at most {MAX_TEXT_BYTES} bytes")]
    ObjectiveTooLong,
    /// The round limit is not a positive safe integer.
    #[error("Error: maxGoalRounds must be a positive safe integer")]
    InvalidMaxRounds,
    /// An edit with nothing to change.
    #[error("Error: goal edit requires objective and/or maxGoalRounds")]
    EmptyEdit,
    /// The action does not apply to the goal's phase.
    #[error(
        "Error: cannot {verb} goal {} from phase \"{}\"; expected {expected}",
        quoted(id),
        phase.as_str()
    )]
    Transition {
        /// The action, as a verb.
        verb: &'static str,
        /// The goal.
        id: String,
        /// Its phase.
        phase: GoalPhase,
        /// The phases the action applies to.
        expected: &'static str,
    },
    /// `resume` of a goal whose rounds run.
    #[error("Error: goal {} is already active and armed", quoted(id))]
    AlreadyArmed {
        /// The goal.
        id: String,
    },
    /// `resume` of a paused goal: only a person may resume it.
    #[error("Error: the model cannot resume a paused goal; the user must resume it")]
    ResumePaused,
    /// The update's fields do not fit its action.
    #[error("Error: {}", .0.text())]
    InvalidUpdate(UpdateProblem),
    /// The change needs a turn the user started on a top-level agent.
    #[error("Error: this goal operation requires a direct human turn on a top-level agent")]
    NeedsHuman,
    /// `complete` or `blocked` outside a user turn and the goal's round.
    #[error("Error: complete and blocked require a direct human turn or the current goal round")]
    NeedsHumanOrRound,
    /// A round reported the goal blocked before its third round.
    #[error(
        "Error: blocked requires at least {BLOCK_THRESHOLD} consecutive goal rounds; current round is {0}"
    )]
    BlockTooEarly(u64),
}

/// How an update's fields do not fit its action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UpdateProblem {
    /// `pause` or `resume` with any field.
    NoFields,
    /// `objective` or `max_goal_rounds` without `edit`.
    EditFields,
    /// `blocked_reason` without `blocked`.
    BlockedReason,
    /// `blocked` without a reason.
    MissingReason,
    /// A reason longer than this runtime keeps.
    ReasonTooLong,
}

impl UpdateProblem {
    fn text(self) -> String {
        match self {
            Self::NoFields => "objective and max_goal_rounds are valid only with action edit; blocked_reason is valid only with action blocked".to_owned(),
            Self::EditFields => "objective and max_goal_rounds are valid only with action edit".to_owned(),
            Self::BlockedReason => "blocked_reason is valid only with action blocked".to_owned(),
            Self::MissingReason => "blocked_reason is required with action blocked".to_owned(),
            Self::ReasonTooLong => format!("blocked_reason must be at most {MAX_TEXT_BYTES} bytes"),
        }
    }
}

impl GoalError {
    /// The code written with the refusal.
    pub fn code(&self) -> ToolErrorCode {
        match self {
            Self::InvalidArgs(_) => ToolErrorCode::InvalidArgs,
            Self::NotFound => ToolErrorCode::GoalNotFound,
            Self::Stale { .. } => ToolErrorCode::GoalStaleRevision,
            Self::AlreadyExists { .. } => ToolErrorCode::GoalAlreadyExists,
            Self::EmptyObjective | Self::ObjectiveTooLong => ToolErrorCode::GoalInvalidObjective,
            Self::InvalidMaxRounds => ToolErrorCode::GoalInvalidMaxRounds,
            Self::EmptyEdit => ToolErrorCode::GoalInvalidEdit,
            Self::Transition { .. } | Self::AlreadyArmed { .. } => {
                ToolErrorCode::GoalInvalidTransition
            }
            Self::ResumePaused => ToolErrorCode::GoalToolResumePaused,
            Self::InvalidUpdate(_) => ToolErrorCode::GoalToolInvalidUpdate,
            Self::NeedsHuman | Self::NeedsHumanOrRound => ToolErrorCode::GoalToolAuthorityRequired,
            Self::BlockTooEarly(_) => ToolErrorCode::GoalToolBlockThreshold,
        }
    }
}

impl From<GoalError> for ToolOutput {
    fn from(err: GoalError) -> Self {
        let code = err.code();
        ToolOutput::failure(err.to_string()).with_error(code)
    }
}

fn quoted(id: &str) -> String {
    Value::from(id).to_string()
}

/// A number as JavaScript prints it: whole numbers without a fraction.
fn js_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{value:.0}")
    } else {
        value.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_carry_the_official_texts_names_and_codes() {
        let out = ToolOutput::from(GoalError::Stale {
            given_id: "GOALID".into(),
            given_revision: 7.0,
            id: "goal-1".into(),
            revision: 1,
        });
        assert_eq!(
            out.text_content(),
            r#"Error: stale goal ref "GOALID" revision 7; current is "goal-1" revision 1"#
        );
        let error = out
            .error
            .as_ref()
            .map(|e| (e.name.as_str(), e.code.as_str()));
        assert_eq!(error, Some(("GoalError", "GOAL_STALE_REVISION")));
        let out = ToolOutput::from(GoalError::InvalidUpdate(UpdateProblem::NoFields));
        let error = out
            .error
            .as_ref()
            .map(|e| (e.name.as_str(), e.code.as_str()));
        assert_eq!(error, Some(("HarnessError", "GOAL_TOOL_INVALID_UPDATE")));
        assert_eq!(
            GoalError::Transition {
                verb: "block",
                id: "goal-1".into(),
                phase: GoalPhase::Complete,
                expected: "active",
            }
            .to_string(),
            r#"Error: cannot block goal "goal-1" from phase "complete"; expected active"#
        );
        assert_eq!(
            GoalError::BlockTooEarly(2).to_string(),
            "Error: blocked requires at least 3 consecutive goal rounds; current round is 2"
        );
        assert_eq!(js_number(1.0), "1");
        assert_eq!(js_number(1.5), "1.5");
    }
}
