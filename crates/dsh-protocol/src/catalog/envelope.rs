//! The one event envelope ([`SessionEvent`]) and the one draft
//! ([`EventDraft`]).

use super::{Event, EventPayload};
use schemars::JsonSchema;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// One session event: `{type, seq, time, data[, sourceEventSeqs][,
/// surfaceOp][, ignorable]}`, in the official key order, on the wire and in
/// the log alike. `data` is raw JSON as read ([`typed`](Self::typed) gives
/// the [`Event`]); a writer serialises a borrowed payload
/// (`SessionEvent<&D>`).
///
/// There is no event id and no parent field; parentage lives in the
/// session header and `subagent.*` notifications.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionEvent<D = Value> {
    /// Event type, e.g. `turn/start`.
    #[serde(rename = "type")]
    pub kind: String,
    /// 0-based position in the session log, contiguous per session.
    pub seq: u64,
    /// Append time in epoch milliseconds.
    pub time: u64,
    /// Type-specific payload.
    #[schemars(
        description = "Type-specific payload: the protocol schema's `events` gives the schema of each `type`'s."
    )]
    pub data: D,
    /// Seqs of earlier events this one cites (a `tool/result` cites its
    /// `tool/call`). Read both as a plain list and with runs stored as
    /// nested `[start, end]` pairs (inclusive; §8.3), which are expanded:
    /// this is always the plain list, the form this runtime writes.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "expand_runs"
    )]
    pub source_event_seqs: Option<Vec<u64>>,
    /// How a model-visible message joins the derived history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surface_op: Option<SurfaceOp>,
    /// Present (`true`) on records readers may skip.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ignorable: Option<bool>,
}

impl SessionEvent {
    /// The typed payload (see [`Event::parse`]).
    pub fn typed(&self) -> Result<Event, serde_json::Error> {
        Event::parse(&self.kind, &self.data)
    }
}

impl<D: Serialize> SessionEvent<D> {
    /// The same event with its payload as raw JSON, as a reader holds it.
    pub fn to_raw(&self) -> Result<SessionEvent, serde_json::Error> {
        Ok(SessionEvent {
            kind: self.kind.clone(),
            seq: self.seq,
            time: self.time,
            data: serde_json::to_value(&self.data)?,
            source_event_seqs: self.source_event_seqs.clone(),
            surface_op: self.surface_op.clone(),
            ignorable: self.ignorable,
        })
    }
}

/// One `sourceEventSeqs` entry.
#[derive(Deserialize)]
#[serde(untagged)]
enum SeqEntry {
    One(u64),
    Run(u64, u64),
}

fn expand_runs<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Vec<u64>>, D::Error> {
    let Some(entries) = Option::<Vec<SeqEntry>>::deserialize(deserializer)? else {
        return Ok(None);
    };
    let mut seqs = Vec::with_capacity(entries.len());
    for entry in entries {
        match entry {
            SeqEntry::One(seq) => seqs.push(seq),
            SeqEntry::Run(start, end) if start <= end => seqs.extend(start..=end),
            SeqEntry::Run(start, end) => {
                return Err(D::Error::custom(format!(
                    "bad sourceEventSeqs run [{start},{end}]"
                )));
            }
        }
    }
    Ok(Some(seqs))
}

/// `surfaceOp`: how a message event changes the model-visible history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SurfaceOp {
    /// `"append"`: the message joins the end.
    Append(AppendOp),
    /// `{"op":"replace","startSeq":a,"endSeq":b}`: the message replaces the
    /// entries added by events `a..=b`.
    Range(RangeOp),
    /// A shape this runtime does not know.
    Other(Value),
}

impl SurfaceOp {
    /// `"append"`.
    pub const APPEND: Self = Self::Append(AppendOp::Append);
}

/// The literal `"append"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AppendOp {
    /// `"append"`.
    #[serde(rename = "append")]
    Append,
}

/// An operation over a range of seqs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "op")]
pub enum RangeOp {
    /// `{"op":"replace","startSeq":a,"endSeq":b}`.
    #[serde(rename = "replace", rename_all = "camelCase")]
    Replace {
        /// First replaced seq.
        start_seq: u64,
        /// Last replaced seq (inclusive).
        end_seq: u64,
    },
}

/// The `ignorable` flag an event of type `kind` is written with: `true`
/// for dsh's own types (`dsh/…`), which the official runtime's reader then
/// skips; absent otherwise.
pub fn ignorable(kind: &str) -> Option<bool> {
    kind.starts_with("dsh/").then_some(true)
}

/// An event before the log has given it a `seq` (and, usually, a `time`).
#[derive(Debug, Clone, PartialEq)]
pub struct EventDraft<D> {
    /// The payload; its type is the event's.
    pub data: D,
    /// Cited seqs (`tool/result` → its `tool/call`).
    pub source_event_seqs: Option<Vec<u64>>,
    /// `surfaceOp` (model-visible messages).
    pub surface_op: Option<SurfaceOp>,
    /// The `time` the event must carry; the append time when `None`.
    pub time: Option<u64>,
}

impl<D: EventPayload> EventDraft<D> {
    /// A plain event.
    pub fn new(data: D) -> Self {
        Self {
            data,
            source_event_seqs: None,
            surface_op: None,
            time: None,
        }
    }

    /// A model-visible message event (`surfaceOp: "append"`).
    pub fn surfaced(data: D) -> Self {
        Self {
            surface_op: Some(SurfaceOp::APPEND),
            ..Self::new(data)
        }
    }

    /// A model-visible message that replaces the history entries added by
    /// events `start_seq..=end_seq` (`surfaceOp: {"op":"replace",…}`).
    pub fn replacing(data: D, start_seq: u64, end_seq: u64) -> Self {
        Self {
            surface_op: Some(SurfaceOp::Range(RangeOp::Replace { start_seq, end_seq })),
            ..Self::new(data)
        }
    }

    /// The same draft citing `seqs` (none when empty).
    pub fn citing(mut self, seqs: Vec<u64>) -> Self {
        self.source_event_seqs = (!seqs.is_empty()).then_some(seqs);
        self
    }

    /// The same draft carrying `time`.
    pub fn at(mut self, time: u64) -> Self {
        self.time = Some(time);
        self
    }

    /// The event type.
    pub fn kind(&self) -> &str {
        self.data.kind()
    }

    /// The event at `seq`, at the draft's time or else `time`.
    pub fn into_event(self, seq: u64, time: u64) -> SessionEvent<D> {
        let ignorable = ignorable(self.data.kind());
        SessionEvent {
            kind: self.data.kind().to_owned(),
            seq,
            time: self.time.unwrap_or(time),
            data: self.data,
            source_event_seqs: self.source_event_seqs,
            surface_op: self.surface_op,
            ignorable,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_in_the_official_key_order() {
        let line = r#"{"type":"tool/result","seq":18,"time":1796008602383,"data":{"turn":1},"sourceEventSeqs":[15],"surfaceOp":"append"}"#;
        let event: SessionEvent = serde_json::from_str(line).unwrap();
        assert_eq!(event.kind, "tool/result");
        assert_eq!(event.surface_op, Some(SurfaceOp::APPEND));
        assert_eq!(serde_json::to_string(&event).unwrap(), line);
        let replace = r#"{"type":"user/message","seq":9,"time":1,"data":{},"surfaceOp":{"op":"replace","startSeq":2,"endSeq":5}}"#;
        let event: SessionEvent = serde_json::from_str(replace).unwrap();
        let range = RangeOp::Replace {
            start_seq: 2,
            end_seq: 5,
        };
        assert_eq!(event.surface_op, Some(SurfaceOp::Range(range)));
        assert_eq!(serde_json::to_string(&event).unwrap(), replace);
    }

    #[test]
    fn unknown_envelope_keys_are_refused() {
        let line = r#"{"type":"x","seq":0,"time":0,"data":{},"id":"nope"}"#;
        assert!(serde_json::from_str::<SessionEvent>(line).is_err());
    }

    #[test]
    fn seq_runs_are_expanded_and_checked() {
        let line = r#"{"type":"x","seq":9,"time":0,"data":{},"sourceEventSeqs":[1,[3,5],7]}"#;
        let event: SessionEvent = serde_json::from_str(line).unwrap();
        assert_eq!(event.source_event_seqs, Some(vec![1, 3, 4, 5, 7]));
        let backwards = r#"{"type":"x","seq":9,"time":0,"data":{},"sourceEventSeqs":[[5,3]]}"#;
        assert!(serde_json::from_str::<SessionEvent>(backwards).is_err());
    }
}
