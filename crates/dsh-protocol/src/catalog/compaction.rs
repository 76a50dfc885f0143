//! Compaction events: `compaction/start`, `compaction/summary` and
//! `compaction/end` (the checkpoint between them is a `user/message` with
//! `source.kind: "compact-checkpoint"`).

use super::{Usage, kind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `compaction/start {compactionId, turn}`: a span of the history is about
/// to be condensed, before a step of `turn`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionStart<S = String> {
    /// UUIDv4 naming this compaction in its three events.
    pub compaction_id: S,
    /// The open turn.
    pub turn: u32,
}
kind!(CompactionStart<S>, "compaction/start");

/// The seqs of the first and the last message a compaction shadows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SeqRange {
    /// First shadowed seq.
    pub start: u64,
    /// Last shadowed seq (inclusive).
    pub end: u64,
}

/// `compaction/summary {compactionId, summary, rawOutput, llmStreamCall,
/// shadowedRange, shadowedSeqs, shadowedTokenCount, provider, model,
/// maxTokens, usage}`: what the summary call answered and what it replaces.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionSummary<S = String, B = Vec<Value>> {
    /// See [`CompactionStart::compaction_id`].
    pub compaction_id: S,
    /// The summary's text blocks (what the checkpoint carries).
    pub summary: B,
    /// Every content block the summary call returned.
    pub raw_output: B,
    /// Whether the summary came from a streamed model call (always here).
    pub llm_stream_call: bool,
    /// The shadowed span.
    pub shadowed_range: SeqRange,
    /// Seqs of the history messages the checkpoint replaces.
    pub shadowed_seqs: Vec<u64>,
    /// Estimated tokens of those messages.
    pub shadowed_token_count: u64,
    /// Provider of the summary call.
    pub provider: S,
    /// Model of the summary call.
    pub model: S,
    /// Token cap of the summary call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
    /// Usage the provider reported for the summary call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}
kind!(CompactionSummary<S, B>, "compaction/summary");

/// `compaction/end {compactionId, turn, error?}`: the compaction is over;
/// with `error` nothing was replaced and the turn goes on uncompacted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CompactionEnd<S = String> {
    /// See [`CompactionStart::compaction_id`].
    pub compaction_id: S,
    /// The open turn.
    pub turn: u32,
    /// Why the compaction failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<S>,
}
kind!(CompactionEnd<S>, "compaction/end");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Event;
    use serde_json::json;

    #[test]
    fn summary_keeps_the_official_key_order_and_reads_back() {
        let summary = CompactionSummary {
            compaction_id: "c1",
            summary: vec![json!({"type": "text", "text": "S"})],
            raw_output: vec![json!({"type": "text", "text": "S"})],
            llm_stream_call: true,
            shadowed_range: SeqRange { start: 8, end: 14 },
            shadowed_seqs: vec![8, 9, 14],
            shadowed_token_count: 393_375,
            provider: "deepseek-official",
            model: "deepseek-v4-flash",
            max_tokens: Some(65_536),
            usage: None,
        };
        let text = serde_json::to_string(&summary).unwrap();
        assert_eq!(
            text,
            r#"{"compactionId":"c1","summary":[{"type":"text","text":"S"}],"rawOutput":[{"type":"text","text":"S"}],"llmStreamCall":true,"shadowedRange":{"start":8,"end":14},"shadowedSeqs":[8,9,14],"shadowedTokenCount":393375,"provider":"deepseek-official","model":"deepseek-v4-flash","maxTokens":65536}"#
        );
        let value: Value = serde_json::from_str(&text).unwrap();
        assert!(matches!(
            Event::parse("compaction/summary", &value).unwrap(),
            Event::CompactionSummary(s) if s.shadowed_seqs == [8, 9, 14]
        ));
        let end = serde_json::to_string(&CompactionEnd {
            compaction_id: "c1",
            turn: 3,
            error: Some("boom"),
        })
        .unwrap();
        assert_eq!(end, r#"{"compactionId":"c1","turn":3,"error":"boom"}"#);
    }
}
