//! Model-facing prose. All of it is this project's own writing.

use std::path::Path;

/// sdk-minimal's default system prompt.
pub const MINIMAL_SYSTEM_PROMPT: &str = "You are a helpful coding agent. Use the tools you are given to inspect and change the user's workspace, and answer concisely.";

/// The sdk profile's system prompt.
pub fn sdk_system_prompt(model: &str) -> String {
    format!(
        "You are DeepSeek Harness, a software engineering agent that works inside the user's workspace through tools.\n\
         You are running on the model \"{model}\".\n\
         \n\
         Work in small, verifiable steps. Read before you change anything, prefer precise edits over rewrites, and check the result of what you did before you report it.\n\
         \n\
         Shell commands report their exit status on a final line such as \"[exit code: 1]\" when it is not zero, and their error output after a \"[stderr]\" line. A command that runs too long continues as a background job that you can inspect, wait for or stop.\n\
         \n\
         File tools take paths relative to the current working directory or absolute paths. The runtime context message tells you the current directory, what you may write and how approvals work; respect those limits and explain when a task needs more.\n\
         \n\
         When you are done, answer with a short summary of what you did and anything the user should check."
    )
}

/// Heading of the runtime-context message.
const CONTEXT_HEADING: &str = "Runtime context (maintained by the harness):";

/// One named section of the runtime-context message.
pub struct Section {
    /// Stable section name.
    pub name: &'static str,
    /// Section text.
    pub text: String,
}

/// `working-directory:current`.
pub fn working_directory_section(cwd: &Path) -> Section {
    Section {
        name: "working-directory:current",
        text: format!("Current working directory: {}", cwd.display()),
    }
}

/// `sandbox:policy`.
pub fn sandbox_section(mode: &str, root: &Path) -> Section {
    let what = match mode {
        "read-only" => "you may read files but not create, change or delete any",
        "workspace-write" => "you may change files inside the workspace root only",
        _ => "file access is not restricted",
    };
    Section {
        name: "sandbox:policy",
        text: format!(
            "File access mode: {mode}; {what}. Workspace root: {}",
            root.display()
        ),
    }
}

/// `approval:policy`.
pub fn approval_section(policy: &str) -> Section {
    let what = if policy == "ask" {
        "actions that need wider permissions are declined automatically, because no one is available to approve them"
    } else {
        "no approvals are requested"
    };
    Section {
        name: "approval:policy",
        text: format!("Approval policy: {policy}; {what}."),
    }
}

/// The full text of a runtime-context message.
pub fn context_text(sections: &[Section]) -> String {
    let mut text = CONTEXT_HEADING.to_owned();
    for section in sections {
        text.push_str("\n\n");
        text.push_str(&section.text);
    }
    text
}

/// The notice queued when the working directory changes.
pub fn working_directory_notice(from: &Path, to: &Path) -> String {
    format!(
        "The working directory was changed from \"{}\" to \"{}\". Resolve relative paths against the new directory.",
        from.display(),
        to.display()
    )
}

/// Description of the `working_directory` tool.
pub const WORKING_DIRECTORY_TOOL: &str = "Show or change the session's working directory. Without arguments it reports the current directory; with `cd` it moves there (relative paths resolve against the current directory). Later relative paths in every tool use the new directory.";

/// Description of `working_directory.cd`.
pub const WORKING_DIRECTORY_CD: &str =
    "Directory to change to, absolute or relative to the current working directory.";

/// The result text of the `working_directory` tool.
pub fn current_directory(dir: &Path) -> String {
    format!("Current working directory: {}", dir.display())
}

/// Longest fallback session title, in UTF-8 bytes.
const TITLE_MAX_BYTES: usize = 40;

/// The fallback session title, as the official runtime forms it: control
/// characters other than tab, line feed and carriage return and the
/// invisible format characters (zero-width space, direction marks and
/// overrides, word joiners, the byte-order mark) are dropped, the first
/// five whitespace-separated words are joined by single spaces, and the
/// result is cut at 40 UTF-8 bytes (never inside a character) with
/// trailing spaces removed. A lone surrogate (a marker, see
/// `dsh_protocol::surrogates`) counts 3 bytes and is kept whole when it
/// fits, as the official runtime keeps it.
pub fn fallback_title(text: &str) -> String {
    let visible: String = text.chars().filter(|&c| !is_dropped_in_title(c)).collect();
    let joined = visible
        .split_whitespace()
        .take(5)
        .collect::<Vec<_>>()
        .join(" ");
    // Lone surrogates are carried as markers (dsh_protocol::surrogates):
    // each counts as the official runtime counts it and is kept or cut whole.
    let mut end = 0;
    let mut bytes = 0;
    for (unit, cost) in dsh_protocol::surrogates::units(&joined) {
        bytes += cost;
        if bytes > TITLE_MAX_BYTES {
            break;
        }
        end += unit.len();
    }
    joined[..end].trim_end().to_owned()
}

/// Characters the official fallback title leaves out (measured one by one).
fn is_dropped_in_title(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{8}'
        | '\u{b}'
        | '\u{c}'
        | '\u{e}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{200b}'
        | '\u{200e}'
        | '\u{200f}'
        | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}'
        | '\u{feff}')
}

/// The result recorded for a tool call cut short by disposal: `started`
/// when the call had begun (its outcome is unknown), else never started.
pub fn disposed_tool_result(started: bool) -> dsh_tools::ToolOutput {
    let (text, code) = if started {
        (
            "Error: the runtime shut down while this tool call was running; its outcome is unknown, so check its effects before retrying.",
            dsh_tools::ToolErrorCode::ToolOutcomeUnknown,
        )
    } else {
        (
            "Error: the runtime shut down before this tool call started; it had no effect and is safe to retry.",
            dsh_tools::ToolErrorCode::ToolNotStarted,
        )
    };
    dsh_tools::ToolOutput::failure(text).with_error(code)
}

/// The result recorded for a tool call skipped because the turn was
/// interrupted before it started.
pub fn interrupted_tool_result() -> dsh_tools::ToolOutput {
    dsh_tools::ToolOutput::failure(
        "Error: the turn was interrupted before this tool call started; it had no effect.",
    )
    .with_error(dsh_tools::ToolErrorCode::ToolNotStarted)
}

/// The result of a tool call that did not run because a hook stopped the
/// agent (`continue: false`) with `reason`.
pub fn stopped_by_hook_result(reason: &str) -> dsh_tools::ToolOutput {
    dsh_tools::ToolOutput::failure(format!(
        "Error: the tool was not run: a hook stopped the agent: {reason}"
    ))
    .with_error(dsh_tools::ToolErrorCode::ToolNotStarted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fallback_title_keeps_five_words() {
        assert_eq!(fallback_title("Say hi"), "Say hi");
        assert_eq!(
            fallback_title("  one two\tthree four five six "),
            "one two three four five"
        );
        assert_eq!(
            fallback_title("line one\nline two\nline three"),
            "line one line two line"
        );
        assert_eq!(fallback_title("a\u{a0}b\u{3000}c\u{2028}d"), "a b c d");
        assert_eq!(fallback_title(""), "");
    }

    // Expected values measured on the official runtime.
    #[test]
    fn fallback_title_is_cut_at_forty_bytes_on_a_character_boundary() {
        let long = "abcdefghijklmnopqrstuvwxyz".repeat(2);
        assert_eq!(fallback_title(&long), &long[..40]);
        assert_eq!(fallback_title(&"😀".repeat(16)), "😀".repeat(10));
        assert_eq!(
            fallback_title("中文标题测试中文标题测试中文标题测试中文标题测试"),
            "中文标题测试中文标题测试中"
        );
        assert_eq!(
            fallback_title("1234567890123456789012345678901234567 😀x"),
            "1234567890123456789012345678901234567"
        );
        assert_eq!(
            fallback_title("123456789012345678901234567890123456789 abc"),
            "123456789012345678901234567890123456789"
        );
        let accents = "e\u{301}".repeat(14);
        assert_eq!(
            fallback_title(&accents),
            format!("{}e", "e\u{301}".repeat(13))
        );
    }

    /// `json` (a JSON string literal) as the runtime carries it.
    fn carried(json: &str) -> String {
        let encoded = dsh_protocol::surrogates::encode(json);
        serde_json::from_str(&encoded).unwrap_or_else(|err| panic!("{json}: {err}"))
    }

    /// `text` as the runtime writes it in JSON.
    fn written(text: &str) -> String {
        let json = serde_json::to_vec(text).unwrap_or_default();
        String::from_utf8(dsh_protocol::surrogates::decode(json)).unwrap_or_default()
    }

    // Expected values measured on the official runtime: a lone surrogate
    // counts 3 bytes and is kept whole (never replaced by U+FFFD).
    #[test]
    fn fallback_title_keeps_a_lone_surrogate_that_fits() {
        let fits = carried(r#""123456789012345678901234567890123456 \ud83dx""#);
        assert_eq!(
            written(&fallback_title(&fits)),
            r#""123456789012345678901234567890123456 \ud83d""#
        );
        let over = carried(r#""1234567890123456789012345678901234567 \udc00x""#);
        assert_eq!(
            written(&fallback_title(&over)),
            r#""1234567890123456789012345678901234567""#
        );
        let short = carried(r#""a\ud800b \udfff c""#);
        assert_eq!(written(&fallback_title(&short)), r#""a\ud800b \udfff c""#);
        // A real U+10FFFF (doubled inside the runtime) is one 4-byte character.
        let max = carried(&format!("\"{}{}x\"", "a".repeat(36), '\u{10FFFF}'));
        assert_eq!(
            fallback_title(&max),
            format!("{}{}{}", "a".repeat(36), '\u{10FFFF}', '\u{10FFFF}')
        );
        let max_over = carried(&format!("\"{}{}x\"", "a".repeat(37), '\u{10FFFF}'));
        assert_eq!(fallback_title(&max_over), "a".repeat(37));
    }

    #[test]
    fn fallback_title_drops_controls_and_invisible_format_characters() {
        assert_eq!(fallback_title("a\u{b}b\u{c}c\rd e"), "abc d e");
        assert_eq!(fallback_title("a \u{200b} b c d e f"), "a b c d e");
        assert_eq!(fallback_title("a\u{0}b\u{1c}\u{7f}\u{85}c d"), "abc d");
        assert_eq!(fallback_title("a\u{202e}b\u{2066}\u{feff}c d"), "abc d");
        let kept = "a\u{200c}b\u{200d}c\u{ad}d\u{180e}e\u{fe0f}";
        assert_eq!(fallback_title(kept), kept);
    }
}
