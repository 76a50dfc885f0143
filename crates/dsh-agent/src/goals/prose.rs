//! The model-facing prose of goals: tool descriptions and
//! the wrappers of round and closing messages. The wrappers' structure
//! (tag, `Objective:` / `Round:` / `Blocked:` lines) is the official one;
//! every sentence is this project's own.

use super::model::Round;
use serde_json::Value;

/// `create_goal`.
pub(crate) const CREATE_GOAL: &str = "Set a goal for this session: an objective the harness keeps working toward on its own. After each of your turns that ends normally, the harness starts another round with a reminder of the objective, until the goal is marked complete or blocked, is paused, or reaches its round limit. Only one goal can be open at a time; use it when the user asks for sustained work toward a clear, checkable result.";
/// `create_goal.objective`.
pub(crate) const CREATE_OBJECTIVE: &str = "What counts as done, stated so that it can be checked (for example \"all tests in tests/ pass\").";
/// `max_goal_rounds` of `create_goal` and `update_goal`.
pub(crate) const MAX_ROUNDS: &str = "How many automatic rounds may start before the goal is blocked (a positive whole number; 256 when omitted).";
/// `get_goal`.
pub(crate) const GET_GOAL: &str = "Show the session's current goal: its id, revision, objective, phase, rounds started and round limit, and whether automatic rounds are armed. Read it before you update the goal.";
/// `update_goal`.
pub(crate) const UPDATE_GOAL: &str = "Change the current goal. Name it by the id and revision get_goal shows (a stale revision is refused). Actions: edit (new objective and/or max_goal_rounds), pause, resume, complete (only once the whole objective is verified), blocked (with blocked_reason, when you cannot go on without the user). During an automatic round you may only mark the goal complete or, from the third round on, blocked.";
/// `update_goal.goal_id`.
pub(crate) const GOAL_ID: &str = "The goal's id, as get_goal shows it.";
/// `update_goal.revision`.
pub(crate) const REVISION: &str = "The goal's current revision, as get_goal shows it.";
/// `update_goal.action`.
pub(crate) const ACTION: &str = "What to do with the goal.";
/// `update_goal.objective`.
pub(crate) const EDIT_OBJECTIVE: &str = "With edit: the new objective.";
/// `update_goal.blocked_reason`.
pub(crate) const BLOCKED_REASON: &str =
    "With blocked: what stops the work and what the user must provide or decide.";

/// A text as a JSON string literal (how the wrappers quote it).
fn quoted(text: &str) -> String {
    Value::from(text).to_string()
}

/// The user message that starts a continuation round.
pub(crate) fn round_text(round: &Round) -> String {
    format!(
        "<goal_round>\nObjective: {}\nRound: {}/{}\n\n\
         This is an automatic round toward the session's goal. Pick up where the work stands: check the workspace and the latest tool results rather than trusting earlier summaries, then take the next concrete step and verify it. When the whole objective is done and you have checked it, read the goal and mark it complete. If something remains, leave the goal active; another round follows. Report the goal blocked only as the goal tools allow, when you truly cannot continue without the user.\n\
         </goal_round>",
        quoted(&round.objective),
        round.round,
        round.max_rounds
    )
}

/// The closing notice after a round marked the goal complete.
pub(crate) fn complete_text(objective: &str) -> String {
    format!(
        "<goal_complete>\nObjective: {}\n\
         The goal is now complete and the automatic rounds stop here. Close the run with a message to the user: what was achieved, how it was checked, and where the results are (files, commits, outputs). Say only what this session's rounds and tool results show, and say so when something is not known. Mention anything the user should review or do next. Do not call further tools; more work waits for the user.\n\
         </goal_complete>",
        quoted(objective)
    )
}

/// The closing notice after a round reported the goal blocked.
pub(crate) fn blocked_text(objective: &str, reason: &str) -> String {
    format!(
        "<goal_blocked>\nObjective: {}\nBlocked: {}\n\
         The goal is now blocked and the automatic rounds stop here. Close the run with a message to the user: what is done so far, what exactly blocks the rest and what you tried, and precisely what you need from the user to go on. Say only what this session's rounds and tool results show, and say so when something is not known. Do not call further tools; more work waits for the user.\n\
         </goal_blocked>",
        quoted(objective),
        quoted(reason)
    )
}

/// Longest closing-notice summary, in characters.
const SUMMARY_CHARS: usize = 120;

/// `<action>: <objective>`, cut to [`SUMMARY_CHARS`] with an ellipsis.
pub(crate) fn summary(action: &str, objective: &str) -> String {
    let text = format!("{action}: {objective}");
    if text.chars().count() <= SUMMARY_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(SUMMARY_CHARS - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappers_keep_the_official_structure() {
        let round = Round {
            goal_id: "goal-1".into(),
            revision: 1,
            objective: "Obj \"q\"\nline2".into(),
            round: 2,
            max_rounds: 3,
        };
        let text = round_text(&round);
        assert!(
            text.starts_with("<goal_round>\nObjective: \"Obj \\\"q\\\"\\nline2\"\nRound: 2/3\n\n")
        );
        assert!(text.ends_with("\n</goal_round>"));
        let text = blocked_text("o", "why");
        assert!(text.starts_with("<goal_blocked>\nObjective: \"o\"\nBlocked: \"why\"\n"));
        assert!(complete_text("o").starts_with("<goal_complete>\nObjective: \"o\"\n"));
    }

    #[test]
    fn summaries_are_cut_at_120_characters() {
        assert_eq!(summary("complete", "Obj"), "complete: Obj");
        let long = summary("blocked", &"abcdefghij".repeat(30));
        assert_eq!(long.chars().count(), 120);
        assert!(long.starts_with("blocked: abcdefghij") && long.ends_with("hij…"));
    }
}
