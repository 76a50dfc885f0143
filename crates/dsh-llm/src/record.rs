use crate::StreamChunk;
use serde::ser::{Error as _, SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};
use serde_json::Value;

/// One record of the durable `stream` array.
#[derive(Debug, Clone, PartialEq)]
enum Record {
    /// `{"type":"chunk","time","chunk"}`: any chunk but a delta.
    Chunk { time: u64, chunk: StreamChunk },
    /// `{"type":"text-chunks","time0","index","dt","texts"}`.
    TextChunks(Deltas),
    /// `{"type":"reasoning-chunks","time0","index","dt","texts"}`.
    ReasoningChunks(Deltas),
    /// `{"type":"tool-call-chunks","time0","index","dt","id","name"?,"args"}`.
    ToolCallChunks {
        id: String,
        name: Option<String>,
        deltas: Deltas,
    },
}

/// The kind of a delta record, matched against the type of a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Reasoning,
    ToolCall,
}

impl Record {
    /// The deltas of a `kind` record of block `index`.
    fn deltas_mut(&mut self, kind: Kind, index: u32) -> Option<&mut Deltas> {
        let (k, d) = match self {
            Self::Chunk { .. } => return None,
            Self::TextChunks(d) => (Kind::Text, d),
            Self::ReasoningChunks(d) => (Kind::Reasoning, d),
            Self::ToolCallChunks { deltas, .. } => (Kind::ToolCall, deltas),
        };
        (k == kind && d.index == index).then_some(d)
    }
}

/// A run of same-index deltas with their millisecond gaps.
#[derive(Debug, Clone, PartialEq)]
struct Deltas {
    time0: u64,
    index: u32,
    dt: Vec<u64>,
    texts: Texts,
    last: u64,
}

/// The delta strings of one record.
#[derive(Debug, Clone, PartialEq)]
enum Texts {
    /// The strings as received.
    Owned(Vec<String>),
    /// The strings, dropped once their block ended with exactly their
    /// concatenation: consecutive slices of `lens` bytes of the block text
    /// kept by the `block-end` record `records[end]`, from byte `start`.
    Slices {
        end: usize,
        start: usize,
        lens: Vec<usize>,
    },
}

impl Deltas {
    fn new(time: u64, index: u32, text: String) -> Self {
        Self {
            time0: time,
            index,
            dt: Vec::new(),
            texts: Texts::Owned(vec![text]),
            last: time,
        }
    }

    /// Whether a delta of block `index` continues this run: same index and
    /// its strings still owned (a compacted run is always followed by its
    /// `block-end` record, so this is a safeguard).
    fn continues(&self, index: u32) -> bool {
        self.index == index && matches!(self.texts, Texts::Owned(_))
    }

    fn push(&mut self, time: u64, text: String) {
        if let Texts::Owned(texts) = &mut self.texts {
            self.dt.push(time.saturating_sub(self.last));
            self.last = time;
            texts.push(text);
        }
    }
}

/// The text a content block carries and the kind of deltas that stream it:
/// `text` of a `text` or `reasoning` block, `arguments` of a `tool-call`.
fn block_text(block: &Value) -> Option<(Kind, &str)> {
    let (kind, field) = match block.get("type")?.as_str()? {
        "text" => (Kind::Text, "text"),
        "reasoning" => (Kind::Reasoning, "text"),
        "tool-call" => (Kind::ToolCall, "arguments"),
        _ => return None,
    };
    Some((kind, block.get(field)?.as_str()?))
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
/// A reply is held once, not twice: when a `block-end` chunk carries a block
/// whose text (`text`, or `arguments` of a tool call) is exactly the
/// concatenation of that block's deltas, the delta strings are dropped and
/// only their lengths kept; they serialise as slices of the block's text, so
/// the output is the same.
///
/// It serialises as the array itself, so the records reach an event without
/// being copied into a `Value` first.
#[derive(Debug, Default, Clone, PartialEq)]
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
    ///
    /// Returns the chunk as stored when it is kept whole (every chunk but a
    /// text, reasoning or tool-call delta), so that an [`Accumulator`]
    /// can read it without another copy; `None` for a delta.
    ///
    /// [`Accumulator`]: crate::Accumulator
    pub fn push(&mut self, time: u64, chunk: StreamChunk) -> Option<&StreamChunk> {
        self.record(time, chunk, true)
    }

    /// [`Self::push`], dropping the delta strings of a finished block only
    /// when `compact`.
    fn record(&mut self, time: u64, chunk: StreamChunk, compact: bool) -> Option<&StreamChunk> {
        match chunk {
            StreamChunk::TextDelta { index, text } => match self.records.last_mut() {
                Some(Record::TextChunks(d)) if d.continues(index) => d.push(time, text),
                _ => self
                    .records
                    .push(Record::TextChunks(Deltas::new(time, index, text))),
            },
            StreamChunk::ReasoningDelta { index, text } => match self.records.last_mut() {
                Some(Record::ReasoningChunks(d)) if d.continues(index) => d.push(time, text),
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
                        id: last_id,
                        name: None,
                        deltas,
                    }) = self.records.last_mut()
                    && deltas.continues(index)
                    && *last_id == id
                {
                    deltas.push(time, arguments_delta);
                } else {
                    self.records.push(Record::ToolCallChunks {
                        id,
                        name,
                        deltas: Deltas::new(time, index, arguments_delta),
                    });
                }
            }
            other => {
                if compact
                    && let StreamChunk::BlockEnd { index, block } = &other
                    && let Some((kind, text)) = block_text(block)
                {
                    self.compact(kind, *index, text);
                }
                self.records.push(Record::Chunk { time, chunk: other });
                return match self.records.last() {
                    Some(Record::Chunk { chunk, .. }) => Some(chunk),
                    _ => None,
                };
            }
        }
        None
    }

    /// Drops the strings of the `kind` delta records of block `index` when,
    /// in record order, they concatenate to exactly `text`, which the
    /// `block-end` record about to be pushed keeps.
    fn compact(&mut self, kind: Kind, index: u32, text: &str) {
        let end = self.records.len();
        let owned: Vec<&mut Deltas> = self
            .records
            .iter_mut()
            .filter_map(|r| r.deltas_mut(kind, index))
            .filter(|d| matches!(d.texts, Texts::Owned(_)))
            .collect();
        let mut pos = 0;
        for d in &owned {
            if let Texts::Owned(texts) = &d.texts {
                for s in texts {
                    // `pos <= text.len()` here, so the sum cannot overflow.
                    if text.get(pos..pos + s.len()) != Some(s.as_str()) {
                        return;
                    }
                    pos += s.len();
                }
            }
        }
        if pos != text.len() {
            return;
        }
        let mut start = 0;
        for d in owned {
            if let Texts::Owned(texts) = &d.texts {
                let lens: Vec<usize> = texts.iter().map(String::len).collect();
                let len: usize = lens.iter().sum();
                d.texts = Texts::Slices { end, start, lens };
                start += len;
            }
        }
    }

    /// Bytes of delta text recorded (owned or kept as slices): about what
    /// the records add to an event, twice over once their blocks ended.
    pub fn text_bytes(&self) -> usize {
        self.delta_bytes(true)
    }

    /// Bytes of delta text still owned (not yet dropped for a block end).
    #[cfg(test)]
    fn owned_delta_bytes(&self) -> usize {
        self.delta_bytes(false)
    }

    /// Bytes of delta text: owned, and kept as slices too when `slices`.
    fn delta_bytes(&self, slices: bool) -> usize {
        self.records
            .iter()
            .map(|r| match r {
                Record::Chunk { .. } => 0,
                Record::TextChunks(d)
                | Record::ReasoningChunks(d)
                | Record::ToolCallChunks { deltas: d, .. } => match &d.texts {
                    Texts::Owned(texts) => texts.iter().map(String::len).sum(),
                    Texts::Slices { lens, .. } if slices => lens.iter().sum(),
                    Texts::Slices { .. } => 0,
                },
            })
            .sum()
    }
}

impl Serialize for StreamRecorder {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.records.len()))?;
        for record in &self.records {
            seq.serialize_element(&InContext {
                value: record,
                records: &self.records,
            })?;
        }
        seq.end()
    }
}

/// A part of a recorder serialised with access to all its records, where
/// compacted delta strings are read from.
struct InContext<'a, T> {
    value: &'a T,
    records: &'a [Record],
}

impl Serialize for InContext<'_, Record> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (tag, deltas, tool) = match self.value {
            Record::Chunk { time, chunk } => {
                let mut s = serializer.serialize_struct("Record", 3)?;
                s.serialize_field("type", "chunk")?;
                s.serialize_field("time", time)?;
                s.serialize_field("chunk", chunk)?;
                return s.end();
            }
            Record::TextChunks(d) => ("text-chunks", d, None),
            Record::ReasoningChunks(d) => ("reasoning-chunks", d, None),
            Record::ToolCallChunks { id, name, deltas } => {
                ("tool-call-chunks", deltas, Some((id, name)))
            }
        };
        let len = match tool {
            None => 5,
            Some((_, None)) => 6,
            Some((_, Some(_))) => 7,
        };
        let texts = InContext {
            value: &deltas.texts,
            records: self.records,
        };
        let mut s = serializer.serialize_struct("Record", len)?;
        s.serialize_field("type", tag)?;
        s.serialize_field("time0", &deltas.time0)?;
        s.serialize_field("index", &deltas.index)?;
        s.serialize_field("dt", &deltas.dt)?;
        match tool {
            None => s.serialize_field("texts", &texts)?,
            Some((id, name)) => {
                s.serialize_field("id", id)?;
                match name {
                    Some(name) => s.serialize_field("name", name)?,
                    None => s.skip_field("name")?,
                }
                s.serialize_field("args", &texts)?;
            }
        }
        s.end()
    }
}

impl Serialize for InContext<'_, Texts> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (end, start, lens) = match self.value {
            Texts::Owned(texts) => return texts.serialize(serializer),
            Texts::Slices { end, start, lens } => (*end, *start, lens),
        };
        let text = match self.records.get(end) {
            Some(Record::Chunk {
                chunk: StreamChunk::BlockEnd { block, .. },
                ..
            }) => block_text(block).map(|(_, text)| text),
            _ => None,
        }
        .ok_or_else(|| S::Error::custom("stream record: compacted deltas lost their block"))?;
        let mut seq = serializer.serialize_seq(Some(lens.len()))?;
        let mut pos = start;
        for len in lens {
            let slice = pos
                .checked_add(*len)
                .and_then(|next| text.get(pos..next))
                .ok_or_else(|| S::Error::custom("stream record: delta outside its block"))?;
            seq.serialize_element(slice)?;
            pos += len;
        }
        seq.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlockType, FinishReason};
    use proptest::prelude::*;
    use proptest::sample::Index;
    use serde_json::json;

    fn text(index: u32, text: &str) -> StreamChunk {
        StreamChunk::TextDelta {
            index,
            text: text.into(),
        }
    }

    fn reasoning(index: u32, text: &str) -> StreamChunk {
        StreamChunk::ReasoningDelta {
            index,
            text: text.into(),
        }
    }

    fn call(index: u32, name: Option<&str>, args: &str) -> StreamChunk {
        StreamChunk::ToolCallDelta {
            index,
            id: format!("c{index}"),
            name: name.map(Into::into),
            arguments_delta: args.into(),
        }
    }

    fn end(index: u32, block: Value) -> StreamChunk {
        StreamChunk::BlockEnd { index, block }
    }

    /// Feeds `chunks` (times 1, 2, …) to a compacting recorder and to one
    /// that never compacts.
    fn both(chunks: &[StreamChunk]) -> (StreamRecorder, StreamRecorder) {
        let mut compacted = StreamRecorder::new();
        let mut kept = StreamRecorder::new();
        for (time, chunk) in (1..).zip(chunks) {
            compacted.push(time, chunk.clone());
            kept.record(time, chunk.clone(), false);
        }
        (compacted, kept)
    }

    fn to_string(r: &StreamRecorder) -> String {
        serde_json::to_string(r).unwrap_or_default()
    }

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

    #[test]
    fn block_end_drops_matching_delta_strings_and_serialises_the_same() {
        let chunks = [
            reasoning(0, "Thé "),
            reasoning(0, "日本"),
            reasoning(0, ""),
            reasoning(0, "?"),
            end(0, json!({"type":"reasoning","text":"Thé 日本?"})),
            text(1, "Caf"),
            text(1, "é "),
            text(1, "日"),
            text(1, "本\n\"q\""),
            end(1, json!({"type":"text","text":"Café 日本\n\"q\""})),
            call(2, Some("bash"), "{\"c\""),
            call(2, None, ":\"é"),
            call(2, None, "日本\"}"),
            end(
                2,
                json!({"type":"tool-call","id":"c2","name":"bash","arguments":"{\"c\":\"é日本\"}"}),
            ),
            StreamChunk::Finish {
                reason: FinishReason::ToolCalls,
                replay_state: None,
            },
        ];
        let (compacted, kept) = both(&chunks);
        let expected = serde_json::to_string(&json!([
            {"type":"reasoning-chunks","time0":1,"index":0,"dt":[1,1,1],"texts":["Thé ","日本","","?"]},
            {"type":"chunk","time":5,"chunk":{"type":"block-end","index":0,"block":{"type":"reasoning","text":"Thé 日本?"}}},
            {"type":"text-chunks","time0":6,"index":1,"dt":[1,1,1],"texts":["Caf","é ","日","本\n\"q\""]},
            {"type":"chunk","time":10,"chunk":{"type":"block-end","index":1,"block":{"type":"text","text":"Café 日本\n\"q\""}}},
            {"type":"tool-call-chunks","time0":11,"index":2,"dt":[],"id":"c2","name":"bash","args":["{\"c\""]},
            {"type":"tool-call-chunks","time0":12,"index":2,"dt":[1],"id":"c2","args":[":\"é","日本\"}"]},
            {"type":"chunk","time":14,"chunk":{"type":"block-end","index":2,"block":{"type":"tool-call","id":"c2","name":"bash","arguments":"{\"c\":\"é日本\"}"}}},
            {"type":"chunk","time":15,"chunk":{"type":"finish","reason":{"kind":"tool-calls"}}}
        ]))
        .unwrap_or_default();
        assert_eq!(to_string(&compacted), expected);
        assert_eq!(to_string(&kept), expected);
        assert_eq!(compacted.owned_delta_bytes(), 0);
        assert!(kept.owned_delta_bytes() > 0);
    }

    #[test]
    fn compacts_each_block_as_it_ends() {
        let mut r = StreamRecorder::new();
        r.push(1, text(0, "ab"));
        r.push(2, call(1, Some("t"), "x"));
        r.push(3, end(0, json!({"type":"text","text":"ab"})));
        assert_eq!(r.owned_delta_bytes(), 1);
        r.push(4, call(1, None, "y"));
        r.push(
            5,
            end(
                1,
                json!({"type":"tool-call","id":"c1","name":"t","arguments":"xy"}),
            ),
        );
        assert_eq!(r.owned_delta_bytes(), 0);
    }

    #[test]
    fn block_text_unlike_the_deltas_keeps_them() {
        let cases = [
            json!({"type":"text","text":"Hello?"}),
            json!({"type":"text","text":"Hello"}),
            json!({"type":"text","text":"Hello!!"}),
            json!({"type":"text"}),
            json!({"type":"reasoning","text":"Hello!"}),
            json!({"type":"tool-call","id":"c0","name":"t","arguments":"Hello!"}),
            json!({"type":"tool-call","id":"c0","name":"t","arguments":{"a":1}}),
        ];
        for block in cases {
            let chunks = [
                text(0, "Hel"),
                text(0, "lo"),
                text(0, "!"),
                end(0, block.clone()),
            ];
            let (compacted, kept) = both(&chunks);
            assert_eq!(compacted.owned_delta_bytes(), 6, "{block}");
            assert_eq!(compacted, kept);
            let expected = serde_json::to_string(&json!([
                {"type":"text-chunks","time0":1,"index":0,"dt":[1,1],"texts":["Hel","lo","!"]},
                {"type":"chunk","time":4,"chunk":{"type":"block-end","index":0,"block":block}}
            ]))
            .unwrap_or_default();
            assert_eq!(to_string(&compacted), expected);
        }
    }

    #[test]
    fn push_returns_whole_chunks_only() {
        let mut r = StreamRecorder::new();
        assert_eq!(r.push(1, text(0, "a")), None);
        assert_eq!(r.push(1, reasoning(1, "a")), None);
        assert_eq!(r.push(1, call(2, Some("t"), "a")), None);
        let block = end(0, json!({"type":"text","text":"a"}));
        assert_eq!(r.push(2, block.clone()), Some(&block));
    }

    /// Cuts `text` at the char boundaries `cuts` pick (repeats give empty
    /// pieces).
    fn split(text: &str, cuts: &[Index]) -> Vec<String> {
        let bounds: Vec<usize> = text
            .char_indices()
            .map(|(i, _)| i)
            .chain([text.len()])
            .collect();
        let mut at: Vec<usize> = cuts.iter().map(|c| *c.get(&bounds)).collect();
        at.sort_unstable();
        let mut pieces = Vec::new();
        let mut from = 0;
        for to in at.into_iter().chain([text.len()]) {
            pieces.push(text[from..to].to_owned());
            from = to;
        }
        pieces
    }

    fn any_text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                Just('é'),
                Just('日'),
                Just('"'),
                Just('\\'),
                Just('🦀'),
                any::<char>()
            ],
            0..24,
        )
        .prop_map(String::from_iter)
    }

    proptest! {
        #[test]
        fn compaction_never_changes_the_serialisation(
            prose in any_text(),
            args in any_text(),
            prose_cuts in prop::collection::vec(any::<Index>(), 0..6),
            args_cuts in prop::collection::vec(any::<Index>(), 0..6),
            order in prop::collection::vec(any::<bool>(), 0..16),
            reasoning_block in any::<bool>(),
        ) {
            // Deltas of a text or reasoning block 0 and a tool call 1,
            // interleaved as `order` says, then both block ends.
            let mut prose_pieces = split(&prose, &prose_cuts).into_iter();
            let mut args_pieces = split(&args, &args_cuts).into_iter().enumerate();
            let mut chunks = Vec::new();
            let mut order = order.into_iter();
            loop {
                let args_next = order.next().unwrap_or(true);
                let chunk = if args_next {
                    args_pieces
                        .next()
                        .map(|(i, a)| call(1, (i == 0).then_some("tool"), &a))
                } else {
                    None
                };
                let chunk = chunk.or_else(|| {
                    prose_pieces.next().map(|p| {
                        if reasoning_block { reasoning(0, &p) } else { text(0, &p) }
                    })
                });
                let chunk = chunk.or_else(|| {
                    args_pieces
                        .next()
                        .map(|(i, a)| call(1, (i == 0).then_some("tool"), &a))
                });
                match chunk {
                    Some(chunk) => chunks.push(chunk),
                    None => break,
                }
            }
            let kind = if reasoning_block { "reasoning" } else { "text" };
            chunks.push(end(0, json!({"type":kind,"text":prose})));
            chunks.push(end(
                1,
                json!({"type":"tool-call","id":"c1","name":"tool","arguments":args}),
            ));
            let (compacted, kept) = both(&chunks);
            prop_assert_eq!(to_string(&compacted), to_string(&kept));
            prop_assert_eq!(compacted.owned_delta_bytes(), 0);
            prop_assert_eq!(kept.owned_delta_bytes(), prose.len() + args.len());
        }
    }
}
