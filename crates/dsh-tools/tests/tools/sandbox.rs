//! The Landlock sandbox of `bash`: denials per mode, full access, and the
//! fail-closed paths on both sides of the launcher.

use crate::common::{
    Fixture, job_id, launcher_path, live_processes, ok, outside_dir, scratch_dir, text, wait_until,
};
use dsh_tools::{LandlockSupport, Launcher, PermissionMode, SandboxConfig};
use std::sync::Arc;

fn landlock_enforced() -> bool {
    LandlockSupport::detect().is_sufficient()
}

#[tokio::test]
async fn kernel_support_is_detected() {
    let support = LandlockSupport::detect();
    eprintln!("Landlock ABI detected: {}", support.abi);
    assert_eq!(support, LandlockSupport::detect(), "probe is stable");
}

#[tokio::test]
async fn workspace_write_allows_the_workspace_and_denies_elsewhere() {
    if !landlock_enforced() {
        dsh_repo_checks::skip("sandbox: the kernel cannot enforce the sandbox (Landlock)");
        return;
    }
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let outside = outside_dir();
    let target = outside.path().join("escape.txt");
    let out = fx
        .bash(&format!("echo x > '{}'", target.display()), "")
        .await;
    assert!(!out.is_error, "a denied command is an ordinary failure");
    let body = text(&out);
    // The read-only mount answers first (EROFS), as bubblewrap's would.
    assert!(body.contains("Read-only file system"), "{body}");
    assert!(
        body.ends_with("[sandbox: file access denied under workspace-write mode]\n[exit code: 1]"),
        "{body}"
    );
    assert!(!target.exists());

    let inside = fx
        .bash("echo data > inside.txt && cat inside.txt", "")
        .await;
    assert_eq!(text(&inside), "data\n");
    assert_eq!(
        ok(std::fs::read_to_string(fx.path("inside.txt")), "inside"),
        "data\n"
    );

    let tmp = fx
        .bash(
            "f=$(mktemp) && echo t > \"$f\" && cat \"$f\" && rm \"$f\"",
            "",
        )
        .await;
    assert_eq!(text(&tmp), "t\n", "temporary files stay writable");
    let null = fx.bash("echo gone > /dev/null && echo ok", "").await;
    assert_eq!(text(&null), "ok\n");
}

#[tokio::test]
async fn read_only_denies_every_write_but_reads() {
    if !landlock_enforced() {
        dsh_repo_checks::skip("sandbox: the kernel cannot enforce the sandbox (Landlock)");
        return;
    }
    let fx = Fixture::new(PermissionMode::ReadOnly);
    fx.write_file("notes.txt", "readable\n");
    assert_eq!(text(&fx.bash("cat notes.txt", "").await), "readable\n");
    let out = fx.bash("echo x > new.txt", "").await;
    assert!(
        text(&out).ends_with("[sandbox: file access denied under read-only mode]\n[exit code: 1]"),
        "{}",
        text(&out)
    );
    assert!(!fx.path("new.txt").exists());
    let trunc = fx.bash("truncate -s 0 notes.txt", "").await;
    assert!(
        text(&trunc).contains("[sandbox: file access denied"),
        "{}",
        text(&trunc)
    );
    assert_eq!(
        ok(std::fs::read_to_string(fx.path("notes.txt")), "notes"),
        "readable\n"
    );
    assert_eq!(text(&fx.bash("echo ok 2>/dev/null", "").await), "ok\n");
}

#[tokio::test]
async fn full_access_is_unrestricted() {
    let fx = Fixture::with(PermissionMode::DangerFullAccess, |config| {
        config.with_sandbox(
            SandboxConfig::with_launcher(Launcher::new(launcher_path()))
                .with_probe(Arc::new(LandlockSupport::unavailable)),
        )
    });
    let outside = scratch_dir();
    let target = outside.path().join("free.txt");
    let out = fx
        .bash(
            &format!(
                "echo free > '{}' && cat '{}'",
                target.display(),
                target.display()
            ),
            "",
        )
        .await;
    assert_eq!(text(&out), "free\n");
    assert!(target.exists());
}

#[tokio::test]
async fn missing_kernel_support_fails_closed_before_spawning() {
    let fx = Fixture::with(PermissionMode::WorkspaceWrite, |config| {
        config.with_sandbox(
            SandboxConfig::with_launcher(Launcher::new(launcher_path()))
                .with_probe(Arc::new(LandlockSupport::unavailable)),
        )
    });
    let out = fx.bash("echo ran > ran.txt", "").await;
    assert!(out.is_error);
    assert_eq!(out.meta, None);
    assert_eq!(out.error, None);
    let body = text(&out);
    assert!(
        body.starts_with(
            "Error: sandbox mode \"workspace-write\" is in force but cannot be enforced here"
        ),
        "{body}"
    );
    assert!(!fx.path("ran.txt").exists());
    let settled = fx.host.of_kind("job/settled");
    assert_eq!(fx.host.kinds(), ["job/registered", "job/settled"]);
    assert_eq!(settled[0]["status"], "failed");
    assert_eq!(settled[0]["detail"].as_str(), body.strip_prefix("Error: "));
}

#[tokio::test]
async fn launcher_refuses_when_its_own_probe_fails() {
    for (abi, expected) in [
        (0u8, "Landlock is not available"),
        (2, "offers Landlock ABI 2"),
    ] {
        // The launcher re-checks the kernel itself; here its probe is told
        // Landlock is missing while the tool-side probe says all is well.
        let launcher = Launcher::with_args(
            "/usr/bin/env",
            vec![
                format!("DSH_TEST_LANDLOCK_ABI={abi}").into(),
                launcher_path().into_os_string(),
                "__sandbox-exec".into(),
            ],
        );
        let fx = Fixture::with(PermissionMode::ReadOnly, |config| {
            config.with_sandbox(
                SandboxConfig::with_launcher(launcher)
                    .with_probe(Arc::new(|| LandlockSupport { abi: 7 })),
            )
        });
        let out = fx.bash("echo should-not-run", "").await;
        assert!(out.is_error);
        let body = text(&out);
        assert!(
            body.starts_with("Error: sandbox mode \"read-only\""),
            "{body}"
        );
        assert!(body.contains(expected), "{body}");
        assert!(!body.contains("should-not-run"));
        let settled = fx.host.of_kind("job/settled");
        assert_eq!(settled[0]["status"], "failed");
        assert_eq!(settled[0]["detail"].as_str(), body.strip_prefix("Error: "));
    }
}

#[tokio::test]
async fn restricted_modes_need_a_launcher() {
    let fx = Fixture::with(PermissionMode::WorkspaceWrite, |config| {
        config.with_sandbox(
            SandboxConfig::new(None).with_probe(Arc::new(|| LandlockSupport { abi: 7 })),
        )
    });
    let out = fx.bash("echo hi", "").await;
    assert!(out.is_error);
    assert!(text(&out).contains("no sandbox launcher is configured"));

    let free = Fixture::with(PermissionMode::DangerFullAccess, |config| {
        config.with_sandbox(
            SandboxConfig::new(None).with_probe(Arc::new(LandlockSupport::unavailable)),
        )
    });
    assert_eq!(text(&free.bash("echo direct", "").await), "direct\n");
}

#[test]
fn launcher_rejects_bad_usage() {
    let out = ok(
        std::process::Command::new(launcher_path())
            .args(["__sandbox-exec", "workspace-write"])
            .output(),
        "run launcher",
    );
    assert_eq!(out.status.code(), Some(2));
    let out = ok(
        std::process::Command::new(launcher_path())
            .args(["__sandbox-exec", "no-such-mode", "/", "--", "true"])
            .output(),
        "run launcher",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("permission mode must be"));
    let out = ok(
        std::process::Command::new(launcher_path())
            .args([
                "__sandbox-exec",
                "danger-full-access",
                "/",
                "--",
                "/no/such/program",
            ])
            .output(),
        "run launcher",
    );
    assert_eq!(out.status.code(), Some(127));
}

/// A fresh directory under the first temporary directory whose every
/// ancestor all users may traverse (`$TMPDIR`, `/tmp`, `/var/tmp`).
fn nobody_reachable_dir() -> Option<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    let bases = [
        std::env::temp_dir(),
        std::path::PathBuf::from("/tmp"),
        std::path::PathBuf::from("/var/tmp"),
    ];
    bases.into_iter().find_map(|base| {
        let traversable = base.ancestors().all(|dir| {
            std::fs::metadata(dir).is_ok_and(|meta| meta.permissions().mode() & 0o001 != 0)
        });
        if !traversable {
            return None;
        }
        tempfile::Builder::new()
            .prefix("dsh-tools-nobody-")
            .tempdir_in(&base)
            .ok()
    })
}

/// An unprivileged user gets the same confinement through a user
/// namespace: writes and metadata changes outside fail, the workspace is
/// writable, the supervisor cannot be signalled, no capability is left.
#[test]
fn an_unprivileged_user_is_confined_through_a_user_namespace() {
    let root = rustix::process::geteuid().is_root();
    if !landlock_enforced() || !root || !std::path::Path::new("/usr/bin/setpriv").exists() {
        dsh_repo_checks::skip("sandbox: needs root (to become nobody), setpriv and Landlock");
        return;
    }
    // The launcher and the workspace must be reachable by nobody: not under
    // the checkout's target/ (a checkout in a home directory of mode 0700
    // is closed to it) but in a directory of their own, under a temporary
    // directory every user can traverse.
    let Some(dir) = nobody_reachable_dir() else {
        dsh_repo_checks::skip(
            "sandbox: no temporary directory ($TMPDIR, /tmp, /var/tmp) that nobody can traverse",
        );
        return;
    };
    let ws = dir.path().join("ws");
    ok(std::fs::create_dir_all(&ws), "mkdir ws");
    let launcher = dir.path().join("launcher");
    ok(std::fs::copy(launcher_path(), &launcher), "copy launcher");
    for path in [dir.path(), ws.as_path(), launcher.as_path()] {
        ok(
            std::os::unix::fs::chown(path, Some(65534), Some(65534)),
            "chown",
        );
    }
    ok(
        std::fs::set_permissions(
            dir.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        ),
        "chmod",
    );
    let outside = outside_dir();
    let target = outside.path().join("escape");
    let out = ok(
        std::process::Command::new("/usr/bin/setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(&launcher)
            .args(["__sandbox-exec", "workspace-write"])
            .arg(&ws)
            .args(["--", "bash", "-c"])
            .arg(format!(
                "id -u; echo in > in.txt && cat in.txt; chmod 777 /etc/hostname; echo x > '{}'; kill -9 $PPID; echo rc=$?; grep CapEff /proc/self/status",
                target.display()
            ))
            .current_dir(&ws)
            .output(),
        "run launcher as nobody",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stdout.starts_with("65534\nin\n"), "{stdout}{stderr}");
    assert!(stdout.contains("rc=1"), "{stdout}");
    assert!(stdout.contains("CapEff:\t0000000000000000"), "{stdout}");
    assert!(
        stderr.contains("chmod: changing permissions of '/etc/hostname': Read-only file system"),
        "{stderr}"
    );
    assert!(!target.exists());
}

#[tokio::test]
async fn network_off_fails_closed_below_landlock_abi_4() {
    let fx = Fixture::with(PermissionMode::WorkspaceWrite, |config| {
        config.with_sandbox(
            SandboxConfig::with_launcher(Launcher::new(launcher_path()))
                .with_network(dsh_tools::NetworkAccess::Denied)
                .with_probe(Arc::new(|| LandlockSupport { abi: 3 })),
        )
    });
    let out = fx.bash("echo ran > ran.txt", "").await;
    assert!(out.is_error);
    assert!(
        text(&out)
            .contains("DSH_SANDBOX_NETWORK=off needs Landlock ABI 4 but the kernel offers ABI 3"),
        "{}",
        text(&out)
    );
    assert!(!fx.path("ran.txt").exists());
}

#[tokio::test]
async fn a_missing_protected_directory_fails_closed() {
    let missing = scratch_dir().path().join("no-such-home");
    let fx = Fixture::with(PermissionMode::WorkspaceWrite, |config| {
        config.with_sandbox(
            SandboxConfig::with_launcher(Launcher::new(launcher_path())).protect(&missing),
        )
    });
    let out = fx.bash("echo ran > ran.txt", "").await;
    assert!(out.is_error);
    assert!(text(&out).contains("does not exist"), "{}", text(&out));
    assert!(!fx.path("ran.txt").exists());
}

/// Without Landlock signal scoping (faked here as ABI 5) the command runs
/// as PID 1 of its own PID namespace and its own session: the runtime is
/// invisible to it and `kill 0` cannot reach the supervisor.
#[tokio::test]
async fn below_abi_6_commands_get_a_pid_namespace() {
    if !landlock_enforced() {
        dsh_repo_checks::skip("sandbox: the kernel cannot enforce the sandbox (Landlock)");
        return;
    }
    let launcher = Launcher::with_args(
        "/usr/bin/env",
        vec![
            "DSH_TEST_LANDLOCK_ABI=5".into(),
            launcher_path().into_os_string(),
            "__sandbox-exec".into(),
        ],
    );
    let fx = Fixture::with(PermissionMode::WorkspaceWrite, |config| {
        config.with_sandbox(
            SandboxConfig::with_launcher(launcher)
                .with_probe(Arc::new(|| LandlockSupport { abi: 5 })),
        )
    });
    let runtime = std::process::id();
    let out = fx
        .bash(
            &format!("echo pid=$$; kill -9 {runtime}; echo rc=$?; kill -9 0; echo alive > alive.txt; echo done"),
            "",
        )
        .await;
    let body = text(&out);
    assert!(body.starts_with("pid=1\nrc=1\n"), "{body}");
    assert!(body.contains("No such process"), "{body}");
    assert!(fx.path("alive.txt").exists(), "{body}");

    // Killing the job kills the supervisor, whose death takes the whole
    // namespace, background children included.
    let running = fx
        .bash(
            "sleep 7791.5 & sleep 7791.6; echo never",
            ",\"run_in_background\":true",
        )
        .await;
    let id = job_id(&running);
    // The supervisor, bash and both sleeps.
    wait_until("sleeps started", || live_processes("7791.").len() >= 4).await;
    fx.call("job_kill", &format!("{{\"job_id\":\"{id}\"}}"))
        .await;
    wait_until("sleeps gone", || live_processes("7791.").is_empty()).await;
}
