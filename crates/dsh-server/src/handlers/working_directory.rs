//! `session/working-directory/get` and `/set`.

use crate::error::RpcError;
use crate::server::Server;
use dsh_protocol::JsonObject;
use dsh_protocol::methods::{SessionParams, SetWorkingDirectoryParams, WorkingDirectoryResult};
use std::path::Path;

fn cwd_result(cwd: &Path) -> WorkingDirectoryResult {
    WorkingDirectoryResult {
        cwd: cwd.to_string_lossy().into_owned(),
    }
}

/// `get`: the effective directory. An unknown id creates the session.
pub fn get(server: &Server, params: JsonObject) -> Result<WorkingDirectoryResult, RpcError> {
    let SessionParams { session_id } = SessionParams::validate_working_directory(params)?;
    let agent = server.open_session(&session_id)?;
    Ok(cwd_result(&agent.working_directory()))
}

/// `set`: change the effective directory. An unknown id creates the session.
pub fn set(server: &Server, params: JsonObject) -> Result<WorkingDirectoryResult, RpcError> {
    let SetWorkingDirectoryParams { session_id, path } =
        SetWorkingDirectoryParams::validate(params)?;
    let agent = server.open_session(&session_id)?;
    Ok(cwd_result(&agent.set_working_directory(&path)?))
}
