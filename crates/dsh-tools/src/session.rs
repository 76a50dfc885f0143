//! Per-session tool state.

use crate::ForeignJob;
use crate::jobs::{Job, SpillQuota, kill_group, lock};
use crate::shell::Shell;
use dsh_protocol::catalog::Todo;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

/// What a file looked like when the session last read or wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileStamp {
    modified: Option<SystemTime>,
    len: u64,
}

impl FileStamp {
    /// The current stamp of `path`, if it exists.
    pub(crate) fn of(path: &Path) -> Option<Self> {
        let meta = std::fs::metadata(path).ok()?;
        Some(Self {
            modified: meta.modified().ok(),
            len: meta.len(),
        })
    }
}

/// What the session last saw at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Observed {
    /// Nothing: a `read` found no file there.
    Absent,
    /// A file in this state (read, written or edited by the session).
    Present(FileStamp),
}

/// The state tools keep for one session: which files were read (for the
/// read-before-write rule), the `bash` jobs, the todo list and the
/// persistent shell of `sdk-minimal`.
///
/// Dropping it, or calling [`SessionTools::shutdown`], kills every job's
/// process group and the persistent shell.
#[derive(Default)]
pub struct SessionTools {
    files: Mutex<HashMap<PathBuf, Observed>>,
    jobs: Mutex<Vec<Arc<Job>>>,
    foreign: Mutex<Vec<Arc<dyn ForeignJob>>>,
    todos: Mutex<Vec<Todo>>,
    pub(crate) shell: tokio::sync::Mutex<Option<Shell>>,
    shell_pgid: Mutex<Option<i32>>,
    closed: AtomicBool,
    spill_quota: OnceLock<Arc<SpillQuota>>,
}

impl SessionTools {
    /// Fresh state for a new session.
    pub fn new() -> Self {
        Self::default()
    }

    /// Kills every job's process group (running or not, so stray children
    /// of finished commands go too) and the persistent shell, and removes
    /// the jobs' saved output unless [`crate::SpillLimits::keep`]; later
    /// `bash` calls are refused. Idempotent.
    pub fn shutdown(&self) {
        self.closed.store(true, Ordering::SeqCst);
        for job in lock(&self.jobs).iter() {
            job.kill("the session shut down");
            job.dispose_files();
        }
        for job in lock(&self.foreign).iter() {
            job.kill("the session shut down");
        }
        if let Some(pgid) = lock(&self.shell_pgid).take() {
            kill_group(pgid);
        }
    }

    /// Whether [`shutdown`](Self::shutdown) was called.
    pub fn is_shut_down(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// The current todo list.
    pub fn todos(&self) -> Vec<Todo> {
        lock(&self.todos).clone()
    }

    /// Ids of every job of the session, oldest first.
    pub fn job_ids(&self) -> Vec<String> {
        lock(&self.jobs).iter().map(|job| job.id.clone()).collect()
    }

    /// Number of jobs still running.
    pub fn running_jobs(&self) -> usize {
        let foreign = lock(&self.foreign)
            .iter()
            .filter(|job| job.end().is_none())
            .count();
        lock(&self.jobs)
            .iter()
            .filter(|job| job.end().is_none())
            .count()
            + foreign
    }

    /// Adds a job run outside the tool library, listed, read and stopped
    /// by the job tools; a session already shut down stops it at once.
    pub fn add_foreign_job(&self, job: Arc<dyn ForeignJob>) {
        if self.is_shut_down() {
            job.kill("the session shut down");
        }
        lock(&self.foreign).push(job);
    }

    pub(crate) fn foreign_job(&self, id: &str) -> Option<Arc<dyn ForeignJob>> {
        lock(&self.foreign)
            .iter()
            .find(|job| job.id() == id)
            .cloned()
    }

    pub(crate) fn foreign_jobs(&self) -> Vec<Arc<dyn ForeignJob>> {
        lock(&self.foreign).clone()
    }

    pub(crate) fn set_todos(&self, todos: Vec<Todo>) {
        *lock(&self.todos) = todos;
    }

    /// The quota the session's saved job output counts against (`max`
    /// bytes, fixed by the first call).
    pub(crate) fn spill_quota(&self, max: u64) -> Arc<SpillQuota> {
        self.spill_quota
            .get_or_init(|| SpillQuota::new(max))
            .clone()
    }

    pub(crate) fn add_job(&self, job: Arc<Job>) {
        lock(&self.jobs).push(job);
    }

    pub(crate) fn job(&self, id: &str) -> Option<Arc<Job>> {
        lock(&self.jobs).iter().find(|job| job.id == id).cloned()
    }

    pub(crate) fn jobs(&self) -> Vec<Arc<Job>> {
        lock(&self.jobs).clone()
    }

    /// Kills the background jobs (`bash` and foreign) started at or after
    /// `since_ms` that still run, without announcing their end to the
    /// model (the turn that started them was cancelled; a command still in
    /// its call is aborted by the call). Returns how many.
    pub fn stop_jobs_started_since(&self, since_ms: u64, reason: &str) -> usize {
        let mut stopped = 0;
        for job in lock(&self.jobs).iter() {
            if job.started_at >= since_ms && job.end().is_none() && job.in_background() {
                job.kill_quietly(reason);
                stopped += 1;
            }
        }
        for job in lock(&self.foreign).iter() {
            if job.started_at() >= since_ms && job.end().is_none() {
                job.kill(reason);
                stopped += 1;
            }
        }
        stopped
    }

    /// Records that the session has seen `path` in its current state.
    pub(crate) fn mark_seen(&self, path: &Path) {
        if let Some(stamp) = FileStamp::of(path) {
            lock(&self.files).insert(key(path), Observed::Present(stamp));
        }
    }

    /// Records that the session looked for `path` and found nothing.
    pub(crate) fn mark_absent(&self, path: &Path) {
        lock(&self.files).insert(key(path), Observed::Absent);
    }

    /// What the session saw when it last looked at `path`.
    pub(crate) fn seen(&self, path: &Path) -> Option<Observed> {
        lock(&self.files).get(&key(path)).copied()
    }

    pub(crate) fn set_shell_pgid(&self, pgid: Option<i32>) {
        *lock(&self.shell_pgid) = pgid;
    }
}

impl Drop for SessionTools {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl std::fmt::Debug for SessionTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionTools")
            .field("jobs", &self.job_ids())
            .field(
                "foreign_jobs",
                &self
                    .foreign_jobs()
                    .iter()
                    .map(|job| job.id().to_owned())
                    .collect::<Vec<_>>(),
            )
            .field("closed", &self.is_shut_down())
            .finish_non_exhaustive()
    }
}

fn key(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}
