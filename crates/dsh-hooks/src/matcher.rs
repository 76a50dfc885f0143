//! A group's `matcher`, read as Claude Code reads it: absent, empty or `*`
//! matches everything; a plain list of names (`Edit|Write`) matches one of
//! them exactly; anything else is a regular expression searched in the
//! value (`mcp__github__.*`, `^Notebook`), case-sensitive.

use regex::Regex;

/// Longest matcher accepted (a regular expression is compiled once, at
/// configuration time, with the `regex` crate's size limits).
pub const MATCHER_MAX_BYTES: usize = 4096;

/// A parsed matcher.
#[derive(Debug, Clone)]
pub enum Matcher {
    /// Every value.
    Any,
    /// One of these names, exactly.
    Names(Vec<String>),
    /// Values this expression finds a match in.
    Pattern(Regex),
}

/// Why a matcher cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MatcherError {
    /// Longer than [`MATCHER_MAX_BYTES`].
    #[error("is longer than {MATCHER_MAX_BYTES} bytes")]
    TooLong,
    /// Not a regular expression.
    #[error("is not a valid regular expression: {0}")]
    Invalid(String),
}

impl Matcher {
    /// Parses `text` (`None`: no matcher given).
    pub fn parse(text: Option<&str>) -> Result<Self, MatcherError> {
        let Some(text) = text.map(str::trim) else {
            return Ok(Self::Any);
        };
        if text.is_empty() || text == "*" {
            return Ok(Self::Any);
        }
        if text.len() > MATCHER_MAX_BYTES {
            return Err(MatcherError::TooLong);
        }
        let plain = text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '|');
        if plain {
            return Ok(Self::Names(
                text.split('|')
                    .filter(|name| !name.is_empty())
                    .map(str::to_owned)
                    .collect(),
            ));
        }
        Regex::new(text)
            .map(Self::Pattern)
            .map_err(|err| MatcherError::Invalid(err.to_string()))
    }

    /// Whether any of `values` (a tool's names: Claude Code's, dsh's,
    /// Codex's) matches.
    pub fn matches(&self, values: &[&str]) -> bool {
        match self {
            Self::Any => true,
            Self::Names(names) => values.iter().any(|v| names.iter().any(|n| n == v)),
            Self::Pattern(pattern) => values.iter().any(|v| pattern.is_match(v)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Matcher {
        match Matcher::parse(Some(text)) {
            Ok(matcher) => matcher,
            Err(err) => panic!("{text}: {err}"),
        }
    }

    #[test]
    fn matchers_read_as_claude_code_reads_them() {
        assert!(parse("").matches(&["Bash"]));
        assert!(parse("*").matches(&["anything"]));
        assert!(matches!(Matcher::parse(None), Ok(Matcher::Any)));
        let names = parse("Edit|Write");
        assert!(names.matches(&["Write", "write"]));
        assert!(!names.matches(&["WriteFile"]), "plain names match exactly");
        assert!(!parse("Bash").matches(&["bash"]), "case-sensitive");
        assert!(parse("mcp__github__.*").matches(&["mcp__github__create_issue"]));
        assert!(!parse("mcp__github__.*").matches(&["mcp__gitlab__x"]));
        assert!(parse("^Notebook").matches(&["NotebookEdit"]));
        assert!(!parse("^Notebook").matches(&["MyNotebook"]));
        assert!(matches!(
            Matcher::parse(Some("(")),
            Err(MatcherError::Invalid(_))
        ));
        assert_eq!(
            Matcher::parse(Some(&"a".repeat(MATCHER_MAX_BYTES + 1))).err(),
            Some(MatcherError::TooLong)
        );
    }
}
