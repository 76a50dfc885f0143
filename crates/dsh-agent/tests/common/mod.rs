//! The harness of the agent-loop tests: an [`Agent`] built in-process (no
//! runtime binary, no SDK) over the offline `scripted` provider, with every
//! event and status transition it publishes collected in order.
//!
//! The tests run on Tokio's single-threaded runtime: the agent's loop task
//! only runs while the test awaits, so whatever a test does between two
//! awaits lands at one exact place in the event sequence. Waits are on the
//! agent (idle) or on what it published; [`HANG`] only stops a broken test
//! from hanging.

#![allow(dead_code)] // each test binary uses a different subset

use dsh_agent::{Agent, AgentConfig, Profile, Start};
use dsh_llm::scripted::ScriptedProvider;
use dsh_llm::{ChunkSender, ModelRequest, Provider, RetryPolicy, Route, ToolSpec};
use dsh_session::store::{ResumeFacts, SessionStore, SessionWriter};
use dsh_session::{EventBytes, EventLog, EventObserver, SessionStatus, text_block};
use dsh_tools::{Tool, ToolContext, ToolFuture, ToolOutput, ToolSet};
use serde_json::{Value, json};
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::{Notify, watch};

/// The session id of every test agent.
pub const SESSION: &str = "agent-test";

/// Longest wait before a test is declared hung.
const HANG: Duration = Duration::from_secs(60);

/// What a new session's first turn publishes before its model is asked: the
/// prompt's receipt, `running`, the turn and its claim, then the first
/// step's context (system prompt, prompt, runtime context, header, model
/// context, fallback title).
pub const FIRST_TURN: [&str; 11] = [
    "agent/inbox/spliced",
    "session.status running",
    "turn/start",
    "agent/inbox/spliced",
    "step/start",
    "system/message",
    "user/message",
    "user/message",
    "request/header",
    "request/context",
    "session/title",
];

/// `future`, or a panic naming `what` if it takes longer than [`HANG`].
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(HANG, future)
        .await
        .unwrap_or_else(|_| panic!("hung waiting for {what}"))
}

/// Waits until `agent` is idle.
pub async fn idle(agent: &Agent) {
    within("the agent to go idle", agent.wait_idle()).await;
}

/// Prompts `agent` with `text`; returns the prompt's message id.
pub fn prompt(agent: &Agent, text: &str) -> String {
    let mut id = String::new();
    agent
        .prompt(vec![text_block(text)], |ack| id = ack.to_owned())
        .unwrap_or_else(|e| panic!("{e}"));
    id
}

/// A retry policy that retries `max_retries` times after 1, 2, 4… ms.
pub fn fast_retry(max_retries: u32) -> RetryPolicy {
    RetryPolicy {
        max_retries,
        initial_ms: 1,
        cap_ms: 10,
        jitter: 0.0,
    }
}

/// One thing an agent published.
#[derive(Debug, Clone)]
pub enum Entry {
    /// An event, parsed from its serialised bytes.
    Event(Value),
    /// A `session.status` transition.
    Status(SessionStatus),
}

impl Entry {
    /// The event type, or `session.status running|idle`.
    pub fn kind(&self) -> String {
        match self {
            Self::Event(event) => event["type"].as_str().unwrap_or_default().to_owned(),
            Self::Status(SessionStatus::Running) => "session.status running".into(),
            Self::Status(SessionStatus::Idle) => "session.status idle".into(),
        }
    }
}

/// The observer of a test agent's log: everything it published, in order.
pub struct Seen {
    entries: Mutex<Vec<Entry>>,
    count: watch::Sender<usize>,
}

impl Seen {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            entries: Mutex::new(Vec::new()),
            count: watch::Sender::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, entry: Entry) {
        self.lock().push(entry);
        self.count.send_modify(|n| *n += 1);
    }

    /// The kind of every entry, in order.
    pub fn kinds(&self) -> Vec<String> {
        self.lock().iter().map(Entry::kind).collect()
    }

    /// Every event, in order.
    pub fn events(&self) -> Vec<Value> {
        self.lock()
            .iter()
            .filter_map(|entry| match entry {
                Entry::Event(event) => Some(event.clone()),
                Entry::Status(_) => None,
            })
            .collect()
    }

    /// The events of type `kind`, in order.
    pub fn of(&self, kind: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|event| event["type"] == kind)
            .collect()
    }

    /// The `data` of the events of type `kind`, in order.
    pub fn data(&self, kind: &str) -> Vec<Value> {
        self.of(kind)
            .into_iter()
            .map(|mut event| event["data"].take())
            .collect()
    }

    /// Waits until an event of type `kind` has been published.
    pub async fn until(&self, kind: &str) {
        let mut count = self.count.subscribe();
        let seen = count.wait_for(|_| self.lock().iter().any(|e| e.kind() == kind));
        let _ = within(kind, seen).await;
    }
}

impl EventObserver for Seen {
    fn on_event(&self, _session_id: &str, event: &EventBytes) {
        let event = serde_json::from_slice(&event.to_vec()).unwrap_or_else(|e| panic!("{e}"));
        self.push(Entry::Event(event));
    }

    fn on_status(&self, _session_id: &str, status: SessionStatus) {
        self.push(Entry::Status(status));
    }
}

/// The model of a test agent: a scripted scenario whose requests are kept.
pub struct Model {
    scripted: ScriptedProvider,
    route: Route,
    requests: Mutex<Vec<ModelRequest>>,
    count: watch::Sender<usize>,
}

impl Model {
    /// Every request made so far, in order.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits until `n` requests have been made.
    pub async fn until_requests(&self, n: usize) {
        let mut count = self.count.subscribe();
        let _ = within("a model request", count.wait_for(|made| *made >= n)).await;
    }
}

impl Provider for Model {
    fn name(&self) -> &str {
        self.scripted.name()
    }

    fn replay_kind(&self) -> &str {
        self.scripted.replay_kind()
    }

    fn start(&self, request: ModelRequest, out: ChunkSender) {
        self.requests
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.clone());
        self.count.send_modify(|n| *n += 1);
        self.scripted.start(request, out);
    }
}

/// The test tool `gate`: a call waits until the test
/// [opens](Gate::open) the gate (result `opened`) or the call is cancelled.
pub struct Gate {
    spec: ToolSpec,
    open: Notify,
}

impl Gate {
    /// Lets one waiting (or the next) call through.
    pub fn open(&self) {
        self.open.notify_one();
    }
}

impl Tool for Gate {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn batched(&self, _arguments: &str) -> bool {
        false
    }

    fn run(&self, _arguments: &str, ctx: ToolContext) -> ToolFuture<'_> {
        Box::pin(async move {
            tokio::select! {
                () = self.open.notified() => ToolOutput::text("opened"),
                () = ctx.cancel.cancelled() => ToolOutput::failure("cancelled"),
            }
        })
    }
}

/// A restored session: what [`Start::Resumed`] and the log continue from.
pub struct Resumed {
    /// The facts read from the stored log.
    pub facts: ResumeFacts,
    /// The seq the next event gets.
    pub next_seq: u64,
    /// The `time` of the last stored event.
    pub last_time: u64,
}

/// How [`Rig::start`] builds an agent beyond its model.
#[derive(Default)]
pub struct Launch {
    /// The retry policy (default: the runtime's).
    pub retry: RetryPolicy,
    /// Persists the session's events.
    pub writer: Option<SessionWriter>,
    /// Restores a stored session instead of creating one.
    pub resumed: Option<Resumed>,
}

/// A temporary directory with a workspace (holding a directory `sub`), the
/// scenario files and a session store, and the tool library of its agents:
/// `gate` (plus the agent's own `working_directory`).
pub struct Rig {
    dir: tempfile::TempDir,
    /// The agents' workspace (canonical).
    pub workspace: PathBuf,
    /// The `gate` tool of the rig's agents.
    pub gate: Arc<Gate>,
}

impl Rig {
    /// A fresh rig.
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let workspace = dir.path().join("workspace");
        std::fs::create_dir_all(workspace.join("sub")).unwrap_or_else(|e| panic!("{e}"));
        let workspace = std::fs::canonicalize(workspace).unwrap_or_else(|e| panic!("{e}"));
        let gate = Arc::new(Gate {
            spec: ToolSpec {
                name: "gate".into(),
                description: "Waits until the test opens the gate.".into(),
                parameters: json!({"type": "object", "properties": {}}),
            },
            open: Notify::new(),
        });
        Self {
            dir,
            workspace,
            gate,
        }
    }

    /// The session store of the rig.
    pub fn store(&self) -> SessionStore {
        SessionStore::new(self.dir.path().join("home"))
    }

    /// Writes scenario `name` (`{"replies": replies}`, see
    /// [`dsh_llm::scripted`]) and mounts the scripted model that plays it.
    pub fn script(&self, name: &str, replies: Value) -> Arc<Model> {
        let path = self.dir.path().join(format!("{name}.json"));
        std::fs::write(&path, json!({ "replies": replies }).to_string())
            .unwrap_or_else(|e| panic!("{e}"));
        let model = path.to_string_lossy().into_owned();
        let scripted = ScriptedProvider::for_model(&model).unwrap_or_else(|e| panic!("{e}"));
        Arc::new(Model {
            scripted,
            route: Route {
                provider: dsh_llm::scripted::NAME.into(),
                model,
                reasoning_effort: None,
                max_tokens: None,
            },
            requests: Mutex::new(Vec::new()),
            count: watch::Sender::new(0),
        })
    }

    /// Creates the session (or restores `launch.resumed`) in the
    /// `sdk-minimal` profile and returns its agent and what it publishes.
    pub fn start(&self, model: &Arc<Model>, launch: Launch) -> (Agent, Arc<Seen>) {
        let seen = Seen::new();
        let mut log = EventLog::new(SESSION, Some(Arc::clone(&seen) as Arc<dyn EventObserver>));
        if let Some(writer) = launch.writer {
            log = log.with_writer(writer);
        }
        let start = match launch.resumed {
            None => Start::New,
            Some(resumed) => {
                log = log.resumed(resumed.next_seq, resumed.last_time);
                Start::Resumed(Box::new(resumed.facts))
            }
        };
        let mut tools = ToolSet::new();
        tools.insert(Arc::clone(&self.gate) as Arc<dyn Tool>);
        let config = AgentConfig {
            session_id: SESSION.into(),
            profile: Arc::new(Profile::sdk_minimal(None)),
            route: model.route.clone(),
            provider: Arc::clone(model) as Arc<dyn Provider>,
            retry: launch.retry,
            workspace: self.workspace.clone(),
            log,
            tools: Arc::new(tools),
            sessions: None,
            lineage: dsh_agent::Lineage::default(),
            approvals: Default::default(),
            prices: Default::default(),
            mcp: None,
            editor: None,
            command_hooks: None,
        };
        (Agent::create(config, start), seen)
    }
}

/// `[FIRST_TURN…, then…]` as owned strings, for comparing with
/// [`Seen::kinds`].
pub fn first_turn_then(then: &[&str]) -> Vec<String> {
    FIRST_TURN
        .iter()
        .chain(then)
        .map(|k| (*k).to_owned())
        .collect()
}

/// `kinds` as owned strings.
pub fn kinds(kinds: &[&str]) -> Vec<String> {
    kinds.iter().map(|k| (*k).to_owned()).collect()
}
