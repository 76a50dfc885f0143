//! HTTP clients (and the TLS root certificates they load) are built at a
//! provider's first request, not at launch or `initialize`: with the
//! system's certificates unreadable (`SSL_CERT_FILE`, `SSL_CERT_DIR`
//! naming nothing) the runtime starts, mounts every provider, and only a
//! request that needs a client fails, as a transport failure does.

mod common;

use common::Runtime;
use serde_json::{Value, json};

/// A runtime whose HTTP clients cannot be built: no CA certificate loads.
fn without_certificates(extra: &[(&str, &str)]) -> Runtime {
    let extra: Vec<(String, String)> = extra
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    Runtime::start_with("sdk", |cmd| {
        cmd.env("SSL_CERT_FILE", "/nonexistent/dsh-test/cert.pem")
            .env("SSL_CERT_DIR", "/nonexistent/dsh-test/certs")
            // Nothing listens there; no request may get that far.
            .env("DEEPSEEK_BASE_URL", "http://127.0.0.1:9")
            .env("DEEPSEEK_API_KEY", "sk-test")
            .env("DSH_RETRY_INITIAL_MS", "1")
            .env("DSH_RETRY_MAX_MS", "1")
            .envs(extra);
    })
}

/// Prompts `session` and returns its events up to its `turn/end`.
fn turn(rt: &mut Runtime, session: &str, text: &str) -> Vec<Value> {
    rt.send(
        &json!({"jsonrpc": "2.0", "id": format!("p-{session}"), "method": "session/prompt",
        "params": {"sessionId": session, "contentBlocks": [{"type": "text", "text": text}]}}),
    );
    let mut events = Vec::new();
    loop {
        let frame = rt.next();
        if frame.pointer("/params/sessionId") != Some(&json!(session)) {
            continue;
        }
        if let Some(event) = frame.pointer("/params/event") {
            events.push(event.clone());
            if event["type"] == "turn/end" {
                return events;
            }
        }
    }
}

#[test]
fn a_client_that_cannot_be_built_fails_the_first_request_not_initialize() {
    let mut rt = without_certificates(&[]);
    // The scripted provider needs no client: the runtime starts and answers.
    rt.initialize_echo();
    let echo = turn(&mut rt, "echo", "hi");
    let end = echo.last().cloned().unwrap_or_default();
    assert_eq!(end["data"]["reason"]["kind"], "completed", "{end}");

    for (provider, extra) in [
        ("deepseek-official", None),
        ("openai-compatible", Some("http://127.0.0.1:9/v1")),
    ] {
        let ws = rt.workspace();
        let mut params = json!({"cwd": ws, "provider": provider, "model": "m"});
        if let Some(base) = extra {
            // The openai route's base URL comes from the launch environment;
            // restart with it set.
            rt = without_certificates(&[("DSH_OPENAI_BASE_URL", base)]);
            params["cwd"] = json!(rt.workspace());
        }
        let init = rt.request(json!(format!("init-{provider}")), "initialize", params);
        assert!(
            init.get("result").is_some(),
            "{provider}: initialize mounts without a client: {init}"
        );
        let events = turn(&mut rt, provider, "go");
        let end = events.last().cloned().unwrap_or_default();
        assert_eq!(end["data"]["reason"]["kind"], "error", "{end}");
        let error = &end["data"]["reason"]["error"];
        assert_eq!(error["code"], "TRANSPORT", "{provider}: {error}");
        assert_eq!(
            error["message"],
            format!("provider \"{provider}\": cannot create an HTTP client: builder error"),
            "{provider}: the message initialize gave before"
        );
        // Retried like a transport failure: each attempt tries to build again.
        let attempts = events
            .iter()
            .filter(|e| e["type"] == "assistant/attempt")
            .count();
        assert!(attempts > 1, "{provider}: {attempts} attempt(s)");
    }
}

#[test]
fn a_search_client_that_cannot_be_built_fails_the_search_not_the_launch() {
    let dir = common::TempDir::new("lazy-search");
    let scenario = dir.path().join("scenario.json");
    let replies = json!({"replies": [
        {"blocks": [{"tool_call": {"id": "c1", "name": "web_search", "arguments": {"queries": ["rust"]}}}]},
        {"text": "done"}
    ]});
    std::fs::write(&scenario, replies.to_string()).unwrap_or_else(|e| panic!("{e}"));
    let mut rt = without_certificates(&[("DSH_WEB_SEARCH_BASE_URL", "http://127.0.0.1:9")]);
    let ws = rt.workspace();
    let init = rt.request(
        json!("init"),
        "initialize",
        json!({"cwd": ws, "provider": "scripted", "model": scenario.display().to_string()}),
    );
    assert!(init.get("result").is_some(), "{init}");
    let events = turn(&mut rt, "search", "go");
    let result = events
        .iter()
        .find(|e| e["type"] == "tool/result")
        .unwrap_or_else(|| panic!("no tool/result in {events:?}"));
    let text = result.to_string();
    assert!(
        text.contains(
            "Error: the search request failed: cannot create an HTTP client: builder error"
        ),
        "{result}"
    );
}
