//! The arguments of `web_search`: `{queries: [string, 1–4]}`, checked as
//! the official runtime checks them (its messages and codes), plus a bound
//! on each query's length.

use dsh_protocol::catalog::ToolErrorCode;
use dsh_tools::ToolOutput;
use serde_json::Value;

/// Most queries of one call (the schema's bound, as upstream).
pub(crate) const MAX_QUERIES: usize = 4;
/// Most characters of one query.
pub(crate) const MAX_QUERY_CHARS: usize = 2000;
/// Most type problems named in one message.
const MAX_PROBLEMS: usize = 5;

/// Why the arguments were refused; the text is the tool result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ArgsError {
    /// Not a JSON object with a `queries` array of strings (`INVALID_ARGS`).
    #[error("Error: invalid arguments: {0}")]
    Invalid(String),
    /// An empty list (no code, as upstream).
    #[error("Error: queries must contain at least one query")]
    NoQuery,
    /// More than [`MAX_QUERIES`] (no code, as upstream).
    #[error("Error: queries must contain at most {MAX_QUERIES} queries")]
    TooMany,
    /// An empty or blank query (no code, as upstream).
    #[error("Error: each query must be a non-empty string")]
    Blank,
    /// A query longer than [`MAX_QUERY_CHARS`].
    #[error(
        "Error: each query must be at most {MAX_QUERY_CHARS} characters; query {index} has {chars}"
    )]
    TooLong {
        /// Its position, from 1.
        index: usize,
        /// Its length in characters.
        chars: usize,
    },
}

impl From<ArgsError> for ToolOutput {
    fn from(err: ArgsError) -> Self {
        let invalid = matches!(err, ArgsError::Invalid(_));
        let output = ToolOutput::failure(err.to_string());
        if invalid {
            output.with_error(ToolErrorCode::InvalidArgs)
        } else {
            output
        }
    }
}

/// The distinct queries of a call, in order (a repeated query is searched
/// once).
pub(crate) fn queries(arguments: &str) -> Result<Vec<String>, ArgsError> {
    let value: Value = serde_json::from_str(crate::tool_args::or_empty_object(arguments))
        .map_err(|e| ArgsError::Invalid(e.to_string()))?;
    let Value::Object(object) = value else {
        return Err(ArgsError::Invalid("the arguments must be an object".into()));
    };
    let items = match object.get("queries") {
        None | Some(Value::Null) => {
            return Err(ArgsError::Invalid(
                "missing required property \"queries\"".into(),
            ));
        }
        Some(Value::Array(items)) => items,
        Some(_) => return Err(ArgsError::Invalid("\"queries\" must be an array".into())),
    };
    let problems: Vec<String> = items
        .iter()
        .enumerate()
        .filter(|(_, item)| !item.is_string())
        .take(MAX_PROBLEMS)
        .map(|(i, _)| format!("\"queries[{i}]\" must be a string"))
        .collect();
    if !problems.is_empty() {
        return Err(ArgsError::Invalid(problems.join("; ")));
    }
    if items.is_empty() {
        return Err(ArgsError::NoQuery);
    }
    if items.len() > MAX_QUERIES {
        return Err(ArgsError::TooMany);
    }
    let mut queries: Vec<String> = Vec::with_capacity(items.len());
    for (i, query) in items.iter().filter_map(Value::as_str).enumerate() {
        if query.trim().is_empty() {
            return Err(ArgsError::Blank);
        }
        let chars = query.chars().count();
        if chars > MAX_QUERY_CHARS {
            return Err(ArgsError::TooLong {
                index: i + 1,
                chars,
            });
        }
        if !queries.iter().any(|q| q == query) {
            queries.push(query.to_owned());
        }
    }
    Ok(queries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(arguments: &str) -> String {
        match queries(arguments) {
            Ok(q) => format!("{q:?}"),
            Err(e) => e.to_string(),
        }
    }

    // The texts are the official runtime's (probed), except the length bound.
    #[test]
    fn refusals_read_as_upstream() {
        assert_eq!(
            text(r#"{"queries":[]}"#),
            "Error: queries must contain at least one query"
        );
        assert_eq!(
            text(r#"{"queries":["a","b","c","d","e"]}"#),
            "Error: queries must contain at most 4 queries"
        );
        assert_eq!(
            text(r#"{"queries":"one"}"#),
            "Error: invalid arguments: \"queries\" must be an array"
        );
        assert_eq!(
            text(r#"{"queries":[1,2]}"#),
            "Error: invalid arguments: \"queries[0]\" must be a string; \"queries[1]\" must be a string"
        );
        assert_eq!(
            text("{}"),
            "Error: invalid arguments: missing required property \"queries\""
        );
        assert_eq!(
            text(""),
            "Error: invalid arguments: missing required property \"queries\""
        );
        assert_eq!(
            text(r#"{"queries":["", "x"]}"#),
            "Error: each query must be a non-empty string"
        );
        assert_eq!(
            text(r#"{"queries":["  "]}"#),
            "Error: each query must be a non-empty string"
        );
        let long = format!(
            r#"{{"queries":["ok","{}"]}}"#,
            "x".repeat(MAX_QUERY_CHARS + 1)
        );
        assert_eq!(
            text(&long),
            "Error: each query must be at most 2000 characters; query 2 has 2001"
        );
        let many = format!("{{\"queries\":[{}]}}", vec!["1"; 1000].join(","));
        assert_eq!(
            text(&many).matches("must be a string").count(),
            MAX_PROBLEMS
        );
    }

    #[test]
    fn only_schema_refusals_carry_invalid_args() {
        let code = |arguments: &str| {
            ToolOutput::from(queries(arguments).err().unwrap_or(ArgsError::Blank))
                .error
                .map(|e| e.code.to_string())
        };
        assert_eq!(code(r#"{"queries":"x"}"#).as_deref(), Some("INVALID_ARGS"));
        assert_eq!(code("[1]").as_deref(), Some("INVALID_ARGS"));
        assert_eq!(code(r#"{"queries":[]}"#), None);
    }

    #[test]
    fn repeated_queries_are_searched_once_and_kept_verbatim() {
        assert_eq!(
            queries(r#"{"queries":["same","  padded  ","same"]}"#),
            Ok(vec!["same".to_owned(), "  padded  ".to_owned()])
        );
    }
}
