//! The ACP connection's byte transport: newline-delimited JSON on a pair
//! of streams, with a bound on the length of a line read.
//!
//! The protocol crate's own byte transport reads lines of any length; a
//! client that sends a line without end would grow the buffer without
//! bound. Here a line longer than the limit is dropped as it is read (its
//! bytes are never kept) and replaced by a line that is not JSON, which
//! the connection answers with a parse error; the connection goes on.

use agent_client_protocol::Lines;
use futures::{Sink, Stream};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// The longest line read (64 MiB): room for a prompt with large images.
pub const MAX_LINE_BYTES: usize = 64 << 20;

/// What replaces a line over the limit: not JSON, so the client gets a
/// parse error for it.
const OVERSIZED: &str = "dsh: message over the size limit dropped";

/// The transport over `input` and `output`, reading lines of at most
/// `max_line` bytes.
pub fn lines(
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
    max_line: usize,
) -> Lines<
    impl Sink<String, Error = std::io::Error> + Send + 'static,
    impl Stream<Item = std::io::Result<String>> + Send + 'static,
> {
    let outgoing = futures::sink::unfold(output, |mut output, line: String| async move {
        output.write_all(line.as_bytes()).await?;
        output.write_all(b"\n").await?;
        output.flush().await?;
        Ok::<_, std::io::Error>(output)
    });
    let reader = BufReader::new(input);
    let incoming = futures::stream::unfold(reader, move |mut reader| async move {
        match next_line(&mut reader, max_line).await {
            Ok(Some(line)) => Some((Ok(line), reader)),
            Ok(None) => None,
            Err(err) => Some((Err(err), reader)),
        }
    });
    Lines::new(outgoing, Box::pin(incoming))
}

/// The next line without its terminator; `None` at the end of input.
async fn next_line<R: AsyncRead + Unpin>(
    reader: &mut BufReader<R>,
    max_line: usize,
) -> std::io::Result<Option<String>> {
    let mut line = Vec::new();
    let mut oversized = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            if line.is_empty() && !oversized {
                return Ok(None);
            }
            break;
        }
        let (chunk, used, ended) = match memchr::memchr(b'\n', available) {
            Some(end) => (&available[..end], end + 1, true),
            None => (available, available.len(), false),
        };
        if !oversized && line.len() + chunk.len() <= max_line {
            line.extend_from_slice(chunk);
        } else if !oversized {
            oversized = true;
            line = Vec::new();
        }
        reader.consume(used);
        if ended {
            break;
        }
    }
    if oversized {
        tracing::warn!("an ACP message over {max_line} bytes was dropped");
        return Ok(Some(OVERSIZED.to_owned()));
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(Some(String::from_utf8_lossy(&line).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read_all(input: &'static [u8], max: usize) -> Vec<String> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut out = Vec::new();
        while let Some(line) = next_line(&mut reader, max).await.unwrap() {
            out.push(line);
        }
        out
    }

    #[tokio::test]
    async fn lines_are_split_and_long_ones_replaced() {
        let lines = read_all(b"{\"a\":1}\r\n0123456789abc\nok\nlast", 8).await;
        assert_eq!(lines, ["{\"a\":1}", OVERSIZED, "ok", "last"]);
    }

    #[tokio::test]
    async fn an_oversized_last_line_is_reported_too() {
        let lines = read_all(b"x\n0123456789", 4).await;
        assert_eq!(lines, ["x", OVERSIZED]);
    }
}
