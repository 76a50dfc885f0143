//! Hostile replies (issue 15's provider attacks): endless streams and
//! bodies, one huge delta, one huge tool call.

use crate::render::{self, Protocol};
use crate::{Body, stream_frames};
use bytes::Bytes;
use dsh_llm::scripted::{Block, Hostile, Reply, Text, ToolCall};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::{Response, StatusCode};
use serde_json::{Value, json};

/// Bytes of text per frame of an endless stream.
const PIECE: usize = 16 << 10;

/// The response playing `hostile`.
pub fn response(protocol: Protocol, hostile: &Hostile, model: &str) -> Response<Body> {
    match hostile {
        Hostile::EndlessText => {
            let text = "endless ".repeat(PIECE / 8);
            let frame = match protocol {
                Protocol::Messages => format!(
                    "event: content_block_delta\ndata: {}\n\n",
                    json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})
                ),
                Protocol::Chat => format!(
                    "data: {}\n\n",
                    json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": model, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": null}]})
                ),
            };
            let head = match protocol {
                Protocol::Messages => format!(
                    "event: message_start\ndata: {}\n\nevent: content_block_start\ndata: {}\n\n",
                    json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": [], "usage": {"input_tokens": 1, "output_tokens": 0}}}),
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
                ),
                Protocol::Chat => String::new(),
            };
            endless(StatusCode::OK, "text/event-stream", head, frame)
        }
        Hostile::EndlessErrorBody => endless(
            StatusCode::INTERNAL_SERVER_ERROR,
            "application/json",
            r#"{"type":"error","error":{"type":"api_error","message":"endless"#.to_owned(),
            "x".repeat(PIECE),
        ),
        Hostile::HugeDelta { bytes } => {
            let text = "x".repeat(usize::try_from(*bytes).unwrap_or(usize::MAX));
            let reply = Reply {
                text: Some(Text::Whole(text)),
                ..Reply::default()
            };
            whole_reply(protocol, &reply, model)
        }
        Hostile::HugeToolCall {
            name,
            arguments,
            field,
            bytes,
        } => {
            let mut arguments = arguments.clone();
            let bulk = "x".repeat(usize::try_from(*bytes).unwrap_or(usize::MAX));
            arguments.insert(field.clone(), Value::String(bulk));
            let reply = Reply {
                blocks: vec![Block {
                    tool_call: Some(ToolCall {
                        id: Some("toolu_huge".into()),
                        name: name.clone(),
                        arguments: Some(Value::String(Value::Object(arguments).to_string())),
                    }),
                    ..Block::default()
                }],
                ..Reply::default()
            };
            whole_reply(protocol, &reply, model)
        }
    }
}

/// `reply` streamed whole, as a normal scripted reply is.
fn whole_reply(protocol: Protocol, reply: &Reply, model: &str) -> Response<Body> {
    // The hostile reply's shape only: no stall, cut or reset.
    stream_frames(render::events(protocol, reply, model, 1), &Reply::default())
}

/// `head`, then `piece` again and again until the client goes away.
fn endless(
    status: StatusCode,
    content_type: &'static str,
    head: String,
    piece: String,
) -> Response<Body> {
    let piece = Bytes::from(piece);
    let first = std::iter::once(Bytes::from(head));
    let stream = futures_util::stream::iter(
        first
            .chain(std::iter::repeat(piece))
            .map(|bytes| Ok::<_, std::io::Error>(Frame::data(bytes))),
    );
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(stream)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        "content-type",
        hyper::header::HeaderValue::from_static(content_type),
    );
    response
}
