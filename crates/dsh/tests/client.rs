//! The Rust client crate driving the real binary.

mod common;

use common::TempDir;
use dsh_client::{ClientConfig, ClientError, HarnessClient};

fn config(dir: &TempDir) -> ClientConfig {
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("sub")).unwrap_or_else(|e| panic!("{e}"));
    let mut config = ClientConfig::new(env!("CARGO_BIN_EXE_dsh"), dir.path().join("home"), ws);
    config
        .env
        .push(("HOME".into(), dir.path().to_string_lossy().into_owned()));
    config
}

#[tokio::test]
async fn runs_turns_and_reports_errors_verbatim() {
    let dir = TempDir::new("client-run");
    let client = HarnessClient::spawn(config(&dir)).await.unwrap();
    let err = client
        .initialize("not-a-provider", "m")
        .await
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("no adapter registered for provider \"not-a-provider\" (code -32603)")
    );
    let info = client.initialize("scripted", "echo").await.unwrap();
    assert_eq!(info["serverInfo"]["name"], "deepseek-harness-sdk-runtime");

    let session = client.session("s-client");
    let first = session.run("héllo 😀").await.unwrap();
    assert_eq!(first.final_response, "héllo 😀");
    assert_eq!(first.finish_reason.as_deref(), Some("completed"));
    assert_eq!(first.events[0].kind, "agent/inbox/spliced");
    let second = session.run("again").await.unwrap();
    let turn = second
        .events
        .iter()
        .find(|e| e.kind == "turn/start")
        .map(|e| e.data["turn"].clone());
    assert_eq!(turn, Some(2.into()));

    let cwd = client
        .set_working_directory("s-client", "sub")
        .await
        .unwrap();
    assert!(cwd.ends_with("/ws/sub"), "{cwd}");
    assert_eq!(client.working_directory("s-client").await.ok(), Some(cwd));
    let missing = client.set_working_directory("s-client", "nope").await.err();
    assert!(
        matches!(missing, Some(ClientError::Rpc { ref message, .. }) if message == "working-directory: directory does not exist: \"nope\""),
        "{missing:?}"
    );
    client.wait("s-client").await.unwrap();
    let status = client.close().await.unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn sessions_resume_across_clients() {
    let dir = TempDir::new("client-resume");
    let client = HarnessClient::spawn(config(&dir)).await.unwrap();
    client.initialize("scripted", "echo").await.unwrap();
    client.session("s-kept").run("remember me").await.unwrap();
    client.close().await.unwrap();

    let client = HarnessClient::spawn(config(&dir)).await.unwrap();
    client.initialize("scripted", "echo").await.unwrap();
    let unknown = client.resume("never").await.err().map(|e| e.to_string());
    assert_eq!(
        unknown.as_deref(),
        Some("session \"never\" not found (code -32603)")
    );
    let session = client.resume("s-kept").await.unwrap();
    let result = session.run("back").await.unwrap();
    let header = result
        .events
        .iter()
        .find(|e| e.kind == "request/header")
        .map(|e| e.data["reason"].clone());
    assert_eq!(header, Some("resume".into()));
    assert_eq!(result.final_response, "back");
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_missing_binary_is_a_spawn_error() {
    let dir = TempDir::new("client-missing");
    let mut config = config(&dir);
    config.dsh_bin = dir.path().join("no-such-dsh");
    assert!(matches!(
        HarnessClient::spawn(config).await,
        Err(ClientError::Spawn { .. })
    ));
}
