//! Every request line with a readable id is classified as something that
//! gets answered, with that id: valid lines, lone surrogates, invalid UTF-8
//! splices, garbage, deep nesting, huge numbers and truncations.

use dsh_protocol::{Incoming, RequestId, classify, lenient, recover_id};
use proptest::prelude::*;
use serde_json::Value;

/// Ids as a client writes them (JSON text) — strings with escapes and lone
/// surrogates, integers, fractions, huge numbers.
fn id_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "\\PC{0,10}".prop_map(|s| serde_json::to_string(&s).unwrap_or_default()),
        (0xD800u16..0xE000, "[a-z]{0,4}").prop_map(|(u, s)| format!("\"{s}\\u{u:04x}{s}\"")),
        any::<i64>().prop_map(|n| n.to_string()),
        (any::<u32>(), 0u8..10).prop_map(|(n, f)| format!("{n}.{f}")),
        Just("1e400".to_owned()),
        Just("-1e400".to_owned()),
        Just("1.0".to_owned()),
    ]
}

/// Bytes spliced into the params text: no letter of `method` or `id`, so a
/// splice cannot make a new top-level member, only break or reshape what
/// follows the method.
fn splice() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        prop_oneof![
            0x80u8..=0xFF,
            proptest::sample::select(b"\\\"u8d{}[],: 1e4-".to_vec()),
        ],
        0..12,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn a_line_with_a_readable_id_is_answered_with_that_id(
        id in id_text(),
        text in "\\PC{0,16}",
        splice in splice(),
        at in any::<prop::sample::Index>(),
        depth in prop_oneof![Just(0usize), 1usize..600, 10_000usize..10_001],
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let head = format!("{{\"id\":{id},\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"params\":{{\"t\":");
        let mut line = head.clone().into_bytes();
        let mut string = serde_json::to_string(&text).unwrap_or_default().into_bytes();
        let at = 1 + at.index(string.len() - 1);
        string.splice(at..at, splice);
        line.extend("[".repeat(depth).bytes());
        line.extend(string);
        line.extend("]".repeat(depth).bytes());
        line.extend(b"}}");
        if let Some(cut) = cut {
            // Anywhere after the id member, before the last byte.
            let after_id = format!("{{\"id\":{id}").len();
            line.truncate(after_id + cut.index(line.len() - after_id));
        }
        let expected: RequestId = match recover_id(head.as_bytes()) {
            Some(id) => id,
            None => return Err(TestCaseError::fail(format!("generated id unreadable: {id}"))),
        };
        match classify(&line) {
            Incoming::Request(request) => prop_assert_eq!(request.id, expected),
            Incoming::Invalid(invalid) => {
                prop_assert_eq!(&invalid.id, &expected);
                let answer: Value = lenient::from_slice(&invalid.answer().to_vec())
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let message = answer["error"]["message"].as_str().unwrap_or_default();
                prop_assert!(message.starts_with("invalid request: "), "{}", message);
            }
            other => return Err(TestCaseError::fail(format!(
                "{other:?} for {}", String::from_utf8_lossy(&line)
            ))),
        }
    }

    #[test]
    fn the_scanner_agrees_with_the_parser_on_valid_lines(
        id in id_text(), members in proptest::collection::vec((prop_oneof!["[a-z]{1,3}", Just("id".to_owned())], "\\PC{0,6}"), 0..4), dup in any::<bool>()
    ) {
        let mut line = format!("{{\"id\":{id}");
        for (key, value) in &members {
            line.push_str(&format!(",{}:{}", serde_json::to_string(key).unwrap_or_default(), serde_json::to_string(&[value]).unwrap_or_default()));
        }
        if dup {
            line.push_str(",\"id\":\"last\"");
        }
        line.push_str(",\"method\":\"m\"}");
        // Keys may repeat `id` with values that are no id at all.
        let classified = match classify(line.as_bytes()) {
            Incoming::Request(request) => Some(request.id),
            Incoming::Response(id) => Some(id),
            Incoming::Notification(_) => None,
            other => return Err(TestCaseError::fail(format!("{other:?}: {line}"))),
        };
        prop_assert_eq!(classified, recover_id(line.as_bytes()));
    }
}
