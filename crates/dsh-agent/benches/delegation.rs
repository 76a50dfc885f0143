//! What a subagent costs, on the scripted model:
//!
//! * time from the parent's `tool/call` of `subagent` to the child's first
//!   model request (criterion);
//! * resident memory kept per idle child: the growth of 50 parents whose
//!   turn started eight children that all finished, less that of 50
//!   parents whose turn made eight calls of equal shape that start
//!   nothing, over 400 (printed once, from `/proc/self/statm`).

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_agent::{
    Agent, AgentConfig, HostError, Lineage, PermissionMode, Profile, SessionHost, Start,
};
use dsh_llm::{
    ChunkSender, ModelRequest, Provider, ProviderEnv, ProviderRegistry, RetryPolicy, Route,
};
use dsh_session::store::SessionHeader;
use dsh_session::{EventBytes, EventLog, EventObserver, SessionStatus};
use serde_json::json;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Resident memory of this process, in bytes (Linux `/proc/self/statm`).
fn resident() -> isize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: isize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// When the parent's `subagent` call was recorded.
#[derive(Default)]
struct Clock {
    call: Mutex<Option<Instant>>,
    child_request: Mutex<Option<Instant>>,
}

impl EventObserver for Clock {
    fn on_event(&self, _session_id: &str, event: &EventBytes) {
        if event.to_text().starts_with(r#"{"type":"tool/call""#) {
            let mut call = self.call.lock().unwrap_or_else(|e| e.into_inner());
            call.get_or_insert_with(Instant::now);
        }
    }
    fn on_status(&self, _session_id: &str, _status: SessionStatus) {}
}

/// The scripted provider, noting the first request of a child.
struct Timed {
    inner: Arc<dyn Provider>,
    clock: Arc<Clock>,
}

impl Provider for Timed {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn replay_kind(&self) -> &str {
        self.inner.replay_kind()
    }
    fn start(&self, request: ModelRequest, out: ChunkSender) {
        if !request.session_id.starts_with("bench-") {
            let mut at = self
                .clock
                .child_request
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            at.get_or_insert_with(Instant::now);
        }
        self.inner.start(request, out);
    }
}

/// Children live in memory only (no store), published to the clock.
struct Host(Arc<Clock>);

impl SessionHost for Host {
    fn create_log(&self, header: &SessionHeader) -> Result<EventLog, HostError> {
        Ok(EventLog::new(header.id.clone(), None))
    }
    fn observer(&self) -> Arc<dyn EventObserver> {
        self.0.clone()
    }
    fn register(&self, _agent: &Arc<Agent>) -> Result<(), HostError> {
        Ok(())
    }
}

/// A scenario whose parent makes `calls` calls of `tool` in one step, each
/// started child answering at once.
fn scenario(dir: &std::path::Path, tool: &str, calls: usize) -> String {
    let calls: Vec<_> = (0..calls)
        .map(|i| {
            json!({"tool_call": {"id": format!("c{i}"), "name": tool,
                "arguments": {"description": format!("task {i}"), "prompt": format!("TASK-{i} answer")}}})
        })
        .collect();
    let agents: Vec<_> = (0..8)
        .map(|i| json!({"when": format!("TASK-{i} "), "replies": [{"text": "done"}]}))
        .collect();
    let text = json!({
        "replies": [{"blocks": calls}, {"text": "ok"}, {"text": "woken"}, {"text": "woken"},
            {"text": "woken"}, {"text": "woken"}, {"text": "woken"}, {"text": "woken"},
            {"text": "woken"}, {"text": "woken"}],
        "agents": agents,
    });
    let path = dir.join(format!("{tool}-{}.json", calls_len(&text)));
    std::fs::write(&path, text.to_string()).unwrap_or_else(|e| panic!("{e}"));
    path.to_string_lossy().into_owned()
}

fn calls_len(scenario: &serde_json::Value) -> usize {
    scenario["replies"][0]["blocks"]
        .as_array()
        .map_or(0, Vec::len)
}

fn parent(model: &str, clock: &Arc<Clock>, workspace: PathBuf) -> Agent {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let route = Route {
        provider: "scripted".into(),
        model: model.into(),
        reasoning_effort: None,
        max_tokens: None,
    };
    let env = ProviderEnv {
        dsh_home: std::env::temp_dir(),
        deepseek_api_key: None,
        deepseek_base_url: None,
        openai_base_url: None,
        openai_api_key: None,
        idle_timeout: Duration::from_secs(60),
        limits: dsh_llm::ReplyLimits::default(),
    };
    let scripted = ProviderRegistry::new(env)
        .mount(&route)
        .unwrap_or_else(|e| panic!("{e}"));
    let provider = Arc::new(Timed {
        inner: scripted,
        clock: Arc::clone(clock),
    });
    let id = format!("bench-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let config = AgentConfig {
        session_id: id.clone(),
        profile: Arc::new(Profile::sdk(PermissionMode::DangerFullAccess)),
        route,
        provider,
        retry: RetryPolicy::default(),
        workspace: workspace.clone(),
        log: EventLog::new(id, Some(clock.clone() as Arc<dyn EventObserver>)),
        tools: Arc::new(dsh_tools::sdk_tools(dsh_tools::ToolsConfig::new(workspace))),
        sessions: Some(Arc::new(Host(Arc::clone(clock)))),
        lineage: Lineage::default(),
        approvals: Default::default(),
        prices: Default::default(),
        mcp: None,
        editor: None,
        command_hooks: None,
    };
    Agent::create(config, Start::New)
}

fn prompt(agent: &Agent) {
    if let Err(err) = agent.prompt(vec![json!({"type": "text", "text": "delegate"})], |_| {}) {
        panic!("{err}");
    }
}

fn delegation(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let one = scenario(dir.path(), "subagent", 1);
    c.bench_function(
        "subagent: tool/call to the child's first model request",
        |b| {
            b.iter_custom(|iters| {
                runtime.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let clock = Arc::new(Clock::default());
                        let agent = parent(&one, &clock, dir.path().to_owned());
                        prompt(&agent);
                        agent.wait_tree_idle().await;
                        let call = clock
                            .call
                            .lock()
                            .map(|c| *c)
                            .unwrap_or_else(|e| *e.into_inner());
                        let first = clock
                            .child_request
                            .lock()
                            .map(|c| *c)
                            .unwrap_or_else(|e| *e.into_inner());
                        match (call, first) {
                            (Some(call), Some(first)) => total += first.duration_since(call),
                            _ => panic!("no subagent call or no child request"),
                        }
                        agent.dispose();
                    }
                    total
                })
            })
        },
    );

    // Memory kept by idle children: 50 parents whose turn started eight
    // children each, against 50 whose turn made eight calls that start
    // nothing.
    let eight = scenario(dir.path(), "subagent", 8);
    let none = scenario(dir.path(), "no_such_tool", 8);
    let kept = |model: &str| {
        runtime.block_on(async {
            let before = resident();
            let mut agents = Vec::new();
            for _ in 0..PARENTS {
                let clock = Arc::new(Clock::default());
                let agent = parent(model, &clock, dir.path().to_owned());
                prompt(&agent);
                agent.wait_tree_idle().await;
                agents.push(agent);
            }
            (agents, resident() - before)
        })
    };
    // Warm both paths once (lazily built tables, the runtime's buffers).
    drop(kept(&none));
    drop(kept(&eight));
    let (without, b) = kept(&none);
    let (with_children, a) = kept(&eight);
    assert!(with_children.iter().all(|p| p.children().len() == 8));
    eprintln!(
        "resident memory kept per idle child: {} bytes ({a} bytes for {PARENTS} parents with eight children each, {b} for {PARENTS} without)",
        (a - b) / (8 * PARENTS as isize),
    );
    drop((with_children, without));
}

/// Parents of the memory figure.
const PARENTS: usize = 50;

criterion_group!(benches, delegation);
criterion_main!(benches);
