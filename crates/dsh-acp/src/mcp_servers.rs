//! ACP `mcpServers` as the SDK protocol's `initialize.mcpServers`: the
//! same servers, run by the same MCP client (see `docs/mcp.md`).
//!
//! ACP stdio servers `{name, command, args, env: [{name, value}]}` and
//! HTTP servers `{type: "http", name, url, headers: [{name, value}]}` map
//! field for field; SSE servers are refused (the client was told
//! `mcpCapabilities.sse: false`) in the official profile's words. The SDK
//! server validates the result, and its message names the field
//! (`mcpServers[0].url: …`).

use crate::error::AcpError;
use serde_json::{Map, Value, json};

/// The SDK form of `servers`.
pub fn sdk_servers(servers: &[Value]) -> Result<Vec<Value>, AcpError> {
    servers
        .iter()
        .enumerate()
        .map(|(index, server)| {
            sdk_server(server).map_err(|why| match why {
                Refused::Sse => AcpError::InvalidParams(format!(
                    "mcpServers[{index}] transport sse is not supported"
                )),
                Refused::Other(why) => {
                    AcpError::InvalidParams(format!("mcpServers[{index}]: {why}"))
                }
            })
        })
        .collect()
}

/// Why a server is refused.
enum Refused {
    /// It uses the SSE transport.
    Sse,
    /// Anything else.
    Other(String),
}

impl From<&str> for Refused {
    fn from(why: &str) -> Self {
        Self::Other(why.to_owned())
    }
}

impl From<String> for Refused {
    fn from(why: String) -> Self {
        Self::Other(why)
    }
}

fn sdk_server(server: &Value) -> Result<Value, Refused> {
    let name = server
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a server needs a string `name`")?;
    match server.get("type").and_then(Value::as_str) {
        None | Some("stdio") => {
            let command = server
                .get("command")
                .and_then(Value::as_str)
                .ok_or("a stdio server needs a string `command`")?;
            let args = server.get("args").cloned().unwrap_or_else(|| json!([]));
            let env = pairs(server.get("env"), "env")?;
            Ok(json!({"name": name, "command": command, "args": args, "env": env}))
        }
        Some("http") => {
            let url = server
                .get("url")
                .and_then(Value::as_str)
                .ok_or("an HTTP server needs a string `url`")?;
            let headers = pairs(server.get("headers"), "headers")?;
            Ok(json!({"name": name, "url": url, "headers": headers}))
        }
        Some("sse") => Err(Refused::Sse),
        Some(other) => Err(format!("unknown MCP transport \"{other}\"").into()),
    }
}

/// `[{name, value}]` as an object.
fn pairs(list: Option<&Value>, field: &str) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    let Some(list) = list else { return Ok(out) };
    let items = list
        .as_array()
        .ok_or_else(|| format!("`{field}` must be a list of {{name, value}}"))?;
    for item in items {
        match (
            item.get("name").and_then(Value::as_str),
            item.get("value").and_then(Value::as_str),
        ) {
            (Some(name), Some(value)) => {
                out.insert(name.to_owned(), Value::String(value.to_owned()));
            }
            _ => {
                return Err(format!(
                    "every `{field}` entry needs string `name` and `value`"
                ));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdio_and_http_servers_map_and_sse_is_refused() {
        let servers = [
            json!({"name": "fs", "command": "python3", "args": ["s.py"], "env": [{"name": "A", "value": "1"}]}),
            json!({"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp", "headers": [{"name": "X", "value": "y"}]}),
        ];
        let sdk = sdk_servers(&servers).unwrap();
        assert_eq!(
            sdk[0],
            json!({"name": "fs", "command": "python3", "args": ["s.py"], "env": {"A": "1"}})
        );
        assert_eq!(
            sdk[1],
            json!({"name": "web", "url": "http://127.0.0.1:9/mcp", "headers": {"X": "y"}})
        );
        let sse =
            [json!({"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []})];
        let err = sdk_servers(&sse).unwrap_err().to_string();
        assert_eq!(err, "mcpServers[0] transport sse is not supported");
    }
}
