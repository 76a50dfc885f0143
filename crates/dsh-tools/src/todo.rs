//! The session's todo list.

use serde::{Deserialize, Serialize};

/// One item of the todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    /// What the step is.
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
}

/// The state of a todo item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}
