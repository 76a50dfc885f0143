//! JSON string escaping eight bytes at a time, for long text that mostly
//! needs none (a streamed reply's deltas). Escapes exactly as serde_json
//! does: `"` and `\` with a backslash, `\b \f \n \r \t` by name, the other
//! control characters as `\u00XX`, everything else as it is.

/// Eight copies of one byte.
const fn splat(byte: u8) -> u64 {
    u64::from_ne_bytes([byte; 8])
}

/// Whether one of the eight bytes of `word` needs an escape (exact: the
/// "has a byte less than" test can only err after a true hit).
fn needs_escape(word: u64) -> bool {
    const HIGH: u64 = splat(0x80);
    let control = word.wrapping_sub(splat(0x20)) & !word & HIGH;
    let quote = word ^ splat(b'"');
    let quote = quote.wrapping_sub(splat(1)) & !quote & HIGH;
    let backslash = word ^ splat(b'\\');
    let backslash = backslash.wrapping_sub(splat(1)) & !backslash & HIGH;
    control | quote | backslash != 0
}

/// Appends the escape of one byte (a byte that needs none is copied).
fn escape_byte(out: &mut Vec<u8>, byte: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match byte {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0C => out.extend_from_slice(b"\\f"),
        0x00..=0x1F => out.extend_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX[usize::from(byte >> 4)],
            HEX[usize::from(byte & 0xF)],
        ]),
        _ => out.push(byte),
    }
}

/// Appends `text` escaped as the inside of a JSON string (no quotes).
pub(crate) fn escape_into(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len());
    // Bytes before `start` are written; bytes from `start` to `i` need no
    // escape.
    let mut start = 0;
    let mut i = 0;
    while i + 8 <= bytes.len() {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[i..i + 8]);
        if needs_escape(u64::from_ne_bytes(word)) {
            out.extend_from_slice(&bytes[start..i]);
            for &byte in &bytes[i..i + 8] {
                escape_byte(out, byte);
            }
            start = i + 8;
        }
        i += 8;
    }
    out.extend_from_slice(&bytes[start..i]);
    for &byte in &bytes[i..] {
        escape_byte(out, byte);
    }
}

#[cfg(test)]
mod tests {
    use super::escape_into;
    use proptest::prelude::*;

    fn escaped(text: &str) -> String {
        let mut out = Vec::new();
        escape_into(&mut out, text);
        String::from_utf8(out).unwrap_or_default()
    }

    fn serde(text: &str) -> String {
        let quoted = serde_json::to_string(text).unwrap_or_default();
        quoted[1..quoted.len() - 1].to_owned()
    }

    #[test]
    fn every_byte_class_is_escaped_as_serde_json_does() {
        let all: String = (0u32..0x80).filter_map(char::from_u32).collect();
        for text in [
            "",
            "plain ascii text, long enough for words",
            &all,
            "é\"\\\u{7f}\u{1f}€ \u{0}x",
            "\"\"\"\"\"\"\"\"\"",
        ] {
            assert_eq!(escaped(text), serde(text), "{text:?}");
        }
    }

    proptest! {
        #[test]
        fn any_text_escapes_as_serde_json_does(text in "\\PC*|[\\x00-\\x7f]*") {
            prop_assert_eq!(escaped(&text), serde(&text));
        }
    }
}
