//! The HTTP providers against the fake model's hostile replies (issue 15,
//! rows 8 and 9): an endless stream and an endless error body end the
//! attempt at their bounds, one huge delta arrives whole.

use dsh_fake_model::FakeServer;
use dsh_llm::scripted::Scenario;
use dsh_llm::{
    Accumulator, LlmFailure, ModelRequest, ProviderEnv, ProviderRegistry, REPLY_BYTES_VAR,
    ReplyLimits, Route, Settled,
};
use dsh_protocol::message::KeptMessage;
use dsh_session::{Message, UserMessage, text_block};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

const PROVIDERS: [&str; 2] = ["deepseek-official", "openai-compatible"];

async fn serve(replies: Value) -> FakeServer {
    let scenario: Scenario =
        serde_json::from_value(json!({ "replies": replies })).unwrap_or_else(|e| panic!("{e}"));
    FakeServer::start(scenario, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn env(base: &str, limits: ReplyLimits) -> ProviderEnv {
    ProviderEnv {
        dsh_home: std::env::temp_dir(),
        deepseek_api_key: Some("sk-test".into()),
        deepseek_base_url: Some(base.into()),
        openai_base_url: Some(format!("{base}/v1")),
        openai_api_key: Some("sk-test".into()),
        idle_timeout: Duration::from_secs(30),
        limits,
    }
}

fn request(provider: &str, max_tokens: u64) -> ModelRequest {
    ModelRequest {
        compact: false,
        session_id: "s-hostile".into(),
        route: Route {
            provider: provider.into(),
            model: "deepseek-v4-flash".into(),
            reasoning_effort: None,
            max_tokens: Some(max_tokens),
        },
        system: "You are a test.".into(),
        messages: vec![KeptMessage::parsed(Message::User(UserMessage::new(
            vec![text_block("hi")],
            json!({"kind": "user"}),
        )))],
        tools: Arc::new(Vec::new()),
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
        if acc.finished() {
            break;
        }
    }
    acc.settle(provider.name())
}

fn failed(settled: Settled) -> LlmFailure {
    match settled {
        Settled::Failed(failure) => failure,
        Settled::Message { content, .. } => {
            panic!("expected a failure, got {} blocks", content.len())
        }
    }
}

#[tokio::test]
async fn an_endless_stream_ends_at_the_cap_derived_from_max_tokens() {
    for provider in PROVIDERS {
        let server = serve(json!([{"hostile": {"kind": "endless-text"}}])).await;
        let failure = failed(
            run(
                env(&server.base_url(), ReplyLimits::default()),
                request(provider, 1000),
            )
            .await,
        );
        assert_eq!(
            failure.code, "MALFORMED_RESPONSE",
            "{provider}: {failure:?}"
        );
        let cap = 1000 * 512 + (1 << 20);
        assert!(
            failure
                .message
                .contains(&format!("size cap of {cap} bytes (max_tokens 1000"))
                && failure.message.contains(REPLY_BYTES_VAR),
            "{provider}: {}",
            failure.message
        );
    }
}

#[tokio::test]
async fn a_fixed_cap_overrides_max_tokens() {
    let server = serve(json!([{"hostile": {"kind": "endless-text"}}])).await;
    let limits = ReplyLimits {
        reply_bytes: Some(100_000),
        ..ReplyLimits::default()
    };
    let failure = failed(
        run(
            env(&server.base_url(), limits),
            request("deepseek-official", 1_000_000),
        )
        .await,
    );
    assert!(
        failure
            .message
            .contains("size cap of 100000 bytes (set by DSH_MAX_REPLY_BYTES)"),
        "{}",
        failure.message
    );
}

#[tokio::test]
async fn an_endless_error_body_is_read_to_its_bound_and_mapped() {
    for provider in PROVIDERS {
        let server = serve(json!([{"hostile": {"kind": "endless-error-body"}}])).await;
        let failure = failed(
            run(
                env(&server.base_url(), ReplyLimits::default()),
                request(provider, 1000),
            )
            .await,
        );
        assert_eq!(failure.code, "SERVER", "{provider}");
        assert_eq!(failure.status, Some(500));
        // Not JSON (it never closes): the text is the message, shortened.
        assert!(
            failure
                .message
                .starts_with(r#"{"type":"error","error":{"type":"api_error","message":"endless"#)
                && failure.message.len() <= 500,
            "{provider}: {}",
            failure.message
        );
    }
}

#[tokio::test]
async fn one_huge_delta_arrives_whole() {
    let bytes = 16u64 << 20;
    for provider in PROVIDERS {
        let server = serve(json!([{"hostile": {"kind": "huge-delta", "bytes": bytes}}])).await;
        // 16 MiB needs a cap above the default for 1000 tokens.
        let small = failed(
            run(
                env(&server.base_url(), ReplyLimits::default()),
                request(provider, 1000),
            )
            .await,
        );
        assert_eq!(small.code, "MALFORMED_RESPONSE");
        let server = serve(json!([{"hostile": {"kind": "huge-delta", "bytes": bytes}}])).await;
        let settled = run(
            env(&server.base_url(), ReplyLimits::default()),
            request(provider, 64_000),
        )
        .await;
        let Settled::Message { content, .. } = settled else {
            panic!("{provider}: expected a message, got {settled:?}");
        };
        let text = content[0]["text"].as_str().unwrap_or_default();
        assert_eq!(text.len() as u64, bytes, "{provider}");
        assert!(text.bytes().all(|b| b == b'x'));
    }
}

#[tokio::test]
async fn a_huge_tool_call_arrives_whole() {
    let server = serve(json!([{"hostile": {"kind": "huge-tool-call", "name": "write", "arguments": {"path": "big.txt"}, "field": "content", "bytes": 1 << 20}}])).await;
    let settled = run(
        env(&server.base_url(), ReplyLimits::default()),
        request("deepseek-official", 64_000),
    )
    .await;
    let Settled::Message { content, .. } = settled else {
        panic!("expected a message, got {settled:?}");
    };
    let arguments: Value =
        serde_json::from_str(content[0]["arguments"].as_str().unwrap_or_default()).unwrap();
    assert_eq!(arguments["path"], "big.txt");
    assert_eq!(arguments["content"].as_str().map(str::len), Some(1 << 20));
}
