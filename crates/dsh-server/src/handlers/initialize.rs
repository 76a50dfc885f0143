//! `initialize`.

use crate::error::RpcError;
use crate::server::Server;
use crate::state::Initialized;
use dsh_llm::Route;
use dsh_protocol::JsonObject;
use dsh_protocol::methods::{InitializeParams, InitializeResult, SERVER_NAME, ServerInfo};
use std::path::{Component, Path, PathBuf};

/// Validates (after the shutting-down check, see
/// [`InitializeParams::validate`]), mounts the route, then commits it for
/// sessions created afterwards. A failed re-initialize leaves the previous
/// route in force.
pub fn handle(server: &Server, params: JsonObject) -> Result<InitializeResult, RpcError> {
    if server.registry().shutting_down {
        return Err(RpcError::ShuttingDown);
    }
    let InitializeParams {
        cwd,
        provider,
        model,
        reasoning_effort,
        max_tokens,
    } = InitializeParams::validate(params)?;
    let cwd = resolve(&server.inner().config.process_cwd, Path::new(&cwd));
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
    Ok(InitializeResult {
        server_info: ServerInfo {
            name: SERVER_NAME.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        },
    })
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
