//! The hook events: where in the agent's loop each runs, by Claude Code's
//! names.

use std::fmt;

/// A point of the agent's loop where hooks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// A tool call is about to run; its hooks may refuse it, rewrite its
    /// input or ask the client.
    PreToolUse,
    /// A tool call ran; its hooks may tell the model something.
    PostToolUse,
    /// A prompt is about to be sent to the model; its hooks may refuse it or
    /// add context.
    UserPromptSubmit,
    /// The agent is about to end its turn; its hooks may keep it working.
    Stop,
    /// A subagent is about to end its turn (as [`HookEvent::Stop`]).
    SubagentStop,
    /// A session starts (or resumes) its first turn in this process; its
    /// hooks may add context.
    SessionStart,
    /// A session is closed (shutdown, end of input, `session/close`).
    SessionEnd,
    /// The history is about to be compacted.
    PreCompact,
    /// The runtime needs the user: a tool call waits for approval.
    Notification,
}

impl HookEvent {
    /// Every event, in the order of the docs' table.
    pub const ALL: [Self; 9] = [
        Self::PreToolUse,
        Self::PostToolUse,
        Self::UserPromptSubmit,
        Self::Stop,
        Self::SubagentStop,
        Self::SessionStart,
        Self::SessionEnd,
        Self::PreCompact,
        Self::Notification,
    ];

    /// The event's name in configuration and in `hook_event_name`.
    pub fn name(self) -> &'static str {
        match self {
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::Stop => "Stop",
            Self::SubagentStop => "SubagentStop",
            Self::SessionStart => "SessionStart",
            Self::SessionEnd => "SessionEnd",
            Self::PreCompact => "PreCompact",
            Self::Notification => "Notification",
        }
    }

    /// The event named `name` (exactly, as Claude Code spells it).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|event| event.name() == name)
    }

    /// Whether a group's `matcher` filters this event's runs (the others
    /// run every group, whatever its matcher says, as Claude Code does).
    pub fn uses_matcher(self) -> bool {
        !matches!(
            self,
            Self::UserPromptSubmit | Self::Stop | Self::SubagentStop
        )
    }
}

impl fmt::Display for HookEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_are_none() {
        for event in HookEvent::ALL {
            assert_eq!(HookEvent::from_name(event.name()), Some(event));
        }
        assert_eq!(HookEvent::from_name("pretooluse"), None);
        assert_eq!(HookEvent::from_name("PermissionRequest"), None);
        assert!(!HookEvent::Stop.uses_matcher());
        assert!(HookEvent::PreToolUse.uses_matcher());
    }
}
