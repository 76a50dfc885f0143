//! Turns that end on their own: a failed model attempt retried, retries
//! exhausted, a failure that is not retried, a reply cut off at its token
//! cap, and prompts queued while a turn runs.

mod common;

use common::{Launch, Rig, fast_retry, first_turn_then, idle, kinds, prompt};
use dsh_llm::ModelRequest;
use dsh_session::{Message, text_of};
use serde_json::{Value, json};

/// A scripted `SERVER` failure (HTTP 500): one worth retrying.
fn server_error() -> Value {
    json!({"code": "SERVER", "message": "boom", "status": 500})
}

/// The text of the latest user prompt of a request.
fn latest_prompt(request: &ModelRequest) -> String {
    request
        .messages
        .iter()
        .rev()
        .find_map(|m| match m.get().as_ref() {
            Message::User(u) if u.source_kind() == Some("user") => {
                Some(text_of(&u.content).collect())
            }
            _ => None,
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_failed_attempt_is_recorded_and_retried_with_the_same_request() {
    let rig = Rig::new();
    let model = rig.script(
        "retry",
        json!([{"error": server_error()}, {"text": "recovered"}]),
    );
    let retry = fast_retry(2);
    let launch = Launch {
        retry: retry.clone(),
        ..Launch::default()
    };
    let (agent, seen) = rig.start(&model, launch);
    prompt(&agent, "hello");
    idle(&agent).await;

    assert_eq!(
        seen.kinds(),
        first_turn_then(&[
            "assistant/attempt",
            "llm/retry",
            "llm/retry-started",
            "assistant/message",
            "step/end",
            "turn/end",
            "session.status idle",
        ])
    );
    let attempt = &seen.data("assistant/attempt")[0];
    assert_eq!((&attempt["turn"], &attempt["step"]), (&json!(1), &json!(1)));
    let records = attempt["stream"].as_array().map_or(0, Vec::len);
    assert!(records > 0, "the failed attempt's stream is recorded");
    let retried = &seen.data("llm/retry")[0];
    let retry_id = retried["retryId"].as_str().unwrap_or_default();
    assert!(!retry_id.is_empty());
    assert_eq!(
        *retried,
        json!({
            "retryId": retry_id,
            "turn": 1,
            "step": 1,
            "provider": "scripted",
            "mode": "normal",
            "policyKey": retry.policy_key(),
            "retry": 1,
            "maxRetries": 2,
            "delayMs": 1,
            "failure": {"message": "boom", "code": "SERVER", "status": 500},
        })
    );
    assert_eq!(
        seen.data("llm/retry-started"),
        [json!({"retryId": retry_id, "turn": 1, "step": 1, "retry": 1})]
    );
    let reply = &seen.data("assistant/message")[0]["message"]["content"];
    assert_eq!(*reply, json!([{"type": "text", "text": "recovered"}]));
    assert_eq!(
        seen.data("turn/end"),
        [json!({"turn": 1, "reason": {"kind": "completed"}})]
    );
    // The retry sends the very request that failed.
    let requests = model.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].messages, requests[1].messages);
}

#[tokio::test]
async fn exhausted_retries_end_the_turn_with_the_last_failure() {
    let rig = Rig::new();
    let failures = json!([
        {"error": server_error()},
        {"error": server_error()},
        {"error": server_error()},
    ]);
    let model = rig.script("exhausted", failures);
    let launch = Launch {
        retry: fast_retry(2),
        ..Launch::default()
    };
    let (agent, seen) = rig.start(&model, launch);
    prompt(&agent, "hello");
    idle(&agent).await;

    assert_eq!(
        seen.kinds(),
        first_turn_then(&[
            "assistant/attempt",
            "llm/retry",
            "llm/retry-started",
            "assistant/attempt",
            "llm/retry",
            "llm/retry-started",
            "assistant/attempt",
            "step/end",
            "turn/end",
            "session.status idle",
        ])
    );
    let retries = seen.data("llm/retry");
    let numbered: Vec<_> = retries
        .iter()
        .map(|r| (r["retry"].clone(), r["delayMs"].clone()))
        .collect();
    assert_eq!(numbered, [(json!(1), json!(1)), (json!(2), json!(2))]);
    // One retry sequence: both retries share its id.
    assert_eq!(retries[0]["retryId"], retries[1]["retryId"]);
    assert_eq!(
        seen.data("turn/end"),
        [
            json!({"turn": 1, "reason": {"kind": "error", "error": {"message": "boom", "code": "SERVER", "status": 500}}})
        ]
    );
    assert_eq!(model.requests().len(), 3);
}

#[tokio::test]
async fn a_failure_that_is_not_retryable_ends_the_turn_at_once() {
    let rig = Rig::new();
    let model = rig.script(
        "auth",
        json!([{"error": {"code": "AUTH", "message": "bad key", "status": 401}}]),
    );
    let (agent, seen) = rig.start(&model, Launch::default());
    prompt(&agent, "hello");
    idle(&agent).await;

    assert_eq!(
        seen.kinds(),
        first_turn_then(&[
            "assistant/attempt",
            "step/end",
            "turn/end",
            "session.status idle"
        ])
    );
    assert_eq!(
        seen.data("turn/end"),
        [
            json!({"turn": 1, "reason": {"kind": "error", "error": {"message": "bad key", "code": "AUTH", "status": 401}}})
        ]
    );
}

#[tokio::test]
async fn a_reply_cut_off_at_max_tokens_ends_the_turn_and_drops_its_call() {
    let rig = Rig::new();
    let truncated = json!([{
        "blocks": [
            {"text": "partial"},
            {"tool_call": {"id": "call_1", "name": "gate", "arguments": "{\"trunc"}},
        ],
        "stop": "max_tokens",
    }]);
    let model = rig.script("max-tokens", truncated);
    let (agent, seen) = rig.start(&model, Launch::default());
    prompt(&agent, "hello");
    idle(&agent).await;

    assert_eq!(
        seen.kinds(),
        first_turn_then(&[
            "assistant/message",
            "step/end",
            "turn/end",
            "session.status idle"
        ])
    );
    // The kept reply drops the (truncated) call: nothing is run.
    let reply = &seen.data("assistant/message")[0]["message"]["content"];
    assert_eq!(*reply, json!([{"type": "text", "text": "partial"}]));
    assert_eq!(
        seen.data("turn/end"),
        [json!({"turn": 1, "reason": {"kind": "max-tokens"}})]
    );
}

#[tokio::test]
async fn a_prompt_while_a_turn_runs_waits_in_next_turn_and_runs_as_the_following_turn() {
    let rig = Rig::new();
    let replies = json!([
        {"blocks": [{"tool_call": {"id": "call_1", "name": "gate"}}]},
        {"text": "one"},
        {"text": "two"},
        {"text": "three"},
    ]);
    let model = rig.script("queued", replies);
    let (agent, seen) = rig.start(&model, Launch::default());
    let first = prompt(&agent, "first");
    // Turn 1 is inside its tool call when the second prompt arrives.
    seen.until("tool/call").await;
    let second = prompt(&agent, "second");
    rig.gate.open();
    idle(&agent).await;
    // Once idle, a prompt starts a turn of its own again.
    let third = prompt(&agent, "third");
    idle(&agent).await;

    assert_eq!(
        seen.kinds(),
        first_turn_then(&[
            "assistant/message",
            "tool/call",
            "agent/inbox/spliced", // "second" is queued
            "tool/result",
            "step/end",
            "step/start",
            "assistant/message",
            "step/end",
            "turn/end",
            "turn/start", // turn 2, straight after turn 1: still running
            "agent/inbox/spliced",
            "step/start",
            "user/message",
            "assistant/message",
            "step/end",
            "turn/end",
            "session.status idle",
            "agent/inbox/spliced",
            "session.status running",
            "turn/start",
            "agent/inbox/spliced",
            "step/start",
            "user/message",
            "assistant/message",
            "step/end",
            "turn/end",
            "session.status idle",
        ])
    );
    let statuses: Vec<String> = seen
        .kinds()
        .into_iter()
        .filter(|k| k.starts_with("session.status"))
        .collect();
    assert_eq!(
        statuses,
        kinds(&[
            "session.status running",
            "session.status idle",
            "session.status running",
            "session.status idle",
        ])
    );
    // Receipt and claim of each prompt: (target, start, removed, inserted ids).
    let splices: Vec<_> = seen
        .data("agent/inbox/spliced")
        .iter()
        .map(|s| {
            let inserted: Vec<Value> = s["inserted"]
                .as_array()
                .map(|a| a.iter().map(|m| m["id"].clone()).collect())
                .unwrap_or_default();
            (
                s["target"].clone(),
                s["start"].clone(),
                s["removedCount"].clone(),
                inserted,
            )
        })
        .collect();
    let receipt = |id: &str| (json!("next-turn"), json!(0), Value::Null, vec![json!(id)]);
    let claim = (json!("next-turn"), json!(0), json!(1), vec![]);
    assert_eq!(
        splices,
        [
            receipt(&first),
            claim.clone(),
            receipt(&second),
            claim.clone(),
            receipt(&third),
            claim,
        ]
    );
    let prompts: Vec<Value> = seen
        .data("user/message")
        .into_iter()
        .filter(|m| m["source"]["kind"] == "user")
        .map(|m| m["id"].clone())
        .collect();
    assert_eq!(prompts, [json!(first), json!(second), json!(third)]);
    assert_eq!(
        seen.data("turn/end"),
        [1, 2, 3].map(|turn| json!({"turn": turn, "reason": {"kind": "completed"}}))
    );
    // Turn 1 asks twice (before and after its tool call), then each turn
    // asks about its own prompt.
    let requests = model.requests();
    let prompted: Vec<String> = requests.iter().map(latest_prompt).collect();
    assert_eq!(prompted, ["first", "first", "second", "third"]);
    let answered = requests[1]
        .messages
        .last()
        .map(|m| m.get().as_ref().clone());
    assert!(
        matches!(&answered, Some(Message::Tool(t)) if t.tool_call_id == "call_1" && !t.is_error),
        "{answered:?}"
    );
}
