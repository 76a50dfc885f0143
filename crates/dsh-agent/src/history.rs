//! The model-visible history of an agent: each message with the seq of the
//! event that added it, the turn it belongs to and, for a reply, the tokens
//! the provider reported — what compaction needs to pick a span and to
//! cite it, and what resume rebuilds from the log.

use crate::estimate;
use dsh_protocol::message::{COMPACT_CHECKPOINT, KeptMessage, Role};
use dsh_session::Message;
use dsh_session::store::HistoryEntry;
use std::sync::{Arc, OnceLock};

/// A restored history whose packed text is at most this many bytes is
/// kept parsed (a few times this in memory, no parsing per step); a bigger
/// one stays packed and each message is parsed when a step reads it.
const PARSED_RESTORE_MAX: usize = 8 << 20;

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
    pub message: KeptMessage,
    /// The message's estimated tokens, once measured.
    tokens: OnceLock<u64>,
    /// Whether it is a compaction checkpoint, once looked at.
    checkpoint: OnceLock<bool>,
}

impl Entry {
    /// `message`, added by event `seq` in `turn`; `usage` for a reply.
    pub fn new(seq: u64, turn: u32, usage: Option<u64>, message: KeptMessage) -> Self {
        Self {
            seq,
            turn,
            usage,
            message,
            tokens: OnceLock::new(),
            checkpoint: OnceLock::new(),
        }
    }

    /// Whether this is a compaction checkpoint (looked at once: a packed
    /// message is not parsed again on every step).
    pub fn is_checkpoint(&self) -> bool {
        *self
            .checkpoint
            .get_or_init(|| self.is_user_from(COMPACT_CHECKPOINT))
    }

    /// The message's estimated tokens (measured once).
    pub fn tokens(&self) -> u64 {
        *self
            .tokens
            .get_or_init(|| estimate::message(&self.message.get()))
    }

    /// Whether this is a user message with `source.kind` `kind`.
    fn is_user_from(&self, kind: &str) -> bool {
        self.message.role() == Role::User
            && matches!(self.message.get().as_ref(), Message::User(m) if m.source_kind() == Some(kind))
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
        self.entries.push(Entry::new(
            seq,
            turn,
            usage,
            KeptMessage::from(Arc::clone(&message)),
        ));
        message
    }

    /// The entries, oldest first.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The messages, oldest first (shared, not copied).
    pub fn messages(&self) -> Vec<KeptMessage> {
        self.entries.iter().map(|e| e.message.clone()).collect()
    }

    /// Whether a user message with `source.kind` `kind` is in the history.
    pub fn holds_source(&self, kind: &str) -> bool {
        self.entries.iter().any(|e| e.is_user_from(kind))
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

    /// The history a stored log holds (system messages are sent apart):
    /// parsed when it is small, packed otherwise (see
    /// [`PARSED_RESTORE_MAX`]).
    pub fn restored(entries: Vec<HistoryEntry>) -> Self {
        let entries: Vec<HistoryEntry> = entries
            .into_iter()
            .filter(|e| e.message.role() != Role::System)
            .collect();
        let packed: usize = entries.iter().map(|e| e.message.packed_len()).sum();
        let parse = packed <= PARSED_RESTORE_MAX;
        let entries = entries
            .into_iter()
            .map(|e| {
                let message = if parse {
                    e.message.into_parsed()
                } else {
                    e.message
                };
                let turn = u32::try_from(e.turn).unwrap_or(u32::MAX);
                Entry::new(e.seq, turn, e.usage, message)
            })
            .collect();
        Self { entries }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::{SystemMessage, UserMessage, text_block};

    /// A stored history of `n` prompts of `len` characters and a system
    /// message, packed as resume hands it over.
    fn stored(n: u64, len: usize) -> Vec<HistoryEntry> {
        let system = Message::System(SystemMessage::prompt("sys"));
        std::iter::once(system)
            .chain((0..n).map(|i| {
                let text = format!("{i} {}", "x".repeat(len));
                Message::User(UserMessage::prompt(vec![text_block(text)]))
            }))
            .enumerate()
            .map(|(seq, message)| HistoryEntry {
                seq: seq as u64,
                message: KeptMessage::packed(message),
                turn: 1,
                usage: None,
            })
            .collect()
    }

    #[test]
    fn a_small_history_is_restored_parsed_a_big_one_stays_packed() {
        let small = History::restored(stored(3, 100));
        assert_eq!(small.len(), 3, "the system message is sent apart");
        assert!(small.entries().iter().all(|e| e.message.packed_len() == 0));
        let big = History::restored(stored(3, PARSED_RESTORE_MAX / 2));
        assert!(big.entries().iter().all(|e| e.message.packed_len() > 0));
        // Either way the messages read back as stored, in order.
        let texts: Vec<String> = big
            .messages()
            .iter()
            .map(|m| match m.get().as_ref() {
                Message::User(u) => dsh_session::text_of(&u.content).collect(),
                _ => String::new(),
            })
            .map(|t: String| t.split(' ').next().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(texts, ["0", "1", "2"]);
        assert!(big.entries()[0].tokens() > small.entries()[0].tokens() + 1_000_000);
    }

    #[test]
    fn a_packed_checkpoint_is_known_as_one() {
        let checkpoint = UserMessage::compact_checkpoint(vec![text_block("sum")], "c");
        let entry = Entry::new(4, 2, None, KeptMessage::packed(Message::User(checkpoint)));
        assert!(entry.is_checkpoint());
        let prompt = UserMessage::prompt(vec![text_block("hi")]);
        assert!(
            !Entry::new(5, 2, None, KeptMessage::packed(Message::User(prompt))).is_checkpoint()
        );
    }
}
