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
use sha1::{Digest, Sha1};

/// Source kind of the reminder.
const REPEAT_TOOL_REMINDER: &str = "repeat-tool-reminder";

/// The consecutive identical calls at which a reminder is sent; the first
/// gets the short text.
const THRESHOLDS: [u32; 3] = [3, 5, 8];

/// Characters of the arguments' JSON a firm reminder shows.
const PREVIEW_CHARS: usize = 500;

/// Arguments up to this many bytes are compared as JSON (spacing does not
/// count); longer ones by a digest of their text, so a huge call is not
/// parsed and held again for every step.
const PARSED_COMPARE_MAX: usize = 64 * 1024;

/// The feature.
pub(crate) struct RepeatGuard;

/// What makes two calls of one tool the same.
#[derive(PartialEq)]
enum Arguments {
    /// Short arguments, parsed (text that is not JSON as a string).
    Parsed(Value),
    /// Long arguments: the SHA-1 of their text.
    Digest([u8; 20]),
}

impl Arguments {
    /// The comparable form of `text`.
    fn of(text: &str) -> Self {
        if text.len() > PARSED_COMPARE_MAX {
            return Self::Digest(Sha1::digest(text.as_bytes()).into());
        }
        Self::Parsed(parsed(text))
    }
}

/// `text` as JSON (`{}` when empty), or as a JSON string when it is not
/// JSON.
fn parsed(text: &str) -> Value {
    serde_json::from_str::<Value>(crate::tool_args::or_empty_object(text))
        .unwrap_or_else(|_| Value::String(text.to_owned()))
}

/// The run of identical calls in the running turn.
#[derive(Default)]
struct Run {
    /// The call repeated: its tool and its arguments.
    call: Option<(String, Arguments)>,
    /// How many times in a row.
    count: u32,
}

impl Run {
    /// Counts one call; returns its count in the run.
    fn push(&mut self, name: &str, arguments: Arguments) -> u32 {
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
        let count = state
            .extension::<Run>()
            .push(name, Arguments::of(arguments));
        // The arguments' compact JSON is made only for a reminder that
        // shows it.
        let shown = || serde_json::to_string(&parsed(arguments)).unwrap_or_default();
        if let Some(text) = reminder(name, count, shown) {
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
/// arguments' JSON `arguments` gives, if that count is a threshold.
fn reminder(name: &str, count: u32, arguments: impl FnOnce() -> String) -> Option<String> {
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
        preview(&arguments())
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

    #[test]
    fn a_run_counts_identical_calls_and_restarts_on_another() {
        let mut run = Run::default();
        let a = || Arguments::of(r#"{"file_path": "a.txt"}"#);
        assert_eq!(run.push("read", a()), 1);
        assert_eq!(
            run.push("read", Arguments::of(r#"{ "file_path":"a.txt" }"#)),
            2
        );
        assert_eq!(
            run.push("read", Arguments::of(r#"{"file_path": "b.txt"}"#)),
            1
        );
        assert_eq!(run.push("read", a()), 1);
        assert_eq!(run.push("read", a()), 2);
        assert_eq!(run.push("glob", a()), 1);
        assert_eq!(run.push("glob", Arguments::of("")), 1);
        assert_eq!(run.push("glob", Arguments::of("{}")), 2);
        // Long arguments compare by their text.
        let long = format!(r#"{{"content": "{}"}}"#, "x".repeat(PARSED_COMPARE_MAX));
        assert!(matches!(Arguments::of(&long), Arguments::Digest(_)));
        assert_eq!(run.push("write", Arguments::of(&long)), 1);
        assert_eq!(run.push("write", Arguments::of(&long)), 2);
        assert_eq!(
            run.push("write", Arguments::of(&long.replace(": ", ":"))),
            1
        );
    }

    #[test]
    fn reminders_come_at_three_five_and_eight() {
        let sent: Vec<u32> = (1..=10)
            .filter(|&n| reminder("read", n, String::new).is_some())
            .collect();
        assert_eq!(sent, [3, 5, 8]);
        let firm =
            reminder("read", 5, || r#"{"file_path":"a.txt"}"#.to_owned()).unwrap_or_default();
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
