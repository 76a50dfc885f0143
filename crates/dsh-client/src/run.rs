use crate::{Client, ClientError, Notification};
use dsh_protocol::JsonObject;
use dsh_protocol::methods::{PromptParams, PromptResult, SESSION_PROMPT};
use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

/// A session of a [`Client`].
pub struct Session<'a> {
    client: &'a Client,
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

impl RunResult {
    /// `data.reason` of the last `turn/end`: its `kind` and, when the turn
    /// failed, its `error` (`code`, `message`).
    pub fn finish(&self) -> Option<&Value> {
        self.events
            .iter()
            .rev()
            .find(|e| e["type"] == "turn/end")
            .map(|e| &e["data"]["reason"])
    }
}

impl<'a> Session<'a> {
    pub(crate) fn new(client: &'a Client, id: String) -> Self {
        Self { client, id }
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Sends `text` as a prompt and collects the session's events from the
    /// prompt's receipt until the session is `idle` again.
    pub async fn run(&self, text: &str) -> Result<RunResult, ClientError> {
        self.run_blocks(vec![text_block(text)]).await
    }

    /// [`run`](Self::run) with explicit content blocks.
    pub async fn run_blocks(&self, blocks: Vec<JsonObject>) -> Result<RunResult, ClientError> {
        self.run_observed(blocks, |_| {}).await
    }

    /// [`run_blocks`](Self::run_blocks), handing every collected event to
    /// `observe` as it arrives.
    pub async fn run_observed(
        &self,
        blocks: Vec<JsonObject>,
        mut observe: impl FnMut(&Value),
    ) -> Result<RunResult, ClientError> {
        let mut notifications = self.client.subscribe();
        let params = PromptParams {
            session_id: self.id.clone(),
            content_blocks: blocks,
        };
        let PromptResult { message_id } = self.client.call(SESSION_PROMPT, &params).await?;
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
                Err(RecvError::Closed) => return Err(self.client.closed()),
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
                        observe(event);
                        events.push(event.clone());
                    }
                }
                "session.status" if started && params["status"] == "idle" => break,
                _ => {}
            }
        }
        let mut result = RunResult {
            session_id: self.id.clone(),
            final_response: final_response(&events),
            finish_reason: None,
            events,
        };
        result.finish_reason = result
            .finish()
            .and_then(|reason| reason["kind"].as_str())
            .map(str::to_owned);
        Ok(result)
    }
}

/// A `text` content block.
pub fn text_block(text: &str) -> JsonObject {
    let mut block = JsonObject::new();
    block.insert("type".into(), "text".into());
    block.insert("text".into(), text.into());
    block
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
