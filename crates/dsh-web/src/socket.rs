//! The page's live channel: a WebSocket (`GET /api/live`) carrying the
//! same messages as the Server-Sent Events of `GET /api/events`, as
//! `{"event": …, "data": …}` text frames. Browsers give a site only six
//! HTTP/1.1 connections, and every open Server-Sent Events stream holds
//! one, so a seventh tab could not even load; WebSockets do not count
//! against that limit. The page sends nothing on it but pings; a message
//! from the page larger than [`MESSAGE_MAX_BYTES`] closes it.

use crate::bridge::Live;
use futures_util::{SinkExt, StreamExt};
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast::error::RecvError;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::{Role, WebSocketConfig};

/// Largest message the page may send on the live channel.
pub const MESSAGE_MAX_BYTES: usize = 64 * 1024;

/// How often an idle live channel is pinged.
const PING_EVERY: Duration = Duration::from_secs(15);

/// Serves one upgraded connection until either side closes it; `waiting`
/// (the approvals waiting now) go first.
pub async fn serve(
    upgraded: Upgraded,
    mut receiver: tokio::sync::broadcast::Receiver<Arc<Live>>,
    waiting: Vec<Arc<Live>>,
) {
    let config = WebSocketConfig::default()
        .max_message_size(Some(MESSAGE_MAX_BYTES))
        .max_frame_size(Some(MESSAGE_MAX_BYTES));
    let socket =
        WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, Some(config)).await;
    let (mut sink, mut stream) = socket.split();
    for message in waiting {
        if sink.send(Message::text(message.frame())).await.is_err() {
            return;
        }
    }
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.tick().await;
    loop {
        tokio::select! {
            message = receiver.recv() => match message {
                Ok(message) => {
                    if sink.send(Message::text(message.frame())).await.is_err() {
                        return;
                    }
                }
                Err(RecvError::Lagged(_)) => {
                    // Too far behind: the page reconnects and catches up
                    // from `session/events`.
                    let lagged = Live::new("lagged", &json!({}));
                    let _ = sink.send(Message::text(lagged.frame())).await;
                    let _ = sink.close().await;
                    return;
                }
                Err(RecvError::Closed) => return,
            },
            incoming = stream.next() => match incoming {
                // Pings are answered by the library; the page says nothing else.
                Some(Ok(Message::Close(_))) | None => return,
                Some(Ok(_)) => {}
                Some(Err(err)) => {
                    tracing::debug!("a live channel closed: {err}");
                    return;
                }
            },
            _ = ping.tick() => {
                if sink.send(Message::Ping(Vec::new().into())).await.is_err() {
                    return;
                }
            }
        }
    }
}
