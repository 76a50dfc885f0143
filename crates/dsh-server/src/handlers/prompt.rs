//! `session/prompt`.

use crate::error::RpcError;
use crate::server::Server;
use dsh_agent::Agent;
use dsh_protocol::methods::{Budget, PromptParams, PromptResult};
use dsh_protocol::{JsonObject, RequestId};
use dsh_session::attachments::AdmitError;
use serde_json::{Value, json};
use std::sync::Arc;

/// Validates the prompt (before anything is created), opens the session
/// lazily, enqueues the prompt and answers request `id`. The answer is
/// queued while the agent is still locked, so the receipt, `running`,
/// `turn/start` and the claim always precede it and the turn's first step
/// always follows it.
///
/// The params are consumed: their content blocks move into the prompt
/// without a copy.
pub fn handle(server: &Server, id: &RequestId, params: JsonObject) {
    match prepare(server, params) {
        Ok((agent, blocks, budget)) => {
            let accepted = agent.prompt_within(blocks, budget, |message_id| {
                let message_id = message_id.to_owned();
                server.respond(id, Ok(PromptResult { message_id }));
            });
            if let Err(err) = accepted {
                server.respond_error(id, err.into());
            }
        }
        Err(err) => server.respond_error(id, err),
    }
}

/// What a valid prompt is made of: its session, its blocks, its budget.
type Prepared = (Arc<Agent>, Vec<Value>, Option<Budget>);

/// The initialized check comes before the params checks (unlike the other
/// session methods); dsh's budget fields (`maxCostUsd`, `maxTurns`) are
/// checked after the official ones.
fn prepare(server: &Server, mut params: JsonObject) -> Result<Prepared, RpcError> {
    server.initialized()?;
    let budget = Budget::take(&mut params);
    let PromptParams {
        session_id,
        content_blocks,
    } = PromptParams::validate(params)?;
    let budget = budget?;
    let blocks = admit_images(server, content_blocks)?;
    Ok((server.open_session(&session_id)?, blocks, budget))
}

/// SDK image blocks (`{"type":"image","data":<base64>,"mimeType":…}`) are
/// stored by content hash and replaced by `{"type":"image","attachment":…}`.
/// Other block types are passed through verbatim; the provider decides what
/// it can represent.
fn admit_images(server: &Server, blocks: Vec<JsonObject>) -> Result<Vec<Value>, RpcError> {
    blocks
        .into_iter()
        .map(
            |block| match (block.get("type").and_then(Value::as_str), block.get("data")) {
                (Some("image"), Some(data)) => {
                    let data = data.as_str().ok_or(AdmitError::NotCanonical)?;
                    let attachment = server.inner().config.registry.attachments().admit(data)?;
                    Ok(json!({"type": "image", "attachment": attachment}))
                }
                _ => Ok(Value::Object(block)),
            },
        )
        .collect()
}
