//! [`AgentState`]: an agent's mutable state, guarded by its core's mutex.
//!
//! Its fields are private to the core; features change it through
//! methods, each of which appends its events with the change it records,
//! so every invariant is kept in one place: an inbox push has its splice
//! event ([`AgentState::enqueue`]), `running` matches the announced status
//! ([`AgentState::wake`], [`AgentState::go_idle`]), a tool call gets its
//! result before its step ends. The inbox and turn transitions are in
//! `inbox.rs`; steps and results here.

use super::hooks::Hooks;
use crate::history::History;
use crate::{offload, prose};
use dsh_llm::{LlmFailure, LlmFailureCode, StreamRecorder};
use dsh_protocol::catalog::ToolSpec;
use dsh_protocol::catalog::{
    AbortReason, AssistantAttempt, EventDraft, EventPayload, HeaderReason, InboxSpliced,
    InboxTarget, StepEnd, StepStart, ToolResult, TurnEnd, TurnEndReason,
};
use dsh_session::{EventLog, LiveNotice, Message, ToolMessage, TreeNotice, UserMessage};
use dsh_tools::{CancellationToken, ToolOutput};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::watch;

/// `source.kind` of the runtime-context snapshot.
const RUNTIME_CONTEXT: &str = "runtime-context";

/// How a message for the model joins an agent's inbox (see
/// [`AgentState::deliver`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// A runtime notice (a settled child, a finished job).
    Notice,
    /// A message relayed from another agent.
    Relay,
}

/// What waiters of an agent see (`session/wait`, a parent's tree wait).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Activity {
    /// Whether the agent works (for a child: until its parent has its
    /// news).
    pub busy: bool,
    /// How many times it released its waiters: a waiter returns at the
    /// next release even when a round begins at once after it.
    pub idles: u64,
    /// Whether the running turn is a round begun at that release.
    pub in_round: bool,
}

/// A turn whose claims are done and whose steps have not run yet.
#[derive(Debug)]
pub(crate) struct PendingTurn {
    /// Turn number.
    pub turn: u32,
    /// Claimed messages: `next-step` notices first, then the prompt.
    pub claimed: Vec<UserMessage>,
}

/// Per-agent state of features, one value per type, kept under the
/// state's lock so a feature's change and its events are one step.
#[derive(Default)]
pub(crate) struct Extensions(HashMap<TypeId, Box<dyn Any + Send>>);

impl Extensions {
    /// The value of type `T`, made with `T::default()` on first use.
    pub fn get_mut<T: Any + Send + Default>(&mut self) -> &mut T {
        let slot = self
            .0
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(T::default()));
        match slot.downcast_mut::<T>() {
            Some(value) => value,
            // Invariant: the entry of `TypeId::of::<T>()` always holds a
            // `T` (only this method inserts).
            None => unreachable!("extension slot holds another type"),
        }
    }
}

/// Mutable state of one agent. Never held across an `.await`.
pub(crate) struct AgentState {
    /// The session's event log.
    pub(super) log: EventLog,
    /// The features (some are called inside state changes).
    pub(super) hooks: Hooks,
    /// Prompts waiting for a turn, oldest first.
    pub(super) next_turn: Vec<UserMessage>,
    /// Context waiting for the next step boundary.
    pub(super) next_step: Vec<UserMessage>,
    /// Model-visible history (without the system message).
    pub(super) history: History,
    /// Whether the agent is working (`running` announced, `idle` not yet).
    pub(super) running: bool,
    /// The last turn number started.
    pub(super) turn: u32,
    /// A turn begun but not yet picked up by the loop.
    pub(super) pending: Option<PendingTurn>,
    /// The effective working directory.
    pub(super) cwd: PathBuf,
    /// System prompt text last sent.
    pub(super) system_prompt: Option<String>,
    /// Runtime-context text last sent.
    pub(super) runtime_context: Option<String>,
    /// `request/header` reason still to announce.
    pub(super) header_reason: Option<HeaderReason>,
    /// The MCP tools of the current step, and the full tool list sent
    /// with it (the roster's, then the MCP tools'); `None` without MCP.
    pub(super) mcp: Option<(Arc<dsh_mcp::McpRoster>, Arc<Vec<ToolSpec>>)>,
    /// Estimated tokens of the MCP tools' specs (sent with every request
    /// beside the roster's, which `Core::fixed_tokens` counts).
    pub(super) mcp_tokens: u64,
    /// Whether `request/context` was announced.
    pub(super) context_announced: bool,
    /// Whether the session has a title.
    pub(super) titled: bool,
    /// Mirrors `running` for waiters.
    pub(super) activity: watch::Sender<Activity>,
    /// The turn between `turn/start` and `turn/end`, if any.
    pub(super) open_turn: Option<u32>,
    /// The step between `step/start` and `step/end`, if any.
    pub(super) open_step: Option<u32>,
    /// Tool calls of the open step without a result yet, in model order,
    /// with the seq of their `tool/call` once it is recorded.
    pub(super) pending_calls: Vec<(String, Option<u64>)>,
    /// Set once disposal has closed the log; later appends are dropped.
    pub(super) disposed: bool,
    /// How the last turn ended.
    pub(super) last_end: Option<TurnEndReason>,
    /// Cancelled when the agent is disposed: the parent of every turn's
    /// token.
    pub(super) cancel: CancellationToken,
    /// Cancels the open turn ([`super::Agent::interrupt`]); replaced at
    /// each turn.
    pub(super) turn_cancel: CancellationToken,
    /// Whether `next-step` holds input that must be answered (a steer, not
    /// an inject): a turn that ends meanwhile is followed by another.
    pub(super) steered: bool,
    /// Tree notifications to announce once the inbox entry they belong to
    /// (by message id) is claimed.
    pub(super) on_claim: Vec<(String, TreeNotice)>,
    /// History length when the open turn began: a fork inherits the
    /// history before it (the completed turns).
    pub(super) turn_history_start: usize,
    /// The seq and number of the last `turn/end`, if any: a fork copies
    /// the log through it.
    pub(super) completed: Option<(u64, u32)>,
    /// Whether the turn the loop runs next was begun as a round (see
    /// [`AgentState::start_round`]).
    pub(super) round_next: bool,
    /// Features' own state.
    pub(super) extensions: Extensions,
    /// Who stopped the open turn, when it was not its parent
    /// (`session/cancel`): the turn's `aborted` reason.
    pub(super) abort_reason: Option<AbortReason>,
    /// When the open turn began (ms since the epoch): the jobs started
    /// since are the turn's.
    pub(super) turn_started_at: u64,
}

impl AgentState {
    /// A fresh state over `log`.
    pub fn new(
        log: EventLog,
        cwd: PathBuf,
        activity: watch::Sender<Activity>,
        cancel: CancellationToken,
        hooks: Hooks,
    ) -> Self {
        Self {
            log,
            hooks,
            next_turn: Vec::new(),
            next_step: Vec::new(),
            history: History::default(),
            running: false,
            turn: 0,
            pending: None,
            cwd,
            system_prompt: None,
            runtime_context: None,
            header_reason: Some(HeaderReason::Initial),
            mcp: None,
            mcp_tokens: 0,
            context_announced: false,
            titled: false,
            activity,
            open_turn: None,
            open_step: None,
            pending_calls: Vec::new(),
            disposed: false,
            last_end: None,
            turn_cancel: cancel.child_token(),
            cancel,
            steered: false,
            on_claim: Vec::new(),
            turn_history_start: 0,
            abort_reason: None,
            turn_started_at: 0,
            completed: None,
            round_next: false,
            extensions: Extensions::default(),
        }
    }

    /// Appends an event; returns its seq.
    pub fn emit<D: EventPayload>(&mut self, draft: EventDraft<D>) -> u64 {
        let seq = self.log.next_seq();
        if self.disposed {
            // The loop task may run a last synchronous stretch after
            // disposal closed the log's turn; nothing follows the closers.
            tracing::debug!(
                session = self.log.session_id(),
                kind = draft.kind(),
                "event after disposal dropped"
            );
            return seq;
        }
        if let Err(err) = self.log.append(draft) {
            tracing::error!(session = self.log.session_id(), "event not appended: {err}");
        }
        seq
    }

    /// Appends a plain event; returns its seq.
    pub fn event<D: EventPayload>(&mut self, data: D) -> u64 {
        self.emit(EventDraft::new(data))
    }

    /// Writes what was appended (a barrier before anything the events
    /// promise happens).
    pub fn flush(&mut self) {
        self.log.flush();
    }

    /// Tells the client of a change in the session tree.
    pub fn announce(&mut self, notice: TreeNotice) {
        self.log.announce(notice);
    }

    /// Starts publishing the log to `observer` (a new child, once its
    /// parent has announced it).
    pub fn publish(&mut self, observer: std::sync::Arc<dyn dsh_session::EventObserver>) {
        self.log.publish(observer);
    }

    /// The `turn/end` reason of a turn stopped because its session log
    /// cannot be written (a full disk, an I/O error): kind `error` with
    /// `{message: "session log of \"<id>\" cannot be written: <cause>",
    /// code: "SESSION_LOG_UNWRITABLE"}`. Nothing more of the turn is done
    /// (no model request, no tool) while what it did is not on disk. The
    /// reason itself is held back with the events until a write succeeds.
    pub fn log_failure(&self) -> Option<TurnEndReason> {
        self.log.unwritable().map(|err| TurnEndReason::Error {
            error: LlmFailure::new(LlmFailureCode::SessionLogUnwritable, err.to_string()),
        })
    }

    /// Announces a notification that is not an event (never persisted)
    /// after the events appended so far.
    pub fn announce_live(&mut self, notice: LiveNotice) {
        self.log.announce_live(notice);
    }

    /// The number of the last turn started (0 before any).
    pub fn last_turn(&self) -> u32 {
        self.turn
    }

    /// The session id.
    pub fn session_id(&self) -> &str {
        self.log.session_id()
    }

    /// The session log's file, when it is stored.
    pub fn log_file(&self) -> Option<&std::path::Path> {
        self.log.location().map(|l| l.file.as_path())
    }

    /// A feature's own state.
    pub fn extension<T: Any + Send + Default>(&mut self) -> &mut T {
        self.extensions.get_mut::<T>()
    }

    /// Whether the agent is working (`running` announced, `idle` not yet).
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// The turn between `turn/start` and `turn/end`, if any.
    pub fn open_turn(&self) -> Option<u32> {
        self.open_turn
    }

    /// Whether disposal closed the agent.
    pub fn is_disposed(&self) -> bool {
        self.disposed
    }

    /// Whether a prompt waits for a turn.
    pub fn has_queued_turn(&self) -> bool {
        !self.next_turn.is_empty()
    }

    /// How the last turn ended.
    pub fn last_end(&self) -> Option<&TurnEndReason> {
        self.last_end.as_ref()
    }

    /// The model-visible history.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The token of the open turn (cancelled by an interrupt).
    pub fn turn_cancel(&self) -> CancellationToken {
        self.turn_cancel.clone()
    }

    /// `step/start`.
    pub fn start_step(&mut self, turn: u32, step: u32) {
        self.event(StepStart { turn, step });
        self.open_step = Some(step);
    }

    /// `assistant/attempt`: the records of a model attempt that did not
    /// settle as a reply.
    pub fn record_attempt(&mut self, turn: u32, step: u32, stream: &StreamRecorder) {
        offload::emit_sized(stream.text_bytes(), || {
            self.event(AssistantAttempt { turn, step, stream })
        });
    }

    /// `tool/result` for `call_id`, citing its `tool/call` when recorded;
    /// the call is no longer pending.
    pub fn tool_result(
        &mut self,
        turn: u32,
        step: u32,
        call_id: &str,
        call_seq: Option<u64>,
        output: ToolOutput,
    ) {
        self.pending_calls.retain(|(id, _)| id != call_id);
        let message = ToolMessage::new(call_id, output.content, output.is_error);
        // Serialised from borrows: the result text is not copied into a
        // `Value` on its way to the log.
        let data = ToolResult {
            turn,
            step,
            message: &message,
            meta: output.meta,
            error: output.error,
        };
        let bytes = offload::content_bytes(&message.content);
        let seq = offload::emit_sized(bytes, || {
            self.emit(EventDraft::surfaced(data).citing(call_seq.into_iter().collect()))
        });
        self.history.push(seq, turn, Message::Tool(message));
    }

    /// `step/end`.
    pub fn end_step(&mut self, turn: u32, step: u32) {
        self.event(StepEnd { turn, step });
        self.open_step = None;
    }

    /// `turn/end` with `reason` (an interrupt's reason replaced by the
    /// client's when `session/cancel` stopped the turn).
    pub fn end_turn(&mut self, turn: u32, reason: TurnEndReason) {
        let reason = match (self.abort_reason.take(), reason) {
            (
                Some(by),
                TurnEndReason::Aborted {
                    reason: AbortReason::Parent,
                },
            ) => TurnEndReason::Aborted { reason: by },
            (_, reason) => reason,
        };
        let seq = self.event(TurnEnd {
            turn,
            reason: reason.clone(),
        });
        self.completed = Some((seq, turn));
        self.last_end = Some(reason);
        self.open_turn = None;
    }

    /// The next request starts a new series (`request/header {reason:
    /// "series"}`) unless a header is already due.
    pub fn new_series(&mut self) {
        self.header_reason.get_or_insert(HeaderReason::Series);
    }

    /// Replaces the oldest `shadowed` history entries with `checkpoint`
    /// (compaction). The open turn's start moves with them, the next
    /// request starts a new series, and context the checkpoint shadowed is
    /// sent again.
    pub fn replace_history(&mut self, shadowed: usize, checkpoint: crate::history::Entry) {
        self.turn_history_start = self.turn_history_start.saturating_sub(shadowed) + 1;
        self.history.replace(0..shadowed, checkpoint);
        self.new_series();
        if !self.history.holds_source(RUNTIME_CONTEXT) {
            self.runtime_context = None;
        }
        let hooks = self.hooks.clone();
        for feature in hooks.iter() {
            feature.history_rewritten(self);
        }
    }

    /// Closes what disposal interrupts: an open step, an open turn (ended
    /// `aborted` by `disposed`), and every pending inbox entry (cancelled).
    pub fn dispose(&mut self) {
        if self.disposed {
            return;
        }
        if let (Some(turn), Some(step)) = (self.open_turn, self.open_step) {
            for (call_id, call_seq) in std::mem::take(&mut self.pending_calls) {
                self.tool_result(
                    turn,
                    step,
                    &call_id,
                    call_seq,
                    prose::disposed_tool_result(call_seq.is_some()),
                );
            }
            self.end_step(turn, step);
        }
        if let Some(turn) = self.open_turn.or(self.pending.as_ref().map(|p| p.turn)) {
            self.pending = None;
            self.end_turn(
                turn,
                TurnEndReason::Aborted {
                    reason: AbortReason::Disposed,
                },
            );
        }
        let hooks = self.hooks.clone();
        for feature in hooks.iter() {
            feature.disposed(self);
        }
        for (target, queue) in [
            (InboxTarget::NextStep, std::mem::take(&mut self.next_step)),
            (InboxTarget::NextTurn, std::mem::take(&mut self.next_turn)),
        ] {
            if !queue.is_empty() {
                self.event(InboxSpliced::cancel(target, queue.len()));
            }
        }
        self.on_claim.clear();
        self.disposed = true;
    }
}

/// The reason of a turn stopped by an interrupt: aborted by the parent.
pub(crate) fn interrupted() -> TurnEndReason {
    TurnEndReason::Aborted {
        reason: AbortReason::Parent,
    }
}
