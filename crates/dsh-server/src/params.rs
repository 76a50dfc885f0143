//! Field readers for request params. Handlers read fields without coercion,
//! each check with its own message.

use dsh_protocol::JsonObject;
use serde_json::Value;

/// `params[key]` if it is a non-empty string.
pub fn non_empty_string<'a>(params: &'a JsonObject, key: &str) -> Option<&'a str> {
    match params.get(key) {
        Some(Value::String(s)) if !s.is_empty() => Some(s),
        _ => None,
    }
}

/// `params[key]` if it is a string (possibly empty).
pub fn string<'a>(params: &'a JsonObject, key: &str) -> Option<&'a str> {
    params.get(key).and_then(Value::as_str)
}

/// Largest integer a JSON number can carry exactly (`2^53 − 1`).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A positive safe integer (1 … 2^53−1), as JavaScript defines it.
pub fn positive_safe_integer(value: &Value) -> Option<u64> {
    let n = value.as_number()?;
    let int = match (n.as_u64(), n.as_f64()) {
        (Some(u), _) => u,
        (None, Some(f)) if f.fract() == 0.0 && f >= 1.0 && f <= MAX_SAFE_INTEGER as f64 => f as u64,
        _ => return None,
    };
    (1..=MAX_SAFE_INTEGER).contains(&int).then_some(int)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn safe_integers_follow_javascript() {
        assert_eq!(positive_safe_integer(&json!(1000)), Some(1000));
        assert_eq!(positive_safe_integer(&json!(64.0)), Some(64));
        assert_eq!(positive_safe_integer(&json!(0)), None);
        assert_eq!(positive_safe_integer(&json!(-3)), None);
        assert_eq!(positive_safe_integer(&json!(1.5)), None);
        assert_eq!(positive_safe_integer(&json!(9007199254740992u64)), None);
        assert_eq!(positive_safe_integer(&json!("12")), None);
    }
}
