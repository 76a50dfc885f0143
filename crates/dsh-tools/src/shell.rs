//! The persistent `bash` process of the `sdk-minimal` profile: one shell
//! per session whose working directory and variables survive between
//! calls. Each command is delimited by a fresh sentinel line that also
//! carries its exit status and the shell's directory.

use crate::jobs::kill_group;
use crate::{PermissionMode, ToolsConfig};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Output bytes kept in memory while a command runs; older output is
/// dropped (only the end is shown anyway).
const KEEP_BYTES: usize = 4 * 1024 * 1024;

/// A running persistent shell.
pub(crate) struct Shell {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    pgid: Option<i32>,
    /// The session directory the shell last followed.
    pub(crate) session_cwd: PathBuf,
}

/// How one command ended.
pub(crate) enum RunEnd {
    /// The sentinel arrived with the command's exit status.
    Done { code: i32 },
    /// The shell itself ended (e.g. `exit`), with its exit status.
    ShellExited(Option<i32>),
    /// The deadline passed; the shell was killed.
    TimedOut,
    /// The call was cancelled; the shell was killed.
    Cancelled,
    /// Talking to the shell failed; it was killed.
    Broken(String),
}

/// The output of one command plus how it ended.
pub(crate) struct RunResult {
    pub output: String,
    pub dropped: bool,
    pub end: RunEnd,
}

impl Shell {
    /// Starts `bash --noprofile --norc` in `cwd`, in its own process group,
    /// with stderr folded into stdout, confined to `mode` (the sdk-minimal
    /// profile runs `danger-full-access`, so normally unconfined).
    pub(crate) async fn spawn(
        config: &ToolsConfig,
        mode: PermissionMode,
        cwd: &Path,
        workspace: &Path,
    ) -> std::io::Result<Self> {
        let mut child = config
            .sandbox
            .command(mode, workspace, "bash", &["--noprofile", "--norc"])
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()?;
        let pgid = child.id().and_then(|pid| i32::try_from(pid).ok());
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("the shell's pipes are missing"));
        };
        stdin.write_all(b"exec 2>&1\n").await?;
        Ok(Self {
            child,
            stdin,
            stdout,
            pgid,
            session_cwd: cwd.to_path_buf(),
        })
    }

    /// The shell's process group.
    pub(crate) fn pgid(&self) -> Option<i32> {
        self.pgid
    }

    /// Kills the shell's whole process group.
    pub(crate) fn kill(&mut self) {
        if let Some(pgid) = self.pgid {
            kill_group(pgid);
        }
    }

    /// Runs `command` (after `prelude`, e.g. a `cd`) and reads its output
    /// until the sentinel, the shell's end, `deadline` or `cancel`.
    pub(crate) async fn run(
        &mut self,
        prelude: &str,
        command: &str,
        deadline: Instant,
        cancel: &CancellationToken,
    ) -> RunResult {
        let sentinel = format!("__DSH_DONE_{}__", uuid::Uuid::new_v4().simple());
        let script = format!(
            "{prelude}eval {} < /dev/null\n__dsh_status=$?\nprintf '\\n%s %s\\n' '{sentinel}' \"$__dsh_status\"\n",
            quote(command)
        );
        let mut buf: Vec<u8> = Vec::new();
        let mut dropped = false;
        if let Err(err) = self.stdin.write_all(script.as_bytes()).await {
            self.kill();
            return self.result(
                &buf,
                dropped,
                RunEnd::Broken(format!("cannot send the command to the shell: {err}")),
            );
        }
        let marker = format!("\n{sentinel} ");
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            let read = tokio::select! {
                read = self.stdout.read(&mut chunk) => read,
                () = tokio::time::sleep_until(deadline) => {
                    self.kill();
                    return self.result(&buf, dropped, RunEnd::TimedOut);
                }
                () = cancel.cancelled() => {
                    self.kill();
                    return self.result(&buf, dropped, RunEnd::Cancelled);
                }
            };
            match read {
                Ok(0) => {
                    let status = self.child.wait().await.ok().and_then(|s| s.code());
                    return self.result(&buf, dropped, RunEnd::ShellExited(status));
                }
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(err) => {
                    self.kill();
                    return self.result(
                        &buf,
                        dropped,
                        RunEnd::Broken(format!("reading from the shell failed: {err}")),
                    );
                }
            }
            let search_from = buf.len().saturating_sub(n_tail(&marker, chunk.len()));
            if let Some(at) =
                find(&buf[search_from..], marker.as_bytes()).map(|at| at + search_from)
            {
                let after = &buf[at + marker.len()..];
                if let Some(end) = after.iter().position(|b| *b == b'\n') {
                    let line = String::from_utf8_lossy(&after[..end]).into_owned();
                    let code = line.trim().parse().unwrap_or(-1);
                    buf.truncate(at);
                    return self.result(&buf, dropped, RunEnd::Done { code });
                }
            }
            if buf.len() > KEEP_BYTES {
                let cut = buf.len() - KEEP_BYTES / 2;
                buf.drain(..cut);
                dropped = true;
            }
        }
    }

    fn result(&self, buf: &[u8], dropped: bool, end: RunEnd) -> RunResult {
        RunResult {
            output: String::from_utf8_lossy(buf).into_owned(),
            dropped,
            end,
        }
    }
}

/// Bytes at the end of the buffer that may hold a sentinel after a read of
/// at most `chunk` bytes.
fn n_tail(marker: &str, chunk: usize) -> usize {
    marker.len() + chunk + 256
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// `text` as one single-quoted shell word.
pub(crate) fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}
