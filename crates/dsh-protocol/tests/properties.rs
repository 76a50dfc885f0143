//! Property tests of framing and classification.

use dsh_protocol::{Incoming, LineReader, Outgoing, RequestId, classify};
use proptest::prelude::*;
use serde_json::{Value, json};

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap_or_else(|e| panic!("runtime: {e}"))
        .block_on(future)
}

/// Every non-empty trimmed line of `input`, through the reader.
fn read_lines(input: &[u8]) -> Vec<Vec<u8>> {
    block_on(async {
        let mut reader = LineReader::new(input);
        let mut lines = Vec::new();
        while let Ok(Some(line)) = reader.next_line().await {
            lines.push(line.to_vec());
        }
        lines
    })
}

fn arb_id() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<String>().prop_map(Value::from),
        // Integers a double holds exactly: beyond, ids are echoed as
        // JavaScript rounds them (see `RequestId`).
        (-(1i64 << 53)..=(1i64 << 53)).prop_map(Value::from),
        any::<u32>().prop_map(|n| json!(f64::from(n) + 0.5)),
    ]
}

fn arb_params() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(Value::Null)),
        any::<i32>().prop_map(|n| Some(json!(n))),
        any::<String>().prop_map(|s| Some(json!([s]))),
        (any::<String>(), any::<String>()).prop_map(|(k, v)| Some(json!({ k: v }))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic_and_lines_are_trimmed(input in proptest::collection::vec(any::<u8>(), 0..4096)) {
        for line in read_lines(&input) {
            prop_assert!(!line.is_empty());
            prop_assert!(!line.contains(&b'\n'));
            prop_assert_eq!(line.trim_ascii(), &line[..]);
            let _ = classify(&line);
        }
    }

    #[test]
    fn requests_keep_id_and_method_and_params_become_objects(
        id in arb_id(), method in any::<String>(), params in arb_params(), crlf in any::<bool>()
    ) {
        let mut frame = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = &params {
            frame["params"] = params.clone();
        }
        // Python's json.dumps escapes non-ASCII; serde_json writes raw UTF-8:
        // both must decode to the same request.
        let mut bytes = frame.to_string().into_bytes();
        bytes.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
        let lines = read_lines(&bytes);
        prop_assert_eq!(lines.len(), 1);
        let Incoming::Request(request) = classify(&lines[0]) else {
            return Err(TestCaseError::fail("not a request"));
        };
        prop_assert_eq!(Some(request.id.clone()), RequestId::from_value(&id));
        prop_assert_eq!(&request.method, &method);
        match params {
            Some(Value::Object(map)) => prop_assert_eq!(request.params, map),
            _ => prop_assert!(request.params.is_empty()),
        }
        // The answer echoes the id with its JSON type, on one line.
        let answer = Outgoing::error(&request.id, &method);
        let text = String::from_utf8(answer.to_vec()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert!(text.ends_with('\n'));
        prop_assert!(!text[..text.len() - 1].contains(['\n', '\r']));
        let parsed: Value = serde_json::from_str(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&parsed["id"], &id);
        prop_assert_eq!(&parsed["error"]["message"], &json!(method));
    }

    #[test]
    fn non_objects_are_ignored(value in prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<String>().prop_map(Value::from),
        any::<bool>().prop_map(Value::from),
        Just(Value::Null),
        any::<Vec<u8>>().prop_map(|v| json!(v)),
    ]) {
        prop_assert!(matches!(classify(value.to_string().as_bytes()), Incoming::Ignored(_)));
    }

    #[test]
    fn frames_are_single_valid_utf8_lines(method in any::<String>(), text in any::<String>()) {
        let frame = Outgoing::notification(&method, &json!({"t": text})).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let bytes = &frame.to_vec()[..];
        prop_assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), 1);
        prop_assert_eq!(bytes.last(), Some(&b'\n'));
        prop_assert!(!bytes.contains(&b'\r'));
        let parsed: Value = serde_json::from_slice(bytes).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&parsed["params"]["t"], &json!(text));
    }

    #[test]
    fn multibyte_text_split_across_reads_survives(text in "\\PC{0,64}", cut in 0usize..256) {
        // A reader over a chain of two slices split at an arbitrary byte.
        let line = json!({"id": 1, "method": "m", "params": {"t": text}}).to_string();
        let bytes = format!("{line}\n").into_bytes();
        let cut = cut.min(bytes.len());
        let (a, b) = bytes.split_at(cut);
        let lines = block_on(async {
            use tokio::io::AsyncReadExt;
            let mut reader = LineReader::new(a.chain(b));
            let mut out = Vec::new();
            while let Ok(Some(l)) = reader.next_line().await {
                out.push(l.to_vec());
            }
            out
        });
        prop_assert_eq!(lines.len(), 1);
        let Incoming::Request(request) = classify(&lines[0]) else {
            return Err(TestCaseError::fail("not a request"));
        };
        prop_assert_eq!(&request.params["t"], &json!(text));
    }
}
