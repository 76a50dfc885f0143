//! Carrying lone UTF-16 surrogates through Rust strings, exactly.
//!
//! JSON text may escape a lone surrogate (`"\ud800"`): Python's `json.dumps`
//! and JavaScript produce them for strings that hold one, and the official
//! (Node) runtime keeps them and writes them back as `\udXXX` escapes
//! wherever the text reappears. A Rust `String` cannot hold a surrogate, and
//! serde_json refuses the escape. Replacing it with U+FFFD would lose the
//! text; WTF-8 would need a string type of its own through every crate. So
//! the runtime carries them as a private two-character **marker** inside
//! ordinary `String`s, and translates at the JSON boundaries it owns:
//!
//! * [`encode`] (JSON text read: request lines, stored session logs,
//!   provider stream events) rewrites each lone-surrogate escape `\uD800+k`
//!   to the marker U+10FFFF U+10F000+k, and each U+10FFFF already in the
//!   text (raw, or escaped as the pair `\udbff\udfff`) to U+10FFFF U+10FFFF,
//!   so the mapping is total and injective;
//! * [`decode`] / [`decode_into`] (JSON text written: protocol frames,
//!   session-log lines, provider request bodies) reverse it on the
//!   serialised bytes: a marker can only occur inside a JSON string, where
//!   `\udXXX` is a valid escape, so the translation is byte-level.
//!
//! U+10FFFF is a noncharacter and U+10F000..U+10F7FF are private-use, so
//! real text almost never contains them; when it does, it still round-trips
//! (doubled on the way in, undoubled on the way out). Both directions cost
//! one `memchr`-style scan when there is nothing to translate, and return
//! the input unchanged.
//!
//! Where exact round-trip is not possible, U+FFFD is written instead: a
//! marker cut in half by a truncation inside the runtime (a U+10FFFF with
//! no valid second character) decodes to U+FFFD. Text that leaves the
//! runtime outside JSON (file contents written by tools, HTTP headers)
//! carries the marker characters as they are.

use memchr::{memchr, memchr2, memmem};
use std::borrow::Cow;
use std::sync::LazyLock;

/// The first character of every marker (a noncharacter).
const MARK: char = '\u{10FFFF}';
/// [`MARK`] as UTF-8.
const MARK_UTF8: &[u8; 4] = b"\xF4\x8F\xBF\xBF";
/// The second character of the marker for surrogate `0xD800 + k` is
/// `SECOND_BASE + k`, `k < 0x800`.
const SECOND_BASE: u32 = 0x10_F000;
/// U+FFFD as UTF-8.
const REPLACEMENT_UTF8: &[u8; 3] = b"\xEF\xBF\xBD";

/// Rewrites JSON text so that serde_json accepts it and lone surrogates
/// survive as markers (see the module doc). Borrowed when there is nothing
/// to rewrite.
pub fn encode(json: &str) -> Cow<'_, str> {
    let bytes = json.as_bytes();
    if memchr(0xF4, bytes).is_none() && !may_escape_a_surrogate(bytes) {
        return Cow::Borrowed(json);
    }
    let mut out = String::new();
    // `copied..i` is pending; every flush point is an ASCII byte or the end
    // of a whole 4-byte character, hence a char boundary.
    let mut copied = 0;
    let mut i = 0;
    // An escape at the very end may step `i` past the end.
    while let Some(offset) = bytes.get(i..).and_then(|rest| memchr2(b'\\', 0xF4, rest)) {
        i += offset;
        if bytes[i] == 0xF4 {
            if bytes[i..].starts_with(MARK_UTF8) {
                i += MARK_UTF8.len();
                out.push_str(&json[copied..i]);
                out.push(MARK);
                copied = i;
            } else {
                i += 1;
            }
            continue;
        }
        // A backslash: every escape is consumed whole, so `\\ud800` is an
        // escaped backslash followed by text.
        let Some(unit) = (bytes.get(i + 1) == Some(&b'u'))
            .then(|| hex4(bytes, i + 2))
            .flatten()
        else {
            i += 2;
            continue;
        };
        if !(0xD800..0xE000).contains(&unit) {
            i += 6;
            continue;
        }
        let low = (unit < 0xDC00 && bytes.get(i + 6..i + 8) == Some(b"\\u"))
            .then(|| hex4(bytes, i + 8))
            .flatten()
            .filter(|low| (0xDC00..0xE000).contains(low));
        match low {
            Some(0xDFFF) if unit == 0xDBFF => {
                out.push_str(&json[copied..i]);
                out.push(MARK);
                out.push(MARK);
                i += 12;
                copied = i;
            }
            Some(_) => i += 12,
            None => {
                out.push_str(&json[copied..i]);
                out.push(MARK);
                out.push(second(unit - 0xD800));
                i += 6;
                copied = i;
            }
        }
    }
    if copied == 0 {
        return Cow::Borrowed(json);
    }
    out.push_str(&json[copied..]);
    Cow::Owned(out)
}

/// `text` split into the characters the official runtime sees, each with
/// its byte length in UTF-8 as the official runtime counts it: a marker is
/// one lone surrogate (3 bytes, the length of its three-byte encoding), a
/// doubled U+10FFFF is that one character (4 bytes), any other character
/// is itself. Each piece is the slice of `text` that carries it, so the
/// pieces concatenate back to `text`; a marker is never split.
pub fn units(text: &str) -> impl Iterator<Item = (&str, usize)> + '_ {
    let mut rest = text;
    std::iter::from_fn(move || {
        let mut chars = rest.chars();
        let first = chars.next()?;
        let (len, cost) = match (first, chars.next()) {
            (MARK, Some(MARK)) => (2 * MARK.len_utf8(), MARK.len_utf8()),
            (MARK, Some(next)) if (SECOND_BASE..SECOND_BASE + 0x800).contains(&u32::from(next)) => {
                (MARK.len_utf8() + next.len_utf8(), 3)
            }
            _ => (first.len_utf8(), first.len_utf8()),
        };
        let (unit, tail) = rest.split_at(len);
        rest = tail;
        Some((unit, cost))
    })
}

/// Whether `bytes` holds `\ud` or `\uD` followed by `8`–`f`: the only way
/// JSON text can escape a surrogate (a false positive only costs the slow
/// path). Escaped non-ASCII text (`\u00e9`, as Python sends it) rarely hits.
fn may_escape_a_surrogate(bytes: &[u8]) -> bool {
    let surrogate_digit = |i: usize| {
        matches!(
            bytes.get(i + 3),
            Some(b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F')
        )
    };
    // Built once: building a finder costs more than scanning a short line.
    static LOWER: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"\\ud"));
    static UPPER: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"\\uD"));
    LOWER.find_iter(bytes).any(surrogate_digit) || UPPER.find_iter(bytes).any(surrogate_digit)
}

/// The four hex digits at `at`, if there are four.
fn hex4(bytes: &[u8], at: usize) -> Option<u32> {
    let digits = bytes.get(at..at + 4)?;
    digits.iter().try_fold(0u32, |acc, b| {
        let digit = char::from(*b).to_digit(16)?;
        Some(acc * 16 + digit)
    })
}

/// The marker's second character for surrogate offset `k < 0x800`.
fn second(k: u32) -> char {
    // SECOND_BASE + k is at most U+10F7FF: a valid scalar value.
    char::from_u32(SECOND_BASE + k).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// Reverses [`encode`] on serialised JSON: markers become `\udXXX` escapes
/// and doubled U+10FFFF a single one. Returns `json` itself when it holds
/// no marker.
pub fn decode(json: Vec<u8>) -> Vec<u8> {
    if memchr(0xF4, &json).is_none() {
        return json;
    }
    let mut out = Vec::with_capacity(json.len());
    decode_slow(&mut out, &json);
    out
}

/// [`decode`], appending the result to `out`.
pub fn decode_into(out: &mut Vec<u8>, json: &[u8]) {
    if memchr(0xF4, json).is_none() {
        out.extend_from_slice(json);
    } else {
        decode_slow(out, json);
    }
}

fn decode_slow(out: &mut Vec<u8>, json: &[u8]) {
    let mut i = 0;
    while let Some(offset) = memchr(0xF4, &json[i..]) {
        let at = i + offset;
        out.extend_from_slice(&json[i..at]);
        if !json[at..].starts_with(MARK_UTF8) {
            out.push(0xF4);
            i = at + 1;
            continue;
        }
        let next = &json[at + 4..];
        if next.starts_with(MARK_UTF8) {
            out.extend_from_slice(MARK_UTF8);
            i = at + 8;
        } else if let Some(k) = second_offset(next) {
            push_escape(out, 0xD800 + k);
            i = at + 8;
        } else {
            out.extend_from_slice(REPLACEMENT_UTF8);
            i = at + 4;
        }
    }
    out.extend_from_slice(&json[i..]);
}

/// `k` when `bytes` starts with the UTF-8 of U+10F000+k, `k < 0x800`
/// (`F4 8F 80..9F 80..BF`).
fn second_offset(bytes: &[u8]) -> Option<u32> {
    match bytes {
        [0xF4, 0x8F, b2 @ 0x80..=0x9F, b3 @ 0x80..=0xBF, ..] => {
            Some((u32::from(b2 & 0x3F) << 6) | u32::from(b3 & 0x3F))
        }
        _ => None,
    }
}

/// `\udXXX`, lowercase as JavaScript writes it.
fn push_escape(out: &mut Vec<u8>, unit: u32) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[((unit >> shift) & 0xF) as usize]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    /// JSON string literal of UTF-16 `units` the way JavaScript's
    /// `JSON.stringify` writes it: lone surrogates escaped, everything else
    /// raw (`ascii`: every non-ASCII unit escaped, as Python's `json.dumps`).
    fn js_literal(units: &[u16], ascii: bool) -> String {
        let mut out = String::from("\"");
        for item in char::decode_utf16(units.iter().copied()) {
            match item {
                Ok('"') => out.push_str("\\\""),
                Ok('\\') => out.push_str("\\\\"),
                // JSON.stringify's short escapes (serde_json writes the same).
                Ok('\u{8}') => out.push_str("\\b"),
                Ok('\u{c}') => out.push_str("\\f"),
                Ok('\n') => out.push_str("\\n"),
                Ok('\r') => out.push_str("\\r"),
                Ok('\t') => out.push_str("\\t"),
                Ok(c) if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                Ok(c) if ascii && !c.is_ascii() => {
                    let mut buf = [0u16; 2];
                    for unit in c.encode_utf16(&mut buf) {
                        out.push_str(&format!("\\u{unit:04x}"));
                    }
                }
                Ok(c) => out.push(c),
                Err(e) => out.push_str(&format!("\\u{:04x}", e.unpaired_surrogate())),
            }
        }
        out.push('"');
        out
    }

    /// Input → parse → serialise → output, as the runtime does.
    fn through(json: &str) -> String {
        let value: Value =
            serde_json::from_str(&encode(json)).unwrap_or_else(|e| panic!("{e}: {json:?}"));
        let bytes = decode(serde_json::to_vec(&value).unwrap_or_default());
        String::from_utf8(bytes).unwrap()
    }

    #[test]
    fn lone_surrogates_come_back_as_lowercase_escapes() {
        assert_eq!(through(r#""a\ud800b""#), r#""a\ud800b""#);
        assert_eq!(through(r#""\uDFFF\uD83D""#), r#""\udfff\ud83d""#);
        assert_eq!(
            through(r#"{"\udc00k":["\ud800"]}"#),
            r#"{"\udc00k":["\ud800"]}"#
        );
        // A high surrogate followed by a high one, then a real pair.
        assert_eq!(through(r#""\ud800\ud83d\ude00""#), "\"\\ud800\u{1F600}\"");
    }

    #[test]
    fn broken_escapes_at_the_end_do_not_panic() {
        for text in [
            "\\",
            "\"\\",
            "\\u",
            "\\ud8",
            "\\ud800\\",
            "\\ud800\\u",
            "\u{10FFFF}\\",
        ] {
            let encoded = encode(text);
            assert!(encoded.len() >= text.len(), "{text:?}");
        }
    }

    #[test]
    fn pairs_and_escaped_backslashes_are_not_touched() {
        assert!(matches!(
            encode(r#""\ud83d\ude00 \\ud800""#),
            Cow::Borrowed(_)
        ));
        assert_eq!(through(r#""\\ud800""#), r#""\\ud800""#);
        assert_eq!(through(r#""\u00e9""#), "\"é\"");
    }

    #[test]
    fn u10ffff_and_marker_look_alikes_round_trip() {
        let tricky = "\"\u{10FFFF}\u{10F005}|\u{10FFFF}\u{10FFFF}|\u{10F7FF}\"";
        assert_eq!(through(tricky), tricky);
        // Escaped as a pair, it comes back raw, like any other character.
        assert_eq!(through(r#""\udbff\udfff""#), "\"\u{10FFFF}\"");
    }

    #[test]
    fn a_cut_marker_decodes_to_the_replacement_character() {
        let encoded = encode(r#""\ud800""#).into_owned();
        let cut: String = encoded.chars().take(2).collect(); // `"` + U+10FFFF
        assert_eq!(decode(cut.into_bytes()), "\"\u{FFFD}".as_bytes());
    }

    #[test]
    fn text_without_markers_is_returned_as_is() {
        let json = br#"{"a":"\u00e9 plain"}"#.to_vec();
        let pointer = json.as_ptr();
        let decoded = decode(json);
        assert_eq!(decoded.as_ptr(), pointer);
        let mut out = b"x".to_vec();
        decode_into(&mut out, b"\"y\"");
        assert_eq!(out, b"x\"y\"");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(1024))]

        #[test]
        fn any_utf16_string_round_trips_exactly(
            units in proptest::collection::vec(prop_oneof![
                any::<u16>(),
                0xD800u16..0xE000,
                Just(0xDBFFu16),
                Just(0xDFFFu16),
                Just(0xDC00u16),
            ], 0..24),
            ascii in any::<bool>(),
        ) {
            let literal = js_literal(&units, ascii);
            // The raw output is JavaScript's; with escapes it parses back.
            let expected = js_literal(&units, false);
            prop_assert_eq!(through(&literal), expected);
        }

        #[test]
        fn valid_json_is_unchanged(text in any::<String>(), key in "\\PC{0,8}") {
            let value = serde_json::json!({ key: [text, 1, null] });
            for json in [serde_json::to_string(&value).unwrap_or_default(), value.to_string()] {
                let reparsed: Value = serde_json::from_str(&encode(&json))
                    .unwrap();
                let out = decode(serde_json::to_vec(&reparsed).unwrap_or_default());
                prop_assert_eq!(out, json.as_bytes());
            }
        }
    }
}
