//! One instructions message within its byte budget.
//!
//! The budget covers the whole text of the message. Files are taken most
//! specific first (the last in message order first); one that does not
//! fit any more is left out, except the most specific one, which is
//! shortened instead. A first line says what was left out or shortened.

use crate::project::prose;

/// Most bytes of one instructions message's text.
pub(crate) const MAX_BYTES: usize = 65536;

/// What a change does to the instructions the model has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Action {
    /// A file the model has not seen.
    Set,
    /// A file whose content changed.
    Replace,
    /// A file that is gone.
    Remove,
}

impl Action {
    /// The wire name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Set => "set",
            Self::Replace => "replace",
            Self::Remove => "remove",
        }
    }
}

/// The content of a file being sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Body {
    /// The text (at most [`MAX_BYTES`] of it).
    pub text: String,
    /// The file's size in bytes.
    pub size: u64,
}

/// One file's entry in a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Change {
    /// What happened to it.
    pub action: Action,
    /// See [`super::discover::Found::scope`].
    pub scope: String,
    /// The path relative to the root.
    pub path: String,
    /// The directory relative to the root.
    pub dir: String,
    /// SHA-1 of the file's bytes (not for a removal).
    pub digest: Option<String>,
    /// The content (not for a removal).
    pub body: Option<Body>,
}

/// The kind of message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Frame {
    /// Every file of the project; `replaces` an earlier baseline.
    Baseline {
        /// Whether a baseline was sent before.
        replaces: bool,
    },
    /// What changed since the last message.
    Update,
}

/// A message's text and which changes it carries.
#[derive(Debug)]
pub(crate) struct Composed {
    /// The text, at most [`MAX_BYTES`] (but for a pathological path).
    pub text: String,
    /// Per change (in order): whether the text carries it.
    pub included: Vec<bool>,
}

/// The text of `changes` (in message order) in `frame`, within the budget.
/// A shortened change's body is cut in place.
pub(crate) fn compose(frame: Frame, changes: &mut [Change]) -> Composed {
    let n = changes.len();
    let mut included = vec![true; n];
    // Most specific first: the last is always taken.
    for i in (0..n.saturating_sub(1)).rev() {
        let (shown, noted) = weighing(&included, i);
        if render(frame, changes, &shown, &noted, None).len() > MAX_BYTES {
            included[i] = false;
        }
    }
    loop {
        let text = render(frame, changes, &included, &left_out(&included), None);
        if text.len() <= MAX_BYTES {
            return Composed { text, included };
        }
        // The broadest one taken goes first.
        match (0..n.saturating_sub(1)).find(|&i| included[i]) {
            Some(i) => included[i] = false,
            None => break,
        }
    }
    let Some(last) = n.checked_sub(1) else {
        return Composed {
            text: render(frame, changes, &included, &left_out(&included), None),
            included,
        };
    };
    let Some(body) = changes[last].body.as_ref() else {
        return Composed {
            text: render(frame, changes, &included, &left_out(&included), None),
            included,
        };
    };
    let mut keep = body.text.len();
    loop {
        let text = render(frame, changes, &included, &left_out(&included), Some(keep));
        let over = text.len().saturating_sub(MAX_BYTES);
        if over == 0 || keep == 0 {
            if let Some(body) = changes[last].body.as_mut() {
                body.text.truncate(keep);
            }
            return Composed { text, included };
        }
        keep = floor_boundary(&body.text, keep.saturating_sub(over));
    }
}

/// What the greedy pass renders when it weighs change `i`: shown, the
/// ones after `i` taken so far and `i` itself; noted as left out, the ones
/// after `i` not taken (the ones before `i` are not decided yet).
fn weighing(included: &[bool], i: usize) -> (Vec<bool>, Vec<bool>) {
    let shown = (0..included.len())
        .map(|j| j == i || j > i && included[j])
        .collect();
    let noted = (0..included.len()).map(|j| j > i && !included[j]).collect();
    (shown, noted)
}

/// Everything not shown is noted as left out.
fn left_out(included: &[bool]) -> Vec<bool> {
    included.iter().map(|taken| !taken).collect()
}

/// The largest char boundary of `text` at or below `at`.
fn floor_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The text of the `included` changes, noting the `noted` ones as left
/// out; with `keep`, the last change's body is cut to that many bytes.
fn render(
    frame: Frame,
    changes: &[Change],
    included: &[bool],
    noted: &[bool],
    keep: Option<usize>,
) -> String {
    let omitted: Vec<&str> = changes
        .iter()
        .zip(noted)
        .filter(|(_, noted)| **noted)
        .map(|(change, _)| change.path.as_str())
        .collect();
    let last = changes.len().saturating_sub(1);
    let truncated = keep.and_then(|keep| {
        let change = changes.get(last)?;
        let body = change.body.as_ref()?;
        Some((change.path.as_str(), body.size, keep))
    });
    let mut text = String::from(prose::OPEN);
    if !omitted.is_empty() || truncated.is_some() {
        text.push_str(&prose::budget_note(MAX_BYTES, &omitted, truncated));
        text.push_str("\n\n");
    }
    if let Frame::Baseline { replaces } = frame {
        if replaces {
            text.push_str(prose::INSTRUCTIONS_REPLACE);
            text.push(' ');
        }
        text.push_str(prose::INSTRUCTIONS_INTRO);
        text.push_str("\n\n");
    }
    let mut first = true;
    for (i, change) in changes.iter().enumerate() {
        if !included[i] {
            continue;
        }
        if !first {
            text.push_str("\n\n");
        }
        first = false;
        let content = change.body.as_ref().map_or("", |body| match keep {
            Some(keep) if i == last => &body.text[..keep.min(body.text.len())],
            _ => body.text.as_str(),
        });
        push_section(&mut text, frame, change, content);
    }
    text.push_str(prose::CLOSE);
    text
}

fn push_section(text: &mut String, frame: Frame, change: &Change, content: &str) {
    let (label, sentence) = match (frame, change.action) {
        (_, Action::Remove) => (prose::REMOVED_LABEL, Some(prose::REMOVED.to_owned())),
        (Frame::Baseline { .. }, _) => (prose::FILE_LABEL, None),
        (Frame::Update, Action::Replace) => (prose::CHANGED_LABEL, Some(prose::CHANGED.to_owned())),
        (Frame::Update, Action::Set) => (prose::ADDED_LABEL, Some(prose::added(&change.dir))),
    };
    text.push_str(label);
    text.push_str(": ");
    text.push_str(&change.path);
    text.push_str("\n\n");
    if let Some(sentence) = sentence {
        text.push_str(&sentence);
        if change.action == Action::Remove {
            return;
        }
        text.push_str("\n\n");
    }
    text.push_str(content);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(path: &str, text: &str) -> Change {
        Change {
            action: Action::Set,
            scope: format!(".\0{path}"),
            path: path.to_owned(),
            dir: ".".to_owned(),
            digest: Some("d".into()),
            body: Some(Body {
                text: text.to_owned(),
                size: text.len() as u64,
            }),
        }
    }

    #[test]
    fn small_files_are_all_sent_in_order() {
        let mut changes = [set("AGENTS.md", "one\n"), set("sub/AGENTS.md", "two")];
        let out = compose(Frame::Baseline { replaces: false }, &mut changes);
        assert_eq!(out.included, [true, true]);
        let expected = format!(
            "<system-reminder>\n{}\n\nInstructions file: AGENTS.md\n\none\n\n\nInstructions file: sub/AGENTS.md\n\ntwo\n</system-reminder>",
            prose::INSTRUCTIONS_INTRO
        );
        assert_eq!(out.text, expected);
    }

    #[test]
    fn broader_files_are_left_out_first() {
        let big = "a".repeat(30_000);
        let mut changes = [
            set("AGENTS.md", &big),
            set("CLAUDE.md", &big),
            set("AGENTS.local.md", &big),
            set("sub/AGENTS.md", &big),
        ];
        let out = compose(Frame::Baseline { replaces: false }, &mut changes);
        assert_eq!(out.included, [false, false, true, true]);
        assert!(out.text.len() <= MAX_BYTES);
        assert!(
            out.text
                .contains("limited to 65536 bytes: left out AGENTS.md, CLAUDE.md\n\n"),
            "{}",
            &out.text[..200]
        );
    }

    #[test]
    fn the_most_specific_file_is_shortened_to_the_exact_budget() {
        let mut changes = [
            set("AGENTS.md", "small"),
            set("sub/AGENTS.md", &"é".repeat(40_000)),
        ];
        let out = compose(Frame::Update, &mut changes);
        assert_eq!(out.included, [false, true]);
        assert!(
            out.text.len() <= MAX_BYTES && out.text.len() >= MAX_BYTES - 1,
            "{}",
            out.text.len()
        );
        let kept = changes[1].body.as_ref().map_or(0, |b| b.text.len());
        assert!(out.text.contains(&format!(
            "left out AGENTS.md; shortened sub/AGENTS.md from 80000 to {kept} bytes"
        )));
        assert!(out.text.ends_with("éé\n</system-reminder>"));
    }

    #[test]
    fn updates_carry_labels_and_sentences() {
        let mut changes = [
            Change {
                action: Action::Replace,
                ..set("AGENTS.md", "new")
            },
            Change {
                action: Action::Remove,
                digest: None,
                body: None,
                ..set("CLAUDE.md", "")
            },
            Change {
                dir: "sub".into(),
                ..set("sub/AGENTS.md", "added")
            },
        ];
        let out = compose(Frame::Update, &mut changes);
        let expected = format!(
            "<system-reminder>\nChanged instructions file: AGENTS.md\n\n{}\n\nnew\n\nDeleted instructions file: CLAUDE.md\n\n{}\n\nNew instructions file: sub/AGENTS.md\n\n{}\n\nadded\n</system-reminder>",
            prose::CHANGED,
            prose::REMOVED,
            prose::added("sub")
        );
        assert_eq!(out.text, expected);
    }
}
