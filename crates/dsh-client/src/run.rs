use crate::{Client, ClientError, Notification};
use dsh_protocol::JsonObject;
use dsh_protocol::catalog::{Event, SessionEvent, TurnEndReason};
use dsh_protocol::message::text_of;
use dsh_protocol::methods::{PromptParams, PromptResult, SESSION_PROMPT};
use dsh_protocol::notifications::{SESSION_EVENT, SESSION_STATUS};
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
    /// `data.reason` of the last `turn/end`: its kind and, when the turn
    /// failed, its error (`code`, `message`).
    pub finish: Option<TurnEndReason>,
    /// The session's events from the prompt's receipt to `idle`.
    pub events: Vec<SessionEvent>,
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
        self.run_observed(blocks, |_, _| {}).await
    }

    /// [`run_blocks`](Self::run_blocks), handing every collected event to
    /// `observe` as it arrives.
    pub async fn run_observed(
        &self,
        blocks: Vec<JsonObject>,
        mut observe: impl FnMut(&SessionEvent, Option<&Event>),
    ) -> Result<RunResult, ClientError> {
        let mut notifications = self.client.subscribe();
        let params = PromptParams {
            session_id: self.id.clone(),
            content_blocks: blocks,
        };
        let PromptResult { message_id } = self.client.call(SESSION_PROMPT, &params).await?;
        let mut events = Vec::new();
        let mut outcome = Outcome::default();
        let mut started = false;
        loop {
            let Notification { method, mut params } = match notifications.recv().await {
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
                SESSION_EVENT => {
                    let event: SessionEvent = serde_json::from_value(params["event"].take())
                        .map_err(|err| {
                            ClientError::Protocol(format!("bad session.event: {err}"))
                        })?;
                    let typed = event.typed().ok();
                    started |= matches!(&typed, Some(Event::InboxSpliced(spliced))
                        if spliced.inserted.iter().any(|m| m.id == message_id));
                    if started {
                        observe(&event, typed.as_ref());
                        if let Some(typed) = typed {
                            outcome.see(typed);
                        }
                        events.push(event);
                    }
                }
                SESSION_STATUS if started && params["status"] == "idle" => break,
                _ => {}
            }
        }
        Ok(RunResult {
            session_id: self.id.clone(),
            final_response: outcome.final_response,
            finish_reason: outcome
                .finish
                .as_ref()
                .and_then(TurnEndReason::kind)
                .map(str::to_owned),
            finish: outcome.finish,
            events,
        })
    }
}

/// What a run's events settle: the last reply's text and the last
/// `turn/end` reason.
#[derive(Default)]
struct Outcome {
    final_response: String,
    finish: Option<TurnEndReason>,
}

impl Outcome {
    fn see(&mut self, event: Event) {
        match event {
            Event::AssistantMessage(reply) => {
                self.final_response = text_of(&reply.message.content).collect();
            }
            Event::TurnEnd(end) => self.finish = Some(end.reason),
            _ => {}
        }
    }
}

/// A `text` content block.
pub fn text_block(text: &str) -> JsonObject {
    let mut block = JsonObject::new();
    block.insert("type".into(), "text".into());
    block.insert("text".into(), text.into());
    block
}
