//! A scripted two-step tool turn, driven by `dsh-client`, with the events
//! watched as they arrive.
//!
//! `cargo run -p dsh-client --example two_step -- target/debug/dsh`
//! (the argument defaults to `target/debug/dsh`). Prints each tool call and
//! the final answer; exits non-zero unless the turn completed.

use dsh_client::{ClientConfig, HarnessClient};
use dsh_protocol::catalog::Event;
use std::path::PathBuf;
use std::process::ExitCode;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let dsh = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "target/debug/dsh".into());
    // The runtime starts in the workspace: a relative path would not be found.
    let dsh = std::fs::canonicalize(&dsh).map_err(|e| format!("{dsh}: {e}"))?;
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let scenario = examples.join("scenario.yaml");
    let tmp = std::env::temp_dir().join(format!("dsh-example-{}", std::process::id()));
    let workspace = tmp.join("ws");
    std::fs::create_dir_all(&workspace)?;

    let client =
        HarnessClient::spawn(ClientConfig::new(&dsh, tmp.join("home"), &workspace)).await?;
    client
        .initialize("scripted", &scenario.to_string_lossy())
        .await?;
    let result = client
        .session("example-two-step")
        .run_observed(
            vec![dsh_client::text_block("What does the sandbox say?")],
            |_, event| {
                if let Some(Event::ToolCall(call)) = event {
                    println!("tool call: {} {}", call.name, call.arguments);
                }
            },
        )
        .await?;
    client.close().await?;
    std::fs::remove_dir_all(&tmp)?;

    println!("{}", result.final_response);
    let ok = result.finish_reason.as_deref() == Some("completed")
        && result.final_response.contains("hello from the sandbox");
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
