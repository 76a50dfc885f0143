//! Disposal in the middle of a turn: what was interrupted is closed (tool
//! results for the open step's calls, `step/end`, `turn/end` aborted by
//! `disposed`) and whatever waits in the inboxes is cancelled.

mod common;

use common::{Launch, Rig, first_turn_then, idle, prompt};
use serde_json::json;

/// The `turn/end` of a turn stopped by disposal.
fn disposed_turn_end() -> serde_json::Value {
    json!({"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "disposed"}}})
}

#[tokio::test]
async fn disposal_during_a_tool_call_closes_the_calls_the_step_the_turn_and_the_inboxes() {
    let rig = Rig::new();
    let two_calls = json!([{"blocks": [
        {"text": "working"},
        {"tool_call": {"id": "call_1", "name": "gate"}},
        {"tool_call": {"id": "call_2", "name": "gate"}},
    ]}]);
    let model = rig.script("dispose-tool", two_calls);
    let (agent, seen) = rig.start(&model, Launch::default());
    prompt(&agent, "go");
    // `call_1` runs (the gate stays shut); `call_2` waits behind it.
    seen.until("tool/call").await;
    // Something waits in each inbox: a prompt, a working-directory notice.
    prompt(&agent, "later");
    agent.set_working_directory("sub").unwrap();
    agent.dispose();
    // Disposal releases waiters.
    idle(&agent).await;

    assert_eq!(
        seen.kinds(),
        first_turn_then(&[
            "assistant/message",
            "tool/call",
            "agent/inbox/spliced",
            "working-directory/change",
            "agent/inbox/spliced",
            // Disposal's closers; no `idle` (the server mutes the session
            // before disposing).
            "tool/result",
            "tool/result",
            "step/end",
            "turn/end",
            "agent/inbox/spliced",
            "agent/inbox/spliced",
        ])
    );
    let call_seq = seen.of("tool/call")[0]["seq"].clone();
    let results = seen.of("tool/result");
    // The running call: dispatched, outcome unknown, citing its `tool/call`.
    assert_eq!(results[0]["sourceEventSeqs"], json!([call_seq]));
    assert_eq!(results[0]["data"]["message"]["toolCallId"], "call_1");
    assert_eq!(results[0]["data"]["message"]["isError"], true);
    assert_eq!(
        results[0]["data"]["error"],
        json!({"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"})
    );
    // The call behind it never started.
    assert_eq!(results[1].get("sourceEventSeqs"), None);
    assert_eq!(results[1]["data"]["message"]["toolCallId"], "call_2");
    assert_eq!(
        results[1]["data"]["error"],
        json!({"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"})
    );
    assert_eq!(seen.data("step/end"), [json!({"turn": 1, "step": 1})]);
    assert_eq!(seen.data("turn/end"), [disposed_turn_end()]);
    let splices = seen.data("agent/inbox/spliced");
    let cancelled = |target: &str| json!({"target": target, "start": 0, "removedCount": 1, "inserted": [], "outcome": "canceled"});
    assert_eq!(
        splices[splices.len() - 2..],
        [cancelled("next-step"), cancelled("next-turn")]
    );
}

#[tokio::test]
async fn disposal_during_a_model_call_closes_the_step_and_the_turn() {
    let rig = Rig::new();
    // The reply would come after ten minutes: the call is still running
    // when the agent is disposed.
    let slow = json!([{"text": "too late", "delay_ms": 600_000}]);
    let model = rig.script("dispose-model", slow);
    let (agent, seen) = rig.start(&model, Launch::default());
    prompt(&agent, "go");
    model.until_requests(1).await;
    agent.dispose();
    idle(&agent).await;

    assert_eq!(seen.kinds(), first_turn_then(&["step/end", "turn/end"]));
    assert_eq!(seen.data("step/end"), [json!({"turn": 1, "step": 1})]);
    assert_eq!(seen.data("turn/end"), [disposed_turn_end()]);
}
