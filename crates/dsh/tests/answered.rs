//! Every request line with a readable id gets exactly one answer, through
//! the real binary: valid lines, lone surrogates, invalid UTF-8, deep
//! nesting, huge numbers and truncations, among prompts that run turns on
//! the offline `scripted` echo model, waits on those turns and resumes.

mod common;

use common::Runtime;
use dsh_protocol::{lenient, surrogates};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};

/// How a request line is spoiled.
#[derive(Debug, Clone)]
enum Spoil {
    None,
    /// A lone surrogate escape in the text and the id, and in the method
    /// when the flag is set (which makes it an unknown method).
    Surrogate(u16, bool),
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
        3 => Just(Spoil::None),
        1 => (0xD800u16..0xE000, any::<bool>()).prop_map(|(unit, method)| Spoil::Surrogate(unit, method)),
        1 => proptest::collection::vec(0x80u8..=0xFF, 1..4).prop_map(Spoil::BadUtf8),
        1 => prop_oneof![1usize..200, 400usize..700, 2000usize..3000].prop_map(Spoil::Deep),
        1 => any::<bool>().prop_map(Spoil::Huge),
        1 => (0usize..200).prop_map(Spoil::Truncated),
    ]
}

/// A method, with the session (of three) it names. `session/prompt` runs
/// an echo turn (its text is the prompt's), `session/wait` waits for the
/// session's turns, `session/resume` reopens it; the rest are answered at
/// once.
fn method() -> impl Strategy<Value = (&'static str, usize)> {
    (
        prop_oneof![
            4 => Just("session/prompt"),
            2 => Just("session/wait"),
            1 => Just("session/resume"),
            1 => Just("session/working-directory/get"),
            1 => Just("nope"),
        ],
        0usize..3,
    )
}

/// The line for request `n` and the id (as the runtime reads it) it must be
/// answered with.
fn line(
    n: usize,
    numeric: bool,
    (method, session): (&str, usize),
    text: &str,
    spoil: &Spoil,
) -> (Vec<u8>, Value) {
    let mut id = if numeric {
        json!(1000 + n)
    } else {
        json!(format!("req-{n}"))
    };
    let prompt = method == "session/prompt";
    let mut method = serde_json::to_string(method).unwrap_or_default();
    let mut text = serde_json::to_string(text).unwrap_or_default().into_bytes();
    let mut extra = String::new();
    let mut id_text = id.to_string();
    match spoil {
        Spoil::None | Spoil::Truncated(_) => {}
        Spoil::Surrogate(unit, in_method) => {
            let escape = format!("\\u{unit:04x}");
            text.splice(1..1, escape.bytes());
            if *in_method {
                method.insert_str(1, &escape);
            }
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
    let (open, close) = if prompt {
        (
            format!(r#""sessionId":"s{session}","contentBlocks":[{{"type":"text","text":"#),
            "}]",
        )
    } else {
        (format!(r#""sessionId":"s{session}","t":"#), "")
    };
    let mut bytes =
        format!("{{\"id\":{id_text},\"jsonrpc\":\"2.0\",\"method\":{method},\"params\":{{{open}")
            .into_bytes();
    let after_id = format!("{{\"id\":{id_text}").len();
    bytes.append(&mut text);
    bytes.extend(format!("{close}{extra}}}}}").bytes());
    if let Spoil::Truncated(keep) = spoil {
        bytes.truncate((after_id + keep).min(bytes.len() - 1));
    }
    bytes.push(b'\n');
    (bytes, id)
}

/// What came back: responses (frames with a `result` or an `error`)
/// counted by id, the ids answered with a `result`, and the sessions whose
/// turn ended.
#[derive(Default)]
struct Seen {
    answers: HashMap<String, usize>,
    results: HashSet<String>,
    turns_ended: HashSet<String>,
}

/// Reads the frames the runtime wrote. A frame is read only as far as
/// needed: an echoed prompt can nest deeper than any JSON reader here
/// accepts, so a response is read up to its id (the frame's key order is
/// fixed: `jsonrpc`, `id`, then `result` or `error`) and only the small
/// `turn/end` events are parsed whole.
fn seen(lines: &[String]) -> Seen {
    let mut seen = Seen::default();
    for line in lines {
        if let Some(rest) = line.strip_prefix(r#"{"jsonrpc":"2.0","id":"#) {
            let rest = surrogates::encode(rest);
            let mut values = serde_json::Deserializer::from_str(&rest).into_iter::<Value>();
            let id = match values.next() {
                Some(Ok(id)) => id.to_string(),
                other => panic!("no id ({other:?}) in {line}"),
            };
            let after = &rest[values.byte_offset()..];
            if after.starts_with(r#","result":"#) {
                seen.results.insert(id.clone());
            } else if !after.starts_with(r#","error":"#) {
                panic!("neither result nor error: {line}");
            }
            *seen.answers.entry(id).or_default() += 1;
        } else if line.starts_with(r#"{"jsonrpc":"2.0","method":"#) {
            if line.contains(r#""type":"turn/end""#) {
                let frame: Value =
                    lenient::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
                if let Some(session) = frame["params"]["sessionId"].as_str() {
                    seen.turns_ended.insert(session.to_owned());
                }
            }
        } else {
            panic!("not a frame: {line}");
        }
    }
    seen
}

/// A request as sent: its id, method and session.
type Sent = (Value, (&'static str, usize));

/// Sends `requests` to a fresh runtime (then, when `settle`, waits for the
/// three sessions to be idle), shuts it down and checks that every id got
/// exactly one answer, and that, settled, every session with an accepted
/// prompt ran a turn.
fn run(
    requests: &[(bool, (&'static str, usize), String, Spoil)],
    settle: bool,
) -> Result<(), TestCaseError> {
    let mut rt = Runtime::start("sdk");
    rt.initialize_echo();
    let mut sent: Vec<Sent> = Vec::new();
    for (n, (numeric, method, text, spoil)) in requests.iter().enumerate() {
        let (bytes, id) = line(n, *numeric, *method, text, spoil);
        rt.write(&bytes);
        sent.push((id, *method));
    }
    let mut lines = Vec::new();
    if settle {
        for session in 0..3 {
            rt.send(&json!({"jsonrpc": "2.0", "id": format!("settle-{session}"),
                "method": "session/wait", "params": {"sessionId": format!("s{session}")}}));
        }
        let mut settled = 0;
        while settled < 3 {
            let line = rt.next_raw_within(std::time::Duration::from_secs(30));
            if line.contains(r#""id":"settle-"#) {
                settled += 1;
            }
            lines.push(line);
        }
    }
    rt.send(&json!({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"}));
    lines.extend(rt.drain());
    let mut seen = seen(&lines);
    prop_assert_eq!(seen.answers.remove("\"bye\""), Some(1));
    if settle {
        for session in 0..3 {
            prop_assert_eq!(
                seen.answers.remove(&format!("\"settle-{session}\"")),
                Some(1)
            );
        }
    }
    for (id, _) in &sent {
        prop_assert_eq!(
            seen.answers.remove(&id.to_string()),
            Some(1),
            "id {} in {:?}",
            id,
            requests
        );
    }
    prop_assert!(
        seen.answers.is_empty(),
        "unexpected answers {:?}",
        seen.answers
    );
    if settle {
        for (id, (method, session)) in &sent {
            if *method == "session/prompt" && seen.results.contains(&id.to_string()) {
                prop_assert!(
                    seen.turns_ended.contains(&format!("s{session}")),
                    "prompt {} accepted but no turn of s{} ended",
                    id,
                    session
                );
            }
        }
    }
    prop_assert_eq!(rt.wait_exit(), Some(0));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_request_line_with_an_id_gets_exactly_one_answer(
        requests in proptest::collection::vec(
            (any::<bool>(), method(), "\\PC{0,12}", spoil()),
            1..16,
        ),
        settle in any::<bool>(),
    ) {
        run(&requests, settle)?;
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
