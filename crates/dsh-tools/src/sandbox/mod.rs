//! The file-system sandbox of `bash`: Landlock applied by the runtime
//! binary itself, re-executed as a launcher.
//!
//! The tool side ([`SandboxConfig`]) never restricts the runtime process:
//! it spawns `<launcher> __sandbox-exec <mode> <workspace> -- bash -c …`.
//! The launcher ([`sandbox_exec_main`]) asks the kernel to kill it when the
//! runtime dies, applies a Landlock ruleset for the mode and then `exec`s
//! the program, so the ruleset binds the command and all its descendants.
//! When the kernel cannot enforce the requested mode, both sides fail
//! closed: the command is not run and the call reports the refusal.

mod launcher;
mod probe;
mod rules;

pub use launcher::{sandbox_exec_main, sandbox_exec_with};
pub use probe::{LandlockSupport, MIN_LANDLOCK_ABI};

use crate::PermissionMode;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The first argument that selects the launcher mode of the runtime binary:
/// `dsh __sandbox-exec <mode> <workspace> -- <program> <args…>`.
pub const SANDBOX_EXEC_ARG: &str = "__sandbox-exec";

/// Exit status of a launcher that refused to run its program.
pub(crate) const REFUSED_EXIT: i32 = 121;

/// First bytes of the launcher's stderr line that carries a refusal.
pub(crate) const REFUSAL_PREFIX: &str = "dsh-sandbox-refused: ";

/// Reports what Landlock the kernel offers; injectable for tests.
pub type SandboxProbe = Arc<dyn Fn() -> LandlockSupport + Send + Sync>;

/// The program that launches sandboxed commands: normally the runtime's own
/// executable with the argument [`SANDBOX_EXEC_ARG`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launcher {
    /// Executable to run.
    pub program: PathBuf,
    /// Arguments placed before `<mode> <workspace> -- <program> <args…>`.
    pub args: Vec<OsString>,
}

impl Launcher {
    /// The running executable, invoked as `<exe> __sandbox-exec …`.
    pub fn current_exe() -> std::io::Result<Self> {
        Ok(Self::new(std::env::current_exe()?))
    }

    /// `program __sandbox-exec …`.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: vec![OsString::from(SANDBOX_EXEC_ARG)],
        }
    }
}

/// How `bash` commands are confined.
#[derive(Clone)]
pub struct SandboxConfig {
    /// The launcher; without one, restricted modes refuse to run commands
    /// and `danger-full-access` runs `bash` directly.
    pub launcher: Option<Launcher>,
    /// Kernel support check done before spawning in a restricted mode.
    pub probe: SandboxProbe,
}

impl SandboxConfig {
    /// The running executable as launcher and the real kernel probe.
    pub fn from_current_exe() -> Self {
        Self {
            launcher: Launcher::current_exe().ok(),
            probe: Arc::new(LandlockSupport::detect),
        }
    }

    /// `launcher` with the real kernel probe.
    pub fn with_launcher(launcher: Launcher) -> Self {
        Self {
            launcher: Some(launcher),
            probe: Arc::new(LandlockSupport::detect),
        }
    }

    /// Replaces the kernel probe.
    pub fn with_probe(mut self, probe: SandboxProbe) -> Self {
        self.probe = probe;
        self
    }

    /// `Ok` when commands can run in `mode`, else the refusal text.
    pub(crate) fn check(&self, mode: PermissionMode) -> Result<(), String> {
        if !mode.is_restricted() {
            return Ok(());
        }
        if self.launcher.is_none() {
            return Err(refusal(mode, "no sandbox launcher is configured"));
        }
        let support = (self.probe)();
        if support.abi < MIN_LANDLOCK_ABI {
            return Err(refusal(mode, &support.shortfall()));
        }
        Ok(())
    }

    /// The program and arguments that run `program args…` confined to
    /// `mode` with `workspace` writable.
    pub(crate) fn command_line(
        &self,
        mode: PermissionMode,
        workspace: &Path,
        program: &str,
        args: &[&str],
    ) -> (PathBuf, Vec<OsString>) {
        match &self.launcher {
            Some(launcher) => {
                let mut all = launcher.args.clone();
                all.push(mode.as_str().into());
                all.push(workspace.as_os_str().to_owned());
                all.push("--".into());
                all.push(program.into());
                all.extend(args.iter().map(OsString::from));
                (launcher.program.clone(), all)
            }
            None => (
                PathBuf::from(program),
                args.iter().map(OsString::from).collect(),
            ),
        }
    }
}

impl std::fmt::Debug for SandboxConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxConfig")
            .field("launcher", &self.launcher)
            .finish_non_exhaustive()
    }
}

/// The refusal text for `mode` (our own wording; no command was run).
pub(crate) fn refusal(mode: PermissionMode, why: &str) -> String {
    format!(
        "sandbox mode \"{mode}\" is in force but cannot be enforced here ({why}), so the command was not run: running it without confinement is refused. Use a Linux kernel with Landlock ABI {MIN_LANDLOCK_ABI} or newer (Linux 6.2+) enabled, or run the session in danger-full-access mode."
    )
}

/// Parses the refusal a launcher printed, given its exit status and stderr.
pub(crate) fn launcher_refusal(exit_code: Option<i32>, stderr: &str) -> Option<String> {
    if exit_code != Some(REFUSED_EXIT) {
        return None;
    }
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix(REFUSAL_PREFIX))?;
    Some(line.trim_end().to_owned())
}
