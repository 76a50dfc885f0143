use serde::{Deserialize, Serialize};
use std::fmt;

/// A JSON-RPC request id: a string or a number, echoed back verbatim with its
/// JSON type (`7` stays a number, `"7"` stays a string).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A string id, as the Python SDK sends (`str(uuid4())`).
    Str(String),
    /// A numeric id, kept as the parsed JSON number.
    Num(serde_json::Number),
}

impl RequestId {
    /// Reads an id from a JSON value; only strings and numbers are ids.
    pub fn from_value(value: &serde_json::Value) -> Option<Self> {
        match value {
            serde_json::Value::String(s) => Some(Self::Str(s.clone())),
            serde_json::Value::Number(n) => Some(Self::Num(n.clone())),
            _ => None,
        }
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Str(s) => f.write_str(s),
            Self::Num(n) => write!(f, "{n}"),
        }
    }
}
