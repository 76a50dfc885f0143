//! The event catalogue against the official logs: every event of every
//! transcript parses into its typed payload, and the typed payload
//! serialises back to the same bytes (so every struct keeps the official
//! key order and drops nothing the official runtime writes).

mod common;

use common::{all_logs, events};
use dsh_protocol::catalog::{Event, EventPayload};
use std::collections::BTreeMap;

#[test]
fn every_official_event_round_trips_through_its_type() {
    let mut typed = BTreeMap::<String, usize>::new();
    let mut unknown = BTreeMap::<String, usize>::new();
    let mut mismatches = Vec::new();
    for transcript in all_logs() {
        for event in events(&transcript) {
            let where_ = format!("{} seq {}", transcript.scenario, event.seq);
            let payload = match event.typed() {
                Ok(payload) => payload,
                Err(e) => {
                    mismatches.push(format!("{where_}: {} does not fit: {e}", event.kind));
                    continue;
                }
            };
            assert_eq!(payload.kind(), event.kind, "{where_}");
            let again = serde_json::to_string(&payload).unwrap();
            let original = serde_json::to_string(&event.data).unwrap();
            if again != original {
                let cut = |s: &str| s.chars().take(300).collect::<String>();
                mismatches.push(format!(
                    "{where_}: {}\n  typed:    {}\n  official: {}",
                    event.kind,
                    cut(&again),
                    cut(&original)
                ));
            }
            let tally = match payload {
                Event::Unknown(_) => &mut unknown,
                _ => &mut typed,
            };
            *tally.entry(event.kind.clone()).or_default() += 1;
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    // The types this runtime writes all occur in the captures.
    for kind in [
        "agent/inbox/spliced",
        "turn/start",
        "turn/end",
        "step/start",
        "step/end",
        "system/message",
        "user/message",
        "assistant/message",
        "request/header",
        "request/context",
        "session/title",
        "tool/call",
        "tool/result",
        "permission/preset",
        "sandbox/mode",
        "approval/policy",
        "llm/retry",
        "llm/retry-started",
        "job/registered",
        "job/settled",
    ] {
        assert!(typed.contains_key(kind), "{kind} not seen typed: {typed:?}");
    }
    // Types of the official runtime not (yet) in the catalogue load raw.
    assert!(unknown.keys().all(|k| !typed.contains_key(k)));
}

#[test]
fn a_known_type_whose_payload_does_not_fit_is_an_error() {
    let bad = serde_json::json!({"turn": "one"});
    assert!(Event::parse("turn/start", &bad).is_err());
    let later = serde_json::json!({"anything": [1, 2]});
    let raw = Event::parse("goal/updated", &later).unwrap();
    assert_eq!(raw.kind(), "goal/updated");
    assert_eq!(serde_json::to_value(&raw).unwrap(), later);
}
