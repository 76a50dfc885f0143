//! `initialize`.

use super::result;
use crate::server::Initialized;
use crate::{RpcError, Server, params};
use dsh_llm::Route;
use dsh_protocol::JsonObject;
use dsh_protocol::methods::{InitializeResult, SERVER_NAME, ServerInfo};
use serde_json::Value;
use std::path::{Component, Path, PathBuf};

const DEFAULT_PROVIDER: &str = "deepseek-official";
const DEFAULT_MODEL: &str = "deepseek-v4-flash";

/// Validates in the official order (effort, maxTokens, cwd, provider, route),
/// then commits the route for sessions created afterwards. A failed
/// re-initialize leaves the previous route in force.
pub fn handle(server: &Server, p: &JsonObject) -> Result<Value, RpcError> {
    if server.registry().shutting_down {
        return Err(RpcError::ShuttingDown);
    }
    let reasoning_effort = match p.get("reasoningEffort") {
        None => None,
        Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
        Some(_) => {
            return Err(invalid(
                "initialize reasoningEffort must be a non-empty string",
            ));
        }
    };
    let max_tokens = match p.get("maxTokens") {
        None => None,
        Some(value) => Some(
            params::positive_safe_integer(value)
                .ok_or_else(|| invalid("initialize maxTokens must be a positive safe integer"))?,
        ),
    };
    let cwd =
        params::string(p, "cwd").ok_or_else(|| invalid("initialize requires a cwd string"))?;
    let cwd = resolve(&server.inner().config.process_cwd, Path::new(cwd));
    let provider = optional_string(p, "provider", DEFAULT_PROVIDER)?;
    let model = optional_string(p, "model", DEFAULT_MODEL)?;
    let route = Route {
        provider,
        model,
        reasoning_effort,
        max_tokens,
    };
    let provider = server.inner().config.registry.mount(&route)?;
    server.registry().initialized = Some(Initialized {
        route,
        provider,
        cwd,
    });
    result(&InitializeResult {
        server_info: ServerInfo {
            name: SERVER_NAME.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        },
    })
}

fn invalid(message: &str) -> RpcError {
    RpcError::InvalidParams(message.to_owned())
}

fn optional_string(p: &JsonObject, key: &str, default: &str) -> Result<String, RpcError> {
    match p.get(key) {
        None | Some(Value::Null) => Ok(default.to_owned()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(RpcError::InvalidParams(format!(
            "initialize {key} must be a string"
        ))),
    }
}

/// Resolves `path` against `base` and normalises `.` and `..` lexically,
/// without touching the file system (a missing directory is accepted).
fn resolve(base: &Path, path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in base.join(path).components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_resolves_lexically() {
        let base = Path::new("/srv/run");
        assert_eq!(resolve(base, Path::new("ws")), PathBuf::from("/srv/run/ws"));
        assert_eq!(
            resolve(base, Path::new("../x/./y")),
            PathBuf::from("/srv/x/y")
        );
        assert_eq!(
            resolve(base, Path::new("/abs/../abs2")),
            PathBuf::from("/abs2")
        );
        assert_eq!(resolve(base, Path::new("/../..")), PathBuf::from("/"));
    }
}
