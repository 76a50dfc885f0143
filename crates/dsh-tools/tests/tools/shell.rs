//! The persistent `bash` of sdk-minimal.

use crate::common::{
    Fixture, assert_fails_closed, js, landlock, launcher_path, live_processes, text, wait_until,
};
use dsh_tools::{LandlockSupport, Launcher, PermissionMode, SandboxConfig};
use std::sync::Arc;
use std::time::Duration;

fn cmd(command: &str) -> String {
    format!("{{\"command\":{}}}", js(command))
}

#[tokio::test]
async fn state_survives_between_calls() {
    let fx = Fixture::minimal(|c| c);
    fx.write_file("sub/x.txt", "x");
    let first = fx
        .call(
            "bash",
            &cmd("cd sub && export FOO=bar && greet() { echo hi \"$1\"; }"),
        )
        .await;
    assert_eq!(text(&first), "[Command finished with exit code 0]");
    let second = fx.call("bash", &cmd("pwd; echo $FOO; greet you")).await;
    let sub = fx.path("sub");
    assert_eq!(
        text(&second),
        format!(
            "{}\nbar\nhi you\n[Command finished with exit code 0]",
            sub.display()
        )
    );
    assert_eq!(second.meta, None, "the official shell reports no meta");
}

#[tokio::test]
async fn exit_codes_and_stderr_are_reported() {
    let fx = Fixture::minimal(|c| c);
    let out = fx.call("bash", &cmd("echo out; echo err >&2; false")).await;
    assert_eq!(text(&out), "out\nerr\n[Command finished with exit code 1]");
    assert!(!out.is_error);
    let no_newline = fx.call("bash", &cmd("printf partial")).await;
    assert_eq!(
        text(&no_newline),
        "partial\n[Command finished with exit code 0]"
    );
    let quotes = fx
        .call("bash", &cmd("echo 'single' \"double\" $'tab\\there'"))
        .await;
    assert_eq!(
        text(&quotes),
        "single double tab\there\n[Command finished with exit code 0]"
    );
    let stdin = fx.call("bash", &cmd("cat; echo after")).await;
    assert_eq!(text(&stdin), "after\n[Command finished with exit code 0]");
}

#[tokio::test]
async fn long_output_is_clipped() {
    let fx = Fixture::minimal(|c| c);
    let out = fx
        .call(
            "bash",
            &cmd("head -c 20000 /dev/zero | tr '\\0' b; echo; echo tail-end"),
        )
        .await;
    let body = text(&out);
    assert!(
        body.contains("[output clipped: showing the last 16000 of 20010 characters]"),
        "{}",
        &body[body.len() - 200..]
    );
    assert!(body.ends_with("tail-end\n[output clipped: showing the last 16000 of 20010 characters]\n[Command finished with exit code 0]"));
    assert!(body.len() < 16_200);
}

#[tokio::test]
async fn timeout_resets_the_shell() {
    let fx = Fixture::minimal(|mut c| {
        c.shell_timeout = Duration::from_millis(500);
        c
    });
    fx.call("bash", &cmd("export KEEP=1")).await;
    let out = fx.call("bash", &cmd("echo before; sleep 7781.5")).await;
    assert!(out.is_error);
    let body = text(&out);
    assert!(
        body.starts_with("before\n[Command timed out after 500ms;"),
        "{body}"
    );
    wait_until("sleep gone", || live_processes("7781.5").is_empty()).await;
    let fresh = fx.call("bash", &cmd("echo \"[$KEEP]\"")).await;
    assert_eq!(text(&fresh), "[]\n[Command finished with exit code 0]");
}

#[tokio::test]
async fn exiting_the_shell_starts_a_fresh_one() {
    let fx = Fixture::minimal(|c| c);
    fx.call("bash", &cmd("export KEEP=1")).await;
    let out = fx.call("bash", &cmd("echo bye; exit 5")).await;
    let body = text(&out);
    assert!(
        body.starts_with("bye\n[Command finished with exit code 5]\n[The shell exited;"),
        "{body}"
    );
    let fresh = fx.call("bash", &cmd("echo \"[$KEEP]\"")).await;
    assert_eq!(text(&fresh), "[]\n[Command finished with exit code 0]");
}

#[tokio::test]
async fn the_shell_follows_session_directory_changes() {
    let mut fx = Fixture::minimal(|c| c);
    fx.write_file("other/x", "x");
    fx.call("bash", &cmd("true")).await;
    fx.cwd = fx.path("other");
    let out = fx.call("bash", &cmd("pwd")).await;
    assert_eq!(
        text(&out),
        format!(
            "{}\n[Command finished with exit code 0]",
            fx.path("other").display()
        )
    );
}

#[tokio::test]
async fn shutdown_kills_the_shell_and_its_children() {
    let fx = Fixture::minimal(|c| c);
    fx.call("bash", &cmd("sleep 7782.5 > /dev/null 2>&1 &"))
        .await;
    wait_until("sleep", || live_processes("7782.5").len() == 1).await;
    fx.state.shutdown();
    wait_until("sleep gone", || live_processes("7782.5").is_empty()).await;
    let refused = fx.call("bash", &cmd("echo late")).await;
    assert!(refused.is_error);
}

/// At this run's Landlock level (`DSH_LANDLOCK_ABI_MAX`, see
/// `sandbox.rs`): confined from ABI 3, refused below it.
#[tokio::test]
async fn a_restricted_mode_confines_the_shell_or_refuses() {
    let fx = Fixture::minimal_in(PermissionMode::ReadOnly, |c| c);
    let out = fx.call("bash", &cmd("echo x > denied.txt")).await;
    if landlock().is_sufficient() {
        assert!(
            text(&out).contains("Read-only file system"),
            "{}",
            text(&out)
        );
    } else {
        assert_fails_closed(&out, PermissionMode::ReadOnly);
    }
    assert!(!fx.path("denied.txt").exists());
    let fx = Fixture::minimal_in(PermissionMode::WorkspaceWrite, |c| {
        c.with_sandbox(
            SandboxConfig::with_launcher(Launcher::new(launcher_path()))
                .with_probe(Arc::new(LandlockSupport::unavailable)),
        )
    });
    let out = fx.call("bash", &cmd("echo never")).await;
    assert!(out.is_error);
    assert!(text(&out).starts_with("Error: sandbox mode \"workspace-write\""));
}
