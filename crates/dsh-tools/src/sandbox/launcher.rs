//! The launcher side: `dsh __sandbox-exec <mode> <workspace> -- <program> <args…>`.

use super::{LandlockSupport, REFUSAL_PREFIX, REFUSED_EXIT, refusal, rules};
use crate::PermissionMode;
use rustix::process::Signal;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::Signals;
use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// Runs the launcher with the real kernel probe.
///
/// `args` are the arguments after `__sandbox-exec`:
/// `<mode> <workspace> -- <program> <args…>`. The launcher confines
/// itself, runs `program` as its child and supervises it: it returns the
/// child's exit code (or dies of the child's signal), 2 for bad usage, 121
/// for a refusal (a `dsh-sandbox-refused: …` line on stderr), 126/127 when
/// `program` cannot be executed. When the runtime dies it kills its whole
/// process group.
pub fn sandbox_exec_main(args: &[OsString]) -> ExitCode {
    sandbox_exec_with(args, &LandlockSupport::detect)
}

/// [`sandbox_exec_main`] with an injected kernel probe (for tests).
pub fn sandbox_exec_with(args: &[OsString], probe: &dyn Fn() -> LandlockSupport) -> ExitCode {
    let invocation = match Invocation::parse(args) {
        Ok(invocation) => invocation,
        Err(message) => {
            eprintln!("dsh __sandbox-exec: {message}");
            return ExitCode::from(2);
        }
    };
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
    if invocation.mode.is_restricted() {
        let support = probe();
        if !support.is_sufficient() {
            return refuse(invocation.mode, &support.shortfall());
        }
        if let Err(why) = rules::confine(invocation.mode, &invocation.workspace) {
            return refuse(invocation.mode, &why);
        }
    }
    supervise(&invocation)
}

/// Runs the command as a child in this process group (it inherits the
/// confinement and stdio), kills the group when this process is told to
/// stop, and exits the way the command did.
fn supervise(invocation: &Invocation) -> ExitCode {
    let signals = match Signals::new([SIGTERM, SIGHUP, SIGINT]) {
        Ok(signals) => signals,
        Err(err) => {
            eprintln!("dsh __sandbox-exec: cannot watch signals: {err}");
            return ExitCode::from(1);
        }
    };
    let mut child = match Command::new(&invocation.program)
        .args(&invocation.args)
        .spawn()
    {
        Ok(child) => child,
        Err(err) => {
            eprintln!(
                "dsh __sandbox-exec: cannot run {}: {err}",
                invocation.program.to_string_lossy()
            );
            let code = if err.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            return ExitCode::from(code);
        }
    };
    let _watcher = std::thread::spawn(move || {
        let mut signals = signals;
        if signals.forever().next().is_some() {
            let _ = rustix::process::kill_current_process_group(Signal::KILL);
        }
    });
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
    eprintln!("{REFUSAL_PREFIX}{}", refusal(mode, why));
    ExitCode::from(REFUSED_EXIT as u8)
}

struct Invocation {
    mode: PermissionMode,
    workspace: PathBuf,
    program: OsString,
    args: Vec<OsString>,
}

impl Invocation {
    fn parse(args: &[OsString]) -> Result<Self, String> {
        const USAGE: &str = "usage: __sandbox-exec <mode> <workspace> -- <program> [args…]";
        let [mode, workspace, separator, program, rest @ ..] = args else {
            return Err(USAGE.to_owned());
        };
        if separator != "--" {
            return Err(USAGE.to_owned());
        }
        let mode = mode
            .to_str()
            .ok_or_else(|| USAGE.to_owned())?
            .parse::<PermissionMode>()
            .map_err(|err| err.to_string())?;
        Ok(Self {
            mode,
            workspace: PathBuf::from(workspace),
            program: program.clone(),
            args: rest.to_vec(),
        })
    }
}
