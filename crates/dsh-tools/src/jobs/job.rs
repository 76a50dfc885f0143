//! One background-capable `bash` job: identity, captured output, lifecycle
//! and the `job/registered` / `job/settled` events.

use super::capture::Capture;
use super::quota::{SpillLimits, SpillQuota, SpillTarget};
use super::spill::SpillDir;
use crate::{JobNotice, OutputTap, PermissionMode, ToolHost};
use dsh_protocol::catalog::{
    JobRegistered, JobSettled, JobStatus, JobToolCall, SettleCause, ToolEvent,
};
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::watch;

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Locks a mutex, recovering the data if a holder panicked.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What an aborted call's result and its job's settlement say.
pub(crate) const ABORTED: &str = "tool call aborted";

/// How long an aborted call's command has between SIGTERM and SIGKILL.
const ABORT_GRACE: Duration = Duration::from_secs(2);

/// Why a job was stopped on request.
#[derive(Debug, Clone)]
enum Stop {
    /// Killed (`job_kill`, shutdown), with the reason shown.
    Kill(String),
    /// Its call was aborted.
    Abort,
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The command exited with this status.
    Exited(i32),
    /// The command died of this signal without anyone asking.
    Signaled(i32),
    /// The job was killed on request (job_kill, shutdown).
    Killed(String),
    /// The call that ran it in the foreground was aborted (its turn was
    /// interrupted): the group got SIGTERM (and SIGKILL after a grace) and
    /// the job settled at once.
    Aborted,
    /// The command could not run: spawn failure or sandbox refusal.
    Failed(String),
}

impl Outcome {
    /// `job/settled.status`: a finished command is `completed` whatever its
    /// exit code; one whose call was aborted is `killed`; anything else
    /// that stopped it early is `failed`.
    pub(crate) fn status(&self) -> JobStatus {
        match self {
            Outcome::Exited(_) => JobStatus::Completed,
            Outcome::Aborted => JobStatus::Killed,
            _ => JobStatus::Failed,
        }
    }

    /// `job/settled.cause`: `kill` for an aborted call, as the official
    /// runtime writes it, else the job's own end.
    pub(crate) fn cause(&self) -> SettleCause {
        match self {
            Outcome::Aborted => SettleCause::Kill,
            _ => SettleCause::Producer,
        }
    }

    /// `job/settled.detail`.
    pub(crate) fn detail(&self) -> String {
        match self {
            Outcome::Exited(code) => format!("exit code: {code}"),
            Outcome::Signaled(signal) => {
                format!("killed by signal: {}", signal_name(*signal))
            }
            Outcome::Killed(reason) => format!("killed: {reason}"),
            Outcome::Aborted => format!("signal: SIGTERM; {ABORTED}"),
            Outcome::Failed(text) => text.clone(),
        }
    }
}

/// `SIGKILL`-style name of a signal number.
pub(crate) fn signal_name(signal: i32) -> String {
    let name = match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        _ => return format!("signal {signal}"),
    };
    name.to_owned()
}

/// The end of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct JobEnd {
    /// When it ended (epoch ms).
    pub finished_at: u64,
    /// How it ended.
    pub outcome: Outcome,
}

/// Which output stream.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

/// The `<job id>.log` file holding a job's whole output.
enum LogFile {
    /// Not needed yet.
    Unopened,
    /// Created; rewritten through this descriptor while the job runs. The
    /// number is its length, taken from the session's quota.
    Open(PathBuf, File, u64),
    /// Written for the last time after the job ended, with its length and
    /// the bytes it left out.
    Final(PathBuf, u64, LeftOut),
    /// Could not be created (reported once); only the tail is shown.
    Refused,
}

/// A shell command run as a job.
pub(crate) struct Job {
    pub id: String,
    pub label: String,
    pub owner: String,
    pub call_id: String,
    pub started_at: u64,
    pub cwd: PathBuf,
    pub mode: PermissionMode,
    spill_dir: PathBuf,
    limits: SpillLimits,
    quota: Arc<SpillQuota>,
    /// The spill directory once opened; `None` when it was refused.
    spill: OnceLock<Option<SpillDir>>,
    pgid: Mutex<Option<i32>>,
    stdout: Mutex<Capture>,
    stderr: Mutex<Capture>,
    /// Why the job was stopped on request (the first request wins).
    kill_reason: Mutex<Option<Stop>>,
    /// Whether the waiter has reaped the command's process.
    exited: AtomicBool,
    log: Mutex<LogFile>,
    /// Set when the session quota refused the `.log` file.
    over_quota: AtomicBool,
    end: watch::Sender<Option<JobEnd>>,
    /// Whether the call that started the job has returned without its end
    /// (moved to the background): its end is then announced as a notice.
    /// Held while the job settles, so the two cannot miss each other.
    background: Mutex<bool>,
    /// Sees the output while the starting call waits for it.
    tap: Mutex<Option<Arc<dyn OutputTap>>>,
}

impl Job {
    /// A job that has not started yet.
    pub(crate) fn new(
        label: &str,
        owner: &str,
        call_id: &str,
        cwd: PathBuf,
        mode: PermissionMode,
        target: SpillTarget,
    ) -> Arc<Self> {
        let SpillTarget {
            dir: spill_dir,
            limits,
            quota,
        } = target;
        let hex = uuid::Uuid::new_v4().simple().to_string();
        Arc::new(Self {
            id: format!("bash-{}", &hex[..16]),
            label: label.to_owned(),
            owner: owner.to_owned(),
            call_id: call_id.to_owned(),
            started_at: now_ms(),
            cwd,
            mode,
            spill_dir,
            limits,
            spill: OnceLock::new(),
            pgid: Mutex::new(None),
            stdout: Mutex::new(Capture::new(limits, quota.clone())),
            stderr: Mutex::new(Capture::new(limits, quota.clone())),
            quota,
            kill_reason: Mutex::new(None),
            exited: AtomicBool::new(false),
            log: Mutex::new(LogFile::Unopened),
            over_quota: AtomicBool::new(false),
            end: watch::Sender::new(None),
            background: Mutex::new(false),
            tap: Mutex::new(None),
        })
    }

    /// `job/registered`.
    pub(crate) fn registered(&self) -> JobRegistered {
        JobRegistered {
            job_id: self.id.clone(),
            owner: self.owner.clone(),
            kind: "bash".to_owned(),
            label: self.label.clone(),
            started_at: self.started_at,
            tool_call: JobToolCall {
                call_id: self.call_id.clone(),
                root_call_id: self.call_id.clone(),
            },
        }
    }

    /// `job/settled`.
    fn settled(&self, end: &JobEnd) -> JobSettled {
        JobSettled {
            job: self.registered(),
            finished_at: end.finished_at,
            status: end.outcome.status(),
            cause: end.outcome.cause(),
            producer_reported: true,
            detail: end.outcome.detail(),
        }
    }

    /// Records the process group once the command runs.
    pub(crate) fn set_pgid(&self, pgid: i32) {
        *lock(&self.pgid) = Some(pgid);
    }

    /// The process group id of the running command.
    pub(crate) fn pgid(&self) -> Option<i32> {
        *lock(&self.pgid)
    }

    /// Appends output.
    pub(crate) fn push(&self, stream: Stream, data: &[u8]) {
        let (capture, suffix) = match stream {
            Stream::Stdout => (&self.stdout, "stdout"),
            Stream::Stderr => (&self.stderr, "stderr"),
        };
        let name = format!("{}.{suffix}", self.id);
        lock(capture).push(data, || self.create_spill_file(&name));
        if let Some(tap) = lock(&self.tap).as_ref() {
            let fd = match stream {
                Stream::Stdout => 1,
                Stream::Stderr => 2,
            };
            tap.output(fd, data);
        }
    }

    /// Shows the output read from now on to `tap` (until
    /// [`untap`](Self::untap)).
    pub(crate) fn tap(&self, tap: Arc<dyn OutputTap>) {
        *lock(&self.tap) = Some(tap);
    }

    /// Stops showing the output: nothing reaches the tap after this
    /// returns.
    pub(crate) fn untap(&self) {
        *lock(&self.tap) = None;
    }

    /// Creates the new private file `name` in the spill directory (see
    /// [`SpillDir`]), opening the directory on first use.
    fn create_spill_file(&self, name: &str) -> io::Result<(PathBuf, File)> {
        let dir = self.spill.get_or_init(|| match SpillDir::open(&self.spill_dir) {
            Ok(dir) => Some(dir),
            Err(err) => {
                tracing::warn!(
                    job = %self.id,
                    "long output is not saved to a file, only its tail is kept: the spill directory is refused: {err}"
                );
                None
            }
        });
        let Some(dir) = dir else {
            return Err(io::Error::other("the spill directory was refused"));
        };
        dir.create(name).inspect_err(|err| {
            tracing::warn!(job = %self.id, "a spill file cannot be created: {err}");
        })
    }

    /// Marks the job as running on after its call returned: its end will
    /// be announced to the session as a notice (at once, if it has just
    /// ended).
    pub(crate) fn move_to_background(&self, host: &dyn ToolHost) {
        let mut background = lock(&self.background);
        *background = true;
        if let Some(end) = self.end() {
            host.job_notice(self.notice(&end));
        }
    }

    /// Whether the call that started the job has returned without its end.
    pub(crate) fn in_background(&self) -> bool {
        *lock(&self.background)
    }

    /// Kills the job (see [`kill`](Self::kill)) without announcing its end
    /// to the model: the turn that started it was cancelled by the client.
    pub(crate) fn kill_quietly(&self, reason: &str) {
        *lock(&self.background) = false;
        self.kill(reason);
    }

    /// The notice of a background job's end.
    fn notice(&self, end: &JobEnd) -> JobNotice {
        let status = match end.outcome.status() {
            JobStatus::Completed => "completed",
            JobStatus::Failed | JobStatus::Killed => "failed",
        };
        let summary = format!(
            "Background job {} ({}) ended: {status}, {}.",
            self.id,
            serde_json::Value::from(self.label.as_str()),
            end.outcome.detail()
        );
        let text = format!(
            "{summary} Its output is kept: call job_output with job_id \"{}\" to read it.",
            self.id
        );
        JobNotice {
            job_id: self.id.clone(),
            summary,
            text,
        }
    }

    /// Settles the job (once): emits `job/settled`, then wakes waiters; a
    /// job in the background also has its end announced as a notice.
    pub(crate) fn finish(&self, outcome: Outcome, host: &dyn ToolHost) {
        let background = lock(&self.background);
        if self.end.borrow().is_some() {
            return;
        }
        let outcome = match (lock(&self.kill_reason).clone(), outcome) {
            (_, Outcome::Failed(text)) => Outcome::Failed(text),
            (Some(Stop::Kill(reason)), _) => Outcome::Killed(reason),
            (Some(Stop::Abort), _) => Outcome::Aborted,
            (None, other) => other,
        };
        let end = JobEnd {
            finished_at: now_ms(),
            outcome,
        };
        host.emit(ToolEvent::JobSettled(self.settled(&end)));
        let notice = background.then(|| self.notice(&end));
        self.end.send_replace(Some(end));
        drop(background);
        if let Some(notice) = notice {
            host.job_notice(notice);
        }
    }

    /// How the job ended, if it has.
    pub(crate) fn end(&self) -> Option<JobEnd> {
        self.end.borrow().clone()
    }

    /// Waits until the job ends or `limit` passes.
    pub(crate) async fn wait(&self, limit: Option<Duration>) -> Option<JobEnd> {
        let mut rx = self.end.subscribe();
        let ended = async {
            match rx.wait_for(Option::is_some).await {
                Ok(end) => end.clone(),
                Err(_) => None,
            }
        };
        match limit {
            Some(limit) => tokio::time::timeout(limit, ended).await.ok().flatten(),
            None => ended.await,
        }
    }

    /// Kills the whole process group with SIGKILL, remembering `reason`
    /// for the settlement (the first reason wins). Harmless when the group
    /// is already gone.
    pub(crate) fn kill(&self, reason: &str) {
        if self.end().is_none() {
            lock(&self.kill_reason).get_or_insert_with(|| Stop::Kill(reason.to_owned()));
        }
        if let Some(pgid) = self.pgid() {
            kill_group(pgid);
        }
    }

    /// Stops the job because the call that runs it was aborted, as the
    /// official runtime does: SIGTERM to the process group and the job
    /// settled at once as [`Outcome::Aborted`] (unless it had ended or was
    /// being killed already). The sandbox supervisor, the group's leader,
    /// answers SIGTERM by killing the whole group; should the group still
    /// run [`ABORT_GRACE`] later, it gets SIGKILL.
    pub(crate) fn abort(self: &Arc<Self>, host: &dyn ToolHost) {
        if self.end().is_none() {
            lock(&self.kill_reason).get_or_insert(Stop::Abort);
        }
        let Some(pgid) = self.pgid() else {
            return;
        };
        if let Some(pid) = rustix::process::Pid::from_raw(pgid) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::TERM);
        }
        self.finish(Outcome::Aborted, host);
        let job = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(ABORT_GRACE).await;
            // Until the waiter has reaped the group's leader its id cannot
            // be reused, so the group signalled is still the command's.
            if !job.exited.load(Ordering::Acquire) {
                kill_group(pgid);
            }
        });
    }

    /// Records that the command's process has been reaped.
    pub(crate) fn set_exited(&self) {
        self.exited.store(true, Ordering::Release);
    }

    /// Output snapshot for rendering: lossy text of both streams, whether
    /// either is only a tail, and the path of a file holding everything
    /// that is saved (written on demand when `need_file`). Copies up to the
    /// spill cap: call it off the async workers.
    pub(crate) fn output(&self, need_file: bool) -> Output {
        let stdout = lock(&self.stdout);
        let stderr = lock(&self.stderr);
        let out = Output {
            stdout: String::from_utf8_lossy(stdout.recent()).into_owned(),
            stderr: String::from_utf8_lossy(stderr.recent()).into_owned(),
            partial: stdout.is_partial() || stderr.is_partial(),
            full_path: None,
            left_out: LeftOut::default(),
            over_quota: false,
        };
        drop(stdout);
        drop(stderr);
        if !(need_file || out.partial) {
            return out;
        }
        match self.write_full_output() {
            Some((path, left_out)) => Output {
                full_path: Some(path),
                left_out,
                ..out
            },
            None => Output {
                over_quota: self.over_quota.load(Ordering::SeqCst),
                ..out
            },
        }
    }

    /// The spill limits of the job.
    pub(crate) fn limits(&self) -> &SpillLimits {
        &self.limits
    }

    /// The session quota of the job.
    pub(crate) fn quota(&self) -> &SpillQuota {
        &self.quota
    }

    /// Writes both streams to `<spill_dir>/<job id>.log` (stdout, then a
    /// `[stderr]` section), each at most its saved head and tail. The file
    /// is created new (never through an existing name), its length taken
    /// from the session quota, and rewritten through its descriptor while
    /// the job runs. Once the job has ended the file is final and the
    /// per-stream spill files are removed.
    /// Returns the path and what the file leaves out.
    fn write_full_output(&self) -> Option<(PathBuf, LeftOut)> {
        let ended = self.end().is_some();
        let mut log = lock(&self.log);
        match &*log {
            LogFile::Final(path, _, left_out) => return Some((path.clone(), *left_out)),
            LogFile::Refused => return None,
            LogFile::Open(..) => {}
            LogFile::Unopened => match self.create_spill_file(&format!("{}.log", self.id)) {
                Ok((path, file)) => *log = LogFile::Open(path, file, 0),
                Err(_) => {
                    *log = LogFile::Refused;
                    return None;
                }
            },
        }
        let LogFile::Open(path, file, charged) = &mut *log else {
            return None;
        };
        let mut stdout = lock(&self.stdout);
        let mut stderr = lock(&self.stderr);
        let need = stdout.copy_len() + stderr.copy_len() + "\n[stderr]\n".len() as u64;
        if need > *charged && !self.quota.try_take(need - *charged) {
            self.over_quota.store(true, Ordering::SeqCst);
            tracing::warn!(job = %self.id, "the output file is not written: the session's spill quota is used up");
            return None;
        }
        *charged = (*charged).max(need);
        let written = (|| -> io::Result<()> {
            file.set_len(0)?;
            file.seek(SeekFrom::Start(0))?;
            stdout.copy_all(file)?;
            if !stderr.is_empty() {
                if !stdout.is_empty() && !stdout.recent().ends_with(b"\n") {
                    file.write_all(b"\n")?;
                }
                file.write_all(b"[stderr]\n")?;
                stderr.copy_all(file)?;
            }
            Ok(())
        })();
        if let Ok(meta) = file.metadata()
            && meta.len() < *charged
        {
            self.quota.give_back(*charged - meta.len());
            *charged = meta.len();
        }
        written.ok()?;
        let left_out = LeftOut::of(&stdout).plus(LeftOut::of(&stderr));
        if ended {
            stdout.discard_spill();
            stderr.discard_spill();
        }
        drop(stdout);
        drop(stderr);
        let path = path.clone();
        if ended {
            let length = *charged;
            // Closes the descriptor: the file will not change again.
            *log = LogFile::Final(path.clone(), length, left_out);
        }
        Some((path, left_out))
    }

    /// Removes the job's saved output (the session is disposed) unless
    /// [`SpillLimits::keep`] is set; nothing is saved afterwards.
    pub(crate) fn dispose_files(&self) {
        if self.limits.keep {
            return;
        }
        let mut log = lock(&self.log);
        if let LogFile::Open(path, _, length) | LogFile::Final(path, length, _) =
            std::mem::replace(&mut *log, LogFile::Refused)
        {
            let _ = std::fs::remove_file(&path);
            self.quota.give_back(length);
        }
        lock(&self.stdout).close();
        lock(&self.stderr).close();
    }
}

/// Captured output of a job at one moment.
pub(crate) struct Output {
    pub stdout: String,
    pub stderr: String,
    pub partial: bool,
    pub full_path: Option<PathBuf>,
    /// What the file at `full_path` leaves out.
    pub left_out: LeftOut,
    /// Whether the file was not written for the session quota.
    pub over_quota: bool,
}

/// Bytes of a job's output its saved file leaves out.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LeftOut {
    /// Dropped between each stream's head and tail.
    pub dropped: u64,
    /// Not saved because the session quota was used up.
    pub unsaved: u64,
}

impl LeftOut {
    fn of(capture: &Capture) -> Self {
        let (dropped, unsaved) = capture.left_out();
        Self { dropped, unsaved }
    }

    fn plus(self, other: Self) -> Self {
        Self {
            dropped: self.dropped + other.dropped,
            unsaved: self.unsaved + other.unsaved,
        }
    }
}

/// Sends SIGKILL to process group `pgid`, ignoring a group that is gone.
pub(crate) fn kill_group(pgid: i32) {
    if let Some(pid) = rustix::process::Pid::from_raw(pgid) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}
