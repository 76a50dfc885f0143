//! The model-visible history of an agent: each message with the seq of the
//! event that added it, the turn it belongs to and, for a reply, the tokens
//! the provider reported — what compaction needs to pick a span and to
//! cite it, and what resume rebuilds from the log.

use dsh_protocol::message::COMPACT_CHECKPOINT;
use dsh_session::Message;
use dsh_session::store::HistoryEntry;
use std::sync::Arc;

/// One history message.
#[derive(Debug, Clone)]
pub struct Entry {
    /// Seq of the `user/message`, `assistant/message` or `tool/result`
    /// event that added it.
    pub seq: u64,
    /// The turn open when it was added.
    pub turn: u32,
    /// For a reply: `usage.totalTokens` as reported.
    pub usage: Option<u64>,
    /// The message, shared with the requests that carry it.
    pub message: Arc<Message>,
}

impl Entry {
    /// Whether this is a compaction checkpoint.
    pub fn is_checkpoint(&self) -> bool {
        matches!(self.message.as_ref(), Message::User(m) if m.source_kind() == Some(COMPACT_CHECKPOINT))
    }
}

/// The history, oldest first (no system message).
#[derive(Debug, Clone, Default)]
pub struct History {
    entries: Vec<Entry>,
}

impl History {
    /// Appends `message`, added by event `seq` in `turn`.
    pub fn push(&mut self, seq: u64, turn: u32, message: Message) -> Arc<Message> {
        self.push_reply(seq, turn, message, None)
    }

    /// Appends a reply whose call cost `usage` tokens.
    pub fn push_reply(
        &mut self,
        seq: u64,
        turn: u32,
        message: Message,
        usage: Option<u64>,
    ) -> Arc<Message> {
        let message = Arc::new(message);
        self.entries.push(Entry {
            seq,
            turn,
            usage,
            message: Arc::clone(&message),
        });
        message
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The messages, oldest first (shared, not copied).
    pub fn messages(&self) -> Vec<Arc<Message>> {
        self.entries
            .iter()
            .map(|e| Arc::clone(&e.message))
            .collect()
    }

    /// Whether a user message with `source.kind` `kind` is in the history.
    pub fn holds_source(&self, kind: &str) -> bool {
        self.entries.iter().any(
            |e| matches!(e.message.as_ref(), Message::User(m) if m.source_kind() == Some(kind)),
        )
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Replaces the entries `range` with `entry` (a checkpoint).
    pub fn replace(&mut self, range: std::ops::Range<usize>, entry: Entry) {
        self.entries.splice(range, [entry]);
    }

    /// The first `len` entries, as a fork inherits them.
    pub fn prefix(&self, len: usize) -> Self {
        Self {
            entries: self.entries[..len.min(self.entries.len())].to_vec(),
        }
    }

    /// The history a stored log holds (system messages are sent apart).
    pub fn restored(entries: Vec<HistoryEntry>) -> Self {
        let entries = entries
            .into_iter()
            .filter(|e| !matches!(e.message, Message::System(_)))
            .map(|e| Entry {
                seq: e.seq,
                turn: u32::try_from(e.turn).unwrap_or(u32::MAX),
                usage: e.usage,
                message: Arc::new(e.message),
            })
            .collect();
        Self { entries }
    }
}
