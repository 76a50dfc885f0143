//! `session/resume`, `session/wait` and `session/cancel`.

use crate::error::RpcError;
use crate::server::Server;
use dsh_protocol::JsonObject;
use dsh_protocol::methods::{CancelParams, CancelResult, EmptyResult, SessionParams};

/// `session/resume`: `{}` once the stored session is open again.
pub async fn resume(server: &Server, params: JsonObject) -> Result<EmptyResult, RpcError> {
    let SessionParams { session_id } = SessionParams::validate_resume(params)?;
    server.resume_session(&session_id).await?;
    Ok(EmptyResult {})
}

/// `session/wait`: `{}` once the session and all its descendants are idle,
/// handed to `answer` before the idle that released it begins more work
/// (a goal's next round).
pub async fn wait(
    server: &Server,
    params: JsonObject,
    answer: impl FnOnce(Result<EmptyResult, RpcError>),
) {
    let agent = match waited(server, params) {
        Ok(agent) => agent,
        Err(err) => return answer(Err(err)),
    };
    agent
        .wait_tree_idle_then(|| answer(Ok(EmptyResult {})))
        .await;
}

/// The session a `session/wait` waits for.
fn waited(
    server: &Server,
    params: JsonObject,
) -> Result<std::sync::Arc<dsh_agent::Agent>, RpcError> {
    server.initialized()?;
    let SessionParams { session_id } = SessionParams::validate_wait(params)?;
    match server.session(&session_id) {
        Some(agent) => Ok(agent),
        // A shutdown may have closed every session since the check above:
        // that is the answer then, not an unknown session.
        None => {
            server.initialized()?;
            Err(RpcError::UnknownSession(session_id))
        }
    }
}

/// `session/cancel` (dsh's extension): stops the session's running turn
/// (see [`dsh_agent::Agent::cancel`]); `{turn: null}` when none ran.
pub fn cancel(server: &Server, params: JsonObject) -> Result<CancelResult, RpcError> {
    server.initialized()?;
    let CancelParams {
        session_id,
        drop_queued,
        keep_jobs,
    } = CancelParams::validate(params)?;
    let agent = server
        .session(&session_id)
        .ok_or(RpcError::UnknownSession(session_id))?;
    let (turn, dropped_prompts) = agent.cancel(drop_queued, keep_jobs);
    Ok(CancelResult {
        turn,
        dropped_prompts,
    })
}
