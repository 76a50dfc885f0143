//! The request loop: reads lines and runs each request as the method table
//! says.

use crate::method::{Method, RunMode, dispatch};
use crate::server::Server;
use dsh_protocol::{Incoming, LineReader, Request, classify};
use dsh_tools::ApproverAnswer;
use tokio::io::AsyncRead;
use tokio::task::JoinSet;

/// Why [`serve`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// A `shutdown` request was answered.
    Shutdown,
    /// The input ended.
    EndOfInput,
}

/// Longest the sessions' `SessionEnd` hooks are waited for at shutdown or
/// end of input (each hook also has its own time limit).
const CLOSE_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Serves requests read from `input` until `shutdown` or end of input.
/// Every response and notification is queued on the server's writer; the
/// caller flushes it before exiting.
///
/// Concurrent requests (`session/wait`, `session/resume`) are all answered
/// before this returns (disposal releases the waiters), then `shutdown`
/// is, so no request goes unanswered at shutdown or end of input.
pub async fn serve<R: AsyncRead + Unpin>(server: &Server, input: R) -> std::io::Result<Exit> {
    let mut concurrent = JoinSet::new();
    let shutdown = serve_lines(server, input, &mut concurrent).await;
    // No answer can come any more: every approval waiting for one is
    // decided without it (the call does not run).
    server.inner().client.close(match &shutdown {
        Ok(Some(_)) => ApproverAnswer::Cancelled,
        _ => ApproverAnswer::Unavailable("the client closed its input".to_owned()),
    });
    let end_of_input = !matches!(shutdown, Ok(Some(_)));
    server.close_sessions(end_of_input, CLOSE_LIMIT).await;
    server.shutdown();
    while concurrent.join_next().await.is_some() {}
    match shutdown? {
        Some(request) => {
            dispatch(server, Method::Shutdown, request).await;
            Ok(Exit::Shutdown)
        }
        None => Ok(Exit::EndOfInput),
    }
}

/// Reads and runs requests until `shutdown` (returned, to be answered once
/// the concurrent requests are) or end of input (`None`).
async fn serve_lines<R: AsyncRead + Unpin>(
    server: &Server,
    input: R,
    concurrent: &mut JoinSet<()>,
) -> std::io::Result<Option<Request>> {
    let mut lines = LineReader::new(input);
    while let Some(line) = lines.next_line().await? {
        let incoming = classify(line);
        // The parsed request owns everything it needs: a long line's buffer
        // is not kept alive while the request is handled.
        lines.release();
        let request = match incoming {
            Incoming::Request(request) => request,
            Incoming::Invalid(invalid) => {
                server.inner().writer.send(invalid.answer());
                continue;
            }
            Incoming::Response(response) => {
                if !server.inner().client.resolve(response) {
                    tracing::debug!("a response to no waiting request was dropped");
                }
                continue;
            }
            other => {
                tracing::debug!("input line ignored: {other:?}");
                continue;
            }
        };
        let method = match Method::parse(&request.method) {
            Ok(method) => method,
            Err(unknown) => {
                server.respond_error(&request.id, unknown);
                continue;
            }
        };
        match method.run_mode() {
            RunMode::Inline | RunMode::Acknowledged => dispatch(server, method, request).await,
            RunMode::Concurrent => {
                let server = server.clone();
                concurrent.spawn(async move { dispatch(&server, method, request).await });
            }
            RunMode::Shutdown => return Ok(Some(request)),
        }
        // Finished concurrent requests need not be kept.
        while concurrent.try_join_next().is_some() {}
    }
    Ok(None)
}
