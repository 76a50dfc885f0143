//! The repeated-call reminder: when the model makes the same tool call
//! (same tool, same arguments as JSON) several times in a row within a
//! turn, a `repeat-tool-reminder` notice joins the next step, as the
//! official runtime's shipped configuration does: at the 3rd consecutive
//! identical call a short reminder, at the 5th and the 8th a firmer one
//! naming the tool, the count and the arguments (previewed up to 500
//! characters). A different call, or a new turn, starts the count again.
//! The texts are our own words.

use crate::core::{AgentState, Feature};
use dsh_protocol::catalog::InboxTarget;
use dsh_session::{UserMessage, text_block};
use serde_json::Value;

/// Source kind of the reminder.
const REPEAT_TOOL_REMINDER: &str = "repeat-tool-reminder";

/// The consecutive identical calls at which a reminder is sent; the first
/// gets the short text.
const THRESHOLDS: [u32; 3] = [3, 5, 8];

/// Characters of the arguments' JSON a firm reminder shows.
const PREVIEW_CHARS: usize = 500;

/// The feature.
pub(crate) struct RepeatGuard;

/// The run of identical calls in the running turn.
#[derive(Default)]
struct Run {
    /// The call repeated: its tool and its arguments (parsed, so spacing
    /// does not make two calls differ).
    call: Option<(String, Value)>,
    /// How many times in a row.
    count: u32,
}

impl Run {
    /// Counts one call; returns its count in the run.
    fn push(&mut self, name: &str, arguments: Value) -> u32 {
        let same = self
            .call
            .as_ref()
            .is_some_and(|(n, a)| n == name && *a == arguments);
        if same {
            self.count += 1;
        } else {
            self.call = Some((name.to_owned(), arguments));
            self.count = 1;
        }
        self.count
    }
}

impl Feature for RepeatGuard {
    fn turn_started(&self, state: &mut AgentState, _prompt: Option<&UserMessage>) {
        *state.extension::<Run>() = Run::default();
    }

    fn tool_finished(&self, state: &mut AgentState, name: &str, arguments: &str) {
        // Arguments that are not JSON compare as their text.
        let parsed = serde_json::from_str::<Value>(crate::tool_args::or_empty_object(arguments))
            .unwrap_or_else(|_| Value::String(arguments.to_owned()));
        let preview = serde_json::to_string(&parsed).unwrap_or_default();
        let count = state.extension::<Run>().push(name, parsed);
        if let Some(text) = reminder(name, count, &preview) {
            let summary = format!("{name} \u{d7} {count}");
            let notice = UserMessage::inbox_notice(
                REPEAT_TOOL_REMINDER,
                vec![text_block(text)],
                &summary,
                None,
            );
            state.enqueue(InboxTarget::NextStep, notice);
        }
    }
}

/// The reminder after the `count`th identical call of `name` whose
/// arguments' JSON is `arguments`, if that count is a threshold.
fn reminder(name: &str, count: u32, arguments: &str) -> Option<String> {
    if count == THRESHOLDS[0] {
        return Some(
            "You have made this exact tool call, with the same arguments, several times in a row. \
             Read its last result closely before going on: if the task is not done yet, change \
             your approach or your arguments rather than calling it again."
                .to_owned(),
        );
    }
    if !THRESHOLDS[1..].contains(&count) {
        return None;
    }
    Some(format!(
        "The same tool call keeps repeating without progress:\n- tool: {name}\n- identical calls in a row: {count}\n- arguments: {}\nDo not make this call with these arguments again. Work from its latest result: take another step, use other arguments, or finish if you already know enough.",
        preview(arguments)
    ))
}

/// `text` cut after [`PREVIEW_CHARS`] characters, saying how many more
/// there were.
fn preview(text: &str) -> String {
    match text.char_indices().nth(PREVIEW_CHARS) {
        None => text.to_owned(),
        Some((cut, _)) => {
            let more = text[cut..].chars().count();
            format!("{}\u{2026} (+{more} more chars)", &text[..cut])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_run_counts_identical_calls_and_restarts_on_another() {
        let mut run = Run::default();
        let a = || json!({"file_path": "a.txt"});
        assert_eq!(run.push("read", a()), 1);
        assert_eq!(run.push("read", a()), 2);
        assert_eq!(run.push("read", json!({"file_path": "b.txt"})), 1);
        assert_eq!(run.push("read", a()), 1);
        assert_eq!(run.push("read", a()), 2);
        assert_eq!(run.push("glob", a()), 1);
    }

    #[test]
    fn reminders_come_at_three_five_and_eight() {
        let sent: Vec<u32> = (1..=10)
            .filter(|&n| reminder("read", n, "{}").is_some())
            .collect();
        assert_eq!(sent, [3, 5, 8]);
        let firm = reminder("read", 5, r#"{"file_path":"a.txt"}"#).unwrap_or_default();
        assert!(firm.contains("- tool: read\n"), "{firm}");
        assert!(firm.contains(": 5\n"), "{firm}");
        assert!(
            firm.contains(r#"- arguments: {"file_path":"a.txt"}"#),
            "{firm}"
        );
    }

    #[test]
    fn long_arguments_are_previewed_by_characters() {
        let text = format!("{}{}", "é".repeat(300), "z".repeat(300));
        let shown = preview(&text);
        assert!(shown.starts_with(&"é".repeat(300)));
        assert!(shown.ends_with("z\u{2026} (+100 more chars)"), "{shown}");
        assert_eq!(preview("short"), "short");
    }
}
