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
mod model;
mod prose;
mod tools;

pub(crate) use tools::{GOAL_TOOLS, run, specs};

use crate::agent::Agent;
use crate::inner::Inner;
use crate::state::{Delivery, State};
use dsh_protocol::catalog::{HeaderReason, InboxSpliced, InboxTarget};
use dsh_session::store::GoalFacts;
use dsh_session::{SessionStatus, UserMessage, now_ms, text_block};
use model::{GoalBook, Next};
use serde_json::{Value, json};
use std::sync::Arc;

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

/// A session's goal state, kept in the agent's [`State`].
#[derive(Debug, Default)]
pub(crate) struct Goals {
    /// The goal and whether it is armed.
    book: GoalBook,
    /// Who started the running turn.
    origin: Origin,
    /// A closing notice to deliver once the running call's result is
    /// recorded.
    notice: Option<UserMessage>,
}

impl Goals {
    /// The goal a stored log last recorded (resume, fork), disarmed.
    pub fn restored(facts: GoalFacts) -> Self {
        Self {
            book: GoalBook::restored(facts),
            ..Self::default()
        }
    }

    /// Records who starts the turn that claimed `prompt`; returns whether
    /// it is a goal's round.
    pub fn turn_begins(&mut self, prompt: Option<&UserMessage>) -> bool {
        self.origin = Origin::of(prompt);
        matches!(self.origin, Origin::Round { .. })
    }
}

/// Delivers the closing notice a goal tool left, if any (right after the
/// call's `tool/result`).
pub(crate) fn deliver_notice(state: &mut State) {
    if let Some(notice) = state.goals.notice.take() {
        state.deliver(notice, Delivery::Notice, None);
    }
}

/// Disarms the goal after a turn that did not complete.
pub(crate) fn turn_ended(state: &mut State, completed: bool) {
    if !completed {
        state.goals.book.disarm();
    }
}

/// What a top-level agent that just went idle does for its goal, once its
/// children are idle too (a child's news starts a turn first, whose end
/// comes back here): start the next round (its turn is begun; the caller's
/// loop runs it) or block a goal whose rounds are used up.
pub(crate) fn schedule(inner: &Inner) {
    let children: Vec<Arc<Agent>> = inner
        .children()
        .iter()
        .map(|c| Arc::clone(&c.agent))
        .collect();
    if children.iter().any(|child| !child.tree_quiet()) {
        return;
    }
    let mut state = inner.state();
    after_idle(&mut state);
    state.log.flush();
}

/// See [`schedule`]: the goal's next step on an idle agent.
fn after_idle(state: &mut State) {
    if state.disposed || state.running || !state.next_turn.is_empty() {
        return;
    }
    match state.goals.book.next(now_ms()) {
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
            state.event(InboxSpliced::insert(
                InboxTarget::NextTurn,
                0,
                std::slice::from_ref(&message),
            ));
            state.next_turn.push(message);
            // Running again; waiters of the idle just announced are
            // released all the same (see the module docs).
            state.running = true;
            state.log.status(SessionStatus::Running);
            state.header_reason.get_or_insert(HeaderReason::Series);
            state.begin_turn();
        }
    }
}

/// Pauses an armed goal when the session is disposed (after its last
/// turn ended).
pub(crate) fn pause_at_disposal(state: &mut State) {
    if let Some(change) = state.goals.book.pause_armed(now_ms()) {
        state.event(change);
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
        let mut goals = Goals::default();
        assert!(!goals.turn_begins(Some(&notice)));
        assert_eq!(goals.origin, Origin::Other);
        assert!(goals.turn_begins(Some(&round)));
    }
}
