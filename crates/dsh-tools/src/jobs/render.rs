//! The text of a `bash` result: output, then status markers.

use super::job::{ABORTED, Job, Outcome, signal_name};
use super::quota::{SPILL_MAX_BYTES_VAR, SPILL_SESSION_MAX_BYTES_VAR};
use crate::PermissionMode;
use std::sync::Arc;

/// Most bytes of output shown in one result; longer output keeps its tail
/// and the whole is written to a file named in the result.
pub const OUTPUT_DISPLAY_LIMIT: usize = 30_000;

/// What a result shows when the job has printed nothing yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WhenSilent {
    /// `(no output)` before the markers.
    SayNoOutput,
    /// Only the markers (as the official runtime words a command moved to
    /// the background by its time limit).
    MarkersOnly,
}

/// Renders a job's output followed by `markers` (each on its own line),
/// adding the truncation and sandbox-denial markers as needed.
pub(crate) fn render(
    job: &Job,
    ended: Option<&Outcome>,
    extra: &[String],
    silent: WhenSilent,
) -> String {
    let peek = job.output(false);
    let body_len = peek.stdout.len() + peek.stderr.len() + "[stderr]\n".len() + 1;
    let output = if body_len > OUTPUT_DISPLAY_LIMIT || peek.partial {
        job.output(true)
    } else {
        peek
    };
    let body = if silent == WhenSilent::MarkersOnly
        && output.stdout.is_empty()
        && output.stderr.is_empty()
    {
        String::new()
    } else {
        compose(&output.stdout, &output.stderr)
    };
    let mut markers = Vec::new();
    let mut text = if body.len() > OUTPUT_DISPLAY_LIMIT || output.partial {
        let note = match &output.full_path {
            Some(path) => format!("[output truncated; full output: {}]", path.display()),
            None if output.over_quota => format!(
                "[output truncated; the full output could not be saved: the session's saved tool output reached its quota ({SPILL_SESSION_MAX_BYTES_VAR}={} bytes)]",
                job.quota().max()
            ),
            None => "[output truncated; the full output could not be saved]".to_owned(),
        };
        markers.push(note);
        if output.full_path.is_some() && output.left_out.dropped > 0 {
            let limits = job.limits();
            markers.push(format!(
                "[the file keeps the first {} and the last {} bytes of each stream; {} bytes in between were dropped ({SPILL_MAX_BYTES_VAR}={} bytes per job)]",
                limits.head(),
                limits.tail(),
                output.left_out.dropped,
                limits.job_max
            ));
        }
        if output.full_path.is_some() && output.left_out.unsaved > 0 {
            markers.push(format!(
                "[the file lacks the last {} bytes: the session's saved tool output reached its quota ({SPILL_SESSION_MAX_BYTES_VAR}={} bytes)]",
                output.left_out.unsaved,
                job.quota().max()
            ));
        }
        tail(&body, OUTPUT_DISPLAY_LIMIT).to_owned()
    } else {
        body
    };
    if let Some(outcome) = ended {
        if job.mode.is_restricted() && denied_by_sandbox(outcome, &output.stderr) {
            markers.push(sandbox_marker(job.mode));
        }
        match outcome {
            Outcome::Killed(reason) => markers.push(format!("[stopped: {reason}]")),
            Outcome::Aborted => markers.push(format!("[stopped: {ABORTED}]")),
            Outcome::Signaled(signal) => {
                markers.push(format!("[killed by signal: {}]", signal_name(*signal)))
            }
            Outcome::Exited(code) if *code != 0 => markers.push(format!("[exit code: {code}]")),
            _ => {}
        }
    }
    markers.extend(extra.iter().cloned());
    for marker in markers {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&marker);
    }
    text
}

/// [`render`] on the blocking pool: writing the output file copies up to
/// the spill cap, which must not run on an async worker.
pub(crate) async fn render_off_worker(
    job: &Arc<Job>,
    ended: Option<Outcome>,
    extra: Vec<String>,
    silent: WhenSilent,
) -> String {
    let job = job.clone();
    tokio::task::spawn_blocking(move || render(&job, ended.as_ref(), &extra, silent))
        .await
        .unwrap_or_else(|err| format!("[the output could not be shown: {err}]"))
}

/// `stdout`, then a `[stderr]` section when stderr is non-empty, or
/// `(no output)` when both are empty.
pub(crate) fn compose(stdout: &str, stderr: &str) -> String {
    let mut body = stdout.to_owned();
    if !stderr.is_empty() {
        if !body.is_empty() && !body.ends_with('\n') {
            body.push('\n');
        }
        body.push_str("[stderr]\n");
        body.push_str(stderr);
    }
    if body.is_empty() {
        body.push_str("(no output)");
    }
    body
}

/// The last `limit` bytes of `text`, cut at a character boundary.
pub(crate) fn tail(text: &str, limit: usize) -> &str {
    if text.len() <= limit {
        return text;
    }
    let mut start = text.len() - limit;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// `[sandbox: file access denied under <mode> mode]`.
pub(crate) fn sandbox_marker(mode: PermissionMode) -> String {
    format!("[sandbox: file access denied under {mode} mode]")
}

/// A conservative guess that a failed command hit the sandbox: it failed
/// and its stderr carries the usual denial wording of EACCES, EPERM or
/// EROFS.
fn denied_by_sandbox(outcome: &Outcome, stderr: &str) -> bool {
    let failed = matches!(outcome, Outcome::Exited(code) if *code != 0);
    failed
        && [
            "Permission denied",
            "Read-only file system",
            "Operation not permitted",
        ]
        .iter()
        .any(|needle| stderr.contains(needle))
}
