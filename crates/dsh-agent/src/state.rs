use crate::goals::{self, Goals};
use crate::history::History;
use crate::prose;
use dsh_protocol::catalog::{
    AbortReason, EventDraft, EventPayload, HeaderReason, InboxSpliced, InboxTarget, StepEnd,
    StepStart, ToolResult, TurnEnd, TurnEndReason, TurnStart,
};
use dsh_session::{EventLog, Message, SessionStatus, ToolMessage, TreeNotice, UserMessage};
use dsh_tools::{CancellationToken, ToolOutput};
use std::path::PathBuf;
use tokio::sync::watch;

/// How a message for the model joins an agent's inbox (see
/// [`State::deliver`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// A runtime notice (a settled child, a finished job).
    Notice,
    /// A message relayed from another agent.
    Relay,
}

/// What waiters of an agent see (`session/wait`, a parent's tree wait).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Activity {
    /// Whether the agent works (for a child: until its parent has its
    /// news).
    pub busy: bool,
    /// How many times it released its waiters: a waiter returns at the
    /// next release even when a goal's round begins at once after it.
    pub idles: u64,
    /// Whether the running turn is a goal's round begun at that release.
    pub in_round: bool,
}

/// A turn whose claims are done and whose steps have not run yet.
#[derive(Debug)]
pub struct PendingTurn {
    /// Turn number.
    pub turn: u32,
    /// Claimed messages: `next-step` notices first, then the prompt.
    pub claimed: Vec<UserMessage>,
}

/// Mutable state of one agent, guarded by the agent's mutex. Never held
/// across an `.await`.
pub struct State {
    /// The session's event log.
    pub log: EventLog,
    /// Prompts waiting for a turn, oldest first.
    pub next_turn: Vec<UserMessage>,
    /// Context waiting for the next step boundary.
    pub next_step: Vec<UserMessage>,
    /// Model-visible history (without the system message).
    pub history: History,
    /// Whether the agent is working (`running` announced, `idle` not yet).
    pub running: bool,
    /// The last turn number started.
    pub turn: u32,
    /// A turn begun but not yet picked up by the loop.
    pub pending: Option<PendingTurn>,
    /// The effective working directory.
    pub cwd: PathBuf,
    /// System prompt text last sent.
    pub system_prompt: Option<String>,
    /// Runtime-context text last sent.
    pub runtime_context: Option<String>,
    /// `request/header` reason still to announce.
    pub header_reason: Option<HeaderReason>,
    /// Whether `request/context` was announced.
    pub context_announced: bool,
    /// Whether the session has a title.
    pub titled: bool,
    /// Mirrors `running` for waiters.
    pub activity: watch::Sender<Activity>,
    /// The turn between `turn/start` and `turn/end`, if any.
    pub open_turn: Option<u32>,
    /// The step between `step/start` and `step/end`, if any.
    pub open_step: Option<u32>,
    /// Tool calls of the open step without a result yet, in model order,
    /// with the seq of their `tool/call` once it is recorded.
    pub pending_calls: Vec<(String, Option<u64>)>,
    /// Set once disposal has closed the log; later appends are dropped.
    pub disposed: bool,
    /// How the last turn ended.
    pub last_end: Option<TurnEndReason>,
    /// Cancelled when the agent is disposed: the parent of every turn's
    /// token.
    pub cancel: CancellationToken,
    /// Cancels the open turn (`interrupt_agent`); replaced at each turn.
    pub turn_cancel: CancellationToken,
    /// Whether `next-step` holds input that must be answered (a steer, not
    /// an inject): a turn that ends meanwhile is followed by another.
    pub steered: bool,
    /// Tree notifications to announce once the inbox entry they belong to
    /// (by message id) is claimed.
    pub on_claim: Vec<(String, TreeNotice)>,
    /// History length when the open turn began: a fork inherits the
    /// history before it (the completed turns).
    pub turn_history_start: usize,
    /// The seq and number of the last `turn/end`, if any: a fork copies
    /// the log through it.
    pub completed: Option<(u64, u32)>,
    /// What was sent of the project's instructions and skills.
    pub project: crate::project::Tracker,
    /// The session's goal and the running turn's authority over it.
    pub goals: Goals,
}

impl State {
    /// A fresh state over `log`.
    pub fn new(
        log: EventLog,
        cwd: PathBuf,
        activity: watch::Sender<Activity>,
        cancel: CancellationToken,
    ) -> Self {
        Self {
            log,
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
            completed: None,
            project: crate::project::Tracker::default(),
            goals: Goals::default(),
        }
    }

    /// `step/start`.
    pub fn start_step(&mut self, turn: u32, step: u32) {
        self.event(StepStart { turn, step });
        self.open_step = Some(step);
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
        let bytes = crate::offload::content_bytes(&message.content);
        let seq = crate::offload::emit_sized(bytes, || {
            self.emit(EventDraft::surfaced(data).citing(call_seq.into_iter().collect()))
        });
        self.history.push(seq, turn, Message::Tool(message));
        goals::deliver_notice(self);
    }

    /// `step/end`.
    pub fn end_step(&mut self, turn: u32, step: u32) {
        self.event(StepEnd { turn, step });
        self.open_step = None;
    }

    /// `turn/end` with `reason`.
    pub fn end_turn(&mut self, turn: u32, reason: TurnEndReason) {
        let seq = self.event(TurnEnd {
            turn,
            reason: reason.clone(),
        });
        self.completed = Some((seq, turn));
        self.last_end = Some(reason);
        self.open_turn = None;
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
        goals::pause_at_disposal(self);
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

    /// Appends a plain event.
    pub fn event<D: EventPayload>(&mut self, data: D) -> u64 {
        self.emit(EventDraft::new(data))
    }

    /// Starts the next turn: `turn/start`, then the claims (all of
    /// `next-step`, then the oldest prompt of `next-turn`). The steps run on
    /// the agent's task.
    pub fn begin_turn(&mut self) {
        self.turn += 1;
        let turn = self.turn;
        self.event(TurnStart { turn });
        self.open_turn = Some(turn);
        self.turn_history_start = self.history.len();
        self.turn_cancel = self.cancel.child_token();
        let mut claimed = self.claim_next_step();
        let mut prompt = None;
        if !self.next_turn.is_empty() {
            let message = self.next_turn.remove(0);
            self.event(InboxSpliced::claim(InboxTarget::NextTurn, 1));
            self.announce_claimed(std::slice::from_ref(&message));
            prompt = Some(message);
        }
        let round = self.goals.turn_begins(prompt.as_ref());
        if self.running {
            self.activity.send_modify(|a| {
                a.busy = true;
                a.in_round = round;
            });
        }
        claimed.extend(prompt);
        self.pending = Some(PendingTurn { turn, claimed });
    }

    /// Claims everything in `next-step` (one splice when non-empty).
    pub fn claim_next_step(&mut self) -> Vec<UserMessage> {
        if self.next_step.is_empty() {
            return Vec::new();
        }
        let claimed = std::mem::take(&mut self.next_step);
        self.steered = false;
        self.event(InboxSpliced::claim(InboxTarget::NextStep, claimed.len()));
        self.announce_claimed(&claimed);
        claimed
    }

    /// Announces the tree notifications waiting for `claimed`.
    fn announce_claimed(&mut self, claimed: &[UserMessage]) {
        if self.on_claim.is_empty() {
            return;
        }
        for message in claimed {
            if let Some(i) = self.on_claim.iter().position(|(id, _)| *id == message.id) {
                let (_, notice) = self.on_claim.remove(i);
                self.log.announce(notice);
            }
        }
    }

    /// Delivers a message for the model. A notice (`Delivery::Notice`)
    /// joins the next step while a turn runs, or goes to `next-turn` of an
    /// idle agent and starts a turn; a relayed message (`Delivery::Relay`)
    /// always goes to `next-step`, and an idle agent starts a turn for it.
    /// `on_claim` is announced right after the splice when the agent is
    /// running, else right after the claim that takes the message (as the
    /// official runtime orders `subagent.finished`). Returns whether a turn
    /// was begun (the caller wakes the loop), or `None` when the agent is
    /// disposed and nothing was delivered.
    pub fn deliver(
        &mut self,
        message: UserMessage,
        delivery: Delivery,
        on_claim: Option<TreeNotice>,
    ) -> Option<bool> {
        if self.disposed {
            return None;
        }
        let running = self.running;
        let target = if running || delivery == Delivery::Relay {
            InboxTarget::NextStep
        } else {
            InboxTarget::NextTurn
        };
        let start = match target {
            InboxTarget::NextStep => self.next_step.len(),
            InboxTarget::NextTurn => self.next_turn.len(),
        };
        self.event(InboxSpliced::insert(
            target,
            start,
            std::slice::from_ref(&message),
        ));
        if let Some(notice) = on_claim {
            if running {
                // A running agent: the news is told at once.
                self.log.announce(notice);
            } else {
                self.on_claim.push((message.id.clone(), notice));
            }
        }
        match target {
            InboxTarget::NextStep => {
                self.next_step.push(message);
                self.steered = true;
            }
            InboxTarget::NextTurn => self.next_turn.push(message),
        }
        Some(self.wake())
    }

    /// Announces `running` and starts a turn, if the agent was idle.
    pub fn wake(&mut self) -> bool {
        if self.running {
            return false;
        }
        self.running = true;
        self.log.status(SessionStatus::Running);
        self.begin_turn();
        true
    }

    /// Announces `idle`, then releases waiters: a `session/wait` response
    /// must never overtake the `idle` notification.
    pub fn go_idle(&mut self) {
        self.go_idle_quietly();
        self.release_waiters();
    }

    /// Tells waiters the agent is idle.
    pub fn release_waiters(&mut self) {
        self.activity.send_modify(|a| {
            a.busy = false;
            a.in_round = false;
            a.idles += 1;
        });
    }

    /// Announces `idle` without releasing waiters yet (a child releases
    /// them once its parent has its news).
    pub fn go_idle_quietly(&mut self) {
        self.running = false;
        self.log.status(SessionStatus::Idle);
    }
}
