//! `subagent` and `subagent_fork`: start a child agent in the background.

use super::error::{DelegationError, parse};
use super::{Child, Lineage, MAX_ACTIVE_CHILDREN, MAX_DEPTH, ParentLink, Report};
use crate::agent::{Agent, AgentConfig, Seed, Start};
use crate::inner::Inner;
use crate::prose;
use dsh_llm::Route;
use dsh_protocol::catalog::{
    SubagentCatalog, SubagentDescriptor, SubagentMode, SubagentProvider, WorkingDirectoryChange,
};
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

/// Starts a child of `inner` for the call's task and returns at once with
/// its id; the child's news arrives later as a notice.
pub(crate) async fn spawn(
    inner: &Inner,
    arguments: &str,
    provider: SubagentProvider,
) -> ToolOutput {
    match start(inner, arguments, provider).await {
        Ok(id) => ToolOutput::text(format!("started subagent {id}")),
        Err(refusal) => refusal.into(),
    }
}

async fn start(
    inner: &Inner,
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
            let here = inner.state().effective_cwd(&inner.workspace);
            Some(resolve_dir(&here, dir)?)
        }
    };
    let task = vec![
        text_block(args.prompt),
        text_block(prose::parent_instructions(&inner.id)),
    ];
    create_child(
        inner,
        ChildPlan {
            provider,
            label: args.description,
            task,
            cwd,
            model: None,
            report: None,
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
    /// Where it reports when it settles, instead of a notice to the
    /// parent (a workflow's children).
    pub report: Option<Report>,
}

/// Creates a child of `inner` as `plan` says, registers it with the host
/// and gives it its task; returns its id.
pub(crate) async fn create_child(
    inner: &Inner,
    plan: ChildPlan,
) -> Result<String, DelegationError> {
    let ChildPlan {
        provider,
        label,
        task,
        cwd,
        model,
        report,
    } = plan;
    let Some(host) = inner.sessions.clone() else {
        return Err(DelegationError::NoHost);
    };
    if inner.lineage.depth >= MAX_DEPTH {
        return Err(DelegationError::TooDeep {
            depth: inner.lineage.depth + 1,
            max: MAX_DEPTH,
        });
    }
    let active = inner
        .children()
        .iter()
        .filter(|c| c.agent.inner().is_running())
        .count();
    if active >= MAX_ACTIVE_CHILDREN {
        return Err(DelegationError::TooMany(MAX_ACTIVE_CHILDREN));
    }
    let (cwd, seed) = {
        let mut state = inner.state();
        let cwd = cwd.unwrap_or_else(|| state.effective_cwd(&inner.workspace));
        let seed = match (provider, state.completed, state.log.location()) {
            (SubagentProvider::Fork, Some((through, turn)), Some(location)) => Some((
                location.clone(),
                through,
                Seed {
                    events: Vec::new(),
                    history: state.history.prefix(state.turn_history_start),
                    turn,
                    system_prompt: state.system_prompt.clone(),
                    runtime_context: state.runtime_context.clone(),
                    titled: state.titled,
                },
            )),
            _ => None,
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
        Some(inner.workspace.to_string_lossy().into_owned()),
        inner.id.clone(),
        inner.lineage.depth + 1,
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
            reasoning_effort: Some(inner.route.effort().to_owned()),
            ..inner.route.clone()
        },
        Some(model) => Route {
            model,
            reasoning_effort: None,
            ..inner.route.clone()
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
    let mut link = ParentLink::of(inner, provider, &label);
    link.report = report;
    let config = AgentConfig {
        session_id: id.clone(),
        profile: Arc::new(inner.profile.for_child()),
        route,
        provider: Arc::clone(&inner.provider),
        retry: inner.retry.clone(),
        workspace: inner.workspace.clone(),
        log,
        tools: Arc::clone(&inner.tools),
        host: Some(Arc::clone(&host)),
        lineage: Lineage {
            depth: inner.lineage.depth + 1,
            parent: Some(link),
        },
    };
    let child = Arc::new(Agent::create(
        config,
        Start::Child {
            descriptor: Box::new(descriptor),
            seed,
        },
    ));
    {
        let mut state = child.inner().state();
        if cwd != inner.workspace {
            state.event(WorkingDirectoryChange {
                cwd: cwd.to_string_lossy().into_owned(),
            });
        }
        state.cwd = cwd;
        state.log.flush();
    }
    if let Err(err) = host.register(&child) {
        child.dispose();
        return Err(DelegationError::StartFailed(err.to_string()));
    }
    // The client hears of the child before any of its events.
    inner
        .state()
        .log
        .announce(TreeNotice::Started(SubagentStartedParams {
            parent_session_id: inner.id.clone(),
            child_session_id: id.clone(),
        }));
    child.inner().state().log.publish(host.observer());
    if let Err(err) = child.prompt(task, |_| {}) {
        child.dispose();
        return Err(DelegationError::StartFailed(err.to_string()));
    }
    inner.children().push(Child {
        id: id.clone(),
        label: label.clone(),
        agent: child,
    });
    inner.state().event(SubagentCatalog {
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
