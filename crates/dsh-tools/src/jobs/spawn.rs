//! Starting a job's process and watching it until it ends.

use super::job::{Job, Outcome, Stream};
use crate::ToolHost;
use crate::sandbox::{SandboxConfig, launcher_refusal};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt};

/// How long the output pipes may stay open after the command exited (a
/// background child of the command may still hold them); after that the
/// job settles without waiting for them.
const PIPE_GRACE: Duration = Duration::from_secs(2);

/// Starts `bash -c command` for `job` through the sandbox launcher, in its
/// own process group with stdin closed and both output streams captured,
/// and spawns the task that settles the job when the process ends.
pub(crate) fn start(
    job: &Arc<Job>,
    sandbox: &SandboxConfig,
    workspace: &Path,
    command: &str,
    host: Arc<dyn ToolHost>,
) -> Result<(), String> {
    let mut child = sandbox
        .command(job.mode, workspace, "bash", &["-c", command])
        .current_dir(&job.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|err| format!("cannot start the command: {err}"))?;
    if let Some(pid) = child.id().and_then(|pid| i32::try_from(pid).ok()) {
        job.set_pgid(pid);
    }
    let stdout = child
        .stdout
        .take()
        .map(|pipe| pump(job.clone(), Stream::Stdout, pipe));
    let stderr = child
        .stderr
        .take()
        .map(|pipe| pump(job.clone(), Stream::Stderr, pipe));
    let job = job.clone();
    tokio::spawn(async move {
        let status = child.wait().await;
        job.set_exited();
        let pumps: Vec<_> = stdout.into_iter().chain(stderr).collect();
        let aborts: Vec<_> = pumps.iter().map(|task| task.abort_handle()).collect();
        let drained = async {
            for task in pumps {
                let _ = task.await;
            }
        };
        if tokio::time::timeout(PIPE_GRACE, drained).await.is_err() {
            for abort in aborts {
                abort.abort();
            }
        }
        let outcome = match status {
            Ok(status) => match (status.code(), status.signal()) {
                (Some(code), _) => {
                    let stderr = job.output(false).stderr;
                    match launcher_refusal(Some(code), &stderr) {
                        Some(refusal) => Outcome::Failed(refusal),
                        None => Outcome::Exited(code),
                    }
                }
                (None, Some(signal)) => Outcome::Signaled(signal),
                (None, None) => Outcome::Failed("the command ended in an unknown way".into()),
            },
            Err(err) => Outcome::Failed(format!("lost track of the command: {err}")),
        };
        job.finish(outcome, host.as_ref());
    });
    Ok(())
}

/// Chunks read from a pipe waiting for the writer; reading stops (the
/// command blocks on its pipe) while they are full.
const QUEUED_CHUNKS: usize = 4;

/// Copies one pipe into the job's capture until end of file. The pipe is
/// read on the async workers; the capture (which writes the spill file) is
/// fed on the blocking pool, so a command that writes without end never
/// does file I/O on a worker.
fn pump(
    job: Arc<Job>,
    stream: Stream,
    mut pipe: impl AsyncRead + Unpin + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let (chunks, mut queue) = tokio::sync::mpsc::channel::<Vec<u8>>(QUEUED_CHUNKS);
        let writer = tokio::task::spawn_blocking(move || {
            while let Some(chunk) = queue.blocking_recv() {
                job.push(stream, &chunk);
            }
        });
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match pipe.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if chunks.send(buf[..n].to_vec()).await.is_err() {
                        break;
                    }
                }
            }
        }
        drop(chunks);
        let _ = writer.await;
    })
}
