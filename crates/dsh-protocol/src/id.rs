use serde::{Deserialize, Serialize};
use serde_json::Number;
use std::fmt;

/// A JSON-RPC request id: a string or a number, echoed back with its JSON
/// type (`7` stays a number, `"7"` stays a string).
///
/// Numbers are echoed the way the official (JavaScript) runtime re-writes
/// them: an integral value is written without a fraction (`1.0` → `1`,
/// `1e2` → `100`, `-0` → `0`), an integer beyond 2^53 as the nearest
/// double (`12345678901234567` → `12345678901234568`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A string id, as the Python SDK sends (`str(uuid4())`).
    Str(String),
    /// A numeric id, kept as the parsed JSON number.
    Num(Number),
    /// A number beyond the `f64` range (`1e400`): JavaScript reads
    /// ±Infinity and writes it back as `null`, so it is echoed as `null`.
    #[serde(skip_deserializing)]
    NonFinite,
}

/// 2^53: above it, not every integer is a double.
const EXACT_LIMIT: f64 = 9_007_199_254_740_992.0;

impl RequestId {
    /// Reads an id from a JSON value; only strings and numbers are ids.
    pub fn from_value(value: &serde_json::Value) -> Option<Self> {
        match value {
            serde_json::Value::String(s) => Some(Self::Str(s.clone())),
            serde_json::Value::Number(n) => Some(Self::Num(as_javascript(n))),
            _ => None,
        }
    }
}

/// `n` as JavaScript would write it back, where that differs from
/// serde_json's rendering and is still an integer it can hold.
fn as_javascript(n: &Number) -> Number {
    let Some(f) = n.as_f64() else {
        return n.clone();
    };
    let integral = f.fract() == 0.0;
    if n.is_f64() && integral && f.abs() < EXACT_LIMIT {
        // Exact: |f| < 2^53 fits an i64 without loss.
        return Number::from(f as i64);
    }
    if integral && f.abs() >= EXACT_LIMIT {
        // JavaScript writes the shortest digits that read back as `f`,
        // padded with zeros (below 1e21).
        if let Some(n) = shortest_integer(f) {
            return n;
        }
    }
    n.clone()
}

/// The integer JavaScript prints for an integral double `f`, when it fits
/// an i64 or u64.
fn shortest_integer(f: f64) -> Option<Number> {
    let scientific = format!("{f:e}"); // shortest round-trip digits
    let (mantissa, exponent) = scientific.split_once('e')?;
    let exponent: usize = exponent.parse().ok()?;
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let zeros = (exponent + 1).checked_sub(digits.len())?;
    let text = format!(
        "{}{digits}{}",
        if negative { "-" } else { "" },
        "0".repeat(zeros)
    );
    if negative {
        text.parse::<i64>().ok().map(Number::from)
    } else {
        text.parse::<u64>().ok().map(Number::from)
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Str(s) => f.write_str(s),
            Self::Num(n) => write!(f, "{n}"),
            Self::NonFinite => f.write_str("null"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn echoed(json: &str) -> String {
        let value: serde_json::Value = serde_json::from_str(json).unwrap_or_default();
        RequestId::from_value(&value)
            .and_then(|id| serde_json::to_string(&id).ok())
            .unwrap_or_default()
    }

    #[test]
    fn numbers_are_echoed_as_javascript_writes_them() {
        // Measured against the official runtime.
        for (sent, echoed_back) in [
            ("7", "7"),
            ("9.5", "9.5"),
            ("1.0", "1"),
            ("1e2", "100"),
            ("-0", "0"),
            ("-0.0", "0"),
            ("12345678901234567890123", "1.2345678901234568e+22"),
            ("12345678901234567", "12345678901234568"),
            ("-12345678901234567", "-12345678901234568"),
            ("9007199254740993", "9007199254740992"),
            ("\"s\"", "\"s\""),
        ] {
            assert_eq!(echoed(sent), echoed_back, "{sent}");
        }
        assert_eq!(
            serde_json::to_string(&RequestId::NonFinite).ok().as_deref(),
            Some("null")
        );
    }
}
