//! `session/resume` and `session/wait`.

use crate::error::RpcError;
use crate::server::Server;
use dsh_protocol::JsonObject;
use dsh_protocol::methods::{EmptyResult, SessionParams};

/// `session/resume`: `{}` once the stored session is open again.
pub async fn resume(server: &Server, params: JsonObject) -> Result<EmptyResult, RpcError> {
    let SessionParams { session_id } = SessionParams::validate_resume(params)?;
    server.resume_session(&session_id).await?;
    Ok(EmptyResult {})
}

/// `session/wait`: `{}` once the session and all its descendants are idle.
pub async fn wait(server: &Server, params: JsonObject) -> Result<EmptyResult, RpcError> {
    server.initialized()?;
    let SessionParams { session_id } = SessionParams::validate_wait(params)?;
    let Some(agent) = server.session(&session_id) else {
        // A shutdown may have closed every session since the check above:
        // that is the answer then, not an unknown session.
        server.initialized()?;
        return Err(RpcError::UnknownSession(session_id));
    };
    agent.wait_tree_idle().await;
    Ok(EmptyResult {})
}
