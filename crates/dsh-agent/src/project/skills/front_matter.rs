//! The YAML front matter of a `SKILL.md`: a `---` line, a mapping with a
//! `name` and a `description`, a closing `---` line, then the body.

use serde_yaml_ng::Value;

/// Most bytes of front matter parsed (the rest of a file may be longer).
pub(crate) const MAX_FRONT_MATTER_BYTES: usize = 64 * 1024;

/// Longest skill name accepted, in characters.
pub(crate) const MAX_NAME_CHARS: usize = 128;

/// Longest description kept, in characters (a longer one is cut, ending
/// in `...`).
pub(crate) const MAX_DESCRIPTION_CHARS: usize = 500;

/// Why a `SKILL.md` was skipped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum FrontMatterError {
    /// The file does not start with a `---` line.
    #[error("no front matter: the file must start with a `---` line")]
    Missing,
    /// No `---` line closes it.
    #[error("the front matter is not closed by a `---` line")]
    Unclosed,
    /// It is longer than [`MAX_FRONT_MATTER_BYTES`].
    #[error("the front matter is longer than {MAX_FRONT_MATTER_BYTES} bytes")]
    TooLong,
    /// It is not YAML.
    #[error("the front matter is not valid YAML: {0}")]
    Yaml(String),
    /// It is YAML but not a mapping.
    #[error("the front matter is not a mapping")]
    NotMapping,
    /// `name` is missing or not a string.
    #[error("`name` is missing or not a string")]
    NoName,
    /// `name` does not have the form of a skill name.
    #[error(
        "`name` {0:?} is not a skill name (lowercase letters and digits in groups joined by single hyphens, at most {MAX_NAME_CHARS} characters)"
    )]
    BadName(String),
    /// `description` is missing or not a string.
    #[error("`description` is missing or not a string")]
    NoDescription,
}

/// A parsed `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SkillFile<'a> {
    /// The skill's name.
    pub name: String,
    /// Its description on one line, at most [`MAX_DESCRIPTION_CHARS`].
    pub description: String,
    /// What follows the front matter, without surrounding blank space.
    pub body: &'a str,
}

/// Parses the text of a `SKILL.md`.
pub(crate) fn parse(text: &str) -> Result<SkillFile<'_>, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().ok_or(FrontMatterError::Missing)?;
    if !is_fence(first) {
        return Err(FrontMatterError::Missing);
    }
    let start = first.len();
    let mut at = start;
    let (yaml, body) = loop {
        let Some(line) = lines.next() else {
            return Err(FrontMatterError::Unclosed);
        };
        if is_fence(line) {
            break (&text[start..at], &text[at + line.len()..]);
        }
        at += line.len();
        if at - start > MAX_FRONT_MATTER_BYTES {
            return Err(FrontMatterError::TooLong);
        }
    };
    let value: Value =
        serde_yaml_ng::from_str(yaml).map_err(|err| FrontMatterError::Yaml(err.to_string()))?;
    let Value::Mapping(map) = value else {
        return Err(FrontMatterError::NotMapping);
    };
    let name = match map.get("name") {
        Some(Value::String(name)) => name.clone(),
        _ => return Err(FrontMatterError::NoName),
    };
    if !is_skill_name(&name) {
        return Err(FrontMatterError::BadName(name));
    }
    let description = match map.get("description") {
        Some(Value::String(description)) => one_line(description),
        _ => return Err(FrontMatterError::NoDescription),
    };
    Ok(SkillFile {
        name,
        description,
        body: body.trim(),
    })
}

/// A `---` line (trailing blanks and a CR allowed).
fn is_fence(line: &str) -> bool {
    line.trim_end() == "---"
}

/// Lowercase ASCII letters and digits in groups joined by single hyphens.
pub(crate) fn is_skill_name(name: &str) -> bool {
    name.len() <= MAX_NAME_CHARS
        && name.split('-').all(|group| {
            !group.is_empty()
                && group
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
}

/// `text` with every run of blank space made one space, trimmed, and cut to
/// [`MAX_DESCRIPTION_CHARS`] (ending in `...`).
fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= MAX_DESCRIPTION_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(MAX_DESCRIPTION_CHARS - 3).collect();
    cut.push_str("...");
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_description_and_body() {
        let skill =
            parse("---\nname: alpha\ndescription: Does A.\n---\n\n# Alpha\nRun it.\n\n").unwrap();
        assert_eq!(skill.name, "alpha");
        assert_eq!(skill.description, "Does A.");
        assert_eq!(skill.body, "# Alpha\nRun it.");
        let crlf = parse("\u{feff}---\r\nname: crlf\r\ndescription: 'Quoted: yes'\r\nlicense: MIT\r\n---\r\nbody\r\n").unwrap();
        assert_eq!(
            (crlf.name.as_str(), crlf.description.as_str(), crlf.body),
            ("crlf", "Quoted: yes", "body")
        );
        let empty = parse("---\nname: e\ndescription: \"\"\n---\n").unwrap();
        assert_eq!((empty.description.as_str(), empty.body), ("", ""));
    }

    #[test]
    fn descriptions_become_one_bounded_line() {
        let folded = parse("---\nname: f\ndescription: |\n  line one\n  line two\n---\nx").unwrap();
        assert_eq!(folded.description, "line one line two");
        let long = format!("---\nname: l\ndescription: {}\n---\n", "d".repeat(1024));
        let long = parse(&long).unwrap();
        assert_eq!(long.description.chars().count(), MAX_DESCRIPTION_CHARS);
        assert!(long.description.ends_with("d..."));
    }

    #[test]
    fn malformed_front_matter_is_refused() {
        let cases = [
            ("just a body\n", FrontMatterError::Missing),
            (
                "\n---\nname: a\ndescription: b\n---\n",
                FrontMatterError::Missing,
            ),
            ("---\nname: a\ndescription: b\n", FrontMatterError::Unclosed),
            ("---\n- a\n- b\n---\n", FrontMatterError::NotMapping),
            ("---\n---\n", FrontMatterError::NotMapping),
            ("---\ndescription: b\n---\n", FrontMatterError::NoName),
            (
                "---\nname: 123\ndescription: b\n---\n",
                FrontMatterError::NoName,
            ),
            ("---\nname: a\n---\n", FrontMatterError::NoDescription),
            (
                "---\nname: a\ndescription: 42\n---\n",
                FrontMatterError::NoDescription,
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(text), Err(expected), "{text:?}");
        }
        assert!(matches!(
            parse("---\nname: [unclosed\n---\nbody\n"),
            Err(FrontMatterError::Yaml(_))
        ));
        let huge = format!(
            "---\nname: a\ndescription: b\n{}---\n",
            "x: y\n".repeat(MAX_FRONT_MATTER_BYTES / 5 + 1)
        );
        assert_eq!(parse(&huge), Err(FrontMatterError::TooLong));
    }

    #[test]
    fn skill_names_are_lowercase_groups_joined_by_hyphens() {
        for good in ["a", "9lives", "d-1024", "abc-def-9"] {
            assert!(is_skill_name(good), "{good}");
        }
        for bad in [
            "",
            "a_b",
            "a.b",
            "-a",
            "a-",
            "a--b",
            "Abc",
            "café",
            "a b",
            &"x".repeat(MAX_NAME_CHARS + 1),
        ] {
            assert!(!is_skill_name(bad), "{bad}");
        }
        assert!(is_skill_name(&"x".repeat(MAX_NAME_CHARS)));
    }
}
