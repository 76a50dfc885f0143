//! Scenario replies → wire frames of each protocol.

use crate::{Body, full};
use dsh_llm::scripted::{Reply, ScriptedError, Stop, Text};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};

/// Which API a request spoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Anthropic-style Messages.
    Messages,
    /// OpenAI-style chat completions.
    Chat,
}

/// One SSE frame and whether it carries content (for stall/cut).
pub struct Frame {
    pub text: String,
    pub delta: bool,
}

enum Part {
    Reasoning(Vec<String>),
    Text(Vec<String>),
    Call {
        id: String,
        name: String,
        arguments: String,
    },
}

fn deltas(text: &Text) -> Vec<String> {
    match text {
        Text::Whole(s) => vec![s.clone()],
        Text::Deltas(d) => d.clone(),
    }
}

fn parts(reply: &Reply) -> Vec<Part> {
    let mut parts = Vec::new();
    if let Some(r) = &reply.reasoning {
        parts.push(Part::Reasoning(deltas(r)));
    }
    if let Some(t) = &reply.text {
        parts.push(Part::Text(deltas(t)));
    }
    for (i, block) in reply.blocks.iter().enumerate() {
        if let Some(r) = &block.reasoning {
            parts.push(Part::Reasoning(deltas(r)));
        } else if let Some(t) = &block.text {
            parts.push(Part::Text(deltas(t)));
        } else if let Some(call) = &block.tool_call {
            let arguments = match &call.arguments {
                None => "{}".to_owned(),
                Some(Value::String(raw)) => raw.clone(),
                Some(v) => v.to_string(),
            };
            let id = call
                .id
                .clone()
                .unwrap_or_else(|| format!("toolu_fake_{}", i + 1));
            parts.push(Part::Call {
                id,
                name: call.name.clone(),
                arguments,
            });
        }
    }
    parts
}

fn stop(reply: &Reply, parts: &[Part]) -> Stop {
    reply
        .stop
        .unwrap_or(if parts.iter().any(|p| matches!(p, Part::Call { .. })) {
            Stop::ToolUse
        } else {
            Stop::EndTurn
        })
}

/// Splits `s` in two halves on a char boundary (argument streaming).
fn halves(s: &str) -> Vec<String> {
    let mid = s
        .char_indices()
        .nth(s.chars().count() / 2)
        .map_or(s.len(), |(i, _)| i);
    [&s[..mid], &s[mid..]]
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

/// The SSE frames of a successful reply.
pub fn events(protocol: Protocol, reply: &Reply, model: &str, input_tokens: u64) -> Vec<Frame> {
    let parts = parts(reply);
    let output_tokens = reply.usage.map_or_else(
        || {
            parts
                .iter()
                .map(|p| match p {
                    Part::Reasoning(d) | Part::Text(d) => d.concat().len(),
                    Part::Call { arguments, .. } => arguments.len(),
                })
                .sum::<usize>()
                .div_ceil(4) as u64
        },
        |u| u.output_tokens,
    );
    let tokens = Tokens {
        input: reply.usage.map_or(input_tokens, |u| u.input_tokens),
        output: output_tokens,
        cache_hit: reply.usage.and_then(|u| u.cache_hit_tokens),
        reasoning: reply.usage.and_then(|u| u.reasoning_tokens),
    };
    match protocol {
        Protocol::Messages => messages(&parts, stop(reply, &parts), model, tokens),
        Protocol::Chat => chat(&parts, stop(reply, &parts), model, tokens),
    }
}

/// The usage figures a reply reports.
#[derive(Clone, Copy)]
struct Tokens {
    /// Prompt tokens not served from the cache.
    input: u64,
    output: u64,
    /// Prompt tokens served from the cache, when scripted.
    cache_hit: Option<u64>,
    /// Reasoning tokens, when scripted (chat API only).
    reasoning: Option<u64>,
}

impl Tokens {
    /// `message_start.message.usage` of the Messages API.
    fn messages_usage(self) -> Value {
        let mut usage = json!({"input_tokens": self.input, "output_tokens": 0});
        if let Some(hit) = self.cache_hit {
            usage["cache_read_input_tokens"] = json!(hit);
        }
        usage
    }

    /// The final chunk's `usage` of the chat API, as DeepSeek reports it.
    fn chat_usage(self) -> Value {
        let prompt = self.input + self.cache_hit.unwrap_or(0);
        let mut usage = json!({"prompt_tokens": prompt, "completion_tokens": self.output, "total_tokens": prompt + self.output});
        if let Some(hit) = self.cache_hit {
            usage["prompt_cache_hit_tokens"] = json!(hit);
            usage["prompt_cache_miss_tokens"] = json!(self.input);
        }
        if let Some(reasoning) = self.reasoning {
            usage["completion_tokens_details"] = json!({"reasoning_tokens": reasoning});
        }
        usage
    }
}

fn sse(name: &str, data: Value, delta: bool) -> Frame {
    Frame {
        text: format!("event: {name}\ndata: {data}\n\n"),
        delta,
    }
}

fn messages(parts: &[Part], stop: Stop, model: &str, tokens: Tokens) -> Vec<Frame> {
    let output = tokens.output;
    let mut frames = vec![sse(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [], "stop_reason": null, "usage": tokens.messages_usage()}}),
        false,
    )];
    for (index, part) in parts.iter().enumerate() {
        let (block, pieces, delta_of): (Value, Vec<String>, fn(&str) -> Value) = match part {
            Part::Reasoning(d) => (
                json!({"type": "thinking", "thinking": ""}),
                d.clone(),
                |t| json!({"type": "thinking_delta", "thinking": t}),
            ),
            Part::Text(d) => (
                json!({"type": "text", "text": ""}),
                d.clone(),
                |t| json!({"type": "text_delta", "text": t}),
            ),
            Part::Call {
                id,
                name,
                arguments,
            } => (
                json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                halves(arguments),
                |t| json!({"type": "input_json_delta", "partial_json": t}),
            ),
        };
        frames.push(sse(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": block}),
            false,
        ));
        for piece in pieces {
            frames.push(sse(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta_of(&piece)}),
                true,
            ));
        }
        if matches!(part, Part::Reasoning(_)) {
            let signature = format!("fake-sig-{index}");
            frames.push(sse("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "signature_delta", "signature": signature}}), false));
        }
        frames.push(sse(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
            false,
        ));
    }
    let stop_reason = match stop {
        Stop::EndTurn => "end_turn",
        Stop::ToolUse => "tool_use",
        Stop::MaxTokens => "max_tokens",
    };
    frames.push(sse("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": output}}), false));
    frames.push(sse("message_stop", json!({"type": "message_stop"}), false));
    frames
}

fn chat(parts: &[Part], stop: Stop, model: &str, tokens: Tokens) -> Vec<Frame> {
    let chunk = |delta: Value, finish: Value| json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    let data = |v: Value, delta: bool| Frame {
        text: format!("data: {v}\n\n"),
        delta,
    };
    let mut frames = vec![data(
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        false,
    )];
    let mut call_index = 0;
    for part in parts {
        match part {
            Part::Reasoning(d) => frames.extend(
                d.iter()
                    .map(|t| data(chunk(json!({"reasoning_content": t}), Value::Null), true)),
            ),
            Part::Text(d) => frames.extend(
                d.iter()
                    .map(|t| data(chunk(json!({"content": t}), Value::Null), true)),
            ),
            Part::Call {
                id,
                name,
                arguments,
            } => {
                frames.push(data(chunk(json!({"tool_calls": [{"index": call_index, "id": id, "type": "function", "function": {"name": name, "arguments": ""}}]}), Value::Null), true));
                for piece in halves(arguments) {
                    frames.push(data(chunk(json!({"tool_calls": [{"index": call_index, "function": {"arguments": piece}}]}), Value::Null), true));
                }
                call_index += 1;
            }
        }
    }
    let finish = match stop {
        Stop::EndTurn => "stop",
        Stop::ToolUse => "tool_calls",
        Stop::MaxTokens => "length",
    };
    frames.push(data(chunk(json!({}), json!(finish)), false));
    frames.push(data(json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model, "choices": [], "usage": tokens.chat_usage()}), false));
    frames.push(Frame {
        text: "data: [DONE]\n\n".to_owned(),
        delta: false,
    });
    frames
}

/// An HTTP error response for a scripted error.
pub fn error_response(error: &ScriptedError) -> Response<Body> {
    let status = error.status.unwrap_or(500);
    let kind = error.kind.clone().unwrap_or_else(|| {
        match status {
            400 | 413 | 422 => "invalid_request_error",
            401 => "authentication_error",
            402 => "billing_error",
            403 => "permission_error",
            404 => "not_found_error",
            429 => "rate_limit_error",
            529 => "overloaded_error",
            s if s >= 500 => "api_error",
            _ => "http_error",
        }
        .to_owned()
    });
    let body = json!({"type": "error", "error": {"type": kind, "message": error.message}});
    let mut response = Response::new(full(body.to_string()));
    *response.status_mut() =
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = response.headers_mut();
    headers.insert(
        "content-type",
        hyper::header::HeaderValue::from_static("application/json"),
    );
    if let Some(id) = error
        .request_id
        .as_deref()
        .and_then(|id| hyper::header::HeaderValue::from_str(id).ok())
    {
        headers.insert("request-id", id);
    }
    let retry_after = match (&error.retry_after, error.retry_after_ms) {
        (Some(header), _) => Some(header.clone()),
        (None, Some(ms)) => Some(format!("{}", ms as f64 / 1000.0)),
        (None, None) => None,
    };
    if let Some(value) = retry_after.and_then(|v| hyper::header::HeaderValue::from_str(&v).ok()) {
        headers.insert("retry-after", value);
    }
    response
}
