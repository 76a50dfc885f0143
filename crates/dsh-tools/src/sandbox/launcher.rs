//! The launcher side: `dsh __sandbox-exec <mode> <workspace> -- <program> <args…>`.

use super::{LandlockSupport, REFUSAL_PREFIX, REFUSED_EXIT, refusal, rules};
use crate::PermissionMode;
use rustix::process::Signal;
use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// Runs the launcher with the real kernel probe.
///
/// `args` are the arguments after `__sandbox-exec`:
/// `<mode> <workspace> -- <program> <args…>`. On success this never
/// returns (the process becomes `program`); otherwise it returns the exit
/// code to end the process with: 2 for bad usage, 121 for a refusal (a
/// `dsh-sandbox-refused: …` line on stderr), 126/127 when `program` cannot
/// be executed.
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
    // Die with the runtime: the command must not outlive the process that
    // watches it. Survives the exec below.
    if let Err(err) = rustix::process::set_parent_process_death_signal(Some(Signal::KILL)) {
        eprintln!("dsh __sandbox-exec: cannot set the parent-death signal: {err}");
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
    let err = Command::new(&invocation.program)
        .args(&invocation.args)
        .exec();
    eprintln!(
        "dsh __sandbox-exec: cannot run {}: {err}",
        invocation.program.to_string_lossy()
    );
    if err.kind() == std::io::ErrorKind::NotFound {
        ExitCode::from(127)
    } else {
        ExitCode::from(126)
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
