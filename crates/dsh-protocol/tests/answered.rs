//! Every request line with a readable id is classified as something that
//! gets answered, with that id: valid lines, lone surrogates, invalid UTF-8
//! splices, garbage, deep nesting, huge numbers and truncations.
//!
//! The expected id is never read back through the code under test: the
//! generator writes each id's JSON text together with the id the official
//! (JavaScript) runtime holds for it, worked out here from the text's own
//! parts (the string it escaped, the surrogate it wrote, the number it
//! printed), and a line that is plain JSON is also read with serde_json to
//! check that it carries the id the generator says it wrote.

use dsh_protocol::{Incoming, RequestId, classify, lenient, recover_id};
use proptest::prelude::*;
use serde_json::{Number, Value};

/// The first character of the marker that carries a lone surrogate through
/// a Rust string (`dsh_protocol::surrogates`' documented mapping: `\uD800+k`
/// is U+10FFFF U+10F000+k, and a U+10FFFF of the text is doubled).
const MARK: char = '\u{10FFFF}';

/// A string id as the runtime holds it: `s` with any U+10FFFF doubled.
fn held(s: &str) -> String {
    s.replace(MARK, "\u{10FFFF}\u{10FFFF}")
}

/// A number as JavaScript writes it back: an integral double below 1e21 in
/// full digits (its shortest round-trip digits padded with zeros, which is
/// also what Rust's `Display` of an `f64` prints), anything else as parsed.
fn javascript_number(value: f64) -> Option<Number> {
    if value.fract() == 0.0 && value.abs() < 1e21 {
        serde_json::from_str(&format!("{value}")).ok()
    } else {
        Number::from_f64(value)
    }
}

/// One id as a client writes it: its JSON text and the id the runtime
/// must answer with, worked out from the parts the text was made of.
#[derive(Debug, Clone)]
struct Id {
    text: String,
    expected: RequestId,
}

/// Ids as a client writes them (JSON text) — strings with escapes and lone
/// surrogates, integers (beyond 2^53 too), fractions, `1.0`, huge numbers.
fn id() -> impl Strategy<Value = Id> {
    let string = "\\PC{0,10}".prop_map(|s| Id {
        text: serde_json::to_string(&s).unwrap_or_default(),
        expected: RequestId::Str(held(&s)),
    });
    let surrogate = (0xD800u32..0xE000, "[a-z]{0,4}").prop_map(|(u, s)| {
        let second = char::from_u32(0x10_F000 + (u - 0xD800)).unwrap_or_default();
        Id {
            text: format!("\"{s}\\u{u:04x}{s}\""),
            expected: RequestId::Str(format!("{s}{MARK}{second}{s}")),
        }
    });
    let integer = any::<i64>().prop_map(|n| Id {
        text: n.to_string(),
        // Exact below 2^53; beyond, the nearest double, as JavaScript prints it.
        expected: RequestId::Num(if n.unsigned_abs() < 1 << 53 {
            Number::from(n)
        } else {
            javascript_number(n as f64).unwrap_or_else(|| Number::from(n))
        }),
    });
    let fraction = (any::<u32>(), 0u8..10).prop_map(|(n, f)| Id {
        text: format!("{n}.{f}"),
        expected: RequestId::Num(if f == 0 {
            Number::from(n)
        } else {
            // Read by Rust's own float parser, not serde_json's.
            format!("{n}.{f}")
                .parse::<f64>()
                .ok()
                .and_then(Number::from_f64)
                .unwrap_or_else(|| Number::from(n))
        }),
    });
    let fixed = |text: &str, expected: RequestId| {
        Just(Id {
            text: text.to_owned(),
            expected,
        })
    };
    prop_oneof![
        string,
        surrogate,
        integer,
        fraction,
        fixed("1e400", RequestId::NonFinite),
        fixed("-1e400", RequestId::NonFinite),
        fixed("1.0", RequestId::Num(Number::from(1))),
        fixed("1e2", RequestId::Num(Number::from(100))),
        fixed("-0", RequestId::Num(Number::from(0))),
        fixed(
            "12345678901234567",
            RequestId::Num(Number::from(12_345_678_901_234_568u64))
        ),
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

/// The line read by plain serde_json (invalid UTF-8 replaced, as Node
/// decodes stdin), when it is plain JSON: no lone surrogate, no number
/// beyond the `f64` range, at most 128 levels deep.
fn plain_json(line: &[u8]) -> Option<Value> {
    serde_json::from_str(&String::from_utf8_lossy(line)).ok()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn a_line_with_a_readable_id_is_answered_with_that_id(
        id in id(),
        text in "\\PC{0,16}",
        splice in splice(),
        at in any::<prop::sample::Index>(),
        depth in prop_oneof![Just(0usize), 1usize..600, 10_000usize..10_001],
        cut in proptest::option::of(any::<prop::sample::Index>()),
    ) {
        let Id { text: id_text, expected } = id;
        let mut line =
            format!("{{\"id\":{id_text},\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"params\":{{\"t\":")
                .into_bytes();
        let mut string = serde_json::to_string(&text).unwrap_or_default().into_bytes();
        let at = 1 + at.index(string.len() - 1);
        string.splice(at..at, splice);
        line.extend("[".repeat(depth).bytes());
        line.extend(string);
        line.extend("]".repeat(depth).bytes());
        line.extend(b"}}");
        if let Some(cut) = cut {
            // Anywhere after the id member, before the last byte.
            let after_id = format!("{{\"id\":{id_text}").len();
            line.truncate(after_id + cut.index(line.len() - after_id));
        }
        let shown = || String::from_utf8_lossy(&line).into_owned();
        // A line serde_json reads carries the id the generator wrote.
        if let Some(value) = plain_json(&line) {
            let written: Value = serde_json::from_str(&id_text)
                .map_err(|e| TestCaseError::fail(format!("{id_text}: {e}")))?;
            prop_assert_eq!(&value["id"], &written, "{}", shown());
        }
        match classify(&line) {
            Incoming::Request(request) => prop_assert_eq!(&request.id, &expected, "{}", shown()),
            Incoming::Invalid(invalid) => {
                prop_assert_eq!(&invalid.id, &expected, "{}", shown());
                let answer: Value = lenient::from_slice(&invalid.answer().to_vec())
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                let message = answer["error"]["message"].as_str().unwrap_or_default();
                prop_assert!(message.starts_with("invalid request: "), "{}", message);
            }
            other => return Err(TestCaseError::fail(format!("{other:?} for {}", shown()))),
        }
        // The scanner alone reads the same id, whether the line parses or not.
        prop_assert_eq!(recover_id(&line), Some(expected), "{}", shown());
    }

    #[test]
    fn the_scanner_agrees_with_the_parser_on_valid_lines(
        id in id(), members in proptest::collection::vec((prop_oneof!["[a-z]{1,3}", Just("id".to_owned())], "\\PC{0,6}"), 0..4), dup in any::<bool>()
    ) {
        let mut line = format!("{{\"id\":{}", id.text);
        for (key, value) in &members {
            line.push_str(&format!(",{}:{}", serde_json::to_string(key).unwrap_or_default(), serde_json::to_string(&[value]).unwrap_or_default()));
        }
        if dup {
            line.push_str(",\"id\":\"last\"");
        }
        line.push_str(",\"method\":\"m\"}");
        // The last `id` member wins (as in `JSON.parse`); a later `id` whose
        // value is an array is no id at all.
        let expected = if dup {
            Some(RequestId::Str("last".to_owned()))
        } else if members.iter().any(|(key, _)| key == "id") {
            None
        } else {
            Some(id.expected)
        };
        let classified = match classify(line.as_bytes()) {
            Incoming::Request(request) => Some(request.id),
            Incoming::Response(response) => Some(response.id),
            Incoming::Notification(_) => None,
            other => return Err(TestCaseError::fail(format!("{other:?}: {line}"))),
        };
        prop_assert_eq!(&classified, &expected, "{}", line);
        prop_assert_eq!(recover_id(line.as_bytes()), expected, "{}", line);
    }
}
