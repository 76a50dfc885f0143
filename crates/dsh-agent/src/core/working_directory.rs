//! The session working directory: `session/working-directory/get|set`.

use super::agent::Agent;
use super::state::AgentState;
use crate::prose;
use dsh_protocol::catalog::{InboxTarget, WorkingDirectoryChange};
use dsh_session::{UserMessage, text_block};
use std::path::{Path, PathBuf};

/// Why a working-directory change was refused (messages are the wire text).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WorkingDirectoryError {
    /// `path` was empty.
    #[error("working-directory: cd must not be empty")]
    Empty,
    /// `path` does not name an existing directory.
    #[error("working-directory: directory does not exist: {}", quoted(.0))]
    NotADirectory(String),
}

fn quoted(path: &str) -> String {
    serde_json::to_string(path).unwrap_or_else(|_| format!("\"{path}\""))
}

impl Agent {
    /// The effective working directory. If it has vanished, the session
    /// falls back to its workspace, records the change and queues a notice.
    pub fn working_directory(&self) -> PathBuf {
        self.core().state().effective_cwd(self.workspace())
    }

    /// Changes the working directory. `path` resolves against the current
    /// effective directory and must name an existing directory; the result
    /// is canonical. A change appends `working-directory/change` and queues
    /// a notice for the model's next step (without waking the agent).
    pub fn set_working_directory(&self, path: &str) -> Result<PathBuf, WorkingDirectoryError> {
        self.core().state().set_cwd(path)
    }
}

impl AgentState {
    /// See [`Agent::working_directory`].
    pub fn effective_cwd(&mut self, workspace: &Path) -> PathBuf {
        if !self.cwd.is_dir() && self.cwd != workspace && workspace.is_dir() {
            change(self, workspace.to_owned());
        }
        self.cwd.clone()
    }

    /// The working directory last set (not checked).
    pub fn cwd(&self) -> &Path {
        &self.cwd
    }

    /// A new child starts in `cwd`: a directory other than its `workspace`
    /// is recorded as a change (no notice: no step has run).
    pub fn start_in(&mut self, cwd: PathBuf, workspace: &Path) {
        if cwd != workspace {
            self.event(WorkingDirectoryChange {
                cwd: path_text(&cwd),
            });
        }
        self.cwd = cwd;
        self.log.flush();
    }

    /// See [`Agent::set_working_directory`].
    pub fn set_cwd(&mut self, path: &str) -> Result<PathBuf, WorkingDirectoryError> {
        if path.is_empty() {
            return Err(WorkingDirectoryError::Empty);
        }
        let target = self.cwd.join(path);
        let canonical = match std::fs::canonicalize(&target) {
            Ok(dir) if dir.is_dir() => dir,
            _ => return Err(WorkingDirectoryError::NotADirectory(path.to_owned())),
        };
        if canonical != self.cwd {
            change(self, canonical.clone());
        }
        Ok(canonical)
    }
}

fn change(state: &mut AgentState, to: PathBuf) {
    let from = std::mem::replace(&mut state.cwd, to);
    let cwd = path_text(&state.cwd);
    state.event(WorkingDirectoryChange { cwd });
    let text = prose::working_directory_notice(&from, &state.cwd);
    let notice = UserMessage::notice("working-directory", vec![text_block(text)]);
    state.enqueue(InboxTarget::NextStep, notice);
    state.log.flush();
}

fn path_text(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_the_official_runtime() {
        assert_eq!(
            WorkingDirectoryError::Empty.to_string(),
            "working-directory: cd must not be empty"
        );
        assert_eq!(
            WorkingDirectoryError::NotADirectory("su\"b".into()).to_string(),
            "working-directory: directory does not exist: \"su\\\"b\""
        );
    }
}
