//! Creates an agent's state, core and loop task from its configuration,
//! how it starts and its features.

use super::agent::Agent;
use super::run_loop;
use super::shared::Core;
use super::start::{AgentConfig, Features, Start};
use super::state::{Activity, AgentState};
use super::tools::AgentToolHost;
use crate::profile::PermissionMode;
use dsh_protocol::catalog::{ApprovalPolicy, PermissionPreset, SandboxMode};
use dsh_tools::{CancellationToken, SessionTools};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicUsize;
use tokio::sync::Notify;
use tokio::sync::watch;

/// `source` of the policies a child inherits from its parent.
const DELEGATION: &str = "delegation";

/// Creates (or restores) the session's agent with `features` and starts
/// its loop task. Must be called inside a Tokio runtime.
pub(crate) fn create(config: AgentConfig, start: Start, features: Features) -> Agent {
    let (activity, _) = watch::channel(Activity::default());
    let cancel = CancellationToken::new();
    let mut state = AgentState::new(
        config.log,
        config.workspace.clone(),
        activity,
        cancel.clone(),
        features.hooks.clone(),
    );
    let profile = config.profile;
    match start {
        Start::New => {
            if profile.emits_policy_events() {
                let mode = profile.permission_mode.as_str();
                state.event(PermissionPreset { preset: mode });
                state.event(SandboxMode { mode, source: None });
                state.event(ApprovalPolicy {
                    policy: profile.approval.as_str(),
                    source: None,
                });
            }
        }
        Start::Resumed(facts) => state.restore(*facts),
        Start::Child { descriptor, seed } => {
            if let Some(seed) = seed {
                state.inherit(*seed);
            }
            state.event(*descriptor);
            state.event(SandboxMode {
                mode: profile.permission_mode.as_str(),
                source: Some(DELEGATION),
            });
            state.event(ApprovalPolicy {
                policy: profile.approval.as_str(),
                source: Some(DELEGATION),
            });
            // As the official runtime writes a full-access child.
            if profile.permission_mode == PermissionMode::DangerFullAccess {
                state.event(PermissionPreset {
                    preset: profile.permission_mode.as_str(),
                });
            }
        }
    }
    let system_prompt = profile.system_prompt(&config.route.model);
    let context_window = profile
        .context_window
        .unwrap_or_else(|| config.route.model_info().context_window);
    let roster = features.roster;
    let fixed_tokens = roster.tokens() + crate::estimate::text(system_prompt.len());
    let core = Arc::new_cyclic(|weak: &std::sync::Weak<Core>| Core {
        id: config.session_id,
        profile,
        route: config.route,
        provider: config.provider,
        retry: config.retry,
        workspace: config.workspace,
        roster,
        context_window,
        fixed_tokens,
        system_prompt,
        session_tools: Arc::new(SessionTools::new()),
        tool_host: Arc::new(AgentToolHost(weak.clone())),
        approvals: config.approvals,
        prices: config.prices,
        mcp: config.mcp,
        editor: config.editor,
        command_hooks: config.command_hooks,
        hooks: features.hooks,
        cancel,
        wake: Notify::new(),
        lineage: config.lineage,
        sessions: config.sessions,
        spawner: features.spawner,
        this: weak.clone(),
        idle_holds: AtomicUsize::new(0),
        idle_released: Notify::new(),
        state: Mutex::new(state),
        children: Mutex::new(Vec::new()),
    });
    let task = tokio::spawn(run_loop::run(Arc::clone(&core)));
    Agent::new(core, task)
}
