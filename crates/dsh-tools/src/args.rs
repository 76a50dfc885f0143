//! Parsing and validating the raw argument string of a call against the
//! tool's JSON schema, with errors the model can act on.

use crate::output::Failure;
use dsh_protocol::catalog::ToolSpec;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// Parses `raw` (empty means `{}`), checks it against `spec.parameters` and
/// deserialises it. Optional properties given as `null` count as absent;
/// unknown top-level properties are ignored.
pub(crate) fn parse<T: DeserializeOwned>(spec: &ToolSpec, raw: &str) -> Result<T, Failure> {
    let tool = &spec.name;
    let value = if raw.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str::<Value>(raw).map_err(|err| {
            Failure(format!(
                "Error: the arguments for {tool} are not valid JSON ({err}). Send a single JSON object that matches the tool's parameter schema."
            ))
        })?
    };
    let Value::Object(mut object) = value else {
        return Err(Failure(format!(
            "Error: the arguments for {tool} must be a JSON object, got {}.",
            kind_of(&value)
        )));
    };
    drop_null_optionals(&spec.parameters, &mut object);
    let value = Value::Object(object);
    if let Err(problem) = check(&spec.parameters, &value, "") {
        return Err(Failure(format!(
            "Error: invalid arguments for {tool}: {problem}."
        )));
    }
    serde_json::from_value(value)
        .map_err(|err| Failure(format!("Error: invalid arguments for {tool}: {err}.")))
}

/// Removes top-level `null` values of properties that are not required.
fn drop_null_optionals(schema: &Value, object: &mut Map<String, Value>) {
    let required = required_of(schema);
    object.retain(|key, value| !value.is_null() || required.iter().any(|r| r == key));
}

fn required_of(schema: &Value) -> Vec<&str> {
    schema
        .get("required")
        .and_then(Value::as_array)
        .map(|list| list.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Checks `value` against the subset of JSON schema the tool schemas use:
/// `type`, `properties`, `required`, `additionalProperties: false`, `items`
/// and `enum`. `at` names the position for messages.
fn check(schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let label = |at: &str| {
        if at.is_empty() {
            "the arguments".to_owned()
        } else {
            format!("parameter \"{at}\"")
        }
    };
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
            return Err(format!(
                "{} must be {}, got {}",
                label(at),
                article(expected),
                kind_of(value)
            ));
        }
    }
    if let Some(options) = schema.get("enum").and_then(Value::as_array)
        && !options.contains(value)
    {
        let names: Vec<String> = options.iter().map(Value::to_string).collect();
        return Err(format!(
            "{} must be one of {}, got {}",
            label(at),
            names.join(", "),
            value
        ));
    }
    if let Value::Object(object) = value {
        let properties = schema.get("properties").and_then(Value::as_object);
        for name in required_of(schema) {
            match object.get(name) {
                None => {
                    return Err(format!("parameter \"{}\" is required", join(at, name)));
                }
                Some(Value::Null) => {
                    return Err(format!(
                        "parameter \"{}\" is required and must not be null",
                        join(at, name)
                    ));
                }
                Some(_) => {}
            }
        }
        let closed = schema.get("additionalProperties") == Some(&Value::Bool(false));
        for (name, item) in object {
            match properties.and_then(|p| p.get(name)) {
                Some(sub) => check(sub, item, &join(at, name))?,
                None if closed => {
                    return Err(format!(
                        "{} has no property \"{name}\"",
                        if at.is_empty() {
                            "the object".to_owned()
                        } else {
                            format!("\"{at}\"")
                        }
                    ));
                }
                None => {}
            }
        }
    }
    if let (Value::Array(items), Some(item_schema)) = (value, schema.get("items")) {
        for (index, item) in items.iter().enumerate() {
            check(item_schema, item, &format!("{at}[{index}]"))?;
        }
    }
    Ok(())
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

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

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
