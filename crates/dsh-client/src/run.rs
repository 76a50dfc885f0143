use crate::{ClientError, HarnessClient, Notification};
use dsh_protocol::methods::SESSION_PROMPT;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

/// A session of a [`HarnessClient`].
pub struct Session<'a> {
    client: &'a HarnessClient,
    id: String,
}

/// What one [`Session::run`] collected.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// The session.
    pub session_id: String,
    /// Text blocks of the last `assistant/message`, joined.
    pub final_response: String,
    /// `data.reason.kind` of the last `turn/end`.
    pub finish_reason: Option<String>,
    /// The session's events from the prompt's receipt to `idle`.
    pub events: Vec<Value>,
}

impl<'a> Session<'a> {
    pub(crate) fn new(client: &'a HarnessClient, id: String) -> Self {
        Self { client, id }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Sends `text` as a prompt and collects the session's events from the
    /// prompt's receipt until the session is `idle` again.
    pub async fn run(&self, text: &str) -> Result<RunResult, ClientError> {
        self.run_blocks(vec![json!({"type": "text", "text": text})])
            .await
    }

    /// [`run`](Self::run) with explicit content blocks.
    pub async fn run_blocks(&self, blocks: Vec<Value>) -> Result<RunResult, ClientError> {
        let mut notifications = self.client.subscribe();
        let answer = self
            .client
            .request(
                SESSION_PROMPT,
                Some(json!({"sessionId": self.id, "contentBlocks": blocks})),
            )
            .await?;
        let message_id = answer["messageId"]
            .as_str()
            .ok_or_else(|| ClientError::Protocol(format!("no messageId in {answer}")))?
            .to_owned();
        let mut events = Vec::new();
        let mut started = false;
        loop {
            let Notification { method, params } = match notifications.recv().await {
                Ok(notification) => notification,
                Err(RecvError::Lagged(n)) => {
                    return Err(ClientError::Protocol(format!(
                        "{n} notifications were missed"
                    )));
                }
                Err(RecvError::Closed) => return Err(self.client_closed()),
            };
            if params["sessionId"] != self.id.as_str() {
                continue;
            }
            match method.as_str() {
                "session.event" => {
                    let event = &params["event"];
                    let receipt = event["type"] == "agent/inbox/spliced"
                        && event["data"]["inserted"]
                            .as_array()
                            .is_some_and(|inserted| {
                                inserted.iter().any(|m| m["id"] == message_id.as_str())
                            });
                    started |= receipt;
                    if started {
                        events.push(event.clone());
                    }
                }
                "session.status" if started && params["status"] == "idle" => break,
                _ => {}
            }
        }
        Ok(RunResult {
            session_id: self.id.clone(),
            final_response: final_response(&events),
            finish_reason: events
                .iter()
                .rev()
                .find(|e| e["type"] == "turn/end")
                .and_then(|e| e["data"]["reason"]["kind"].as_str())
                .map(str::to_owned),
            events,
        })
    }

    fn client_closed(&self) -> ClientError {
        ClientError::Closed {
            stderr: String::new(),
        }
    }
}

fn final_response(events: &[Value]) -> String {
    events
        .iter()
        .rev()
        .find(|e| e["type"] == "assistant/message")
        .and_then(|e| e["data"]["message"]["content"].as_array())
        .map(|blocks| {
            blocks
                .iter()
                .filter(|b| b["type"] == "text")
                .filter_map(|b| b["text"].as_str())
                .collect()
        })
        .unwrap_or_default()
}
