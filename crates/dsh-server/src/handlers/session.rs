//! `session/resume` and `session/wait`.

use super::result;
use crate::{RpcError, Server, params};
use dsh_protocol::JsonObject;
use dsh_protocol::methods::EmptyResult;
use serde_json::Value;

/// `session/resume`: `{}` once the stored session is open again.
pub fn resume(server: &Server, p: &JsonObject) -> Result<Value, RpcError> {
    let session_id = params::non_empty_string(p, "sessionId").ok_or_else(|| {
        RpcError::InvalidParams("session/resume requires a non-empty sessionId string".into())
    })?;
    server.resume_session(session_id)?;
    result(&EmptyResult {})
}

/// `session/wait`: `{}` once the session is idle.
pub async fn wait(server: &Server, p: &JsonObject) -> Result<Value, RpcError> {
    server.initialized()?;
    let session_id = match p.get("sessionId") {
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
        None => "undefined".to_owned(),
    };
    let agent = server
        .session(&session_id)
        .ok_or(RpcError::UnknownSession(session_id))?;
    agent.wait_idle().await;
    result(&EmptyResult {})
}
