//! `session/prompt`.

use super::result;
use crate::{RpcError, Server, params};
use dsh_agent::Agent;
use dsh_protocol::methods::PromptResult;
use dsh_protocol::{JsonObject, Request};
use dsh_session::attachments::AdmitError;
use serde_json::{Value, json};
use std::sync::Arc;

/// Validates the prompt (before anything is created), opens the session
/// lazily, enqueues the prompt and answers. The answer is queued while the
/// agent is still locked, so the receipt, `running`, `turn/start` and the
/// claim always precede it and the turn's first step always follows it.
///
/// The request is consumed: its content blocks move into the prompt
/// without a copy.
pub fn handle(server: &Server, mut request: Request) {
    let prepared = prepare(server, &mut request.params);
    match prepared {
        Ok((agent, blocks)) => {
            let accepted = agent.prompt(blocks, |message_id| {
                let message_id = message_id.to_owned();
                server.respond(&request, result(&PromptResult { message_id }));
            });
            if let Err(err) = accepted {
                server.respond(&request, Err(err.into()));
            }
        }
        Err(err) => server.respond(&request, Err(err)),
    }
}

fn prepare(server: &Server, p: &mut JsonObject) -> Result<(Arc<Agent>, Vec<Value>), RpcError> {
    server.initialized()?;
    let session_id = params::non_empty_string(p, "sessionId")
        .ok_or_else(|| {
            RpcError::InvalidParams("session/prompt requires a non-empty sessionId string".into())
        })?
        .to_owned();
    let blocks = admit_images(server, content_blocks(p)?)?;
    Ok((server.open_session(&session_id)?, blocks))
}

/// SDK image blocks (`{"type":"image","data":<base64>,"mimeType":…}`) are
/// stored by content hash and replaced by `{"type":"image","attachment":…}`.
fn admit_images(server: &Server, blocks: Vec<Value>) -> Result<Vec<Value>, RpcError> {
    blocks
        .into_iter()
        .map(
            |block| match (block.get("type").and_then(Value::as_str), block.get("data")) {
                (Some("image"), Some(data)) => {
                    let data = data
                        .as_str()
                        .ok_or(AdmitError::NotCanonical)
                        .map_err(admit_error)?;
                    let attachment = server
                        .inner()
                        .config
                        .registry
                        .attachments()
                        .admit(data)
                        .map_err(admit_error)?;
                    Ok(json!({"type": "image", "attachment": attachment}))
                }
                _ => Ok(block),
            },
        )
        .collect()
}

fn admit_error(err: AdmitError) -> RpcError {
    RpcError::InvalidParams(err.to_string())
}

/// `contentBlocks` must be an array of objects with a string `type`. Block
/// types are otherwise passed through verbatim; the provider decides what it
/// can represent.
fn content_blocks(p: &mut JsonObject) -> Result<Vec<Value>, RpcError> {
    let Some(Value::Array(blocks)) = p.get_mut("contentBlocks") else {
        return Err(RpcError::InvalidParams(
            "session/prompt requires a contentBlocks array".into(),
        ));
    };
    for (i, block) in blocks.iter().enumerate() {
        if !block.get("type").is_some_and(Value::is_string) {
            return Err(RpcError::InvalidParams(format!(
                "session/prompt contentBlocks[{i}] must be an object with a string \"type\""
            )));
        }
    }
    Ok(std::mem::take(blocks))
}
