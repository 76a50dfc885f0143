//! When to compact and what: the context pressure of the next request and
//! the oldest span of whole turns to condense, as measured on the official
//! runtime (README, "Compaction").

use crate::history::Entry;

/// Tokens kept free for the reply and the summary call (`headroomTokens`),
/// and the token cap of a summary call — a quarter of the window at most.
pub const HEADROOM: u64 = 65_536;

/// The thresholds of one agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// The model's context window.
    pub window: u64,
    /// Pressure above which the history is compacted: 80 % of the window,
    /// or the window less the reply's token cap and the headroom if that is
    /// less (measured: 678,464 for a 1,000,000 window and the default cap
    /// of 256,000; 800,000 with a cap of 1,000) — but never below half the
    /// window (a small `DSH_CONTEXT_WINDOW` under a large cap).
    pub threshold: u64,
    /// Tokens of recent context kept verbatim: 16 % of the window.
    pub retain: u64,
    /// Token cap of a summary call: [`HEADROOM`], or a quarter of a
    /// smaller window.
    pub summary_max_tokens: u64,
}

impl Budget {
    /// The budget of a `window`-token model answering with at most
    /// `max_tokens`.
    pub fn new(window: u64, max_tokens: u64) -> Self {
        let headroom = HEADROOM.min(window / 4);
        Self {
            window,
            summary_max_tokens: headroom,
            threshold: (window / 5 * 4)
                .min(window.saturating_sub(max_tokens.saturating_add(headroom)))
                .max(window / 2),
            retain: window / 25 * 4,
        }
    }

    /// Most tokens of history a summary call may carry beside `fixed` (the
    /// system prompt and the tools).
    pub fn summary_input(&self, fixed: u64) -> u64 {
        self.window.saturating_sub(self.summary_max_tokens + fixed)
    }
}

/// The pressure of the next request, the larger of two measures. First:
/// the tokens the provider reported for the last reply (its whole request
/// and answer) plus the estimate of what came after it, or — when no reply
/// reported usage since the last checkpoint was made — the estimate of
/// everything; `fixed` (system prompt, tools) and `pending` (claimed
/// messages not in the history yet) on top of the estimate, `pending` on
/// top of the reported usage. Second: the estimate of the history alone,
/// so a provider that reports little usage cannot keep a huge history
/// from being compacted (the official rule, found black-box: with usage
/// reported as 100 tokens, two 1.37 MB prompts in the history compact
/// before the next request whatever its size, two of 1.34 MB do not).
pub fn pressure(entries: &[Entry], pending: u64, fixed: u64) -> u64 {
    let history: u64 = entries.iter().map(Entry::tokens).sum();
    reported_pressure(entries, pending, fixed).max(history)
}

/// The first measure of [`pressure`].
fn reported_pressure(entries: &[Entry], pending: u64, fixed: u64) -> u64 {
    // A checkpoint made after a reply makes its usage stale.
    let compacted = entries
        .iter()
        .filter(|e| e.is_checkpoint())
        .map(|e| e.seq)
        .max();
    let anchor = entries
        .iter()
        .rposition(|e| e.usage.is_some() && compacted.is_none_or(|c| e.seq > c));
    match anchor {
        Some(i) => {
            let after: u64 = entries[i + 1..].iter().map(Entry::tokens).sum();
            entries[i].usage.unwrap_or(0) + after + pending
        }
        None => fixed + pending + entries.iter().map(Entry::tokens).sum::<u64>(),
    }
}

/// Where each run of entries of one turn starts (a checkpoint is a run of
/// its own: it is older than the turn it was made in).
fn group_starts(entries: &[Entry]) -> Vec<usize> {
    let mut starts = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let new_group = match i.checked_sub(1).map(|p| &entries[p]) {
            None => true,
            Some(prev) => prev.turn != entry.turn || prev.is_checkpoint() || entry.is_checkpoint(),
        };
        if new_group {
            starts.push(i);
        }
    }
    starts
}

/// The end (exclusive) of the oldest span to condense, or `None` when
/// nothing may be: the kept tail is the pending messages plus the most
/// recent whole turns until they reach `retain` tokens, and always holds
/// the last turn of the history.
pub fn span(entries: &[Entry], pending: u64, retain: u64) -> Option<usize> {
    let starts = group_starts(entries);
    let mut kept = pending;
    let mut end = entries.len();
    // The last turn is kept before the tail is measured.
    for &start in starts.iter().rev() {
        kept += entries[start..end].iter().map(Entry::tokens).sum::<u64>();
        end = start;
        if kept >= retain {
            break;
        }
    }
    (end > 0).then_some(end)
}

/// Shortens the span `..sizes.len()` to its oldest whole turns whose
/// tokens fit `limit` (at least one turn), so that the summary call fits
/// the window; `sizes` are the span's entries' tokens as the call carries
/// them.
pub fn fit(entries: &[Entry], sizes: &[u64], limit: u64) -> usize {
    let end = sizes.len();
    let starts = group_starts(&entries[..end]);
    let mut total = 0;
    for (n, &start) in starts.iter().enumerate() {
        let next = starts.get(n + 1).copied().unwrap_or(end);
        let group: u64 = sizes[start..next].iter().sum();
        if n > 0 && total + group > limit {
            return start;
        }
        total += group;
    }
    end
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimate;
    use dsh_protocol::message::KeptMessage;
    use dsh_session::{Message, UserMessage, text_block};

    /// An entry of `turn` holding `tokens` estimated tokens.
    fn entry(seq: u64, turn: u32, tokens: u64, usage: Option<u64>) -> Entry {
        let len = ((tokens - 8) * 4) as usize;
        let message = Message::User(UserMessage::prompt(vec![text_block("x".repeat(len))]));
        Entry::new(seq, turn, usage, KeptMessage::packed(message))
    }

    fn checkpoint(seq: u64, turn: u32) -> Entry {
        let message = Message::User(UserMessage::compact_checkpoint(
            vec![text_block("summary")],
            "c",
        ));
        Entry::new(seq, turn, None, KeptMessage::packed(message))
    }

    #[test]
    fn the_threshold_is_the_measured_one() {
        assert_eq!(Budget::new(1_000_000, 256_000).threshold, 678_464);
        assert_eq!(Budget::new(1_000_000, 1_000).threshold, 800_000);
        assert_eq!(Budget::new(1_000_000, 256_000).retain, 160_000);
        assert_eq!(Budget::new(60_000, 256_000).threshold, 30_000);
        assert_eq!(Budget::new(1_000_000, 256_000).summary_max_tokens, 65_536);
        assert_eq!(Budget::new(48_000, 256_000).summary_max_tokens, 12_000);
    }

    #[test]
    fn pressure_starts_from_the_last_reported_usage() {
        let entries = [
            entry(0, 1, 100, None),
            entry(1, 1, 50, Some(700_000)),
            entry(2, 2, 20, None),
        ];
        assert_eq!(pressure(&entries, 30, 5_000), 700_000 + 20 + 30);
        // Usage reported before a checkpoint no longer counts.
        let entries = [
            checkpoint(5, 3),
            entry(1, 1, 50, Some(700_000)),
            entry(2, 2, 20, None),
        ];
        let ckpt = estimate::message(&entries[0].message.get());
        assert_eq!(pressure(&entries, 30, 5_000), 5_000 + 30 + ckpt + 50 + 20);
        // Usage reported smaller than the history's estimate: the estimate
        // (without the pending prompt) is the pressure.
        let entries = [
            entry(0, 1, 342_500, None),
            entry(1, 1, 9, Some(100)),
            entry(2, 2, 342_500, None),
            entry(3, 2, 9, Some(100)),
        ];
        assert_eq!(pressure(&entries, 400_000, 5_000), 685_018);
        assert!(pressure(&entries, 400_000, 5_000) > Budget::new(1_000_000, 256_000).threshold);
    }

    #[test]
    fn the_span_keeps_the_last_turn_and_the_retained_tail() {
        // One turn only: nothing to condense.
        let one = [entry(0, 1, 300_000, None), entry(1, 1, 10, Some(1))];
        assert_eq!(span(&one, 300_000, 160_000), None);
        // Twelve 50k turns, a 50k prompt pending: 3 turns + the prompt kept
        // (the official capture shadowed turns 1–9 of 12).
        let turns: Vec<Entry> = (1..=12)
            .flat_map(|t| {
                [
                    entry(u64::from(t) * 2, t, 50_000, None),
                    entry(u64::from(t) * 2 + 1, t, 9, Some(1)),
                ]
            })
            .collect();
        assert_eq!(span(&turns, 50_000, 160_000), Some(18));
        // A checkpoint alone before a big last turn is condensed again.
        let entries = [
            checkpoint(32, 3),
            entry(21, 2, 393_000, None),
            entry(23, 2, 9, Some(1)),
        ];
        assert_eq!(span(&entries, 393_000, 160_000), Some(1));
    }

    #[test]
    fn fit_keeps_the_oldest_turns_that_fit() {
        let entries = [
            entry(0, 1, 100, None),
            entry(1, 2, 100, None),
            entry(2, 3, 100, None),
        ];
        let sizes: Vec<u64> = entries.iter().map(Entry::tokens).collect();
        assert_eq!(fit(&entries, &sizes, 250), 2);
        assert_eq!(fit(&entries, &sizes, 50), 1);
        assert_eq!(fit(&entries, &sizes, 1_000), 3);
        assert_eq!(fit(&entries, &sizes[..2], 1_000), 2);
    }
}
