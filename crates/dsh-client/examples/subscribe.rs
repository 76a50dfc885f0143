//! Lower level than `Session::run`: subscribe to every notification, start
//! a turn with a raw `session/prompt`, follow `session.event` and
//! `session.status` until `session/wait` returns, and move the session's
//! working directory.
//!
//! `cargo run -p dsh-client --example subscribe -- target/debug/dsh`
//! (the argument defaults to `target/debug/dsh`; the model is the offline
//! `echo`).

use dsh_client::{ClientConfig, HarnessClient, Notification};
use dsh_protocol::catalog::{Event, SessionEvent};
use dsh_protocol::methods::{PromptParams, PromptResult, SESSION_PROMPT};
use dsh_protocol::notifications::{SESSION_EVENT, SESSION_STATUS};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dsh = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/debug/dsh".into());
    // The runtime starts in the workspace: a relative path would not be found.
    let dsh = std::fs::canonicalize(&dsh).map_err(|e| format!("{dsh}: {e}"))?;
    let tmp = std::env::temp_dir().join(format!("dsh-example-sub-{}", std::process::id()));
    let workspace = tmp.join("ws");
    std::fs::create_dir_all(workspace.join("sub"))?;
    let client =
        HarnessClient::spawn(ClientConfig::new(&dsh, tmp.join("home"), &workspace)).await?;
    client.initialize("scripted", "echo").await?;

    let mut notifications = client.subscribe();
    let params = PromptParams {
        session_id: "example-subscribe".into(),
        content_blocks: vec![dsh_client::text_block("echo me")],
    };
    let receipt: PromptResult = client.call(SESSION_PROMPT, &params).await?;
    println!("receipt: message {}", receipt.message_id);
    client.wait("example-subscribe").await?;
    // Everything up to `idle` was sent before `session/wait` returned.
    while let Ok(Notification { method, params }) = notifications.try_recv() {
        match method.as_str() {
            SESSION_EVENT => {
                let event: SessionEvent = serde_json::from_value(params["event"].clone())?;
                match event.typed()? {
                    Event::AssistantMessage(reply) => {
                        println!(
                            "{:>3} reply: {}",
                            event.seq, reply.message.content[0]["text"]
                        );
                    }
                    Event::TurnEnd(end) => println!("{:>3} turn/end: {:?}", event.seq, end.reason),
                    _ => println!("{:>3} {}", event.seq, event.kind),
                }
            }
            SESSION_STATUS => println!("    status: {}", params["status"]),
            other => println!("    {other}"),
        }
    }
    let cwd = client
        .set_working_directory("example-subscribe", "sub")
        .await?;
    println!("working directory now {cwd}");
    match client
        .set_working_directory("example-subscribe", "missing")
        .await
    {
        Err(err) => println!("refused: {err}"),
        Ok(cwd) => return Err(format!("moved to a missing directory: {cwd}").into()),
    }
    client.close().await?;
    std::fs::remove_dir_all(&tmp)?;
    Ok(())
}
