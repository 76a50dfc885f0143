//! The wire seen from outside: whatever arrives on stdin, stdout carries
//! only valid frames.

mod common;

use common::Runtime;
use proptest::prelude::*;
use serde_json::{Value, json};

fn assert_frame(line: &str) {
    let frame: Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"));
    assert_eq!(frame["jsonrpc"], "2.0", "{line}");
    let is_response =
        frame.get("id").is_some() && (frame.get("result").is_some() ^ frame.get("error").is_some());
    let is_notification =
        frame.get("method").is_some_and(Value::is_string) && frame.get("params").is_some();
    assert!(is_response || is_notification, "not a frame: {line}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn arbitrary_input_yields_only_valid_frames(noise in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let mut rt = Runtime::start("sdk");
        rt.initialize_echo();
        rt.write(&noise);
        // Terminate whatever partial line the noise left, then shut down.
        rt.write(b"\n");
        rt.send(&json!({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"}));
        let mut seen_bye = false;
        for line in rt.drain() {
            assert_frame(&line);
            seen_bye |= line.contains("\"id\":\"bye\"");
        }
        prop_assert!(seen_bye, "no shutdown response");
        prop_assert_eq!(rt.wait_exit(), Some(0));
    }
}

#[test]
fn a_prompt_on_an_idle_session_is_claimed_before_its_response() {
    let mut rt = Runtime::start("sdk");
    rt.initialize_echo();
    rt.send(&json!({"id": 5, "method": "session/prompt", "params": {"sessionId": "s", "contentBlocks": [{"type": "text", "text": "h\u{e9} \u{1F600}"}]}}));
    let frames = rt.until_response(&json!(5));
    let kinds: Vec<String> = frames
        .iter()
        .map(|f| match f["method"].as_str() {
            Some("session.event") => f["params"]["event"]["type"]
                .as_str()
                .unwrap_or("?")
                .to_owned(),
            Some("session.status") => {
                format!("status:{}", f["params"]["status"].as_str().unwrap_or("?"))
            }
            _ => "response".to_owned(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "permission/preset",
            "sandbox/mode",
            "approval/policy",
            "agent/inbox/spliced",
            "status:running",
            "turn/start",
            "agent/inbox/spliced",
            "response"
        ]
    );
    let receipt = &frames[3]["params"]["event"]["data"];
    let message_id = &frames[7]["result"]["messageId"];
    assert_eq!(&receipt["inserted"][0]["id"], message_id);
    // The turn completes and the echo carries the non-ASCII text intact.
    let mut reply = None;
    loop {
        let frame = rt.next();
        if frame["params"]["event"]["type"] == "assistant/message" {
            reply = frame["params"]["event"]["data"]["message"]["content"][0]["text"]
                .as_str()
                .map(str::to_owned);
        }
        if frame["params"]["status"] == "idle" {
            break;
        }
    }
    assert_eq!(reply.as_deref(), Some("h\u{e9} \u{1F600}"));
}
