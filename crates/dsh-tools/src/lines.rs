//! Lines of a byte buffer exactly as `str::lines` splits the same bytes
//! decoded lossily, without decoding or collecting them: `read` counts and
//! skips millions of lines this way and decodes only the ones it shows.
//! And a text cut to a byte length at a character boundary (`grep`'s long
//! lines, the arguments an approval request shows).

/// How many lines `str::lines` finds in `bytes` (decoded lossily).
pub(crate) fn count(bytes: &[u8]) -> u64 {
    let newlines = memchr::memchr_iter(b'\n', bytes).count() as u64;
    let unterminated = !bytes.is_empty() && bytes.last() != Some(&b'\n');
    newlines + u64::from(unterminated)
}

/// The longest prefix of `text` of at most `max` bytes that ends at a
/// character boundary.
pub(crate) fn prefix_within(text: &str, max: usize) -> &str {
    let end = (0..=max.min(text.len()))
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    &text[..end]
}

/// The lines of a buffer: split at `\n`, a `\r` before it removed, no empty
/// line after a final `\n`; a bare `\r` stays, as with `str::lines`.
pub(crate) struct Lines<'a> {
    rest: &'a [u8],
}

impl<'a> Lines<'a> {
    /// The lines of `bytes`.
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Self { rest: bytes }
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.rest.is_empty() {
            return None;
        }
        match memchr::memchr(b'\n', self.rest) {
            Some(end) => {
                let line = &self.rest[..end];
                self.rest = &self.rest[end + 1..];
                Some(line.strip_suffix(b"\r").unwrap_or(line))
            }
            None => Some(std::mem::take(&mut self.rest)),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_prefix_ends_at_a_character_boundary_within_the_bytes() {
        assert_eq!(super::prefix_within("abc", 5), "abc");
        assert_eq!(super::prefix_within("abc", 2), "ab");
        // "é" is two bytes: a cut through it keeps what comes before.
        assert_eq!(super::prefix_within("aé", 2), "a");
        assert_eq!(super::prefix_within("😀", 3), "");
    }

    use super::*;

    fn same_as_str_lines(bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        let expected: Vec<&str> = text.lines().collect();
        let decoded: Vec<String> = Lines::new(bytes)
            .map(|line| String::from_utf8_lossy(line).into_owned())
            .collect();
        assert_eq!(decoded, expected, "{bytes:?}");
        assert_eq!(count(bytes), expected.len() as u64, "{bytes:?}");
    }

    #[test]
    fn splits_like_str_lines() {
        let cases: [&[u8]; 14] = [
            b"",
            b"\n",
            b"\n\n",
            b"a",
            b"a\n",
            b"a\nb",
            b"a\r\nb\r\n",
            b"a\r",
            b"\r",
            b"x\n\r",
            b"a\rb\n",
            b"\xe2\r\n\xff\n",
            b"\xf0\x9f\x98\n\x80",
            b"one\n\ntwo\r\n\r\nthree",
        ];
        for case in cases {
            same_as_str_lines(case);
        }
    }

    #[test]
    fn splits_every_short_mix_of_newlines_returns_and_bytes_like_str_lines() {
        // Every string of length up to 6 over an alphabet holding the line
        // ending bytes, an ASCII letter and the start of a multi-byte char.
        let alphabet = [b'\n', b'\r', b'a', 0xe2, 0x80];
        for len in 0..=6u32 {
            for mut n in 0..(alphabet.len() as u64).pow(len) {
                let mut bytes = Vec::new();
                for _ in 0..len {
                    bytes.push(alphabet[(n % alphabet.len() as u64) as usize]);
                    n /= alphabet.len() as u64;
                }
                same_as_str_lines(&bytes);
            }
        }
    }
}
