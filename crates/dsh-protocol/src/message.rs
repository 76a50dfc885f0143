//! Model-visible messages (`user`, `system`, `assistant`, `tool`) as the
//! session log and the wire carry them, in the official key order.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

mod kept;

pub use kept::{KeptMessage, Role};

/// A fresh message id (UUIDv4).
pub fn new_message_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// `{"type":"text","text":…}`.
pub fn text_block(text: impl Into<String>) -> Value {
    json!({"type": "text", "text": text.into()})
}

/// The `text` blocks of `content`, in order.
pub fn text_of(content: &[Value]) -> impl Iterator<Item = &str> {
    content.iter().filter_map(|block| match block.get("type") {
        Some(Value::String(t)) if t == "text" => block.get("text").and_then(Value::as_str),
        _ => None,
    })
}

macro_rules! role {
    ($name:ident, $value:literal) => {
        #[doc = concat!("The literal role `", $value, "`.")]
        #[derive(
            Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema,
        )]
        pub enum $name {
            #[doc = concat!("`", $value, "`")]
            #[default]
            #[serde(rename = $value)]
            Value,
        }
    };
}

role!(UserRole, "user");
role!(SystemRole, "system");
role!(AssistantRole, "assistant");
role!(ToolRole, "tool");

/// A user message: `{content, source, role, id}` (official key order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UserMessage {
    /// Content blocks, verbatim.
    pub content: Vec<Value>,
    /// Where the message came from: `{"kind":"user"}`, runtime context, notices…
    pub source: Value,
    /// Always `user`.
    pub role: UserRole,
    /// UUIDv4.
    pub id: String,
}

/// `source.kind` of a compaction checkpoint.
pub const COMPACT_CHECKPOINT: &str = "compact-checkpoint";

impl UserMessage {
    /// A message with a fresh id.
    pub fn new(content: Vec<Value>, source: Value) -> Self {
        Self {
            content,
            source,
            role: UserRole::Value,
            id: new_message_id(),
        }
    }

    /// A client's prompt: `source: {"kind":"user"}`.
    pub fn prompt(content: Vec<Value>) -> Self {
        Self::new(content, json!({"kind": "user"}))
    }

    /// A runtime notice whose source is only its kind (`working-directory`).
    pub fn notice(kind: &str, content: Vec<Value>) -> Self {
        Self::new(content, json!({"kind": kind}))
    }

    /// A runtime notice in the inbox: `source: {kind, form: "notice",
    /// summary, senderSessionId?}` (`subagent-settled` names the child it
    /// is from; `tool-jobs` names no sender).
    pub fn inbox_notice(
        kind: &str,
        content: Vec<Value>,
        summary: &str,
        sender: Option<&str>,
    ) -> Self {
        let mut source = json!({"kind": kind, "form": "notice", "summary": summary});
        if let (Some(sender), Some(map)) = (sender, source.as_object_mut()) {
            map.insert("senderSessionId".into(), json!(sender));
        }
        Self::new(content, source)
    }

    /// A message relayed from another agent: `source: {kind, form:
    /// "relay", senderSessionId}`.
    pub fn relay(kind: &str, content: Vec<Value>, sender: &str) -> Self {
        Self::new(
            content,
            json!({"kind": kind, "form": "relay", "senderSessionId": sender}),
        )
    }

    /// The runtime-context snapshot: `source: {"kind":"runtime-context",
    /// "form":"snapshot","sections":[{name, text}…]}`.
    pub fn runtime_context<'a>(
        content: Vec<Value>,
        sections: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Self {
        let sections: Vec<Value> = sections
            .into_iter()
            .map(|(name, text)| json!({"name": name, "text": text}))
            .collect();
        let source = json!({"kind": "runtime-context", "form": "snapshot", "sections": sections});
        Self::new(content, source)
    }

    /// A compaction checkpoint standing in for the span it condenses:
    /// `source: {"kind":"compact-checkpoint","compactionId":…}`.
    pub fn compact_checkpoint(content: Vec<Value>, compaction_id: &str) -> Self {
        Self::new(
            content,
            json!({"kind": COMPACT_CHECKPOINT, "compactionId": compaction_id}),
        )
    }

    /// `source.kind`, if any.
    pub fn source_kind(&self) -> Option<&str> {
        self.source.get("kind").and_then(Value::as_str)
    }
}

/// A system message: `{role, content, source, id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SystemMessage {
    /// Always `system`.
    pub role: SystemRole,
    /// One text block holding the system prompt.
    pub content: Vec<Value>,
    /// `{"kind":"system-prompt"}`.
    pub source: Value,
    /// UUIDv4.
    pub id: String,
}

impl SystemMessage {
    /// The system prompt message for `text`.
    pub fn prompt(text: &str) -> Self {
        Self {
            role: SystemRole::Value,
            content: vec![text_block(text)],
            source: json!({"kind": "system-prompt"}),
            id: new_message_id(),
        }
    }
}

/// An assistant message: `{role, content, source, id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AssistantMessage {
    /// Always `assistant`.
    pub role: AssistantRole,
    /// `text`, `reasoning` and `tool-call` blocks.
    pub content: Vec<Value>,
    /// `{"kind":"model", provider, model, replayState}`.
    pub source: Value,
    /// UUIDv4.
    pub id: String,
}

impl AssistantMessage {
    /// A model's reply, with a fresh id: `source: {"kind":"model", provider,
    /// model, replayState}` (`replayState` is `null` when the provider keeps
    /// none).
    pub fn from_model(
        content: Vec<Value>,
        provider: &str,
        model: &str,
        replay_state: Option<Value>,
    ) -> Self {
        Self {
            role: AssistantRole::Value,
            content,
            source: json!({
                "kind": "model",
                "provider": provider,
                "model": model,
                "replayState": replay_state,
            }),
            id: new_message_id(),
        }
    }
}

/// A tool result: `{role, source, toolCallId, content, isError, id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ToolMessage {
    /// Always `tool`.
    pub role: ToolRole,
    /// `{"kind":"tool","callId":…}`.
    pub source: Value,
    /// The call answered.
    pub tool_call_id: String,
    /// Result blocks.
    pub content: Vec<Value>,
    /// Whether the tool failed.
    pub is_error: bool,
    /// UUIDv4 (or a synthetic id for repaired results).
    pub id: String,
}

impl ToolMessage {
    /// A tool result message with a fresh id.
    pub fn new(call_id: &str, content: Vec<Value>, is_error: bool) -> Self {
        Self {
            role: ToolRole::Value,
            source: json!({"kind": "tool", "callId": call_id}),
            tool_call_id: call_id.to_owned(),
            content,
            is_error,
            id: new_message_id(),
        }
    }
}

/// Any model-visible message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Message {
    /// Role `user`.
    User(UserMessage),
    /// Role `system`.
    System(SystemMessage),
    /// Role `assistant`.
    Assistant(AssistantMessage),
    /// Role `tool`.
    Tool(ToolMessage),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_matches_the_official_runtime() {
        let user = UserMessage {
            content: vec![text_block("hi")],
            source: json!({"kind": "user"}),
            role: UserRole::Value,
            id: "u".into(),
        };
        assert_eq!(
            serde_json::to_string(&user).unwrap_or_default(),
            r#"{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"},"role":"user","id":"u"}"#
        );
        let mut tool = ToolMessage::new("c1", vec![text_block("ok")], false);
        tool.id = "t".into();
        assert_eq!(
            serde_json::to_string(&tool).unwrap_or_default(),
            r#"{"role":"tool","source":{"kind":"tool","callId":"c1"},"toolCallId":"c1","content":[{"type":"text","text":"ok"}],"isError":false,"id":"t"}"#
        );
    }

    #[test]
    fn untagged_messages_deserialise_by_role() {
        let line = r#"{"role":"tool","source":{"kind":"tool","callId":"c1"},"toolCallId":"c1","content":[],"isError":true,"id":"t"}"#;
        let message: Message = serde_json::from_str(line).unwrap();
        assert!(matches!(message, Message::Tool(ref t) if t.is_error));
        let line = r#"{"content":[],"source":{"kind":"user"},"role":"user","id":"u"}"#;
        let message: Message = serde_json::from_str(line).unwrap();
        assert!(matches!(message, Message::User(_)));
    }

    #[test]
    fn text_of_skips_other_blocks() {
        let content = vec![text_block("a"), json!({"type": "weird"}), text_block("b")];
        assert_eq!(text_of(&content).collect::<Vec<_>>(), ["a", "b"]);
    }
}
