//! One module per method family: validate params (each check with the
//! official message, in the official order), then act.

mod initialize;
pub(crate) mod prompt;
mod session;
mod working_directory;

use crate::{RpcError, Server};
use dsh_protocol::JsonObject;
use dsh_protocol::methods::{
    INITIALIZE, SESSION_RESUME, SESSION_WAIT, WORKING_DIRECTORY_GET, WORKING_DIRECTORY_SET,
};
use serde::Serialize;
use serde_json::Value;

/// Routes a method to its handler.
pub async fn dispatch(
    server: &Server,
    method: &str,
    params: &JsonObject,
) -> Result<Value, RpcError> {
    match method {
        INITIALIZE => initialize::handle(server, params),
        SESSION_RESUME => session::resume(server, params).await,
        SESSION_WAIT => session::wait(server, params).await,
        WORKING_DIRECTORY_GET => working_directory::get(server, params),
        WORKING_DIRECTORY_SET => working_directory::set(server, params),
        other => Err(RpcError::UnknownMethod(other.to_owned())),
    }
}

/// Serialises a typed result.
pub(crate) fn result<T: Serialize>(value: &T) -> Result<Value, RpcError> {
    serde_json::to_value(value).map_err(|err| RpcError::Internal(err.to_string()))
}
