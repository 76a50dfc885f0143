use crate::compaction::{self, Budget};
use crate::delegation::{self, Lineage, SessionHost};
use crate::goals::{self, Goals};
use crate::history::History;
use crate::inner::Inner;
use crate::profile::{PermissionMode, Profile};
use crate::state::{Activity, State};
use crate::tools::{self, AgentHost};
use crate::turn;
use crate::workflow;
use dsh_llm::{Provider, RetryPolicy, Route};
use dsh_protocol::catalog::{
    ApprovalPolicy, EventDraft, HeaderReason, InboxSpliced, InboxTarget, PermissionPreset,
    SandboxMode, SessionEndSeed, SessionEvent, SubagentDescriptor, TurnEndReason,
};
use dsh_protocol::notifications::SubagentStartedParams;
use dsh_session::store::{GoalFacts, ResumeFacts};
use dsh_session::{EventLog, LogUnwritable, SystemMessage, TreeNotice, UserMessage, text_of};
use dsh_tools::{CancellationToken, SessionTools, ToolSet};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
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
    /// The session's event log: its observer receives events and status
    /// transitions, its writer (if any) persists them.
    pub log: EventLog,
    /// The profile's tool library (shared by every agent of the process).
    pub tools: Arc<ToolSet>,
    /// Creates child sessions for the delegation tools (absent: they answer
    /// that delegation is unavailable).
    pub host: Option<Arc<dyn SessionHost>>,
    /// Where the session sits in its tree.
    pub lineage: Lineage,
}

/// How the session comes to be.
pub enum Start {
    /// A new session: the profile's creation events are appended.
    New,
    /// A stored session continues: its state is rebuilt from the log's
    /// facts and nothing is appended.
    Resumed(Box<ResumeFacts>),
    /// A new child session: a fork's inherited events (then
    /// `session/end-seed {"inherited": true}`), its descriptor and the
    /// delegated policies are appended (to disk only: the log is not
    /// published yet).
    Child {
        /// The child's `subagent/descriptor`.
        descriptor: Box<SubagentDescriptor>,
        /// What a fork inherits; `None` for a spawn (or a fork before any
        /// completed turn).
        seed: Option<Box<Seed>>,
    },
}

/// What a forked child inherits from its parent's completed turns.
pub struct Seed {
    /// The parent's events through its last `turn/end`, copied verbatim.
    pub events: Vec<SessionEvent>,
    /// The model-visible history they hold.
    pub history: History,
    /// The last completed turn's number (the child's next turn follows it).
    pub turn: u32,
    /// The system prompt and runtime context last sent in them.
    pub system_prompt: Option<String>,
    /// See `system_prompt`.
    pub runtime_context: Option<String>,
    /// Whether the parent had a title.
    pub titled: bool,
}

/// One session's agent: a handle whose loop task runs turns in the
/// background. Dropping the handle stops the loop; [`Agent::dispose`] also
/// closes the log.
pub struct Agent {
    inner: Arc<Inner>,
    task: JoinHandle<()>,
}

impl Agent {
    /// Creates (or restores) the session and its agent. A new session in the
    /// `sdk` profile starts with the three policy events. Must be called
    /// inside a Tokio runtime.
    pub fn create(config: AgentConfig, start: Start) -> Self {
        let (activity, _) = watch::channel(Activity::default());
        let cancel = CancellationToken::new();
        let mut state = State::new(
            config.log,
            config.workspace.clone(),
            activity,
            cancel.clone(),
        );
        let profile = config.profile;
        match start {
            Start::New => {
                if profile.emits_policy_events() {
                    let mode = profile.permission_mode.as_str();
                    state.event(PermissionPreset { preset: mode });
                    state.event(SandboxMode { mode, source: None });
                    state.event(ApprovalPolicy {
                        policy: profile.approval.as_str(),
                        source: None,
                    });
                }
            }
            Start::Resumed(facts) => restore(&mut state, *facts),
            Start::Child { descriptor, seed } => {
                if let Some(seed) = seed {
                    inherit(&mut state, *seed);
                }
                state.event(*descriptor);
                state.event(SandboxMode {
                    mode: profile.permission_mode.as_str(),
                    source: Some(DELEGATION),
                });
                state.event(ApprovalPolicy {
                    policy: profile.approval.as_str(),
                    source: Some(DELEGATION),
                });
                // As the official runtime writes a full-access child.
                if profile.permission_mode == PermissionMode::DangerFullAccess {
                    state.event(PermissionPreset {
                        preset: profile.permission_mode.as_str(),
                    });
                }
            }
        }
        let (mut specs, mut tool_tokens) = tools::shared_specs(&config.tools);
        // A workflow's child asked for structured output also has the tool
        // it reports with.
        if let Some(schema) = config
            .lineage
            .parent
            .as_ref()
            .and_then(|link| link.report.as_ref())
            .and_then(|report| report.schema.as_ref())
        {
            let own = workflow::with_structured_output(&specs, schema);
            tool_tokens =
                compaction::text_tokens(serde_json::to_string(&own).map_or(0, |j| j.len()));
            specs = Arc::new(own);
        }
        let system_prompt = profile.system_prompt(&config.route.model);
        let window = profile
            .context_window
            .unwrap_or_else(|| config.route.model_info().context_window);
        let budget = Budget::new(window, config.route.max_tokens());
        let fixed_tokens = tool_tokens + compaction::text_tokens(system_prompt.len());
        let inner = Arc::new_cyclic(|weak| Inner {
            id: config.session_id,
            profile,
            route: config.route,
            provider: config.provider,
            retry: config.retry,
            workspace: config.workspace,
            tools: config.tools,
            specs,
            budget,
            fixed_tokens,
            system_prompt,
            session_tools: Arc::new(SessionTools::new()),
            host: Arc::new(AgentHost(weak.clone())),
            cancel,
            state: Mutex::new(state),
            wake: Notify::new(),
            lineage: config.lineage,
            sessions: config.host,
            children: Mutex::new(Vec::new()),
            this: weak.clone(),
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
        let mut state = self.inner.state();
        state.log.flush();
        if let Some(err) = state.log.unwritable() {
            return Err(err);
        }
        let message = UserMessage::prompt(content);
        let id = message.id.clone();
        let start = state.next_turn.len();
        state.event(InboxSpliced::insert(
            InboxTarget::NextTurn,
            start,
            std::slice::from_ref(&message),
        ));
        state.next_turn.push(message);
        if state.wake() {
            self.inner.wake.notify_one();
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
        let state = self.inner.state();
        let running = state.open_turn.is_some() || state.pending.is_some();
        if running {
            state.turn_cancel.cancel();
        }
        running
    }

    /// Flushes the log (a barrier before acknowledging a request).
    pub fn flush(&self) {
        self.inner.state().log.flush();
    }

    /// Waits until the agent is idle (and, for a child, its parent has
    /// its news), or went idle since the call (a goal's round may have
    /// begun at once).
    pub async fn wait_idle(&self) {
        self.next_idle().await;
    }

    /// See [`wait_idle`](Self::wait_idle); returns the count of idles
    /// ([`Activity::idles`]) it saw.
    async fn next_idle(&self) -> u64 {
        let mut activity = self.inner.state().activity.subscribe();
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
            let own = *self.inner.state().activity.borrow();
            let idle = !own.busy || (own.in_round && own.idles == seen);
            if idle && self.children().iter().all(|c| c.tree_quiet()) {
                return;
            }
        }
    }

    /// Whether the agent and every descendant are idle now (a child's
    /// news delivered to its parent).
    pub(crate) fn tree_quiet(&self) -> bool {
        !self.inner.state().activity.borrow().busy && self.children().iter().all(|c| c.tree_quiet())
    }

    /// The children this agent started, oldest first.
    pub fn children(&self) -> Vec<Arc<Agent>> {
        self.inner
            .children()
            .iter()
            .map(|c| Arc::clone(&c.agent))
            .collect()
    }

    /// Takes back a child restored from its log (a resumed parent's
    /// child): it is listed again and the client is told of the edge
    /// (`subagent.started`) through this session's log.
    pub fn adopt(&self, child: Arc<Agent>, label: &str) {
        let id = child.id().to_owned();
        {
            let mut children = self.inner.children();
            if children.iter().any(|c| c.id == id) {
                return;
            }
            children.push(delegation::Child {
                id: id.clone(),
                label: label.to_owned(),
                agent: child,
            });
        }
        self.announce_child(&id);
    }

    /// Tells the client again that `child` belongs to this session
    /// (`subagent.started`), as a resume of an open child does.
    pub fn announce_child(&self, child: &str) {
        self.inner
            .state()
            .log
            .announce(TreeNotice::Started(SubagentStartedParams {
                parent_session_id: self.inner.id.clone(),
                child_session_id: child.to_owned(),
            }));
    }

    /// The parent session of a child.
    pub fn parent_id(&self) -> Option<&str> {
        self.inner.lineage.parent.as_ref().map(|p| p.id.as_str())
    }

    /// 0 for a root session, 1 for its children.
    pub fn depth(&self) -> u64 {
        self.inner.lineage.depth
    }

    /// Stops the agent for good: the loop stops, a running turn ends
    /// `aborted` (`disposed`), pending inbox entries are cancelled, and the
    /// log is synced to stable storage; waiters of [`wait_idle`](Self::wait_idle)
    /// return. Call with notifications muted.
    pub fn dispose(&self) {
        self.task.abort();
        self.inner.cancel.cancel();
        self.inner.session_tools.shutdown();
        let mut state = self.inner.state();
        state.dispose();
        state.log.sync();
        // Nothing runs any more: release `session/wait` callers (with
        // notifications muted, no `idle` is sent).
        state.running = false;
        state.release_waiters();
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.inner
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.task.abort();
        self.inner.cancel.cancel();
        self.inner.session_tools.shutdown();
    }
}

/// `source` of the policies a child inherits from its parent.
const DELEGATION: &str = "delegation";

/// Copies a fork's inherited events into the child's log and takes over
/// the state they describe.
fn inherit(state: &mut State, seed: Seed) {
    let mut goal = GoalFacts::default();
    for event in seed.events {
        let data = match event.typed() {
            Ok(data) => data,
            Err(err) => {
                tracing::error!(
                    session = state.log.session_id(),
                    "inherited event not copied: {err}"
                );
                continue;
            }
        };
        goal.push(&data);
        state.emit(EventDraft {
            data,
            source_event_seqs: event.source_event_seqs,
            surface_op: event.surface_op,
            time: Some(event.time),
        });
    }
    state.event(SessionEndSeed {
        inherited: Some(true),
    });
    state.history = seed.history;
    state.project = crate::project::Tracker::restored(&state.history.messages());
    state.turn = seed.turn;
    state.system_prompt = seed.system_prompt;
    state.runtime_context = seed.runtime_context;
    state.titled = seed.titled;
    state.header_reason = Some(HeaderReason::Resume);
    state.context_announced = true;
    state.goals = Goals::restored(goal);
}

/// Rebuilds the agent state of a stored session.
fn restore(state: &mut State, facts: ResumeFacts) {
    state.turn = u32::try_from(facts.last_turn).unwrap_or(u32::MAX);
    // Everything stored is complete once repaired: a fork copies it all.
    state.completed = state
        .log
        .next_seq()
        .checked_sub(1)
        .map(|seq| (seq, state.turn));
    state.titled = facts.has_title;
    if let Some(cwd) = facts.cwd {
        state.cwd = PathBuf::from(cwd);
    }
    state.next_turn = facts.inbox.next_turn;
    state.next_step = facts.inbox.next_step;
    state.history = History::restored(facts.history);
    state.project = crate::project::Tracker::restored(&state.history.messages());
    state.system_prompt = facts.last_system.as_ref().map(system_text);
    state.runtime_context = facts
        .last_runtime_context
        .as_ref()
        .map(|m| text_of(&m.content).collect::<Vec<_>>().join(""));
    state.header_reason = Some(HeaderReason::Resume);
    state.context_announced = true;
    state.goals = Goals::restored(facts.goal);
}

fn system_text(message: &SystemMessage) -> String {
    text_of(&message.content).collect::<Vec<_>>().join("")
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
            let continues = !matches!(reason, TurnEndReason::Error { .. });
            let completed = matches!(reason, TurnEndReason::Completed);
            state.end_turn(pending.turn, reason);
            goals::turn_ended(&mut state, completed);
            if continues && (!state.next_turn.is_empty() || state.steered) {
                state.begin_turn();
                state.log.flush();
            } else if inner.lineage.parent.is_some() {
                // A child's news goes to its parent once it is idle; its
                // waiters are released after that (`session/wait` on the
                // tree never sees a gap between the two).
                state.go_idle_quietly();
                state.log.flush();
                drop(state);
                delegation::settled(&inner);
                // A message delivered since (the parent answering before
                // it had the news) began a new turn: its waiters wait on.
                let mut state = inner.state();
                if !state.running {
                    state.release_waiters();
                }
            } else {
                state.go_idle();
                state.log.flush();
                drop(state);
                // An armed goal's next round begins here (the loop runs it).
                goals::schedule(&inner);
            }
        }
    }
}
