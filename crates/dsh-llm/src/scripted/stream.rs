//! A scripted reply as the chunks it streams: its blocks and their
//! deltas, its usage (given, or estimated) and its finish.

use super::NAME;
use super::scenario::{Block, Part, Reply, Stop};
use crate::{BlockType, FinishReason, LlmFailure, ModelRequest, StreamChunk, Usage};
use dsh_session::{Message, text_of};
use serde_json::{Value, json};
use std::sync::Arc;

/// The chunks of one reply, in order.
pub(super) fn chunks(reply: &Reply, model: &str, input_estimate: u64) -> Vec<StreamChunk> {
    let mut out = Vec::new();
    if let Some(error) = &reply.error {
        let failure = LlmFailure {
            message: error.message.clone(),
            code: error.code.as_str().into(),
            status: error.status,
            provider_retry_after_ms: match &error.retry_after {
                Some(header) => crate::http::retry_after_ms(header, std::time::SystemTime::now()),
                None => error
                    .retry_after_ms
                    .and_then(|ms| crate::Millis::new(ms as f64)),
            },
            request_id: error.request_id.clone(),
        };
        out.push(StreamChunk::Finish {
            reason: FinishReason::Error { failure },
            replay_state: None,
        });
        return out;
    }
    let mut blocks = Vec::new();
    if let Some(reasoning) = &reply.reasoning {
        blocks.push(Part::Reasoning(reasoning.clone()));
    }
    if let Some(text) = &reply.text {
        blocks.push(Part::Text(text.clone()));
    }
    blocks.extend(reply.blocks.iter().filter_map(Block::part));

    let mut replay_blocks = Vec::new();
    let mut output_chars = 0usize;
    let mut has_tool_call = false;
    for (i, block) in blocks.iter().enumerate() {
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        let (block_type, complete) = match block {
            Part::Text(text) | Part::Reasoning(text) => {
                let reasoning = matches!(block, Part::Reasoning(_));
                let deltas = text.deltas();
                let whole: String = deltas.concat();
                output_chars += whole.chars().count();
                let (block_type, name) = if reasoning {
                    (BlockType::Reasoning, "reasoning")
                } else {
                    (BlockType::Text, "text")
                };
                out.push(StreamChunk::BlockStart { index, block_type });
                for text in deltas {
                    let chunk = if reasoning {
                        StreamChunk::ReasoningDelta { index, text }
                    } else {
                        StreamChunk::TextDelta { index, text }
                    };
                    out.push(chunk);
                }
                (name, json!({"type": name, "text": whole}))
            }
            Part::ToolCall(call) => {
                has_tool_call = true;
                let id = call.id.clone().unwrap_or_else(|| format!("call_{}", i + 1));
                let arguments = match &call.arguments {
                    None => "{}".to_owned(),
                    Some(Value::String(raw)) => raw.clone(),
                    Some(value) => value.to_string(),
                };
                output_chars += arguments.chars().count();
                out.push(StreamChunk::BlockStart {
                    index,
                    block_type: BlockType::ToolCall,
                });
                out.push(StreamChunk::ToolCallDelta {
                    index,
                    id: id.clone(),
                    name: Some(call.name.clone()),
                    arguments_delta: String::new(),
                });
                out.push(StreamChunk::ToolCallDelta {
                    index,
                    id: id.clone(),
                    name: None,
                    arguments_delta: arguments.clone(),
                });
                (
                    "tool-call",
                    json!({"type": "tool-call", "id": id, "name": call.name, "arguments": arguments}),
                )
            }
        };
        out.push(StreamChunk::BlockEnd {
            index,
            block: complete,
        });
        replay_blocks.push(json!({"type": block_type}));
    }
    let usage = match reply.usage {
        Some(u) => Usage {
            cache_read_tokens: u.cache_hit_tokens,
            reasoning_tokens: u.reasoning_tokens,
            total_tokens: u.input_tokens + u.output_tokens + u.cache_hit_tokens.unwrap_or(0),
            ..Usage::new(u.input_tokens, u.output_tokens)
        },
        None => Usage::new(input_estimate, quarter(output_chars)),
    };
    out.push(StreamChunk::Usage { usage });
    let reason = match reply.stop {
        Some(Stop::EndTurn) => FinishReason::Stop,
        Some(Stop::ToolUse) => FinishReason::ToolCalls,
        Some(Stop::MaxTokens) => FinishReason::MaxTokens,
        None if has_tool_call => FinishReason::ToolCalls,
        None => FinishReason::Stop,
    };
    let replay_state =
        json!({"response": {"kind": NAME, "version": 1, "model": model}, "blocks": replay_blocks});
    out.push(StreamChunk::Finish {
        reason,
        replay_state: Some(replay_state),
    });
    out
}

fn quarter(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX)
}

/// A quarter of the characters of the system prompt and every text block
/// of `messages`, the request's history.
pub(super) fn estimate_input(request: &ModelRequest, messages: &[Arc<Message>]) -> u64 {
    let chars = |content: &[Value]| text_of(content).map(|t| t.chars().count()).sum::<usize>();
    let history: usize = messages
        .iter()
        .map(|m| match m.as_ref() {
            Message::User(u) => chars(&u.content),
            Message::System(s) => chars(&s.content),
            Message::Assistant(a) => chars(&a.content),
            Message::Tool(t) => chars(&t.content),
        })
        .sum();
    quarter(request.system.chars().count() + history)
}
