//! The goal state machine: one current goal per session, its phase and
//! revision, whether continuation rounds are armed, and what each action
//! may do (the rules measured on the official runtime).

use super::error::GoalError;
use super::limits::{DEFAULT_MAX_ROUNDS, MAX_TEXT_BYTES};
use dsh_protocol::catalog::{
    BlockedCode, BlockedReason, GoalChange, GoalChangeKind, GoalOperation, GoalPhase, GoalSnapshot,
};
use dsh_session::store::GoalFacts;
use serde_json::{Value, json};

/// The largest integer a JSON number holds exactly (2^53 - 1), the
/// official bound of `max_goal_rounds`.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// One goal.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Goal {
    /// `goal-<uuid>`.
    pub id: String,
    /// 1 at creation, + 1 at every change.
    pub revision: u64,
    /// Trimmed, non-empty.
    pub objective: String,
    /// Where it stands.
    pub phase: GoalPhase,
    /// How many rounds may start.
    pub max_rounds: u64,
    /// Why a blocked goal is blocked.
    pub blocked: Option<BlockedReason>,
    /// Rounds started so far.
    pub rounds_started: u64,
    /// Creation time, epoch ms.
    pub created_at: u64,
    /// Time of the last change, epoch ms.
    pub updated_at: u64,
}

impl Goal {
    /// The `goal/change` event of `operation`, just applied.
    pub fn change(&self, operation: GoalOperation) -> GoalChange {
        GoalChange {
            kind: GoalChangeKind::Value,
            version: 1,
            operation,
            goal: GoalSnapshot {
                id: self.id.clone(),
                revision: self.revision,
                objective: self.objective.clone(),
                phase: self.phase,
                max_goal_rounds: self.max_rounds,
                blocked_reason: self.blocked.clone(),
            },
            rounds_started: self.rounds_started,
            created_at: self.created_at,
            updated_at: self.updated_at,
        }
    }

    /// The goal as the tools show it (`roundsStarted` before
    /// `maxGoalRounds`, unlike the event).
    fn view(&self) -> Value {
        let mut goal = json!({
            "id": self.id,
            "revision": self.revision,
            "objective": self.objective,
            "phase": self.phase.as_str(),
            "roundsStarted": self.rounds_started,
            "maxGoalRounds": self.max_rounds,
        });
        if let (Some(reason), Some(map)) = (&self.blocked, goal.as_object_mut()) {
            map.insert("blockedReason".into(), json!(reason));
        }
        goal
    }

    /// Bumps the revision and the change time.
    fn touch(&mut self, now: u64) {
        self.revision += 1;
        self.updated_at = now;
    }
}

/// An `update_goal` action with its fields.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Action {
    /// Change the objective and/or the round limit.
    Edit {
        /// The new objective.
        objective: Option<String>,
        /// The new round limit, as given.
        max_rounds: Option<f64>,
    },
    /// Stop the rounds until resumed.
    Pause,
    /// Let rounds run again.
    Resume,
    /// The goal is done.
    Complete,
    /// The goal cannot go on, for this (trimmed, non-empty) reason.
    Blocked(String),
}

/// The next continuation round of an armed goal.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Round {
    /// The goal.
    pub goal_id: String,
    /// Its revision.
    pub revision: u64,
    /// Its objective.
    pub objective: String,
    /// This round's number, from 1.
    pub round: u64,
    /// The goal's round limit.
    pub max_rounds: u64,
}

/// What an idle session does next for its goal.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Next {
    /// Start this round.
    Round(Round),
    /// The goal used up its rounds: it was blocked (`round-limit`).
    LimitReached(GoalChange),
}

/// A session's goals: the current one (in any phase) and whether its
/// rounds are armed. Only an active goal is ever armed; a goal restored
/// from a log (resume, fork) is not.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct GoalBook {
    goal: Option<Goal>,
    armed: bool,
}

impl GoalBook {
    /// The goal a stored log last recorded, disarmed.
    pub fn restored(facts: GoalFacts) -> Self {
        let goal = facts.last.map(|change| Goal {
            id: change.goal.id,
            revision: change.goal.revision,
            objective: change.goal.objective,
            phase: change.goal.phase,
            max_rounds: change.goal.max_goal_rounds,
            blocked: change.goal.blocked_reason,
            rounds_started: facts.rounds_started,
            created_at: change.created_at,
            updated_at: change.updated_at,
        });
        Self { goal, armed: false }
    }

    /// The current goal.
    pub fn current(&self) -> Option<&Goal> {
        self.goal.as_ref()
    }

    /// Whether rounds run for the current goal.
    pub fn is_armed(&self) -> bool {
        self.armed
            && self
                .goal
                .as_ref()
                .is_some_and(|g| g.phase == GoalPhase::Active)
    }

    /// The tools' answer: `{"goal": {...}, "activation": "armed" |
    /// "disarmed"}`, or `{"goal": null}`.
    pub fn view(&self) -> Value {
        match &self.goal {
            None => json!({"goal": null}),
            Some(goal) => json!({
                "goal": goal.view(),
                "activation": if self.is_armed() { "armed" } else { "disarmed" },
            }),
        }
    }

    /// `create_goal`: a new active, armed goal, unless a goal that is not
    /// complete exists.
    pub fn create(
        &mut self,
        id: String,
        objective: &str,
        max_rounds: Option<f64>,
        now: u64,
    ) -> Result<GoalChange, GoalError> {
        let objective = objective_of(objective)?;
        let max_rounds = max_rounds.map_or(Ok(DEFAULT_MAX_ROUNDS), rounds_of)?;
        if let Some(goal) = &self.goal
            && goal.phase != GoalPhase::Complete
        {
            return Err(GoalError::AlreadyExists {
                id: goal.id.clone(),
                phase: goal.phase,
            });
        }
        let goal = Goal {
            id,
            revision: 1,
            objective,
            phase: GoalPhase::Active,
            max_rounds,
            blocked: None,
            rounds_started: 0,
            created_at: now,
            updated_at: now,
        };
        let change = goal.change(GoalOperation::Create);
        self.goal = Some(goal);
        self.armed = true;
        Ok(change)
    }

    /// `update_goal`: `action` on the goal `id` at `revision`.
    pub fn update(
        &mut self,
        id: &str,
        revision: f64,
        action: Action,
        now: u64,
    ) -> Result<GoalChange, GoalError> {
        let armed = self.is_armed();
        let Some(goal) = self.goal.as_mut() else {
            return Err(GoalError::NotFound);
        };
        if goal.id != id || revision != goal.revision as f64 {
            return Err(GoalError::Stale {
                given_id: id.to_owned(),
                given_revision: revision,
                id: goal.id.clone(),
                revision: goal.revision,
            });
        }
        let phase = goal.phase;
        let transition = |verb: &'static str, expected: &'static str| GoalError::Transition {
            verb,
            id: id.to_owned(),
            phase,
            expected,
        };
        let (operation, armed) = match action {
            Action::Edit {
                objective,
                max_rounds,
            } => {
                if objective.is_none() && max_rounds.is_none() {
                    return Err(GoalError::EmptyEdit);
                }
                let objective = objective.as_deref().map(objective_of).transpose()?;
                let max_rounds = max_rounds.map(rounds_of).transpose()?;
                if let Some(objective) = objective {
                    goal.objective = objective;
                }
                if let Some(max_rounds) = max_rounds {
                    goal.max_rounds = max_rounds;
                }
                (GoalOperation::Edit, armed)
            }
            Action::Pause if phase == GoalPhase::Active => (GoalOperation::Pause, false),
            Action::Pause => return Err(transition("pause", "active")),
            Action::Resume => match phase {
                GoalPhase::Paused => return Err(GoalError::ResumePaused),
                GoalPhase::Active if armed => {
                    return Err(GoalError::AlreadyArmed { id: id.to_owned() });
                }
                GoalPhase::Active | GoalPhase::Blocked => (GoalOperation::Resume, true),
                GoalPhase::Complete => {
                    return Err(transition("resume", "active or paused or blocked"));
                }
            },
            Action::Complete if phase == GoalPhase::Complete => {
                return Err(transition("complete", "active or paused or blocked"));
            }
            Action::Complete => (GoalOperation::Complete, false),
            Action::Blocked(reason) if phase == GoalPhase::Active => {
                goal.blocked = Some(BlockedReason {
                    code: BlockedCode::ModelReported,
                    message: reason,
                });
                (GoalOperation::Block, false)
            }
            Action::Blocked(_) => return Err(transition("block", "active")),
        };
        goal.phase = match operation {
            GoalOperation::Pause => GoalPhase::Paused,
            GoalOperation::Resume => GoalPhase::Active,
            GoalOperation::Complete => GoalPhase::Complete,
            GoalOperation::Block => GoalPhase::Blocked,
            GoalOperation::Edit | GoalOperation::Create => phase,
        };
        if goal.phase != GoalPhase::Blocked {
            goal.blocked = None;
        }
        goal.touch(now);
        self.armed = armed;
        Ok(goal.change(operation))
    }

    /// Stops the rounds (a turn that did not complete); the goal stays as
    /// it is.
    pub fn disarm(&mut self) {
        self.armed = false;
    }

    /// Pauses an armed goal (the session is disposed): the `goal/change`,
    /// if there was one to pause.
    pub fn pause_armed(&mut self, now: u64) -> Option<GoalChange> {
        if !self.is_armed() {
            return None;
        }
        let goal = self.goal.as_mut()?;
        goal.phase = GoalPhase::Paused;
        goal.touch(now);
        self.armed = false;
        Some(goal.change(GoalOperation::Pause))
    }

    /// What an idle session does for its goal: nothing (no armed goal),
    /// the next round (counted as started), or blocking a goal whose
    /// rounds are used up.
    pub fn next(&mut self, now: u64) -> Option<Next> {
        if !self.is_armed() {
            return None;
        }
        let goal = self.goal.as_mut()?;
        if goal.rounds_started >= goal.max_rounds {
            goal.phase = GoalPhase::Blocked;
            goal.blocked = Some(BlockedReason {
                code: BlockedCode::RoundLimit,
                message: format!(
                    "Goal reached its configured limit of {} rounds.",
                    goal.max_rounds
                ),
            });
            goal.touch(now);
            self.armed = false;
            return Some(Next::LimitReached(goal.change(GoalOperation::Block)));
        }
        goal.rounds_started += 1;
        Some(Next::Round(Round {
            goal_id: goal.id.clone(),
            revision: goal.revision,
            objective: goal.objective.clone(),
            round: goal.rounds_started,
            max_rounds: goal.max_rounds,
        }))
    }
}

/// A trimmed, non-empty objective of at most [`MAX_TEXT_BYTES`].
fn objective_of(objective: &str) -> Result<String, GoalError> {
    let objective = objective.trim();
    if objective.is_empty() {
        return Err(GoalError::EmptyObjective);
    }
    if objective.len() > MAX_TEXT_BYTES {
        return Err(GoalError::ObjectiveTooLong);
    }
    Ok(objective.to_owned())
}

/// A round limit that is a positive safe integer.
fn rounds_of(value: f64) -> Result<u64, GoalError> {
    if value.fract() != 0.0 || !(1.0..=MAX_SAFE_INTEGER).contains(&value) {
        return Err(GoalError::InvalidMaxRounds);
    }
    // A whole number within 1..=2^53-1 converts exactly.
    Ok(value as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book(max_rounds: Option<f64>) -> (GoalBook, String) {
        let mut book = GoalBook::default();
        let change = book.create("goal-1".into(), "  Ship it  ", max_rounds, 10);
        assert!(change.is_ok(), "{change:?}");
        (book, "goal-1".into())
    }

    fn code(result: Result<GoalChange, GoalError>) -> String {
        match result {
            Ok(change) => format!("ok {:?}", change.operation),
            Err(err) => err.code().to_string(),
        }
    }

    #[test]
    fn create_trims_defaults_and_arms() {
        let (book, _) = book(None);
        let goal = book.current().cloned().unwrap();
        assert_eq!(
            (goal.objective.as_str(), goal.max_rounds, goal.revision),
            ("Ship it", DEFAULT_MAX_ROUNDS, 1)
        );
        assert!(book.is_armed());
        assert_eq!(
            serde_json::to_string(&book.view()).unwrap(),
            r#"{"goal":{"id":"goal-1","revision":1,"objective":"Ship it","phase":"active","roundsStarted":0,"maxGoalRounds":256},"activation":"armed"}"#
        );
        assert_eq!(
            serde_json::to_string(&GoalBook::default().view()).unwrap(),
            r#"{"goal":null}"#
        );
    }

    #[test]
    fn create_validates_before_refusing_a_second_goal() {
        let (mut book, id) = book(Some(3.0));
        let create = |book: &mut GoalBook, text: &str, max: Option<f64>| {
            code(book.create("goal-2".into(), text, max, 11))
        };
        assert_eq!(create(&mut book, "  ", None), "GOAL_INVALID_OBJECTIVE");
        assert_eq!(
            create(&mut book, &"x".repeat(MAX_TEXT_BYTES + 1), None),
            "GOAL_INVALID_OBJECTIVE"
        );
        for bad in [0.0, -1.0, 1.5, MAX_SAFE_INTEGER + 1.0, f64::INFINITY] {
            assert_eq!(
                create(&mut book, "x", Some(bad)),
                "GOAL_INVALID_MAX_ROUNDS",
                "{bad}"
            );
        }
        assert_eq!(
            create(&mut book, "x", Some(MAX_SAFE_INTEGER)),
            "GOAL_ALREADY_EXISTS"
        );
        assert_eq!(
            code(book.update(&id, 1.0, Action::Complete, 12)),
            "ok Complete"
        );
        assert_eq!(create(&mut book, "next", None), "ok Create");
        assert_eq!(
            book.current().map(|g| (g.id.as_str(), g.revision)),
            Some(("goal-2", 1))
        );
    }

    #[test]
    fn updates_check_the_ref_then_the_phase() {
        let (mut book, id) = book(Some(3.0));
        assert_eq!(
            code(book.update("goal-x", 1.0, Action::Pause, 11)),
            "GOAL_STALE_REVISION"
        );
        assert_eq!(
            code(book.update(&id, 2.0, Action::Pause, 11)),
            "GOAL_STALE_REVISION"
        );
        let err = book
            .update(&id, 1.5, Action::Pause, 11)
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(r#"Error: stale goal ref "goal-1" revision 1.5; current is "goal-1" revision 1"#)
        );
        assert_eq!(
            code(book.update(&id, 1.0, Action::Resume, 11)),
            "GOAL_INVALID_TRANSITION"
        );
        let edit = |objective: Option<&str>, max_rounds| Action::Edit {
            objective: objective.map(str::to_owned),
            max_rounds,
        };
        assert_eq!(
            code(book.update(&id, 1.0, edit(None, None), 11)),
            "GOAL_INVALID_EDIT"
        );
        assert_eq!(
            code(book.update(&id, 1.0, edit(Some(" "), None), 11)),
            "GOAL_INVALID_OBJECTIVE"
        );
        assert_eq!(
            code(book.update(&id, 1.0, edit(Some(" New "), Some(5.0)), 11)),
            "ok Edit"
        );
        let goal = book.current().cloned().unwrap();
        assert_eq!(
            (goal.objective.as_str(), goal.max_rounds, goal.revision),
            ("New", 5, 2)
        );
        assert!(book.is_armed());
        // Paused: the model may not resume it, nor block it.
        assert_eq!(code(book.update(&id, 2.0, Action::Pause, 12)), "ok Pause");
        assert!(!book.is_armed());
        assert_eq!(
            code(book.update(&id, 3.0, Action::Resume, 13)),
            "GOAL_TOOL_RESUME_PAUSED"
        );
        assert_eq!(
            code(book.update(&id, 3.0, Action::Blocked("r".into()), 13)),
            "GOAL_INVALID_TRANSITION"
        );
        assert_eq!(
            code(book.update(&id, 3.0, Action::Pause, 13)),
            "GOAL_INVALID_TRANSITION"
        );
        // Complete from paused; then only edits apply.
        assert_eq!(
            code(book.update(&id, 3.0, Action::Complete, 14)),
            "ok Complete"
        );
        for action in [
            Action::Complete,
            Action::Resume,
            Action::Pause,
            Action::Blocked("r".into()),
        ] {
            assert_eq!(
                code(book.update(&id, 4.0, action, 15)),
                "GOAL_INVALID_TRANSITION"
            );
        }
        assert_eq!(
            code(book.update(&id, 4.0, edit(Some("Z"), None), 15)),
            "ok Edit"
        );
        let goal = book.current().cloned().unwrap();
        assert_eq!(
            (goal.phase, goal.revision, goal.updated_at, goal.created_at),
            (GoalPhase::Complete, 5, 15, 10)
        );
        assert!(!book.is_armed());
    }

    #[test]
    fn blocked_goals_resume_and_complete_without_their_reason() {
        let (mut book, id) = book(Some(3.0));
        assert_eq!(
            code(book.update(&id, 1.0, Action::Blocked("need keys".into()), 11)),
            "ok Block"
        );
        assert!(!book.is_armed());
        let view = book.view();
        assert_eq!(
            view["goal"]["blockedReason"],
            json!({"code": "model-reported", "message": "need keys"})
        );
        assert_eq!(view["activation"], "disarmed");
        assert_eq!(code(book.update(&id, 2.0, Action::Resume, 12)), "ok Resume");
        assert!(book.is_armed());
        assert!(book.current().is_some_and(|g| g.blocked.is_none()));
        assert_eq!(
            code(book.update(&id, 3.0, Action::Blocked("again".into()), 13)),
            "ok Block"
        );
        assert_eq!(
            code(book.update(&id, 4.0, Action::Complete, 14)),
            "ok Complete"
        );
        assert!(
            book.current()
                .is_some_and(|g| g.blocked.is_none() && g.phase == GoalPhase::Complete)
        );
    }

    #[test]
    fn rounds_run_to_the_limit_then_block() {
        let (mut book, id) = book(Some(2.0));
        let rounds: Vec<u64> = (0..2)
            .filter_map(|_| match book.next(20) {
                Some(Next::Round(round)) => Some(round.round),
                _ => None,
            })
            .collect();
        assert_eq!(rounds, [1, 2]);
        let Some(Next::LimitReached(change)) = book.next(30) else {
            panic!("the limit blocks the goal");
        };
        assert_eq!(change.operation, GoalOperation::Block);
        assert_eq!(
            (
                change.goal.revision,
                change.rounds_started,
                change.updated_at
            ),
            (2, 2, 30)
        );
        assert_eq!(
            serde_json::to_value(&change.goal.blocked_reason).unwrap(),
            json!({"code": "round-limit", "message": "Goal reached its configured limit of 2 rounds."})
        );
        assert_eq!(book.next(31), None);
        // A blocked goal resumed past its limit is blocked again at once.
        assert_eq!(code(book.update(&id, 2.0, Action::Resume, 32)), "ok Resume");
        assert!(matches!(book.next(33), Some(Next::LimitReached(_))));
    }

    #[test]
    fn a_disarmed_goal_starts_no_round_until_resumed() {
        let (mut book, id) = book(Some(5.0));
        assert!(matches!(book.next(11), Some(Next::Round(_))));
        book.disarm();
        assert_eq!(book.next(12), None);
        assert_eq!(book.view()["activation"], "disarmed");
        assert_eq!(book.pause_armed(12), None);
        assert_eq!(code(book.update(&id, 1.0, Action::Resume, 13)), "ok Resume");
        let Some(Next::Round(round)) = book.next(14) else {
            panic!("resumed");
        };
        assert_eq!((round.round, round.revision), (2, 2));
        let paused = book
            .pause_armed(15)
            .map(|c| (c.operation, c.goal.phase, c.goal.revision));
        assert_eq!(paused, Some((GoalOperation::Pause, GoalPhase::Paused, 3)));
    }

    #[test]
    fn a_restored_goal_is_disarmed_and_keeps_its_rounds() {
        let (mut book, _) = book(Some(5.0));
        let change = book.current().map(|g| g.change(GoalOperation::Create));
        let restored = GoalBook::restored(GoalFacts {
            last: change,
            rounds_started: 2,
        });
        assert!(!restored.is_armed());
        assert_eq!(restored.view()["goal"]["roundsStarted"], 2);
        assert_eq!(restored.view()["goal"]["phase"], "active");
        assert!(book.next(1).is_some());
    }
}
