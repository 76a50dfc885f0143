//! `web_fetch`: fetch an http(s) URL and return its text.

use super::{TypedTool, spec, string};
use crate::{ToolContext, ToolOutput, ToolsConfig, html, web_guard};
use dsh_protocol::catalog::ToolSpec;
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;

/// Most characters of text returned.
const MAX_TEXT_CHARS: usize = 100_000;

/// Most redirects followed.
const MAX_REDIRECTS: usize = 5;

const DESCRIPTION: &str = "Fetch a web page or other text resource over http or https and return its content as text. HTML is reduced to plain text (scripts, styles and tags removed; links and layout are lost). Up to 5 redirects are followed, the request gives up after 30 seconds, at most 5 MiB is downloaded and 100000 characters returned. Binary content such as images or archives is refused, and so is any answer other than a 2xx success.";

#[derive(Deserialize)]
pub(crate) struct Args {
    url: String,
}

/// The `web_fetch` tool.
pub(crate) struct WebFetch {
    spec: ToolSpec,
    config: Arc<ToolsConfig>,
}

impl WebFetch {
    pub(crate) fn new(config: Arc<ToolsConfig>) -> Self {
        Self {
            spec: spec(
                "web_fetch",
                DESCRIPTION,
                vec![(
                    "url",
                    string("The full http:// or https:// address to fetch."),
                )],
                &["url"],
            ),
            config,
        }
    }
}

impl TypedTool for WebFetch {
    type Args = Args;
    const BATCHED: bool = true;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, a: Args, ctx: ToolContext) -> ToolOutput {
        let url = a.url;
        let limit = self.config.web_timeout;
        let bounded = async {
            match tokio::time::timeout(limit, fetch(&url, &self.config)).await {
                Ok(out) => out,
                Err(_) => ToolOutput::failure(format!(
                    "Error: fetching {} gave no result within {} ms (the web_fetch time limit; DSH_WEB_FETCH_TIMEOUT_MS).",
                    url.trim(),
                    limit.as_millis()
                )),
            }
        };
        tokio::select! {
            out = bounded => out,
            () = ctx.cancel.cancelled() => ToolOutput::failure("Error: the fetch was cancelled."),
        }
    }
}

async fn fetch(url: &str, config: &ToolsConfig) -> ToolOutput {
    let trimmed = url.trim();
    let parsed = match reqwest::Url::parse(trimmed) {
        Ok(parsed) => parsed,
        Err(err) => {
            return ToolOutput::failure(format!("Error: \"{trimmed}\" is not a valid URL: {err}."));
        }
    };
    if !matches!(parsed.scheme(), "http" | "https") {
        return ToolOutput::failure(format!(
            "Error: only http and https URLs can be fetched, not {}:.",
            parsed.scheme()
        ));
    }
    // Installing the process-wide crypto provider fails harmlessly when one
    // is already installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder()
        .timeout(config.web_timeout)
        .user_agent(concat!("dsh-tools/", env!("CARGO_PKG_VERSION")));
    if config.web_private_addresses {
        builder = builder.redirect(reqwest::redirect::Policy::limited(MAX_REDIRECTS));
    } else {
        if let Err(why) = web_guard::check_url(&parsed) {
            return ToolOutput::failure(format!("Error: fetching {trimmed} was refused: {why}."));
        }
        builder = builder
            .no_proxy()
            .dns_resolver(Arc::new(web_guard::PublicOnly))
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                if attempt.previous().len() > MAX_REDIRECTS {
                    return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
                }
                match web_guard::check_url(attempt.url()) {
                    Ok(()) => attempt.follow(),
                    Err(why) => attempt.error(why),
                }
            }));
    }
    let client = match builder.build() {
        Ok(client) => client,
        Err(err) => {
            return ToolOutput::failure(format!("Error: cannot set up the HTTP client: {err}"));
        }
    };
    let mut response = match client.get(parsed.clone()).send().await {
        Ok(response) => response,
        Err(err) => {
            return ToolOutput::failure(format!(
                "Error: fetching {trimmed} failed: {}",
                describe(&err)
            ));
        }
    };
    let status = response.status();
    let final_url = response.url().to_string();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let max_bytes = config.web_max_bytes;
    let mut body = Vec::new();
    let mut clipped = false;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = max_bytes - body.len();
                if chunk.len() > room {
                    body.extend_from_slice(&chunk[..room]);
                    clipped = true;
                    break;
                }
                body.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(err) => {
                return ToolOutput::failure(format!(
                    "Error: reading the answer from {final_url} failed: {}",
                    describe(&err)
                ));
            }
        }
    }
    let meta = json!({
        "url": trimmed,
        "finalUrl": final_url,
        "status": status.as_u16(),
        "contentType": content_type,
        "bytes": body.len(),
    });
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body);
        let snippet: String = text.chars().take(2000).collect();
        let mut message = format!("Error: {final_url} answered HTTP {status}.");
        if !snippet.trim().is_empty() {
            message.push_str(&format!("\n{}", snippet.trim()));
        }
        return ToolOutput::failure(message).with_meta(meta);
    }
    if !is_textual(&content_type, &body) {
        return ToolOutput::failure(format!(
            "Error: {final_url} returned {} content, which is not text.",
            if content_type.is_empty() {
                "binary"
            } else {
                &content_type
            }
        ))
        .with_meta(meta);
    }
    // Decoding and HTML conversion are CPU work on up to `max_bytes`: off
    // the async workers, and still inside the fetch's time limit.
    let converted = tokio::task::spawn_blocking(move || {
        let raw = String::from_utf8_lossy(&body);
        let text = if html::looks_like_html(&content_type, &raw) {
            html::to_text(&raw)
        } else {
            raw.into_owned()
        };
        (text, content_type)
    })
    .await;
    let Ok((text, content_type)) = converted else {
        return ToolOutput::failure(format!(
            "Error: converting the answer from {final_url} to text failed."
        ))
        .with_meta(meta);
    };
    let total_chars = text.chars().count();
    let mut shown: String = text.chars().take(MAX_TEXT_CHARS).collect();
    let mut notes = Vec::new();
    if clipped {
        notes.push(format!(
            "[download stopped at {max_bytes} bytes (DSH_WEB_FETCH_MAX_BYTES)]"
        ));
    }
    if total_chars > MAX_TEXT_CHARS {
        notes.push(format!(
            "[content clipped: showing the first {MAX_TEXT_CHARS} of {total_chars} characters]"
        ));
    }
    for note in notes {
        if !shown.ends_with('\n') {
            shown.push('\n');
        }
        shown.push_str(&note);
    }
    let kind = if content_type.is_empty() {
        "unknown type"
    } else {
        &content_type
    };
    ToolOutput::text(format!(
        "Fetched {final_url} (HTTP {}, {kind}):\n\n{shown}",
        status.as_u16()
    ))
    .with_meta(meta)
}

/// Text, JSON, XML, JavaScript and the like; with no type given, a body
/// without NUL bytes.
fn is_textual(content_type: &str, body: &[u8]) -> bool {
    if content_type.is_empty() {
        return !body.iter().take(8192).any(|b| *b == 0);
    }
    content_type.starts_with("text/")
        || [
            "json",
            "xml",
            "javascript",
            "ecmascript",
            "yaml",
            "toml",
            "csv",
            "x-sh",
        ]
        .iter()
        .any(|kind| content_type.contains(kind))
}

/// The error with its causes, e.g. `timed out` or `connection refused`.
fn describe(err: &reqwest::Error) -> String {
    let mut text = if err.is_timeout() {
        "the request timed out".to_owned()
    } else if err.is_redirect() {
        format!("more than {MAX_REDIRECTS} redirects")
    } else {
        err.to_string()
    };
    let mut source = std::error::Error::source(err);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}
