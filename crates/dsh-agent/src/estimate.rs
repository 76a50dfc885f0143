//! Token estimates of messages, as the official runtime counts them for
//! `shadowedTokenCount`: four tokens per message, and per content block
//! four plus a quarter of its text (rounded up). Lengths are UTF-8 bytes,
//! which never undercounts text that is not ASCII.

use dsh_session::Message;
use serde_json::Value;

/// Tokens counted for a message beyond its blocks.
const PER_MESSAGE: u64 = 4;
/// Tokens counted for a block beyond its text.
const PER_BLOCK: u64 = 4;
/// Tokens counted for an image block (its pixels are not text).
const PER_IMAGE: u64 = 1_600;

/// Tokens of `len` bytes of text.
pub fn text(len: usize) -> u64 {
    (len as u64).div_ceil(4)
}

/// Tokens of one content block.
fn block(block: &Value) -> u64 {
    let field = |name: &str| block.get(name).and_then(Value::as_str).map_or(0, str::len);
    let body = match block.get("type").and_then(Value::as_str) {
        Some("text" | "reasoning") => text(field("text")),
        Some("tool-call") => text(field("name") + field("arguments")),
        Some("image") => PER_IMAGE,
        // Anything else: its JSON, once (bounded by what the log holds).
        _ => text(block.to_string().len()),
    };
    PER_BLOCK + body
}

/// Tokens of a message.
pub fn message(message: &Message) -> u64 {
    content(match message {
        Message::User(m) => &m.content,
        Message::System(m) => &m.content,
        Message::Assistant(m) => &m.content,
        Message::Tool(m) => &m.content,
    })
}

/// Tokens of a message with these content blocks.
pub fn content(content: &[Value]) -> u64 {
    PER_MESSAGE + content.iter().map(block).sum::<u64>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::{UserMessage, text_block};
    use serde_json::json;

    #[test]
    fn counts_as_the_official_shadowed_token_count() {
        // Official capture: a 1,572,861-character prompt, a 533-character
        // runtime context in one message, and a 2-character reply shadow
        // 393,375 tokens; a three-block checkpoint of 321 + 12 + 20
        // characters is 105.
        let prompt = UserMessage::prompt(vec![text_block("x".repeat(1_572_861))]);
        let context = UserMessage::prompt(vec![text_block("c".repeat(533))]);
        let reply = UserMessage::prompt(vec![text_block("R1")]);
        let total: u64 = [prompt, context, reply]
            .into_iter()
            .map(|m| message(&Message::User(m)))
            .sum();
        assert_eq!(total, 393_375);
        let checkpoint = UserMessage::prompt(vec![
            text_block("p".repeat(321)),
            text_block("SUMMARY-TEXT"),
            text_block("</compacted-summary>"),
        ]);
        assert_eq!(message(&Message::User(checkpoint)), 105);
    }

    #[test]
    fn calls_and_images_count() {
        let call = json!({"type": "tool-call", "id": "c", "name": "bash", "arguments": "{\"command\":\"ls\"}"});
        assert_eq!(block(&call), 4 + text(4 + 16));
        assert_eq!(
            block(&json!({"type": "image", "attachment": {}})),
            4 + PER_IMAGE
        );
    }
}
