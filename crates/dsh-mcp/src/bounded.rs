//! A stdio server's output, held to what the protocol allows before the
//! SDK's line reader buffers it: no line longer than the message cap and
//! no line that does not begin a JSON value. rmcp's reader would grow its
//! buffer without bound for a server that writes without a newline; this
//! reader fails instead, which closes the connection (every waiting call
//! ends with the reason).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};

/// Why a connection's output was refused, shared with the server that
/// reports it.
#[derive(Clone, Default)]
pub(crate) struct Refusal(Arc<Mutex<Option<String>>>);

impl Refusal {
    /// The reason, once the reader refused something.
    pub(crate) fn reason(&self) -> Option<String> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, reason: String) {
        let mut slot = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        slot.get_or_insert(reason);
    }
}

/// Where the reader is in the current line.
#[derive(Clone, Copy, PartialEq, Eq)]
enum LineState {
    /// Only blanks so far.
    Leading,
    /// The line began a JSON value.
    Value,
}

/// An [`AsyncRead`] over a server's stdout that fails on an overlong or
/// non-JSON line.
pub(crate) struct BoundedLines<R> {
    inner: R,
    max_line: usize,
    line: usize,
    state: LineState,
    refusal: Refusal,
    failed: bool,
}

impl<R> BoundedLines<R> {
    /// Reads `inner`, refusing lines over `max_line` bytes.
    pub(crate) fn new(inner: R, max_line: usize, refusal: Refusal) -> Self {
        Self {
            inner,
            max_line,
            line: 0,
            state: LineState::Leading,
            refusal,
            failed: false,
        }
    }

    /// Checks newly read bytes; the reason of the first violation.
    fn scan(&mut self, bytes: &[u8]) -> Option<String> {
        for &byte in bytes {
            if byte == b'\n' {
                self.line = 0;
                self.state = LineState::Leading;
                continue;
            }
            self.line += 1;
            if self.line > self.max_line {
                return Some(format!("sent a message over {} bytes", self.max_line));
            }
            if self.state == LineState::Leading && !matches!(byte, b' ' | b'\t' | b'\r') {
                if byte == b'{' || byte == b'[' {
                    self.state = LineState::Value;
                } else {
                    return Some("wrote a line that is not JSON-RPC to its stdout".to_owned());
                }
            }
        }
        None
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for BoundedLines<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.failed {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, "refused")));
        }
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let reason = this.scan(&buf.filled()[before..]);
                match reason {
                    None => Poll::Ready(Ok(())),
                    Some(reason) => {
                        buf.set_filled(before);
                        this.failed = true;
                        this.refusal.set(reason.clone());
                        Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, reason)))
                    }
                }
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    async fn read_all(input: &'static [u8], max: usize) -> (io::Result<Vec<u8>>, Option<String>) {
        let refusal = Refusal::default();
        let mut reader = BoundedLines::new(input, max, refusal.clone());
        let mut out = Vec::new();
        let result = reader.read_to_end(&mut out).await.map(|_| out);
        (result, refusal.reason())
    }

    #[tokio::test]
    async fn json_lines_within_the_cap_pass_whole() {
        let (out, why) = read_all(b"{\"a\":1}\n\n  [1]\r\n{}", 16).await;
        assert_eq!(out.ok().as_deref(), Some(&b"{\"a\":1}\n\n  [1]\r\n{}"[..]));
        assert_eq!(why, None);
    }

    #[tokio::test]
    async fn an_overlong_line_and_a_line_of_prose_are_refused() {
        let (out, why) = read_all(b"{\"aaaaaaaaaaaaaaaaaaaa\":1}\n", 16).await;
        assert!(out.is_err());
        assert_eq!(why.as_deref(), Some("sent a message over 16 bytes"));
        let (out, why) = read_all(b"{}\nStarting server...\n", 64).await;
        assert!(out.is_err());
        assert!(why.is_some_and(|w| w.contains("not JSON-RPC")));
    }
}
