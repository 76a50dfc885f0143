//! The servers of one runtime ([`McpHub`]), the servers one session uses
//! ([`SessionServers`]) and the tools they offer at a step ([`McpRoster`]).

use crate::config::{MAX_SERVERS, ServerConfig, Transport};
use crate::connect::Processes;
use crate::result::{ResultStore, to_output};
use crate::server::{CallError, McpServer, ServerOptions};
use crate::status::StatusSink;
use crate::tools::RemoteTool;
use dsh_protocol::catalog::{ToolErrorCode, ToolSpec};
use dsh_tools::{CallHints, ToolContext, ToolOutput};
use futures_util::future::join_all;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

/// The servers of a runtime, shared by its sessions.
#[derive(Clone)]
pub struct McpHub {
    inner: Arc<Inner>,
}

struct Inner {
    servers: Mutex<Vec<Arc<McpServer>>>,
    processes: Arc<Processes>,
    options: ServerOptions,
    store: ResultStore,
    status: Arc<dyn StatusSink>,
}

/// Why a session cannot have its servers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HubError {
    /// The runtime already runs as many servers as it may.
    #[error("MCP server \"{0}\" would exceed the limit of {MAX_SERVERS} servers per runtime")]
    TooMany(String),
}

impl McpHub {
    /// A hub with no server yet.
    pub fn new(options: ServerOptions, store: ResultStore, status: Arc<dyn StatusSink>) -> Self {
        Self {
            inner: Arc::new(Inner {
                servers: Mutex::new(Vec::new()),
                processes: Arc::default(),
                options,
                store,
                status,
            }),
        }
    }

    /// The servers of a session in `workspace`: the runtime's server of the
    /// same configuration (a stdio server's `cwd` defaulting to the
    /// workspace) when one exists, a new one (not started) otherwise.
    pub fn session(
        &self,
        configs: &[ServerConfig],
        workspace: &Path,
    ) -> Result<SessionServers, HubError> {
        let mut servers = self
            .inner
            .servers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut mine = Vec::with_capacity(configs.len());
        for config in configs {
            let mut config = config.clone();
            if let Transport::Stdio { cwd, .. } = &mut config.transport
                && cwd.is_none()
            {
                *cwd = Some(workspace.to_owned());
            }
            let existing = servers.iter().find(|s| *s.config() == config).cloned();
            let server = match existing {
                Some(server) => server,
                None => {
                    if servers.len() >= MAX_SERVERS {
                        return Err(HubError::TooMany(config.name));
                    }
                    let server = Arc::new(McpServer::new(
                        config,
                        workspace.to_owned(),
                        self.inner.options.clone(),
                        Arc::clone(&self.inner.status),
                        Arc::clone(&self.inner.processes),
                    ));
                    servers.push(Arc::clone(&server));
                    server
                }
            };
            mine.push(server);
        }
        Ok(SessionServers {
            servers: mine,
            store: self.inner.store.clone(),
            cached: Arc::new(Mutex::new(None)),
        })
    }

    /// Kills every stdio server's process group now, synchronously, and
    /// starts no server after (the runtime is exiting).
    pub fn kill_all(&self) {
        self.inner.processes.kill_all();
    }

    /// Stops every server (ends its connection, kills its process group)
    /// for good.
    pub async fn shutdown(&self) {
        self.inner.processes.kill_all();
        let servers: Vec<_> = self
            .inner
            .servers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        join_all(servers.iter().map(|server| server.stop())).await;
    }

    /// Number of servers configured so far.
    pub fn len(&self) -> usize {
        self.inner
            .servers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether no server is configured.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The servers one session uses.
#[derive(Clone)]
pub struct SessionServers {
    servers: Vec<Arc<McpServer>>,
    store: ResultStore,
    cached: Arc<Mutex<Option<Arc<McpRoster>>>>,
}

impl SessionServers {
    /// Whether the session uses no server.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// The tools of every server for the next step (servers start here,
    /// lazily, concurrently). The same `Arc` while nothing changed.
    pub async fn roster(&self) -> Arc<McpRoster> {
        // Servers start inside these futures: polled together, they start
        // at once rather than one after another.
        let lists = join_all(self.servers.iter().map(|server| async move {
            let tools = server.tools().await;
            (Arc::clone(server), tools)
        }))
        .await;
        let key: Vec<u64> = self.servers.iter().map(|s| s.generation()).collect();
        let mut cached = self.cached.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(roster) = cached.as_ref()
            && roster.key == key
        {
            return Arc::clone(roster);
        }
        let mut specs = Vec::new();
        let mut tools = HashMap::new();
        for (server, list) in lists {
            for tool in list.iter() {
                specs.push(tool.spec.clone());
                tools.insert(
                    tool.spec.name.clone(),
                    McpTool {
                        server: Arc::clone(&server),
                        tool: Arc::clone(tool),
                        store: self.store.clone(),
                    },
                );
            }
        }
        let roster = Arc::new(McpRoster {
            key,
            specs,
            tools,
            servers: self.servers.clone(),
            store: self.store.clone(),
        });
        *cached = Some(Arc::clone(&roster));
        roster
    }
}

/// The MCP tools of a session at one step.
pub struct McpRoster {
    key: Vec<u64>,
    specs: Vec<ToolSpec>,
    tools: HashMap<String, McpTool>,
    servers: Vec<Arc<McpServer>>,
    store: ResultStore,
}

impl McpRoster {
    /// What the model is told, server by server, each in name order.
    pub fn specs(&self) -> &[ToolSpec] {
        &self.specs
    }

    /// The tool of this full name.
    pub fn get(&self, name: &str) -> Option<&McpTool> {
        self.tools.get(name)
    }

    /// Whether `name` is `mcp__<server>__<tool>` of one of the session's
    /// servers (listed at this step or not).
    pub fn names_a_server(&self, name: &str) -> bool {
        self.server_of(name).is_some()
    }

    fn server_of<'a>(&'a self, name: &'a str) -> Option<(&'a Arc<McpServer>, &'a str)> {
        let rest = name.strip_prefix("mcp__")?;
        self.servers.iter().find_map(|server| {
            let tool = rest.strip_prefix(server.name())?.strip_prefix("__")?;
            (!tool.is_empty()).then_some((server, tool))
        })
    }

    /// Runs a call of `name`: a tool listed at this step, or one of a
    /// session's server that was not listed (its server could not start at
    /// the step, or its list changed): the server is started if it may be,
    /// and the call fails with the reason when it still cannot be made.
    pub async fn call(&self, name: &str, arguments: &str, ctx: ToolContext) -> ToolOutput {
        if let Some(tool) = self.tools.get(name) {
            return tool.call(arguments, ctx).await;
        }
        let Some((server, remote)) = self.server_of(name) else {
            return dsh_tools::unknown_tool(name);
        };
        match server.find(remote, &ctx.cancel).await {
            Ok(tool) => {
                let tool = McpTool {
                    server: Arc::clone(server),
                    tool,
                    store: self.store.clone(),
                };
                tool.call(arguments, ctx).await
            }
            Err(why) => ToolOutput::failure(format!(
                "Error: MCP server \"{}\" {why} (tool \"{remote}\")",
                server.name()
            )),
        }
    }
}

/// One tool of one server.
pub struct McpTool {
    server: Arc<McpServer>,
    tool: Arc<RemoteTool>,
    store: ResultStore,
}

impl McpTool {
    /// Runs one call: arguments checked against the schema, the approval
    /// path, the server's answer as a tool result. Every failure is an
    /// error result starting `Error: MCP server "<name>"` (or naming the
    /// arguments or the approval).
    pub async fn call(&self, arguments: &str, ctx: ToolContext) -> ToolOutput {
        let name = &self.tool.spec.name;
        let raw = if arguments.trim().is_empty() {
            "{}"
        } else {
            arguments
        };
        let args = match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(map)) => map,
            _ => {
                return ToolOutput::failure(
                    "Error: invalid arguments: the arguments must be a JSON object",
                )
                .with_error(ToolErrorCode::InvalidArgs);
            }
        };
        let value = Value::Object(args);
        let problems = dsh_tools::check_arguments(&self.tool.spec.parameters, &value);
        if !problems.is_empty() {
            return ToolOutput::failure(format!(
                "Error: invalid arguments: {}",
                problems.join("; ")
            ))
            .with_error(ToolErrorCode::InvalidArgs);
        }
        let hints = CallHints {
            read_only: self.tool.read_only,
            destructive: self.tool.destructive,
        };
        if let Some(refused) = dsh_tools::check_call(&ctx, name, hints, &value).await {
            return refused;
        }
        let Value::Object(args) = value else {
            return ToolOutput::failure(
                "Error: invalid arguments: the arguments must be a JSON object",
            );
        };
        match self.server.call(&self.tool.remote, args, &ctx.cancel).await {
            Ok(result) => to_output(name, result, &self.store),
            Err(CallError::Cancelled) => {
                ToolOutput::failure("Error: tool call aborted").with_error(ToolErrorCode::Aborted)
            }
            Err(err) => ToolOutput::failure(format!(
                "Error: MCP server \"{}\" {err} (tool \"{}\")",
                self.server.name(),
                self.tool.remote
            )),
        }
    }
}
