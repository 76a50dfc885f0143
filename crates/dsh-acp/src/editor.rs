//! The client's editor as the file tools' source and sink: where the
//! client offered `fs.readTextFile` / `fs.writeTextFile` at `initialize`,
//! `read`, `write` and `edit` get a file's text with `fs/read_text_file`
//! (open buffers, unsaved changes included) and save it with
//! `fs/write_text_file`, after every check of their own (the sandbox
//! mode, read-before-write, sizes) has passed on disk.

use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{
    ReadTextFileRequest, ReadTextFileResponse, WriteTextFileRequest,
};
use dsh_tools::EditorFiles;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

/// How long a file request waits for the client.
const ANSWER_WAIT: Duration = Duration::from_secs(30);

/// What the client offered under `clientCapabilities.fs`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FsCapabilities {
    /// `fs.readTextFile`.
    pub read: bool,
    /// `fs.writeTextFile`.
    pub write: bool,
}

impl FsCapabilities {
    /// The capabilities an `initialize` request's params declare.
    pub fn of(initialize: &serde_json::Value) -> Self {
        let fs = &initialize["clientCapabilities"]["fs"];
        Self {
            read: fs["readTextFile"] == true,
            write: fs["writeTextFile"] == true,
        }
    }
}

/// The files of ACP session `session_id`'s client.
pub struct ClientFiles {
    connection: ConnectionTo<Client>,
    session_id: String,
    offered: FsCapabilities,
    runtime: tokio::runtime::Handle,
}

impl ClientFiles {
    /// The client's files, or `None` when it offered neither capability.
    /// Must be called inside the Tokio runtime the requests run on.
    pub fn new(
        connection: ConnectionTo<Client>,
        session_id: &str,
        offered: FsCapabilities,
    ) -> Option<Self> {
        (offered.read || offered.write).then(|| Self {
            connection,
            session_id: session_id.to_owned(),
            offered,
            runtime: tokio::runtime::Handle::current(),
        })
    }

    /// Sends `request` and waits (this blocking thread) for the answer.
    fn ask<T>(
        &self,
        answer: impl Future<Output = Result<T, agent_client_protocol::Error>>,
    ) -> Result<T, String> {
        match self
            .runtime
            .block_on(tokio::time::timeout(ANSWER_WAIT, answer))
        {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(err)) => Err(format!("the editor refused: {}", err.message)),
            Err(_) => Err(format!(
                "the editor did not answer within {} s",
                ANSWER_WAIT.as_secs()
            )),
        }
    }
}

impl EditorFiles for ClientFiles {
    fn read_text(&self, path: &Path) -> Option<Result<String, String>> {
        if !self.offered.read {
            return None;
        }
        let request: ReadTextFileRequest =
            match serde_json::from_value(json!({"sessionId": self.session_id, "path": path})) {
                Ok(request) => request,
                Err(err) => return Some(Err(err.to_string())),
            };
        let answer = self.connection.send_request(request).block_task();
        Some(
            self.ask(answer)
                .map(|response: ReadTextFileResponse| response.content),
        )
    }

    fn write_text(&self, path: &Path, content: &str) -> Option<Result<(), String>> {
        if !self.offered.write {
            return None;
        }
        let request: WriteTextFileRequest = match serde_json::from_value(
            json!({"sessionId": self.session_id, "path": path, "content": content}),
        ) {
            Ok(request) => request,
            Err(err) => return Some(Err(err.to_string())),
        };
        let answer = self.connection.send_request(request).block_task();
        Some(self.ask(answer).map(drop))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capabilities_are_read_from_initialize() {
        let both =
            json!({"clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": true}}});
        assert_eq!(
            FsCapabilities::of(&both),
            FsCapabilities {
                read: true,
                write: true
            }
        );
        let read = json!({"clientCapabilities": {"fs": {"readTextFile": true}}});
        assert_eq!(
            FsCapabilities::of(&read),
            FsCapabilities {
                read: true,
                write: false
            }
        );
        assert_eq!(FsCapabilities::of(&json!({})), FsCapabilities::default());
    }
}
