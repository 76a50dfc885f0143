//! Parsing and validating the raw argument string of a call against the
//! tool's JSON schema, answered the way the official runtime answers:
//! `Error: invalid arguments: ` and every problem, joined by `; `, with
//! `error {ToolArgsError, INVALID_ARGS}`.

use crate::ToolOutput;
use dsh_protocol::catalog::{ToolErrorCode, ToolSpec};
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Arguments that do not fit the tool's schema: the problems, as the
/// model is told them after `Error: invalid arguments: `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Error: invalid arguments: {0}")]
pub(crate) struct InvalidArgs(pub(crate) String);

impl From<InvalidArgs> for ToolOutput {
    fn from(err: InvalidArgs) -> Self {
        ToolOutput::failure(err.to_string()).with_error(ToolErrorCode::InvalidArgs)
    }
}

/// Parses `raw` (empty or blank means `{}`), checks it against
/// `spec.parameters` and deserialises it. A `null` is a value of the wrong
/// type, optional or not; unknown top-level properties are ignored.
pub(crate) fn parse<T: DeserializeOwned>(spec: &ToolSpec, raw: &str) -> Result<T, InvalidArgs> {
    let raw = if raw.trim().is_empty() { "{}" } else { raw };
    let value = match serde_json::from_str::<Value>(raw) {
        Ok(value @ Value::Object(_)) => value,
        // The official provider ends the turn before such a call reaches a
        // tool; calls from elsewhere are told this (our words).
        _ => {
            return Err(InvalidArgs(
                "the arguments must be a JSON object".to_owned(),
            ));
        }
    };
    let mut problems = Vec::new();
    check(&spec.parameters, &value, "", &mut problems);
    if !problems.is_empty() {
        return Err(InvalidArgs(problems.join("; ")));
    }
    serde_json::from_value(value).map_err(|err| InvalidArgs(err.to_string()))
}

/// The problems of `value` against `schema` (the subset of JSON schema
/// `parse` checks: `type`, `enum`, `properties`, `required`,
/// `additionalProperties: false`, `items`; other keywords are left to the
/// tool), each as the model is told it; empty when it fits.
pub fn check_arguments(schema: &Value, value: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    check(schema, value, "", &mut problems);
    problems
}

fn required_of(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Collects the problems of `value` against the subset of JSON schema the
/// tool schemas use (`type`, `enum`, `properties`, `required`,
/// `additionalProperties: false`, `items`), in the official order: at each
/// object its missing required properties (in `required` order), then its
/// properties in schema order (each checked in depth), then its undeclared
/// properties when it is closed; an array's items in order. `at` is the
/// position (`todos[0].status`), empty at the top.
fn check(schema: &Value, value: &Value, at: &str, problems: &mut Vec<String>) {
    if let Some(expected) = schema.get("type").and_then(Value::as_str) {
        let ok = match expected {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "number" => value.is_number(),
            "integer" => value.is_i64() || value.is_u64(),
            "boolean" => value.is_boolean(),
            _ => true,
        };
        if !ok {
            problems.push(format!("\"{at}\" must be {}", article(expected)));
            return;
        }
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        let list = serde_json::to_string(options).unwrap_or_default();
        problems.push(format!("\"{at}\" must be one of {list}"));
        return;
    }
    if let Value::Object(object) = value {
        for name in required_of(schema) {
            if !object.contains_key(name) {
                problems.push(format!("missing required property \"{}\"", join(at, name)));
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        for (name, sub) in properties.into_iter().flatten() {
            if let Some(item) = object.get(name) {
                check(sub, item, &join(at, name), problems);
            }
        }
        if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
            for name in object.keys() {
                if !properties.is_some_and(|p| p.contains_key(name)) {
                    problems.push(format!(
                        "\"{}\" is not a declared property (additionalProperties: false)",
                        join(at, name)
                    ));
                }
            }
        }
    }
    if let (Value::Array(items), Some(item_schema)) = (value, schema.get("items")) {
        for (index, item) in items.iter().enumerate() {
            check(item_schema, item, &format!("{at}[{index}]"), problems);
        }
    }
}

fn join(at: &str, name: &str) -> String {
    if at.is_empty() {
        name.to_owned()
    } else {
        format!("{at}.{name}")
    }
}

fn article(kind: &str) -> String {
    match kind {
        "object" | "array" | "integer" => format!("an {kind}"),
        _ => format!("a {kind}"),
    }
}

use crate::output::Failure;

/// Converts an optional JSON number argument to a whole number within
/// `min..=max`, rejecting non-finite, fractional and out-of-range values.
pub(crate) fn whole_number(
    tool: &str,
    name: &str,
    value: Option<f64>,
    min: u64,
    max: u64,
) -> Result<Option<u64>, Failure> {
    let Some(number) = value else {
        return Ok(None);
    };
    if !number.is_finite() || number.fract() != 0.0 || number < min as f64 || number > max as f64 {
        return Err(Failure(format!(
            "Error: invalid arguments for {tool}: parameter \"{name}\" must be a whole number from {min} to {max}, got {number}."
        )));
    }
    Ok(Some(number as u64))
}

/// An optional `offset`/`limit` style argument as a whole number of at
/// least 1, answered as the official runtime answers otherwise
/// (`Error: <name> must be a positive integer`, no `error` object). Values
/// beyond `max` become `max`.
pub(crate) fn positive_integer(
    name: &str,
    value: Option<f64>,
    max: u64,
) -> Result<Option<u64>, Failure> {
    let Some(number) = value else {
        return Ok(None);
    };
    if !number.is_finite() || number.fract() != 0.0 || number < 1.0 {
        return Err(Failure(format!("Error: {name} must be a positive integer")));
    }
    Ok(Some(if number >= max as f64 {
        max
    } else {
        number as u64
    }))
}
