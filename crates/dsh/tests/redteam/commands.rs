//! Attacks with `bash`: metadata outside the writable set, the runtime's
//! credentials, signals to the runtime, its state under `DSH_HOME`, and the
//! launcher's own binary. Each asserts what the docs promise at this run's
//! Landlock level (`harness::level`): below ABI 3 every command is
//! refused, and what the attack aimed at is untouched all the same.

use crate::harness::{
    Attack, Level, RESTRICTED, assert_fails_closed, bash, contains, level, outside,
};
use dsh_tools::{LANDLOCK_ABI_MAX_VAR, LandlockSupport};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;

/// Attack 3: `chmod`, `chown`, `touch -d` and xattrs on a file outside the
/// writable set fail in both restricted modes, and nothing changes.
#[test]
fn metadata_outside_the_writable_set_cannot_change() {
    for mode in RESTRICTED {
        let out = outside();
        let victim = out.path().join("victim");
        std::fs::write(&victim, "x").unwrap();
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
        let before = std::fs::metadata(&victim).unwrap();
        let v = victim.display();
        let mut attack = Attack::start(mode, &[]);
        let results = attack.run(&[
            bash(&format!("chmod 4777 '{v}'")),
            bash(&format!("chown 12345:12345 '{v}'")),
            bash(&format!("touch -d 2001-01-01 '{v}'")),
            bash(&format!(
                "python3 -c \"import os; os.setxattr('{v}', 'user.pwned', b'1')\""
            )),
            bash(&format!(
                "rm -f '{v}'; mv '{v}' '{v}.moved'; ln '{v}' '{v}.hard'"
            )),
        ]);
        for result in &results {
            if level() == Level::FailsClosed {
                assert_fails_closed(result, mode);
                continue;
            }
            assert!(
                result.text.contains("Read-only file system")
                    || result.text.contains("Permission denied"),
                "{mode}: {}",
                result.text
            );
        }
        let after = std::fs::metadata(&victim).unwrap_or_else(|e| panic!("{mode}: {e}"));
        assert_eq!(after.mode(), before.mode(), "{mode}: mode");
        assert_eq!((after.uid(), after.gid()), (before.uid(), before.gid()));
        assert_eq!(after.mtime(), before.mtime(), "{mode}: mtime");
        let xattrs = std::process::Command::new("python3")
            .args(["-c", &format!("import os; print(os.listxattr('{v}'))")])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&xattrs.stdout).trim(), "[]");
        assert!(!out.path().join("victim.moved").exists());
        assert!(!out.path().join("victim.hard").exists());
    }
}

/// Metadata inside the workspace stays changeable in `workspace-write`.
#[test]
fn metadata_inside_the_workspace_still_changes() {
    let mut attack = Attack::start("workspace-write", &[]);
    let results = attack.run(&[bash(
        "echo 'echo ran' > s.sh && chmod +x s.sh && ./s.sh && touch -d 2001-01-01 s.sh && stat -c %Y s.sh",
    )]);
    if level() == Level::FailsClosed {
        assert_fails_closed(&results[0], "workspace-write");
        assert!(!attack.workspace().join("s.sh").exists());
        return;
    }
    assert_eq!(results[0].text, "ran\n978307200\n");
}

/// Attack 4: the runtime's credentials are not in the command's
/// environment, `/proc/<runtime>/environ` and the launcher's environment
/// are unreadable, and the key appears in nothing `dsh` writes. The pids
/// are the host's, read from `/proc/self/stat` (the host's `/proc`), so the
/// attack aims at the right processes inside a PID namespace too.
#[test]
fn credentials_stay_out_of_reach() {
    const KEY: &str = "sk-redteam-0123456789abcdef";
    for mode in RESTRICTED {
        // `sh` stays as the launcher of dsh, holding the key in its environ.
        let mut attack = Attack::start_program(
            |_| "/bin/sh".into(),
            &["-c", "\"$0\" \"$@\"; exit $?", env!("CARGO_BIN_EXE_dsh")],
            mode,
            &[
                ("DEEPSEEK_API_KEY", KEY),
                ("OPENAI_API_KEY", KEY),
                ("MY_CLOUD_TOKEN", KEY),
                ("DSH_SANDBOX_ENV_DENY", "MY_CLOUD_*"),
            ],
        );
        let results = attack.run(&[
            bash("env"),
            bash("cat /proc/*/environ 2>&1 | tr '\\0' '\\n'"),
            bash(
                "read -r _ _ _ sup _ < /proc/self/stat; read -r _ _ _ rt _ < /proc/$sup/stat; \
                 read -r _ _ _ sdk _ < /proc/$rt/stat; \
                 echo runtime=$rt launcher=$sdk; cat /proc/$rt/environ /proc/$sdk/environ; \
                 tr '\\0' '\\n' < /proc/$sdk/environ; head -c 100 /proc/$rt/mem; ls /proc/$rt/fd",
            ),
        ]);
        let searched = if level() == Level::FailsClosed {
            for result in &results {
                assert_fails_closed(result, mode);
            }
            "cannot be enforced here"
        } else {
            assert!(results[0].text.contains("PATH="), "{}", results[0].text);
            // The chain led to the runtime and to `sh`, its parent.
            let sh = attack.rt.child.id();
            assert!(
                results[2].text.contains(&format!(" launcher={sh}\n")),
                "{}",
                results[2].text
            );
            assert!(
                results[2].text.contains("Permission denied"),
                "{}",
                results[2].text
            );
            "runtime="
        };
        for result in &results {
            assert!(!result.text.contains(KEY), "{mode}: {}", result.text);
        }
        attack
            .rt
            .request(serde_json::json!("bye"), "shutdown", serde_json::json!({}));
        let _ = attack.rt.wait_exit();
        let everything = attack.everything_written();
        assert!(contains(&everything, searched), "the log was searched");
        assert!(!contains(&everything, KEY), "{mode}: the key was written");
    }
}

/// Attack 5: commands cannot signal the runtime, their own supervisor, or
/// the client; the request in flight is answered. From ABI 6 Landlock
/// refuses the signals (EPERM); at ABI 3 to 5 the command is in a PID
/// namespace of its own and cannot name those processes (ESRCH). The
/// supervisor's pid is the host's, from `/proc/self/stat` (`$PPID` is 0
/// inside a PID namespace).
#[test]
fn commands_cannot_kill_the_runtime() {
    for mode in RESTRICTED {
        let mut attack = Attack::start(mode, &[]);
        let runtime = attack.rt.child.id();
        let results = attack.run(&[
            bash(&format!("kill -9 {runtime}; echo rc=$?")),
            bash("read -r _ _ _ sup _ < /proc/self/stat; kill -9 $sup; echo rc=$?"),
            bash("kill -9 0; echo survived"),
            bash(&format!(
                "python3 -c \"import os,signal; os.kill({runtime}, signal.SIGSTOP)\" 2>&1 | tail -1"
            )),
        ]);
        let (denial, python_error) = match level() {
            Level::Scoped => ("Operation not permitted", "PermissionError"),
            Level::PidNamespace => ("No such process", "ProcessLookupError"),
            Level::FailsClosed => {
                for result in &results {
                    assert_fails_closed(result, mode);
                }
                ("", "")
            }
        };
        if level() != Level::FailsClosed {
            for result in &results[..2] {
                assert!(result.text.contains("rc=1"), "{}", result.text);
                assert!(result.text.contains(denial), "{}", result.text);
            }
            // `kill 0` kills the command's own group; as PID 1 of its
            // namespace the command ignores signals from inside it.
            let own_kill_survived = level() == Level::PidNamespace;
            assert_eq!(
                results[2].text.contains("survived"),
                own_kill_survived,
                "{}",
                results[2].text
            );
            assert!(
                results[3].text.contains(python_error),
                "{}",
                results[3].text
            );
        }
        // The runtime is alive and answers the next turn.
        assert!(attack.rt.child.try_wait().ok().flatten().is_none());
        let again = attack.run(&[bash("echo still here")]);
        if level() == Level::FailsClosed {
            assert_fails_closed(&again[0], mode);
        } else {
            assert_eq!(again[0].text, "still here\n");
        }
    }
}

/// A command cannot lower its own confinement: `DSH_LANDLOCK_ABI_MAX` in
/// its environment, and a launcher of its own started with the lowest cap
/// (even as an unconfined `danger-full-access` launcher, or as a bare
/// second stage), only nest inside the sandbox the command is in — the
/// runtime read the cap at launch and passes it to its launcher as an
/// argument.
#[test]
fn a_command_cannot_lower_its_own_confinement() {
    let out = outside();
    let target = out.path().join("escape");
    let mut attack = Attack::start("workspace-write", &[]);
    let runtime = attack.rt.child.id();
    let dsh = env!("CARGO_BIN_EXE_dsh");
    let inner = format!(
        "echo x > {}; kill -9 {runtime}; echo rc=$?",
        target.display()
    );
    // Each launcher runs in a subshell: a launcher whose parent is PID 1
    // (the command, in a PID namespace) takes its runtime for dead.
    let results = attack.run(&[
        bash(&format!(
            "export DSH_LANDLOCK_ABI_MAX=0; ('{dsh}' __sandbox-exec danger-full-access / --landlock-abi-max 0 -- sh -c '{inner}'; :)"
        )),
        bash(&format!(
            "(DSH_LANDLOCK_ABI_MAX=0 '{dsh}' __sandbox-exec --confine 0 danger-full-access / -- sh -c '{inner}'; :)"
        )),
        bash(&format!(
            "(DSH_LANDLOCK_ABI_MAX=0 '{dsh}' __sandbox-exec workspace-write / --landlock-abi-max 0 -- sh -c '{inner}'; echo nested=$?)"
        )),
    ]);
    let denial = match level() {
        Level::Scoped => "Operation not permitted",
        Level::PidNamespace => "No such process",
        Level::FailsClosed => {
            for result in &results {
                assert_fails_closed(result, "workspace-write");
            }
            ""
        }
    };
    if level() != Level::FailsClosed {
        for result in &results[..2] {
            assert!(
                result.text.contains("Read-only file system"),
                "{}",
                result.text
            );
            assert!(result.text.contains("rc=1"), "{}", result.text);
            assert!(result.text.contains(denial), "{}", result.text);
        }
        // A restricted launcher inside the sandbox refuses (its cap, or
        // the read-only mounts it cannot change): it never runs its
        // command unconfined.
        assert!(
            results[2].text.contains("dsh-sandbox-refused: ")
                && results[2].text.contains("nested=121"),
            "{}",
            results[2].text
        );
    }
    assert!(!target.exists(), "a nested launcher wrote outside");
    assert!(attack.rt.child.try_wait().ok().flatten().is_none());
}

/// Attacks 6 and 7: `DSH_HOME` lies under `/tmp` (a writable root here),
/// yet commands can neither rewrite the session log nor plant a link
/// where the runtime will spill output.
#[test]
fn dsh_home_is_read_only_to_commands_even_under_tmp() {
    let mut attack = Attack::start("workspace-write", &[]);
    let home = attack.home();
    assert!(home.starts_with(std::env::temp_dir()));
    let first = attack.run(&[bash("echo first")]);
    let fails_closed = level() == Level::FailsClosed;
    if fails_closed {
        assert_fails_closed(&first[0], "workspace-write");
    } else {
        assert_eq!(first[0].text, "first\n");
    }
    let logs = snapshot(&home);
    assert!(!logs.is_empty(), "the session log exists");
    let h = home.display();
    let out = outside();
    let target = out.path().join("spilled");
    let results = attack.run(&[
        bash(&format!(
            "for f in $(find '{h}' -type f); do echo junk >> \"$f\"; echo rc=$?; done"
        )),
        bash(&format!("rm -rf '{h}/sessions'; echo rc=$?")),
        bash(&format!(
            "mkdir -p '{h}/tool-output' ; ln -s '{}' '{h}/tool-output/planted.log'; echo rc=$?",
            target.display()
        )),
        bash(&format!(
            "mv '{h}' '{h}.moved'; chmod 777 '{h}'; echo rc=$?"
        )),
        bash("head -c 400000 /dev/zero | tr '\\0' 'a'; echo"),
    ]);
    for result in &results[..4] {
        if fails_closed {
            assert_fails_closed(result, "workspace-write");
            continue;
        }
        assert!(
            result.text.contains("Read-only file system") && !result.text.contains("rc=0"),
            "{}",
            result.text
        );
    }
    if fails_closed {
        assert_fails_closed(&results[4], "workspace-write");
    } else {
        assert!(results[4].text.contains("aaaa"), "the spill still works");
    }
    assert!(!target.exists(), "nothing written through a planted link");
    let now = snapshot(&home);
    // The session summaries (`session/list`) are the runtime's own cache,
    // replaced whole through temporary files as sessions change; the
    // commands above could not write them either.
    let summaries = home.join("session-summary");
    for (path, bytes) in logs.iter().filter(|(p, _)| !p.starts_with(&summaries)) {
        let current = now
            .iter()
            .find(|(p, _)| p == path)
            .unwrap_or_else(|| panic!("{} is gone", path.display()));
        assert!(
            current.1.starts_with(bytes),
            "{} was rewritten",
            path.display()
        );
    }
    let mode = std::fs::metadata(&home).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "DSH_HOME keeps its mode");
}

fn snapshot(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                files.push((path, bytes));
            }
        }
    }
    files
}

/// Attack 8: the `dsh` binary lies in the workspace (a virtual environment
/// inside the project); a command replaces it, and the next command still
/// runs confined by the runtime's own image.
#[test]
fn replacing_the_binary_does_not_unconfine_later_commands() {
    let attack_dir = outside();
    let marker = attack_dir.path().join("unconfined");
    let mut attack = Attack::start_program(
        |dir| {
            let copy = dir.join("ws/venv/bin/dsh");
            std::fs::create_dir_all(dir.join("ws/venv/bin")).unwrap();
            std::fs::copy(env!("CARGO_BIN_EXE_dsh"), &copy).unwrap();
            copy
        },
        &[],
        "workspace-write",
        &[],
    );
    let bin = attack.workspace().join("venv/bin/dsh");
    let fake = format!("#!/bin/sh\necho pwned > '{}'\n", marker.display());
    let results = attack.run(&[
        bash(&format!(
            "rm -f '{b}' && printf '%b' '{fake}' > '{b}' && chmod +x '{b}' && echo replaced",
            b = bin.display(),
            fake = fake.replace('\'', "'\\''")
        )),
        bash(&format!(
            "echo x > '{}/escape'; echo confined",
            attack_dir.path().display()
        )),
    ]);
    if level() == Level::FailsClosed {
        for result in &results {
            assert_fails_closed(result, "workspace-write");
        }
        assert_eq!(
            std::fs::read(&bin).ok(),
            std::fs::read(env!("CARGO_BIN_EXE_dsh")).ok(),
            "the binary is untouched"
        );
    } else {
        assert!(results[0].text.contains("replaced"), "{}", results[0].text);
        assert!(
            std::fs::read_to_string(&bin).is_ok_and(|t| t.contains("pwned")),
            "the binary was replaced"
        );
        assert!(results[1].text.contains("confined"), "{}", results[1].text);
        assert!(
            results[1].text.contains("Read-only file system"),
            "{}",
            results[1].text
        );
    }
    assert!(!marker.exists(), "the replaced binary ran");
    assert!(!attack_dir.path().join("escape").exists());
}

/// Attack 6, by the side door: renaming a parent of `DSH_HOME` or of the
/// workspace inside `/tmp` (to put a directory of the command's own in
/// their place) fails, so the runtime's paths keep meaning what they did.
#[test]
fn parents_of_dsh_home_and_the_workspace_cannot_be_moved() {
    let mut attack = Attack::start("workspace-write", &[]);
    let parent = attack.rt.dir.path().to_path_buf();
    let p = parent.display();
    let results = attack.run(&[
        bash(&format!("mv '{p}' '{p}.moved'; echo rc=$?")),
        bash(&format!("mv '{p}/home' '{p}/home.moved'; echo rc=$?")),
        bash(&format!("mv '{p}/ws' '{p}/ws.moved'; echo rc=$?")),
        bash(&format!("touch '{p}/allowed' && echo rc=$?")),
    ]);
    if level() == Level::FailsClosed {
        for result in &results {
            assert_fails_closed(result, "workspace-write");
        }
        assert!(!parent.join("allowed").exists());
    } else {
        for result in &results[..3] {
            assert!(
                result.text.contains("Device or resource busy") && result.text.contains("rc=1"),
                "{}",
                result.text
            );
        }
        assert_eq!(results[3].text, "rc=0\n", "the parent stays writable");
    }
    assert!(parent.join("home").is_dir() && parent.join("ws").is_dir());
}

/// `DSH_LANDLOCK_ABI_MAX` is a launch setting (process environment or a
/// `--patch` overlay's `env:`): the runtime warns that it is in force and
/// its commands get that level; a bad value stops the launch.
#[test]
fn the_landlock_cap_is_read_at_launch() {
    let mut attack = Attack::start_adjusted(
        |_| PathBuf::from(env!("CARGO_BIN_EXE_dsh")),
        &["--patch", "cap.yml"],
        "workspace-write",
        &[],
        |dir, cmd| {
            std::fs::write(dir.join("cap.yml"), "env:\n  DSH_LANDLOCK_ABI_MAX: 2\n").unwrap();
            cmd.env_remove(LANDLOCK_ABI_MAX_VAR);
        },
    );
    let results = attack.run(&[bash("echo ran > ran.txt")]);
    let kernel = LandlockSupport::detect();
    let why = if kernel.abi > 2 {
        format!(
            "DSH_LANDLOCK_ABI_MAX=2 lowers the kernel's Landlock ABI {} to ABI 2",
            kernel.abi
        )
    } else if kernel.abi == 0 {
        "Landlock is not available on this kernel".to_owned()
    } else {
        format!("the kernel offers Landlock ABI {}", kernel.abi)
    };
    assert!(results[0].is_error, "{}", results[0].text);
    assert!(
        results[0].text.starts_with(&format!(
            "Error: sandbox mode \"workspace-write\" is in force but cannot be enforced here ({why}"
        )),
        "{}",
        results[0].text
    );
    assert!(!attack.workspace().join("ran.txt").exists());
    attack
        .rt
        .request(serde_json::json!("bye"), "shutdown", serde_json::json!({}));
    let _ = attack.rt.wait_exit();
    let stderr = String::from_utf8_lossy(&attack.rt.stderr_bytes()).into_owned();
    assert!(
        stderr.contains("DSH_LANDLOCK_ABI_MAX=2: the sandbox uses Landlock ABI 2 at most"),
        "{stderr}"
    );

    let out = crate::common::dsh(&std::env::temp_dir())
        .args(["--profile", "sdk"])
        .env("DSH_HOME", std::env::temp_dir().join("dsh-redteam-unused"))
        .env(LANDLOCK_ABI_MAX_VAR, "seven")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "dsh: DSH_LANDLOCK_ABI_MAX must be a whole number from 0 to 255 (the highest Landlock ABI the sandbox may use), got \"seven\"\n"
    );
}
