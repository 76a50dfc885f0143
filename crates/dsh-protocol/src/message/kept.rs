//! [`KeptMessage`]: a history message kept parsed, or packed as its JSON
//! text for histories too big to keep as trees.

use super::{AssistantMessage, Message, SystemMessage, ToolMessage, UserMessage};
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// The role of a [`Message`], known without parsing a packed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// `user`.
    User,
    /// `system`.
    System,
    /// `assistant`.
    Assistant,
    /// `tool`.
    Tool,
}

impl Message {
    /// This message's role.
    pub fn role(&self) -> Role {
        match self {
            Self::User(_) => Role::User,
            Self::System(_) => Role::System,
            Self::Assistant(_) => Role::Assistant,
            Self::Tool(_) => Role::Tool,
        }
    }
}

/// A model-visible message as a history holds it: parsed and shared, or
/// packed as its compact JSON text. A parsed message costs about three
/// times its text (every JSON object is a hash map); a resumed history of a
/// big log is therefore kept packed and each message is parsed again, one
/// at a time, when it is read. Cloning either form is cheap (shared).
#[derive(Debug, Clone)]
pub struct KeptMessage(Form);

#[derive(Debug, Clone)]
enum Form {
    Parsed(Arc<Message>),
    Packed { role: Role, text: Arc<str> },
}

impl KeptMessage {
    /// `message`, kept parsed.
    pub fn parsed(message: Message) -> Self {
        Self(Form::Parsed(Arc::new(message)))
    }

    /// `message`, kept as its JSON text. (A message that cannot be written
    /// as JSON, which serde_json never reports for these types, stays
    /// parsed.)
    pub fn packed(message: Message) -> Self {
        let role = message.role();
        match serde_json::to_string(&message) {
            Ok(text) => Self(Form::Packed {
                role,
                text: text.into(),
            }),
            Err(_) => Self::parsed(message),
        }
    }

    /// The message (parsed again from its text when packed).
    pub fn get(&self) -> Arc<Message> {
        match &self.0 {
            Form::Parsed(message) => Arc::clone(message),
            Form::Packed { role, text } => Arc::new(unpack(*role, text)),
        }
    }

    /// The role, without parsing.
    pub fn role(&self) -> Role {
        match &self.0 {
            Form::Parsed(message) => message.role(),
            Form::Packed { role, .. } => *role,
        }
    }

    /// The length of the packed text (0 when kept parsed).
    pub fn packed_len(&self) -> usize {
        match &self.0 {
            Form::Parsed(_) => 0,
            Form::Packed { text, .. } => text.len(),
        }
    }

    /// The same message, kept parsed.
    pub fn into_parsed(self) -> Self {
        match self.0 {
            Form::Parsed(_) => self,
            Form::Packed { .. } => Self(Form::Parsed(self.get())),
        }
    }
}

impl From<Message> for KeptMessage {
    fn from(message: Message) -> Self {
        Self::parsed(message)
    }
}

impl From<Arc<Message>> for KeptMessage {
    fn from(message: Arc<Message>) -> Self {
        Self(Form::Parsed(message))
    }
}

impl PartialEq for KeptMessage {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

/// The message `text` packs, read as the log's messages are (any depth the
/// reader accepts). Invariant: `text` is what [`KeptMessage::packed`] wrote
/// for a message of `role`, so it parses back as that role's type.
fn unpack(role: Role, text: &str) -> Message {
    fn parse<T: DeserializeOwned>(text: &str) -> T {
        #[allow(clippy::expect_used)]
        crate::lenient::from_str(text)
            .expect("a packed message parses back: KeptMessage::packed wrote it")
    }
    match role {
        Role::User => Message::User(parse::<UserMessage>(text)),
        Role::System => Message::System(parse::<SystemMessage>(text)),
        Role::Assistant => Message::Assistant(parse::<AssistantMessage>(text)),
        Role::Tool => Message::Tool(parse::<ToolMessage>(text)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::text_block;
    use serde_json::json;

    fn messages() -> Vec<Message> {
        vec![
            Message::User(UserMessage::prompt(vec![text_block("hi \u{1F600} \"q\"")])),
            Message::System(SystemMessage::prompt("be brief")),
            Message::Assistant(AssistantMessage::from_model(
                vec![
                    text_block("ok"),
                    json!({"type": "tool-call", "id": "c1", "name": "bash", "arguments": "{\"command\":\"ls\"}"}),
                ],
                "deepseek-official",
                "deepseek-v4-flash",
                Some(
                    json!({"response": {"kind": "deepseek-messages", "version": 1}, "blocks": [{"type": "text"}]}),
                ),
            )),
            Message::Tool(ToolMessage::new("c1", vec![text_block("a\nb")], true)),
        ]
    }

    #[test]
    fn a_packed_message_reads_back_as_it_was() {
        for message in messages() {
            let kept = KeptMessage::packed(message.clone());
            assert_eq!(kept.role(), message.role());
            assert!(kept.packed_len() > 0);
            assert_eq!(*kept.get(), message);
            let parsed = kept.clone().into_parsed();
            assert_eq!(parsed.packed_len(), 0);
            assert_eq!(*parsed.get(), message);
            assert_eq!(kept, parsed);
        }
    }

    #[test]
    fn a_packed_message_keeps_the_official_key_order() {
        let message = Message::Tool(ToolMessage::new("c1", vec![text_block("x")], false));
        let kept = KeptMessage::packed(message.clone());
        assert_eq!(
            serde_json::to_string(&*kept.get()).unwrap_or_default(),
            serde_json::to_string(&message).unwrap_or_default()
        );
    }
}
