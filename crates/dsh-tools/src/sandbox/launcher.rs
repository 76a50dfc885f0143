//! The launcher side:
//! `dsh __sandbox-exec <mode> <workspace> [--protect <dir>]… [--network off]
//! [--landlock-abi-max <n>] -- <program> <args…>`.

use super::{
    ABI_MAX_FLAG, CONFINE_FLAG, LandlockSupport, NETWORK_FLAG, NetworkAccess, PID_NAMESPACE_FLAG,
    PROTECT_FLAG, REFUSAL_PREFIX, REFUSED_EXIT, SANDBOX_EXEC_ARG, SCOPE_LANDLOCK_ABI, capabilities,
    mounts, network_refusal, parse_abi_max, refusal, rules,
};
use crate::PermissionMode;
use rustix::process::Signal;
use rustix::thread::UnshareFlags;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// Runs the launcher with the real kernel probe.
///
/// `args` are the arguments after `__sandbox-exec`:
/// `<mode> <workspace> [--protect <dir>]… [--network off]
/// [--landlock-abi-max <n>] -- <program> <args…>`. The kernel's Landlock
/// ABI is lowered to `--landlock-abi-max` (never raised); the launcher does
/// not read `DSH_LANDLOCK_ABI_MAX` from its environment, which a command
/// could set for a launcher of its own. In a restricted mode the launcher
/// isolates the mounts, then
/// runs its confined second stage (itself, with `--confine`), which
/// becomes `program`; it supervises that child: it returns the child's
/// exit code (or dies of the child's signal), 2 for bad usage, 121 for a
/// refusal (a `dsh-sandbox-refused: …` line on stderr), 126/127 when
/// `program` cannot be executed. When the runtime dies it kills its whole
/// process group.
pub fn sandbox_exec_main(args: &[OsString]) -> ExitCode {
    sandbox_exec_with(args, &LandlockSupport::detect)
}

/// [`sandbox_exec_main`] with an injected kernel probe (for tests).
pub fn sandbox_exec_with(args: &[OsString], probe: &dyn Fn() -> LandlockSupport) -> ExitCode {
    // The second stage: `--confine <abi> [--pid-namespace] <invocation>`,
    // where `<abi>` is the Landlock ABI its supervisor decided on.
    let (confine, args) = match args {
        [first, abi, rest @ ..] if first == CONFINE_FLAG => match abi.to_str().map(parse_abi_max) {
            Some(Ok(abi)) => (Some(abi), rest),
            _ => {
                eprintln!("dsh __sandbox-exec: {CONFINE_FLAG} needs a Landlock ABI");
                return ExitCode::from(2);
            }
        },
        _ => (None, args),
    };
    let (pid_namespace, args) = match args.split_first() {
        Some((first, rest)) if confine.is_some() && first == PID_NAMESPACE_FLAG => (true, rest),
        _ => (false, args),
    };
    let invocation = match Invocation::parse(args) {
        Ok(invocation) => invocation,
        Err(message) => {
            eprintln!("dsh __sandbox-exec: {message}");
            return ExitCode::from(2);
        }
    };
    if let Some(abi) = confine {
        return confine_and_exec(&invocation, abi, pid_namespace);
    }
    // The launcher stays as the supervisor of the command: when the runtime
    // dies (even by SIGKILL) the kernel sends it SIGTERM, and it kills its
    // whole process group — the command and anything it left behind.
    if let Err(err) = rustix::process::set_parent_process_death_signal(Some(Signal::TERM)) {
        eprintln!("dsh __sandbox-exec: cannot set the parent-death signal: {err}");
        return ExitCode::from(1);
    }
    if rustix::process::getppid().is_none_or(|parent| parent.as_raw_nonzero().get() == 1) {
        // The runtime died before the death signal was armed.
        return ExitCode::from(1);
    }
    if !invocation.mode.is_restricted() {
        let mut command = Command::new(&invocation.program);
        command.args(&invocation.args);
        return supervise(command, &invocation, false);
    }
    let support = probe().capped(invocation.abi_max);
    if !support.is_sufficient() {
        return refuse(invocation.mode, &support.shortfall());
    }
    if invocation.network == NetworkAccess::Denied && support.abi < super::NETWORK_LANDLOCK_ABI {
        return refuse_with(network_refusal(invocation.mode, &support));
    }
    let writable = rules::writable_roots(invocation.mode, &invocation.workspace);
    let protected = match invocation.protected_dirs() {
        Ok(dirs) => dirs,
        Err(why) => return refuse(invocation.mode, &why),
    };
    if let Err(why) = mounts::isolate(&writable, &protected) {
        return refuse(invocation.mode, &why);
    }
    // The second stage is this same image; it confines itself and becomes
    // the command, while this process stays outside the Landlock domain, out
    // of reach of the command's signals and ptrace.
    let mut command = Command::new("/proc/self/exe");
    command
        .arg(SANDBOX_EXEC_ARG)
        .arg(CONFINE_FLAG)
        .arg(support.abi.to_string());
    // Without Landlock's signal scoping (ABI < 6) the command gets a PID
    // namespace of its own instead: it cannot see, hence cannot signal,
    // any process outside it.
    let pid_namespace = support.abi < SCOPE_LANDLOCK_ABI;
    if pid_namespace {
        command.arg(PID_NAMESPACE_FLAG);
    }
    command.args(args);
    supervise(command, &invocation, pid_namespace)
}

/// The second stage: Landlock (the rights of `abi` at most), no
/// capabilities, then `exec` the program. Returns only on failure.
fn confine_and_exec(invocation: &Invocation, abi: u8, pid_namespace: bool) -> ExitCode {
    if pid_namespace {
        // PID 1 of its namespace, in a session of its own so that `kill 0`
        // cannot reach the supervisor's process group; when the
        // supervisor dies, the namespace dies with it.
        let own_session = rustix::process::setsid()
            .map(|_| ())
            .and_then(|()| rustix::process::set_parent_process_death_signal(Some(Signal::KILL)));
        if let Err(err) = own_session {
            return refuse(
                invocation.mode,
                &format!("cannot isolate the command's processes: {err}"),
            );
        }
    }
    if invocation.mode.is_restricted() {
        let writable = rules::writable_roots(invocation.mode, &invocation.workspace);
        if let Err(why) = rules::confine(&writable, invocation.network, abi) {
            return refuse(invocation.mode, &why);
        }
        if let Err(why) = capabilities::drop_all() {
            return refuse(invocation.mode, &why);
        }
    }
    let err = Command::new(&invocation.program)
        .args(&invocation.args)
        .exec();
    cannot_run(&invocation.program, &err)
}

fn cannot_run(program: &OsString, err: &std::io::Error) -> ExitCode {
    eprintln!(
        "dsh __sandbox-exec: cannot run {}: {err}",
        program.to_string_lossy()
    );
    ExitCode::from(if err.kind() == std::io::ErrorKind::NotFound {
        127
    } else {
        126
    })
}

/// Runs `command` as a child in this process group (it inherits the mount
/// namespace and stdio), kills the group when this process is told to
/// stop, and exits the way the command did.
fn supervise(mut command: Command, invocation: &Invocation, pid_namespace: bool) -> ExitCode {
    let signals = match Signals::new([SIGTERM, SIGHUP, SIGINT]) {
        Ok(signals) => signals,
        Err(err) => {
            eprintln!("dsh __sandbox-exec: cannot watch signals: {err}");
            return ExitCode::from(1);
        }
    };
    // The watcher thread exists before any PID namespace: a process may not
    // start threads once its children go to another PID namespace.
    let _watcher = std::thread::spawn(move || {
        let mut signals = signals;
        if signals.forever().next().is_some() {
            let _ = rustix::process::kill_current_process_group(Signal::KILL);
        }
    });
    if pid_namespace && let Err(err) = mounts::unshare(UnshareFlags::NEWPID) {
        return refuse(
            invocation.mode,
            &format!("cannot create a PID namespace: {err}"),
        );
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) => return cannot_run(&invocation.program, &err),
    };
    match child.wait() {
        Ok(status) => {
            if let Some(signal) = status.signal() {
                // Die the same way, so the tool sees the command's signal.
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                return ExitCode::from(u8::try_from(128 + signal).unwrap_or(255));
            }
            ExitCode::from(
                status
                    .code()
                    .and_then(|c| u8::try_from(c).ok())
                    .unwrap_or(1),
            )
        }
        Err(err) => {
            eprintln!("dsh __sandbox-exec: lost the command: {err}");
            ExitCode::from(1)
        }
    }
}

fn refuse(mode: PermissionMode, why: &str) -> ExitCode {
    refuse_with(refusal(mode, why))
}

fn refuse_with(text: String) -> ExitCode {
    eprintln!("{REFUSAL_PREFIX}{text}");
    ExitCode::from(REFUSED_EXIT as u8)
}

struct Invocation {
    mode: PermissionMode,
    workspace: PathBuf,
    protected: Vec<PathBuf>,
    network: NetworkAccess,
    abi_max: Option<u8>,
    program: OsString,
    args: Vec<OsString>,
}

impl Invocation {
    fn parse(args: &[OsString]) -> Result<Self, String> {
        const USAGE: &str = "usage: __sandbox-exec <mode> <workspace> [--protect <dir>]... [--network on|off] [--landlock-abi-max <n>] -- <program> [args…]";
        let [mode, workspace, rest @ ..] = args else {
            return Err(USAGE.to_owned());
        };
        let mode = mode
            .to_str()
            .ok_or_else(|| USAGE.to_owned())?
            .parse::<PermissionMode>()
            .map_err(|err| err.to_string())?;
        let mut invocation = Self {
            mode,
            workspace: PathBuf::from(workspace),
            protected: Vec::new(),
            network: NetworkAccess::Open,
            abi_max: None,
            program: OsString::new(),
            args: Vec::new(),
        };
        let mut rest = rest;
        loop {
            match rest {
                [flag, dir, tail @ ..] if flag == PROTECT_FLAG => {
                    invocation.protected.push(PathBuf::from(dir));
                    rest = tail;
                }
                [flag, value, tail @ ..] if flag == NETWORK_FLAG => {
                    invocation.network = NetworkAccess::parse(&value.to_string_lossy())?;
                    rest = tail;
                }
                [flag, value, tail @ ..] if flag == ABI_MAX_FLAG => {
                    let max = parse_abi_max(&value.to_string_lossy())
                        .map_err(|err| format!("{ABI_MAX_FLAG}: {err}"))?;
                    // Given twice, the lower cap holds.
                    invocation.abi_max = Some(invocation.abi_max.map_or(max, |m| m.min(max)));
                    rest = tail;
                }
                [separator, program, tail @ ..] if separator == "--" => {
                    invocation.program = program.clone();
                    invocation.args = tail.to_vec();
                    return Ok(invocation);
                }
                _ => return Err(USAGE.to_owned()),
            }
        }
    }

    /// The protected directories, canonical; each must exist (the runtime
    /// creates `DSH_HOME` before any command runs), since a missing one
    /// inside a writable root could be created by the command.
    fn protected_dirs(&self) -> Result<Vec<PathBuf>, String> {
        self.protected
            .iter()
            .map(|dir| {
                dir.canonicalize()
                    .ok()
                    .filter(|real| real.is_dir())
                    .ok_or_else(|| {
                        format!("the protected directory {} does not exist", dir.display())
                    })
            })
            .collect()
    }
}
