//! Long history text in a request body without copies (both providers).
//!
//! A request carries the whole history. Built as a `Value`, every text and
//! tool input of it would be copied into the value and then again into the
//! body's bytes: a 100 MB tool call in the history made each later request
//! cost 200 MB more than the history itself. Here a text or tool input of
//! at least [`LONG_BYTES`] stands in the value as a placeholder (a string
//! no model can write: it holds a random nonce), and [`RequestBody::to_vec`]
//! writes the history's own text in its place. A tool input is
//! re-serialised as it is parsed (`serde_transcode`), so the bytes are those
//! of parsing it into a `Value` and writing that, but for an object with a
//! repeated key, which keeps every occurrence.

use crate::{LlmFailure, LlmFailureCode};
use dsh_session::Message;
use serde::de::IgnoredAny;
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};
use serde_json::Value;
use std::sync::Arc;

/// Texts and tool inputs at least this long are written from the history
/// instead of being copied into the request value.
pub const LONG_BYTES: usize = 1 << 20;

/// The first character of every placeholder: a noncharacter.
const MARK: char = '\u{10FFFE}';

/// What a placeholder stands for.
#[derive(Debug)]
enum Part {
    /// The string `field` of content block `block`.
    Text(&'static str),
    /// The `arguments` of tool-call block `block`, a JSON object's text.
    Input,
}

#[derive(Debug)]
struct Long {
    key: String,
    message: Arc<Message>,
    block: usize,
    part: Part,
}

impl Long {
    fn text(&self) -> &str {
        let content = match self.message.as_ref() {
            Message::System(m) => &m.content,
            Message::User(m) => &m.content,
            Message::Assistant(m) => &m.content,
            Message::Tool(m) => &m.content,
        };
        let field = match self.part {
            Part::Text(field) => field,
            Part::Input => "arguments",
        };
        content
            .get(self.block)
            .and_then(|block| block.get(field))
            .and_then(Value::as_str)
            .unwrap_or_default()
    }
}

/// The long parts of one request body, collected while it is built.
#[derive(Debug)]
pub struct Longs {
    nonce: u128,
    parts: Vec<Long>,
}

impl Longs {
    /// An empty collection with a fresh nonce.
    pub fn new() -> Self {
        Self {
            nonce: fastrand::u128(..),
            parts: Vec::new(),
        }
    }

    fn placeholder(&mut self, message: &Arc<Message>, block: usize, part: Part) -> Value {
        let key = format!("{MARK}dsh-long-{:032x}-{}", self.nonce, self.parts.len());
        self.parts.push(Long {
            key: key.clone(),
            message: Arc::clone(message),
            block,
            part,
        });
        Value::String(key)
    }

    /// `text`, the string `field` of block `block` of `message` (`text`,
    /// or a tool call's `arguments` sent as a string): copied when short, a
    /// placeholder when long.
    pub fn text(
        &mut self,
        message: &Arc<Message>,
        block: usize,
        field: &'static str,
        text: &str,
    ) -> Value {
        if text.len() < LONG_BYTES {
            Value::String(text.to_owned())
        } else {
            self.placeholder(message, block, Part::Text(field))
        }
    }

    /// The tool input of tool-call block `block` of `message` (its
    /// `arguments`): the object they hold, or `{}` when they do not hold a
    /// JSON object. A long one is checked without being parsed into a value
    /// and stands as a placeholder.
    pub fn input(&mut self, message: &Arc<Message>, block: usize, arguments: &str) -> Value {
        if arguments.len() < LONG_BYTES {
            return match serde_json::from_str::<Value>(arguments) {
                Ok(Value::Object(map)) => Value::Object(map),
                _ => Value::Object(serde_json::Map::new()),
            };
        }
        let object = arguments.trim_start().starts_with('{')
            && serde_json::from_str::<IgnoredAny>(arguments).is_ok();
        if object {
            self.placeholder(message, block, Part::Input)
        } else {
            Value::Object(serde_json::Map::new())
        }
    }

    /// The value with its placeholders, ready to be written.
    pub fn body(self, value: Value) -> RequestBody {
        RequestBody {
            value,
            parts: self.parts,
        }
    }
}

impl Default for Longs {
    fn default() -> Self {
        Self::new()
    }
}

/// A request body whose long parts are written from the history.
#[derive(Debug)]
pub struct RequestBody {
    value: Value,
    parts: Vec<Long>,
}

impl RequestBody {
    /// The body as sent (lone surrogates as `\udXXX` escapes), its value
    /// dropped once written; a body that cannot be written (a long tool
    /// input that no longer parses) is an `INVALID_REQUEST` failure of
    /// `label`'s request.
    pub fn into_bytes(self, label: &str) -> Result<Vec<u8>, LlmFailure> {
        match self.to_vec() {
            Ok(bytes) => Ok(dsh_protocol::surrogates::decode(bytes)),
            Err(err) => Err(LlmFailure::new(
                LlmFailureCode::InvalidRequest,
                format!("{label} request body could not be written: {err}"),
            )),
        }
    }

    /// The body's JSON bytes (lone-surrogate markers still in place).
    fn to_vec(&self) -> serde_json::Result<Vec<u8>> {
        if self.parts.is_empty() {
            return serde_json::to_vec(&self.value);
        }
        serde_json::to_vec(&Filled {
            value: &self.value,
            parts: &self.parts,
        })
    }
}

/// A value whose placeholders are written as what they stand for.
struct Filled<'a> {
    value: &'a Value,
    parts: &'a [Long],
}

impl Filled<'_> {
    fn at<'b>(&'b self, value: &'b Value) -> Filled<'b> {
        Filled {
            value,
            parts: self.parts,
        }
    }
}

impl Serialize for Filled<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.value {
            Value::String(text) if text.starts_with(MARK) => {
                match self.parts.iter().find(|part| part.key == *text) {
                    Some(part) => match part.part {
                        Part::Text(_) => serializer.serialize_str(part.text()),
                        Part::Input => {
                            let mut input = serde_json::Deserializer::from_str(part.text());
                            serde_transcode::transcode(&mut input, serializer)
                        }
                    },
                    None => serializer.serialize_str(text),
                }
            }
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&self.at(item))?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut out = serializer.serialize_map(Some(map.len()))?;
                for (key, value) in map {
                    out.serialize_entry(key, &self.at(value))?;
                }
                out.end()
            }
            other => other.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::{AssistantMessage, UserMessage, text_block};
    use serde_json::json;

    fn assistant(content: Vec<Value>) -> Arc<Message> {
        Arc::new(Message::Assistant(AssistantMessage::from_model(
            content, "p", "m", None,
        )))
    }

    #[test]
    fn long_parts_are_written_as_the_copies_would_be() {
        let big = format!(
            "{{\"path\": \"a.txt\", \"n\": 1.50, \"e\": \"\\u00e9\\n\", \"content\": \"{}\"}}",
            "z".repeat(LONG_BYTES)
        );
        let text = "t\"\n".repeat(LONG_BYTES / 3 + 1);
        let message = assistant(vec![
            json!({"type": "text", "text": text}),
            json!({"type": "tool-call", "id": "c", "name": "write", "arguments": big}),
        ]);
        let user = Arc::new(Message::User(UserMessage::prompt(vec![text_block("hi")])));
        let mut longs = Longs::new();
        let value = json!({"messages": [
            {"content": [
                {"type": "text", "text": longs.text(&message, 0, "text", &text)},
                {"type": "tool_use", "input": longs.input(&message, 1, &big)},
                {"type": "text", "text": longs.text(&user, 0, "text", "hi")},
            ]},
        ]});
        assert_eq!(longs.parts.len(), 2, "the short text is copied");
        let copied = json!({"messages": [
            {"content": [
                {"type": "text", "text": text},
                {"type": "tool_use", "input": serde_json::from_str::<Value>(&big).unwrap_or_default()},
                {"type": "text", "text": "hi"},
            ]},
        ]});
        let written = longs.body(value).to_vec().unwrap_or_default();
        assert_eq!(written, serde_json::to_vec(&copied).unwrap_or_default());
    }

    #[test]
    fn long_arguments_sent_as_a_string_are_written_as_the_copy_would_be() {
        // chat completions carry a call's arguments as a string.
        let big = format!("{{\"content\": \"{}\\n\"}}", "w".repeat(LONG_BYTES));
        let message = assistant(vec![
            json!({"type": "tool-call", "id": "c", "name": "write", "arguments": big}),
        ]);
        let mut longs = Longs::new();
        let value = json!({"function": {"arguments": longs.text(&message, 0, "arguments", &big)}});
        assert_eq!(longs.parts.len(), 1);
        let copied = json!({"function": {"arguments": big}});
        let written = longs.body(value).to_vec().unwrap_or_default();
        assert_eq!(written, serde_json::to_vec(&copied).unwrap_or_default());
    }

    #[test]
    fn a_long_input_that_is_not_an_object_is_sent_empty() {
        let message = assistant(vec![]);
        let mut longs = Longs::new();
        for bad in [
            format!("[\"{}\"]", "a".repeat(LONG_BYTES)),
            format!("{{\"a\": \"{}\"", "a".repeat(LONG_BYTES)),
        ] {
            assert_eq!(longs.input(&message, 0, &bad), json!({}));
        }
        assert!(longs.parts.is_empty());
    }

    #[test]
    fn a_string_that_looks_like_a_placeholder_is_written_as_it_is() {
        let message = assistant(vec![
            json!({"type": "text", "text": "x".repeat(LONG_BYTES)}),
        ]);
        let mut longs = Longs::new();
        let long = longs.text(&message, 0, "text", &"x".repeat(LONG_BYTES));
        let forged = format!("{MARK}dsh-long-{:032x}-0", 0);
        let value = json!([long, forged]);
        let written = longs.body(value).to_vec().unwrap_or_default();
        let back: Value = serde_json::from_slice(&written).unwrap_or_default();
        assert_eq!(back[0].as_str().map(str::len), Some(LONG_BYTES));
        assert_eq!(back[1], json!(forged));
    }
}
