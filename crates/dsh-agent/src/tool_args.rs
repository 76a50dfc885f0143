//! Argument checks of the goal and plan-mode tools, reported the way the
//! official runtime reports them: every missing required property (in
//! schema order), then every property of the wrong type (in property
//! order), joined by `; `. Unknown properties are ignored.

use dsh_protocol::catalog::ToolErrorCode;
use dsh_tools::ToolOutput;
use serde_json::{Map, Value};

/// Arguments that do not fit the schema: the problems, as the model is
/// told them after `Error: invalid arguments: `.
#[derive(Debug, thiserror::Error)]
#[error("Error: invalid arguments: {0}")]
pub(crate) struct InvalidArgs(pub String);

impl From<InvalidArgs> for ToolOutput {
    fn from(err: InvalidArgs) -> Self {
        ToolOutput::failure(err.to_string()).with_error(ToolErrorCode::InvalidArgs)
    }
}

/// The type a property must have.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    /// A string.
    Text,
    /// A JSON number.
    Number,
    /// One of these strings.
    OneOf(&'static [&'static str]),
}

/// One property of a tool's schema.
pub(crate) struct Property {
    /// Its name.
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// Whether it must be given.
    pub required: bool,
}

/// A call's argument text, `{}` when it is empty or blank (a model may
/// send nothing for a call without arguments).
pub(crate) fn or_empty_object(arguments: &str) -> &str {
    if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    }
}

/// The arguments of a call as an object whose properties have their
/// schema types (an empty text is `{}`).
pub(crate) fn check(
    arguments: &str,
    properties: &[Property],
) -> Result<Map<String, Value>, InvalidArgs> {
    let object = match serde_json::from_str::<Value>(or_empty_object(arguments)) {
        Ok(Value::Object(object)) => object,
        _ => {
            return Err(InvalidArgs(
                "the arguments must be a JSON object".to_owned(),
            ));
        }
    };
    let mut problems: Vec<String> = properties
        .iter()
        .filter(|p| p.required && !object.contains_key(p.name))
        .map(|p| format!("missing required property \"{}\"", p.name))
        .collect();
    for property in properties {
        let Some(value) = object.get(property.name) else {
            continue;
        };
        let problem = match property.kind {
            Kind::Text if !value.is_string() => Some("must be a string".to_owned()),
            Kind::Number if !value.is_number() => Some("must be a number".to_owned()),
            Kind::OneOf(options) if !value.as_str().is_some_and(|v| options.contains(&v)) => {
                let list = serde_json::to_string(options).unwrap_or_default();
                Some(format!("must be one of {list}"))
            }
            _ => None,
        };
        if let Some(problem) = problem {
            problems.push(format!("\"{}\" {problem}", property.name));
        }
    }
    if problems.is_empty() {
        Ok(object)
    } else {
        Err(InvalidArgs(problems.join("; ")))
    }
}

/// The string property `name` of checked arguments.
pub(crate) fn text<'a>(object: &'a Map<String, Value>, name: &str) -> Option<&'a str> {
    object.get(name).and_then(Value::as_str)
}

/// The number property `name` of checked arguments.
pub(crate) fn number(object: &Map<String, Value>, name: &str) -> Option<f64> {
    object.get(name).and_then(Value::as_f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACTIONS: &[&str] = &["edit", "pause"];
    const UPDATE: &[Property] = &[
        Property {
            name: "goal_id",
            kind: Kind::Text,
            required: true,
        },
        Property {
            name: "revision",
            kind: Kind::Number,
            required: true,
        },
        Property {
            name: "action",
            kind: Kind::OneOf(ACTIONS),
            required: true,
        },
    ];

    fn problem(arguments: &str) -> String {
        match check(arguments, UPDATE) {
            Ok(_) => "ok".to_owned(),
            Err(err) => err.to_string(),
        }
    }

    #[test]
    fn missing_properties_come_first_then_types_in_order() {
        assert_eq!(
            problem(r#"{"revision":"x","action":"zzz"}"#),
            r#"Error: invalid arguments: missing required property "goal_id"; "revision" must be a number; "action" must be one of ["edit","pause"]"#
        );
        assert_eq!(
            problem(r#"{"goal_id":null,"revision":1,"action":"edit","extra":1}"#),
            r#"Error: invalid arguments: "goal_id" must be a string"#
        );
        assert_eq!(
            problem(r#"{"goal_id":"g","revision":1.0,"action":"edit"}"#),
            "ok"
        );
        assert!(problem("[1]").contains("must be a JSON object"));
        assert!(problem("").contains("missing required property \"goal_id\""));
    }
}
