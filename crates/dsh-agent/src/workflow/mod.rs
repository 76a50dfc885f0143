//! `workflow`: a JavaScript program (run by [`dsh_workflow`]) that
//! orchestrates child agents, in the foreground or as a background job;
//! and `structured_output`, how a child asked for structured data
//! reports it.
//!
//! A run's children are ordinary child sessions (labelled `"<name> child
//! N"`) whose news goes to the run instead of a notice to the parent's
//! model; the client still sees `subagent.started|finished` and their
//! events. The parent's log records `tool-workflow/run-start`, one
//! `agent-start`/`agent-end` pair per child and `run-end`.

mod args;
mod job;
mod runner;
mod spec;
mod structured;

use crate::core::{AgentTool, Core, HookFuture, ToolCall, ToolOutcome};
use crate::delegation;
use dsh_protocol::catalog::{
    JobStatus, ToolErrorCode, ToolSpec, WorkflowRunEnd, WorkflowRunStart, WorkflowStopReason,
};
use dsh_tools::{CancellationToken, ForeignJob, JobNotice, ToolOutput};
use dsh_workflow::{Event, Run, RunError, Script};
use job::WorkflowJob;
use runner::Driven;
use std::sync::Arc;

/// The `workflow` tool.
pub(crate) struct WorkflowTool;

impl AgentTool for WorkflowTool {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![spec::spec()]
    }

    fn call<'a>(&'a self, call: ToolCall<'a>) -> HookFuture<'a, ToolOutcome> {
        Box::pin(async move {
            run(call.core, call.call_id, call.arguments, call.cancel)
                .await
                .into()
        })
    }
}

/// Runs one `workflow` call of `core`.
async fn run(
    core: &Core,
    call_id: &str,
    arguments: &str,
    cancel: &CancellationToken,
) -> ToolOutput {
    let args = match args::parse(arguments) {
        Ok(args) => args,
        Err(err) => return err.into(),
    };
    if let Err(refusal) = delegation::host(core) {
        return refusal.into();
    }
    let limits = core.profile.workflow.clone();
    let slots = limits.concurrency;
    let Some(this) = core.this.upgrade() else {
        return ToolOutput::failure("Error: the session is closed");
    };
    let name = args.name;
    let mut run = Run::start(
        Script {
            name: name.clone(),
            source: args.script,
            args: args.args,
        },
        limits,
    );
    // Nothing is recorded for a script that does not parse.
    match run.next().await {
        Some(Event::Started) => {}
        Some(Event::Finished(Err(err))) if err.is_parse() => {
            return ToolOutput::failure(format!("Error: {err}"))
                .with_error(ToolErrorCode::ScriptParse);
        }
        Some(Event::Finished(Err(err))) => return ToolOutput::failure(format!("Error: {err}")),
        _ => {
            return ToolOutput::failure("Error: workflow engine failed: the script did not start");
        }
    }
    let run_id = uuid::Uuid::new_v4().to_string();
    core.state().event(WorkflowRunStart {
        run_id: run_id.clone(),
        name: name.clone(),
    });
    if args.background {
        return background(this, run, run_id, name, slots, call_id);
    }
    let driven = runner::drive(
        this,
        run,
        run_id.clone(),
        name.clone(),
        slots,
        cancel.child_token(),
        None,
    )
    .await;
    let (stop, text) = rendered(&name, &driven);
    core.state().event(WorkflowRunEnd {
        run_id,
        stop_reason: stop,
    });
    match stop {
        WorkflowStopReason::Completed => ToolOutput::text(text),
        _ => ToolOutput::failure(text),
    }
}

/// Starts the run as a job of the session and answers at once; the job
/// settles (and the model is told) when the run ends.
fn background(
    this: Arc<Core>,
    run: Run,
    run_id: String,
    name: String,
    slots: usize,
    call_id: &str,
) -> ToolOutput {
    let job = Arc::new(WorkflowJob::new(
        &this.id,
        call_id,
        &name,
        this.cancel.child_token(),
    ));
    this.state().event(job.registered());
    this.session_tools
        .add_foreign_job(Arc::clone(&job) as Arc<dyn ForeignJob>);
    let started = format!(
        "workflow \"{name}\" started in the background as job {}. Its return value arrives with the completion notice; check on it with job_output, stop it with job_kill.",
        job.id()
    );
    tokio::spawn(async move {
        let driven = runner::drive(
            Arc::clone(&this),
            run,
            run_id.clone(),
            name.clone(),
            slots,
            job.cancel.clone(),
            Some(Arc::clone(&job)),
        )
        .await;
        let (stop, text) = rendered(&name, &driven);
        this.state().event(WorkflowRunEnd {
            run_id,
            stop_reason: stop,
        });
        let (status, detail) = match (&driven.result, job.kill_reason()) {
            (Ok(_), _) => (JobStatus::Completed, agents(driven.agents)),
            (Err(RunError::Cancelled), reason) => (
                JobStatus::Killed,
                reason.unwrap_or_else(|| "cancelled".to_owned()),
            ),
            (Err(err), _) => (
                JobStatus::Failed,
                err.to_string()
                    .lines()
                    .next()
                    .unwrap_or_default()
                    .to_owned(),
            ),
        };
        let settled = job.finish(&text, status, detail.clone());
        this.state().event(settled);
        // A run stopped on request is not news for the model.
        if status != JobStatus::Killed {
            this.tool_host.job_notice(JobNotice {
                job_id: job.id().to_owned(),
                summary: format!("workflow {name} [status: {}, {detail}]", status.as_str()),
                text: format!(
                    "background job {} (workflow: {name}) finished [status: {}, {detail}]. Read its output with job_output.",
                    job.id(),
                    status.as_str()
                ),
            });
        }
    });
    ToolOutput::text(started)
}

/// `1 agent`, `2 agents`.
fn agents(n: u64) -> String {
    if n == 1 {
        "1 agent".to_owned()
    } else {
        format!("{n} agents")
    }
}

/// How the run ended and the text of its result.
fn rendered(name: &str, driven: &Driven) -> (WorkflowStopReason, String) {
    match &driven.result {
        Ok(value) => {
            let pretty = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".to_owned());
            (
                WorkflowStopReason::Completed,
                format!(
                    "workflow \"{name}\" completed ({}).\nReturn value:\n{pretty}",
                    agents(driven.agents)
                ),
            )
        }
        Err(RunError::Cancelled) => (
            WorkflowStopReason::Cancelled,
            format!("Error: {}", RunError::Cancelled),
        ),
        Err(err) => (WorkflowStopReason::Error, format!("Error: {err}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_read_as_the_official_ones() {
        let driven = Driven {
            result: Ok(serde_json::json!({"a": "ALPHA", "n": 2})),
            agents: 2,
        };
        assert_eq!(
            rendered("two-step", &driven),
            (
                WorkflowStopReason::Completed,
                "workflow \"two-step\" completed (2 agents).\nReturn value:\n{\n  \"a\": \"ALPHA\",\n  \"n\": 2\n}".to_owned()
            )
        );
        let one = Driven {
            result: Ok(serde_json::Value::Null),
            agents: 1,
        };
        assert_eq!(
            rendered("wf", &one).1,
            "workflow \"wf\" completed (1 agent).\nReturn value:\nnull"
        );
        let cancelled = Driven {
            result: Err(RunError::Cancelled),
            agents: 0,
        };
        assert_eq!(rendered("wf", &cancelled).0, WorkflowStopReason::Cancelled);
    }
}
