use crate::LlmFailureCode;
use crate::{FinishReason, LlmFailure, StreamChunk, Usage};
use serde_json::Value;

/// How a model attempt settled.
#[derive(Debug, Clone, PartialEq)]
pub enum Settled {
    /// A reply to keep as `assistant/message`.
    Message {
        /// Content blocks (`reasoning`, `text`, `tool-call`), truncated tool
        /// calls removed.
        content: Vec<Value>,
        /// Token usage, when reported.
        usage: Option<Usage>,
        /// Replay state for `message.source.replayState`, with the entries of
        /// removed blocks dropped.
        replay_state: Option<Value>,
        /// `Stop`, `ToolCalls` or `MaxTokens`.
        finish: FinishReason,
    },
    /// Nothing to keep: an `assistant/attempt`.
    Failed(LlmFailure),
}

/// Folds stream chunks into the settled reply.
#[derive(Debug, Default)]
pub struct Accumulator {
    blocks: Vec<Value>,
    usage: Option<Usage>,
    finish: Option<(FinishReason, Option<Value>)>,
}

impl Accumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds one chunk.
    pub fn push(&mut self, chunk: &StreamChunk) {
        match chunk {
            StreamChunk::BlockEnd { block, .. } => self.blocks.push(block.clone()),
            StreamChunk::Usage { usage } => self.usage = Some(*usage),
            StreamChunk::Finish {
                reason,
                replay_state,
            } => {
                self.finish = Some((reason.clone(), replay_state.clone()));
            }
            _ => {}
        }
    }

    /// Whether a `finish` chunk has arrived.
    pub fn finished(&self) -> bool {
        self.finish.is_some()
    }

    /// Settles the attempt. `provider` names the provider in synthetic
    /// failures (a stream without `finish`, an empty reply).
    pub fn settle(self, provider: &str) -> Settled {
        let Some((finish, replay_state)) = self.finish else {
            return Settled::Failed(LlmFailure::new(
                LlmFailureCode::StreamClosed,
                format!("{provider} stream ended before its finish"),
            ));
        };
        match finish {
            FinishReason::Error { failure } | FinishReason::Aborted { failure } => {
                Settled::Failed(failure)
            }
            FinishReason::Stop if self.blocks.is_empty() => Settled::Failed(LlmFailure::new(
                LlmFailureCode::EmptyResponse,
                format!("{provider} returned an empty response"),
            )),
            finish => {
                // A reply cut at the token cap runs no tools: its tool calls
                // (the last one truncated) are dropped from the kept message.
                let keep: Vec<bool> = self
                    .blocks
                    .iter()
                    .map(|b| !(finish == FinishReason::MaxTokens && is_tool_call(b)))
                    .collect();
                let content = self
                    .blocks
                    .into_iter()
                    .zip(&keep)
                    .filter(|(_, k)| **k)
                    .map(|(b, _)| b)
                    .collect();
                Settled::Message {
                    content,
                    usage: self.usage,
                    replay_state: replay_state.map(|state| filter_replay_blocks(state, &keep)),
                    finish,
                }
            }
        }
    }
}

fn is_tool_call(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("tool-call")
}

fn filter_replay_blocks(mut state: Value, keep: &[bool]) -> Value {
    if let Some(Value::Array(blocks)) = state.get_mut("blocks") {
        let mut index = 0;
        blocks.retain(|_| {
            let kept = keep.get(index).copied().unwrap_or(true);
            index += 1;
            kept
        });
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn end(index: u32, block: Value) -> StreamChunk {
        StreamChunk::BlockEnd { index, block }
    }

    #[test]
    fn max_tokens_drops_tool_calls_from_content_and_replay_state() {
        let mut acc = Accumulator::new();
        acc.push(&end(0, json!({"type":"text","text":"Calling"})));
        acc.push(&end(
            1,
            json!({"type":"tool-call","id":"c","name":"bash","arguments":"{\"comm"}),
        ));
        acc.push(&StreamChunk::Finish {
            reason: FinishReason::MaxTokens,
            replay_state: Some(
                json!({"response":{},"blocks":[{"type":"text"},{"type":"tool-call"}]}),
            ),
        });
        let Settled::Message {
            content,
            replay_state,
            finish,
            ..
        } = acc.settle("p")
        else {
            panic!("expected a message");
        };
        assert_eq!(content, vec![json!({"type":"text","text":"Calling"})]);
        assert_eq!(
            replay_state,
            Some(json!({"response":{},"blocks":[{"type":"text"}]}))
        );
        assert_eq!(finish, FinishReason::MaxTokens);
    }

    #[test]
    fn missing_finish_and_empty_replies_fail() {
        let acc = Accumulator::new();
        assert!(matches!(acc.settle("p"), Settled::Failed(f) if f.code == "STREAM_CLOSED"));
        let mut acc = Accumulator::new();
        acc.push(&StreamChunk::Finish {
            reason: FinishReason::Stop,
            replay_state: None,
        });
        assert!(matches!(acc.settle("p"), Settled::Failed(f) if f.code == "EMPTY_RESPONSE"));
    }
}
