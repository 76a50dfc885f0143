//! Reading JSON text as the official runtime's `JSON.parse` reads it.
//!
//! serde_json is stricter than JavaScript in three ways that a client can
//! hit; each is handled here, and only once the strict parse has failed, so
//! the common line costs one parse (plus the [`surrogates`] scan):
//!
//! * lone surrogate escapes: carried as markers ([`surrogates::encode`]);
//! * numbers beyond the `f64` range (`1e400`, `-1e400`, 400-digit
//!   integers): JavaScript reads ±Infinity and writes it back as `null`;
//!   here they are read as `null` directly;
//! * nesting deeper than serde_json's 128 levels: accepted up to
//!   [`MAX_DEPTH`] levels, refused beyond (every later step — handlers,
//!   serialisation, drop — recurses, and the runtime's threads have bounded
//!   stacks; the official runtime accepts any depth its parser survives).

use crate::surrogates;
use serde::de::{DeserializeOwned, Error as _};
use std::borrow::Cow;

/// The deepest nesting of arrays and objects accepted.
pub const MAX_DEPTH: usize = 512;

/// serde_json's own limit: its strict parse takes nesting below it (127
/// levels) and refuses this many.
const SERDE_DEPTH: usize = 128;

/// Parses JSON text leniently (see the module doc). The error is the strict
/// parse's when no leniency applies.
pub fn from_str<T: DeserializeOwned>(json: &str) -> Result<T, serde_json::Error> {
    from_encoded(&surrogates::encode(json))
}

/// [`from_str`] of text already through [`surrogates::encode`] (encoding
/// twice would double the markers).
pub(crate) fn from_encoded<T: DeserializeOwned>(json: &str) -> Result<T, serde_json::Error> {
    serde_json::from_str(json).or_else(|strict| lenient(json, strict))
}

/// [`from_str`] over bytes that must be UTF-8.
pub fn from_slice<T: DeserializeOwned>(json: &[u8]) -> Result<T, serde_json::Error> {
    match std::str::from_utf8(json) {
        Ok(text) => from_str(text),
        // serde_json reports the position of the bad byte.
        Err(_) => serde_json::from_slice(json),
    }
}

fn lenient<T: DeserializeOwned>(
    json: &str,
    strict: serde_json::Error,
) -> Result<T, serde_json::Error> {
    let json = null_overflowing_numbers(json);
    let depth = max_depth(json.as_bytes());
    if depth > MAX_DEPTH {
        return Err(serde_json::Error::custom(format!(
            "nesting deeper than {MAX_DEPTH} levels"
        )));
    }
    if matches!(json, Cow::Borrowed(_)) && depth < SERDE_DEPTH {
        return Err(strict);
    }
    let mut de = serde_json::Deserializer::from_str(&json);
    // The depth was measured above: recursion is bounded by MAX_DEPTH.
    de.disable_recursion_limit();
    let value = T::deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Index just past the string literal opening at `start` (or the end).
pub(crate) fn skip_string(bytes: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while let Some(offset) = memchr::memchr2(b'"', b'\\', &bytes[i.min(bytes.len())..]) {
        i += offset;
        if bytes[i] == b'"' {
            return i + 1;
        }
        i += 2;
    }
    bytes.len()
}

/// Index just past the number-like token starting at `start`.
pub(crate) fn skip_number(bytes: &[u8], start: usize) -> usize {
    bytes[start..]
        .iter()
        .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
        .map_or(bytes.len(), |n| start + n)
}

/// Whether a number token is valid JSON number syntax whose value is beyond
/// the `f64` range.
pub(crate) fn overflows(token: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(token).is_ok()
        && token.parse::<f64>().is_ok_and(f64::is_infinite)
}

/// `json` with every number outside string literals whose value overflows
/// `f64` replaced by `null`.
fn null_overflowing_numbers(json: &str) -> Cow<'_, str> {
    let bytes = json.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => i = skip_string(bytes, i),
            b'-' | b'0'..=b'9' => {
                let end = skip_number(bytes, i);
                if overflows(&json[i..end]) {
                    out.push_str(&json[copied..i]);
                    out.push_str("null");
                    copied = end;
                }
                i = end;
            }
            _ => i += 1,
        }
    }
    if copied == 0 {
        return Cow::Borrowed(json);
    }
    out.push_str(&json[copied..]);
    Cow::Owned(out)
}

/// The deepest nesting of `[`/`{` outside string literals.
fn max_depth(bytes: &[u8]) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i = skip_string(bytes, i);
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn parse(text: &str) -> Result<Value, String> {
        from_str(text).map_err(|e| e.to_string())
    }

    #[test]
    fn overflowing_numbers_read_as_null_outside_strings_only() {
        assert_eq!(
            parse(r#"{"a":1e400,"b":-1e400,"c":"1e400","d":[1e-400,2]}"#),
            Ok(json!({"a":null,"b":null,"c":"1e400","d":[0.0,2]}))
        );
        let digits = "9".repeat(400);
        assert_eq!(parse(&format!("[{digits}]")), Ok(json!([null])));
        // Not a number at all: still refused.
        assert!(parse("[1e400x]").is_err());
    }

    #[test]
    fn nesting_is_accepted_up_to_the_limit() {
        let deep = |n: usize| format!("{{\"a\":{}{}}}", "[".repeat(n - 1), "]".repeat(n - 1));
        let value = parse(&deep(MAX_DEPTH)).unwrap();
        let mut inner = &value["a"];
        let mut levels = 1;
        while let Some(first) = inner.as_array().and_then(|a| a.first()) {
            inner = first;
            levels += 1;
        }
        assert_eq!(levels, MAX_DEPTH - 1);
        assert_eq!(
            parse(&deep(MAX_DEPTH + 1)),
            Err(format!("nesting deeper than {MAX_DEPTH} levels"))
        );
        // Every depth around serde_json's own limit parses.
        for n in SERDE_DEPTH - 2..=SERDE_DEPTH + 2 {
            assert!(parse(&deep(n)).is_ok(), "{n} levels");
        }
        // Brackets inside strings do not count.
        let quoted = format!("[\"{}\"]", "[".repeat(5000));
        assert!(parse(&quoted).is_ok());
    }

    #[test]
    fn other_errors_are_the_strict_ones() {
        assert_eq!(
            parse(r#"{"a":1"#),
            Err("EOF while parsing an object at line 1 column 6".to_owned())
        );
    }

    #[test]
    fn deep_values_survive_the_runtime_on_a_small_stack() {
        // Serialising, cloning and dropping recurse: the accepted depth must
        // fit the 2 MiB stacks of the runtime's worker threads.
        let text = format!("{}{}", "[".repeat(MAX_DEPTH), "]".repeat(MAX_DEPTH));
        let handle = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let value: Value = from_str(&text).unwrap();
                let copy = value.clone();
                let again = serde_json::to_string(&copy).unwrap_or_default();
                drop(copy);
                again == text
            })
            .unwrap();
        assert_eq!(handle.join().ok(), Some(true));
    }
}
