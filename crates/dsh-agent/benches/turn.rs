//! The runtime's own time per turn: a prompt through a complete echo turn
//! (receipt, claim, context, model stream, settle, turn end), with events
//! serialised for an observer as the server does. Sessions are renewed every
//! 100 turns, so the figure is the mean over turns 1–100 of a session. The
//! second figure adds the session log the server keeps (zstd, on the system
//! temporary directory): every write and flush barrier of a real session.

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_agent::{Agent, AgentConfig, PermissionMode, Profile, Start};
use dsh_llm::{ProviderEnv, ProviderRegistry, RetryPolicy, Route};
use dsh_session::store::{Encoding, SessionHeader, SessionStore, SessionWriter};
use dsh_session::{EventBytes, EventLog, EventObserver, SessionStatus};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Default)]
struct CountingObserver(AtomicUsize);

impl EventObserver for CountingObserver {
    fn on_event(&self, _session_id: &str, event: &EventBytes) {
        self.0.fetch_add(event.len(), Ordering::Relaxed);
    }
    fn on_status(&self, _session_id: &str, _status: SessionStatus) {}
}

/// Where the logged variant keeps its sessions.
fn bench_store() -> SessionStore {
    SessionStore::new(std::env::temp_dir().join(format!("dsh-turn-bench-{}", std::process::id())))
}

fn new_agent(observer: &Arc<CountingObserver>, store: Option<&SessionStore>) -> Agent {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let route = Route {
        provider: "scripted".into(),
        model: "echo".into(),
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
    let provider = ProviderRegistry::new(env)
        .mount(&route)
        .unwrap_or_else(|e| panic!("{e}"));
    let id = format!("bench-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let mut log = EventLog::new(id, Some(observer.clone() as Arc<dyn EventObserver>));
    if let Some(store) = store {
        let header = SessionHeader::root(log.session_id(), 1, Some("/bench".to_owned()));
        let writer =
            SessionWriter::create(store, &header, Encoding::Zstd).unwrap_or_else(|e| panic!("{e}"));
        log = log.with_writer(writer);
    }
    let config = AgentConfig {
        session_id: "bench".into(),
        profile: Arc::new(Profile::sdk(PermissionMode::WorkspaceWrite)),
        route,
        provider,
        retry: RetryPolicy::default(),
        workspace: std::env::temp_dir(),
        log,
        tools: Arc::new(dsh_tools::sdk_tools(dsh_tools::ToolsConfig::new(
            std::env::temp_dir(),
        ))),
        sessions: None,
        lineage: dsh_agent::Lineage::default(),
        approvals: Default::default(),
        prices: Default::default(),
        mcp: None,
        editor: None,
        command_hooks: None,
    };
    Agent::create(config, Start::New)
}

fn turn(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"));
    let observer = Arc::new(CountingObserver::default());
    let store = bench_store();
    for (name, store) in [
        ("echo turn, prompt to idle (turns 1-100 of a session)", None),
        (
            "echo turn with a zstd session log, prompt to idle (turns 1-100 of a session)",
            Some(&store),
        ),
    ] {
        c.bench_function(name, |b| {
            b.iter_custom(|iters| {
                runtime.block_on(async {
                    let mut total = Duration::ZERO;
                    let mut agent = new_agent(&observer, store);
                    for i in 0..iters {
                        if i % 100 == 99 {
                            agent = new_agent(&observer, store);
                        }
                        let start = Instant::now();
                        if let Err(err) =
                            agent.prompt(vec![json!({"type": "text", "text": "ping"})], |_| {})
                        {
                            panic!("{err}");
                        }
                        agent.wait_idle().await;
                        total += start.elapsed();
                    }
                    total
                })
            })
        });
    }
    assert!(observer.0.load(Ordering::Relaxed) > 0);
    let _ = std::fs::remove_dir_all(store.home());
}

criterion_group!(benches, turn);
criterion_main!(benches);
