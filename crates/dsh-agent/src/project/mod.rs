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

use crate::core::{
    AgentState, AgentTool, ContextSlot, Core, Feature, HookFuture, ToolCall, ToolOutcome,
};
use dsh_protocol::catalog::ToolSpec;
use dsh_protocol::message::{KeptMessage, Role};
use dsh_session::{Message, UserMessage};
use std::path::Path;

/// `source.kind` of project instructions.
const INSTRUCTIONS: &str = "agent-instructions";
/// `source.kind` of a skill catalog.
const SKILL_CATALOG: &str = "skill-catalog";

/// The project-context feature: instructions and the skill catalog join a
/// step's context; what was sent is kept per agent.
pub(crate) struct ProjectContext;

impl Feature for ProjectContext {
    fn compose(
        &self,
        core: &Core,
        state: &mut AgentState,
        slot: ContextSlot,
    ) -> Option<UserMessage> {
        let cwd = state.cwd().to_owned();
        let tracker = state.extension::<Tracker>();
        match slot {
            ContextSlot::AfterClaimed => tracker.instructions(&cwd),
            ContextSlot::AfterRuntimeContext => {
                tracker.catalog(&cwd, core.profile.skills_home.as_deref())
            }
        }
    }

    fn restored(&self, state: &mut AgentState) {
        let tracker = Tracker::restored(&state.history().messages());
        *state.extension::<Tracker>() = tracker;
    }

    fn history_rewritten(&self, state: &mut AgentState) {
        let history = state.history();
        if !history.holds_source(INSTRUCTIONS) || !history.holds_source(SKILL_CATALOG) {
            // What the model still sees of the project's instructions and
            // skills; the rest is sent again.
            let tracker = Tracker::restored(&history.messages());
            *state.extension::<Tracker>() = tracker;
        }
    }
}

/// The `skill` tool.
pub(crate) struct SkillTool;

impl AgentTool for SkillTool {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![skills::skill_spec()]
    }

    fn call<'a>(&'a self, call: ToolCall<'a>) -> HookFuture<'a, ToolOutcome> {
        let home = call.core.profile.skills_home.clone();
        Box::pin(async move {
            skills::run_skill(call.cwd, home, call.arguments)
                .await
                .into()
        })
    }
}

/// What one agent has sent of the project's instructions and skills.
#[derive(Default)]
struct Tracker {
    instructions: instructions::Tracker,
    skills: skills::Tracker,
}

impl Tracker {
    /// The tracker of an agent whose model already saw `history` (a resumed
    /// session, a fork's inherited turns).
    fn restored(history: &[KeptMessage]) -> Self {
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
    fn instructions(&mut self, cwd: &Path) -> Option<UserMessage> {
        self.instructions.step(cwd)
    }

    /// The skill-catalog message of a step in `cwd`, if the catalog is new
    /// or changed; `home` is the user's own skills directory.
    fn catalog(&mut self, cwd: &Path, home: Option<&Path>) -> Option<UserMessage> {
        self.skills.step(cwd, home)
    }
}
