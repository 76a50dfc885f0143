//! The Landlock sandbox of `bash`: denials per mode, full access, and the
//! fail-closed paths on both sides of the launcher.
//!
//! The tests that run real commands assert what docs/tools-and-sandbox.md
//! documents for this run's Landlock level: the kernel's ABI, lowered by
//! `DSH_LANDLOCK_ABI_MAX` (`scripts/test.sh` reruns this module at every
//! fallback level). ABI 6 and newer: Landlock scopes signals; 3 to 5: a PID
//! namespace instead; below 3: every command in a restricted mode is
//! refused.

use crate::common::{
    Fixture, abi_max, assert_fails_closed, job_id, landlock, launcher_path, live_processes, ok,
    outside_dir, sandbox, scratch_dir, shortfall, text, wait_until,
};
use dsh_tools::{
    LandlockSupport, Launcher, MIN_LANDLOCK_ABI, NETWORK_LANDLOCK_ABI, NetworkAccess,
    PermissionMode, SCOPE_LANDLOCK_ABI, SandboxConfig,
};
use std::sync::Arc;

#[tokio::test]
async fn kernel_support_is_detected() {
    let kernel = LandlockSupport::detect();
    let support = landlock();
    eprintln!(
        "Landlock ABI detected: {}; in use: {} (DSH_LANDLOCK_ABI_MAX: {:?})",
        kernel.abi,
        support.abi,
        abi_max()
    );
    assert_eq!(kernel, LandlockSupport::detect(), "probe is stable");
    assert_eq!(kernel.lowered_from, None);
    let expected = abi_max().map_or(kernel.abi, |max| max.min(kernel.abi));
    assert_eq!(support.abi, expected, "the cap only lowers");
    assert_eq!(
        support.lowered_from,
        (support.abi < kernel.abi).then_some(kernel.abi)
    );
}

#[tokio::test]
async fn workspace_write_allows_the_workspace_and_denies_elsewhere() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let outside = outside_dir();
    let target = outside.path().join("escape.txt");
    let out = fx
        .bash(&format!("echo x > '{}'", target.display()), "")
        .await;
    if !landlock().is_sufficient() {
        assert_fails_closed(&out, PermissionMode::WorkspaceWrite);
        assert!(!target.exists());
        let inside = fx.bash("echo data > inside.txt", "").await;
        assert_fails_closed(&inside, PermissionMode::WorkspaceWrite);
        assert!(!fx.path("inside.txt").exists(), "nothing ran");
        return;
    }
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
    let fx = Fixture::new(PermissionMode::ReadOnly);
    fx.write_file("notes.txt", "readable\n");
    let read = fx.bash("cat notes.txt", "").await;
    if !landlock().is_sufficient() {
        // Even a read: the command is not run at all.
        assert_fails_closed(&read, PermissionMode::ReadOnly);
        let trunc = fx.bash("truncate -s 0 notes.txt", "").await;
        assert_fails_closed(&trunc, PermissionMode::ReadOnly);
        assert_eq!(
            ok(std::fs::read_to_string(fx.path("notes.txt")), "notes"),
            "readable\n"
        );
        return;
    }
    assert_eq!(text(&read), "readable\n");
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
    // Without Landlock at all, and at this run's level: the cap never
    // matters to danger-full-access.
    let without = SandboxConfig::with_launcher(Launcher::new(launcher_path()))
        .with_probe(Arc::new(LandlockSupport::unavailable));
    for config in [without, sandbox()] {
        let fx = Fixture::with(PermissionMode::DangerFullAccess, |tools| {
            tools.with_sandbox(config)
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
            "Error: sandbox mode \"workspace-write\" is in force but cannot be enforced here (Landlock is not available on this kernel)"
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
                    .with_probe(Arc::new(|| LandlockSupport::offering(7))),
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

/// The launcher lowers its own probe's answer to `--landlock-abi-max`
/// (which the runtime passes from its launch environment), and ignores
/// `DSH_LANDLOCK_ABI_MAX` in its own environment: a command that sets it
/// for a launcher of its own changes nothing.
#[test]
fn the_launcher_takes_the_cap_from_its_arguments_only() {
    let dir = scratch_dir();
    let run = |env_cap: &str, args: &[String]| {
        ok(
            std::process::Command::new(launcher_path())
                .env("DSH_LANDLOCK_ABI_MAX", env_cap)
                .env_remove("DSH_TEST_LANDLOCK_ABI")
                .arg("__sandbox-exec")
                .arg("read-only")
                .arg(dir.path())
                .args(args)
                .args(["--", "sh", "-c", "echo ran; echo x > written"])
                .current_dir(dir.path())
                .output(),
            "run launcher",
        )
    };
    // The argument lowers the ABI: refused below 3.
    let capped = LandlockSupport::detect().capped(Some(2));
    let out = run("", &["--landlock-abi-max".into(), "2".into()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(121), "{stderr}");
    assert!(stderr.contains(&shortfall(capped)), "{stderr}");
    assert!(out.stdout.is_empty());
    // Two caps: the lower one holds.
    let out = run(
        "",
        &[
            "--landlock-abi-max".into(),
            "9".into(),
            "--landlock-abi-max".into(),
            "1".into(),
        ],
    );
    assert_eq!(out.status.code(), Some(121));
    // The environment does not: the launcher runs at this run's level
    // (its argument), whatever DSH_LANDLOCK_ABI_MAX says.
    let this_run: Vec<String> = abi_max()
        .map(|max| vec!["--landlock-abi-max".into(), max.to_string()])
        .unwrap_or_default();
    for env_cap in ["0", "2", "junk"] {
        let out = run(env_cap, &this_run);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if landlock().is_sufficient() {
            assert_eq!(stdout, "ran\n", "{stderr}");
            assert!(stderr.contains("Read-only file system"), "{stderr}");
        } else {
            assert_eq!(out.status.code(), Some(121), "{stderr}");
            assert!(stderr.contains(&shortfall(landlock())), "{stderr}");
        }
        assert!(!dir.path().join("written").exists());
    }
}

#[tokio::test]
async fn restricted_modes_need_a_launcher() {
    let fx = Fixture::with(PermissionMode::WorkspaceWrite, |config| {
        config.with_sandbox(
            SandboxConfig::new(None).with_probe(Arc::new(|| LandlockSupport::offering(7))),
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
    let launch = |args: &[&str]| {
        ok(
            std::process::Command::new(launcher_path())
                .arg("__sandbox-exec")
                .args(args)
                .output(),
            "run launcher",
        )
    };
    let out = launch(&["workspace-write"]);
    assert_eq!(out.status.code(), Some(2));
    let out = launch(&["no-such-mode", "/", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("permission mode must be"));
    let out = launch(&["read-only", "/", "--landlock-abi-max", "x", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "--landlock-abi-max: DSH_LANDLOCK_ABI_MAX must be a whole number from 0 to 255"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = launch(&["--confine", "read-only", "/", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--confine needs a Landlock ABI"));
    let out = launch(&["danger-full-access", "/", "--", "/no/such/program"]);
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
/// writable, the supervisor cannot be signalled (Landlock scoping from ABI
/// 6, the PID namespace below), no capability is left.
#[test]
fn an_unprivileged_user_is_confined_through_a_user_namespace() {
    let root = rustix::process::geteuid().is_root();
    if !root || !std::path::Path::new("/usr/bin/setpriv").exists() {
        dsh_repo_checks::skip("sandbox: needs root (to become nobody) and setpriv");
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
    let cap: Vec<String> = abi_max()
        .map(|max| vec!["--landlock-abi-max".into(), max.to_string()])
        .unwrap_or_default();
    // The supervisor's pid as the host sees it (/proc is the host's), which
    // is not $PPID inside a PID namespace.
    let script = format!(
        "id -u; echo in > in.txt && cat in.txt; chmod 777 /etc/hostname; echo x > '{}'; read -r _ _ _ sup _ < /proc/self/stat; kill -9 $sup; echo rc=$?; grep CapEff /proc/self/status",
        target.display()
    );
    let run = || {
        ok(
            std::process::Command::new("/usr/bin/setpriv")
                .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
                .arg(&launcher)
                .args(["__sandbox-exec", "workspace-write"])
                .arg(&ws)
                .args(&cap)
                .args(["--", "bash", "-c", &script])
                .current_dir(&ws)
                .output(),
            "run launcher as nobody",
        )
    };
    // The fresh copy may still be open for writing in a child another test
    // forked meanwhile (ETXTBSY): that is the test's race, not the
    // sandbox's, so the run is repeated.
    let mut out = run();
    for _ in 0..20 {
        if !String::from_utf8_lossy(&out.stderr).contains("Text file busy") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        out = run();
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let support = landlock();
    if !support.is_sufficient() {
        assert_eq!(out.status.code(), Some(121), "{stdout}{stderr}");
        assert!(stderr.contains(&shortfall(support)), "{stderr}");
        assert!(stdout.is_empty() && !ws.join("in.txt").exists());
        return;
    }
    assert!(stdout.starts_with("65534\nin\n"), "{stdout}{stderr}");
    assert!(stdout.contains("rc=1"), "{stdout}");
    let denial = if support.abi >= SCOPE_LANDLOCK_ABI {
        "Operation not permitted"
    } else {
        "No such process"
    };
    assert!(stderr.contains(denial), "ABI {}: {stderr}", support.abi);
    assert!(stdout.contains("CapEff:\t0000000000000000"), "{stdout}");
    assert!(
        stderr.contains("chmod: changing permissions of '/etc/hostname': Read-only file system"),
        "{stderr}"
    );
    assert!(!target.exists());
}

/// Forced to ABI 3 (or lower at this run's level), `DSH_SANDBOX_NETWORK=off`
/// cannot be enforced: the command is refused with the documented reason,
/// never run with the network open.
#[tokio::test]
async fn network_off_fails_closed_below_landlock_abi_4() {
    let max = abi_max().map_or(3, |max| max.min(3));
    let fx = Fixture::with(PermissionMode::WorkspaceWrite, |config| {
        config.with_sandbox(
            sandbox()
                .with_network(NetworkAccess::Denied)
                .with_abi_max(Some(max)),
        )
    });
    let out = fx.bash("echo ran > ran.txt", "").await;
    let support = LandlockSupport::detect().capped(Some(max));
    if !support.is_sufficient() {
        assert_fails_closed(&out, PermissionMode::WorkspaceWrite);
        assert!(!fx.path("ran.txt").exists());
        return;
    }
    assert!(out.is_error);
    let offered = match support.lowered_from {
        Some(kernel) => {
            format!("DSH_LANDLOCK_ABI_MAX=3 lowers the kernel's Landlock ABI {kernel} to ABI 3")
        }
        None => "the kernel offers Landlock ABI 3".to_owned(),
    };
    assert_eq!(
        text(&out),
        format!(
            "Error: sandbox mode \"workspace-write\" is in force but cannot be enforced here (DSH_SANDBOX_NETWORK=off needs Landlock ABI 4 but {offered}), so the command was not run: running it without confinement is refused. Use a Linux kernel with Landlock ABI 4 or newer (Linux 6.7+) enabled, set DSH_SANDBOX_NETWORK=on, or run the session in danger-full-access mode."
        )
    );
    assert!(!fx.path("ran.txt").exists());
}

/// `DSH_SANDBOX_NETWORK=off` at this run's level: TCP denied by Landlock
/// from ABI 4, the command refused below it (127.0.0.1 only).
#[tokio::test]
async fn network_off_denies_tcp_or_fails_closed() {
    let listener = ok(std::net::TcpListener::bind("127.0.0.1:0"), "bind");
    let port = ok(listener.local_addr(), "addr").port();
    let fx = Fixture::with(PermissionMode::WorkspaceWrite, |config| {
        config.with_sandbox(sandbox().with_network(NetworkAccess::Denied))
    });
    let out = fx
        .bash(
            &format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
            "",
        )
        .await;
    let support = landlock();
    let body = text(&out);
    if !support.is_sufficient() {
        assert_fails_closed(&out, PermissionMode::WorkspaceWrite);
    } else if support.abi < NETWORK_LANDLOCK_ABI {
        assert!(out.is_error, "{body}");
        assert!(
            body.contains("(DSH_SANDBOX_NETWORK=off needs Landlock ABI 4 but "),
            "{body}"
        );
    } else {
        assert!(!out.is_error, "{body}");
        assert!(body.contains("Permission denied"), "{body}");
    }
    assert!(!body.contains("connected"), "{body}");
}

#[tokio::test]
async fn a_missing_protected_directory_fails_closed() {
    let missing = scratch_dir().path().join("no-such-home");
    let fx = Fixture::with(PermissionMode::WorkspaceWrite, |config| {
        config.with_sandbox(sandbox().protect(&missing))
    });
    let out = fx.bash("echo ran > ran.txt", "").await;
    assert!(out.is_error);
    if landlock().is_sufficient() {
        assert!(text(&out).contains("does not exist"), "{}", text(&out));
    } else {
        assert_fails_closed(&out, PermissionMode::WorkspaceWrite);
    }
    assert!(!fx.path("ran.txt").exists());
}

/// Without Landlock signal scoping (forced here to ABI 5 at most, so the
/// ruleset has no scoping either) the command runs as PID 1 of its own PID
/// namespace and its own session: the runtime is invisible to it, `kill 0`
/// cannot reach the supervisor, and background children end with it.
#[tokio::test]
async fn below_abi_6_commands_get_a_pid_namespace() {
    let max = abi_max().map_or(5, |max| max.min(5));
    let fx = Fixture::with(PermissionMode::WorkspaceWrite, |config| {
        config.with_sandbox(sandbox().with_abi_max(Some(max)))
    });
    let runtime = std::process::id();
    let out = fx
        .bash(
            &format!("echo pid=$$; kill -9 {runtime}; echo rc=$?; kill -9 0; echo alive > alive.txt; echo done"),
            "",
        )
        .await;
    if !LandlockSupport::detect().capped(Some(max)).is_sufficient() {
        assert_fails_closed(&out, PermissionMode::WorkspaceWrite);
        assert!(!fx.path("alive.txt").exists());
        return;
    }
    let body = text(&out);
    assert!(body.starts_with("pid=1\nrc=1\n"), "{body}");
    assert!(body.contains("No such process"), "{body}");
    assert!(fx.path("alive.txt").exists(), "{body}");

    // A background child ends with the command: PID 1's namespace dies.
    let ended = fx
        .bash("sleep 7793.5 >/dev/null 2>&1 & echo started", "")
        .await;
    assert_eq!(text(&ended), "started\n");
    wait_until("background child gone", || {
        live_processes("7793.5").is_empty()
    })
    .await;

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

/// Signals at this run's level: from ABI 6 the command shares the host's
/// PID namespace and Landlock refuses its signals to the runtime and its
/// supervisor (EPERM); at ABI 3 to 5 it is PID 1 of a namespace of its
/// own and cannot even name them (ESRCH); below 3 it never runs.
#[tokio::test]
async fn signals_to_the_runtime_and_supervisor_fail_at_every_level() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let runtime = std::process::id();
    // The supervisor's pid as the host sees it (/proc is the host's).
    let out = fx
        .bash(
            &format!(
                "echo pid=$$; read -r _ _ _ sup _ < /proc/self/stat; kill -9 {runtime}; echo rc=$?; kill -9 $sup; echo rc=$?"
            ),
            "",
        )
        .await;
    let support = landlock();
    if !support.is_sufficient() {
        assert_fails_closed(&out, PermissionMode::WorkspaceWrite);
        return;
    }
    let body = text(&out);
    let (pid_line, denial) = if support.abi >= SCOPE_LANDLOCK_ABI {
        (!body.starts_with("pid=1\n"), "Operation not permitted")
    } else {
        (body.starts_with("pid=1\n"), "No such process")
    };
    assert!(pid_line, "ABI {}: {body}", support.abi);
    assert!(body.contains("rc=1\nrc=1\n"), "{body}");
    assert_eq!(
        body.matches(denial).count(),
        2,
        "ABI {}: {body}",
        support.abi
    );
    assert!(support.abi >= MIN_LANDLOCK_ABI);
}
