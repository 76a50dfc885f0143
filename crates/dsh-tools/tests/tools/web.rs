//! `web_fetch` against a loopback HTTP server started by the test.

use crate::common::{Fixture, ok, some, text};
use dsh_tools::PermissionMode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Serves up to `connections` requests on 127.0.0.1 and returns the base
/// URL.
async fn serve(connections: usize) -> String {
    let listener = ok(TcpListener::bind("127.0.0.1:0").await, "bind");
    let addr = ok(listener.local_addr(), "addr");
    tokio::spawn(async move {
        for _ in 0..connections {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut request = Vec::new();
                let mut buf = [0u8; 1024];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let head = String::from_utf8_lossy(&request).into_owned();
                let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                let (status, kind, body): (&str, &str, Vec<u8>) = match path.as_str() {
                    "/text" => ("200 OK", "text/plain; charset=utf-8", b"plain hello\n".to_vec()),
                    "/page" => (
                        "200 OK",
                        "text/html",
                        b"<!DOCTYPE html><html><head><title>T&amp;C</title><style>p{}</style><script>var secret=1;</script></head><body><h1>Heading</h1><p>First &lt;para&gt;</p><p>Second</p></body></html>".to_vec(),
                    ),
                    "/missing" => ("404 Not Found", "text/plain", b"no such page".to_vec()),
                    "/redirect" => ("302 Found", "text/plain", Vec::new()),
                    "/loop" => ("302 Found", "text/plain", Vec::new()),
                    "/image" => ("200 OK", "image/png", b"\x89PNG\r\n\x1a\n\0\0".to_vec()),
                    "/scripts" => ("200 OK", "text/html", script_page(5 << 20)),
                    _ => ("500 Internal Server Error", "text/plain", Vec::new()),
                };
                let location = match path.as_str() {
                    "/redirect" => "Location: /text\r\n",
                    "/loop" => "Location: /loop\r\n",
                    _ => "",
                };
                let response = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n{location}Connection: close\r\n\r\n",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.write_all(&body).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    format!("http://{addr}")
}

/// An HTML page of about `bytes` bytes made of `<script>` elements with a
/// word between each two (issue 15, row 7).
pub fn script_page(bytes: usize) -> Vec<u8> {
    let mut page = b"<html><body>".to_vec();
    let mut i = 0;
    while page.len() < bytes {
        page.extend_from_slice(format!("<script>var v{i} = '<b>';</SCRIPT>w{i} ").as_bytes());
        i += 1;
    }
    page
}

fn fetch_args(url: &str) -> String {
    format!("{{\"url\":\"{url}\"}}")
}

#[tokio::test]
async fn fetches_plain_text() {
    let base = serve(1).await;
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx
        .call("web_fetch", &fetch_args(&format!("{base}/text")))
        .await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(
        text(&out),
        format!("Fetched {base}/text (HTTP 200, text/plain; charset=utf-8):\n\nplain hello\n")
    );
    let meta = some(out.meta, "meta");
    assert_eq!(meta["status"], 200);
    assert_eq!(meta["bytes"], 12);
}

#[tokio::test]
async fn html_is_reduced_to_text() {
    let base = serve(1).await;
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx
        .call("web_fetch", &fetch_args(&format!("{base}/page")))
        .await;
    let body = text(&out);
    assert!(
        body.ends_with(":\n\nT&C\n\nHeading\n\nFirst <para>\n\nSecond"),
        "{body}"
    );
    assert!(!body.contains("secret") && !body.contains("p{}"));
}

#[tokio::test]
async fn redirects_are_followed_within_the_limit() {
    let base = serve(10).await;
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx
        .call("web_fetch", &fetch_args(&format!("{base}/redirect")))
        .await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(some(out.meta, "meta")["finalUrl"], format!("{base}/text"));
    let looped = fx
        .call("web_fetch", &fetch_args(&format!("{base}/loop")))
        .await;
    assert!(looped.is_error);
    assert!(
        text(&looped).contains("more than 5 redirects"),
        "{}",
        text(&looped)
    );
}

#[tokio::test]
async fn error_statuses_and_binary_content_are_errors() {
    let base = serve(2).await;
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let missing = fx
        .call("web_fetch", &fetch_args(&format!("{base}/missing")))
        .await;
    assert!(missing.is_error);
    assert_eq!(
        text(&missing),
        format!("Error: {base}/missing answered HTTP 404 Not Found.\nno such page")
    );
    let image = fx
        .call("web_fetch", &fetch_args(&format!("{base}/image")))
        .await;
    assert!(image.is_error && text(&image).contains("image/png content, which is not text"));
}

#[tokio::test]
async fn only_http_urls_are_fetched() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let ftp = fx
        .call("web_fetch", "{\"url\":\"ftp://example.invalid/x\"}")
        .await;
    assert_eq!(
        text(&ftp),
        "Error: only http and https URLs can be fetched, not ftp:."
    );
    let file = fx
        .call("web_fetch", "{\"url\":\"file:///etc/passwd\"}")
        .await;
    assert!(file.is_error);
    let junk = fx.call("web_fetch", "{\"url\":\"not a url\"}").await;
    assert!(junk.is_error && text(&junk).contains("is not a valid URL"));
    // Nothing listens on port 9 of loopback.
    let refused = fx
        .call("web_fetch", "{\"url\":\"http://127.0.0.1:9/\"}")
        .await;
    assert!(refused.is_error && text(&refused).starts_with("Error: fetching"));
}

#[tokio::test]
async fn private_addresses_are_refused_when_the_sandbox_network_is_off() {
    let base = serve(4).await;
    let port = some(base.rsplit(':').next(), "port").to_owned();
    let fx = Fixture::with(PermissionMode::WorkspaceWrite, |mut config| {
        config.web_private_addresses = false;
        config
    });
    for url in [
        format!("{base}/text"),
        format!("http://localhost:{port}/text"),
        format!("http://[::ffff:127.0.0.1]:{port}/text"),
        format!("http://2130706433:{port}/text"),
    ] {
        let out = fx.call("web_fetch", &fetch_args(&url)).await;
        assert!(out.is_error, "{url}: {}", text(&out));
        assert!(
            text(&out).contains("loopback, private or link-local"),
            "{url}: {}",
            text(&out)
        );
        assert!(!text(&out).contains("plain hello"));
    }
    // Allowed again, the same server answers.
    let open = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = open
        .call("web_fetch", &fetch_args(&format!("{base}/text")))
        .await;
    assert!(text(&out).contains("plain hello"), "{}", text(&out));
}

#[tokio::test]
async fn a_page_heavy_in_scripts_converts_and_the_body_is_bounded() {
    let base = serve(2).await;
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx
        .call("web_fetch", &fetch_args(&format!("{base}/scripts")))
        .await;
    assert!(!out.is_error, "{}", text(&out));
    let shown = text(&out);
    assert!(
        shown.contains("\n\nw0 w1 w2 "),
        "{}",
        &shown[..200.min(shown.len())]
    );
    assert!(!shown.contains("var v"));
    assert!(shown.contains("[content clipped: showing the first 100000 of "));
    assert_eq!(some(out.meta, "meta")["bytes"], 5 << 20);
    let small = Fixture::with(PermissionMode::WorkspaceWrite, |mut config| {
        config.web_max_bytes = 1000;
        config
    });
    let out = small
        .call("web_fetch", &fetch_args(&format!("{base}/scripts")))
        .await;
    assert!(!out.is_error, "{}", text(&out));
    assert!(
        text(&out).ends_with("[download stopped at 1000 bytes (DSH_WEB_FETCH_MAX_BYTES)]"),
        "{}",
        text(&out)
    );
    assert_eq!(some(out.meta, "meta")["bytes"], 1000);
}
