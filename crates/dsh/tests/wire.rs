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

#[test]
fn fd_1_is_redirected_to_stderr_and_the_protocol_has_a_private_descriptor() {
    let mut rt = Runtime::start("sdk");
    rt.initialize_echo(); // past start-up
    let pid = rt.child.id();
    let link = |fd: &str| std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok();
    let (stdout, stderr) = (link("1"), link("2"));
    assert!(stderr.is_some() && rt.stdout_pipe.is_some());
    assert_eq!(stdout, stderr, "fd 1 must point where fd 2 does");
    assert_ne!(
        stdout, rt.stdout_pipe,
        "fd 1 must no longer be the protocol pipe"
    );
    let fds: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|dir| {
            dir.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let protocol: Vec<&String> = fds
        .iter()
        .filter(|fd| link(fd).is_some() && link(fd) == rt.stdout_pipe)
        .collect();
    assert_eq!(
        protocol.len(),
        1,
        "exactly one descriptor holds the protocol pipe: {fds:?}"
    );
    let info =
        std::fs::read_to_string(format!("/proc/{pid}/fdinfo/{}", protocol[0])).unwrap_or_default();
    let flags = info
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .map(str::trim)
        .unwrap_or("0");
    let flags = u32::from_str_radix(flags, 8).unwrap_or(0);
    assert_ne!(
        flags & 0o2000000,
        0,
        "the protocol descriptor must be close-on-exec"
    );
}

#[test]
fn pipelined_requests_are_admitted_in_arrival_order() {
    let mut rt = Runtime::start("sdk");
    let ws = rt.workspace();
    // Written back to back, without waiting for the initialize answer.
    let mut batch = String::new();
    batch.push_str(&format!("{}\n", json!({"id": 1, "method": "initialize", "params": {"cwd": ws, "provider": "scripted", "model": "echo"}})));
    batch.push_str(&format!("{}\n", json!({"id": 2, "method": "session/prompt", "params": {"sessionId": "s", "contentBlocks": [{"type": "text", "text": "x"}]}})));
    batch.push_str(&format!(
        "{}\n",
        json!({"id": 3, "method": "session/working-directory/get", "params": {"sessionId": "s"}})
    ));
    rt.write(batch.as_bytes());
    let frames = rt.until_response(&json!(3));
    let responses: Vec<&Value> = frames.iter().filter(|f| f.get("id").is_some()).collect();
    assert_eq!(responses.len(), 3);
    for response in responses {
        assert!(response.get("result").is_some(), "{response}");
    }
}

#[test]
fn a_wait_in_flight_at_shutdown_is_answered_before_the_shutdown() {
    let mut rt = Runtime::start("sdk");
    let scenario = rt.workspace().join("slow.yaml");
    std::fs::write(&scenario, "replies:\n  - text: late\n    delay_ms: 30000\n").unwrap();
    let ws = rt.workspace();
    let init = rt.request(
        json!(1),
        "initialize",
        json!({"cwd": ws, "provider": "scripted", "model": scenario}),
    );
    assert!(init.get("result").is_some(), "{init}");
    let prompt = rt.request(
        json!(2),
        "session/prompt",
        json!({"sessionId": "s", "contentBlocks": [{"type": "text", "text": "hi"}]}),
    );
    assert!(prompt.get("result").is_some(), "{prompt}");
    // The turn waits 30 s on the model: the wait cannot end by itself.
    rt.send(
        &json!({"jsonrpc": "2.0", "id": 3, "method": "session/wait", "params": {"sessionId": "s"}}),
    );
    rt.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "shutdown"}));
    let frames = rt.until_response(&json!(4));
    let answers: Vec<&Value> = frames.iter().filter(|f| f.get("id").is_some()).collect();
    assert_eq!(answers.len(), 2, "{frames:?}");
    assert_eq!(answers[0]["id"], json!(3), "{frames:?}");
    // Released by disposal, or refused if it had not started yet.
    assert!(
        answers[0]["result"] == json!({})
            || answers[0]["error"]["message"] == json!("SDK server is shutting down"),
        "{frames:?}"
    );
    assert_eq!(answers[1]["id"], json!(4), "{frames:?}");
    assert_eq!(rt.wait_exit(), Some(0));
}
