//! Drives one run: the engine's events, one task per `agent()` call (a
//! child session, at most `DSH_WORKFLOW_CONCURRENCY` at once), the `tool-workflow/*`
//! events, and the stop of everything when the run is cancelled or ends.

use super::job::WorkflowJob;
use super::structured::{ChildReport, Report};
use crate::core::{ChildSink, Core};
use crate::delegation::{ChildPlan, create_child};
use dsh_protocol::catalog::{
    SubagentProvider, WorkflowAgentEnd, WorkflowAgentOutcome, WorkflowAgentStart,
};
use dsh_protocol::notifications::SubagentStopReason;
use dsh_session::text_block;
use dsh_tools::CancellationToken;
use dsh_workflow::{AgentCall, Event, Run, RunError};
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// How long a stopped child is given to settle before its call is
/// answered without it.
const SETTLE_WAIT: Duration = Duration::from_secs(5);

/// Longest label taken from a prompt, in characters (an ellipsis ends a
/// cut one), as the official runtime shows it.
const LABEL_CHARS: usize = 48;

/// How a run ended.
pub(crate) struct Driven {
    /// The script's value, or why there is none.
    pub result: Result<Value, RunError>,
    /// How many children it started.
    pub agents: u64,
}

/// What the run and its agent tasks share.
struct Shared {
    core: Arc<Core>,
    run_id: String,
    name: String,
    /// Cancelled when the run is cancelled or ends: agent tasks stop.
    stop: CancellationToken,
    started: AtomicU64,
    children: Mutex<Vec<String>>,
    job: Option<Arc<WorkflowJob>>,
}

impl Shared {
    /// A progress line: to the job's output when in the background, and
    /// to the diagnostics.
    fn note(&self, line: &str) {
        tracing::info!(target: "dsh::workflow", run = %self.run_id, "{line}");
        if let Some(job) = &self.job {
            job.log(line);
        }
    }

    /// Stops the run's children that are still working.
    fn interrupt_children(&self) {
        let ids = self
            .children
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        for id in ids {
            if let Some(child) = self.core.child(&id) {
                child.interrupt();
            }
        }
    }
}

/// Runs `run` to its end; `cancel` stops it. Children start in the order
/// of the script's `agent()` calls, at most `slots` at once.
pub(crate) async fn drive(
    core: Arc<Core>,
    mut run: Run,
    run_id: String,
    name: String,
    slots: usize,
    cancel: CancellationToken,
    job: Option<Arc<WorkflowJob>>,
) -> Driven {
    let shared = Arc::new(Shared {
        core,
        run_id,
        name,
        stop: cancel.child_token(),
        started: AtomicU64::new(0),
        children: Mutex::new(Vec::new()),
        job,
    });
    let mut agents = JoinSet::new();
    let mut queued: VecDeque<AgentCall> = VecDeque::new();
    let mut cancelling = false;
    let result = loop {
        while agents.len() < slots
            && let Some(call) = queued.pop_front()
        {
            agents.spawn(agent(Arc::clone(&shared), call));
        }
        tokio::select! {
            biased;
            () = cancel.cancelled(), if !cancelling => {
                cancelling = true;
                run.cancel();
                shared.stop.cancel();
                shared.interrupt_children();
                for call in queued.drain(..) {
                    run.settle(call.id, Value::Null);
                }
            }
            Some(done) = agents.join_next(), if !agents.is_empty() => {
                if let Ok((id, value)) = done {
                    run.settle(id, value);
                }
            }
            event = run.next() => match event {
                Some(Event::Agent(call)) if cancelling => run.settle(call.id, Value::Null),
                Some(Event::Agent(call)) => queued.push_back(call),
                Some(Event::Log(line)) => shared.note(&line),
                Some(Event::Started) => {}
                Some(Event::Finished(result)) => break result,
                None => break Err(RunError::Engine("the engine stopped without a result".to_owned())),
            }
        }
    };
    // Children still working when the script ended are stopped, and
    // their ends recorded before the run's.
    shared.stop.cancel();
    if !agents.is_empty() {
        shared.interrupt_children();
        while agents.join_next().await.is_some() {}
    }
    Driven {
        result,
        agents: shared.started.load(Ordering::SeqCst),
    }
}

/// One `agent()` call: a child session with the call's prompt as its
/// task; answers its final text (or structured output), `null` when it
/// failed.
async fn agent(shared: Arc<Shared>, call: AgentCall) -> (u64, Value) {
    let seq = call.id;
    if shared.stop.is_cancelled() {
        return (seq, Value::Null);
    }
    if let Some(provider) = call.provider.as_deref()
        && provider != shared.core.route.provider
    {
        shared.note(&format!(
            "agent {seq} was not started: provider {} is not this session's ({}); only the model can be chosen",
            Value::from(provider),
            shared.core.route.provider
        ));
        return (seq, Value::Null);
    }
    let label = call
        .label
        .clone()
        .unwrap_or_else(|| prompt_label(&call.prompt));
    let (tx, mut rx) = mpsc::unbounded_channel();
    let asked = call.schema.is_some();
    let (report, structured_output) = Report::new(tx, call.schema);
    let n = shared.started.fetch_add(1, Ordering::SeqCst) + 1;
    let plan = ChildPlan {
        provider: SubagentProvider::Spawn,
        label: format!("{} child {n}", shared.name),
        task: vec![text_block(call.prompt)],
        cwd: None,
        model: call.model,
        sink: Some(report as Arc<dyn ChildSink>),
        tools: structured_output.into_iter().collect(),
    };
    let child_id = match create_child(&shared.core, plan).await {
        Ok(id) => id,
        Err(err) => {
            shared.started.fetch_sub(1, Ordering::SeqCst);
            let why = err.to_string();
            shared.note(&format!(
                "agent {seq} was not started: {}",
                why.strip_prefix("Error: ").unwrap_or(&why)
            ));
            return (seq, Value::Null);
        }
    };
    shared
        .children
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(child_id.clone());
    shared.core.state().event(WorkflowAgentStart {
        run_id: shared.run_id.clone(),
        seq,
        label,
        phase: call.phase,
        child_id: child_id.clone(),
    });
    let report = tokio::select! {
        report = rx.recv() => report,
        () = shared.stop.cancelled() => {
            if let Some(child) = shared.core.child(&child_id) {
                child.interrupt();
            }
            tokio::time::timeout(SETTLE_WAIT, rx.recv()).await.ok().flatten()
        }
    };
    let (outcome, value) = outcome_of(report, asked);
    shared.core.state().event(WorkflowAgentEnd {
        run_id: shared.run_id.clone(),
        seq,
        outcome,
    });
    (seq, value)
}

/// The outcome and the value of a child's report.
fn outcome_of(report: Option<ChildReport>, asked: bool) -> (WorkflowAgentOutcome, Value) {
    let Some(report) = report else {
        return (WorkflowAgentOutcome::Cancelled, Value::Null);
    };
    match report.stop {
        SubagentStopReason::Completed | SubagentStopReason::MaxTokens if asked => {
            match report.structured {
                Some(value) => (WorkflowAgentOutcome::Completed, value),
                None => (WorkflowAgentOutcome::Failed, Value::Null),
            }
        }
        SubagentStopReason::Completed | SubagentStopReason::MaxTokens => {
            (WorkflowAgentOutcome::Completed, Value::String(report.text))
        }
        SubagentStopReason::Aborted => (WorkflowAgentOutcome::Cancelled, Value::Null),
        _ => (WorkflowAgentOutcome::Failed, Value::Null),
    }
}

/// The label of a call without one: the prompt on one line, cut to
/// [`LABEL_CHARS`] characters with an ellipsis.
fn prompt_label(prompt: &str) -> String {
    let line = prompt.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= LABEL_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(LABEL_CHARS - 1).collect();
    cut.push('\u{2026}');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_prompt_makes_a_cut_label() {
        let prompt = format!("TASK-A {}", "x".repeat(300));
        let label = prompt_label(&prompt);
        assert_eq!(label.chars().count(), 48);
        assert_eq!(label, format!("TASK-A {}\u{2026}", "x".repeat(40)));
        assert_eq!(prompt_label("  two\n words "), "two words");
    }

    #[test]
    fn outcomes_follow_the_childs_end() {
        let report = |stop, structured| ChildReport {
            stop,
            text: "T".into(),
            structured,
        };
        assert_eq!(
            outcome_of(Some(report(SubagentStopReason::Completed, None)), false),
            (WorkflowAgentOutcome::Completed, Value::from("T"))
        );
        assert_eq!(
            outcome_of(Some(report(SubagentStopReason::Completed, None)), true),
            (WorkflowAgentOutcome::Failed, Value::Null)
        );
        assert_eq!(
            outcome_of(
                Some(report(
                    SubagentStopReason::Completed,
                    Some(serde_json::json!({"x": 5}))
                )),
                true
            ),
            (WorkflowAgentOutcome::Completed, serde_json::json!({"x": 5}))
        );
        assert_eq!(
            outcome_of(Some(report(SubagentStopReason::Error, None)), false),
            (WorkflowAgentOutcome::Failed, Value::Null)
        );
        assert_eq!(
            outcome_of(Some(report(SubagentStopReason::Aborted, None)), false),
            (WorkflowAgentOutcome::Cancelled, Value::Null)
        );
        assert_eq!(
            outcome_of(None, false),
            (WorkflowAgentOutcome::Cancelled, Value::Null)
        );
    }
}
