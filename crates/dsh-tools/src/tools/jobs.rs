//! `job_list`, `job_output` and `job_kill`: control of the session's
//! `bash` jobs and of its foreign jobs (background workflows).

use super::{TypedTool, boolean, number, spec, string};
use crate::jobs::{
    Job, JobEnd, now_ms,
    render::{WhenSilent, render_off_worker},
};
use crate::{ForeignJob, ToolContext, ToolOutput, args};
use dsh_protocol::catalog::ToolSpec;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Default and largest wait of `job_output` with `wait: true`.
const DEFAULT_WAIT_MS: u64 = 30_000;
const MAX_WAIT_MS: u64 = 600_000;

/// How long `job_kill` waits for the killed job to settle.
const KILL_SETTLE: Duration = Duration::from_secs(5);

fn unknown_job(id: &str) -> ToolOutput {
    ToolOutput::failure(format!(
        "Error: this session has no job \"{id}\". Call job_list to see its jobs."
    ))
}

/// `running`, `completed` or `failed`.
fn status(end: Option<&JobEnd>) -> &'static str {
    end.map_or("running", |end| end.outcome.status().as_str())
}

/// A one-line state summary, e.g. `completed (exit code: 0)`.
fn summary(job: &Job) -> String {
    match job.end() {
        None => format!(
            "running for {}s",
            now_ms().saturating_sub(job.started_at) / 1000
        ),
        Some(end) => format!(
            "{} ({})",
            end.outcome.status().as_str(),
            end.outcome.detail()
        ),
    }
}

fn job_meta(job: &Job) -> Value {
    let end = job.end();
    let mut meta = json!({
        "jobId": job.id,
        "status": status(end.as_ref()),
        "label": job.label,
        "startedAt": job.started_at,
    });
    if let (Some(map), Some(end)) = (meta.as_object_mut(), end) {
        map.insert("finishedAt".into(), json!(end.finished_at));
        map.insert("detail".into(), json!(end.outcome.detail()));
    }
    meta
}

/// `job/settled`-style state of a foreign job: `running`, `completed`, …
fn foreign_status(job: &dyn ForeignJob) -> String {
    match job.end() {
        None => "running".to_owned(),
        Some(end) => end.status.as_str().to_owned(),
    }
}

fn foreign_meta(job: &dyn ForeignJob) -> Value {
    let mut meta = json!({
        "jobId": job.id(),
        "kind": job.kind(),
        "status": foreign_status(job),
        "label": job.label(),
        "startedAt": job.started_at(),
    });
    if let (Some(map), Some(end)) = (meta.as_object_mut(), job.end()) {
        map.insert("finishedAt".into(), json!(end.finished_at));
        map.insert("detail".into(), json!(end.detail));
    }
    meta
}

/// `job_output` of a foreign job: its new output (or a note that there
/// is none), then its state.
fn foreign_output(job: &dyn ForeignJob, extra: Vec<String>) -> ToolOutput {
    let output = job.take_output();
    let mut text = if output.is_empty() {
        "(no new output)".to_owned()
    } else {
        output
    };
    let state = match job.end() {
        None => "[status: running]".to_owned(),
        Some(end) if end.detail.is_empty() => format!("[status: {}]", end.status.as_str()),
        Some(end) => format!("[status: {}, {}]", end.status.as_str(), end.detail),
    };
    for line in std::iter::once(state).chain(extra) {
        text.push('\n');
        text.push_str(&line);
    }
    ToolOutput::text(text).with_meta(foreign_meta(job))
}

/// `job_list`.
pub(crate) struct JobList {
    spec: ToolSpec,
}

impl JobList {
    pub(crate) fn new() -> Self {
        Self {
            spec: spec(
                "job_list",
                "List this session's bash jobs (foreground commands, commands moved to the background after their timeout, and run_in_background commands) with their id, state and command.",
                vec![],
                &[],
            ),
        }
    }
}

impl TypedTool for JobList {
    type Args = Value;
    const BATCHED: bool = false;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, _args: Value, ctx: ToolContext) -> ToolOutput {
        let jobs = ctx.state.jobs();
        let foreign = ctx.state.foreign_jobs();
        if jobs.is_empty() && foreign.is_empty() {
            return ToolOutput::text("This session has no jobs.").with_meta(json!({"jobs": []}));
        }
        let shown = |label: &str| -> String {
            let label = label.lines().next().unwrap_or_default();
            label.chars().take(120).collect()
        };
        let mut lines: Vec<String> = jobs
            .iter()
            .map(|job| format!("{}  {}  {}", job.id, summary(job), shown(&job.label)))
            .collect();
        lines.extend(foreign.iter().map(|job| {
            format!(
                "{} [{}] {} \u{2014} {}",
                job.id(),
                job.kind(),
                foreign_status(job.as_ref()),
                shown(job.label())
            )
        }));
        let mut meta: Vec<Value> = jobs.iter().map(|job| job_meta(job)).collect();
        meta.extend(foreign.iter().map(|job| foreign_meta(job.as_ref())));
        ToolOutput::text(lines.join("\n")).with_meta(json!({"jobs": meta}))
    }
}

#[derive(Deserialize)]
pub(crate) struct OutputArgs {
    job_id: String,
    wait: Option<bool>,
    timeout_ms: Option<f64>,
}

/// `job_output`.
pub(crate) struct JobOutput {
    spec: ToolSpec,
}

impl JobOutput {
    pub(crate) fn new() -> Self {
        Self {
            spec: spec(
                "job_output",
                "Show the output of a bash job so far (the end of it when long), with its state. Set wait to block until the job ends, for at most timeout_ms.",
                vec![
                    (
                        "job_id",
                        string("The job id, as returned by bash or job_list."),
                    ),
                    (
                        "wait",
                        boolean("Wait for the job to end before answering (default false)."),
                    ),
                    (
                        "timeout_ms",
                        number(
                            "With wait, the longest time to wait in milliseconds (default 30000, at most 600000).",
                        ),
                    ),
                ],
                &["job_id"],
            ),
        }
    }
}

impl TypedTool for JobOutput {
    type Args = OutputArgs;
    const BATCHED: bool = false;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, a: OutputArgs, ctx: ToolContext) -> ToolOutput {
        let wait_ms =
            match args::whole_number("job_output", "timeout_ms", a.timeout_ms, 0, MAX_WAIT_MS) {
                Ok(wait) => wait.unwrap_or(DEFAULT_WAIT_MS),
                Err(out) => return out.into(),
            };
        let Some(job) = ctx.state.job(&a.job_id) else {
            let Some(job) = ctx.state.foreign_job(&a.job_id) else {
                return unknown_job(&a.job_id);
            };
            let mut extra = Vec::new();
            if a.wait == Some(true) && job.end().is_none() {
                tokio::select! {
                    ended = job.wait(Duration::from_millis(wait_ms)) => {
                        if !ended {
                            extra.push(format!("[still running after waiting {wait_ms}ms]"));
                        }
                    }
                    () = ctx.cancel.cancelled() => {}
                }
            }
            return foreign_output(job.as_ref(), extra);
        };
        let mut extra = Vec::new();
        if a.wait == Some(true) && job.end().is_none() {
            tokio::select! {
                end = job.wait(Some(Duration::from_millis(wait_ms))) => {
                    if end.is_none() {
                        extra.push(format!("[still running after waiting {wait_ms}ms]"));
                    }
                }
                () = ctx.cancel.cancelled() => {}
            }
        }
        output_of(&job, extra).await
    }
}

/// The `job_output` text: a state line, then the output and markers.
async fn output_of(job: &Arc<Job>, extra: Vec<String>) -> ToolOutput {
    let end = job.end();
    let body = render_off_worker(
        job,
        end.as_ref().map(|end| end.outcome.clone()),
        extra,
        WhenSilent::SayNoOutput,
    )
    .await;
    let text = format!("Job {}: {}\n{}", job.id, summary(job), body);
    ToolOutput::text(text).with_meta(job_meta(job))
}

#[derive(Deserialize)]
pub(crate) struct KillArgs {
    job_id: String,
    reason: Option<String>,
}

/// `job_kill`.
pub(crate) struct JobKill {
    spec: ToolSpec,
}

impl JobKill {
    pub(crate) fn new() -> Self {
        Self {
            spec: spec(
                "job_kill",
                "Stop a bash job: its command and every process it started are killed.",
                vec![
                    (
                        "job_id",
                        string("The job id, as returned by bash or job_list."),
                    ),
                    (
                        "reason",
                        string("A short note on why the job is stopped; recorded with the job."),
                    ),
                ],
                &["job_id"],
            ),
        }
    }
}

impl TypedTool for JobKill {
    type Args = KillArgs;
    const BATCHED: bool = false;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, a: KillArgs, ctx: ToolContext) -> ToolOutput {
        let reason = a
            .reason
            .map(|r| r.trim().to_owned())
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| "job_kill".to_owned());
        let Some(job) = ctx.state.job(&a.job_id) else {
            let Some(job) = ctx.state.foreign_job(&a.job_id) else {
                return unknown_job(&a.job_id);
            };
            if let Some(end) = job.end() {
                return ToolOutput::text(format!(
                    "Job {} had already ended ({}); nothing was running.",
                    job.id(),
                    end.status.as_str()
                ))
                .with_meta(foreign_meta(job.as_ref()));
            }
            job.kill(&reason);
            return ToolOutput::text(format!("requested cancellation of job {}", job.id()))
                .with_meta(foreign_meta(job.as_ref()));
        };
        if let Some(end) = job.end() {
            // Stray children of a finished command still go.
            job.kill("job_kill");
            return ToolOutput::text(format!(
                "Job {} had already ended ({}); nothing was running.",
                job.id,
                end.outcome.detail()
            ))
            .with_meta(job_meta(&job));
        }
        job.kill(&reason);
        match job.wait(Some(KILL_SETTLE)).await {
            Some(_) => {
                ToolOutput::text(format!("Job {} was killed.", job.id)).with_meta(job_meta(&job))
            }
            None => ToolOutput::failure(format!(
                "Error: job {} was sent SIGKILL but has not ended yet.",
                job.id
            ))
            .with_meta(job_meta(&job)),
        }
    }
}
