//! `create_goal`, `get_goal` and `update_goal`: the model's view of the
//! session's goal (Appendix B schemas; the descriptions are our own).
//!
//! Checks run in the official order: the schema, then who may make the
//! change (a user's turn on a top-level agent; a goal's own round may only
//! complete it or, from its third round, block it), then the update's
//! fields, then the goal itself (exists, revision current, phase).

use super::error::{GoalError, UpdateProblem};
use super::limits::{BLOCK_THRESHOLD, MAX_TEXT_BYTES};
use super::model::Action;
use super::{Goals, Origin, prose};
use crate::core::{AgentTool, Core, HookFuture, ToolCall, ToolOutcome};
use crate::tool_args::{Kind, Property, check, number, text};
use dsh_protocol::catalog::{GoalOperation, ToolSpec};
use dsh_session::{UserMessage, now_ms, text_block};
use dsh_tools::ToolOutput;
use serde_json::json;

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

/// `create_goal`, `get_goal` and `update_goal`.
pub(crate) struct GoalTools;

impl AgentTool for GoalTools {
    fn specs(&self) -> Vec<ToolSpec> {
        specs()
    }

    fn call<'a>(&'a self, call: ToolCall<'a>) -> HookFuture<'a, ToolOutcome> {
        let core = call.core;
        let result = match call.name {
            "create_goal" => create(core, call.arguments).map(ToolOutcome::from),
            "get_goal" => get(core, call.arguments).map(ToolOutcome::from),
            _ => update(core, call.arguments),
        };
        Box::pin(std::future::ready(
            result.unwrap_or_else(|err| ToolOutput::from(err).into()),
        ))
    }
}

/// The three tool specs.
fn specs() -> Vec<ToolSpec> {
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

fn get(core: &Core, arguments: &str) -> Result<ToolOutput, GoalError> {
    check(arguments, &[])?;
    let mut state = core.state();
    Ok(ToolOutput::text(
        state.extension::<Goals>().book.view().to_string(),
    ))
}

fn create(core: &Core, arguments: &str) -> Result<ToolOutput, GoalError> {
    let args = check(arguments, CREATE)?;
    let mut state = core.state();
    let goals = state.extension::<Goals>();
    if !is_human(&goals.origin, core) {
        return Err(GoalError::NeedsHuman);
    }
    let id = format!("goal-{}", uuid::Uuid::new_v4());
    let objective = text(&args, "objective").unwrap_or_default();
    let change = goals
        .book
        .create(id, objective, number(&args, "max_goal_rounds"), now_ms())?;
    let view = goals.book.view().to_string();
    state.event(change);
    Ok(ToolOutput::text(view))
}

fn update(core: &Core, arguments: &str) -> Result<ToolOutcome, GoalError> {
    let args = check(arguments, UPDATE)?;
    let objective = text(&args, "objective");
    let max_rounds = number(&args, "max_goal_rounds");
    let reason = text(&args, "blocked_reason");
    let edits = objective.is_some() || max_rounds.is_some();
    let name = text(&args, "action").unwrap_or_default();
    let mut state = core.state();
    let goals = state.extension::<Goals>();
    let origin = goals.origin.clone();
    let current = goals.book.current().map(|g| g.id.clone());
    let round = match &origin {
        Origin::Round { goal_id, round } if Some(goal_id) == current.as_ref() => Some(*round),
        _ => None,
    };
    let ending = matches!(name, "complete" | "blocked");
    let allowed = is_human(&origin, core) || (ending && round.is_some());
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
    let goals = state.extension::<Goals>();
    let change = goals.book.update(id, revision, action, now_ms())?;
    let view = goals.book.view().to_string();
    // A round that ends the goal is told to close the run: the notice
    // joins the next step once this call's result is recorded.
    let mut follow_up = None;
    if round.is_some() {
        let objective = &change.goal.objective;
        let (action, content) = match (change.operation, &change.goal.blocked_reason) {
            (GoalOperation::Block, Some(reason)) => {
                ("blocked", prose::blocked_text(objective, &reason.message))
            }
            _ => ("complete", prose::complete_text(objective)),
        };
        let summary = prose::summary(action, objective);
        follow_up = Some(UserMessage::inbox_notice(
            TOOL_GOAL,
            vec![text_block(content)],
            &summary,
            None,
        ));
    }
    state.event(change);
    Ok(ToolOutcome {
        output: ToolOutput::text(view),
        follow_up,
        end_turn: false,
    })
}

/// Whether the running turn is a user's turn on a top-level agent.
fn is_human(origin: &Origin, core: &Core) -> bool {
    *origin == Origin::Human && core.lineage.depth == 0
}
