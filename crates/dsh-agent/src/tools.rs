//! Tool dispatch: the profile's tool library (`dsh-tools`) plus the tools
//! that need the agent's own services (`working_directory`; in the `sdk`
//! roster also delegation, goals and plan mode).

use crate::delegation;
use crate::inner::Inner;
use crate::project;
use crate::state::Delivery;
use crate::{goals, plan_mode, prose, workflow};
use dsh_protocol::catalog::{SubagentProvider, ToolEvent, ToolSpec};
use dsh_session::{UserMessage, text_block};
use dsh_tools::{CancellationToken, JobNotice, ToolContext, ToolHost, ToolOutput, ToolSet};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// Name of the agent-implemented working-directory tool.
const WORKING_DIRECTORY: &str = "working_directory";

/// A tool only the `sdk` library has: agents of such a library also get the
/// delegation tools (sdk-minimal advertises three tools only).
const DELEGATING_LIBRARY_MARK: &str = "job_list";

/// Appends tool events (`job/*`, `todo/write`, `approval/*`) to the session
/// log of the agent that runs the tool.
pub(crate) struct AgentHost(pub Weak<Inner>);

impl ToolHost for AgentHost {
    fn emit(&self, event: ToolEvent) {
        if let Some(inner) = self.0.upgrade() {
            inner.state().event(event);
        }
    }

    fn job_notice(&self, notice: JobNotice) {
        if let Some(inner) = self.0.upgrade() {
            let message = UserMessage::inbox_notice(
                TOOL_JOBS,
                vec![text_block(notice.text)],
                &notice.summary,
                None,
            );
            inner.deliver(message, Delivery::Notice, None);
        }
    }
}

/// Source kind of a background job's notice.
const TOOL_JOBS: &str = "tool-jobs";

/// A tool library, the list advertised for it and that list's estimated
/// tokens.
type SharedSpecs = (Weak<ToolSet>, Arc<Vec<ToolSpec>>, u64);

/// The tools advertised to the model, shared by every session of one tool
/// library: the list (≈35 KiB of JSON schemas in the `sdk` profile) is built
/// once, not once per open session.
/// Also returns the list's estimated tokens (it goes with every request).
pub(crate) fn shared_specs(library: &Arc<ToolSet>) -> (Arc<Vec<ToolSpec>>, u64) {
    /// One list per live library (a runtime has one); a `Weak` keeps its
    /// library's address from being reused while its entry exists.
    static SHARED: Mutex<Vec<SharedSpecs>> = Mutex::new(Vec::new());
    let mut shared = SHARED.lock().unwrap_or_else(PoisonError::into_inner);
    shared.retain(|(set, _, _)| set.strong_count() > 0);
    if let Some((_, specs, tokens)) = shared
        .iter()
        .find(|(set, _, _)| std::ptr::eq(set.as_ptr(), Arc::as_ptr(library)))
    {
        return (Arc::clone(specs), *tokens);
    }
    let specs = Arc::new(specs(library));
    let json = serde_json::to_string(&*specs).map_or(0, |json| json.len());
    let tokens = crate::compaction::text_tokens(json);
    shared.push((Arc::downgrade(library), Arc::clone(&specs), tokens));
    (specs, tokens)
}

/// The tools advertised to the model: the library's, `working_directory`
/// and (with the library of the `sdk` roster) the delegation tools and
/// `skill`, alphabetically.
fn specs(library: &ToolSet) -> Vec<ToolSpec> {
    let mut specs = library.specs();
    if library.contains(DELEGATING_LIBRARY_MARK) {
        specs.extend(delegation::specs());
        specs.push(project::skill_spec());
        specs.extend(goals::specs());
        specs.push(plan_mode::spec());
        specs.push(workflow::spec());
    }
    specs.push(ToolSpec {
        name: WORKING_DIRECTORY.into(),
        description: prose::WORKING_DIRECTORY_TOOL.into(),
        parameters: json!({
            "type": "object",
            "properties": {"cd": {"type": "string", "description": prose::WORKING_DIRECTORY_CD}},
        }),
    });
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    specs
}

/// Runs one call in the session's current directory.
pub(crate) async fn run(
    inner: &Inner,
    call_id: &str,
    name: &str,
    arguments: &str,
    cwd: PathBuf,
    cancel: &CancellationToken,
) -> ToolOutput {
    if name == WORKING_DIRECTORY {
        return working_directory(inner, arguments);
    }
    let sdk = inner.tools.contains(DELEGATING_LIBRARY_MARK);
    if sdk && name == project::SKILL {
        let home = inner.profile.skills_home.clone();
        return project::run_skill(cwd, home, arguments).await;
    }
    if sdk && goals::GOAL_TOOLS.contains(&name) {
        return goals::run(inner, name, arguments);
    }
    if sdk && name == workflow::WORKFLOW {
        return workflow::run(inner, call_id, arguments, cancel).await;
    }
    if name == workflow::STRUCTURED_OUTPUT
        && let Some(report) = workflow::structured_asked(inner)
    {
        return workflow::record_structured(report, arguments);
    }
    if sdk && name == plan_mode::EXIT_PLAN_MODE {
        return plan_mode::exit_plan_mode(arguments);
    }
    if sdk && delegation::DELEGATION_TOOLS.contains(&name) {
        return match name {
            "subagent" => delegation::spawn(inner, arguments, SubagentProvider::Spawn).await,
            "subagent_fork" => delegation::spawn(inner, arguments, SubagentProvider::Fork).await,
            "send_message" => delegation::send_message(inner, arguments),
            "interrupt_agent" => delegation::interrupt_agent(inner, arguments),
            _ => delegation::list_agents(inner, arguments),
        };
    }
    let ctx = ToolContext {
        session_id: inner.id.clone(),
        call_id: call_id.to_owned(),
        cwd,
        workspace: inner.workspace.clone(),
        mode: inner.profile.permission_mode,
        host: Arc::clone(&inner.host),
        state: Arc::clone(&inner.session_tools),
        cancel: cancel.child_token(),
    };
    inner.tools.run(name, arguments, ctx).await
}

/// `working_directory {cd?}`: reports or changes the session directory, as
/// `session/working-directory/get|set` do.
fn working_directory(inner: &Inner, arguments: &str) -> ToolOutput {
    let arguments = if arguments.trim().is_empty() {
        "{}"
    } else {
        arguments
    };
    let cd = match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(map)) => match map.get("cd") {
            None | Some(Value::Null) => None,
            Some(Value::String(cd)) => Some(cd.clone()),
            Some(_) => return ToolOutput::failure("Error: parameter \"cd\" must be a string"),
        },
        _ => return ToolOutput::failure("Error: arguments must be a JSON object"),
    };
    let mut state = inner.state();
    match cd {
        None => ToolOutput::text(prose::current_directory(
            &state.effective_cwd(&inner.workspace),
        )),
        Some(cd) => match state.set_cwd(&cd) {
            Ok(dir) => ToolOutput::text(prose::current_directory(&dir)),
            Err(err) => ToolOutput::failure(format!("Error: {err}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(specs: &[ToolSpec]) -> Vec<&str> {
        specs.iter().map(|s| s.name.as_str()).collect()
    }

    #[test]
    fn sessions_of_one_library_share_one_spec_list() {
        let config = || dsh_tools::ToolsConfig::new(std::env::temp_dir());
        let sdk = Arc::new(dsh_tools::sdk_tools(config()));
        let (first, tokens) = shared_specs(&sdk);
        assert!(Arc::ptr_eq(&first, &shared_specs(&sdk).0));
        assert!(tokens > 1_000, "{tokens}");
        assert_eq!(*first, specs(&sdk));
        assert!(names(&first).contains(&WORKING_DIRECTORY));
        // Another library gets its own list, not the cached one.
        let minimal = Arc::new(dsh_tools::sdk_minimal_tools(config()));
        let (other, _) = shared_specs(&minimal);
        assert_eq!(names(&other), names(&specs(&minimal)));
        assert_ne!(names(&other), names(&first));
    }
}
