//! `create_goal`, `get_goal` and `update_goal`: the model's view of the
//! session's goal (Appendix B schemas; the descriptions are our own).
//!
//! Checks run in the official order: the schema, then who may make the
//! change (a user's turn on a top-level agent; a goal's own round may only
//! complete it or, from its third round, block it), then the update's
//! fields, then the goal itself (exists, revision current, phase).

use super::error::{BLOCK_THRESHOLD, GoalError, UpdateProblem};
use super::model::{Action, MAX_TEXT_BYTES};
use super::{Origin, prose};
use crate::inner::Inner;
use crate::tool_args::{Kind, Property, check, number, text};
use dsh_protocol::catalog::{GoalOperation, ToolSpec};
use dsh_session::{UserMessage, now_ms, text_block};
use dsh_tools::ToolOutput;
use serde_json::json;

/// Names of the goal tools.
pub(crate) const GOAL_TOOLS: [&str; 3] = ["create_goal", "get_goal", "update_goal"];

const ACTIONS: &[&str] = &["edit", "pause", "resume", "complete", "blocked"];

const CREATE: &[Property] = &[
    Property {
        name: "objective",
        kind: Kind::Text,
        required: true,
    },
    Property {
        name: "max_goal_rounds",
        kind: Kind::Number,
        required: false,
    },
];

const UPDATE: &[Property] = &[
    Property {
        name: "goal_id",
        kind: Kind::Text,
        required: true,
    },
    Property {
        name: "revision",
        kind: Kind::Number,
        required: true,
    },
    Property {
        name: "action",
        kind: Kind::OneOf(ACTIONS),
        required: true,
    },
    Property {
        name: "objective",
        kind: Kind::Text,
        required: false,
    },
    Property {
        name: "max_goal_rounds",
        kind: Kind::Number,
        required: false,
    },
    Property {
        name: "blocked_reason",
        kind: Kind::Text,
        required: false,
    },
];

/// Source kind of the notice that closes a run of rounds.
const TOOL_GOAL: &str = "tool-goal";

/// The three tool specs.
pub(crate) fn specs() -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "create_goal".into(),
            description: prose::CREATE_GOAL.into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "objective": {"type": "string", "description": prose::CREATE_OBJECTIVE},
                    "max_goal_rounds": {"type": "number", "description": prose::MAX_ROUNDS},
                },
                "required": ["objective"],
            }),
        },
        ToolSpec {
            name: "get_goal".into(),
            description: prose::GET_GOAL.into(),
            parameters: json!({"type": "object", "properties": {}}),
        },
        ToolSpec {
            name: "update_goal".into(),
            description: prose::UPDATE_GOAL.into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "goal_id": {"type": "string", "description": prose::GOAL_ID},
                    "revision": {"type": "number", "description": prose::REVISION},
                    "action": {"type": "string", "description": prose::ACTION, "enum": ACTIONS},
                    "objective": {"type": "string", "description": prose::EDIT_OBJECTIVE},
                    "max_goal_rounds": {"type": "number", "description": prose::MAX_ROUNDS},
                    "blocked_reason": {"type": "string", "description": prose::BLOCKED_REASON},
                },
                "required": ["goal_id", "revision", "action"],
            }),
        },
    ]
}

/// Runs goal tool `name`.
pub(crate) fn run(inner: &Inner, name: &str, arguments: &str) -> ToolOutput {
    let result = match name {
        "create_goal" => create(inner, arguments),
        "get_goal" => get(inner, arguments),
        _ => update(inner, arguments),
    };
    result.unwrap_or_else(ToolOutput::from)
}

fn get(inner: &Inner, arguments: &str) -> Result<ToolOutput, GoalError> {
    check(arguments, &[])?;
    Ok(ToolOutput::text(
        inner.state().goals.book.view().to_string(),
    ))
}

fn create(inner: &Inner, arguments: &str) -> Result<ToolOutput, GoalError> {
    let args = check(arguments, CREATE)?;
    let mut state = inner.state();
    if !is_human(&state.goals.origin, inner) {
        return Err(GoalError::NeedsHuman);
    }
    let id = format!("goal-{}", uuid::Uuid::new_v4());
    let objective = text(&args, "objective").unwrap_or_default();
    let change =
        state
            .goals
            .book
            .create(id, objective, number(&args, "max_goal_rounds"), now_ms())?;
    state.event(change);
    Ok(ToolOutput::text(state.goals.book.view().to_string()))
}

fn update(inner: &Inner, arguments: &str) -> Result<ToolOutput, GoalError> {
    let args = check(arguments, UPDATE)?;
    let objective = text(&args, "objective");
    let max_rounds = number(&args, "max_goal_rounds");
    let reason = text(&args, "blocked_reason");
    let edits = objective.is_some() || max_rounds.is_some();
    let name = text(&args, "action").unwrap_or_default();
    let mut state = inner.state();
    let origin = state.goals.origin.clone();
    let current = state.goals.book.current().map(|g| g.id.clone());
    let round = match &origin {
        Origin::Round { goal_id, round } if Some(goal_id) == current.as_ref() => Some(*round),
        _ => None,
    };
    let ending = matches!(name, "complete" | "blocked");
    let allowed = is_human(&origin, inner) || (ending && round.is_some());
    if !allowed {
        return Err(if ending {
            GoalError::NeedsHumanOrRound
        } else {
            GoalError::NeedsHuman
        });
    }
    let problem = match name {
        "pause" | "resume" if edits || reason.is_some() => Some(UpdateProblem::NoFields),
        "complete" | "blocked" if edits => Some(UpdateProblem::EditFields),
        "edit" | "complete" if reason.is_some() => Some(UpdateProblem::BlockedReason),
        "blocked" if reason.is_none_or(|r| r.trim().is_empty()) => {
            Some(UpdateProblem::MissingReason)
        }
        "blocked" if reason.is_some_and(|r| r.trim().len() > MAX_TEXT_BYTES) => {
            Some(UpdateProblem::ReasonTooLong)
        }
        _ => None,
    };
    if let Some(problem) = problem {
        return Err(GoalError::InvalidUpdate(problem));
    }
    if name == "blocked"
        && let Some(round) = round
        && round < BLOCK_THRESHOLD
    {
        return Err(GoalError::BlockTooEarly(round));
    }
    let action = match name {
        "edit" => Action::Edit {
            objective: objective.map(str::to_owned),
            max_rounds,
        },
        "pause" => Action::Pause,
        "resume" => Action::Resume,
        "complete" => Action::Complete,
        _ => Action::Blocked(reason.unwrap_or_default().trim().to_owned()),
    };
    let id = text(&args, "goal_id").unwrap_or_default();
    let revision = number(&args, "revision").unwrap_or_default();
    let change = state.goals.book.update(id, revision, action, now_ms())?;
    // A round that ends the goal is told to close the run: the notice
    // joins the next step once this call's result is recorded.
    if round.is_some() {
        let objective = &change.goal.objective;
        let (action, content) = match (change.operation, &change.goal.blocked_reason) {
            (GoalOperation::Block, Some(reason)) => {
                ("blocked", prose::blocked_text(objective, &reason.message))
            }
            _ => ("complete", prose::complete_text(objective)),
        };
        let summary = prose::summary(action, objective);
        state.goals.notice = Some(UserMessage::inbox_notice(
            TOOL_GOAL,
            vec![text_block(content)],
            &summary,
            None,
        ));
    }
    state.event(change);
    Ok(ToolOutput::text(state.goals.book.view().to_string()))
}

/// Whether the running turn is a user's turn on a top-level agent.
fn is_human(origin: &Origin, inner: &Inner) -> bool {
    *origin == Origin::Human && inner.lineage.depth == 0
}
