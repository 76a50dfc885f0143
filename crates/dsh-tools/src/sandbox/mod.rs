//! The sandbox of `bash`: the runtime binary re-executed as a launcher
//! that confines the command with kernel mechanisms — no helper binary.
//!
//! The tool side ([`SandboxConfig`]) never restricts the runtime process:
//! it spawns `<launcher> __sandbox-exec <mode> <workspace> [--protect <dir>]…
//! [--network off] -- bash -c …` with the runtime's credentials removed from
//! the environment ([`HiddenEnv`]). The launcher ([`sandbox_exec_main`])
//! works in two stages:
//!
//! 1. the **supervisor** asks the kernel to kill it when the runtime dies,
//!    enters a private mount namespace in which every mount is read-only
//!    except the writable roots of the mode, with the protected
//!    directories (`DSH_HOME`) read-only even inside those, then starts the
//!    second stage and stays outside the Landlock domain to supervise it
//!    (on kernels without Landlock signal scoping, the second stage starts
//!    as PID 1 of a new PID namespace, in a session of its own);
//! 2. the **confined stage** applies a Landlock ruleset (file rights per
//!    mode, optionally no TCP, and — where the kernel scopes them — no
//!    signals or abstract sockets to processes outside the domain), drops
//!    every capability and `exec`s the command, so the confinement binds it
//!    and all its descendants.
//!
//! Landlock decides which files may be written; the read-only mounts also
//! refuse what Landlock does not cover (`chmod`, `chown`, `utime`, xattrs)
//! outside the writable roots, and keep `DSH_HOME` out of reach wherever it
//! lies. Landlock's own rule that a confined process cannot ptrace (hence
//! cannot read `/proc/<pid>/environ`, `mem` or `fd/` of) a process outside
//! its domain keeps the runtime's memory and environment away. When the
//! kernel cannot enforce the requested mode, both sides fail closed: the
//! command is not run and the call reports the refusal.
//!
//! [`LANDLOCK_ABI_MAX_VAR`] (`DSH_LANDLOCK_ABI_MAX`) lowers the ABI both
//! sides work with, to test the fallbacks of older kernels on a new one:
//! the runtime reads it at launch ([`SandboxConfig::with_abi_max`]) and
//! passes it to the launcher as `--landlock-abi-max`, which then decides
//! (PID namespace, refusals) and builds its ruleset as on a kernel of that
//! ABI. It can only lower the kernel's ABI, and the launcher does not read
//! it from its environment, which a command controls.

mod capabilities;
mod env;
mod launcher;
mod mounts;
mod probe;
mod rules;

pub use env::HiddenEnv;
pub use launcher::{sandbox_exec_main, sandbox_exec_with};
pub use probe::{
    AbiMaxError, LANDLOCK_ABI_MAX_VAR, LandlockSupport, MIN_LANDLOCK_ABI, NETWORK_LANDLOCK_ABI,
    SCOPE_LANDLOCK_ABI, parse_abi_max,
};

use crate::PermissionMode;
use std::ffi::OsString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The first argument that selects the launcher mode of the runtime binary:
/// `dsh __sandbox-exec <mode> <workspace> -- <program> <args…>`.
pub const SANDBOX_EXEC_ARG: &str = "__sandbox-exec";

/// Launcher option naming a directory commands may never write.
pub(crate) const PROTECT_FLAG: &str = "--protect";

/// Launcher option setting the network access (`off`).
pub(crate) const NETWORK_FLAG: &str = "--network";

/// Launcher option capping the Landlock ABI it uses
/// ([`LANDLOCK_ABI_MAX_VAR`] as the runtime read it at launch).
pub(crate) const ABI_MAX_FLAG: &str = "--landlock-abi-max";

/// Launcher option of the second stage, followed by the Landlock ABI to
/// use: confine this process and become the command (the first stage stays
/// outside the Landlock domain as its supervisor).
pub(crate) const CONFINE_FLAG: &str = "--confine";

/// Second-stage option: the command is PID 1 of a new PID namespace (on
/// kernels without Landlock signal scoping).
pub(crate) const PID_NAMESPACE_FLAG: &str = "--pid-namespace";

/// Exit status of a launcher that refused to run its program.
pub(crate) const REFUSED_EXIT: i32 = 121;

/// First bytes of the launcher's stderr line that carries a refusal.
pub(crate) const REFUSAL_PREFIX: &str = "dsh-sandbox-refused: ";

/// Reports what Landlock the kernel offers; injectable for tests.
pub type SandboxProbe = Arc<dyn Fn() -> LandlockSupport + Send + Sync>;

/// The program that launches sandboxed commands: normally the runtime's own
/// executable with the argument [`SANDBOX_EXEC_ARG`].
#[derive(Debug, Clone)]
pub struct Launcher {
    /// Executable to run.
    pub program: PathBuf,
    /// Arguments placed before `<mode> <workspace> … -- <program> <args…>`.
    pub args: Vec<OsString>,
    /// The open image `program` names (`/proc/self/fd/N`), kept open for as
    /// long as the launcher is used.
    _image: Option<Arc<File>>,
}

impl Launcher {
    /// The running executable, invoked as `/proc/self/fd/<N> __sandbox-exec …`
    /// where `N` is a descriptor of `/proc/self/exe` opened now: the
    /// launcher is re-executed from the runtime's own image, never by a
    /// path that a command could replace (say, a `dsh` inside a writable
    /// virtual environment).
    pub fn current_exe() -> std::io::Result<Self> {
        let image = File::open("/proc/self/exe")?;
        let program = PathBuf::from(format!("/proc/self/fd/{}", image.as_raw_fd()));
        Ok(Self {
            _image: Some(Arc::new(image)),
            ..Self::new(program)
        })
    }

    /// `program __sandbox-exec …`.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self::with_args(program, vec![OsString::from(SANDBOX_EXEC_ARG)])
    }

    /// `program args… <mode> <workspace> …`: `args` must end with
    /// [`SANDBOX_EXEC_ARG`] (tests put a wrapper such as `env` in front).
    pub fn with_args(program: impl Into<PathBuf>, args: Vec<OsString>) -> Self {
        Self {
            program: program.into(),
            args,
            _image: None,
        }
    }
}

/// Whether sandboxed commands may open TCP connections
/// (`DSH_SANDBOX_NETWORK`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NetworkAccess {
    /// As the official runtime: commands reach the network (default).
    #[default]
    Open,
    /// TCP `connect` and `bind` are denied to commands in the restricted
    /// modes (Landlock ABI 4 or newer; refused closed below it).
    Denied,
}

impl NetworkAccess {
    /// Reads a `DSH_SANDBOX_NETWORK` value: `on` or `off`.
    pub fn parse(value: &str) -> Result<Self, String> {
        match value {
            "on" => Ok(Self::Open),
            "off" => Ok(Self::Denied),
            other => Err(format!(
                "DSH_SANDBOX_NETWORK must be \"on\" or \"off\", got \"{other}\""
            )),
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
    /// Directories commands may never write, even where they lie inside a
    /// writable root (the runtime's `DSH_HOME`). Each must exist.
    pub protected: Vec<PathBuf>,
    /// Network access of commands in the restricted modes.
    pub network: NetworkAccess,
    /// Variables removed from every command's environment.
    pub hidden_env: HiddenEnv,
    /// The highest Landlock ABI to use ([`LANDLOCK_ABI_MAX_VAR`]): lowers
    /// the probe's answer, on this side and the launcher's, never raises it.
    pub abi_max: Option<u8>,
}

impl SandboxConfig {
    /// The running executable as launcher and the real kernel probe.
    pub fn from_current_exe() -> Self {
        Self::new(Launcher::current_exe().ok())
    }

    /// `launcher` with the real kernel probe.
    pub fn with_launcher(launcher: Launcher) -> Self {
        Self::new(Some(launcher))
    }

    /// `launcher` (or none) with the real kernel probe, nothing protected,
    /// the network open and the providers' credentials hidden.
    pub fn new(launcher: Option<Launcher>) -> Self {
        Self {
            launcher,
            probe: Arc::new(LandlockSupport::detect),
            protected: Vec::new(),
            network: NetworkAccess::Open,
            hidden_env: HiddenEnv::default(),
            abi_max: None,
        }
    }

    /// Replaces the kernel probe.
    pub fn with_probe(mut self, probe: SandboxProbe) -> Self {
        self.probe = probe;
        self
    }

    /// Adds a directory that commands may never write.
    pub fn protect(mut self, dir: impl Into<PathBuf>) -> Self {
        self.protected.push(dir.into());
        self
    }

    /// Sets the network access of commands.
    pub fn with_network(mut self, network: NetworkAccess) -> Self {
        self.network = network;
        self
    }

    /// Replaces the variables hidden from commands.
    pub fn with_hidden_env(mut self, hidden: HiddenEnv) -> Self {
        self.hidden_env = hidden;
        self
    }

    /// Caps the Landlock ABI used ([`LANDLOCK_ABI_MAX_VAR`]; `None`: the
    /// kernel's). A cap at or above the kernel's ABI changes nothing.
    pub fn with_abi_max(mut self, max: Option<u8>) -> Self {
        self.abi_max = max;
        self
    }

    /// The Landlock support commands get: the probe's answer under the cap.
    pub fn landlock_support(&self) -> LandlockSupport {
        (self.probe)().capped(self.abi_max)
    }

    /// `Ok` when commands can run in `mode`, else the refusal text.
    pub(crate) fn check(&self, mode: PermissionMode) -> Result<(), String> {
        if !mode.is_restricted() {
            return Ok(());
        }
        if self.launcher.is_none() {
            return Err(refusal(mode, "no sandbox launcher is configured"));
        }
        let support = self.landlock_support();
        if support.abi < MIN_LANDLOCK_ABI {
            return Err(refusal(mode, &support.shortfall()));
        }
        if self.network == NetworkAccess::Denied && support.abi < NETWORK_LANDLOCK_ABI {
            return Err(network_refusal(mode, &support));
        }
        Ok(())
    }

    /// The command that runs `program args…` confined to `mode` with
    /// `workspace` writable, its environment stripped of the hidden
    /// variables. The caller adds the working directory and stdio.
    pub(crate) fn command(
        &self,
        mode: PermissionMode,
        workspace: &Path,
        program: &str,
        args: &[&str],
    ) -> tokio::process::Command {
        let mut command = match &self.launcher {
            Some(launcher) => {
                let mut command = tokio::process::Command::new(&launcher.program);
                command
                    .args(&launcher.args)
                    .args(self.launcher_args(mode, workspace))
                    .arg(program)
                    .args(args);
                command
            }
            None => {
                let mut command = tokio::process::Command::new(program);
                command.args(args);
                command
            }
        };
        for (name, _) in std::env::vars_os() {
            if self.hidden_env.hides(&name) {
                command.env_remove(name);
            }
        }
        command
    }

    /// `<mode> <workspace> [--protect <dir>]… [--network off]
    /// [--landlock-abi-max <n>] --`.
    fn launcher_args(&self, mode: PermissionMode, workspace: &Path) -> Vec<OsString> {
        let mut args = vec![mode.as_str().into(), workspace.as_os_str().to_owned()];
        for dir in &self.protected {
            args.push(PROTECT_FLAG.into());
            args.push(dir.as_os_str().to_owned());
        }
        if self.network == NetworkAccess::Denied {
            args.push(NETWORK_FLAG.into());
            args.push("off".into());
        }
        if let Some(max) = self.abi_max {
            args.push(ABI_MAX_FLAG.into());
            args.push(max.to_string().into());
        }
        args.push("--".into());
        args
    }
}

impl std::fmt::Debug for SandboxConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxConfig")
            .field("launcher", &self.launcher)
            .field("protected", &self.protected)
            .field("network", &self.network)
            .field("hidden_env", &self.hidden_env)
            .field("abi_max", &self.abi_max)
            .finish_non_exhaustive()
    }
}

/// The refusal text for `mode` (our own wording; no command was run).
pub(crate) fn refusal(mode: PermissionMode, why: &str) -> String {
    format!(
        "sandbox mode \"{mode}\" is in force but cannot be enforced here ({why}), so the command was not run: running it without confinement is refused. Use a Linux kernel with Landlock ABI {MIN_LANDLOCK_ABI} or newer (Linux 6.2+) enabled, or run the session in danger-full-access mode."
    )
}

/// The refusal text for `mode` with `DSH_SANDBOX_NETWORK=off` on a
/// Landlock too old to deny TCP.
pub(crate) fn network_refusal(mode: PermissionMode, support: &LandlockSupport) -> String {
    format!(
        "sandbox mode \"{mode}\" is in force but cannot be enforced here ({}), so the command was not run: running it without confinement is refused. Use a Linux kernel with Landlock ABI {NETWORK_LANDLOCK_ABI} or newer (Linux 6.7+) enabled, set DSH_SANDBOX_NETWORK=on, or run the session in danger-full-access mode.",
        support.network_shortfall()
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
