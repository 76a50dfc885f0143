//! Every request line with a readable id gets exactly one answer, through
//! the real binary: valid lines, lone surrogates, invalid UTF-8, deep
//! nesting, huge numbers and truncations.

mod common;

use common::Runtime;
use dsh_protocol::lenient;
use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::HashMap;

/// How a request line is spoiled.
#[derive(Debug, Clone)]
enum Spoil {
    None,
    /// A lone surrogate escape in the text, the method and the id.
    Surrogate(u16),
    /// Bytes that are not UTF-8 inside the text.
    BadUtf8(Vec<u8>),
    /// The text wrapped in `depth` arrays.
    Deep(usize),
    /// A number beyond the f64 range beside the text.
    Huge(bool),
    /// Only the first `keep` bytes after the id member are sent.
    Truncated(usize),
}

fn spoil() -> impl Strategy<Value = Spoil> {
    prop_oneof![
        Just(Spoil::None),
        (0xD800u16..0xE000).prop_map(Spoil::Surrogate),
        proptest::collection::vec(0x80u8..=0xFF, 1..4).prop_map(Spoil::BadUtf8),
        prop_oneof![1usize..200, 400usize..700, 2000usize..3000].prop_map(Spoil::Deep),
        any::<bool>().prop_map(Spoil::Huge),
        (0usize..200).prop_map(Spoil::Truncated),
    ]
}

/// A method that is answered at once, whatever the params.
fn method() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("nope"),
        Just("session/working-directory/get"),
        Just("session/wait"),
        Just("session/resume"),
    ]
}

/// The line for request `n` and the id (as the runtime reads it) it must be
/// answered with.
fn line(n: usize, numeric: bool, method: &str, text: &str, spoil: &Spoil) -> (Vec<u8>, Value) {
    let mut id = if numeric {
        json!(1000 + n)
    } else {
        json!(format!("req-{n}"))
    };
    let mut method = serde_json::to_string(method).unwrap_or_default();
    let mut text = serde_json::to_string(text).unwrap_or_default().into_bytes();
    let mut extra = String::new();
    let mut id_text = id.to_string();
    match spoil {
        Spoil::None | Spoil::Truncated(_) => {}
        Spoil::Surrogate(unit) => {
            let escape = format!("\\u{unit:04x}");
            text.splice(1..1, escape.bytes());
            method.insert_str(1, &escape);
            if !numeric {
                id_text.insert_str(1, &escape);
                id = lenient::from_str(&id_text).unwrap_or_else(|e| panic!("{e}"));
            }
        }
        Spoil::BadUtf8(bytes) => {
            text.splice(1..1, bytes.iter().copied());
        }
        Spoil::Deep(depth) => {
            let mut deep = "[".repeat(*depth).into_bytes();
            deep.append(&mut text);
            deep.extend("]".repeat(*depth).bytes());
            text = deep;
        }
        Spoil::Huge(negative) => {
            extra = format!(",\"n\":{}1e400", if *negative { "-" } else { "" });
        }
    }
    let mut bytes =
        format!("{{\"id\":{id_text},\"jsonrpc\":\"2.0\",\"method\":{method},\"params\":{{\"t\":")
            .into_bytes();
    let after_id = format!("{{\"id\":{id_text}").len();
    bytes.append(&mut text);
    bytes.extend(format!("{extra}}}}}").bytes());
    if let Spoil::Truncated(keep) = spoil {
        bytes.truncate((after_id + keep).min(bytes.len() - 1));
    }
    bytes.push(b'\n');
    (bytes, id)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn every_request_line_with_an_id_gets_exactly_one_answer(
        requests in proptest::collection::vec((any::<bool>(), method(), "\\PC{0,12}", spoil()), 1..12),
    ) {
        let mut rt = Runtime::start("sdk");
        rt.initialize_echo();
        let mut expected = Vec::new();
        for (n, (numeric, method, text, spoil)) in requests.iter().enumerate() {
            let (bytes, id) = line(n, *numeric, method, text, spoil);
            rt.write(&bytes);
            expected.push(id);
        }
        rt.send(&json!({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"}));
        let mut answers: HashMap<String, usize> = HashMap::new();
        for line in rt.drain() {
            let frame: Value = lenient::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
            if frame.get("result").is_some() || frame.get("error").is_some() {
                *answers.entry(frame["id"].to_string()).or_default() += 1;
            }
        }
        prop_assert_eq!(answers.remove("\"bye\""), Some(1));
        for id in &expected {
            prop_assert_eq!(answers.remove(&id.to_string()), Some(1), "id {} in {:?}", id, requests);
        }
        prop_assert!(answers.is_empty(), "unexpected answers {:?}", answers);
        prop_assert_eq!(rt.wait_exit(), Some(0));
    }
}

/// Raw stdout lines up to and including the response to `id`.
fn raw_until(rt: &mut Runtime, id: &str) -> Vec<String> {
    let mut lines = Vec::new();
    loop {
        let frame = rt.next_raw();
        let done = frame.contains(&format!("\"id\":\"{id}\""));
        lines.push(frame);
        if done {
            return lines;
        }
    }
}

#[test]
fn a_lone_surrogate_in_a_prompt_comes_back_escaped_in_every_event() {
    let mut rt = Runtime::start("sdk");
    rt.initialize_echo();
    rt.write(br#"{"id":"p","method":"session/prompt","params":{"sessionId":"s","contentBlocks":[{"type":"text","text":"a\ud800b\udc00"}]}}"#);
    rt.write(b"\n");
    rt.write(br#"{"id":"w","method":"session/wait","params":{"sessionId":"s"}}"#);
    rt.write(b"\n");
    let lines = raw_until(&mut rt, "w");
    let stdout = lines.join("\n");
    assert!(!stdout.contains('\u{10FFFF}'), "a marker leaked: {stdout}");
    let echoed = lines
        .iter()
        .filter(|l| l.contains("assistant/message"))
        .count();
    assert_eq!(echoed, 1, "{stdout}");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("assistant/message") && l.contains(r#"a\ud800b\udc00"#)),
        "{stdout}"
    );
}

#[test]
fn unreadable_lines_are_answered_with_the_parser_message() {
    let mut rt = Runtime::start("sdk");
    rt.write(b"{\"id\":\"cut\",\"method\":\"nope\"\n");
    let deep = format!(
        "{{\"id\":\"deep\",\"method\":\"nope\",\"params\":{{\"a\":{}{}}}}}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    rt.write(deep.as_bytes());
    rt.write(b"{\"id\":1e400,\"method\":\"nope\"}\n");
    rt.write(b"{\"id\":\"after\",\"method\":\"nope\"}\n");
    let lines = raw_until(&mut rt, "after");
    assert_eq!(
        lines,
        [
            r#"{"jsonrpc":"2.0","id":"cut","error":{"code":-32603,"message":"invalid request: EOF while parsing an object at line 1 column 27"}}"#,
            r#"{"jsonrpc":"2.0","id":"deep","error":{"code":-32603,"message":"invalid request: nesting deeper than 512 levels"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"unknown DeepSeek Harness SDK runtime method: nope"}}"#,
            r#"{"jsonrpc":"2.0","id":"after","error":{"code":-32603,"message":"unknown DeepSeek Harness SDK runtime method: nope"}}"#,
        ]
    );
}
