//! `subagent` and `subagent_fork`: start a child agent in the background.

use super::error::{DelegationError, parse};
use super::{MAX_ACTIVE_CHILDREN, prose};
use crate::core::{
    AgentConfig, AgentTool, Child, ChildSink, ChildSpec, Core, Lineage, ParentLink, Seed, Start,
};
use dsh_llm::Route;
use dsh_protocol::catalog::{SubagentCatalog, SubagentDescriptor, SubagentMode, SubagentProvider};
use dsh_protocol::notifications::SubagentStartedParams;
use dsh_session::store::{SessionHeader, SessionLocation, SessionReader};
use dsh_session::{EventLog, TreeNotice, now_ms, text_block};
use dsh_tools::ToolOutput;
use serde::Deserialize;
use std::path::PathBuf;
use std::sync::Arc;

/// The arguments of both tools.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    description: String,
    prompt: String,
    #[serde(default)]
    cwd: Option<String>,
}

/// Whether `arguments` fit the spawning tools' schema.
pub(crate) fn fits_schema(arguments: &str) -> bool {
    parse::<Args>(arguments).is_ok()
}

/// Starts a child of `core` for the call's task and returns at once with
/// its id; the child's news arrives later as a notice.
pub(crate) async fn spawn(core: &Core, arguments: &str, provider: SubagentProvider) -> ToolOutput {
    match start(core, arguments, provider).await {
        Ok(id) => ToolOutput::text(format!("started subagent {id}")),
        Err(refusal) => refusal.into(),
    }
}

async fn start(
    core: &Core,
    arguments: &str,
    provider: SubagentProvider,
) -> Result<String, DelegationError> {
    let args: Args = parse(arguments)?;
    if args.prompt.trim().is_empty() {
        return Err(DelegationError::InvalidArgs(
            "\"prompt\" must not be empty".to_owned(),
        ));
    }
    let cwd = match args.cwd.as_deref().filter(|c| !c.is_empty()) {
        None => None,
        Some(dir) => {
            let here = core.state().effective_cwd(&core.workspace);
            Some(resolve_dir(&here, dir)?)
        }
    };
    let task = vec![
        text_block(args.prompt),
        text_block(prose::parent_instructions(&core.id)),
    ];
    create_child(
        core,
        ChildPlan {
            provider,
            label: args.description,
            task,
            cwd,
            model: None,
            sink: None,
            tools: Vec::new(),
        },
    )
    .await
}

/// What a new child is to be: how it is started, its label (descriptor
/// and catalog), its task, where it starts and how it reports.
pub(crate) struct ChildPlan {
    /// `spawn` or `fork`.
    pub provider: SubagentProvider,
    /// The label of its descriptor and of the parent's catalog entry.
    pub label: String,
    /// The content of its first prompt.
    pub task: Vec<serde_json::Value>,
    /// Its starting directory (default: the parent's current one).
    pub cwd: Option<PathBuf>,
    /// A model other than the parent's (same provider).
    pub model: Option<String>,
    /// Where its news goes when it settles, instead of a notice to the
    /// parent (a workflow's children).
    pub sink: Option<Arc<dyn ChildSink>>,
    /// Tools of this child only (a workflow child's `structured_output`).
    pub tools: Vec<Arc<dyn AgentTool>>,
}

/// Creates a child of `core` as `plan` says, registers it with the host
/// and gives it its task; returns its id.
pub(crate) async fn create_child(core: &Core, plan: ChildPlan) -> Result<String, DelegationError> {
    let ChildPlan {
        provider,
        label,
        task,
        cwd,
        model,
        sink,
        tools,
    } = plan;
    let host = super::host(core)?;
    // The children are copied out before their states are taken (the
    // lock order of `Core`).
    let active = core
        .child_agents()
        .iter()
        .filter(|child| child.core().is_running())
        .count();
    if active >= MAX_ACTIVE_CHILDREN {
        return Err(DelegationError::TooMany(MAX_ACTIVE_CHILDREN));
    }
    let (cwd, seed) = {
        let mut state = core.state();
        let cwd = cwd.unwrap_or_else(|| state.effective_cwd(&core.workspace));
        let seed = match provider {
            SubagentProvider::Fork => state.fork_point(),
            SubagentProvider::Spawn => None,
        };
        (cwd, seed)
    };
    let seed = match seed {
        Some((location, through, seed)) => {
            Some(Box::new(inherited(location, through, seed).await?))
        }
        None => None,
    };
    let id = uuid::Uuid::new_v4().to_string();
    let created_at = now_ms();
    // The header names the parent's workspace (the child's sandbox root,
    // checked again on resume); a different starting directory is a
    // working-directory change in the child's log.
    let mut header = SessionHeader::subagent_child(
        id.clone(),
        created_at,
        Some(core.workspace.to_string_lossy().into_owned()),
        core.id.clone(),
        core.lineage.depth + 1,
    );
    header.is_seeded = seed.is_some();
    let log: EventLog = host
        .create_log(&header)
        .map_err(|err| DelegationError::StartFailed(err.to_string()))?;
    // A child inherits the parent's route with its effort made explicit;
    // a model chosen by a workflow comes with that model's default effort
    // (as the official runtime starts it).
    let route = match model {
        None => Route {
            reasoning_effort: Some(core.route.effort().to_owned()),
            ..core.route.clone()
        },
        Some(model) => Route {
            model,
            reasoning_effort: None,
            ..core.route.clone()
        },
    };
    let descriptor = SubagentDescriptor {
        version: SubagentDescriptor::VERSION,
        mode: SubagentMode::Continuable,
        provider,
        label: label.clone(),
        agent_provider: route.provider.clone(),
        agent_model: route.model.clone(),
        agent_reasoning_effort: route.reasoning_effort.clone(),
    };
    let mut link = ParentLink::of(core, provider, &label);
    link.sink = sink;
    let config = AgentConfig {
        session_id: id.clone(),
        profile: Arc::new(core.profile.for_child()),
        route,
        provider: Arc::clone(&core.provider),
        retry: core.retry.clone(),
        workspace: core.workspace.clone(),
        log,
        tools: Arc::clone(core.roster.library()),
        sessions: Some(Arc::clone(&host)),
        lineage: Lineage {
            depth: core.lineage.depth + 1,
            parent: Some(link),
        },
        // The root's client answers for the whole tree; grants are the
        // child session's own.
        approvals: Arc::new(core.approvals.fresh()),
        prices: Arc::clone(&core.prices),
        mcp: core.mcp.clone(),
        editor: core.editor.clone(),
        command_hooks: core.command_hooks.clone(),
    };
    let child = core.spawner.spawn(ChildSpec {
        config,
        start: Start::Child {
            descriptor: Box::new(descriptor),
            seed,
        },
        tools,
    });
    child.core().state().start_in(cwd, &core.workspace);
    if let Err(err) = host.register(&child) {
        child.dispose();
        return Err(DelegationError::StartFailed(err.to_string()));
    }
    // The client hears of the child before any of its events.
    core.state()
        .announce(TreeNotice::Started(SubagentStartedParams {
            parent_session_id: core.id.clone(),
            child_session_id: id.clone(),
        }));
    child.core().state().publish(host.observer());
    if let Err(err) = child.prompt(task, |_| {}) {
        child.dispose();
        return Err(DelegationError::StartFailed(err.to_string()));
    }
    let parent_turn = core.state().open_turn();
    core.children().push(Child {
        id: id.clone(),
        label: label.clone(),
        agent: child,
        parent_turn,
    });
    core.state().event(SubagentCatalog {
        version: SubagentCatalog::VERSION,
        child_id: id.clone(),
        child_created_at: created_at,
        mode: SubagentMode::Continuable,
        label,
    });
    Ok(id)
}

/// `seed` with the parent's stored events through seq `through` (read off
/// the async workers: the log may be long).
async fn inherited(
    location: SessionLocation,
    through: u64,
    mut seed: Seed,
) -> Result<Seed, DelegationError> {
    let read = tokio::task::spawn_blocking(move || {
        let mut events = Vec::new();
        SessionReader::read_each(&location, |event| {
            if event.seq <= through {
                events.push(event);
            }
        })
        .map(|_| events)
    })
    .await;
    match read {
        Ok(Ok(events)) => {
            seed.events = events;
            Ok(seed)
        }
        Ok(Err(err)) => Err(DelegationError::StartFailed(format!(
            "the parent's log cannot be read: {err}"
        ))),
        Err(err) => Err(DelegationError::StartFailed(err.to_string())),
    }
}

/// `dir` against `here`: an existing directory, canonical.
pub(crate) fn resolve_dir(here: &std::path::Path, dir: &str) -> Result<PathBuf, DelegationError> {
    match std::fs::canonicalize(here.join(dir)) {
        Ok(path) if path.is_dir() => Ok(path),
        _ => Err(DelegationError::InvalidArgs(format!(
            "\"cwd\" is not an existing directory: {}",
            serde_json::Value::from(dir)
        ))),
    }
}
