use dsh_session::{EventDraft, EventLog, Message, SessionStatus, UserMessage, events};
use serde::Serialize;
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::watch;

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
    pub history: Vec<Arc<Message>>,
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
    /// `request/header` reason still to announce (`initial`, `resume`).
    pub header_reason: Option<&'static str>,
    /// Whether `request/context` was announced.
    pub context_announced: bool,
    /// Whether the session has a title.
    pub titled: bool,
    /// Mirrors `running` for waiters.
    pub activity: watch::Sender<bool>,
}

impl State {
    /// Appends an event; returns its seq.
    pub fn emit<D: Serialize>(&mut self, draft: EventDraft<'_, D>) -> u64 {
        let seq = self.log.next_seq();
        if let Err(err) = self.log.append(draft) {
            tracing::error!(session = self.log.session_id(), "event not appended: {err}");
        }
        seq
    }

    /// Appends a plain event.
    pub fn event<D: Serialize>(&mut self, kind: &str, data: &D) -> u64 {
        self.emit(EventDraft::new(kind, data))
    }

    /// Starts the next turn: `turn/start`, then the claims (all of
    /// `next-step`, then the oldest prompt of `next-turn`). The steps run on
    /// the agent's task.
    pub fn begin_turn(&mut self) {
        self.turn += 1;
        let turn = self.turn;
        self.event(events::TURN_START, &json!({"turn": turn}));
        let mut claimed = self.claim_next_step();
        if !self.next_turn.is_empty() {
            let prompt = self.next_turn.remove(0);
            self.event(
                events::INBOX_SPLICED,
                &json!({"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}),
            );
            claimed.push(prompt);
        }
        self.pending = Some(PendingTurn { turn, claimed });
    }

    /// Claims everything in `next-step` (one splice when non-empty).
    pub fn claim_next_step(&mut self) -> Vec<UserMessage> {
        if self.next_step.is_empty() {
            return Vec::new();
        }
        let claimed = std::mem::take(&mut self.next_step);
        self.event(
            events::INBOX_SPLICED,
            &json!({"target": "next-step", "start": 0, "removedCount": claimed.len(), "inserted": []}),
        );
        claimed
    }

    /// Announces `running` and starts a turn, if the agent was idle.
    pub fn wake(&mut self) -> bool {
        if self.running {
            return false;
        }
        self.running = true;
        self.log.status(SessionStatus::Running);
        self.activity.send_replace(true);
        self.begin_turn();
        true
    }

    /// Announces `idle`, then releases waiters: a `session/wait` response
    /// must never overtake the `idle` notification.
    pub fn go_idle(&mut self) {
        self.running = false;
        self.log.status(SessionStatus::Idle);
        self.activity.send_replace(false);
    }
}
