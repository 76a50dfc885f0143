//! Server configuration: the `initialize` list, the `.mcp.json` map
//! (Claude Code's format, read from a project, `dsh headless --mcp` and
//! overlays), names, URLs and `${VAR}` expansion.

use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Default limit of one tool call.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Longest server name; names are `[A-Za-z0-9_-]`.
pub const MAX_NAME_LEN: usize = 32;

/// Most servers one configuration (and one runtime) may name.
pub const MAX_SERVERS: usize = 32;

/// Where a configuration came from: a project file may not expand the
/// provider's credentials (a cloned repository is attacker-controlled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// The client (`initialize`), an overlay or `dsh headless --mcp`.
    Trusted,
    /// The workspace's `.mcp.json`.
    Project,
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Transport {
    /// A child process speaking newline-delimited JSON-RPC on stdio.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Variables set for it (after `${VAR}` expansion).
        env: BTreeMap<String, String>,
        /// Its working directory (the session's workspace when absent).
        cwd: Option<PathBuf>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        /// The `http(s)` URL.
        url: String,
        /// Headers sent with every request (after `${VAR}` expansion).
        headers: BTreeMap<String, String>,
    },
}

/// One configured server.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ServerConfig {
    /// The name tools are prefixed with (`mcp__<name>__<tool>`).
    pub name: String,
    /// How to reach it.
    pub transport: Transport,
    /// Limit of one tool call.
    pub timeout: Duration,
}

/// A configuration that cannot be used; the message names the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ConfigError {
    /// Where (`mcpServers[0].url`, `mcpServers.web.url`).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

fn error(field: &str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        field: field.to_owned(),
        message: message.into(),
    }
}

/// Reads `initialize`'s `mcpServers`: a list of `{name, command, args,
/// env, cwd, timeoutMs}` or `{name, url, headers, timeoutMs}` objects.
pub fn from_list(
    value: &Value,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ServerConfig>, ConfigError> {
    let Value::Array(items) = value else {
        return Err(error("mcpServers", "must be a list of server objects"));
    };
    if items.len() > MAX_SERVERS {
        return Err(error(
            "mcpServers",
            format!("at most {MAX_SERVERS} servers"),
        ));
    }
    let mut servers: Vec<ServerConfig> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        let at = format!("mcpServers[{index}]");
        let Value::Object(object) = item else {
            return Err(error(&at, "must be an object"));
        };
        let name = match object.get("name") {
            Some(Value::String(name)) => name.clone(),
            _ => return Err(error(&format!("{at}.name"), "must be a string")),
        };
        let server = one(&name, object, &at, Source::Trusted, lookup)?;
        if servers.iter().any(|s| s.name == server.name) {
            return Err(error(
                &format!("{at}.name"),
                format!("\"{name}\" is named twice"),
            ));
        }
        servers.push(server);
    }
    Ok(servers)
}

/// Reads a `.mcp.json` document (`{"mcpServers": {name: {…}}}`), or the
/// map alone (an overlay's `mcpServers` key).
pub fn from_file_map(
    value: &Value,
    source: Source,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<ServerConfig>, ConfigError> {
    let map = match value.get("mcpServers") {
        Some(inner) => inner,
        None => value,
    };
    let Value::Object(map) = map else {
        return Err(error(
            "mcpServers",
            "must be a map of server name to server object",
        ));
    };
    if map.len() > MAX_SERVERS {
        return Err(error(
            "mcpServers",
            format!("at most {MAX_SERVERS} servers"),
        ));
    }
    let mut servers = Vec::with_capacity(map.len());
    for (name, item) in map {
        let at = format!("mcpServers.{name}");
        let Value::Object(object) = item else {
            return Err(error(&at, "must be an object"));
        };
        servers.push(one(name, object, &at, source, lookup)?);
    }
    Ok(servers)
}

/// Merges configurations: a name already present wins over a later one.
pub fn merge(layers: impl IntoIterator<Item = Vec<ServerConfig>>) -> Vec<ServerConfig> {
    let mut merged: Vec<ServerConfig> = Vec::new();
    for layer in layers {
        for server in layer {
            if !merged.iter().any(|s| s.name == server.name) {
                merged.push(server);
            }
        }
    }
    merged.truncate(MAX_SERVERS);
    merged
}

fn one(
    name: &str,
    object: &Map<String, Value>,
    at: &str,
    source: Source,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<ServerConfig, ConfigError> {
    if name.is_empty()
        || name.len() > MAX_NAME_LEN
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(error(
            &format!("{at}.name"),
            format!("\"{name}\" must be 1 to {MAX_NAME_LEN} letters, digits, '_' or '-'"),
        ));
    }
    let kind = match object.get("type") {
        None | Some(Value::Null) => None,
        Some(Value::String(kind)) => Some(kind.as_str()),
        Some(_) => return Err(error(&format!("{at}.type"), "must be a string")),
    };
    let timeout = match object.get("timeoutMs").or_else(|| object.get("timeout")) {
        None | Some(Value::Null) => DEFAULT_CALL_TIMEOUT,
        Some(value) => match value.as_u64() {
            Some(ms) if (1..=86_400_000).contains(&ms) => Duration::from_millis(ms),
            _ => {
                return Err(error(
                    &format!("{at}.timeoutMs"),
                    "must be a whole number of milliseconds from 1 to 86400000",
                ));
            }
        },
    };
    let expand = |text: &str| expand(text, source, lookup);
    let transport = match (kind, object.get("command"), object.get("url")) {
        (None | Some("stdio"), Some(command), None) => {
            let Value::String(command) = command else {
                return Err(error(&format!("{at}.command"), "must be a string"));
            };
            if command.trim().is_empty() {
                return Err(error(&format!("{at}.command"), "must not be empty"));
            }
            Transport::Stdio {
                command: command.clone(),
                args: strings(object.get("args"), &format!("{at}.args"))?,
                env: string_map(object.get("env"), &format!("{at}.env"))?
                    .into_iter()
                    .map(|(k, v)| (k, expand(&v)))
                    .collect(),
                cwd: match object.get("cwd") {
                    None | Some(Value::Null) => None,
                    Some(Value::String(cwd)) => Some(PathBuf::from(cwd)),
                    Some(_) => return Err(error(&format!("{at}.cwd"), "must be a string")),
                },
            }
        }
        (None | Some("http" | "streamable-http" | "streamableHttp"), None, Some(url)) => {
            let Value::String(url) = url else {
                return Err(error(&format!("{at}.url"), "must be a string"));
            };
            let url = expand(url);
            let lower = url.to_ascii_lowercase();
            if !(lower.starts_with("http://") || lower.starts_with("https://"))
                || reqwest::Url::parse(&url).is_err()
            {
                return Err(error(
                    &format!("{at}.url"),
                    "must be an http:// or https:// URL",
                ));
            }
            let headers = string_map(object.get("headers"), &format!("{at}.headers"))?
                .into_iter()
                .map(|(k, v)| (k, expand(&v)))
                .collect::<BTreeMap<_, _>>();
            for (header, value) in &headers {
                if reqwest::header::HeaderName::from_bytes(header.as_bytes()).is_err()
                    || reqwest::header::HeaderValue::from_str(value).is_err()
                {
                    return Err(error(
                        &format!("{at}.headers.{header}"),
                        "is not a valid HTTP header",
                    ));
                }
            }
            Transport::Http { url, headers }
        }
        (Some("sse"), _, _) => {
            return Err(error(
                &format!("{at}.type"),
                "\"sse\" (the deprecated HTTP+SSE transport) is not supported; use a streamable-HTTP URL",
            ));
        }
        (Some(other), _, _) if other != "stdio" && other != "http" => {
            return Err(error(
                &format!("{at}.type"),
                format!("unknown transport \"{other}\""),
            ));
        }
        (_, Some(_), Some(_)) => {
            return Err(error(at, "has both \"command\" and \"url\"; give one"));
        }
        _ => {
            return Err(error(at, "needs \"command\" (stdio) or \"url\" (http)"));
        }
    };
    Ok(ServerConfig {
        name: name.to_owned(),
        transport,
        timeout,
    })
}

fn strings(value: Option<&Value>, at: &str) -> Result<Vec<String>, ConfigError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => Ok(s.clone()),
                _ => Err(error(at, "must be a list of strings")),
            })
            .collect(),
        Some(_) => Err(error(at, "must be a list of strings")),
    }
}

fn string_map(value: Option<&Value>, at: &str) -> Result<BTreeMap<String, String>, ConfigError> {
    match value {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Number(n) => Ok((k.clone(), n.to_string())),
                Value::Bool(b) => Ok((k.clone(), b.to_string())),
                _ => Err(error(&format!("{at}.{k}"), "must be a string")),
            })
            .collect(),
        Some(_) => Err(error(at, "must be a map of strings")),
    }
}

/// Expands `${VAR}` and `${VAR:-default}` from `lookup` (Claude Code's
/// syntax); anything else is kept as written. From a project file a
/// provider credential expands to its default (or nothing).
pub fn expand(text: &str, source: Source, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner, None),
        };
        let valid =
            !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        if !valid {
            out.push_str(&rest[start..start + 2 + end + 1]);
        } else {
            let hidden = source == Source::Project
                && dsh_tools::HiddenEnv::default().hides(std::ffi::OsStr::new(name));
            if hidden {
                tracing::warn!(
                    "a project .mcp.json asks for ${{{name}}}: provider credentials are not passed to project servers"
                );
            }
            let value = if hidden { None } else { lookup(name) };
            out.push_str(&value.or(default.map(str::to_owned)).unwrap_or_default());
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/u".into()),
            "DEEPSEEK_API_KEY" => Some("sk-secret".into()),
            _ => None,
        }
    }

    #[test]
    fn variables_expand_with_defaults_and_credentials_stay_out_of_project_files() {
        let trusted = |t| expand(t, Source::Trusted, &env);
        assert_eq!(trusted("${HOME}/x"), "/home/u/x");
        assert_eq!(trusted("${NOPE:-fallback}"), "fallback");
        assert_eq!(trusted("${NOPE}"), "");
        assert_eq!(trusted("a ${ bad} $HOME ${HOME"), "a ${ bad} $HOME ${HOME");
        assert_eq!(trusted("${DEEPSEEK_API_KEY}"), "sk-secret");
        assert_eq!(expand("${DEEPSEEK_API_KEY}", Source::Project, &env), "");
        assert_eq!(expand("${HOME}", Source::Project, &env), "/home/u");
    }

    #[test]
    fn the_list_names_every_bad_field() {
        let bad = |value: Value| from_list(&value, &env).err().map(|e| e.to_string());
        assert_eq!(
            bad(json!([{"name": "a b", "command": "x"}])).as_deref(),
            Some("mcpServers[0].name: \"a b\" must be 1 to 32 letters, digits, '_' or '-'")
        );
        assert!(
            bad(json!([{"name": "a", "url": "file:///etc/passwd"}]))
                .is_some_and(|e| e.contains("mcpServers[0].url"))
        );
        assert!(
            bad(json!([{"name": "a", "command": "x"}, {"name": "a", "command": "y"}]))
                .is_some_and(|e| e.contains("named twice"))
        );
        assert!(bad(json!([{"name": "a"}])).is_some_and(|e| e.contains("needs \"command\"")));
        assert!(
            bad(json!([{"name": "a", "command": "x", "timeoutMs": 0}]))
                .is_some_and(|e| e.contains("timeoutMs"))
        );
        assert!(bad(json!({"a": {}})).is_some_and(|e| e.contains("list")));
        let ok = from_list(
            &json!([{"name": "s", "command": "py", "args": ["-u"], "env": {"K": "${HOME}"}, "timeoutMs": 1500},
                    {"name": "w", "url": "http://127.0.0.1:1/mcp", "headers": {"X-T": "v"}}]),
            &env,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ok[0].timeout, Duration::from_millis(1500));
        assert!(matches!(&ok[0].transport, Transport::Stdio { env, .. } if env["K"] == "/home/u"));
        assert!(
            matches!(&ok[1].transport, Transport::Http { headers, .. } if headers["X-T"] == "v")
        );
    }

    #[test]
    fn a_file_map_reads_like_claude_code_and_merges_by_name() {
        let file = json!({"mcpServers": {"s": {"command": "a"}, "w": {"type": "http", "url": "https://x.test/mcp"}}});
        let project = from_file_map(&file, Source::Project, &env).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(project.len(), 2);
        let client = from_list(&json!([{"name": "s", "command": "b"}]), &env)
            .unwrap_or_else(|e| panic!("{e}"));
        let merged = merge([client, project]);
        assert_eq!(merged.len(), 2);
        assert!(matches!(&merged[0].transport, Transport::Stdio { command, .. } if command == "b"));
        let sse = json!({"mcpServers": {"s": {"type": "sse", "url": "http://x.test/sse"}}});
        assert!(from_file_map(&sse, Source::Trusted, &env).is_err());
    }
}
