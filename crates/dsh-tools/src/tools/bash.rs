//! `bash` (sdk profile): one fresh `bash -c` per call, run as a session job
//! inside the sandbox.

use super::{TypedTool, boolean, justification, number, sandbox_permissions, spec, string};
use crate::approval::{Escalation, check_escalation};
use crate::jobs::{
    self, ABORTED, Job, JobEnd, Outcome, SpillTarget,
    render::{WhenSilent, render_off_worker},
};
use crate::{OutputTap, ToolContext, ToolOutput, ToolsConfig, paths};
use dsh_protocol::catalog::ToolSpec;
use dsh_protocol::catalog::{ToolErrorCode, ToolEvent};
use serde::Deserialize;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Longest foreground wait a call may ask for with `timeoutMs`.
const MAX_TIMEOUT_MS: f64 = 600_000.0;

/// The line after the marker of a command moved to the background by its
/// time limit, word for word as the official runtime writes it.
const BACKGROUNDED_NOTICE: &str = "The command keeps running in the background. You will be notified when it finishes; read newer output with job_output, stop it with job_kill.";

const DESCRIPTION: &str = "Run a shell command with bash in a fresh process (no state carries over between calls; use workdir instead of cd). The command runs inside the session's file-system sandbox with stdin closed. The result holds stdout, then a [stderr] section if anything was written there, then status lines such as [exit code: N] for a non-zero exit. A non-zero exit is reported, not treated as a tool failure. Output longer than 30000 bytes keeps its end and names a file holding all of it. A command still running when timeoutMs (default 60000) expires keeps running as a background job whose id is returned; check it with job_output and stop it with job_kill. Set run_in_background for servers and other long-lived commands.";

#[derive(Deserialize)]
pub(crate) struct Args {
    command: String,
    #[serde(rename = "timeoutMs")]
    timeout_ms: Option<f64>,
    workdir: Option<String>,
    run_in_background: Option<bool>,
    sandbox_permissions: Option<String>,
    justification: Option<String>,
}

/// The sdk `bash` tool.
pub(crate) struct Bash {
    spec: ToolSpec,
    config: Arc<ToolsConfig>,
}

impl Bash {
    pub(crate) fn new(config: Arc<ToolsConfig>) -> Self {
        let spec = spec(
            "bash",
            DESCRIPTION,
            vec![
                (
                    "description",
                    string(
                        "A few words saying what the command does, for the people following along.",
                    ),
                ),
                ("command", string("The command line to run with bash -c.")),
                (
                    "timeoutMs",
                    number(
                        "How long to wait for the command, in milliseconds, before moving it to the background (default 60000, at most 600000).",
                    ),
                ),
                (
                    "workdir",
                    string(
                        "Directory to run in, absolute or relative to the current working directory. Defaults to the current working directory.",
                    ),
                ),
                (
                    "run_in_background",
                    boolean(
                        "Start the command as a background job and return its id at once, without waiting for any output.",
                    ),
                ),
                ("sandbox_permissions", sandbox_permissions()),
                ("justification", justification()),
            ],
            &["description", "command"],
        );
        Self { spec, config }
    }

    async fn run_command(&self, args: Args, mut ctx: ToolContext) -> ToolOutput {
        // As the official runtime: an empty command is refused before the
        // sandbox request is looked at.
        if args.command.trim().is_empty() {
            return ToolOutput::failure("Error: the command is empty.");
        }
        let escalation = Escalation {
            requested: args.sandbox_permissions.as_deref(),
            justification: args.justification.as_deref(),
            subject: &args.command,
            arguments: json!({
                "command": args.command,
                "workdir": args.workdir,
                "timeoutMs": args.timeout_ms,
                "run_in_background": args.run_in_background,
                "sandbox_permissions": args.sandbox_permissions,
                "justification": args.justification,
            }),
        };
        if let Some(declined) = check_escalation(&mut ctx, "bash", escalation).await {
            return declined;
        }
        if ctx.state.is_shut_down() {
            return ToolOutput::failure(
                "Error: the session is shutting down; no new commands can start.",
            );
        }
        let timeout = match args.timeout_ms {
            None => self.config.bash_timeout,
            Some(ms) if ms.is_finite() && ms > 0.0 => {
                Duration::from_millis(ms.min(MAX_TIMEOUT_MS).round().max(1.0) as u64)
            }
            Some(ms) => {
                // The official text.
                return ToolOutput::failure(format!(
                    "Error: invalid timeoutMs: expected a positive number, got {ms}"
                ));
            }
        };
        // As the official runtime holds it: joined as written (no `~`, `.`
        // or `..` handling, a trailing `/` kept); the kernel resolves it,
        // so `sub/missing/..` is no directory. `meta.cwd` shows it so.
        let cwd = match &args.workdir {
            Some(dir) => ctx.cwd.join(dir),
            None => ctx.cwd.clone(),
        };
        if !cwd.is_dir() {
            return ToolOutput::failure(format!(
                "Error: the working directory {} does not exist or is not a directory.",
                cwd.display()
            ));
        }
        let meta = json!({"cwd": paths::display(&cwd)});
        let job = Job::new(
            &args.command,
            &ctx.session_id,
            &ctx.call_id,
            cwd,
            ctx.mode,
            SpillTarget {
                dir: self.config.spill_dir.clone(),
                limits: self.config.spill,
                quota: ctx.state.spill_quota(self.config.spill.session_max),
            },
        );
        ctx.state.add_job(job.clone());
        ctx.host.emit(ToolEvent::JobRegistered(job.registered()));
        let started = self.config.sandbox.check(ctx.mode).and_then(|()| {
            jobs::start(
                &job,
                &self.config.sandbox,
                &ctx.workspace,
                &args.command,
                ctx.host.clone(),
            )
        });
        if let Err(text) = started {
            job.finish(Outcome::Failed(text.clone()), ctx.host.as_ref());
            return ToolOutput::failure(format!("Error: {text}"));
        }
        if args.run_in_background == Some(true) {
            job.move_to_background(ctx.host.as_ref());
            // The official text; `meta.jobId` is ours (the official meta is
            // `{cwd}` only).
            return ToolOutput::text(format!("started background job {}", job.id))
                .with_meta(with_job(meta, &job.id));
        }
        // The output is shown while this call waits for it, and no longer.
        let _watched = ctx.output_tap.clone().map(|tap| Watched::new(&job, tap));
        let end = tokio::select! {
            end = job.wait(None) => end,
            () = tokio::time::sleep(timeout) => {
                job.move_to_background(ctx.host.as_ref());
                // The official text: what the command printed so far (nothing
                // when it printed nothing), the marker, then the notice.
                let note = format!(
                    "[still running after {}ms; moved to background job {}]",
                    timeout.as_millis(),
                    job.id
                );
                let text = render_off_worker(
                    &job,
                    None,
                    vec![note, BACKGROUNDED_NOTICE.to_owned()],
                    WhenSilent::MarkersOnly,
                )
                .await;
                return ToolOutput::text(text).with_meta(with_job(meta, &job.id));
            }
            () = ctx.cancel.cancelled() => {
                job.abort(ctx.host.as_ref());
                return ToolOutput::failure(format!("Error: {ABORTED}"))
                    .with_error(ToolErrorCode::Aborted);
            }
        };
        finished(&job, end, meta).await
    }
}

/// A job whose output a tap sees until this is dropped.
struct Watched<'a>(&'a Job);

impl<'a> Watched<'a> {
    fn new(job: &'a Job, tap: Arc<dyn OutputTap>) -> Self {
        job.tap(tap);
        Self(job)
    }
}

impl Drop for Watched<'_> {
    fn drop(&mut self) {
        self.0.untap();
    }
}

/// The result of a call whose job has ended.
pub(crate) async fn finished(
    job: &Arc<Job>,
    end: Option<JobEnd>,
    meta: serde_json::Value,
) -> ToolOutput {
    match end.map(|end| end.outcome) {
        Some(Outcome::Failed(text)) => ToolOutput::failure(format!("Error: {text}")),
        Some(outcome) => ToolOutput::text(
            render_off_worker(job, Some(outcome), Vec::new(), WhenSilent::SayNoOutput).await,
        )
        .with_meta(meta),
        None => ToolOutput::failure("Error: lost track of the command."),
    }
}

fn with_job(mut meta: serde_json::Value, id: &str) -> serde_json::Value {
    if let Some(map) = meta.as_object_mut() {
        map.insert("jobId".into(), json!(id));
    }
    meta
}

impl TypedTool for Bash {
    type Args = Args;
    const BATCHED: bool = false;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, args: Args, ctx: ToolContext) -> ToolOutput {
        self.run_command(args, ctx).await
    }
}
