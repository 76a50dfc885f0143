//! The `workflow` call's arguments, checked as the official runtime
//! checks them: the schema first (`INVALID_ARGS`), then `meta`'s own rules
//! (`META_INVALID`).

use crate::tool_args::InvalidArgs;
use dsh_protocol::catalog::ToolErrorCode;
use dsh_tools::ToolOutput;
use serde_json::{Map, Value};

/// Longest script accepted, in bytes.
pub(crate) const MAX_SCRIPT_BYTES: usize = 1 << 20;

/// Longest `meta.name`, in characters.
const MAX_NAME_CHARS: usize = 128;

/// A checked `workflow` call.
#[derive(Debug)]
pub(crate) struct WorkflowArgs {
    /// The script source.
    pub script: String,
    /// `meta.name`.
    pub name: String,
    /// `args` (an empty object when absent).
    pub args: Value,
    /// `run_in_background`.
    pub background: bool,
}

/// Why the call was refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ArgsError {
    /// The arguments do not fit the schema.
    #[error(transparent)]
    Schema(#[from] InvalidArgs),
    /// `meta` fits the schema but not its rules.
    #[error("Error: invalid meta: {0}")]
    Meta(String),
    /// The script is longer than this runtime runs.
    #[error("Error: the workflow script is {0} bytes; the limit is {MAX_SCRIPT_BYTES} bytes")]
    TooLarge(usize),
}

impl From<ArgsError> for ToolOutput {
    fn from(err: ArgsError) -> Self {
        match err {
            ArgsError::Schema(err) => err.into(),
            ArgsError::Meta(_) => {
                ToolOutput::failure(err.to_string()).with_error(ToolErrorCode::MetaInvalid)
            }
            ArgsError::TooLarge(_) => {
                ToolOutput::failure(err.to_string()).with_error(ToolErrorCode::InvalidArgs)
            }
        }
    }
}

/// What a JSON type is called in the messages.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "a string",
        Value::Object(_) => "an object",
        Value::Bool(_) => "a boolean",
        Value::Array(_) => "an array",
        _ => "of another type",
    }
}

/// Checks `raw` against the schema: every missing required property,
/// then every property of the wrong type, joined by `; `.
pub(crate) fn parse(raw: &str) -> Result<WorkflowArgs, ArgsError> {
    let object = match serde_json::from_str::<Value>(crate::tool_args::or_empty_object(raw)) {
        Ok(Value::Object(object)) => object,
        _ => {
            return Err(InvalidArgs("the arguments must be a JSON object".to_owned()).into());
        }
    };
    let mut missing = Vec::new();
    let mut wrong = Vec::new();
    let mut bad = Vec::new();
    let mut expect = |map: &Map<String, Value>,
                      path: &str,
                      key: &str,
                      want: &'static str,
                      required: bool,
                      wrong: &mut Vec<String>| {
        let name = if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        };
        match map.get(key) {
            None if required => missing.push(format!("missing required property \"{name}\"")),
            None => {}
            Some(value) if kind_of(value) == want => {}
            Some(_) => wrong.push(format!("\"{name}\" must be {want}")),
        }
    };
    expect(&object, "", "script", "a string", true, &mut wrong);
    expect(&object, "", "meta", "an object", true, &mut wrong);
    expect(&object, "", "args", "an object", false, &mut wrong);
    expect(
        &object,
        "",
        "run_in_background",
        "a boolean",
        false,
        &mut wrong,
    );
    if let Some(Value::Object(meta)) = object.get("meta") {
        expect(meta, "meta", "name", "a string", true, &mut wrong);
        expect(meta, "meta", "description", "a string", true, &mut wrong);
        expect(meta, "meta", "whenToUse", "a string", false, &mut wrong);
        expect(meta, "meta", "phases", "an array", false, &mut wrong);
        if let Some(Value::Array(phases)) = meta.get("phases") {
            for (i, phase) in phases.iter().enumerate() {
                let path = format!("meta.phases[{i}]");
                match phase {
                    Value::Object(phase) => {
                        expect(phase, &path, "title", "a string", true, &mut wrong);
                        for key in ["detail", "provider", "model"] {
                            expect(phase, &path, key, "a string", false, &mut wrong);
                        }
                    }
                    _ => bad.push(format!("\"{path}\" must be an object")),
                }
            }
        }
    }
    wrong.extend(bad);
    missing.extend(wrong);
    if !missing.is_empty() {
        return Err(InvalidArgs(missing.join("; ")).into());
    }
    let text = |value: Option<&Value>| value.and_then(Value::as_str).unwrap_or_default().to_owned();
    let meta = object.get("meta");
    let name = text(meta.and_then(|m| m.get("name")));
    if name.trim().is_empty() {
        return Err(ArgsError::Meta(
            "meta.name must be a non-empty string".to_owned(),
        ));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(ArgsError::Meta(format!(
            "meta.name must be at most {MAX_NAME_CHARS} characters"
        )));
    }
    if text(meta.and_then(|m| m.get("description")))
        .trim()
        .is_empty()
    {
        return Err(ArgsError::Meta(
            "meta.description must be a non-empty string".to_owned(),
        ));
    }
    let script = text(object.get("script"));
    if script.len() > MAX_SCRIPT_BYTES {
        return Err(ArgsError::TooLarge(script.len()));
    }
    Ok(WorkflowArgs {
        script,
        name,
        args: object
            .get("args")
            .cloned()
            .unwrap_or_else(|| Value::Object(Map::new())),
        background: object
            .get("run_in_background")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(raw: &str) -> String {
        parse(raw)
            .map(|_| ())
            .map_err(|e| e.to_string())
            .unwrap_err()
    }

    #[test]
    fn a_complete_call_parses() {
        let args = parse(r#"{"script":"return 1","meta":{"name":"n","description":"d"},"args":{"k":1},"run_in_background":true}"#).unwrap();
        assert_eq!(args.name, "n");
        assert_eq!(args.args, serde_json::json!({"k": 1}));
        assert!(args.background);
        let args = parse(r#"{"script":"","meta":{"name":"n","description":"d"}}"#).unwrap();
        assert_eq!(args.args, serde_json::json!({}));
        assert!(!args.background);
    }

    #[test]
    fn schema_problems_are_reported_as_the_official_runtime_words_them() {
        assert_eq!(
            refusal(r#"{"script":"return 1","meta":{"name":"x"}}"#),
            "Error: invalid arguments: missing required property \"meta.description\""
        );
        assert_eq!(
            refusal(r#"{"script":5,"meta":{"name":"x","description":"d"}}"#),
            "Error: invalid arguments: \"script\" must be a string"
        );
        assert_eq!(
            refusal(r#"{"meta":{"name":"x","description":"d"},"args":[1]}"#),
            "Error: invalid arguments: missing required property \"script\"; \"args\" must be an object"
        );
        assert_eq!(
            refusal(
                r#"{"script":"","meta":{"name":"x","description":"d","phases":[{"detail":"d"}]}}"#
            ),
            "Error: invalid arguments: missing required property \"meta.phases[0].title\""
        );
        assert_eq!(
            refusal("[1]"),
            "Error: invalid arguments: the arguments must be a JSON object"
        );
    }

    #[test]
    fn meta_rules_come_after_the_schema() {
        assert_eq!(
            refusal(r#"{"script":"return 1","meta":{"name":"","description":"d"}}"#),
            "Error: invalid meta: meta.name must be a non-empty string"
        );
        assert_eq!(
            refusal(r#"{"script":"return 1","meta":{"name":"n","description":" "}}"#),
            "Error: invalid meta: meta.description must be a non-empty string"
        );
        let long = "n".repeat(129);
        assert!(
            refusal(&format!(
                r#"{{"script":"","meta":{{"name":"{long}","description":"d"}}}}"#
            ))
            .contains("at most 128")
        );
    }

    #[test]
    fn a_script_over_the_limit_is_refused() {
        let script = "x".repeat(MAX_SCRIPT_BYTES + 1);
        let raw = serde_json::json!({"script": script, "meta": {"name": "n", "description": "d"}})
            .to_string();
        assert!(refusal(&raw).contains("the limit is 1048576 bytes"));
    }
}
