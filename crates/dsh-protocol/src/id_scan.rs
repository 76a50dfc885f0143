//! Recovering the `id` of a line that is not valid JSON.
//!
//! A tolerant scanner of the top-level object: it walks the members in
//! order, skipping values by counting brackets outside string literals (no
//! recursion, no allocation but the id), and stops at the first byte that
//! does not fit. The id is the last top-level `"id"` member seen before
//! that point (JavaScript's `JSON.parse` keeps the last duplicate) whose
//! value is a string or a number token. Time is linear in the line.

use crate::RequestId;
use crate::lenient::{overflows, skip_number, skip_string};

/// The id an answer to `line` carries, read by the tolerant scanner: the
/// same id [`classify`](crate::classify) finds when the line is a request,
/// and the one an [`Incoming::Invalid`](crate::Incoming::Invalid) answer
/// carries when it is not JSON.
pub fn recover_id(line: &[u8]) -> Option<RequestId> {
    recover(&crate::surrogates::encode(&String::from_utf8_lossy(line)))
}

/// [`recover_id`] of JSON text with lone surrogates already encoded.
pub(crate) fn recover(line: &str) -> Option<RequestId> {
    let bytes = line.as_bytes();
    let mut i = skip_ws(bytes, 0);
    if bytes.get(i) != Some(&b'{') {
        return None;
    }
    let mut id = None;
    loop {
        i = skip_ws(bytes, i + 1);
        if bytes.get(i) != Some(&b'"') {
            return id;
        }
        let key_end = skip_string(bytes, i);
        let is_id = is_id_key(&line[i..key_end]);
        i = skip_ws(bytes, key_end);
        if bytes.get(i) != Some(&b':') {
            return id;
        }
        let start = skip_ws(bytes, i + 1);
        let end = skip_value(bytes, start);
        if is_id {
            id = parse_id(&line[start..end]);
        }
        i = skip_ws(bytes, end);
        if bytes.get(i) != Some(&b',') {
            return id;
        }
    }
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while bytes
        .get(i)
        .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
    {
        i += 1;
    }
    i.min(bytes.len())
}

/// Whether a key literal (quotes included) spells `id`, escapes decoded.
fn is_id_key(literal: &str) -> bool {
    literal == "\"id\""
        || (literal.contains('\\')
            && serde_json::from_str::<String>(literal).is_ok_and(|k| k == "id"))
}

/// Index just past the value starting at `start`: a string, a bracketed
/// value (brackets counted outside strings), or a bare token.
fn skip_value(bytes: &[u8], start: usize) -> usize {
    match bytes.get(start) {
        Some(b'"') => skip_string(bytes, start),
        Some(b'[' | b'{') => {
            let mut depth = 0usize;
            let mut i = start;
            while i < bytes.len() {
                match bytes[i] {
                    b'"' => {
                        i = skip_string(bytes, i);
                        continue;
                    }
                    b'[' | b'{' => depth += 1,
                    b']' | b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            return i + 1;
                        }
                    }
                    _ => {}
                }
                i += 1;
            }
            bytes.len()
        }
        Some(b'-' | b'0'..=b'9') => skip_number(bytes, start),
        _ => bytes[start.min(bytes.len())..]
            .iter()
            .position(|b| matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n'))
            .map_or(bytes.len(), |n| start + n),
    }
}

/// A complete string literal or number token as an id.
fn parse_id(token: &str) -> Option<RequestId> {
    if token.starts_with('"') {
        return serde_json::from_str::<String>(token)
            .ok()
            .map(RequestId::Str);
    }
    if overflows(token) {
        return Some(RequestId::NonFinite);
    }
    serde_json::from_str::<serde_json::Value>(token)
        .ok()
        .as_ref()
        .and_then(RequestId::from_value)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn id(line: &str) -> Option<RequestId> {
        recover(line)
    }

    #[test]
    fn ids_are_recovered_from_broken_lines() {
        let s = |t: &str| Some(RequestId::Str(t.to_owned()));
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":"a","method":"m""#), s("a"));
        assert_eq!(
            id(r#" { "params" : {"id":"inner","x":[1,"]"]} , "id" : "b" , oops"#),
            s("b")
        );
        assert_eq!(id(r#"{"id":"a","id":"b","method":"m",,}"#), s("b"));
        assert_eq!(id(r#"{"\u0069d":"escaped","x":"#), s("escaped"));
        assert_eq!(id(r#"{"id":7,"method":"#), Some(RequestId::Num(7.into())));
        assert_eq!(id(r#"{"id":1e400,"method":"#), Some(RequestId::NonFinite));
    }

    #[test]
    fn unreadable_ids_are_not_guessed() {
        for line in [
            "",
            "{",
            "not json",
            r#"["id","a"]"#,
            r#"{"id":"unterminated"#,
            r#"{"id":"bad \x escape","method":"m"}"#,
            r#"{"id":null,"method":"m""#,
            r#"{"id":true,"method":"m""#,
            r#"{"id":{"a":1},"method":"m""#,
            r#"{"id":1-2,"method":"m""#,
            r#"{garbage "id":"a"}"#,
            r#"{"x":1 "id":"a"}"#,
            // A later unreadable id replaces an earlier readable one.
            r#"{"id":"a","id":null,"#,
        ] {
            assert_eq!(id(line), None, "{line}");
        }
    }

    proptest! {
        #[test]
        fn any_bytes_are_scanned_without_panicking(text in "\\PC{0,200}", prefix in any::<bool>()) {
            let line = if prefix { format!("{{\"id\":{text}") } else { text };
            let _ = recover(&line);
        }
    }
}
