//! The durable inbox (§10.1): what is queued for the next turn or step.

use super::kind;
use crate::message::UserMessage;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `agent/inbox/spliced {target, start, removedCount?, inserted,
/// outcome?}`: messages inserted into a queue (a prompt's receipt, a
/// notice), claimed from it (`removedCount`) or cancelled (`outcome`).
/// Applied like `Array.prototype.splice`. A writer borrows the messages
/// (`I = &[UserMessage]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(bound = "I: JsonSchema + Default + Serialize")]
pub struct InboxSpliced<I = Vec<UserMessage>> {
    /// The queue.
    pub target: InboxTarget,
    /// Where the splice starts.
    pub start: usize,
    /// Entries removed at `start`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_count: Option<usize>,
    /// Entries inserted at `start`.
    #[serde(default)]
    pub inserted: I,
    /// `canceled` when disposal dropped the entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<SpliceOutcome>,
}
kind!(InboxSpliced<I>, "agent/inbox/spliced");

impl<'a> InboxSpliced<&'a [UserMessage]> {
    /// Inserts `messages` at `start` of `target`.
    pub fn insert(target: InboxTarget, start: usize, messages: &'a [UserMessage]) -> Self {
        Self {
            target,
            start,
            removed_count: None,
            inserted: messages,
            outcome: None,
        }
    }

    /// Claims the first `count` entries of `target`.
    pub fn claim(target: InboxTarget, count: usize) -> Self {
        Self {
            removed_count: Some(count),
            ..Self::insert(target, 0, &[])
        }
    }

    /// Cancels the first `count` entries of `target`.
    pub fn cancel(target: InboxTarget, count: usize) -> Self {
        Self {
            outcome: Some(SpliceOutcome::Canceled),
            ..Self::claim(target, count)
        }
    }
}

/// The two inbox queues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum InboxTarget {
    /// Prompts waiting for a turn.
    NextTurn,
    /// Context waiting for the next step boundary.
    NextStep,
}

/// `agent/inbox/spliced.outcome`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SpliceOutcome {
    /// The removed entries were dropped, not claimed.
    Canceled,
}
