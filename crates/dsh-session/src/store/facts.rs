//! What resume rebuilds from a stored log: turn counter, title, working
//! directory, the two inbox queues, the model-visible history and the goal.

use super::error::StoreError;
use super::goal_facts::GoalFacts;
use dsh_protocol::catalog::{
    Event, InboxSpliced, InboxTarget, RangeOp, SessionEvent, SubagentCatalog, SubagentDescriptor,
    SurfaceOp,
};
use dsh_protocol::message::{KeptMessage, Message, SystemMessage, UserMessage};
use dsh_protocol::methods::{TokenCounts, UsageLedger};

/// The two durable inbox queues (§10.1), oldest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PendingInbox {
    /// Prompts waiting for a turn.
    pub next_turn: Vec<UserMessage>,
    /// Context waiting for the next step boundary.
    pub next_step: Vec<UserMessage>,
}

/// One model-visible message and the seq of the event that added it.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEntry {
    /// Seq of the `system/message`, `user/message`, `assistant/message` or
    /// `tool/result` event.
    pub seq: u64,
    /// The message, packed: a resumed history may be far bigger than the
    /// memory its parsed trees would take (see [`KeptMessage`]).
    pub message: KeptMessage,
    /// The turn open (or last started) when the message was added.
    pub turn: u64,
    /// For an assistant message: the tokens its request and reply cost, as
    /// the provider reported them (`usage.totalTokens`).
    pub usage: Option<u64>,
}

/// Facts resume needs from a stored log.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResumeFacts {
    /// The last `turn/start` number (0 when no turn ever started); the next
    /// turn is this + 1.
    pub last_turn: u64,
    /// Whether a `session/title` was recorded.
    pub has_title: bool,
    /// `cwd` of the last `working-directory/change`, if any (else the
    /// header's `cwd` applies).
    pub cwd: Option<String>,
    /// The inbox queues after replaying every `agent/inbox/spliced`.
    pub inbox: PendingInbox,
    /// The model-visible history in seq order, system messages included.
    pub history: Vec<HistoryEntry>,
    /// The last system message (the prompt last sent).
    pub last_system: Option<SystemMessage>,
    /// The last runtime-context user message (`source.kind:
    /// "runtime-context"`).
    pub last_runtime_context: Option<UserMessage>,
    /// The children this session started (`subagent/catalog`), oldest
    /// first.
    pub children: Vec<SubagentCatalog>,
    /// How this session was started, if it is a child
    /// (`subagent/descriptor`).
    pub descriptor: Option<SubagentDescriptor>,
    /// The session's goal (`goal/change`, round messages).
    pub goal: GoalFacts,
    /// The token counts of the session's own model replies, per model (a
    /// fork's inherited replies, before its `session/end-seed`, are its
    /// parent's).
    pub usage: UsageLedger,
}

/// Applies one `agent/inbox/spliced` to its queue: remove `removedCount`
/// entries at `start`, insert `inserted` there (clamped like
/// `Array.prototype.splice`). `outcome: "canceled"` splices remove the same
/// way.
fn splice(inbox: &mut PendingInbox, splice: InboxSpliced) {
    let queue = match splice.target {
        InboxTarget::NextTurn => &mut inbox.next_turn,
        InboxTarget::NextStep => &mut inbox.next_step,
    };
    let start = splice.start.min(queue.len());
    let removed = splice.removed_count.unwrap_or(0).min(queue.len() - start);
    queue.splice(start..start + removed, splice.inserted);
}

/// Applies a message event's `surfaceOp` to the history: `"append"` (or
/// none) appends; `{"op":"replace","startSeq":a,"endSeq":b}` replaces the
/// entries from the one added by event `a` through the one added by event
/// `b` (in history order) with this one.
fn surface<D>(
    history: &mut Vec<HistoryEntry>,
    event: &SessionEvent<D>,
    entry: HistoryEntry,
) -> Result<(), StoreError> {
    let (start, end) = match &event.surface_op {
        None | Some(SurfaceOp::Append(_)) => {
            history.push(entry);
            return Ok(());
        }
        Some(SurfaceOp::Range(RangeOp::Replace { start_seq, end_seq })) => (*start_seq, *end_seq),
        Some(SurfaceOp::Other(op)) => {
            return Err(StoreError::BadEvent {
                seq: event.seq,
                reason: format!("unsupported surfaceOp {op}"),
            });
        }
    };
    // The range runs in history order, from the entry added by `start` to
    // the one added by `end`: a checkpoint condensed again is older than
    // the turns after it but has a larger seq.
    let first = history.iter().position(|e| e.seq == start);
    let last = history.iter().rposition(|e| e.seq == end);
    if let (Some(first), Some(last)) = (first, last)
        && first <= last
    {
        history.splice(first..=last, [entry]);
        return Ok(());
    }
    // Otherwise by value: every entry whose seq is in the range.
    let at = history
        .iter()
        .position(|e| e.seq >= start && e.seq <= end)
        .unwrap_or(history.len());
    history.retain(|e| e.seq < start || e.seq > end);
    history.insert(at.min(history.len()), entry);
    Ok(())
}

/// The typed payload of `event`, or why it does not fit its type.
pub(crate) fn typed(event: &SessionEvent) -> Result<Event, StoreError> {
    event.typed().map_err(|e| StoreError::BadEvent {
        seq: event.seq,
        reason: format!("{}: {e}", event.kind),
    })
}

impl ResumeFacts {
    /// The history entry `event` adds with `message`.
    fn entry<D>(
        &self,
        event: &SessionEvent<D>,
        message: Message,
        usage: Option<u64>,
    ) -> HistoryEntry {
        HistoryEntry {
            seq: event.seq,
            message: KeptMessage::packed(message),
            turn: self.last_turn,
            usage,
        }
    }

    /// Adds the next event of the log (in seq order), or says why it does
    /// not fit its type.
    pub fn push(&mut self, event: &SessionEvent) -> Result<(), StoreError> {
        let typed = typed(event)?;
        self.apply(event, typed)
    }

    /// Adds `event`, whose payload is `typed`.
    pub(crate) fn apply<D>(
        &mut self,
        event: &SessionEvent<D>,
        typed: Event,
    ) -> Result<(), StoreError> {
        match typed {
            Event::TurnStart(start) => self.last_turn = start.turn.into(),
            Event::SessionTitle(_) => self.has_title = true,
            Event::WorkingDirectoryChange(change) => self.cwd = Some(change.cwd),
            Event::InboxSpliced(spliced) => {
                self.goal.inserted(&spliced.inserted);
                splice(&mut self.inbox, spliced);
            }
            Event::GoalChange(change) => self.goal.change(change),
            Event::SystemMessage(system) => {
                self.last_system = Some(system.message.clone());
                let entry = self.entry(event, Message::System(system.message), None);
                surface(&mut self.history, event, entry)?;
            }
            Event::UserMessage(message) => {
                if message.source_kind() == Some("runtime-context") {
                    self.last_runtime_context = Some(message.clone());
                }
                let entry = self.entry(event, Message::User(message), None);
                surface(&mut self.history, event, entry)?;
            }
            Event::SessionEndSeed(seed) if seed.inherited == Some(true) => {
                self.usage = UsageLedger::default();
            }
            Event::AssistantMessage(assistant) => {
                if let Some(usage) = &assistant.usage {
                    let model = assistant.message.source.get("model");
                    let model = model
                        .and_then(serde_json::Value::as_str)
                        .unwrap_or("unknown");
                    self.usage.record(model, &TokenCounts::of(usage));
                }
                let usage = assistant.usage.map(|u| u.total_tokens);
                let entry = self.entry(event, Message::Assistant(assistant.message), usage);
                surface(&mut self.history, event, entry)?;
            }
            Event::ToolResult(result) => {
                let entry = self.entry(event, Message::Tool(result.message), None);
                surface(&mut self.history, event, entry)?;
            }
            Event::SubagentCatalog(child)
                if !self.children.iter().any(|c| c.child_id == child.child_id) =>
            {
                self.children.push(child);
            }
            Event::SubagentDescriptor(descriptor) => self.descriptor = Some(descriptor),
            _ => {}
        }
        Ok(())
    }
}

/// Rebuilds the [`ResumeFacts`] of a stored log (repair closers included or
/// not: they add no messages but the interrupted tool results), event by
/// event through [`ResumeFacts::push`].
///
/// `developer/message` events (tool registry changes, ◆) are not part of
/// the history returned here.
pub fn resume_facts(events: &[SessionEvent]) -> Result<ResumeFacts, StoreError> {
    let mut facts = ResumeFacts::default();
    for event in events {
        facts.push(event)?;
    }
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    const INBOX_SPLICED: &str = "agent/inbox/spliced";
    const USER_MESSAGE: &str = "user/message";

    fn event(seq: u64, kind: &str, data: Value) -> SessionEvent {
        SessionEvent {
            kind: kind.to_owned(),
            seq,
            time: seq,
            data,
            source_event_seqs: None,
            surface_op: Some(SurfaceOp::APPEND),
            ignorable: None,
        }
    }

    fn user(id: &str) -> Value {
        json!({"content": [{"type": "text", "text": id}], "source": {"kind": "user"}, "role": "user", "id": id})
    }

    fn ids(queue: &[UserMessage]) -> Vec<&str> {
        queue.iter().map(|m| m.id.as_str()).collect()
    }

    #[test]
    fn inbox_splices_replay() {
        let splices = [
            json!({"target": "next-step", "start": 0, "inserted": [user("a")]}),
            json!({"target": "next-step", "start": 1, "inserted": [user("b")]}),
            json!({"target": "next-step", "start": 1, "inserted": [user("c")]}),
            json!({"target": "next-turn", "start": 0, "inserted": [user("p1")]}),
            json!({"target": "next-turn", "start": 1, "inserted": [user("p2")]}),
            json!({"target": "next-step", "start": 0, "removedCount": 1, "inserted": []}),
            json!({"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}),
            json!({"target": "next-step", "start": 1, "removedCount": 9, "inserted": [], "outcome": "canceled"}),
        ];
        let events: Vec<_> = splices
            .into_iter()
            .enumerate()
            .map(|(i, data)| event(i as u64, INBOX_SPLICED, data))
            .collect();
        let facts = resume_facts(&events).unwrap();
        assert_eq!(ids(&facts.inbox.next_step), ["c"]);
        assert_eq!(ids(&facts.inbox.next_turn), ["p2"]);
        let bad = [event(
            0,
            INBOX_SPLICED,
            json!({"target": "elsewhere", "start": 0}),
        )];
        let err = resume_facts(&bad)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.starts_with("corrupt session log: event 0: "), "{err}");
    }

    #[test]
    fn replace_swaps_the_covered_entries() {
        let mut replace = event(3, USER_MESSAGE, user("summary"));
        replace.surface_op = Some(SurfaceOp::Range(RangeOp::Replace {
            start_seq: 1,
            end_seq: 2,
        }));
        let events = [
            event(0, USER_MESSAGE, user("a")),
            event(1, USER_MESSAGE, user("b")),
            event(2, USER_MESSAGE, user("c")),
            replace,
            event(4, USER_MESSAGE, user("d")),
        ];
        let facts = resume_facts(&events).unwrap();
        let seqs: Vec<u64> = facts.history.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [0, 3, 4]);
    }

    #[test]
    fn replace_runs_in_history_order_over_an_earlier_checkpoint() {
        // Checkpoint 5 replaced 0..=1 and stands before 2 and 3; checkpoint
        // 9 condenses 5, 2 and 3 (its range is 5..=3 in history order).
        let mut first = event(5, USER_MESSAGE, user("ckpt-1"));
        first.surface_op = Some(SurfaceOp::Range(RangeOp::Replace {
            start_seq: 0,
            end_seq: 1,
        }));
        let mut second = event(9, USER_MESSAGE, user("ckpt-2"));
        second.surface_op = Some(SurfaceOp::Range(RangeOp::Replace {
            start_seq: 5,
            end_seq: 3,
        }));
        let events = [
            event(0, USER_MESSAGE, user("a")),
            event(1, USER_MESSAGE, user("b")),
            event(2, USER_MESSAGE, user("c")),
            event(3, USER_MESSAGE, user("d")),
            first,
            event(6, USER_MESSAGE, user("e")),
            second,
        ];
        let facts = resume_facts(&events).unwrap();
        let seqs: Vec<u64> = facts.history.iter().map(|e| e.seq).collect();
        assert_eq!(seqs, [9, 6]);
    }
}
