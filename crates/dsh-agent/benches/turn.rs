//! The runtime's own time per turn: a prompt through a complete echo turn
//! (receipt, claim, context, model stream, settle, turn end), with events
//! serialised for an observer as the server does. Sessions are renewed every
//! 100 turns, so the figure is the mean over turns 1–100 of a session.

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_agent::{Agent, AgentConfig, PermissionMode, Profile, Start};
use dsh_llm::{ProviderEnv, ProviderRegistry, RetryPolicy, Route};
use dsh_session::{EventLog, EventObserver, SessionStatus};
use serde_json::json;
use serde_json::value::RawValue;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[derive(Default)]
struct CountingObserver(AtomicUsize);

impl EventObserver for CountingObserver {
    fn on_event(&self, _session_id: &str, event: &RawValue) {
        self.0.fetch_add(event.get().len(), Ordering::Relaxed);
    }
    fn on_status(&self, _session_id: &str, _status: SessionStatus) {}
}

fn new_agent(observer: &Arc<CountingObserver>) -> Agent {
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
    let log = EventLog::new("bench", Some(observer.clone() as Arc<dyn EventObserver>));
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
    c.bench_function(
        "echo turn, prompt to idle (turns 1-100 of a session)",
        |b| {
            b.iter_custom(|iters| {
                runtime.block_on(async {
                    let mut total = Duration::ZERO;
                    let mut agent = new_agent(&observer);
                    for i in 0..iters {
                        if i % 100 == 99 {
                            agent = new_agent(&observer);
                        }
                        let start = Instant::now();
                        agent.prompt(vec![json!({"type": "text", "text": "ping"})], |_| {});
                        agent.wait_idle().await;
                        total += start.elapsed();
                    }
                    total
                })
            })
        },
    );
    assert!(observer.0.load(Ordering::Relaxed) > 0);
}

criterion_group!(benches, turn);
criterion_main!(benches);
