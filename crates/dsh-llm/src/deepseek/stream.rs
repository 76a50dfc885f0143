//! Messages API SSE events → stream chunks (§13.6).

use crate::LlmFailureCode;
use crate::sse::SseEvent;
use crate::{BlockType, FinishReason, LlmFailure, StreamChunk, Usage};
use serde_json::{Value, json};

const LABEL: &str = "DeepSeek Messages";

struct Block {
    kind: BlockType,
    id: String,
    name: String,
    /// The accumulated text or arguments, moved into the block's
    /// `block-end` when it closes.
    text: String,
    signature: Option<String>,
    /// For a closed tool call: what its arguments are (checked at
    /// `message_stop` unless the reply hit `max_tokens`).
    arguments: Arguments,
}

/// What a tool call's argument text is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arguments {
    /// A JSON object (an empty text counts as `{}`).
    Object,
    /// JSON, but not an object.
    NotObject,
    /// Not JSON.
    NotJson,
}

impl Arguments {
    fn of(text: &str) -> Self {
        if text.is_empty() {
            return Self::Object;
        }
        match serde_json::from_str::<Value>(text) {
            Ok(Value::Object(_)) => Self::Object,
            Ok(_) => Self::NotObject,
            Err(_) => Self::NotJson,
        }
    }

    /// The failure of a reply holding a call with these arguments, in the
    /// official runtime's words; `None` for an object.
    fn failure(self) -> Option<LlmFailure> {
        let message = match self {
            Self::Object => return None,
            Self::NotObject => format!("{LABEL} expected a JSON object"),
            Self::NotJson => format!("{LABEL} stream: tool input is invalid JSON"),
        };
        Some(LlmFailure::new(LlmFailureCode::MalformedResponse, message))
    }
}

/// Translates one response's SSE events into chunks.
pub struct Translator {
    model: String,
    /// Provider index → local dense index.
    open: Vec<(u64, usize)>,
    blocks: Vec<Block>,
    usage: Usage,
    stop_reason: Option<String>,
    done: bool,
}

impl Translator {
    /// A translator for a reply of `model`.
    pub fn new(model: &str) -> Self {
        Self {
            model: model.to_owned(),
            open: Vec::new(),
            blocks: Vec::new(),
            usage: Usage::default(),
            stop_reason: None,
            done: false,
        }
    }

    /// Whether `message_stop` (or an error) ended the stream.
    pub fn done(&self) -> bool {
        self.done
    }

    /// Chunks for one event; a failure ends the attempt.
    pub fn event(&mut self, event: &SseEvent) -> Result<Vec<StreamChunk>, LlmFailure> {
        let mut data: Value = dsh_protocol::lenient::from_str(&event.data).map_err(|e| {
            LlmFailure::new(
                LlmFailureCode::MalformedResponse,
                format!("{LABEL} sent invalid JSON: {e}"),
            )
        })?;
        let kind = data.get("type").and_then(Value::as_str).unwrap_or_default();
        if let Some(name) = &event.event
            && !kind.is_empty()
            && name != kind
        {
            return Err(malformed(&format!(
                "event \"{name}\" carries type \"{kind}\""
            )));
        }
        match kind {
            "message_start" => {
                let usage = data.pointer("/message/usage").unwrap_or(&Value::Null);
                self.usage.input_tokens = count(usage, "input_tokens");
                self.usage.cache_read_tokens =
                    usage.get("cache_read_input_tokens").and_then(Value::as_u64);
                self.usage.cache_write_tokens = usage
                    .get("cache_creation_input_tokens")
                    .and_then(Value::as_u64);
                Ok(Vec::new())
            }
            "content_block_start" => self.block_start(&data),
            "content_block_delta" => self.block_delta(&mut data),
            "content_block_stop" => self.block_stop(&data),
            "message_delta" => {
                if let Some(reason) = data.pointer("/delta/stop_reason").and_then(Value::as_str) {
                    self.stop_reason = Some(reason.to_owned());
                }
                if let Some(output) = data.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    self.usage.output_tokens = output;
                }
                Ok(Vec::new())
            }
            "message_stop" => self.finish(),
            "error" => {
                let error = data.get("error").unwrap_or(&data);
                let kind = error.get("type").and_then(Value::as_str).unwrap_or("error");
                let message = error
                    .get("message")
                    .and_then(Value::as_str)
                    .filter(|m| !m.trim().is_empty())
                    .map_or_else(|| format!("{LABEL} stream reported {kind}"), str::to_owned);
                let code = match error.get("type").and_then(Value::as_str) {
                    Some("overloaded_error" | "api_error") => "SERVER",
                    Some("rate_limit_error") => "RATE_LIMIT",
                    Some("authentication_error" | "permission_error") => "AUTH",
                    Some("invalid_request_error") => "INVALID_REQUEST",
                    _ => "SERVER",
                };
                Err(LlmFailure::new(code.into(), message))
            }
            _ => Ok(Vec::new()),
        }
    }

    fn local(&self, data: &Value) -> Result<usize, LlmFailure> {
        let index = data
            .get("index")
            .and_then(Value::as_u64)
            .ok_or_else(|| malformed("a block event without index"))?;
        self.open
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, l)| *l)
            .ok_or_else(|| malformed("an event for a block that is not open"))
    }

    fn block_start(&mut self, data: &Value) -> Result<Vec<StreamChunk>, LlmFailure> {
        let index = data
            .get("index")
            .and_then(Value::as_u64)
            .ok_or_else(|| malformed("content_block_start without index"))?;
        let block = data.get("content_block").unwrap_or(&Value::Null);
        let kind = match block.get("type").and_then(Value::as_str) {
            Some("text") => BlockType::Text,
            Some("thinking") => BlockType::Reasoning,
            Some("tool_use") => BlockType::ToolCall,
            other => {
                return Err(malformed(&format!(
                    "unknown content block type {}",
                    other.unwrap_or("<none>")
                )));
            }
        };
        let local = self.blocks.len();
        let id = block
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let name = block
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        self.open.push((index, local));
        self.blocks.push(Block {
            kind,
            id: id.clone(),
            name: name.clone(),
            text: String::new(),
            signature: None,
            arguments: Arguments::Object,
        });
        let index = chunk_index(local);
        let mut chunks = vec![StreamChunk::BlockStart {
            index,
            block_type: kind,
        }];
        if kind == BlockType::ToolCall {
            chunks.push(StreamChunk::ToolCallDelta {
                index,
                id,
                name: Some(name),
                arguments_delta: String::new(),
            });
        }
        Ok(chunks)
    }

    fn block_delta(&mut self, data: &mut Value) -> Result<Vec<StreamChunk>, LlmFailure> {
        let local = self.local(data)?;
        let index = chunk_index(local);
        let mut null = Value::Null;
        let delta = data.get_mut("delta").unwrap_or(&mut null);
        let kind = delta.get("type").and_then(Value::as_str).map(str::to_owned);
        // The fragment is moved out of the parsed event, not copied.
        let mut text = |key: &str| match delta.get_mut(key).map(Value::take) {
            Some(Value::String(text)) => text,
            _ => String::new(),
        };
        let Some(block) = self.blocks.get_mut(local) else {
            return Err(malformed("unknown block"));
        };
        let chunk = match kind.as_deref() {
            Some("text_delta") => {
                let t = text("text");
                block.text.push_str(&t);
                StreamChunk::TextDelta { index, text: t }
            }
            Some("thinking_delta") => {
                let t = text("thinking");
                block.text.push_str(&t);
                StreamChunk::ReasoningDelta { index, text: t }
            }
            Some("signature_delta") => {
                block
                    .signature
                    .get_or_insert_with(String::new)
                    .push_str(&text("signature"));
                return Ok(Vec::new());
            }
            Some("input_json_delta") => {
                let t = text("partial_json");
                block.text.push_str(&t);
                StreamChunk::ToolCallDelta {
                    index,
                    id: block.id.clone(),
                    name: None,
                    arguments_delta: t,
                }
            }
            _ => return Ok(Vec::new()),
        };
        Ok(vec![chunk])
    }

    fn block_stop(&mut self, data: &Value) -> Result<Vec<StreamChunk>, LlmFailure> {
        let local = self.local(data)?;
        let Some(block) = self.blocks.get_mut(local) else {
            return Err(malformed("unknown block"));
        };
        // The text moves into the block-end: the translator keeps no copy.
        let text = std::mem::take(&mut block.text);
        let complete = match block.kind {
            BlockType::Text => json!({"type": "text", "text": text}),
            BlockType::Reasoning => json!({"type": "reasoning", "text": text}),
            BlockType::ToolCall => {
                block.arguments = Arguments::of(&text);
                // As the official runtime records it: no arguments are `{}`.
                let text = if text.is_empty() {
                    "{}".to_owned()
                } else {
                    text
                };
                json!({"type": "tool-call", "id": block.id, "name": block.name, "arguments": text})
            }
        };
        Ok(vec![StreamChunk::BlockEnd {
            index: chunk_index(local),
            block: complete,
        }])
    }

    fn finish(&mut self) -> Result<Vec<StreamChunk>, LlmFailure> {
        self.done = true;
        let reason = match self.stop_reason.as_deref() {
            Some("end_turn" | "stop_sequence") => FinishReason::Stop,
            Some("tool_use") => FinishReason::ToolCalls,
            Some("max_tokens") => FinishReason::MaxTokens,
            other => {
                return Err(malformed(&format!(
                    "unknown stop_reason {}",
                    other.unwrap_or("<none>")
                )));
            }
        };
        if reason != FinishReason::MaxTokens {
            for block in self.blocks.iter().filter(|b| b.kind == BlockType::ToolCall) {
                // A block still open holds its arguments.
                let arguments = if block.text.is_empty() {
                    block.arguments
                } else {
                    Arguments::of(&block.text)
                };
                if let Some(failure) = arguments.failure() {
                    return Err(failure);
                }
            }
        }
        let u = &mut self.usage;
        u.total_tokens = u.input_tokens
            + u.output_tokens
            + u.cache_read_tokens.unwrap_or(0)
            + u.cache_write_tokens.unwrap_or(0);
        let blocks: Vec<Value> = self
            .blocks
            .iter()
            .map(|b| match (b.kind, &b.signature) {
                (BlockType::Reasoning, Some(sig)) => json!({"type": "reasoning", "signature": sig}),
                (BlockType::Reasoning, None) => json!({"type": "reasoning"}),
                (BlockType::Text, _) => json!({"type": "text"}),
                (BlockType::ToolCall, _) => json!({"type": "tool-call"}),
            })
            .collect();
        let replay_state = json!({"response": {"kind": "deepseek-messages", "version": 1, "model": self.model}, "blocks": blocks});
        Ok(vec![
            StreamChunk::Usage { usage: *u },
            StreamChunk::Finish {
                reason,
                replay_state: Some(replay_state),
            },
        ])
    }
}

/// Whether tool arguments are a JSON object (empty means `{}`), checked
/// without building the value.
fn chunk_index(local: usize) -> u32 {
    u32::try_from(local).unwrap_or(u32::MAX)
}

fn count(usage: &Value, key: &str) -> u64 {
    usage.get(key).and_then(Value::as_u64).unwrap_or(0)
}

fn malformed(what: &str) -> LlmFailure {
    LlmFailure::new(
        LlmFailureCode::MalformedResponse,
        format!("{LABEL} stream is malformed: {what}"),
    )
}

/// The failure for a stream that ended before `message_stop`.
pub fn stream_closed() -> LlmFailure {
    LlmFailure::new(
        LlmFailureCode::StreamClosed,
        format!("{LABEL} stream ended before message_stop"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(name: &str, data: Value) -> SseEvent {
        SseEvent {
            event: Some(name.into()),
            data: data.to_string(),
        }
    }

    fn run(events: &[SseEvent]) -> Result<Vec<StreamChunk>, LlmFailure> {
        let mut t = Translator::new("deepseek-v4-flash");
        let mut out = Vec::new();
        for e in events {
            out.extend(t.event(e)?);
        }
        Ok(out)
    }

    #[test]
    fn reasoning_text_and_tool_calls_translate_with_dense_indices() {
        let events = vec![
            ev(
                "message_start",
                json!({"type":"message_start","message":{"usage":{"input_tokens":10,"cache_read_input_tokens":4}}}),
            ),
            ev(
                "content_block_start",
                json!({"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}),
            ),
            ev(
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}),
            ),
            ev(
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}),
            ),
            ev(
                "content_block_stop",
                json!({"type":"content_block_stop","index":0}),
            ),
            ev("ping", json!({"type":"ping"})),
            ev(
                "content_block_start",
                json!({"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"t1","name":"bash","input":{}}}),
            ),
            ev(
                "content_block_delta",
                json!({"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}),
            ),
            ev(
                "content_block_delta",
                json!({"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"1}"}}),
            ),
            ev(
                "content_block_stop",
                json!({"type":"content_block_stop","index":3}),
            ),
            ev(
                "message_delta",
                json!({"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":7}}),
            ),
            ev("message_stop", json!({"type":"message_stop"})),
        ];
        let chunks = run(&events).unwrap();
        let value = serde_json::to_value(&chunks).unwrap_or_default();
        assert_eq!(
            value[2],
            json!({"type":"block-end","index":0,"block":{"type":"reasoning","text":"hm"}})
        );
        assert_eq!(
            value[3],
            json!({"type":"block-start","index":1,"blockType":"tool-call"})
        );
        assert_eq!(
            value[4],
            json!({"type":"tool-call-delta","index":1,"id":"t1","name":"bash","argumentsDelta":""})
        );
        assert_eq!(
            value[7],
            json!({"type":"block-end","index":1,"block":{"type":"tool-call","id":"t1","name":"bash","arguments":"{\"a\":1}"}})
        );
        assert_eq!(
            value[8],
            json!({"type":"usage","usage":{"inputTokens":10,"outputTokens":7,"cacheReadTokens":4,"totalTokens":21}})
        );
        assert_eq!(
            value[9],
            json!({"type":"finish","reason":{"kind":"tool-calls"},"replayState":{"response":{"kind":"deepseek-messages","version":1,"model":"deepseek-v4-flash"},"blocks":[{"type":"reasoning","signature":"sig"},{"type":"tool-call"}]}})
        );
    }

    #[test]
    fn malformed_streams_fail() {
        let bad_json = SseEvent {
            event: None,
            data: "{nope".into(),
        };
        assert_eq!(
            run(&[bad_json]).err().map(|f| f.code),
            Some("MALFORMED_RESPONSE".into())
        );
        let mismatch = ev("message_stop", json!({"type":"ping"}));
        assert_eq!(
            run(&[mismatch]).err().map(|f| f.code),
            Some("MALFORMED_RESPONSE".into())
        );
        let bad_stop = vec![
            ev(
                "message_delta",
                json!({"type":"message_delta","delta":{"stop_reason":"refusal"}}),
            ),
            ev("message_stop", json!({"type":"message_stop"})),
        ];
        assert_eq!(
            run(&bad_stop).err().map(|f| f.code),
            Some("MALFORMED_RESPONSE".into())
        );
        let error = ev(
            "error",
            json!({"type":"error","error":{"type":"overloaded_error","message":"busy"}}),
        );
        assert_eq!(
            run(&[error]).err().map(|f| (f.code, f.message)),
            Some(("SERVER".into(), "busy".into()))
        );
        let bad_args = call_with("[1]");
        assert_eq!(
            run(&bad_args).err().map(|f| (f.code, f.message)),
            Some((
                "MALFORMED_RESPONSE".into(),
                "DeepSeek Messages expected a JSON object".into()
            ))
        );
    }

    /// A tool call with these streamed arguments, then `message_stop`.
    fn call_with(arguments: &str) -> Vec<SseEvent> {
        vec![
            ev(
                "content_block_start",
                json!({"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"x"}}),
            ),
            ev(
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":arguments}}),
            ),
            ev(
                "content_block_stop",
                json!({"type":"content_block_stop","index":0}),
            ),
            ev(
                "message_delta",
                json!({"type":"message_delta","delta":{"stop_reason":"tool_use"}}),
            ),
            ev("message_stop", json!({"type":"message_stop"})),
        ]
    }

    #[test]
    fn tool_arguments_are_checked_in_the_official_words() {
        for (arguments, message) in [
            ("null", "DeepSeek Messages expected a JSON object"),
            ("\"x\"", "DeepSeek Messages expected a JSON object"),
            (
                "not json",
                "DeepSeek Messages stream: tool input is invalid JSON",
            ),
            ("  ", "DeepSeek Messages stream: tool input is invalid JSON"),
            (
                "{\"a\":1",
                "DeepSeek Messages stream: tool input is invalid JSON",
            ),
        ] {
            assert_eq!(
                run(&call_with(arguments))
                    .err()
                    .map(|f| (f.code, f.message)),
                Some(("MALFORMED_RESPONSE".into(), message.into())),
                "{arguments:?}"
            );
        }
    }

    #[test]
    fn empty_tool_arguments_are_recorded_as_an_empty_object() {
        let chunks = run(&call_with("")).unwrap_or_default();
        let end = chunks.iter().find_map(|c| match c {
            StreamChunk::BlockEnd { block, .. } => Some(block.clone()),
            _ => None,
        });
        assert_eq!(
            end,
            Some(json!({"type":"tool-call","id":"t","name":"x","arguments":"{}"}))
        );
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    fn arb_event() -> impl Strategy<Value = SseEvent> {
        let kinds = prop::sample::select(vec![
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
            "ping",
            "error",
            "other",
        ]);
        let block = prop::sample::select(vec!["text", "thinking", "tool_use", "image", ""]);
        let delta = prop::sample::select(vec![
            "text_delta",
            "thinking_delta",
            "signature_delta",
            "input_json_delta",
            "x",
        ]);
        let stop = prop::sample::select(vec![
            "end_turn",
            "tool_use",
            "max_tokens",
            "stop_sequence",
            "refusal",
        ]);
        (kinds, block, delta, stop, 0u64..4, any::<String>(), any::<bool>()).prop_map(|(kind, block, delta, stop, index, text, garbage)| {
            if garbage {
                return SseEvent { event: None, data: text };
            }
            let data = json!({
                "type": kind,
                "index": index,
                "message": {"usage": {"input_tokens": index}},
                "content_block": {"type": block, "id": text, "name": text},
                "delta": {"type": delta, "text": text, "thinking": text, "signature": text, "partial_json": text, "stop_reason": stop},
                "usage": {"output_tokens": index},
                "error": {"type": "api_error", "message": text},
            });
            SseEvent { event: Some(kind.to_owned()), data: data.to_string() }
        })
    }

    proptest! {
        #[test]
        fn arbitrary_streams_never_panic_and_indices_stay_dense(events in proptest::collection::vec(arb_event(), 0..40)) {
            let mut translator = Translator::new("m");
            let mut started = 0u32;
            for event in &events {
                match translator.event(event) {
                    Ok(chunks) => {
                        for chunk in chunks {
                            if let StreamChunk::BlockStart { index, .. } = chunk {
                                prop_assert_eq!(index, started);
                                started += 1;
                            }
                        }
                    }
                    Err(failure) => {
                        prop_assert!(!failure.code.as_str().is_empty() && !failure.message.is_empty());
                        break;
                    }
                }
                if translator.done() {
                    break;
                }
            }
        }
    }
}
