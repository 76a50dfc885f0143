//! The core's extension points, driven by a feature and a tool that exist
//! only here: the core calls them where its docs say, and a tool's outcome
//! (a follow-up notice, the end of the turn) takes effect.

use super::*;
use crate::profile::Profile;
use dsh_llm::scripted::ScriptedProvider;
use dsh_llm::{Provider, RetryPolicy, Route};
use dsh_protocol::catalog::{ToolSpec, TurnEndReason};
use dsh_session::{EventBytes, EventLog, EventObserver, SessionStatus, UserMessage, text_block};
use dsh_tools::{CancellationToken, ToolOutput, ToolSet};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex, PoisonError};

/// What the probe saw, in order.
#[derive(Default)]
struct Trace(Mutex<Vec<String>>);

impl Trace {
    fn push(&self, what: impl Into<String>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(what.into());
    }

    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

impl EventObserver for Trace {
    fn on_event(&self, _session_id: &str, event: &EventBytes) {
        let event: Value = serde_json::from_slice(&event.to_vec()).unwrap_or_default();
        self.push(event["type"].as_str().unwrap_or_default());
    }

    fn on_status(&self, _session_id: &str, status: SessionStatus) {
        self.push(format!("{status:?}"));
    }
}

/// A feature recording the fixed points it is called at.
struct Probe(Arc<Trace>);

/// Per-agent state of the probe: steps seen.
#[derive(Default)]
struct Steps(u32);

impl Feature for Probe {
    fn before_step<'a>(
        &'a self,
        core: &'a Core,
        turn: u32,
        pending: &'a [UserMessage],
        _cancel: &'a CancellationToken,
    ) -> HookFuture<'a, Option<TurnEndReason>> {
        let steps = {
            let mut state = core.state();
            let steps = state.extension::<Steps>();
            steps.0 += 1;
            steps.0
        };
        self.0.push(format!(
            "hook before_step {steps} (turn {turn}, {} pending)",
            pending.len()
        ));
        Box::pin(std::future::ready(None))
    }

    fn turn_started(&self, _state: &mut AgentState, prompt: Option<&UserMessage>) {
        self.0
            .push(format!("hook turn_started (prompt: {})", prompt.is_some()));
    }

    fn turn_ended(&self, _state: &mut AgentState, reason: &TurnEndReason) {
        self.0.push(format!("hook turn_ended {reason:?}"));
    }

    fn idle(&self, _core: &Core) {
        self.0.push("hook idle");
    }
}

/// A tool whose outcome leaves a notice and ends the turn.
struct Stop;

impl AgentTool for Stop {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "stop".into(),
            description: "Ends the turn.".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }]
    }

    fn call<'a>(&'a self, _call: ToolCall<'a>) -> HookFuture<'a, ToolOutcome> {
        Box::pin(std::future::ready(ToolOutcome {
            output: ToolOutput::text("stopped"),
            follow_up: Some(UserMessage::notice("probe", vec![text_block("after")])),
            end_turn: true,
        }))
    }
}

/// No children here.
struct NoChildren;

impl Spawner for NoChildren {
    fn spawn(&self, _spec: ChildSpec) -> Arc<Agent> {
        unreachable!("the probe's agent starts no child")
    }
}

#[tokio::test]
async fn features_and_tools_plug_in_at_the_documented_points() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let script = dir.path().join("probe.json");
    let replies = json!({"replies": [
        {"blocks": [{"tool_call": {"id": "call_1", "name": "stop"}}, {"text": "stopping"}]},
        {"text": "after the notice"},
    ]});
    std::fs::write(&script, replies.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let model = script.to_string_lossy().into_owned();
    let provider: Arc<dyn Provider> =
        Arc::new(ScriptedProvider::for_model(&model).unwrap_or_else(|e| panic!("{e}")));
    let trace = Arc::new(Trace::default());
    let config = AgentConfig {
        session_id: "probe".into(),
        profile: Arc::new(Profile::sdk_minimal(None)),
        route: Route {
            provider: dsh_llm::scripted::NAME.into(),
            model,
            reasoning_effort: None,
            max_tokens: None,
        },
        provider,
        retry: RetryPolicy::default(),
        workspace: dir.path().to_owned(),
        log: EventLog::new("probe", Some(Arc::clone(&trace) as Arc<dyn EventObserver>)),
        tools: Arc::new(ToolSet::new()),
        sessions: None,
        lineage: Lineage::default(),
        approvals: Default::default(),
        prices: Default::default(),
        mcp: None,
        editor: None,
        command_hooks: None,
    };
    let roster = Roster::new(Arc::clone(&config.tools), &[Arc::new(Stop)]);
    let features = Features {
        hooks: Hooks::new(vec![Arc::new(Probe(Arc::clone(&trace)))]),
        roster: Arc::new(roster),
        spawner: Arc::new(NoChildren),
    };
    let agent = create(config, Start::New, features);
    agent
        .prompt(vec![text_block("go")], |_| {})
        .unwrap_or_else(|e| panic!("{e}"));
    agent.wait_idle().await;
    let seen = trace.take();
    let hooks: Vec<&str> = seen
        .iter()
        .map(String::as_str)
        .filter(|s| s.starts_with("hook "))
        .collect();
    assert_eq!(
        hooks,
        [
            "hook turn_started (prompt: true)",
            "hook before_step 1 (turn 1, 1 pending)",
            "hook turn_ended Completed",
            // The notice the tool left asks for an answer: a turn of its
            // own, claimed at its start (no prompt), then the idle.
            "hook turn_started (prompt: false)",
            "hook before_step 2 (turn 2, 1 pending)",
            "hook turn_ended Completed",
            "hook idle",
        ],
        "{seen:#?}"
    );
    // The notice joins right after the call's result; the turn ends after
    // the step although the reply called a tool.
    let at = |kind: &str| seen.iter().position(|s| s == kind);
    let result = at("tool/result").unwrap_or_else(|| panic!("{seen:#?}"));
    assert_eq!(seen[result + 1], "agent/inbox/spliced", "{seen:#?}");
    assert_eq!(seen[result + 2], "step/end", "{seen:#?}");
    assert_eq!(seen[result + 3], "turn/end", "{seen:#?}");
    assert_eq!(seen.iter().filter(|s| *s == "turn/start").count(), 2);
    // `idle` is announced (and waiters released) before the idle hook.
    assert_eq!(seen[seen.len() - 2..], ["Idle", "hook idle"], "{seen:#?}");
}
