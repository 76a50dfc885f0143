//! The inboxes and the turn transitions of [`AgentState`]: enqueue with
//! its splice, deliver, claim, wake, begin a turn or a round, go idle.

use super::state::{AgentState, Delivery, PendingTurn};
use dsh_protocol::catalog::{InboxSpliced, InboxTarget, TurnStart};
use dsh_session::{SessionStatus, TreeNotice, UserMessage};

impl AgentState {
    /// Appends `message` to the inbox `target`, with its splice event.
    pub fn enqueue(&mut self, target: InboxTarget, message: UserMessage) {
        let queue = match target {
            InboxTarget::NextStep => &self.next_step,
            InboxTarget::NextTurn => &self.next_turn,
        };
        self.event(InboxSpliced::insert(
            target,
            queue.len(),
            std::slice::from_ref(&message),
        ));
        match target {
            InboxTarget::NextStep => self.next_step.push(message),
            InboxTarget::NextTurn => self.next_turn.push(message),
        }
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
        self.abort_reason = None;
        self.turn_started_at = dsh_session::now_ms();
        let mut claimed = self.claim_next_step();
        let mut prompt = None;
        if !self.next_turn.is_empty() {
            let message = self.next_turn.remove(0);
            self.event(InboxSpliced::claim(InboxTarget::NextTurn, 1));
            self.announce_claimed(std::slice::from_ref(&message));
            prompt = Some(message);
        }
        let hooks = self.hooks.clone();
        for feature in hooks.iter() {
            feature.turn_started(self, prompt.as_ref());
        }
        let round = std::mem::take(&mut self.round_next);
        if self.running {
            self.activity.send_modify(|a| {
                a.busy = true;
                a.in_round = round;
            });
        }
        claimed.extend(prompt);
        self.pending = Some(PendingTurn { turn, claimed });
    }

    /// Drops the client's prompts queued in `next-turn` (each recorded as
    /// a cancelled splice; other queued input stays). Returns how many.
    pub fn drop_queued_prompts(&mut self) -> usize {
        let mut dropped = 0;
        let mut i = 0;
        while i < self.next_turn.len() {
            if self.next_turn[i].source_kind() == Some("user") {
                self.next_turn.remove(i);
                self.event(InboxSpliced {
                    start: i,
                    ..InboxSpliced::cancel(InboxTarget::NextTurn, 1)
                });
                dropped += 1;
            } else {
                i += 1;
            }
        }
        dropped
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
        let id = message.id.clone();
        self.enqueue(target, message);
        if let Some(notice) = on_claim {
            if running {
                // A running agent: the news is told at once.
                self.log.announce(notice);
            } else {
                self.on_claim.push((id, notice));
            }
        }
        if target == InboxTarget::NextStep {
            self.steered = true;
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

    /// Starts a round of automatic work on an agent that just went idle:
    /// `message` joins `next-turn`, `running` is announced and its turn
    /// begins as a new request series. Waiters of the idle just announced
    /// are released all the same (the turn counts as a round for them).
    /// Called from the loop task (a feature's [`idle`] hook), which runs
    /// the turn next.
    ///
    /// [`idle`]: super::hooks::Feature::idle
    pub fn start_round(&mut self, message: UserMessage) {
        self.enqueue(InboxTarget::NextTurn, message);
        self.running = true;
        self.log.status(SessionStatus::Running);
        self.new_series();
        self.round_next = true;
        self.begin_turn();
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
