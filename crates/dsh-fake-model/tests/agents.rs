//! Per-agent scripts over HTTP: each request is answered from the script its
//! user prompts choose, whatever the arrival order of concurrent agents.

use dsh_fake_model::FakeServer;
use dsh_llm::scripted::Scenario;
use dsh_llm::{Accumulator, ModelRequest, ProviderEnv, ProviderRegistry, Route, Settled};
use dsh_protocol::message::KeptMessage;
use dsh_session::{Message, UserMessage, text_block};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SCENARIO: &str = "\
replies:
  - text: root-1
    delay_ms: 300
  - text: root-2
agents:
  - when: TASK-A
    replies:
      - text: A-1
      - text: A-2
  - when: TASK-B
    replies:
      - text: B-1
";

async fn serve() -> FakeServer {
    let path = std::env::temp_dir().join(format!(
        "dsh-fake-agents-{}-{:?}.yaml",
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&path, SCENARIO).unwrap_or_else(|e| panic!("{e}"));
    let scenario = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    let _ = std::fs::remove_file(path);
    FakeServer::start(scenario, None)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn env(base: &str) -> ProviderEnv {
    ProviderEnv {
        dsh_home: std::env::temp_dir(),
        deepseek_api_key: Some("sk-test".into()),
        deepseek_base_url: Some(base.into()),
        openai_base_url: Some(format!("{base}/v1")),
        openai_api_key: Some("sk-test".into()),
        idle_timeout: Duration::from_secs(5),
        limits: dsh_llm::ReplyLimits::default(),
    }
}

fn request(provider: &str, session: &str, prompt: &str) -> ModelRequest {
    ModelRequest {
        compact: false,
        session_id: session.into(),
        route: Route {
            provider: provider.into(),
            model: "deepseek-v4-flash".into(),
            reasoning_effort: None,
            max_tokens: Some(64),
        },
        system: "TASK-B is only in the system prompt.".into(),
        messages: vec![KeptMessage::parsed(Message::User(UserMessage::prompt(
            vec![text_block(prompt)],
        )))],
        tools: Arc::new(Vec::new()),
    }
}

/// The reply's text, or the failure's message.
async fn run(base: &str, req: ModelRequest) -> String {
    let provider = ProviderRegistry::new(env(base))
        .mount(&req.route)
        .unwrap_or_else(|e| panic!("{e}"));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    provider.start(req, tx);
    let mut acc = Accumulator::new();
    while let Some(chunk) = rx.recv().await {
        acc.push(&chunk);
    }
    match acc.settle(provider.name()) {
        Settled::Message { content, .. } => {
            content.iter().filter_map(|b| b["text"].as_str()).collect()
        }
        Settled::Failed(f) => format!("{}: {}", f.code, f.message),
    }
}

#[tokio::test]
async fn concurrent_agents_get_their_own_scripts_in_both_protocols() {
    for provider in ["deepseek-official", "openai-compatible"] {
        let server = serve().await;
        let base = server.base_url();
        // The root's reply is delayed, so A's request arrives and is
        // answered while the root's is still pending.
        let (root, a) = tokio::join!(
            run(&base, request(provider, "root", "the root task")),
            async {
                tokio::time::sleep(Duration::from_millis(50)).await;
                run(&base, request(provider, "child-a", "TASK-A do x")).await
            },
        );
        assert_eq!((root.as_str(), a.as_str()), ("root-1", "A-1"), "{provider}");
        let (b, a2, root2) = tokio::join!(
            run(&base, request(provider, "child-b", "then TASK-B")),
            run(&base, request(provider, "child-a", "TASK-A again")),
            run(&base, request(provider, "root", "more")),
        );
        assert_eq!(
            (b.as_str(), a2.as_str(), root2.as_str()),
            ("B-1", "A-2", "root-2"),
            "{provider}"
        );
        let exhausted = run(&base, request(provider, "child-b", "TASK-B once more")).await;
        assert!(
            exhausted.ends_with("fake model: agent script \"TASK-B\" has no reply left"),
            "{provider}: {exhausted}"
        );
        assert_eq!(server.requests().len(), 6, "{provider}");
    }
}

/// Posts `body` to `path` over a raw HTTP/1.1 connection: (status, response).
async fn post(server: &FakeServer, path: &str, body: Value) -> (u16, String) {
    let base = server.base_url();
    let addr = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let body = body.to_string();
    let head = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream
        .write_all(format!("{head}{body}").as_bytes())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let status = response
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {response:?}"));
    (status, response)
}

#[tokio::test]
async fn only_user_text_in_either_body_chooses_the_script() {
    let server = serve().await;
    let messages = "/v1/messages";
    let chat = "/v1/chat/completions";
    let cases = [
        // A Messages string content.
        (
            messages,
            json!({"system": "TASK-B", "messages": [{"role": "user", "content": "TASK-A go"}]}),
            "A-1",
        ),
        // Tool results, assistant text and the system prompt do not count.
        (
            messages,
            json!({"system": "TASK-B", "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hello"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "TASK-A"}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "TASK-B"}]},
            ]}),
            "root-1",
        ),
        // A text block beside a tool result does.
        (
            messages,
            json!({"messages": [
                {"role": "user", "content": "hello"},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t", "content": "x"},
                    {"type": "text", "text": "now TASK-B"},
                ]},
            ]}),
            "B-1",
        ),
        // Chat parts.
        (
            chat,
            json!({"messages": [
                {"role": "system", "content": "TASK-B"},
                {"role": "user", "content": [{"type": "text", "text": "TASK-A part"}]},
            ]}),
            "A-2",
        ),
        // Chat tool and assistant messages do not count.
        (
            chat,
            json!({"messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "TASK-A"},
                {"role": "tool", "tool_call_id": "t", "content": "TASK-B"},
            ]}),
            "root-2",
        ),
    ];
    for (i, (path, body, expected)) in cases.into_iter().enumerate() {
        let (status, response) = post(&server, path, body).await;
        assert_eq!(status, 200, "case {i}: {response}");
        assert!(response.contains(expected), "case {i}: {response}");
    }
    for (when, body) in [
        (
            "TASK-A",
            json!({"messages": [{"role": "user", "content": "TASK-A"}]}),
        ),
        (
            "TASK-B",
            json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "TASK-B"}]}]}),
        ),
    ] {
        let (status, response) = post(&server, chat, body).await;
        assert_eq!(status, 500, "{response}");
        assert!(
            response.contains(&format!(
                "fake model: agent script \\\"{when}\\\" has no reply left"
            )),
            "{response}"
        );
    }
    let (status, response) = post(
        &server,
        messages,
        json!({"messages": [{"role": "user", "content": "plain"}]}),
    )
    .await;
    assert_eq!(status, 500, "{response}");
    assert!(
        response.contains("fake model: top-level script has no reply left"),
        "{response}"
    );
}
