//! Goals (`sdk` profile): one persisted objective per session that keeps
//! the agent working in automatic continuation rounds.
//!
//! * The model creates a goal in a user's turn (`create_goal`); it is
//!   active and *armed*. Every change is a `goal/change` event, written
//!   before the call's result.
//! * When the agent goes idle after a turn that completed, and its
//!   children are idle too (a child's news is a turn of its own first), an
//!   armed goal starts its next round: the `idle` status is announced, a
//!   user message
//!   with `source: {kind: "goal", goalId, revision, round}` is inserted into
//!   `next-turn`, `running` is announced and the round's turn begins (its
//!   request is announced again with `request/header {reason: "series"}`).
//!   A prompt that is already queued goes first. Once `roundsStarted`
//!   reaches `maxGoalRounds`, the goal is blocked (`round-limit`) instead.
//! * A turn that ends other than `completed` (an error, the token cap, an
//!   interrupt) disarms the goal: it stays active, and a user's turn may
//!   `resume` it. A round that completes or blocks the goal gets a
//!   closing notice (`tool-goal`) on its next step.
//! * Disposal pauses an armed goal. Resume and fork rebuild the goal from
//!   the log, disarmed.
//! * Waiters (`session/wait`) are released at every `idle`, the one
//!   before a round included, as on the official runtime: a wait that
//!   starts during a round returns at that round's end.

mod error;
mod limits;
mod model;
mod prose;
mod tools;

pub(crate) use tools::GoalTools;

use crate::core::{AgentState, Core, Feature};
use dsh_protocol::catalog::{Event, TurnEndReason};
use dsh_session::store::{GoalFacts, ResumeFacts};
use dsh_session::{UserMessage, now_ms, text_block};
use model::{GoalBook, Next};
use serde_json::{Value, json};

/// Who started the running turn, which decides what it may do to the
/// goal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) enum Origin {
    /// A prompt of the client's user.
    Human,
    /// A continuation round of a goal.
    Round {
        /// The goal.
        goal_id: String,
        /// The round's number.
        round: u64,
    },
    /// Anything else: a notice, a relayed message, no turn yet.
    #[default]
    Other,
}

impl Origin {
    /// The origin of a turn that claimed `prompt` from `next-turn`.
    fn of(prompt: Option<&UserMessage>) -> Self {
        let Some(prompt) = prompt else {
            return Self::Other;
        };
        match prompt.source_kind() {
            Some("user") => Self::Human,
            Some(GOAL) => {
                let source = &prompt.source;
                match (
                    source.get("goalId").and_then(Value::as_str),
                    source.get("round").and_then(Value::as_u64),
                ) {
                    (Some(goal_id), Some(round)) => Self::Round {
                        goal_id: goal_id.to_owned(),
                        round,
                    },
                    _ => Self::Other,
                }
            }
            _ => Self::Other,
        }
    }
}

/// Source kind of a round's message.
const GOAL: &str = "goal";

/// A session's goal state, kept in the agent's state
/// ([`AgentState::extension`]).
#[derive(Debug, Default)]
pub(crate) struct Goals {
    /// The goal and whether it is armed.
    book: GoalBook,
    /// Who started the running turn.
    origin: Origin,
    /// What a fork's inherited events said of the goal, until the
    /// child's state is restored.
    inherited: Option<GoalFacts>,
}

/// The goals feature.
pub(crate) struct GoalRounds;

impl Feature for GoalRounds {
    fn inherited(&self, state: &mut AgentState, event: &Event) {
        state
            .extension::<Goals>()
            .inherited
            .get_or_insert_with(GoalFacts::default)
            .push(event);
    }

    fn resumed(&self, state: &mut AgentState, facts: &ResumeFacts) {
        state.extension::<Goals>().book = GoalBook::restored(facts.goal.clone());
    }

    fn restored(&self, state: &mut AgentState) {
        // A fork's goal comes from its inherited events (disarmed, as a
        // resume's); a fork before any goal event has none.
        let goals = state.extension::<Goals>();
        if let Some(facts) = goals.inherited.take() {
            goals.book = GoalBook::restored(facts);
        }
    }

    fn turn_started(&self, state: &mut AgentState, prompt: Option<&UserMessage>) {
        state.extension::<Goals>().origin = Origin::of(prompt);
    }

    /// A turn that ended other than `completed` disarms the goal.
    fn turn_ended(&self, state: &mut AgentState, reason: &TurnEndReason) {
        if !matches!(reason, TurnEndReason::Completed) {
            state.extension::<Goals>().book.disarm();
        }
    }

    fn idle(&self, core: &Core) {
        schedule(core);
    }

    /// Disposal pauses an armed goal (after its last turn ended).
    fn disposed(&self, state: &mut AgentState) {
        if let Some(change) = state.extension::<Goals>().book.pause_armed(now_ms()) {
            state.event(change);
        }
    }
}

/// What a top-level agent that just went idle does for its goal, once its
/// children are idle too (a child's news starts a turn first, whose end
/// comes back here): start the next round (its turn is begun; the loop
/// runs it) or block a goal whose rounds are used up.
fn schedule(core: &Core) {
    if core.lineage.depth > 0 {
        return;
    }
    if core.child_agents().iter().any(|child| !child.tree_quiet()) {
        return;
    }
    let mut state = core.state();
    after_idle(&mut state);
    state.flush();
}

/// See [`schedule`]: the goal's next step on an idle agent.
fn after_idle(state: &mut AgentState) {
    if state.is_disposed() || state.is_running() || state.has_queued_turn() {
        return;
    }
    match state.extension::<Goals>().book.next(now_ms()) {
        None => {}
        Some(Next::LimitReached(change)) => {
            state.event(change);
        }
        Some(Next::Round(round)) => {
            let source = json!({
                "kind": GOAL,
                "goalId": round.goal_id,
                "revision": round.revision,
                "round": round.round,
            });
            let message = UserMessage::new(vec![text_block(prose::round_text(&round))], source);
            state.start_round(message);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_is_a_round_only_for_a_well_formed_goal_message() {
        let user = UserMessage::prompt(vec![text_block("hi")]);
        assert_eq!(Origin::of(Some(&user)), Origin::Human);
        assert_eq!(Origin::of(None), Origin::Other);
        let round = UserMessage::new(
            vec![text_block("<goal_round>")],
            json!({"kind": "goal", "goalId": "goal-1", "revision": 1, "round": 2}),
        );
        assert_eq!(
            Origin::of(Some(&round)),
            Origin::Round {
                goal_id: "goal-1".into(),
                round: 2
            }
        );
        let broken = UserMessage::new(vec![], json!({"kind": "goal", "goalId": "goal-1"}));
        assert_eq!(Origin::of(Some(&broken)), Origin::Other);
        let notice = UserMessage::inbox_notice("tool-jobs", vec![], "done", None);
        assert_eq!(Origin::of(Some(&notice)), Origin::Other);
    }
}
