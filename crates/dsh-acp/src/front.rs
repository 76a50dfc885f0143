//! The ACP agent: every method a client sends, answered over the
//! sessions of this connection.

use crate::content::sdk_blocks;
use crate::editor::FsCapabilities;
use crate::error::AcpError;
use crate::host::{Host, HostSpec};
use crate::mcp_servers::sdk_servers;
use crate::options::{Settings, parse_mode};
use crate::session::{AcpSession, Open, Outcome, SessionSpec};
use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use dsh_agent::PermissionMode;
use dsh_protocol::methods::ListParams;
use dsh_server::ServerConfig;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// The name `initialize` answers, as the official `acp` profile does.
pub const AGENT_NAME: &str = "deepseek-harness-acp";
/// The version `initialize` answers (the official profile's).
pub const AGENT_VERSION: &str = "0.0.1";
/// The ACP protocol version served.
pub const PROTOCOL_VERSION: u64 = 1;

/// What `dsh acp` is started with.
pub struct AcpConfig {
    /// The SDK server configuration every session's server is made from.
    pub server: ServerConfig,
    /// The provider new sessions use.
    pub provider: String,
    /// The model new sessions use.
    pub model: String,
}

/// The connection's state: its sessions and how to make more.
pub struct Front {
    base: Arc<ServerConfig>,
    defaults: Settings,
    sessions: Mutex<HashMap<String, Arc<AcpSession>>>,
    /// A server for requests on no session (`session/list`), started on
    /// first need.
    lobby: tokio::sync::Mutex<Option<Host>>,
    /// The file capabilities the client declared.
    fs: Mutex<FsCapabilities>,
}

impl Front {
    /// The front of a connection started with `config`.
    pub fn new(config: AcpConfig) -> Self {
        Self {
            base: Arc::new(config.server),
            defaults: Settings {
                provider: config.provider,
                model: config.model,
                effort: None,
                mode: PermissionMode::WorkspaceWrite,
            },
            sessions: Mutex::default(),
            lobby: tokio::sync::Mutex::default(),
            fs: Mutex::default(),
        }
    }

    /// The `initialize` result; notes the client's `fs` capabilities for
    /// the sessions opened afterwards.
    pub fn initialize(&self, params: &Value) -> Value {
        if let Ok(mut fs) = self.fs.lock() {
            *fs = FsCapabilities::of(params);
        }
        let version = params["protocolVersion"]
            .as_u64()
            .unwrap_or(PROTOCOL_VERSION)
            .min(PROTOCOL_VERSION);
        json!({
            "protocolVersion": version,
            "agentInfo": {"name": AGENT_NAME, "version": AGENT_VERSION},
            "agentCapabilities": {
                "loadSession": true,
                "mcpCapabilities": {"http": true},
                "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
                "sessionCapabilities": {"close": {}, "list": {}, "resume": {}},
            },
            "authMethods": [],
        })
    }

    fn session(&self, id: &str) -> Result<Arc<AcpSession>, AcpError> {
        self.sessions
            .lock()
            .ok()
            .and_then(|sessions| sessions.get(id).cloned())
            .ok_or_else(|| AcpError::UnknownSession(id.to_owned()))
    }

    /// `session/new`, `session/load`, `session/resume`: the session's
    /// `{sessionId?, configOptions, modes}`.
    pub async fn open(
        &self,
        connection: ConnectionTo<Client>,
        method: &str,
        params: &Value,
        open: Open,
    ) -> Result<Value, AcpError> {
        let cwd = workspace(method, params)?;
        let servers = params["mcpServers"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mcp_servers = sdk_servers(servers)?;
        let (id, new) = match open {
            Open::New => (uuid::Uuid::new_v4().to_string(), true),
            _ => {
                let id = params["sessionId"]
                    .as_str()
                    .filter(|id| !id.is_empty())
                    .ok_or_else(|| {
                        AcpError::InvalidParams(format!("{method} requires a sessionId string"))
                    })?;
                (id.to_owned(), false)
            }
        };
        if !new && self.session(&id).is_ok() {
            return Err(AcpError::InvalidParams(format!(
                "session is already active: {id}"
            )));
        }
        // A stored session goes on with the route it last ran with.
        let settings = match open {
            Open::New => self.defaults.clone(),
            Open::Resume | Open::Load => self
                .stored_settings(&id)
                .await
                .unwrap_or_else(|| self.defaults.clone()),
        };
        let spec = SessionSpec {
            id: id.clone(),
            cwd,
            settings: settings.clone(),
            mcp_servers,
            fs: self.fs.lock().map(|fs| *fs).unwrap_or_default(),
        };
        let session =
            AcpSession::open(spec, Arc::clone(&self.base), connection, open, method).await?;
        if let Ok(mut sessions) = self.sessions.lock() {
            sessions.insert(id.clone(), session);
        }
        Ok(describe(new.then_some(id.as_str()), &settings))
    }

    /// `session/prompt`: the `{stopReason}` once the turn is over.
    pub async fn prompt(&self, params: &Value) -> Result<Value, AcpError> {
        let session = self.session(session_id(params)?)?;
        let prompt = params["prompt"].as_array().ok_or_else(|| {
            AcpError::InvalidParams("session/prompt requires a prompt list".into())
        })?;
        let blocks = sdk_blocks(prompt)?;
        match session.prompt(blocks).await? {
            Outcome::Stopped(reason) => Ok(json!({"stopReason": reason})),
            Outcome::Failed(message) => Err(AcpError::TurnFailed(message)),
        }
    }

    /// `session/cancel`.
    pub async fn cancel(&self, params: &Value) -> Result<(), AcpError> {
        self.session(session_id(params)?)?.cancel().await
    }

    /// `session/close`.
    pub async fn close(&self, params: &Value) -> Result<Value, AcpError> {
        let id = session_id(params)?;
        let session = self
            .sessions
            .lock()
            .ok()
            .and_then(|mut sessions| sessions.remove(id))
            .ok_or_else(|| AcpError::UnknownSession(id.to_owned()))?;
        session.close().await;
        Ok(json!({}))
    }

    /// `session/set_config_option`: every option after the change.
    pub fn set_config_option(&self, params: &Value) -> Result<Value, AcpError> {
        let session = self.session(session_id(params)?)?;
        let id = params["configId"].as_str().ok_or_else(|| {
            AcpError::InvalidParams("session/set_config_option requires a configId string".into())
        })?;
        let settings = session.settings().with_option(id, &params["value"])?;
        let options = settings.config_options();
        session.set_settings(settings);
        Ok(json!({"configOptions": options}))
    }

    /// `session/set_mode`.
    pub fn set_mode(&self, params: &Value) -> Result<Value, AcpError> {
        let session = self.session(session_id(params)?)?;
        let mode_id = params["modeId"].as_str().ok_or_else(|| {
            AcpError::InvalidParams("session/set_mode requires a modeId string".into())
        })?;
        let mode = parse_mode(mode_id)?;
        let mut settings = session.settings();
        settings.mode = mode;
        session.set_settings(settings);
        session
            .send(json!({"sessionUpdate": "current_mode_update", "currentModeId": mode.as_str()}));
        Ok(json!({}))
    }

    /// `session/list`: the root sessions of `DSH_HOME`, newest first.
    pub async fn list(&self, params: &Value) -> Result<Value, AcpError> {
        let cwd = match params["cwd"].as_str() {
            Some(cwd) if !std::path::Path::new(cwd).is_absolute() => {
                return Err(AcpError::InvalidParams(format!(
                    "session/list cwd must be an absolute path, got \"{cwd}\""
                )));
            }
            other => other.map(str::to_owned),
        };
        let request = ListParams {
            cwd,
            cursor: params["cursor"].as_str().map(str::to_owned),
            limit: None,
            query: None,
        };
        let lobby = self.lobby().await?;
        let host = lobby
            .as_ref()
            .ok_or_else(|| AcpError::Stopped("no session server".into()))?;
        let page = host.client().list_sessions(&request).await?;
        let sessions: Vec<Value> = page
            .sessions
            .iter()
            .filter(|session| session.parent_session_id.is_none())
            .map(|session| {
                let mut info = json!({
                    "sessionId": session.session_id,
                    "cwd": session.cwd.clone().unwrap_or_default(),
                    "updatedAt": iso8601(session.updated_at),
                });
                if let Some(title) = &session.title {
                    info["title"] = json!(title);
                }
                info
            })
            .collect();
        let mut result = json!({"sessions": sessions});
        if let Some(cursor) = page.next_cursor {
            result["nextCursor"] = json!(cursor);
        }
        Ok(result)
    }

    /// The server for requests on no open session, started on first need.
    async fn lobby(&self) -> Result<tokio::sync::MutexGuard<'_, Option<Host>>, AcpError> {
        let mut lobby = self.lobby.lock().await;
        if lobby.is_none() {
            let settings = Settings {
                provider: "scripted".into(),
                model: "echo".into(),
                ..self.defaults.clone()
            };
            let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("/"));
            let spec = HostSpec {
                cwd: &cwd,
                settings: &settings,
                mcp_servers: &[],
                method: "session/list",
                editor: None,
            };
            let refuse: dsh_client::ApprovalHandler = Arc::new(|_| {
                Box::pin(async {
                    dsh_protocol::methods::ApprovalResponse {
                        decision: dsh_protocol::methods::ApprovalDecision::Reject,
                        message: None,
                    }
                })
            });
            let (host, _notifications) = Host::start(&self.base, spec, refuse).await?;
            *lobby = Some(host);
        }
        Ok(lobby)
    }

    /// The route stored session `id` last ran with (its last
    /// `request/header`), read without opening it; the mode stays the
    /// default. `None` when it cannot be read or never ran a step.
    async fn stored_settings(&self, id: &str) -> Option<Settings> {
        let lobby = self.lobby().await.ok()?;
        let host = lobby.as_ref()?;
        let mut config = None;
        let mut after = None;
        loop {
            let page = host.events(id, after).await.ok()?;
            for event in &page.events {
                if event.kind == "request/header" {
                    config = Some(event.data["header"]["config"].clone());
                }
                after = Some(event.seq);
            }
            if !page.more || page.events.is_empty() {
                break;
            }
        }
        let config = config?;
        Some(Settings {
            provider: config["provider"].as_str()?.to_owned(),
            model: config["model"].as_str()?.to_owned(),
            effort: config["reasoningEffort"].as_str().map(str::to_owned),
            ..self.defaults.clone()
        })
    }

    /// Stops every session's server (end of the connection).
    pub async fn shutdown(&self) {
        let sessions: Vec<Arc<AcpSession>> = self
            .sessions
            .lock()
            .map(|mut sessions| sessions.drain().map(|(_, s)| s).collect())
            .unwrap_or_default();
        for session in sessions {
            session.close().await;
        }
        if let Some(lobby) = self.lobby.lock().await.take() {
            lobby.stop().await;
        }
    }
}

/// `{sessionId?, configOptions, modes}`.
fn describe(id: Option<&str>, settings: &Settings) -> Value {
    let mut result = json!({"configOptions": settings.config_options(), "modes": settings.modes()});
    if let Some(id) = id {
        result["sessionId"] = json!(id);
    }
    result
}

fn session_id(params: &Value) -> Result<&str, AcpError> {
    params["sessionId"]
        .as_str()
        .filter(|id| !id.is_empty())
        .ok_or_else(|| AcpError::InvalidParams("sessionId must be a non-empty string".into()))
}

/// The `cwd` param: an absolute path to a directory.
fn workspace(method: &str, params: &Value) -> Result<PathBuf, AcpError> {
    let cwd = params["cwd"]
        .as_str()
        .ok_or_else(|| AcpError::InvalidParams(format!("{method} requires a cwd string")))?;
    let path = PathBuf::from(cwd);
    if !path.is_absolute() {
        return Err(AcpError::InvalidParams(format!(
            "cwd must be an absolute path: {cwd}"
        )));
    }
    if !path.is_dir() {
        return Err(AcpError::InvalidParams(format!(
            "cwd is not a directory: {cwd}"
        )));
    }
    Ok(path)
}

/// Milliseconds since the epoch as RFC 3339 UTC (`2026-12-04T17:21:00.000Z`).
fn iso8601(ms: u64) -> String {
    let secs = ms / 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rest = secs % 86_400;
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60,
        ms % 1000
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_796_405_055_437), "2026-12-04T17:24:15.437Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn a_workspace_is_an_absolute_directory() {
        assert!(workspace("session/new", &json!({"cwd": "rel"})).is_err());
        assert!(workspace("session/new", &json!({"cwd": "/no/such/dir/here"})).is_err());
        assert!(workspace("session/new", &json!({})).is_err());
        assert!(workspace("session/new", &json!({"cwd": "/"})).is_ok());
    }
}
