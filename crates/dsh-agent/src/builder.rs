//! The builder: which features an agent of each profile has. The only
//! module that names them all; the core knows none of them.
//!
//! Adding a tool: implement [`AgentTool`] in its feature's folder and list
//! it in [`tools`]. Adding a hook at a fixed point (before each step, at
//! idle, …): implement that method of [`Feature`] and list the feature in
//! [`hooks`].

use crate::accounting::Accounting;
use crate::command_hooks::CommandHooks;
use crate::compaction::Compaction;
use crate::core::{
    self, Agent, AgentConfig, AgentTool, ChildSpec, Feature, Features, Hooks, Roster, Spawner,
    Start,
};
use crate::delegation::{Delegation, DelegationTools};
use crate::goals::{GoalRounds, GoalTools};
use crate::plan_mode::PlanModeTool;
use crate::profile::{Profile, ProfileKind};
use crate::project::{ProjectContext, SkillTool};
use crate::repeat_guard::RepeatGuard;
use crate::workflow::WorkflowTool;
use crate::working_directory_tool::WorkingDirectoryTool;
use dsh_tools::ToolSet;
use std::sync::{Arc, Mutex, PoisonError, Weak};

impl Agent {
    /// Creates (or restores) the session and its agent with its profile's
    /// features. A new session in the `sdk` profile starts with the three
    /// policy events. Must be called inside a Tokio runtime.
    pub fn create(config: AgentConfig, start: Start) -> Self {
        let roster = shared_roster(&config.tools, config.profile.kind);
        build(config, start, roster)
    }
}

/// Creates an agent over `roster` with the hooks of its profile.
fn build(config: AgentConfig, start: Start, roster: Arc<Roster>) -> Agent {
    let features = Features {
        hooks: hooks(&config.profile, config.command_hooks.is_some()),
        roster,
        spawner: Arc::new(Builder),
    };
    core::create(config, start, features)
}

/// The features called at the core's fixed points, in order; command
/// hooks only for a session that has some.
fn hooks(profile: &Profile, command_hooks: bool) -> Hooks {
    // Accounting first: a budget ends the turn before compaction spends;
    // a hook refuses a prompt before compaction spends on it.
    let mut features: Vec<Arc<dyn Feature>> = vec![Arc::new(Accounting)];
    if command_hooks {
        features.push(Arc::new(CommandHooks));
    }
    features.push(Arc::new(Compaction));
    if profile.reads_project_context() {
        features.push(Arc::new(ProjectContext));
    }
    features.push(Arc::new(Delegation));
    if profile.kind == ProfileKind::Sdk {
        features.push(Arc::new(GoalRounds));
        features.push(Arc::new(RepeatGuard));
    }
    Hooks::new(features)
}

/// The tools features implement, beside the library's: every profile has
/// `working_directory`; the `sdk` roster also delegation, `skill`, goals,
/// plan mode and `workflow`.
fn tools(kind: ProfileKind) -> Vec<Arc<dyn AgentTool>> {
    let mut tools: Vec<Arc<dyn AgentTool>> = vec![Arc::new(WorkingDirectoryTool)];
    if kind == ProfileKind::Sdk {
        tools.push(Arc::new(DelegationTools));
        tools.push(Arc::new(SkillTool));
        tools.push(Arc::new(GoalTools));
        tools.push(Arc::new(PlanModeTool));
        tools.push(Arc::new(WorkflowTool));
    }
    tools
}

/// A library, the profile its roster was built for, and the roster.
type SharedRoster = (Weak<ToolSet>, ProfileKind, Arc<Roster>);

/// The roster of `library` for `kind`, shared by every session of one
/// tool library: its spec list (≈35 KiB of JSON schemas in the `sdk`
/// profile) is built once, not once per open session.
fn shared_roster(library: &Arc<ToolSet>, kind: ProfileKind) -> Arc<Roster> {
    /// One roster per live library and profile (a runtime has one); a
    /// `Weak` keeps its library's address from being reused while its
    /// entry exists.
    static SHARED: Mutex<Vec<SharedRoster>> = Mutex::new(Vec::new());
    let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    shared.retain(|(set, _, _)| set.strong_count() > 0);
    if let Some((_, _, roster)) = shared
        .iter()
        .find(|(set, k, _)| *k == kind && std::ptr::eq(set.as_ptr(), Arc::as_ptr(library)))
    {
        return Arc::clone(roster);
    }
    let roster = Arc::new(Roster::new(Arc::clone(library), &tools(kind)));
    shared.push((Arc::downgrade(library), kind, Arc::clone(&roster)));
    roster
}

/// Creates children with the features of their profile.
struct Builder;

impl Spawner for Builder {
    fn spawn(&self, spec: ChildSpec) -> Arc<Agent> {
        let ChildSpec {
            config,
            start,
            tools,
        } = spec;
        let shared = shared_roster(&config.tools, config.profile.kind);
        let roster = if tools.is_empty() {
            shared
        } else {
            Arc::new(shared.with(&tools))
        };
        Arc::new(build(config, start, roster))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(roster: &Roster) -> Vec<&str> {
        roster.specs().iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn sessions_of_one_library_share_one_roster() {
        let config = || dsh_tools::ToolsConfig::new(std::env::temp_dir());
        let sdk = Arc::new(dsh_tools::sdk_tools(config()));
        let first = shared_roster(&sdk, ProfileKind::Sdk);
        assert!(Arc::ptr_eq(&first, &shared_roster(&sdk, ProfileKind::Sdk)));
        assert!(first.tokens() > 1_000, "{}", first.tokens());
        for name in [
            "working_directory",
            "subagent",
            "skill",
            "create_goal",
            "workflow",
        ] {
            assert!(names(&first).contains(&name), "{name}");
        }
        let mut sorted = names(&first);
        sorted.sort_unstable();
        assert_eq!(names(&first), sorted);
        // Another library gets its own roster, not the cached one.
        let minimal = Arc::new(dsh_tools::sdk_minimal_tools(config()));
        let other = shared_roster(&minimal, ProfileKind::SdkMinimal);
        assert!(names(&other).contains(&"working_directory"));
        assert!(!names(&other).contains(&"subagent"));
        assert_ne!(names(&other), names(&first));
    }
}
