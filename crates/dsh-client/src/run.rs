use crate::{Client, ClientError, Notification};
use dsh_protocol::JsonObject;
use dsh_protocol::catalog::{Event, SessionEvent, TurnEndReason};
use dsh_protocol::message::text_of;
use dsh_protocol::methods::{
    Budget, PromptParams, PromptResult, SESSION_DELTA, SESSION_PROMPT, SESSION_USAGE_NOTIFICATION,
    SessionDeltaParams, SessionUsageParams,
};
use dsh_protocol::notifications::{SESSION_EVENT, SESSION_STATUS};
use serde::Serialize;
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
    /// The last turn's final `session.usage` (its `turnEnded` notice), when
    /// the client declared `usage` in `initialize`.
    pub usage: Option<SessionUsageParams>,
}

/// What a run shows its observer as it arrives (see [`Session::run_with`]).
#[derive(Debug, Clone, Copy)]
pub enum Update<'a> {
    /// A `session.event` of the session, and its payload typed when it fits
    /// its type.
    Event(&'a SessionEvent, Option<&'a Event>),
    /// A `session.delta` of the session (the client declared `deltas`).
    Delta(&'a SessionDeltaParams),
    /// A `session.usage` of the session (the client declared `usage`).
    Usage(&'a SessionUsageParams),
}

/// `session/prompt`'s params with dsh's budget fields.
#[derive(Serialize)]
struct BudgetedPrompt {
    #[serde(flatten)]
    prompt: PromptParams,
    #[serde(flatten)]
    budget: Budget,
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
        self.run_with(blocks, None, |update| {
            if let Update::Event(event, typed) = update {
                observe(event, typed);
            }
        })
        .await
    }

    /// [`run_blocks`](Self::run_blocks) under `budget` (`maxCostUsd`,
    /// `maxTurns`; `None`: no limit), handing every event, delta and usage
    /// notice of the session to `observe` as it arrives.
    pub async fn run_with(
        &self,
        blocks: Vec<JsonObject>,
        budget: Option<Budget>,
        mut observe: impl FnMut(Update<'_>),
    ) -> Result<RunResult, ClientError> {
        let mut notifications = self.client.subscribe();
        let prompt = PromptParams {
            session_id: self.id.clone(),
            content_blocks: blocks,
        };
        let PromptResult { message_id } = match budget {
            Some(budget) => {
                let params = BudgetedPrompt { prompt, budget };
                self.client.call(SESSION_PROMPT, &params).await?
            }
            None => self.client.call(SESSION_PROMPT, &prompt).await?,
        };
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
                        observe(Update::Event(&event, typed.as_ref()));
                        if let Some(typed) = typed {
                            outcome.see(typed);
                        }
                        events.push(event);
                    }
                }
                SESSION_DELTA if started => {
                    let delta: SessionDeltaParams =
                        serde_json::from_value(params).map_err(|err| {
                            ClientError::Protocol(format!("bad session.delta: {err}"))
                        })?;
                    observe(Update::Delta(&delta));
                }
                SESSION_USAGE_NOTIFICATION if started => {
                    let usage: SessionUsageParams =
                        serde_json::from_value(params).map_err(|err| {
                            ClientError::Protocol(format!("bad session.usage: {err}"))
                        })?;
                    observe(Update::Usage(&usage));
                    if usage.turn_ended {
                        outcome.usage = Some(usage);
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
            usage: outcome.usage,
        })
    }
}

/// What a run's events settle: the last reply's text and the last
/// `turn/end` reason.
#[derive(Default)]
struct Outcome {
    final_response: String,
    finish: Option<TurnEndReason>,
    usage: Option<SessionUsageParams>,
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
