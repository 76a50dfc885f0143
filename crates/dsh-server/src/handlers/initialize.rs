//! `initialize`.

use crate::error::RpcError;
use crate::server::Server;
use crate::state::{ApprovalSettings, Initialized};
use dsh_llm::Route;
use dsh_protocol::JsonObject;
use dsh_protocol::methods::{
    ExtensionError, InitializeExtensions, InitializeParams, InitializeResult, PROTOCOL_VERSION,
    RuntimeCapabilities, SERVER_NAME, ServerInfo,
};
use dsh_tools::DEFAULT_APPROVAL_TIMEOUT;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Validates (after the shutting-down check: dsh's extension fields, see
/// [`InitializeExtensions::take`], then [`InitializeParams::validate`]),
/// mounts the route, then commits it and the approval settings for
/// sessions created afterwards. A failed re-initialize leaves the previous
/// route in force. The result names the protocol version and the
/// capabilities only to a client that sent `protocolVersion` or
/// `clientCapabilities`.
pub fn handle(server: &Server, mut params: JsonObject) -> Result<InitializeResult, RpcError> {
    if server.registry().shutting_down {
        return Err(RpcError::ShuttingDown);
    }
    let extensions = InitializeExtensions::take(&mut params)?;
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
    let mcp_servers = match &extensions.mcp_servers {
        None => server.inner().config.mcp.servers.clone(),
        Some(list) => {
            let lookup = |name: &str| std::env::var(name).ok();
            let client = dsh_mcp::config::from_list(list, &lookup)
                .map_err(|err| ExtensionError::McpServers(err.to_string()))?;
            dsh_mcp::config::merge([client, server.inner().config.mcp.servers.clone()])
        }
    };
    let mut hooks = server.inner().config.hooks.launch.clone();
    if let Some(added) = &extensions.hooks {
        hooks
            .add_hooks(dsh_hooks::SourceKind::Initialize, None, added)
            .map_err(|err| ExtensionError::Hooks(err.to_string()))?;
    }
    let provider = server.inner().config.registry.mount(&route)?;
    let asks_client = extensions
        .client_capabilities
        .is_some_and(|capabilities| capabilities.approvals);
    let mut rules = server.inner().config.approval_rules.clone();
    if let Some(added) = extensions.approval_rules.clone() {
        rules.allow.extend(added.allow);
        rules.deny.extend(added.deny);
    }
    let approvals = ApprovalSettings {
        rules,
        client: asks_client.then(|| Arc::clone(&server.inner().client)),
        timeout: match extensions.approval_timeout_ms {
            None => Some(DEFAULT_APPROVAL_TIMEOUT),
            Some(0) => None,
            Some(ms) => Some(Duration::from_millis(ms)),
        },
    };
    let wants = extensions.client_capabilities.unwrap_or_default();
    let shared = &server.inner().wants;
    shared.usage.store(wants.usage, Ordering::Relaxed);
    shared.deltas.store(wants.deltas, Ordering::Relaxed);
    server.registry().initialized = Some(Initialized {
        route,
        provider,
        cwd,
        approvals,
        prices: Arc::new(extensions.prices.clone().unwrap_or_default()),
        mcp_servers: Arc::new(mcp_servers),
        project_mcp: extensions.project_mcp == Some(true),
        hooks: Arc::new(hooks),
        project_hooks: extensions.project_hooks == Some(true),
    });
    let extended = extensions.any();
    Ok(InitializeResult {
        server_info: ServerInfo {
            name: SERVER_NAME.to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
        },
        protocol_version: extended.then(|| PROTOCOL_VERSION.to_owned()),
        capabilities: extended.then_some(RuntimeCapabilities::ALL),
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
