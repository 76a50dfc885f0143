//! Running the hooks of one event: every matching command at once, each as
//! `/bin/sh -c <command>` in its own process group, outside the model's
//! sandbox (hooks are the user's configuration, not model output) but
//! without the providers' credentials in its environment. The event's
//! input is written to its stdin; its stdout and stderr are read up to a
//! bound; its time is limited; and when the run ends, however it ends,
//! the whole group is killed, so nothing a hook started outlives it.

use crate::config::{Handler, HookSet, SourceKind};
use crate::event::HookEvent;
use dsh_tools::{CancellationToken, HiddenEnv};
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};

/// Bytes of a hook's stdout (and of its stderr) read at most by default;
/// a hook that writes more is stopped.
pub const DEFAULT_OUTPUT_MAX_BYTES: usize = 256 * 1024;

/// How long a hook's output is still read after the hook itself exited
/// (a process it left behind may hold its pipes open).
const EXIT_GRACE: Duration = Duration::from_millis(500);

/// Where and how hooks run.
#[derive(Debug, Clone)]
pub struct RunEnv {
    /// Their working directory (the session's).
    pub cwd: PathBuf,
    /// The project directory, as `CLAUDE_PROJECT_DIR` and `DSH_PROJECT_DIR`.
    pub project_dir: PathBuf,
    /// Variables removed from their environment (the providers').
    pub hidden: HiddenEnv,
    /// Bytes of stdout and of stderr read at most.
    pub output_max: usize,
}

/// How one run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunStatus {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it.
    Signaled,
    /// It ran past its time limit and was killed.
    TimedOut(Duration),
    /// It wrote more than the bound on one stream and was killed.
    OutputTooLarge(usize),
    /// It could not be started.
    SpawnFailed(String),
    /// The turn it ran for was cancelled; it was killed.
    Cancelled,
}

impl RunStatus {
    /// The exit code, when it exited.
    pub fn code(&self) -> Option<i32> {
        match self {
            Self::Exited(code) => Some(*code),
            _ => None,
        }
    }

    /// What happened, for the client (`exited with code 3`, `timed out
    /// after 60000 ms`).
    pub fn describe(&self) -> String {
        match self {
            Self::Exited(code) => format!("exited with code {code}"),
            Self::Signaled => "was ended by a signal".into(),
            Self::TimedOut(limit) => format!("timed out after {} ms", limit.as_millis()),
            Self::OutputTooLarge(max) => {
                format!("wrote more than {max} bytes of output and was stopped")
            }
            Self::SpawnFailed(why) => format!("could not be started: {why}"),
            Self::Cancelled => "was stopped: the turn was cancelled".into(),
        }
    }
}

/// One hook's run.
#[derive(Debug, Clone)]
pub struct HookRun {
    /// The command.
    pub command: String,
    /// Where it was configured.
    pub source: SourceKind,
    /// How long it ran.
    pub duration: Duration,
    /// How it ended.
    pub status: RunStatus,
    /// What it wrote to stdout (bounded; invalid UTF-8 replaced).
    pub stdout: String,
    /// What it wrote to stderr (bounded).
    pub stderr: String,
}

/// The commands of `set` that run for `event` with these matcher values
/// (for tools: [`crate::tools::match_names`]), each command once, in
/// configuration order.
pub fn matching(set: &HookSet, event: HookEvent, values: &[&str]) -> Vec<Arc<Handler>> {
    let mut handlers: Vec<Arc<Handler>> = Vec::new();
    for group in set.groups(event) {
        if event.uses_matcher() && !group.matcher.matches(values) {
            continue;
        }
        for handler in &group.handlers {
            if !handlers.iter().any(|h| h.command == handler.command) {
                handlers.push(Arc::clone(handler));
            }
        }
    }
    handlers
}

/// Runs `handlers` at once for `event` with `input` on their stdin; the
/// runs in the handlers' order. Cancelling `cancel` stops them all.
pub async fn run_all(
    handlers: &[Arc<Handler>],
    event: HookEvent,
    input: &serde_json::Value,
    env: &RunEnv,
    cancel: &CancellationToken,
) -> Vec<HookRun> {
    let input = match serde_json::to_vec(input) {
        Ok(bytes) => Arc::new(bytes),
        Err(err) => {
            return handlers
                .iter()
                .map(|h| failed(h, format!("its input could not be written: {err}")))
                .collect();
        }
    };
    futures_util::future::join_all(
        handlers
            .iter()
            .map(|handler| run_one(handler, event, Arc::clone(&input), env, cancel)),
    )
    .await
}

fn failed(handler: &Handler, why: String) -> HookRun {
    HookRun {
        command: handler.command.clone(),
        source: handler.source,
        duration: Duration::ZERO,
        status: RunStatus::SpawnFailed(why),
        stdout: String::new(),
        stderr: String::new(),
    }
}

/// Runs one hook to its end.
async fn run_one(
    handler: &Handler,
    event: HookEvent,
    input: Arc<Vec<u8>>,
    env: &RunEnv,
    cancel: &CancellationToken,
) -> HookRun {
    let started = Instant::now();
    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .arg("-c")
        .arg(&handler.command)
        .current_dir(&env.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    for (name, _) in std::env::vars_os() {
        let passed = name
            .to_str()
            .is_some_and(|n| handler.pass_env.iter().any(|p| p == n));
        if env.hidden.hides(&name) && !passed {
            command.env_remove(&name);
        }
    }
    command
        .env("CLAUDE_PROJECT_DIR", &env.project_dir)
        .env("DSH_PROJECT_DIR", &env.project_dir)
        .env("DSH_HOOK_EVENT", event.name());
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => return failed(handler, err.to_string()),
    };
    // No process of a hook outlives its run, however the run ends (a
    // dropped run too: the agent disposed, a shutdown's limit passed).
    let _group = KillGroup(
        child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(rustix::process::Pid::from_raw),
    );
    let exited = CancellationToken::new();
    let overflow = CancellationToken::new();
    let stdin = child.stdin.take();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let feed = async {
        if let Some(mut stdin) = stdin {
            let write = async {
                // A hook that does not read its input gets EPIPE here.
                let _ = stdin.write_all(&input).await;
                let _ = stdin.shutdown().await;
            };
            tokio::select! {
                () = write => {}
                () = after_exit(&exited) => {}
            }
        }
    };
    let wait = async {
        let status = child.wait().await;
        exited.cancel();
        status
    };
    let work = async {
        tokio::join!(
            feed,
            read_capped(stdout, env.output_max, &overflow, &exited),
            read_capped(stderr, env.output_max, &overflow, &exited),
            wait
        )
    };
    let ended = tokio::select! {
        ((), out, err, status) = work => Ok((out, err, status)),
        () = tokio::time::sleep(handler.timeout) => Err(RunStatus::TimedOut(handler.timeout)),
        () = overflow.cancelled() => Err(RunStatus::OutputTooLarge(env.output_max)),
        () = cancel.cancelled() => Err(RunStatus::Cancelled),
    };
    let duration = started.elapsed();
    let (stdout, stderr, status) = match ended {
        Ok((out, err, status)) => (out, err, exit_status(status)),
        Err(status) => (Vec::new(), Vec::new(), status),
    };
    HookRun {
        command: handler.command.clone(),
        source: handler.source,
        duration,
        status,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// Kills a hook's process group when dropped.
struct KillGroup(Option<rustix::process::Pid>);

impl Drop for KillGroup {
    fn drop(&mut self) {
        if let Some(group) = self.0 {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
}

fn exit_status(status: std::io::Result<ExitStatus>) -> RunStatus {
    match status {
        Ok(status) => status.code().map_or(RunStatus::Signaled, RunStatus::Exited),
        Err(err) => RunStatus::SpawnFailed(err.to_string()),
    }
}

/// Resolves [`EXIT_GRACE`] after the hook exited.
async fn after_exit(exited: &CancellationToken) {
    exited.cancelled().await;
    tokio::time::sleep(EXIT_GRACE).await;
}

/// Reads `reader` to its end, or until [`EXIT_GRACE`] after the hook
/// exited; past `max` bytes it stops and fires `overflow`.
async fn read_capped<R: AsyncRead + Unpin>(
    reader: Option<R>,
    max: usize,
    overflow: &CancellationToken,
    exited: &CancellationToken,
) -> Vec<u8> {
    let mut kept = Vec::new();
    let Some(mut reader) = reader else {
        return kept;
    };
    let mut buf = vec![0u8; 16 * 1024];
    let grace = after_exit(exited);
    tokio::pin!(grace);
    loop {
        let n = tokio::select! {
            read = reader.read(&mut buf) => match read {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            },
            () = &mut grace => break,
        };
        if kept.len() + n > max {
            overflow.cancel();
            break;
        }
        kept.extend_from_slice(&buf[..n]);
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn env(dir: &std::path::Path) -> RunEnv {
        RunEnv {
            cwd: dir.to_path_buf(),
            project_dir: dir.to_path_buf(),
            hidden: HiddenEnv::with_extra("DSH_TEST_HIDDEN_*"),
            output_max: 1024,
        }
    }

    fn handler(command: &str, timeout: Duration) -> Arc<Handler> {
        Arc::new(Handler {
            command: command.into(),
            timeout,
            pass_env: vec!["DSH_TEST_HIDDEN_PASSED".into()],
            source: SourceKind::Initialize,
        })
    }

    async fn run(command: &str, timeout: Duration) -> HookRun {
        let dir = std::env::temp_dir();
        let mut runs = run_all(
            &[handler(command, timeout)],
            HookEvent::PreToolUse,
            &json!({"tool_name": "Bash", "tool_input": {"command": "rm -rf /"}}),
            &env(&dir),
            &CancellationToken::new(),
        )
        .await;
        runs.remove(0)
    }

    #[tokio::test]
    async fn a_hook_reads_its_input_and_its_exit_code_and_output_are_kept() {
        let ran = run(
            "python3 -c 'import json,sys; d=json.load(sys.stdin); print(d[\"tool_input\"][\"command\"]); sys.stderr.write(\"no\"); sys.exit(2)'",
            Duration::from_secs(20),
        )
        .await;
        assert_eq!(ran.status, RunStatus::Exited(2));
        assert_eq!(ran.stdout, "rm -rf /\n");
        assert_eq!(ran.stderr, "no");
        let ran = run(
            "echo \"$DSH_HOOK_EVENT $CLAUDE_PROJECT_DIR\"",
            Duration::from_secs(20),
        )
        .await;
        assert_eq!(ran.stdout.split(' ').next(), Some("PreToolUse"));
    }

    #[tokio::test]
    async fn a_hang_a_flood_and_a_crash_are_bounded_outcomes() {
        let started = Instant::now();
        let ran = run("sleep 30", Duration::from_millis(300)).await;
        assert_eq!(ran.status, RunStatus::TimedOut(Duration::from_millis(300)));
        assert!(started.elapsed() < Duration::from_secs(10));
        let ran = run("yes flood", Duration::from_secs(20)).await;
        assert_eq!(ran.status, RunStatus::OutputTooLarge(1024));
        let ran = run("kill -SEGV $$", Duration::from_secs(20)).await;
        assert_eq!(ran.status, RunStatus::Signaled);
        // A process left behind holding the pipes does not hold the run.
        let started = Instant::now();
        let ran = run("sleep 30 & echo started", Duration::from_secs(20)).await;
        assert_eq!(ran.status, RunStatus::Exited(0));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
    }
}
