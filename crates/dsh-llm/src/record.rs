use crate::StreamChunk;
use serde::Serialize;

/// One record of the durable `stream` array.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
enum Record {
    Chunk {
        time: u64,
        chunk: StreamChunk,
    },
    TextChunks(Deltas),
    ReasoningChunks(Deltas),
    ToolCallChunks {
        time0: u64,
        index: u32,
        dt: Vec<u64>,
        id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        args: Vec<String>,
        #[serde(skip)]
        last: u64,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize)]
struct Deltas {
    time0: u64,
    index: u32,
    dt: Vec<u64>,
    texts: Vec<String>,
    #[serde(skip)]
    last: u64,
}

impl Deltas {
    fn new(time: u64, index: u32, text: String) -> Self {
        Self {
            time0: time,
            index,
            dt: Vec::new(),
            texts: vec![text],
            last: time,
        }
    }

    fn push(&mut self, time: u64, text: String) {
        self.dt.push(time.saturating_sub(self.last));
        self.last = time;
        self.texts.push(text);
    }
}

/// Builds the compact `stream` array of `assistant/message` and
/// `assistant/attempt` from timestamped chunks.
///
/// Runs of same-index text or reasoning deltas become one
/// `text-chunks`/`reasoning-chunks` record with millisecond gaps in `dt`;
/// tool-call deltas become `tool-call-chunks` records (a delta carrying the
/// tool name starts a new record); every other chunk is kept as a
/// `{"type":"chunk","time","chunk"}` record.
///
/// It serialises as the array itself, so the records reach an event without
/// being copied into a `Value` first.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct StreamRecorder {
    records: Vec<Record>,
}

impl StreamRecorder {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records one chunk received at `time` (epoch ms). The chunk is kept,
    /// not copied: its text moves into the record.
    pub fn push(&mut self, time: u64, chunk: StreamChunk) {
        match chunk {
            StreamChunk::TextDelta { index, text } => match self.records.last_mut() {
                Some(Record::TextChunks(d)) if d.index == index => d.push(time, text),
                _ => self
                    .records
                    .push(Record::TextChunks(Deltas::new(time, index, text))),
            },
            StreamChunk::ReasoningDelta { index, text } => match self.records.last_mut() {
                Some(Record::ReasoningChunks(d)) if d.index == index => d.push(time, text),
                _ => self
                    .records
                    .push(Record::ReasoningChunks(Deltas::new(time, index, text))),
            },
            StreamChunk::ToolCallDelta {
                index,
                id,
                name,
                arguments_delta,
            } => {
                if name.is_none()
                    && let Some(Record::ToolCallChunks {
                        index: i,
                        id: last_id,
                        name: None,
                        dt,
                        args,
                        last,
                        ..
                    }) = self.records.last_mut()
                    && *i == index
                    && *last_id == id
                {
                    dt.push(time.saturating_sub(*last));
                    *last = time;
                    args.push(arguments_delta);
                    return;
                }
                self.records.push(Record::ToolCallChunks {
                    time0: time,
                    index,
                    dt: Vec::new(),
                    id,
                    name,
                    args: vec![arguments_delta],
                    last: time,
                });
            }
            other => self.records.push(Record::Chunk { time, chunk: other }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlockType, FinishReason};
    use serde_json::json;

    #[test]
    fn compresses_like_the_official_stream_array() {
        let mut r = StreamRecorder::new();
        r.push(
            10,
            StreamChunk::BlockStart {
                index: 0,
                block_type: BlockType::Text,
            },
        );
        r.push(
            10,
            StreamChunk::TextDelta {
                index: 0,
                text: "Hel".into(),
            },
        );
        r.push(
            11,
            StreamChunk::TextDelta {
                index: 0,
                text: "lo".into(),
            },
        );
        r.push(
            11,
            StreamChunk::TextDelta {
                index: 0,
                text: "!".into(),
            },
        );
        r.push(
            12,
            StreamChunk::BlockEnd {
                index: 0,
                block: json!({"type":"text","text":"Hello!"}),
            },
        );
        r.push(
            12,
            StreamChunk::BlockStart {
                index: 1,
                block_type: BlockType::ToolCall,
            },
        );
        let delta = |name: Option<&str>, args: &str| StreamChunk::ToolCallDelta {
            index: 1,
            id: "c1".into(),
            name: name.map(Into::into),
            arguments_delta: args.into(),
        };
        r.push(12, delta(Some("bash"), ""));
        r.push(12, delta(None, "{\"a\""));
        r.push(13, delta(None, ":1}"));
        r.push(
            13,
            StreamChunk::Finish {
                reason: FinishReason::ToolCalls,
                replay_state: None,
            },
        );
        assert_eq!(
            serde_json::to_value(&r).unwrap_or_default(),
            json!([
                {"type":"chunk","time":10,"chunk":{"type":"block-start","index":0,"blockType":"text"}},
                {"type":"text-chunks","time0":10,"index":0,"dt":[1,0],"texts":["Hel","lo","!"]},
                {"type":"chunk","time":12,"chunk":{"type":"block-end","index":0,"block":{"type":"text","text":"Hello!"}}},
                {"type":"chunk","time":12,"chunk":{"type":"block-start","index":1,"blockType":"tool-call"}},
                {"type":"tool-call-chunks","time0":12,"index":1,"dt":[],"id":"c1","name":"bash","args":[""]},
                {"type":"tool-call-chunks","time0":12,"index":1,"dt":[1],"id":"c1","args":["{\"a\"",":1}"]},
                {"type":"chunk","time":13,"chunk":{"type":"finish","reason":{"kind":"tool-calls"}}}
            ])
        );
    }
}
