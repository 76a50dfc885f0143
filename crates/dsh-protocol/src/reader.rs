use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Capacity kept between lines; a longer line's buffer is released after use
/// so that one huge frame does not pin its memory for the process lifetime.
const RETAINED_CAPACITY: usize = 64 * 1024;

/// Splits an input byte stream into protocol lines.
///
/// Lines are split on `\n` only (a `\n` byte never occurs inside a UTF-8
/// multi-byte sequence, so reads may split characters freely). Each line is
/// trimmed of ASCII whitespace (so `\r\n` works), empty lines are skipped and
/// a final unterminated fragment is returned at end of input. There is no
/// maximum line length; memory use is bounded by the line being read.
pub struct LineReader<R> {
    inner: BufReader<R>,
    buf: Vec<u8>,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Wraps a byte source.
    pub fn new(inner: R) -> Self {
        Self {
            inner: BufReader::new(inner),
            buf: Vec::new(),
        }
    }

    /// Forgets the last line and gives back the memory of a long one; call
    /// it once the line has been parsed, so that a huge frame's bytes are
    /// not held while its request is handled.
    pub fn release(&mut self) {
        self.buf.clear();
        if self.buf.capacity() > RETAINED_CAPACITY {
            self.buf.shrink_to(RETAINED_CAPACITY);
        }
    }

    /// Returns the next non-empty trimmed line, or `None` at end of input.
    pub async fn next_line(&mut self) -> std::io::Result<Option<&[u8]>> {
        loop {
            self.release();
            if self.inner.read_until(b'\n', &mut self.buf).await? == 0 {
                return Ok(None);
            }
            if !self.buf.trim_ascii().is_empty() {
                return Ok(Some(self.buf.trim_ascii()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8]) -> Vec<Vec<u8>> {
        let mut reader = LineReader::new(input);
        let mut out = Vec::new();
        while let Some(line) = reader.next_line().await.unwrap_or(None) {
            out.push(line.to_vec());
        }
        out
    }

    #[tokio::test]
    async fn splits_trims_and_keeps_the_final_fragment() {
        let got = lines(b"a\r\n\n  \r\nb\nc").await;
        assert_eq!(got, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    }

    #[tokio::test]
    async fn long_lines_are_not_limited() {
        let long = vec![b'x'; 3 * RETAINED_CAPACITY];
        let mut input = long.clone();
        input.extend_from_slice(b"\nshort\n");
        let got = lines(&input).await;
        assert_eq!(got, vec![long, b"short".to_vec()]);
    }
}
