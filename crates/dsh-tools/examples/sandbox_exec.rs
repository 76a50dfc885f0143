//! The sandbox launcher as a stand-alone program, for the crate's tests and
//! as the reference for wiring `dsh __sandbox-exec` into a binary.
//!
//! Run as `sandbox_exec __sandbox-exec <mode> <workspace> -- <program> <args…>`.
//! The environment variable `DSH_TEST_LANDLOCK_ABI`, when set, replaces the
//! kernel probe with a fixed answer, so tests can exercise the fail-closed
//! path on a kernel that has Landlock.

use dsh_tools::{LandlockSupport, SANDBOX_EXEC_ARG, sandbox_exec_main, sandbox_exec_with};
use std::ffi::OsString;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
    if args.get(1).is_none_or(|arg| arg != SANDBOX_EXEC_ARG) {
        eprintln!("usage: sandbox_exec {SANDBOX_EXEC_ARG} <mode> <workspace> -- <program> [args…]");
        return ExitCode::from(2);
    }
    let rest = &args[2..];
    match std::env::var("DSH_TEST_LANDLOCK_ABI")
        .ok()
        .and_then(|v| v.parse::<u8>().ok())
    {
        Some(abi) => sandbox_exec_with(rest, &move || LandlockSupport::offering(abi)),
        None => sandbox_exec_main(rest),
    }
}
