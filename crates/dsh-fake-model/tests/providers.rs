//! The HTTP providers against the fake model server: request shape, stream
//! translation and every row of the error table.

use dsh_fake_model::FakeServer;
use dsh_llm::scripted::Scenario;
use dsh_llm::{
    Accumulator, FinishReason, ModelRequest, ProviderEnv, ProviderRegistry, Route, Settled,
    ToolSpec,
};
use dsh_protocol::message::KeptMessage;
use dsh_session::{Message, UserMessage, text_block};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn scenario(yaml: &str) -> Scenario {
    let path = std::env::temp_dir().join(format!(
        "dsh-fake-{}-{}.yaml",
        std::process::id(),
        fastrand()
    ));
    std::fs::write(&path, yaml).unwrap_or_else(|e| panic!("{e}"));
    let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_file(path);
    scenario
}

fn fastrand() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst)
}

fn env(base: &str, key: Option<&str>) -> ProviderEnv {
    ProviderEnv {
        dsh_home: std::env::temp_dir(),
        deepseek_api_key: key.map(Into::into),
        deepseek_base_url: Some(base.into()),
        openai_base_url: Some(format!("{base}/v1")),
        openai_api_key: key.map(Into::into),
        idle_timeout: Duration::from_millis(500),
        limits: dsh_llm::ReplyLimits::default(),
    }
}

fn request(provider: &str, tools: Vec<ToolSpec>) -> ModelRequest {
    ModelRequest {
        compact: false,
        session_id: "s-test".into(),
        route: Route {
            provider: provider.into(),
            model: "deepseek-v4-flash".into(),
            reasoning_effort: None,
            max_tokens: Some(64),
        },
        system: "You are a test.".into(),
        messages: vec![KeptMessage::parsed(Message::User(UserMessage::new(
            vec![text_block("hi")],
            json!({"kind": "user"}),
        )))],
        tools: Arc::new(tools),
    }
}

async fn run(env: ProviderEnv, req: ModelRequest) -> Settled {
    let provider = ProviderRegistry::new(env)
        .mount(&req.route)
        .unwrap_or_else(|e| panic!("{e}"));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    provider.start(req, tx);
    let mut acc = Accumulator::new();
    while let Some(chunk) = rx.recv().await {
        acc.push(&chunk);
    }
    acc.settle(provider.name())
}

async fn serve(yaml: &str) -> FakeServer {
    FakeServer::start(scenario(yaml), None)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn messages_request_shape_and_reply() {
    let server = serve("replies:\n  - reasoning: think\n    text: [Hel, lo]\n").await;
    let tool = ToolSpec {
        name: "bash".into(),
        description: "Run".into(),
        parameters: json!({"type": "object", "properties": {}}),
    };
    let Settled::Message {
        content,
        usage,
        replay_state,
        finish,
    } = run(
        env(&server.base_url(), Some("sk-test")),
        request("deepseek-official", vec![tool]),
    )
    .await
    else {
        panic!("expected a message");
    };
    assert_eq!(
        content,
        vec![
            json!({"type": "reasoning", "text": "think"}),
            json!({"type": "text", "text": "Hello"})
        ]
    );
    assert_eq!(finish, FinishReason::Stop);
    assert!(
        usage.is_some_and(
            |u| u.input_tokens > 0 && u.total_tokens == u.input_tokens + u.output_tokens
        )
    );
    assert_eq!(
        replay_state.and_then(|r| r.pointer("/blocks/0/signature").cloned()),
        Some(json!("fake-sig-0"))
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r["path"], "/v1/messages");
    assert_eq!(r["headers"]["x-api-key"], "<redacted len=7>");
    assert_eq!(r["headers"]["anthropic-version"], "2023-06-01");
    assert_eq!(r["headers"]["accept"], "text/event-stream");
    assert_eq!(r["headers"]["x-deepseek-harness-session-id"], "s-test");
    assert!(r["headers"].get("authorization").is_none());
    let keys: Vec<&str> = r["body"]
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(
        keys,
        [
            "model",
            "stream",
            "messages",
            "max_tokens",
            "thinking",
            "output_config",
            "system",
            "tools"
        ]
    );
    assert_eq!(r["body"]["max_tokens"], 64);
    assert_eq!(r["body"]["thinking"], json!({"type": "enabled"}));
    assert_eq!(r["body"]["output_config"], json!({"effort": "high"}));
    assert_eq!(
        r["body"]["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    );
    assert_eq!(
        r["body"]["tools"][0]["input_schema"],
        json!({"type": "object", "properties": {}})
    );
}

#[tokio::test]
async fn chat_completions_request_shape_and_tool_calls() {
    let server = serve("replies:\n  - reasoning: hmm\n    blocks:\n      - text: ok\n      - tool_call: {id: c1, name: bash, arguments: {command: ls}}\n").await;
    let Settled::Message {
        content, finish, ..
    } = run(
        env(&server.base_url(), Some("sk-test")),
        request("openai-compatible", vec![]),
    )
    .await
    else {
        panic!("expected a message");
    };
    assert_eq!(finish, FinishReason::ToolCalls);
    assert_eq!(
        content[2],
        json!({"type": "tool-call", "id": "c1", "name": "bash", "arguments": "{\"command\":\"ls\"}"})
    );
    assert_eq!(content[0], json!({"type": "reasoning", "text": "hmm"}));
    let r = &server.requests()[0];
    assert_eq!(r["path"], "/v1/chat/completions");
    assert_eq!(r["headers"]["authorization"], "<redacted len=14>");
    assert_eq!(r["body"]["stream_options"], json!({"include_usage": true}));
    assert_eq!(
        r["body"]["messages"][0],
        json!({"role": "system", "content": "You are a test."})
    );
    assert!(r["body"].get("tools").is_none());
    assert!(r["body"].get("reasoning_effort").is_none());
}

async fn failure(yaml: &str, provider: &str) -> (dsh_llm::LlmFailure, usize) {
    let server = serve(yaml).await;
    match run(
        env(&server.base_url(), Some("sk-test")),
        request(provider, vec![]),
    )
    .await
    {
        Settled::Failed(f) => (f, server.requests().len()),
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test]
async fn every_http_error_row_maps_to_its_code() {
    let rows = [
        (401, "", "invalid api key", "AUTH"),
        (403, "", "forbidden", "AUTH"),
        (402, "", "no money", "QUOTA"),
        (429, "", "slow down", "RATE_LIMIT"),
        (
            400,
            "",
            "This model's maximum context length is 1000 tokens",
            "CONTEXT_WINDOW_EXCEEDED",
        ),
        (400, "", "bad field", "INVALID_REQUEST"),
        (413, "", "too big", "INVALID_REQUEST"),
        (500, "", "fake internal error", "SERVER"),
        (529, "overloaded_error", "busy", "SERVER"),
        (418, "teapot_error", "short and stout", "HTTP_418"),
    ];
    for provider in ["deepseek-official", "openai-compatible"] {
        for (status, kind, message, code) in rows {
            let kind = if kind.is_empty() {
                String::new()
            } else {
                format!(", type: {kind}")
            };
            let yaml = format!(
                "replies:\n  - error: {{code: X, message: \"{message}\", status: {status}, request_id: req-{status}, retry_after_ms: 1500{kind}}}\n"
            );
            let (f, _) = failure(&yaml, provider).await;
            assert_eq!(
                (f.code.as_str(), f.status),
                (code, Some(status)),
                "{provider} {status}"
            );
            assert_eq!(f.message, message);
            assert_eq!(
                f.request_id.as_deref(),
                Some(format!("req-{status}").as_str())
            );
            assert_eq!(
                f.provider_retry_after_ms.map(dsh_llm::Millis::get),
                Some(1500.0)
            );
        }
    }
}

#[tokio::test]
async fn stream_cuts_stalls_and_transport_failures() {
    let (f, _) = failure(
        "replies:\n  - text: [par, tial]\n    cut: true\n",
        "deepseek-official",
    )
    .await;
    assert_eq!(
        (f.code.as_str(), f.message.as_str()),
        (
            "STREAM_CLOSED",
            "DeepSeek Messages stream ended before message_stop"
        )
    );
    let (f, _) = failure(
        "replies:\n  - text: [par, tial]\n    cut: true\n",
        "openai-compatible",
    )
    .await;
    assert_eq!(f.code, "STREAM_CLOSED");
    for provider in ["deepseek-official", "openai-compatible"] {
        let (f, _) = failure(
            "replies:\n  - text: [par, tial]\n    reset: true\n",
            provider,
        )
        .await;
        assert_eq!(f.code, "TRANSPORT", "{provider}: {}", f.message);
    }
    let (f, _) = failure(
        "replies:\n  - text: [a, b]\n    stall_ms: 2000\n",
        "deepseek-official",
    )
    .await;
    assert_eq!(f.code, "TIMEOUT");
    let (f, _) = failure(
        "replies:\n  - text: late\n    delay_ms: 2000\n",
        "openai-compatible",
    )
    .await;
    assert_eq!(f.code, "TIMEOUT");
    // Nothing listens on a port we just freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(9);
    let closed = format!("http://127.0.0.1:{port}");
    let Settled::Failed(f) = run(
        env(&closed, Some("sk")),
        request("deepseek-official", vec![]),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(f.code, "TRANSPORT");
    assert!(
        f.message == "DeepSeek Messages transport failed",
        "{}",
        f.message
    );
}

#[tokio::test]
async fn credentials_fail_before_any_request() {
    let server = serve("replies:\n  - text: never\n").await;
    let Settled::Failed(f) = run(
        env(&server.base_url(), None),
        request("deepseek-official", vec![]),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(f.code, "MISSING_CREDENTIAL");
    let Settled::Failed(f) = run(
        env(&server.base_url(), Some("sk\u{7f}x")),
        request("deepseek-official", vec![]),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(f.code, "INVALID_CREDENTIAL");
    assert!(server.requests().is_empty(), "no HTTP request may be made");
}

#[tokio::test]
async fn max_tokens_drops_a_truncated_tool_call() {
    let server = serve("replies:\n  - reasoning: r\n    blocks:\n      - text: Calling\n      - tool_call: {id: t1, name: bash, arguments: \"{\\\"comm\"}\n    stop: max_tokens\n").await;
    let Settled::Message {
        content,
        finish,
        replay_state,
        ..
    } = run(
        env(&server.base_url(), Some("sk")),
        request("deepseek-official", vec![]),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(finish, FinishReason::MaxTokens);
    assert_eq!(content.len(), 2);
    assert_eq!(
        replay_state.map(|r| r["blocks"].as_array().map(Vec::len)),
        Some(Some(2))
    );
    let _ = Value::Null;
}
