//! Turning a JavaScript exception into the text of a [`crate::RunError`]:
//! `Name: message` and the stack frames that point into the script, with
//! the script's own line numbers.

use rquickjs::{Ctx, Value, convert::Coerced};

/// The most stack frames kept in a message.
const MAX_FRAMES: usize = 10;

/// Where the script sits in the compiled wrapper, to map positions back.
#[derive(Debug, Clone)]
pub(crate) struct ScriptFile {
    /// The file name given to QuickJS: `workflow:<name>`.
    pub(crate) file: String,
    /// How many lines the script has.
    pub(crate) lines: usize,
    /// The length in characters of the script's last line.
    pub(crate) last_line_len: usize,
}

/// The number of wrapper lines before the script's first line.
pub(crate) const HEADER_LINES: usize = 1;

impl ScriptFile {
    /// Describes the script `source` named `name`.
    pub(crate) fn new(name: &str, source: &str) -> Self {
        let lines: Vec<&str> = source.split('\n').collect();
        Self {
            file: format!("workflow:{name}"),
            lines: lines.len(),
            last_line_len: lines.last().map_or(0, |line| line.chars().count()),
        }
    }

    /// The script position of a wrapper position, if it lies in the script.
    fn script_position(&self, line: usize, col: usize) -> Option<(usize, usize)> {
        let line = line.checked_sub(HEADER_LINES)?;
        (1..=self.lines).contains(&line).then_some((line, col))
    }

    /// The frames of `stack` that point into the script, rewritten as
    /// `\n    at workflow:<name>:<line>:<col>`.
    pub(crate) fn script_frames(&self, stack: &str) -> String {
        stack
            .lines()
            .filter_map(|frame| self.frame_position(frame))
            .filter_map(|(line, col)| self.script_position(line, col))
            .take(MAX_FRAMES)
            .map(|(line, col)| format!("\n    at {}:{line}:{col}", self.file))
            .collect()
    }

    /// The wrapper line and column of one stack line, if it is in our file.
    fn frame_position(&self, frame: &str) -> Option<(usize, usize)> {
        // "at f (file:1:2)" or "at file:1:2"; the name may contain ':' or
        // parentheses, so the file is looked for as a whole.
        let frame = frame.trim().strip_prefix("at ")?;
        let frame = frame.strip_suffix(')').unwrap_or(frame);
        let prefix = format!("{}:", self.file);
        let at = frame.rfind(&prefix)?;
        if at != 0 && !frame[..at].ends_with('(') {
            return None;
        }
        let (line, col) = frame[at + prefix.len()..].split_once(':')?;
        Some((line.parse().ok()?, col.parse().ok()?))
    }

    /// The text of a syntax error: `SyntaxError: <message>` and its
    /// position in the script (an error past the end, such as a missing
    /// brace, points at the script's end).
    pub(crate) fn syntax_error<'js>(&self, ctx: &Ctx<'js>, error: &Value<'js>) -> String {
        let head = error_head(ctx, error);
        let Some(stack) = stack_of(error) else {
            return head;
        };
        let position = stack.lines().find_map(|frame| self.frame_position(frame));
        match position {
            Some((line, col)) => {
                let (line, col) = self
                    .script_position(line, col)
                    .unwrap_or((self.lines, self.last_line_len + 1));
                format!("{head}\n    at {}:{line}:{col}", self.file)
            }
            None => head,
        }
    }

    /// The text of a thrown value: `Name: message` and the script frames
    /// for an Error, else the value as a string (JSON for objects).
    pub(crate) fn thrown<'js>(&self, ctx: &Ctx<'js>, thrown: &Value<'js>) -> String {
        if thrown.is_error() {
            let frames = stack_of(thrown)
                .map(|stack| self.script_frames(&stack))
                .unwrap_or_default();
            return format!("{}{frames}", error_head(ctx, thrown));
        }
        plain_text(ctx, thrown)
    }
}

/// Whether `thrown` is QuickJS's out-of-memory error.
pub(crate) fn is_out_of_memory(thrown: &Value<'_>) -> bool {
    thrown.is_error()
        && thrown.as_object().is_some_and(|error| {
            error
                .get::<_, Option<String>>("message")
                .ok()
                .flatten()
                .is_some_and(|message| message == "out of memory")
        })
}

/// `Name: message` of an Error (just the name when the message is empty).
fn error_head<'js>(ctx: &Ctx<'js>, error: &Value<'js>) -> String {
    let Some(object) = error.as_object() else {
        return plain_text(ctx, error);
    };
    let name = object
        .get::<_, Coerced<String>>("name")
        .map(|name| name.0)
        .unwrap_or_else(|_| "Error".to_owned());
    let message = object
        .get::<_, Value>("message")
        .ok()
        .filter(|message| !message.is_undefined())
        .and_then(|message| message.get::<Coerced<String>>().ok())
        .map(|message| message.0)
        .unwrap_or_default();
    match (name.is_empty(), message.is_empty()) {
        (_, true) => name,
        (true, false) => message,
        (false, false) => format!("{name}: {message}"),
    }
}

/// The `stack` property of an Error, if it is a string.
fn stack_of(error: &Value<'_>) -> Option<String> {
    error
        .as_object()?
        .get::<_, Option<String>>("stack")
        .ok()
        .flatten()
}

/// A thrown value that is not an Error: strings as they are, objects as
/// JSON when they can be, anything else through `String()`.
fn plain_text<'js>(ctx: &Ctx<'js>, value: &Value<'js>) -> String {
    if let Some(text) = value.as_string().and_then(|text| text.to_string().ok()) {
        return text;
    }
    if value.is_object() && !value.is_function() {
        if let Ok(Some(json)) = ctx.json_stringify(value.clone()) {
            if let Ok(json) = json.to_string() {
                return json;
            }
        }
    }
    value
        .get::<Coerced<String>>()
        .map(|text| text.0)
        .unwrap_or_else(|_| format!("a thrown {} that cannot be shown", value.type_name()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_rewritten_and_filtered() {
        let file = ScriptFile::new("wf", "a\nb\nc");
        let stack = "    at f (workflow:wf:4:7)\n    at workflow:wf:2:3\n    at g (dsh-workflow:prelude:10:1)\n    at <anonymous> (workflow:wf:1:20)\n    at workflow:wf:5:1\n    at workflow:wfx:2:1\n";
        assert_eq!(
            file.script_frames(stack),
            "\n    at workflow:wf:3:7\n    at workflow:wf:1:3"
        );
    }

    #[test]
    fn names_with_colons_and_parentheses() {
        let file = ScriptFile::new("a:b (c)", "x");
        assert_eq!(
            file.script_frames("    at f (workflow:a:b (c):2:5)"),
            "\n    at workflow:a:b (c):1:5"
        );
    }
}
