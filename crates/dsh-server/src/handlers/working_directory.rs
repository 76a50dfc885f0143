//! `session/working-directory/get` and `/set`.

use super::result;
use crate::{RpcError, Server, params};
use dsh_protocol::JsonObject;
use dsh_protocol::methods::WorkingDirectoryResult;
use serde_json::Value;
use std::path::Path;

fn session_id(p: &JsonObject) -> Result<&str, RpcError> {
    params::non_empty_string(p, "sessionId").ok_or_else(|| {
        RpcError::InvalidParams("working-directory requests require a non-empty sessionId".into())
    })
}

fn cwd_result(cwd: &Path) -> Result<Value, RpcError> {
    result(&WorkingDirectoryResult {
        cwd: cwd.to_string_lossy().into_owned(),
    })
}

/// `get`: the effective directory. An unknown id creates the session.
pub fn get(server: &Server, p: &JsonObject) -> Result<Value, RpcError> {
    let id = session_id(p)?;
    let agent = server.open_session(id)?;
    cwd_result(&agent.working_directory())
}

/// `set`: change the effective directory. An unknown id creates the session.
pub fn set(server: &Server, p: &JsonObject) -> Result<Value, RpcError> {
    let id = session_id(p)?;
    let path = params::string(p, "path").ok_or_else(|| {
        RpcError::InvalidParams("working-directory set requires a path string".into())
    })?;
    let agent = server.open_session(id)?;
    cwd_result(&agent.set_working_directory(path)?)
}
