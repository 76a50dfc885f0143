//! Shared fixtures: a recording host, a workspace and a tool context.

use dsh_protocol::catalog::{EventPayload, ToolEvent};
use dsh_tools::EditorFiles;
use dsh_tools::{
    Approvals, CancellationToken, LANDLOCK_ABI_MAX_VAR, LandlockSupport, Launcher,
    MIN_LANDLOCK_ABI, OutputTap, PermissionMode, SandboxConfig, SessionTools, ToolContext,
    ToolHost, ToolOutput, ToolSet, ToolsConfig, parse_abi_max, sdk_minimal_tools, sdk_tools,
};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tempfile::TempDir;

/// Unwraps a result in a test, panicking with `what` and the error.
pub fn ok<T, E: std::fmt::Debug>(result: Result<T, E>, what: &str) -> T {
    result.unwrap_or_else(|err| panic!("{what}: {err:?}"))
}

/// Unwraps an option in a test.
pub fn some<T>(option: Option<T>, what: &str) -> T {
    option.unwrap_or_else(|| panic!("{what}: missing"))
}

/// Records every event tools emit.
#[derive(Default)]
pub struct Recorder {
    events: Mutex<Vec<(String, Value)>>,
}

impl ToolHost for Recorder {
    fn emit(&self, event: ToolEvent) {
        let data = serde_json::to_value(&event).unwrap_or_else(|e| panic!("{e}"));
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((event.kind().to_owned(), data));
    }
}

impl Recorder {
    pub fn events(&self) -> Vec<(String, Value)> {
        self.events
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn kinds(&self) -> Vec<String> {
        self.events().into_iter().map(|(kind, _)| kind).collect()
    }

    pub fn of_kind(&self, kind: &str) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|(k, _)| k == kind)
            .map(|(_, data)| data)
            .collect()
    }
}

/// The launcher example built next to this test binary
/// (`target/<profile>/examples/sandbox_exec`).
pub fn launcher_path() -> PathBuf {
    let exe = ok(std::env::current_exe(), "current exe");
    let profile_dir = some(exe.parent().and_then(Path::parent), "profile dir");
    let path = profile_dir.join("examples").join("sandbox_exec");
    assert!(
        path.is_file(),
        "launcher example not built at {}",
        path.display()
    );
    path
}

/// `DSH_LANDLOCK_ABI_MAX` of this run: `scripts/test.sh` reruns the
/// sandbox tests with it set to each fallback level. A bad value fails the
/// test, as it stops the runtime's launch.
pub fn abi_max() -> Option<u8> {
    std::env::var(LANDLOCK_ABI_MAX_VAR)
        .ok()
        .filter(|value| !value.trim().is_empty())
        .map(|value| ok(parse_abi_max(&value), LANDLOCK_ABI_MAX_VAR))
}

/// The Landlock support the sandbox works with in this run: the kernel's,
/// lowered by [`abi_max`].
pub fn landlock() -> LandlockSupport {
    LandlockSupport::detect().capped(abi_max())
}

/// The sandbox of the fixtures: the launcher example, the real probe and
/// this run's cap.
pub fn sandbox() -> SandboxConfig {
    SandboxConfig::with_launcher(Launcher::new(launcher_path())).with_abi_max(abi_max())
}

/// Why `support` cannot enforce a restricted mode, as the refusal says it
/// (docs/tools-and-sandbox.md).
pub fn shortfall(support: LandlockSupport) -> String {
    match support.lowered_from {
        Some(kernel) => format!(
            "DSH_LANDLOCK_ABI_MAX={abi} lowers the kernel's Landlock ABI {kernel} to ABI {abi} but at least ABI 3 is needed",
            abi = support.abi
        ),
        None if support.abi == 0 => "Landlock is not available on this kernel".to_owned(),
        None => format!(
            "the kernel offers Landlock ABI {} but at least ABI 3 is needed",
            support.abi
        ),
    }
}

/// Asserts that `out` is the fail-closed refusal of `mode` for this run's
/// Landlock (below ABI 3); when the kernel itself, not the cap, is short,
/// the confinement assertions cannot run on this machine: a skip (a
/// failure under CI).
pub fn assert_fails_closed(out: &ToolOutput, mode: PermissionMode) {
    let support = landlock();
    assert!(support.abi < MIN_LANDLOCK_ABI, "{support:?}");
    assert!(out.is_error, "{}", text(out));
    let body = text(out);
    let expected = format!(
        "Error: sandbox mode \"{mode}\" is in force but cannot be enforced here ({}), so the command was not run: running it without confinement is refused.",
        shortfall(support)
    );
    assert!(body.starts_with(&expected), "{body}\nexpected: {expected}");
    if support.lowered_from.is_none() {
        dsh_repo_checks::skip(&format!(
            "sandbox: the kernel offers Landlock ABI {}: only the fail-closed path is checked",
            support.abi
        ));
    }
}

/// A scratch directory outside /tmp (so Landlock's /tmp rule does not
/// blur workspace tests).
pub fn scratch_dir() -> TempDir {
    ok(
        tempfile::Builder::new()
            .prefix("dsh-tools-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR")),
        "scratch dir",
    )
}

/// A scratch directory outside every place `workspace-write` leaves
/// writable (the workspace, `/tmp`, `/var/tmp`, `/dev/shm`): the checkout
/// itself may live under `/tmp`, so `/var/cache` (or `$HOME`) is used.
pub fn outside_dir() -> TempDir {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let candidates = [Some(PathBuf::from("/var/cache")), home];
    for base in candidates.into_iter().flatten() {
        let forbidden = ["/tmp", "/var/tmp", "/dev/shm"]
            .iter()
            .any(|t| base.starts_with(t));
        if forbidden {
            continue;
        }
        if let Ok(dir) = tempfile::Builder::new()
            .prefix("dsh-tools-outside-")
            .tempdir_in(&base)
        {
            return dir;
        }
    }
    panic!("no writable directory outside the temporary areas");
}

/// A workspace, a spill directory, a recording host and a tool set.
pub struct Fixture {
    _dir: TempDir,
    pub workspace: PathBuf,
    pub spill: PathBuf,
    pub host: Arc<Recorder>,
    pub state: Arc<SessionTools>,
    pub tools: ToolSet,
    pub mode: PermissionMode,
    pub cwd: PathBuf,
    /// Who decides requests for wider access (the official default: no
    /// rule, no approver).
    pub approvals: Arc<Approvals>,
    /// What sees a foreground command's output (none by default).
    pub tap: Option<Arc<dyn OutputTap>>,
    /// The client's editor the file tools go through (none by default).
    pub editor: Option<Arc<dyn EditorFiles>>,
}

impl Fixture {
    /// The sdk tools with the launcher example and the real probe.
    pub fn new(mode: PermissionMode) -> Self {
        Self::with(mode, |config| config)
    }

    /// The sdk tools with an adjusted configuration.
    pub fn with(mode: PermissionMode, adjust: impl FnOnce(ToolsConfig) -> ToolsConfig) -> Self {
        Self::build(mode, |config| sdk_tools(adjust(config)))
    }

    /// The sdk-minimal tools (full access) with an adjusted configuration.
    pub fn minimal(adjust: impl FnOnce(ToolsConfig) -> ToolsConfig) -> Self {
        Self::minimal_in(PermissionMode::DangerFullAccess, adjust)
    }

    /// The sdk-minimal tools in `mode`.
    pub fn minimal_in(
        mode: PermissionMode,
        adjust: impl FnOnce(ToolsConfig) -> ToolsConfig,
    ) -> Self {
        Self::build(mode, |config| sdk_minimal_tools(adjust(config)))
    }

    fn build(mode: PermissionMode, make: impl FnOnce(ToolsConfig) -> ToolSet) -> Self {
        let dir = scratch_dir();
        ok(
            std::fs::create_dir_all(dir.path().join("workspace")),
            "mkdir workspace",
        );
        let workspace = ok(dir.path().join("workspace").canonicalize(), "workspace");
        let spill = dir.path().join("spill");
        let config = ToolsConfig::new(&spill).with_sandbox(sandbox());
        Self {
            _dir: dir,
            cwd: workspace.clone(),
            workspace,
            spill,
            host: Arc::new(Recorder::default()),
            state: Arc::new(SessionTools::new()),
            approvals: Arc::new(Approvals::default()),
            tap: None,
            editor: None,
            tools: make(config),
            mode,
        }
    }

    pub fn ctx(&self) -> ToolContext {
        self.ctx_with(CancellationToken::new())
    }

    pub fn ctx_with(&self, cancel: CancellationToken) -> ToolContext {
        ToolContext {
            session_id: "session-test".to_owned(),
            call_id: "call-1".to_owned(),
            cwd: self.cwd.clone(),
            workspace: self.workspace.clone(),
            mode: self.mode,
            host: self.host.clone(),
            state: self.state.clone(),
            cancel,
            approvals: self.approvals.clone(),
            output_tap: self.tap.clone(),
            editor: self.editor.clone(),
        }
    }

    pub async fn call(&self, name: &str, arguments: &str) -> ToolOutput {
        self.tools.run(name, arguments, self.ctx()).await
    }

    /// Runs `bash` with `command` (and `extra` JSON members, e.g.
    /// `,"timeoutMs":300`).
    pub async fn bash(&self, command: &str, extra: &str) -> ToolOutput {
        let args = format!(
            "{{\"description\":\"test\",\"command\":{}{extra}}}",
            serde_json::Value::String(command.to_owned())
        );
        self.call("bash", &args).await
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.workspace.join(relative)
    }

    pub fn write_file(&self, relative: &str, content: &str) -> PathBuf {
        let path = self.path(relative);
        if let Some(parent) = path.parent() {
            ok(std::fs::create_dir_all(parent), "mkdir");
        }
        ok(std::fs::write(&path, content), "write file");
        path
    }
}

/// The text of a result.
pub fn text(out: &ToolOutput) -> String {
    out.text_content()
}

/// JSON string of a value, for building arguments.
pub fn js(value: &str) -> String {
    serde_json::Value::String(value.to_owned()).to_string()
}

/// `(pid, process group)` of live (non-zombie) processes whose command
/// line contains `marker`.
pub fn live_processes(marker: &str) -> Vec<(i32, i32)> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !cmdline.contains(marker) {
            continue;
        }
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        if fields.first() == Some(&"Z") || fields.first() == Some(&"X") {
            continue;
        }
        if let Some(pgrp) = fields.get(2).and_then(|f| f.parse().ok()) {
            found.push((pid, pgrp));
        }
    }
    found
}

/// Polls `condition` every 20 ms for up to 15 s.
pub async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    for _ in 0..750 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("timed out waiting for {what}");
}

/// The job id named in a result's meta.
pub fn job_id(out: &ToolOutput) -> String {
    some(
        out.meta
            .as_ref()
            .and_then(|m| m.get("jobId"))
            .and_then(Value::as_str),
        "jobId in meta",
    )
    .to_owned()
}
