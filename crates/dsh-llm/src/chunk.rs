use crate::{LlmFailure, Usage};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Kind of a content block in a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BlockType {
    /// Visible text.
    Text,
    /// Model thinking.
    Reasoning,
    /// A tool call.
    ToolCall,
}

/// Why a stream finished.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum FinishReason {
    /// The model finished its reply.
    Stop,
    /// The model asks for tool calls.
    ToolCalls,
    /// The output cap cut the reply.
    MaxTokens,
    /// The attempt failed.
    Error {
        /// Why.
        failure: LlmFailure,
    },
    /// The attempt was aborted.
    Aborted {
        /// Why.
        failure: LlmFailure,
    },
}

/// One chunk of the internal stream vocabulary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(
    tag = "type",
    rename_all = "kebab-case",
    rename_all_fields = "camelCase"
)]
pub enum StreamChunk {
    /// A block opens at a dense local index.
    BlockStart {
        /// Block index (dense, in arrival order).
        index: u32,
        /// What kind of block.
        block_type: BlockType,
    },
    /// Text of a text block.
    TextDelta {
        /// Block index.
        index: u32,
        /// The fragment.
        text: String,
    },
    /// Text of a reasoning block.
    ReasoningDelta {
        /// Block index.
        index: u32,
        /// The fragment.
        text: String,
    },
    /// Arguments of a tool-call block.
    ToolCallDelta {
        /// Block index.
        index: u32,
        /// The call id.
        id: String,
        /// The tool name (on the first delta of a block).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        name: Option<String>,
        /// A fragment of the raw JSON arguments.
        arguments_delta: String,
    },
    /// A block closes, carrying the complete content block.
    BlockEnd {
        /// Block index.
        index: u32,
        /// The complete content block (`text`, `reasoning` or `tool-call`).
        block: Value,
    },
    /// Token usage.
    Usage {
        /// The figures.
        usage: Usage,
    },
    /// The stream ends.
    Finish {
        /// Why.
        reason: FinishReason,
        /// Provider state needed to replay this reply later.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        replay_state: Option<Value>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LlmFailureCode;
    use serde_json::json;

    #[test]
    fn chunks_serialise_like_the_official_stream_records() {
        let chunk = StreamChunk::BlockStart {
            index: 0,
            block_type: BlockType::ToolCall,
        };
        assert_eq!(
            serde_json::to_value(&chunk).ok(),
            Some(json!({"type":"block-start","index":0,"blockType":"tool-call"}))
        );
        let chunk = StreamChunk::Finish {
            reason: FinishReason::Stop,
            replay_state: Some(json!({"blocks": []})),
        };
        assert_eq!(
            serde_json::to_string(&chunk).unwrap_or_default(),
            r#"{"type":"finish","reason":{"kind":"stop"},"replayState":{"blocks":[]}}"#
        );
        let chunk = StreamChunk::Finish {
            reason: FinishReason::Error {
                failure: LlmFailure::new(LlmFailureCode::Server, "boom"),
            },
            replay_state: None,
        };
        assert_eq!(
            serde_json::to_string(&chunk).unwrap_or_default(),
            r#"{"type":"finish","reason":{"kind":"error","failure":{"message":"boom","code":"SERVER"}}}"#
        );
        let usage = Usage::new(3, 4);
        assert_eq!(
            serde_json::to_string(&usage).unwrap_or_default(),
            r#"{"inputTokens":3,"outputTokens":4,"totalTokens":7}"#
        );
    }
}
