//! `session/resume` and `session/wait`.

use super::result;
use crate::{RpcError, Server, params};
use dsh_protocol::JsonObject;
use dsh_protocol::methods::EmptyResult;
use serde_json::Value;

/// `session/resume`: `{}` once the stored session is open again.
pub async fn resume(server: &Server, p: &JsonObject) -> Result<Value, RpcError> {
    let session_id = params::non_empty_string(p, "sessionId").ok_or_else(|| {
        RpcError::InvalidParams("session/resume requires a non-empty sessionId string".into())
    })?;
    server.resume_session(session_id).await?;
    result(&EmptyResult {})
}

/// `session/wait`: `{}` once the session is idle.
pub async fn wait(server: &Server, p: &JsonObject) -> Result<Value, RpcError> {
    server.initialized()?;
    // Any string, even empty, is looked up (the official runtime answers
    // `unknown SDK session: ` for `""`).
    let session_id = params::string(p, "sessionId").ok_or_else(|| {
        RpcError::InvalidParams("session/wait requires a sessionId string".into())
    })?;
    let agent = server
        .session(session_id)
        .ok_or_else(|| RpcError::UnknownSession(session_id.to_owned()))?;
    agent.wait_idle().await;
    result(&EmptyResult {})
}
