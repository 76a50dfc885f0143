//! [`Agent`]: the handle of one session's agent.

use super::shared::Core;
use super::tree::Child;
use dsh_protocol::catalog::{AbortReason, InboxTarget};
use dsh_protocol::notifications::SubagentStartedParams;
use dsh_session::{LogUnwritable, TreeNotice, UserMessage};
use serde_json::Value;
use std::sync::Arc;
use tokio::task::JoinHandle;

/// One session's agent: a handle whose loop task runs turns in the
/// background. Dropping the handle stops the loop; [`Agent::dispose`] also
/// closes the log.
pub struct Agent {
    core: Arc<Core>,
    task: JoinHandle<()>,
}

impl Agent {
    /// A handle over `core` whose loop runs as `task`.
    pub(crate) fn new(core: Arc<Core>, task: JoinHandle<()>) -> Self {
        Self { core, task }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.core.id
    }

    /// The session's workspace (header `cwd`).
    pub fn workspace(&self) -> &std::path::Path {
        &self.core.workspace
    }

    /// Enqueues a prompt on `next-turn` (the receipt splice) and, when idle,
    /// announces `running` and starts its turn. The log is flushed, then
    /// `ack` receives the message id while the agent is still locked, so
    /// whatever `ack` emits comes before any event of the turn's steps.
    ///
    /// When the session log cannot be written (a full disk), the prompt is
    /// refused with [`LogUnwritable`] and nothing is enqueued; the log is
    /// tried again first, so once space returns the session continues. If
    /// the write fails only for this prompt's own events, they stay held
    /// back (written and notified when a write succeeds), the prompt is
    /// refused all the same and the turn it started ends with the error
    /// `SESSION_LOG_UNWRITABLE` before any model request.
    pub fn prompt(&self, content: Vec<Value>, ack: impl FnOnce(&str)) -> Result<(), LogUnwritable> {
        self.prompt_with(content, |_, _| {}, ack)
    }

    /// [`prompt`](Self::prompt), with `attach` called under the state lock
    /// with the prompt's message id before it is enqueued (a feature keeps
    /// what belongs to the prompt, such as its budget).
    pub(crate) fn prompt_with(
        &self,
        content: Vec<Value>,
        attach: impl FnOnce(&mut super::AgentState, &str),
        ack: impl FnOnce(&str),
    ) -> Result<(), LogUnwritable> {
        let mut state = self.core.state();
        state.log.flush();
        if let Some(err) = state.log.unwritable() {
            return Err(err);
        }
        let message = UserMessage::prompt(content);
        let id = message.id.clone();
        attach(&mut state, &id);
        state.enqueue(InboxTarget::NextTurn, message);
        if state.wake() {
            self.core.wake.notify_one();
        }
        state.log.flush();
        if let Some(err) = state.log.unwritable() {
            return Err(err);
        }
        ack(&id);
        Ok(())
    }

    /// Stops the running turn, which ends `aborted` (`interrupted`): a
    /// model attempt is dropped, a running tool is cancelled and calls not
    /// yet started are recorded as not run. Queued input stays queued.
    /// Returns whether a turn was running.
    pub fn interrupt(&self) -> bool {
        let state = self.core.state();
        let running = state.open_turn.is_some() || state.pending.is_some();
        if running {
            state.turn_cancel.cancel();
        }
        running
    }

    /// `session/cancel` (dsh's extension): stops the running turn as
    /// [`interrupt`](Self::interrupt) does, recorded as stopped by the
    /// client; the children the turn started are cancelled with it, the
    /// jobs it started are killed unless `keep_jobs`, and with
    /// `drop_queued` the prompts queued behind it are dropped. Returns the
    /// turn cancelled (`None` when none ran) and how many prompts were
    /// dropped. Idempotent: a second cancel finds the turn already ending
    /// and names it again.
    pub fn cancel(&self, drop_queued: bool, keep_jobs: bool) -> (Option<u32>, usize) {
        let (turn, since, dropped) = {
            let mut state = self.core.state();
            let turn = state.open_turn.or(state.pending.as_ref().map(|p| p.turn));
            if turn.is_some() {
                state.abort_reason.get_or_insert(AbortReason::Client);
                state.turn_cancel.cancel();
            }
            let dropped = if drop_queued {
                state.drop_queued_prompts()
            } else {
                0
            };
            (turn, state.turn_started_at, dropped)
        };
        if let Some(turn) = turn {
            let started: Vec<Arc<Agent>> = self
                .core
                .children()
                .iter()
                .filter(|child| child.parent_turn == Some(turn))
                .map(|child| Arc::clone(&child.agent))
                .collect();
            for child in started {
                child.cancel(false, keep_jobs);
            }
            if !keep_jobs {
                self.core
                    .session_tools
                    .stop_jobs_started_since(since, "the turn was cancelled");
            }
        }
        (turn, dropped)
    }

    /// Flushes the log (a barrier before acknowledging a request).
    pub fn flush(&self) {
        self.core.state().log.flush();
    }

    /// Waits until the agent is idle (and, for a child, its parent has
    /// its news), or went idle since the call (a goal's round may have
    /// begun at once).
    pub async fn wait_idle(&self) {
        self.next_idle().await;
    }

    /// See [`wait_idle`](Self::wait_idle); returns the count of idles
    /// (`Activity::idles`) it saw.
    async fn next_idle(&self) -> u64 {
        let mut activity = self.core.state().activity.subscribe();
        let start = activity.borrow().idles;
        match activity.wait_for(|a| !a.busy || a.idles != start).await {
            Ok(a) => a.idles,
            // The agent is gone: nothing more to wait for.
            Err(_) => start,
        }
    }

    /// Waits until the agent and all its descendants are idle at once
    /// (what `session/wait` waits for): a child's news that wakes its
    /// parent starts the wait over. A goal's round begun at the idle seen
    /// is not waited for (as on the official runtime, `session/wait`
    /// returns at the idle before a round).
    pub async fn wait_tree_idle(&self) {
        loop {
            let seen = self.next_idle().await;
            for child in self.children() {
                Box::pin(child.wait_tree_idle()).await;
            }
            let own = *self.core.state().activity.borrow();
            let idle = !own.busy || (own.in_round && own.idles == seen);
            if idle && self.children().iter().all(|c| c.tree_quiet()) {
                return;
            }
        }
    }

    /// [`wait_tree_idle`](Self::wait_tree_idle), then `answer` (a
    /// `session/wait` response), before the idle that released the wait
    /// begins more work: a goal's round starts after the answer, as on the
    /// official runtime.
    pub async fn wait_tree_idle_then<R>(&self, answer: impl FnOnce() -> R) -> R {
        let _hold = self.core.hold_idle();
        self.wait_tree_idle().await;
        answer()
    }

    /// Whether the agent and every descendant are idle now (a child's
    /// news delivered to its parent).
    pub(crate) fn tree_quiet(&self) -> bool {
        !self.core.state().activity.borrow().busy && self.children().iter().all(|c| c.tree_quiet())
    }

    /// The children this agent started, oldest first.
    pub fn children(&self) -> Vec<Arc<Agent>> {
        self.core.child_agents()
    }

    /// Takes back a child restored from its log (a resumed parent's
    /// child): it is listed again and the client is told of the edge
    /// (`subagent.started`) through this session's log.
    pub fn adopt(&self, child: Arc<Agent>, label: &str) {
        let id = child.id().to_owned();
        // Read before the children lock (the state lock is never taken
        // under it).
        let parent_turn = self.core.state().open_turn();
        {
            let mut children = self.core.children();
            if children.iter().any(|c| c.id == id) {
                return;
            }
            children.push(Child {
                id: id.clone(),
                label: label.to_owned(),
                agent: child,
                parent_turn,
            });
        }
        self.announce_child(&id);
    }

    /// Tells the client again that `child` belongs to this session
    /// (`subagent.started`), as a resume of an open child does.
    pub fn announce_child(&self, child: &str) {
        self.core
            .state()
            .log
            .announce(TreeNotice::Started(SubagentStartedParams {
                parent_session_id: self.core.id.clone(),
                child_session_id: child.to_owned(),
            }));
    }

    /// The parent session of a child.
    pub fn parent_id(&self) -> Option<&str> {
        self.core.lineage.parent.as_ref().map(|p| p.id.as_str())
    }

    /// 0 for a root session, 1 for its children.
    pub fn depth(&self) -> u64 {
        self.core.lineage.depth
    }

    /// Tells the features the session is closing (`SessionEnd` hooks run
    /// and are recorded), before [`dispose`](Self::dispose). `end_of_input`:
    /// the client's input ended (else a `shutdown` or a close).
    pub async fn close(&self, end_of_input: bool) {
        let reason = if end_of_input {
            "prompt_input_exit"
        } else {
            "other"
        };
        for feature in self.core.hooks.iter() {
            feature.closing(&self.core, reason).await;
        }
    }

    /// Stops the agent for good: the loop stops, a running turn ends
    /// `aborted` (`disposed`), pending inbox entries are cancelled, and the
    /// log is synced to stable storage; waiters of [`wait_idle`](Self::wait_idle)
    /// return. Call with notifications muted.
    pub fn dispose(&self) {
        self.task.abort();
        self.core.cancel.cancel();
        self.core.session_tools.shutdown();
        let mut state = self.core.state();
        state.dispose();
        state.log.sync();
        // Nothing runs any more: release `session/wait` callers (with
        // notifications muted, no `idle` is sent).
        state.running = false;
        state.release_waiters();
    }

    /// The agent's core (for the features that act on it).
    pub(crate) fn core(&self) -> &Core {
        &self.core
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.task.abort();
        self.core.cancel.cancel();
        self.core.session_tools.shutdown();
    }
}
