//! The changes `edit` and `write` made to a file, as the official runtime
//! reports them in `tool/result.data.meta.diffs`: one entry per hunk of a
//! line diff with three lines of context (hunks whose changes are at most
//! six unchanged lines apart are one), each side's lines without their
//! terminators joined by `\n`. A line's terminator takes part in the
//! comparison, so a file that only gains or loses its final newline has a
//! hunk whose two sides read the same. The old side of a file that was
//! empty is null; the new side of a file emptied is "".

use serde_json::{Value, json};
use similar::{Algorithm, ChangeTag, TextDiff};
use std::time::Duration;

/// Lines of unchanged context around a change.
const CONTEXT: usize = 3;

/// Longest a diff is computed for; past it the diff found so far (still
/// correct, maybe longer than the shortest) is reported.
const DEADLINE: Duration = Duration::from_millis(500);

/// The hunks turning `old` into `new` for the file shown as `path`:
/// `[{path, oldText, newText}]`, empty when they are equal.
pub(crate) fn hunks(path: &str, old: &str, new: &str) -> Vec<Value> {
    if old == new {
        return Vec::new();
    }
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(DEADLINE)
        .diff_lines(old, new);
    diff.grouped_ops(CONTEXT)
        .iter()
        .filter(|group| group.iter().any(|op| op.tag() != similar::DiffTag::Equal))
        .map(|group| {
            let (mut before, mut after) = (Vec::new(), Vec::new());
            for change in group.iter().flat_map(|op| diff.iter_changes(op)) {
                let line = unterminated(change.value());
                match change.tag() {
                    ChangeTag::Equal => {
                        before.push(line);
                        after.push(line);
                    }
                    ChangeTag::Delete => before.push(line),
                    ChangeTag::Insert => after.push(line),
                }
            }
            let before = if old.is_empty() {
                Value::Null
            } else {
                Value::from(before.join("\n"))
            };
            json!({"path": path, "oldText": before, "newText": after.join("\n")})
        })
        .collect()
}

/// A line without its `\n` or `\r\n`.
fn unterminated(line: &str) -> &str {
    line.strip_suffix('\n')
        .map_or(line, |line| line.strip_suffix('\r').unwrap_or(line))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sides(old: &str, new: &str) -> Vec<(String, String)> {
        hunks("f", old, new)
            .into_iter()
            .map(|hunk| {
                let side = |key: &str| hunk[key].as_str().unwrap_or_default().to_owned();
                (side("oldText"), side("newText"))
            })
            .collect()
    }

    fn numbered(lines: std::ops::RangeInclusive<u32>) -> String {
        lines.map(|n| format!("l{n}\n")).collect()
    }

    #[test]
    fn a_change_carries_three_lines_of_context_each_side() {
        let old = numbered(1..=20);
        let new = old.replace("l10\n", "TEN\n");
        assert_eq!(
            sides(&old, &new),
            [(
                "l7\nl8\nl9\nl10\nl11\nl12\nl13".to_owned(),
                "l7\nl8\nl9\nTEN\nl11\nl12\nl13".to_owned()
            )]
        );
    }

    #[test]
    fn changes_six_lines_apart_share_a_hunk_and_seven_apart_do_not() {
        let old = numbered(1..=30);
        let six = old.replace("l3\n", "A\n").replace("l10\n", "B\n");
        assert_eq!(sides(&old, &six).len(), 1);
        let seven = old.replace("l3\n", "A\n").replace("l11\n", "B\n");
        assert_eq!(sides(&old, &seven).len(), 2);
    }

    #[test]
    fn a_lost_final_newline_is_a_hunk_whose_sides_read_the_same() {
        assert_eq!(
            sides("only\n", "only"),
            [("only".to_owned(), "only".to_owned())]
        );
        assert!(sides("only", "only").is_empty());
    }

    #[test]
    fn the_old_side_of_an_empty_file_is_null_and_an_emptied_one_is_empty() {
        assert_eq!(
            hunks("f", "", "now\n"),
            [json!({"path": "f", "oldText": null, "newText": "now"})]
        );
        assert_eq!(
            hunks("f", "gone\n", ""),
            [json!({"path": "f", "oldText": "gone", "newText": ""})]
        );
    }

    #[test]
    fn crlf_terminators_are_left_out_of_both_sides() {
        assert_eq!(
            sides("a\r\nb\r\nc\r\n", "a\r\nB\r\nc\r\n"),
            [("a\nb\nc".to_owned(), "a\nB\nc".to_owned())]
        );
    }

    #[test]
    fn a_deletion_at_the_start_has_context_only_after() {
        let old = numbered(1..=20);
        let new = old.replace("l2\n", "");
        assert_eq!(
            sides(&old, &new),
            [("l1\nl2\nl3\nl4\nl5".to_owned(), "l1\nl3\nl4\nl5".to_owned())]
        );
    }
}
