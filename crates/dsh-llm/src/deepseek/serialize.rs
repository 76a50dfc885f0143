//! History → Messages API request body (§13.3–13.4).

use crate::LlmFailureCode;
use crate::long::{Longs, RequestBody};
use crate::{LlmFailure, ModelRequest};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use dsh_session::Message;
use dsh_session::attachments::{AttachmentStore, attachment_hex};
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// Everything the serialiser needs besides the request.
pub struct Target<'a> {
    /// Whether the model accepts image input.
    pub accepts_images: bool,
    /// Where prompt images are stored.
    pub attachments: &'a AttachmentStore,
}

/// Builds the request body, or fails before any I/O with
/// `UNSUPPORTED_CONTENT` / `INVALID_REQUEST`. Long texts and tool inputs
/// of the history are not copied into it (see [`crate::long`]).
pub fn body(request: &ModelRequest, target: &Target<'_>) -> Result<RequestBody, LlmFailure> {
    let route = &request.route;
    let mut longs = Longs::new();
    let mut body = Map::new();
    body.insert("model".into(), json!(route.model));
    body.insert("stream".into(), json!(true));
    body.insert(
        "messages".into(),
        Value::Array(messages(request, target, &mut longs)?),
    );
    body.insert("max_tokens".into(), json!(route.max_tokens()));
    if route.effort() == "off" {
        body.insert("thinking".into(), json!({"type": "disabled"}));
    } else {
        body.insert("thinking".into(), json!({"type": "enabled"}));
        body.insert("output_config".into(), json!({"effort": route.effort()}));
    }
    if !request.system.is_empty() {
        body.insert("system".into(), json!(request.system));
    }
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    Ok(longs.body(Value::Object(body)))
}

fn unsupported(kind: &str) -> LlmFailure {
    LlmFailure::new(
        LlmFailureCode::UnsupportedContent,
        format!("DeepSeek Messages cannot represent user/tool-result content {kind}"),
    )
}

/// Same-role entries merge; tool results lead their user message.
fn messages(
    request: &ModelRequest,
    target: &Target<'_>,
    longs: &mut Longs,
) -> Result<Vec<Value>, LlmFailure> {
    let mut out: Vec<(&'static str, Vec<Value>)> = Vec::new();
    for message in &request.messages {
        // Parsed here when the history keeps it packed.
        let message = message.get();
        let (role, blocks) = match message.as_ref() {
            Message::System(_) => continue,
            Message::User(user) => ("user", user_blocks(&message, &user.content, target, longs)?),
            Message::Tool(tool) => {
                // Tool results may carry image attachments (`read_image`).
                let content: Vec<Value> = user_blocks(&message, &tool.content, target, longs)?;
                let result = json!({"type": "tool_result", "tool_use_id": tool.tool_call_id, "content": content, "is_error": tool.is_error});
                ("user", vec![result])
            }
            Message::Assistant(assistant) => (
                "assistant",
                assistant_blocks(&message, assistant, &request.route.model, longs),
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some((last_role, last)) if *last_role == role => {
                for block in blocks {
                    if block["type"] == "tool_result" {
                        let at = last
                            .iter()
                            .take_while(|b| b["type"] == "tool_result")
                            .count();
                        last.insert(at, block);
                    } else {
                        last.push(block);
                    }
                }
            }
            _ => out.push((role, blocks)),
        }
    }
    check_tool_pairs(&out)?;
    Ok(out
        .into_iter()
        .map(|(role, content)| json!({"role": role, "content": content}))
        .collect())
}

/// The blocks of a user or tool message (`content` of `message`).
fn user_blocks(
    message: &Arc<Message>,
    content: &[Value],
    target: &Target<'_>,
    longs: &mut Longs,
) -> Result<Vec<Value>, LlmFailure> {
    let mut out = Vec::new();
    for (i, block) in content.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("image") => {
                let attachment = block
                    .get("attachment")
                    .ok_or_else(|| unsupported("image"))?;
                out.extend(image_blocks(attachment, target)?);
            }
            Some("text") => {
                let text = block
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !text.is_empty() {
                    let text = longs.text(message, i, "text", text);
                    out.push(json!({"type": "text", "text": text}));
                }
            }
            other => return Err(unsupported(other.unwrap_or("<untyped>"))),
        }
    }
    Ok(out)
}

fn image_blocks(attachment: &Value, target: &Target<'_>) -> Result<Vec<Value>, LlmFailure> {
    let hex = attachment_hex(attachment).ok_or_else(|| unsupported("image"))?;
    if !target.accepts_images {
        let short = hex.get(..8).unwrap_or(hex);
        return Ok(vec![
            json!({"type": "text", "text": format!("[image omitted because this model accepts text only; attachment sha256:{short}]")}),
        ]);
    }
    let bytes = target.attachments.load(attachment).map_err(|err| {
        LlmFailure::new(
            LlmFailureCode::InvalidRequest,
            format!("image attachment sha256:{hex} cannot be read: {err}"),
        )
    })?;
    let media_type = attachment
        .get("mediaType")
        .and_then(Value::as_str)
        .unwrap_or("image/png");
    let (w, h) = (
        attachment.get("width").unwrap_or(&Value::Null),
        attachment.get("height").unwrap_or(&Value::Null),
    );
    let path = target.attachments.object_path(hex);
    Ok(vec![
        json!({"type": "text", "text": format!("Image attachment sha256:{hex} ({w}x{h} px, {media_type}); the original is stored at \"{}\".", path.display())}),
        json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": STANDARD.encode(bytes)}}),
    ])
}

/// The blocks of an assistant message (`assistant`, the content of
/// `message`).
fn assistant_blocks(
    message: &Arc<Message>,
    assistant: &dsh_session::AssistantMessage,
    model: &str,
    longs: &mut Longs,
) -> Vec<Value> {
    let (message, kept) = (assistant, message);
    let source = &message.source;
    let same_model = source.get("model").and_then(Value::as_str) == Some(model);
    let replay = source
        .pointer("/replayState/blocks")
        .and_then(Value::as_array);
    let mut out = Vec::new();
    for (i, block) in message.content.iter().enumerate() {
        let mut text = || {
            let text = block
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or_default();
            longs.text(kept, i, "text", text)
        };
        match block.get("type").and_then(Value::as_str) {
            Some("reasoning") => {
                let mut thinking = json!({"type": "thinking", "thinking": text()});
                let signature = replay
                    .and_then(|r| r.get(i))
                    .and_then(|b| b.get("signature"));
                if let (true, Some(signature)) = (same_model, signature) {
                    thinking["signature"] = signature.clone();
                }
                out.push(thinking);
            }
            Some("text") => out.push(json!({"type": "text", "text": text()})),
            Some("tool-call") => {
                let arguments = block
                    .get("arguments")
                    .and_then(Value::as_str)
                    .unwrap_or("{}");
                let input = longs.input(kept, i, arguments);
                out.push(json!({"type": "tool_use", "id": block.get("id"), "name": block.get("name"), "input": input}));
            }
            _ => {}
        }
    }
    out
}

/// Every `tool_use` must be answered by the immediately following user
/// message.
fn check_tool_pairs(messages: &[(&'static str, Vec<Value>)]) -> Result<(), LlmFailure> {
    for (i, (role, blocks)) in messages.iter().enumerate() {
        if *role != "assistant" {
            continue;
        }
        for block in blocks.iter().filter(|b| b["type"] == "tool_use") {
            let id = &block["id"];
            let answered = messages.get(i + 1).is_some_and(|(_, next)| {
                next.iter()
                    .any(|b| b["type"] == "tool_result" && &b["tool_use_id"] == id)
            });
            if !answered {
                return Err(LlmFailure::new(
                    LlmFailureCode::InvalidRequest,
                    format!("tool call {id} has no tool result in the following message"),
                ));
            }
        }
    }
    Ok(())
}
