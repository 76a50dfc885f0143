//! `dsh web`: the DeepSeek Harness runtime in a browser.
//!
//! A protocol adapter like `dsh-server`'s stdio loop and `dsh-acp`: one
//! in-process SDK server (`bridge`) runs every session on the same agent
//! core, session store and sandbox; the page (`assets`, plain ES modules
//! embedded in the executable) calls SDK methods over `POST /api/rpc` and
//! reads the server's notifications and approval requests on a WebSocket
//! (`GET /api/live`, `socket`; also as Server-Sent Events on `GET
//! /api/events`, for scripts).
//!
//! Security, as a browser-facing local server needs it (`guard`,
//! `auth`): one concrete interface address (loopback by default;
//! wildcards are refused by the launcher); a random token printed once and
//! exchanged for an `HttpOnly; SameSite=Strict` cookie; `Host` and
//! `Origin` checked on every request (DNS rebinding, cross-site requests);
//! no CORS; a restrictive Content-Security-Policy; bodies and the live
//! channel bounded.
//!
//! # Layers
//!
//! Layer 1 is the bottom; a module uses only those in its layer or below
//! (`dsh-repo-checks`' layering test holds this list to the code):
//!
//! 1. `assets`, `auth`, `guard`, `bridge`, `tls` — the page, the token and
//!    cookies, the Host and Origin checks, the server behind the page,
//!    HTTPS from PEM files
//! 2. `socket` — the live channel as a WebSocket
//! 3. `http` — requests and their routes

mod assets;
mod auth;
mod bridge;
mod guard;
mod http;
mod socket;
mod tls;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::future::Future;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

pub use bridge::BridgeError;
pub use http::{BODY_MAX_BYTES, LIVE_MAX};
pub use tls::{TlsError, TlsFiles};

/// Longest a TLS handshake may take before its connection is closed.
const HANDSHAKE_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

/// Most HTTP connections served at once.
pub const CONNECTIONS_MAX: usize = 256;

/// What `dsh web` serves.
pub struct WebConfig {
    /// The server every session runs in.
    pub server: dsh_server::ServerConfig,
    /// The interface address to bind (one concrete address).
    pub host: IpAddr,
    /// The port (`0`: the system picks one).
    pub port: u16,
    /// The root URL to print instead of `http://<host>:<port>/` (a
    /// proxy's); it grants no trust (name its authority in
    /// `trusted_hosts`).
    pub public_url: Option<String>,
    /// More authorities (`host` or `host:port`) accepted in `Host` and
    /// `Origin`.
    pub trusted_hosts: Vec<String>,
    /// The workspace and route new sessions default to.
    pub cwd: PathBuf,
    /// The provider of new sessions.
    pub provider: String,
    /// The model of new sessions.
    pub model: String,
    /// Serve HTTPS with these PEM files (`None`: plain HTTP).
    pub tls: Option<TlsFiles>,
}

/// Why `dsh web` stopped.
#[derive(Debug, thiserror::Error)]
pub enum WebError {
    /// The address could not be bound.
    #[error("cannot listen on {address}: {source}")]
    Bind {
        /// The address.
        address: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The session server could not start.
    #[error(transparent)]
    Bridge(#[from] BridgeError),
    /// No random token could be drawn.
    #[error("cannot draw a random token: {0}")]
    Random(getrandom::Error),
    /// The TLS certificate or key cannot be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
}

/// Serves until `stop` resolves: prints `dsh web: <url>?token=<token>` on
/// stdout once listening, hands that URL to `opened` (which may open a
/// browser), then answers requests.
pub async fn serve(
    config: WebConfig,
    opened: impl FnOnce(&str),
    stop: impl Future<Output = ()>,
) -> Result<(), WebError> {
    let acceptor = config.tls.as_ref().map(tls::acceptor).transpose()?;
    let address = SocketAddr::new(config.host, config.port);
    let listener = TcpListener::bind(address)
        .await
        .map_err(|source| WebError::Bind { address, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| WebError::Bind { address, source })?;
    let bridge =
        bridge::Bridge::start(config.server, &config.cwd, &config.provider, &config.model).await?;
    let auth = auth::Auth::new(bound.port(), acceptor.is_some()).map_err(WebError::Random)?;
    let guard = guard::Guard::new(bound, &config.trusted_hosts);
    let root = match &config.public_url {
        Some(url) if url.ends_with('/') => url.clone(),
        Some(url) => format!("{url}/"),
        None => {
            let scheme = if acceptor.is_some() { "https" } else { "http" };
            format!("{scheme}://{bound}/")
        }
    };
    if config.public_url.is_some() {
        eprintln!("dsh web: listening on {bound} (advertised as {root})");
    }
    let url = format!("{root}?token={}", auth.token());
    let mut stdout = std::io::stdout();
    let _ = writeln!(stdout, "dsh web: {url}");
    let _ = stdout.flush();
    opened(&url);
    let app = Arc::new(http::App {
        auth,
        guard,
        bridge,
        live: Arc::new(AtomicUsize::new(0)),
    });
    let connections = Arc::new(Semaphore::new(CONNECTIONS_MAX));
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        let (stream, _) = match accepted {
            Ok(pair) => pair,
            Err(err) => {
                tracing::warn!("accepting a connection failed: {err}");
                continue;
            }
        };
        let Ok(permit) = Arc::clone(&connections).try_acquire_owned() else {
            tracing::warn!("{CONNECTIONS_MAX} connections are open; one more was closed");
            continue;
        };
        let app = Arc::clone(&app);
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request| {
                let app = Arc::clone(&app);
                async move { Ok::<_, std::convert::Infallible>(http::handle(app, request).await) }
            });
            let served = match acceptor {
                None => {
                    http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .with_upgrades()
                        .await
                }
                Some(acceptor) => {
                    match tokio::time::timeout(HANDSHAKE_LIMIT, acceptor.accept(stream)).await {
                        Ok(Ok(stream)) => {
                            http1::Builder::new()
                                .serve_connection(TokioIo::new(stream), service)
                                .with_upgrades()
                                .await
                        }
                        Ok(Err(err)) => {
                            tracing::debug!("a TLS handshake failed: {err}");
                            Ok(())
                        }
                        Err(_) => {
                            tracing::debug!("a TLS handshake took too long");
                            Ok(())
                        }
                    }
                }
            };
            if let Err(err) = served {
                tracing::debug!("a connection ended: {err}");
            }
            drop(permit);
        });
    }
    // Open pages keep their connections; the sessions close all the same.
    app.bridge.stop().await;
    Ok(())
}
