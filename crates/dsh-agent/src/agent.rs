use crate::profile::Profile;
use crate::state::State;
use crate::turn;
use dsh_llm::{Provider, RetryPolicy, Route, ToolSpec};
use dsh_session::{EventLog, EventObserver, UserMessage, events};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

/// Everything needed to create an agent.
pub struct AgentConfig {
    /// The session id.
    pub session_id: String,
    /// Profile behaviour.
    pub profile: Arc<Profile>,
    /// The model route chosen at `initialize`.
    pub route: Route,
    /// The mounted provider of that route.
    pub provider: Arc<dyn Provider>,
    /// How failed model attempts are retried.
    pub retry: RetryPolicy,
    /// The session's workspace (header `cwd`): sandbox root and initial
    /// working directory.
    pub workspace: PathBuf,
    /// Receives the session's events and status transitions.
    pub observer: Option<Arc<dyn EventObserver>>,
}

/// Shared between the [`Agent`] handle and its loop task.
pub(crate) struct Inner {
    pub id: String,
    pub profile: Arc<Profile>,
    pub route: Route,
    pub provider: Arc<dyn Provider>,
    pub retry: RetryPolicy,
    pub workspace: PathBuf,
    pub tools: Arc<Vec<ToolSpec>>,
    state: Mutex<State>,
    wake: Notify,
}

impl Inner {
    /// Locks the state. A panic while the lock was held cannot leave the
    /// state half-updated in a way later appends depend on (every mutation
    /// is a complete event append), so a poisoned lock is recovered.
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// One session's agent: a handle whose loop task runs turns in the
/// background. Dropping the handle stops the loop.
pub struct Agent {
    inner: Arc<Inner>,
    task: JoinHandle<()>,
}

impl Agent {
    /// Creates the session and its agent. In the `sdk` profile this appends
    /// the three policy events. Must be called inside a Tokio runtime.
    pub fn create(config: AgentConfig) -> Self {
        let (activity, _) = watch::channel(false);
        let mut state = State {
            log: EventLog::new(config.session_id.clone(), config.observer),
            next_turn: Vec::new(),
            next_step: Vec::new(),
            history: Vec::new(),
            running: false,
            turn: 0,
            pending: None,
            cwd: config.workspace.clone(),
            system_prompt: None,
            runtime_context: None,
            header_reason: Some("initial"),
            context_announced: false,
            titled: false,
            activity,
        };
        let profile = config.profile;
        if profile.emits_policy_events() {
            let mode = profile.permission_mode.as_str();
            state.event(events::PERMISSION_PRESET, &json!({"preset": mode}));
            state.event(events::SANDBOX_MODE, &json!({"mode": mode}));
            state.event(
                events::APPROVAL_POLICY,
                &json!({"policy": profile.approval.as_str()}),
            );
        }
        let inner = Arc::new(Inner {
            id: config.session_id,
            profile,
            route: config.route,
            provider: config.provider,
            retry: config.retry,
            workspace: config.workspace,
            tools: Arc::new(Vec::new()),
            state: Mutex::new(state),
            wake: Notify::new(),
        });
        let task = tokio::spawn(run_loop(Arc::clone(&inner)));
        Self { inner, task }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The session's workspace (header `cwd`).
    pub fn workspace(&self) -> &std::path::Path {
        &self.inner.workspace
    }

    /// Enqueues a prompt on `next-turn` (the receipt splice) and, when idle,
    /// announces `running` and starts its turn before returning. Returns the
    /// message id of the receipt.
    pub fn prompt(&self, content: Vec<Value>) -> String {
        let message = UserMessage::new(content, json!({"kind": "user"}));
        let id = message.id.clone();
        let mut state = self.inner.state();
        let start = state.next_turn.len();
        state.event(
            events::INBOX_SPLICED,
            &json!({"target": "next-turn", "start": start, "inserted": [&message]}),
        );
        state.next_turn.push(message);
        if state.wake() {
            self.inner.wake.notify_one();
        }
        id
    }

    /// Waits until the agent is idle.
    pub async fn wait_idle(&self) {
        let mut activity = self.inner.state().activity.subscribe();
        let _ = activity.wait_for(|running| !running).await;
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Runs turns as they are begun, until the handle is dropped.
async fn run_loop(inner: Arc<Inner>) {
    loop {
        inner.wake.notified().await;
        loop {
            let Some(pending) = inner.state().pending.take() else {
                break;
            };
            let reason = turn::run(&inner, pending.turn, pending.claimed).await;
            let mut state = inner.state();
            let continues = reason.get("kind").and_then(Value::as_str) != Some("error");
            state.event(
                events::TURN_END,
                &json!({"turn": pending.turn, "reason": reason}),
            );
            if continues && !state.next_turn.is_empty() {
                state.begin_turn();
            } else {
                state.go_idle();
            }
        }
    }
}
