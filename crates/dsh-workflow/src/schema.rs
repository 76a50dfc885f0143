//! A small JSON-schema subset, used to check a child agent's structured
//! output against the schema its `agent()` call asked for.

use serde_json::{Map, Value};

/// Checks `value` against `schema`, a subset of JSON Schema: `type` (one
/// name or an array of names among string, number, integer, boolean,
/// object, array, null), `properties`, `required`, `items`, `enum` and
/// `additionalProperties: false`, nested to any depth. Other keywords are
/// ignored, and so is a schema that is not an object (except `false`, which
/// accepts nothing).
///
/// Paths in the messages start at `value` (`value.x`, `value[0]`,
/// `value["odd key"]`). Every problem found is reported, joined by `; `.
pub fn validate(schema: &Value, value: &Value) -> Result<(), String> {
    let mut problems = Vec::new();
    check(schema, value, "value", &mut problems);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// Appends to `problems` what is wrong with `value` (at `path`) under `schema`.
fn check(schema: &Value, value: &Value, path: &str, problems: &mut Vec<String>) {
    let schema = match schema {
        Value::Object(schema) => schema,
        Value::Bool(false) => {
            problems.push(format!("\"{path}\" is not allowed"));
            return;
        }
        _ => return,
    };
    if let Some(expected) = schema.get("type") {
        if !type_matches(expected, value) {
            problems.push(format!("\"{path}\" must be {}", describe_type(expected)));
            // The other keywords would only repeat the mismatch.
            return;
        }
    }
    if let Some(Value::Array(allowed)) = schema.get("enum") {
        if !allowed.contains(value) {
            let listed: Vec<String> = allowed.iter().map(Value::to_string).collect();
            problems.push(format!("\"{path}\" must be one of {}", listed.join(", ")));
        }
    }
    match value {
        Value::Object(object) => check_object(schema, object, path, problems),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (index, item) in items.iter().enumerate() {
                    check(item_schema, item, &format!("{path}[{index}]"), problems);
                }
            }
        }
        _ => {}
    }
}

/// The object keywords: `required`, `properties`, `additionalProperties`.
fn check_object(
    schema: &Map<String, Value>,
    object: &Map<String, Value>,
    path: &str,
    problems: &mut Vec<String>,
) {
    let properties = match schema.get("properties") {
        Some(Value::Object(properties)) => Some(properties),
        _ => None,
    };
    if let Some(Value::Array(required)) = schema.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !object.contains_key(name) {
                problems.push(format!(
                    "missing required property \"{}\"",
                    child_path(path, name)
                ));
            }
        }
    }
    for (name, item) in object {
        match properties.and_then(|properties| properties.get(name)) {
            Some(property_schema) => {
                check(property_schema, item, &child_path(path, name), problems)
            }
            None => {
                if schema.get("additionalProperties") == Some(&Value::Bool(false)) {
                    problems.push(format!(
                        "\"{}\" is not an allowed property (additionalProperties is false)",
                        child_path(path, name)
                    ));
                }
            }
        }
    }
}

/// `path.name` for identifier-like names, `path["name"]` otherwise.
pub(crate) fn child_path(path: &str, name: &str) -> String {
    if is_identifier(name) {
        format!("{path}.{name}")
    } else {
        format!("{path}[{}]", Value::String(name.to_owned()))
    }
}

/// Whether `name` can follow a dot in JavaScript (ASCII identifiers only).
fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

/// Whether `value` has the type (or one of the types) `expected` names.
/// An unknown type name matches anything.
fn type_matches(expected: &Value, value: &Value) -> bool {
    match expected {
        Value::String(name) => one_type_matches(name, value),
        Value::Array(names) => names.iter().any(|name| {
            name.as_str()
                .is_none_or(|name| one_type_matches(name, value))
        }),
        _ => true,
    }
}

/// Whether `value` is of the JSON-schema type `name`.
fn one_type_matches(name: &str, value: &Value) -> bool {
    match name {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => match value {
            Value::Number(n) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        "boolean" => value.is_boolean(),
        "object" => value.is_object(),
        "array" => value.is_array(),
        "null" => value.is_null(),
        _ => true,
    }
}

/// "a number", "a string or null", ...
fn describe_type(expected: &Value) -> String {
    let names: Vec<&str> = match expected {
        Value::String(name) => vec![name.as_str()],
        Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let described: Vec<String> = names.iter().map(|name| describe_one(name)).collect();
    match described.split_last() {
        None => "of the expected type".to_owned(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// The article and name of one type.
fn describe_one(name: &str) -> String {
    match name {
        "string" => "a string".to_owned(),
        "number" => "a number".to_owned(),
        "integer" => "an integer".to_owned(),
        "boolean" => "a boolean".to_owned(),
        "object" => "an object".to_owned(),
        "array" => "an array".to_owned(),
        "null" => "null".to_owned(),
        other => format!("of type {other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn accepts_matching_values() {
        let schema = json!({
            "type": "object",
            "properties": {
                "x": {"type": "number"},
                "n": {"type": "integer"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "kind": {"enum": ["a", "b"]},
                "maybe": {"type": ["string", "null"]},
                "inner": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
            },
            "required": ["x"],
            "additionalProperties": false,
            "description": "ignored keyword"
        });
        let value = json!({"x": 1.5, "n": 3, "tags": ["a"], "kind": "b", "maybe": null, "inner": {"ok": true}});
        assert_eq!(validate(&schema, &value), Ok(()));
        assert_eq!(validate(&json!({"type": "integer"}), &json!(2.0)), Ok(()));
        assert_eq!(validate(&json!({"type": "number"}), &json!(2)), Ok(()));
        assert_eq!(
            validate(&json!({"frobnicate": 1}), &json!("anything")),
            Ok(())
        );
        assert_eq!(validate(&json!(true), &json!([1])), Ok(()));
    }

    #[test]
    fn reports_type_mismatches_with_paths() {
        let schema = json!({"type": "object", "properties": {"x": {"type": "number"}}});
        assert_eq!(
            validate(&schema, &json!({"x": "1"})),
            Err("\"value.x\" must be a number".to_owned())
        );
        assert_eq!(
            validate(&schema, &json!([])),
            Err("\"value\" must be an object".to_owned())
        );
        let cases = [
            ("string", "a string"),
            ("integer", "an integer"),
            ("boolean", "a boolean"),
            ("object", "an object"),
            ("array", "an array"),
            ("null", "null"),
        ];
        for (name, described) in cases {
            assert_eq!(
                validate(&json!({"type": name}), &json!(1.5)),
                Err(format!("\"value\" must be {described}"))
            );
        }
        assert_eq!(
            validate(&json!({"type": ["string", "null"]}), &json!(1)),
            Err("\"value\" must be a string or null".to_owned())
        );
        let nested = json!({"items": {"properties": {"odd key": {"type": "string"}}}});
        assert_eq!(
            validate(&nested, &json!([{"odd key": "ok"}, {"odd key": 2}])),
            Err("\"value[1][\"odd key\"]\" must be a string".to_owned())
        );
    }

    #[test]
    fn reports_required_enum_and_additional_properties_together() {
        let schema = json!({
            "type": "object",
            "properties": {"x": {"type": "number"}, "kind": {"enum": ["a", "b"]}},
            "required": ["x", "y"],
            "additionalProperties": false
        });
        let err = validate(&schema, &json!({"kind": "c", "extra": 1})).unwrap_err();
        assert_eq!(
            err,
            "missing required property \"value.x\"; missing required property \"value.y\"; \
             \"value.kind\" must be one of \"a\", \"b\"; \
             \"value.extra\" is not an allowed property (additionalProperties is false)"
        );
        assert_eq!(
            validate(&json!(false), &json!(1)),
            Err("\"value\" is not allowed".to_owned())
        );
    }
}
