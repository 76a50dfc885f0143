//! Chat-completions SSE payloads → stream chunks.

use crate::LlmFailureCode;
use crate::{BlockType, FinishReason, LlmFailure, StreamChunk, Usage};
use serde_json::{Value, json};

const LABEL: &str = "OpenAI-compatible chat completions";

struct Block {
    kind: BlockType,
    /// Provider tool-call index, for tool blocks.
    call_index: Option<u64>,
    id: String,
    name: String,
    text: String,
}

/// Translates one response's `data:` payloads into chunks. Blocks open as
/// their first delta arrives; block ends, usage and finish are emitted at
/// `[DONE]`.
pub struct Translator {
    model: String,
    blocks: Vec<Block>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    done: bool,
}

impl Translator {
    /// A translator for a reply of `model`.
    pub fn new(model: &str) -> Self {
        Self {
            model: model.to_owned(),
            blocks: Vec::new(),
            usage: None,
            finish_reason: None,
            done: false,
        }
    }

    /// Whether `[DONE]` arrived.
    pub fn done(&self) -> bool {
        self.done
    }

    /// Chunks for one `data:` payload.
    pub fn data(&mut self, data: &str) -> Result<Vec<StreamChunk>, LlmFailure> {
        if data.trim() == "[DONE]" {
            return self.finish();
        }
        let mut value: Value = dsh_protocol::lenient::from_str(data).map_err(|e| {
            LlmFailure::new(
                LlmFailureCode::MalformedResponse,
                format!("{LABEL} sent invalid JSON: {e}"),
            )
        })?;
        if let Some(error) = value.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("provider error");
            return Err(LlmFailure::new(LlmFailureCode::Server, message));
        }
        if let Some(usage) = value.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage_of(usage));
        }
        let mut chunks = Vec::new();
        let Some(choice) = value.pointer_mut("/choices/0") else {
            return Ok(chunks);
        };
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(reason.to_owned());
        }
        let mut null = Value::Null;
        let delta = choice.get_mut("delta").unwrap_or(&mut null);
        // Fragments are moved out of the parsed payload, not copied.
        if let Some(text) = take_text(delta, "reasoning_content") {
            let index = self.open(BlockType::Reasoning, None, &mut chunks);
            self.append(index, text, &mut chunks);
        }
        if let Some(text) = take_text(delta, "content") {
            let index = self.open(BlockType::Text, None, &mut chunks);
            self.append(index, text, &mut chunks);
        }
        let calls = match delta.get_mut("tool_calls").map(Value::take) {
            Some(Value::Array(calls)) => calls,
            _ => Vec::new(),
        };
        for mut call in calls {
            let call_index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
            let index = self.open(BlockType::ToolCall, Some(call_index), &mut chunks);
            let Some(block) = self.blocks.get_mut(index) else {
                continue;
            };
            if let Some(id) = call
                .get("id")
                .and_then(Value::as_str)
                .filter(|i| !i.is_empty())
            {
                block.id = id.to_owned();
            }
            let name = call
                .pointer("/function/name")
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
                .map(str::to_owned);
            let arguments = match call.pointer_mut("/function/arguments").map(Value::take) {
                Some(Value::String(arguments)) => arguments,
                _ => String::new(),
            };
            let first = block.name.is_empty();
            if let Some(name) = &name {
                block.name.push_str(name);
            }
            block.text.push_str(&arguments);
            if first || !arguments.is_empty() {
                chunks.push(StreamChunk::ToolCallDelta {
                    index: chunk_index(index),
                    id: block.id.clone(),
                    name: if first { name } else { None },
                    arguments_delta: arguments,
                });
            }
        }
        Ok(chunks)
    }

    /// The block to append to: the last one when it has the same kind (and
    /// tool index), else a new one.
    fn open(
        &mut self,
        kind: BlockType,
        call_index: Option<u64>,
        chunks: &mut Vec<StreamChunk>,
    ) -> usize {
        if let Some(last) = self.blocks.last()
            && last.kind == kind
            && last.call_index == call_index
        {
            return self.blocks.len() - 1;
        }
        if kind == BlockType::ToolCall
            && let Some(i) = self.blocks.iter().position(|b| b.call_index == call_index)
        {
            return i;
        }
        self.blocks.push(Block {
            kind,
            call_index,
            id: String::new(),
            name: String::new(),
            text: String::new(),
        });
        let index = self.blocks.len() - 1;
        chunks.push(StreamChunk::BlockStart {
            index: chunk_index(index),
            block_type: kind,
        });
        index
    }

    fn append(&mut self, index: usize, text: String, chunks: &mut Vec<StreamChunk>) {
        let Some(block) = self.blocks.get_mut(index) else {
            return;
        };
        block.text.push_str(&text);
        let index = chunk_index(index);
        chunks.push(match block.kind {
            BlockType::Reasoning => StreamChunk::ReasoningDelta { index, text },
            _ => StreamChunk::TextDelta { index, text },
        });
    }

    fn finish(&mut self) -> Result<Vec<StreamChunk>, LlmFailure> {
        self.done = true;
        let reason = match self.finish_reason.as_deref() {
            Some("stop") | None => FinishReason::Stop,
            Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
            Some("length") => FinishReason::MaxTokens,
            Some(other) => {
                return Err(LlmFailure::new(
                    LlmFailureCode::from(other.to_uppercase().replace('-', "_").as_str()),
                    format!("{LABEL} finished with reason \"{other}\""),
                ));
            }
        };
        let mut chunks = Vec::new();
        for (i, block) in self.blocks.iter_mut().enumerate() {
            // The text moves into the block-end: the translator keeps no copy.
            let text = std::mem::take(&mut block.text);
            let complete = match block.kind {
                BlockType::Text => json!({"type": "text", "text": text}),
                BlockType::Reasoning => json!({"type": "reasoning", "text": text}),
                BlockType::ToolCall => {
                    json!({"type": "tool-call", "id": block.id, "name": block.name, "arguments": text})
                }
            };
            chunks.push(StreamChunk::BlockEnd {
                index: chunk_index(i),
                block: complete,
            });
        }
        chunks.push(StreamChunk::Usage {
            usage: self.usage.unwrap_or_default(),
        });
        let blocks: Vec<Value> = self
            .blocks
            .iter()
            .map(|b| {
                let kind = match b.kind {
                    BlockType::Text => "text",
                    BlockType::Reasoning => "reasoning",
                    BlockType::ToolCall => "tool-call",
                };
                json!({"type": kind})
            })
            .collect();
        let replay_state = json!({"response": {"kind": "openai-chat", "version": 1, "model": self.model}, "blocks": blocks});
        chunks.push(StreamChunk::Finish {
            reason,
            replay_state: Some(replay_state),
        });
        Ok(chunks)
    }
}

/// Moves a non-empty string field out of `delta`.
fn take_text(delta: &mut Value, key: &str) -> Option<String> {
    match delta.get_mut(key).map(Value::take) {
        Some(Value::String(text)) if !text.is_empty() => Some(text),
        _ => None,
    }
}

fn chunk_index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

fn usage_of(usage: &Value) -> Usage {
    let n = |p: &str| usage.pointer(p).and_then(Value::as_u64);
    let cached =
        n("/prompt_tokens_details/cached_tokens").or_else(|| n("/prompt_cache_hit_tokens"));
    // DeepSeek also reports the misses; without `prompt_tokens` they and
    // the hits make the prompt.
    let prompt = n("/prompt_tokens").unwrap_or_else(|| {
        n("/prompt_cache_miss_tokens")
            .unwrap_or(0)
            .saturating_add(cached.unwrap_or(0))
    });
    let output = n("/completion_tokens").unwrap_or(0);
    let input = prompt.saturating_sub(cached.unwrap_or(0));
    Usage {
        input_tokens: input,
        output_tokens: output,
        cache_read_tokens: cached,
        cache_write_tokens: None,
        reasoning_tokens: n("/completion_tokens_details/reasoning_tokens"),
        total_tokens: input + output + cached.unwrap_or(0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(payloads: &[Value]) -> Result<Vec<Value>, LlmFailure> {
        let mut t = Translator::new("m");
        let mut out = Vec::new();
        for p in payloads {
            out.extend(t.data(&p.to_string())?);
        }
        out.extend(t.data("[DONE]")?);
        Ok(out
            .iter()
            .map(|c| serde_json::to_value(c).unwrap_or_default())
            .collect())
    }

    #[test]
    fn reasoning_text_and_tool_calls_assemble_by_index() {
        let delta = |d: Value| json!({"choices": [{"index": 0, "delta": d}]});
        let chunks = run(&[
            delta(json!({"reasoning_content": ""})),
            delta(json!({"reasoning_content": "think"})),
            delta(json!({"content": "Hi"})),
            delta(json!({"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "bash", "arguments": ""}}]})),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"a\":"}}]})),
            delta(json!({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]})),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 4}}}),
        ])
        .unwrap();
        assert_eq!(
            chunks[0],
            json!({"type":"block-start","index":0,"blockType":"reasoning"})
        );
        assert!(chunks.contains(&json!({"type":"block-end","index":2,"block":{"type":"tool-call","id":"c1","name":"bash","arguments":"{\"a\":1}"}})));
        assert!(chunks.contains(&json!({"type":"usage","usage":{"inputTokens":6,"outputTokens":3,"cacheReadTokens":4,"totalTokens":13}})));
        assert_eq!(
            chunks.last().map(|c| c["reason"]["kind"].clone()),
            Some(json!("tool-calls"))
        );
    }

    #[test]
    fn finish_reasons_map() {
        let fin = |r: &str| json!({"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": r}]});
        assert_eq!(
            run(&[fin("length")])
                .ok()
                .and_then(|c| c.last().cloned())
                .map(|c| c["reason"]["kind"].clone()),
            Some(json!("max-tokens"))
        );
        assert_eq!(
            run(&[fin("content_filter")])
                .err()
                .map(|f| f.code.to_string())
                .as_deref(),
            Some("CONTENT_FILTER")
        );
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    fn arb_payload() -> impl Strategy<Value = String> {
        let finish =
            prop::sample::select(vec!["", "stop", "tool_calls", "length", "content_filter"]);
        (any::<String>(), any::<String>(), 0u64..3, finish, any::<bool>(), any::<u8>()).prop_map(
            |(text, args, index, finish, garbage, shape)| {
                if garbage {
                    return text;
                }
                let delta = match shape % 4 {
                    0 => json!({"content": text}),
                    1 => json!({"reasoning_content": text}),
                    2 => json!({"tool_calls": [{"index": index, "id": text, "function": {"name": text, "arguments": args}}]}),
                    _ => json!({}),
                };
                let finish = if finish.is_empty() { Value::Null } else { json!(finish) };
                json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}], "usage": {"prompt_tokens": index}}).to_string()
            },
        )
    }

    proptest! {
        #[test]
        fn arbitrary_payloads_never_panic_and_indices_stay_dense(payloads in proptest::collection::vec(arb_payload(), 0..30)) {
            let mut translator = Translator::new("m");
            let mut started = 0u32;
            let mut ended = 0u32;
            for payload in payloads.iter().map(String::as_str).chain(["[DONE]"]) {
                match translator.data(payload) {
                    Ok(chunks) => {
                        for chunk in chunks {
                            match chunk {
                                StreamChunk::BlockStart { index, .. } => {
                                    prop_assert_eq!(index, started);
                                    started += 1;
                                }
                                StreamChunk::BlockEnd { .. } => ended += 1,
                                _ => {}
                            }
                        }
                    }
                    Err(failure) => {
                        prop_assert!(!failure.code.as_str().is_empty() && !failure.message.is_empty());
                        return Ok(());
                    }
                }
            }
            prop_assert!(translator.done());
            prop_assert_eq!(started, ended, "every opened block is closed at [DONE]");
        }
    }
}
