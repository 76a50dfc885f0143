//! What a log says about the session's goal: its last `goal/change` and
//! how many continuation rounds it started (a round's start is only the
//! insert of its message, not a `goal/change`).

use dsh_protocol::catalog::{Event, GoalChange};
use dsh_protocol::message::UserMessage;
use serde_json::Value;

/// The session's current goal as its log last recorded it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GoalFacts {
    /// The last `goal/change`, if any.
    pub last: Option<GoalChange>,
    /// Rounds started for that goal: its count at the last change, or the
    /// highest round a later round message of the goal shows.
    pub rounds_started: u64,
}

impl GoalFacts {
    /// Adds the next event of a log (in seq order).
    pub fn push(&mut self, event: &Event) {
        match event {
            Event::GoalChange(change) => self.change(change.clone()),
            Event::InboxSpliced(spliced) => self.inserted(&spliced.inserted),
            _ => {}
        }
    }

    /// Records a `goal/change`.
    pub(crate) fn change(&mut self, change: GoalChange) {
        self.rounds_started = change.rounds_started;
        self.last = Some(change);
    }

    /// Counts the round messages of the current goal among messages
    /// inserted into an inbox (`source: {kind: "goal", goalId, round}`).
    pub(crate) fn inserted(&mut self, messages: &[UserMessage]) {
        let Some(last) = &self.last else {
            return;
        };
        for message in messages {
            let source = &message.source;
            if message.source_kind() == Some("goal")
                && source.get("goalId").and_then(Value::as_str) == Some(last.goal.id.as_str())
                && let Some(round) = source.get("round").and_then(Value::as_u64)
            {
                self.rounds_started = self.rounds_started.max(round);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn change(id: &str, rounds: u64) -> Event {
        let data = json!({"kind": "goal/change", "version": 1, "operation": "create",
            "goal": {"id": id, "revision": 1, "objective": "o", "phase": "active", "maxGoalRounds": 3},
            "roundsStarted": rounds, "createdAt": 1, "updatedAt": 1});
        Event::parse("goal/change", &data).unwrap()
    }

    fn round(id: &str, round: u64) -> Event {
        let data = json!({"target": "next-turn", "start": 0, "inserted": [{"content": [],
            "source": {"kind": "goal", "goalId": id, "revision": 1, "round": round},
            "role": "user", "id": "m"}]});
        Event::parse("agent/inbox/spliced", &data).unwrap()
    }

    #[test]
    fn rounds_count_from_the_current_goals_round_messages() {
        let mut facts = GoalFacts::default();
        facts.push(&round("goal-a", 7));
        assert_eq!(facts, GoalFacts::default());
        facts.push(&change("goal-a", 0));
        facts.push(&round("goal-a", 1));
        facts.push(&round("goal-a", 2));
        facts.push(&round("goal-other", 9));
        assert_eq!(facts.rounds_started, 2);
        facts.push(&change("goal-b", 0));
        assert_eq!(facts.rounds_started, 0);
        assert_eq!(facts.last.map(|c| c.goal.id), Some("goal-b".to_owned()));
    }
}
