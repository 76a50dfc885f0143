//! History → chat-completions request body.

use crate::LlmFailureCode;
use crate::long::{Longs, RequestBody};
use crate::{LlmFailure, ModelRequest};
use dsh_session::{Message, text_of};
use serde_json::{Map, Value, json};

/// Builds the request body, or fails with `UNSUPPORTED_CONTENT`. Long tool
/// arguments of the history are not copied into it (see [`crate::long`]).
pub fn body(request: &ModelRequest) -> Result<RequestBody, LlmFailure> {
    let route = &request.route;
    let mut longs = Longs::new();
    let mut body = Map::new();
    body.insert("model".into(), json!(route.model));
    body.insert(
        "messages".into(),
        Value::Array(messages(request, &mut longs)?),
    );
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    body.insert("max_tokens".into(), json!(route.max_tokens()));
    if let Some(effort) = route.reasoning_effort.as_deref().filter(|e| *e != "off") {
        body.insert("reasoning_effort".into(), json!(effort));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    Ok(longs.body(Value::Object(body)))
}

fn messages(request: &ModelRequest, longs: &mut Longs) -> Result<Vec<Value>, LlmFailure> {
    let mut out = Vec::new();
    if !request.system.is_empty() {
        out.push(json!({"role": "system", "content": request.system}));
    }
    for message in &request.messages {
        // Parsed here when the history keeps it packed.
        let message = message.get();
        match message.as_ref() {
            Message::System(_) => {}
            Message::User(user) => {
                let text = user_text(&user.content)?;
                if text.is_empty() {
                    continue;
                }
                // Consecutive user entries (notices, prompt, runtime context)
                // merge into one message.
                match out.last_mut() {
                    Some(last) if last["role"] == "user" => {
                        let joined =
                            format!("{}\n\n{text}", last["content"].as_str().unwrap_or_default());
                        last["content"] = json!(joined);
                    }
                    _ => out.push(json!({"role": "user", "content": text})),
                }
            }
            Message::Tool(tool) => {
                let text = user_text(&tool.content)?;
                let content = if text.is_empty() {
                    "(no output)".to_owned()
                } else {
                    text
                };
                out.push(
                    json!({"role": "tool", "tool_call_id": tool.tool_call_id, "content": content}),
                );
            }
            Message::Assistant(assistant) => {
                let text: String = text_of(&assistant.content).collect::<Vec<_>>().join("");
                let mut entry = json!({"role": "assistant", "content": text});
                let reasoning: String = assistant
                    .content
                    .iter()
                    .filter(|b| b["type"] == "reasoning")
                    .filter_map(|b| b["text"].as_str())
                    .collect();
                if !reasoning.is_empty() {
                    entry["reasoning_content"] = json!(reasoning);
                }
                let calls: Vec<Value> = assistant
                    .content
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| b["type"] == "tool-call")
                    .map(|(i, b)| {
                        let arguments = match b["arguments"].as_str() {
                            Some(text) => longs.text(&message, i, "arguments", text),
                            None => b["arguments"].clone(),
                        };
                        json!({"id": b["id"], "type": "function", "function": {"name": b["name"], "arguments": arguments}})
                    })
                    .collect();
                if !calls.is_empty() {
                    entry["tool_calls"] = Value::Array(calls);
                }
                out.push(entry);
            }
        }
    }
    Ok(out)
}

/// Text of user or tool content; images are replaced by the text-only
/// placeholder (this provider treats every model as text-only).
fn user_text(content: &[Value]) -> Result<String, LlmFailure> {
    let mut parts = Vec::new();
    for block in content {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => parts.push(block["text"].as_str().unwrap_or_default().to_owned()),
            Some("image") => {
                let id = block
                    .pointer("/attachment/attachmentId")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let short: String = id.trim_start_matches("sha256:").chars().take(8).collect();
                parts.push(format!("[image omitted because this model accepts text only; attachment sha256:{short}]"));
            }
            other => {
                return Err(LlmFailure::new(
                    LlmFailureCode::UnsupportedContent,
                    format!(
                        "chat completions cannot represent user/tool-result content {}",
                        other.unwrap_or("<untyped>")
                    ),
                ));
            }
        }
    }
    Ok(parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n"))
}
