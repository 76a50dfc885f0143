//! What the project's own files tell the model (`sdk` profile only): the
//! instructions of the `AGENTS.md` / `CLAUDE.md` files from the project
//! root down to the working directory, and the catalog of skills with the
//! `skill` tool that loads one.
//!
//! Both are checked before every step of a turn. Instructions are sent as
//! an `agent-instructions` user message right after the step's claimed
//! messages (a baseline first, then the files that changed); the skill
//! catalog as a `skill-catalog` user message right after the
//! runtime-context snapshot, again whenever the set of skill names
//! changes. What was sent is rebuilt from the history on resume, so
//! nothing is sent twice.

mod fingerprint;
mod instructions;
mod prose;
mod root;
mod skills;

pub(crate) use skills::{SKILL, run_skill, skill_spec};

use dsh_protocol::message::{KeptMessage, Role};
use dsh_session::{Message, UserMessage};
use std::path::Path;

/// What one agent has sent of the project's instructions and skills.
#[derive(Default)]
pub(crate) struct Tracker {
    instructions: instructions::Tracker,
    skills: skills::Tracker,
}

impl Tracker {
    /// The tracker of an agent whose model already saw `history` (a resumed
    /// session, a fork's inherited turns).
    pub(crate) fn restored(history: &[KeptMessage]) -> Self {
        let mut tracker = Self::default();
        // One message parsed at a time: a resumed history may be packed.
        let users = history.iter().filter(|m| m.role() == Role::User);
        for kept in users {
            let message = kept.get();
            if let Message::User(user) = message.as_ref() {
                tracker.instructions.restore(user);
                tracker.skills.restore(user);
            }
        }
        tracker.instructions.finish_restore();
        tracker
    }

    /// The instructions message of a step in `cwd`, if anything is new.
    pub(crate) fn instructions(&mut self, cwd: &Path) -> Option<UserMessage> {
        self.instructions.step(cwd)
    }

    /// The skill-catalog message of a step in `cwd`, if the catalog is new
    /// or changed; `home` is the user's own skills directory.
    pub(crate) fn catalog(&mut self, cwd: &Path, home: Option<&Path>) -> Option<UserMessage> {
        self.skills.step(cwd, home)
    }
}
