//! The `SessionEvent` envelope shared by the wire and the session log.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One session event: `{type, seq, time, data[, sourceEventSeqs][, surfaceOp][, ignorable]}`.
///
/// Field order is the official key order. There is no event id and no parent
/// field; parentage lives in the session header and `subagent.*`
/// notifications.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionEvent {
    /// Event type, e.g. `turn/start`.
    #[serde(rename = "type")]
    pub kind: String,
    /// 0-based position in the session log, contiguous per session.
    pub seq: u64,
    /// Append time in epoch milliseconds.
    pub time: u64,
    /// Type-specific payload (required, any JSON).
    pub data: Value,
    /// Seqs of earlier events this one cites (a `tool/result` cites its
    /// `tool/call`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_event_seqs: Option<Vec<u64>>,
    /// How a model-visible message joins the derived history (`"append"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surface_op: Option<Value>,
    /// Present (`true`) on records readers may skip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignorable: Option<bool>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_in_the_official_key_order() {
        let line = r#"{"type":"tool/result","seq":18,"time":1796008602383,"data":{"turn":1},"sourceEventSeqs":[15],"surfaceOp":"append"}"#;
        let event: SessionEvent = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(event.kind, "tool/result");
        assert_eq!(serde_json::to_string(&event).unwrap_or_default(), line);
    }

    #[test]
    fn unknown_envelope_keys_are_refused() {
        let line = r#"{"type":"x","seq":0,"time":0,"data":{},"id":"nope"}"#;
        assert!(serde_json::from_str::<SessionEvent>(line).is_err());
    }
}
