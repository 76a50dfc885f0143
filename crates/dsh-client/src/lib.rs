//! A Rust client for the DeepSeek Harness SDK protocol.
//!
//! [`Client`] talks newline-delimited JSON-RPC to a runtime over any pair of
//! byte streams, matches responses to requests and fans notifications out to
//! subscribers. [`HarnessClient`] launches a runtime (`dsh --profile sdk` by
//! default) as a subprocess with an explicit `DSH_HOME` and connects a
//! [`Client`] to its stdio. [`Session::run`] sends a prompt and collects the
//! session's events from the prompt's receipt to the next `idle`, exactly as
//! the official Python SDK's `Session.run` does.
//!
//! ```no_run
//! # async fn demo() -> Result<(), dsh_client::ClientError> {
//! use dsh_client::{ClientConfig, HarnessClient};
//! let client = HarnessClient::spawn(ClientConfig::new("dsh", "/tmp/dsh-home", "/tmp/ws")).await?;
//! client.initialize("scripted", "echo").await?;
//! let result = client.session("session-1").run("Say hi").await?;
//! assert_eq!(result.final_response, "Say hi");
//! client.close().await?;
//! # Ok(()) }
//! ```

mod client;
mod run;

pub use client::{ApprovalHandler, Client, ClientConfig, ClientError, HarnessClient, Notification};
pub use run::{RunResult, Session, Update, text_block};
