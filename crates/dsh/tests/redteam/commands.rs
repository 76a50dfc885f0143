//! Attacks with `bash`: metadata outside the writable set, the runtime's
//! credentials, signals to the runtime, its state under `DSH_HOME`, and the
//! launcher's own binary.

use crate::harness::{Attack, RESTRICTED, bash, contains, outside};
use std::os::unix::fs::{MetadataExt, PermissionsExt};

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
    assert_eq!(results[0].text, "ran\n978307200\n");
}

/// Attack 4: the runtime's credentials are not in the command's
/// environment, `/proc/<runtime>/environ` and the launcher's environment
/// are unreadable, and the key appears in nothing `dsh` writes.
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
                "rt=$(awk '{print $4}' /proc/$PPID/stat); sdk=$(awk '{print $4}' /proc/$rt/stat); \
                 echo runtime=$rt launcher=$sdk; cat /proc/$rt/environ /proc/$sdk/environ; \
                 tr '\\0' '\\n' < /proc/$sdk/environ; head -c 100 /proc/$rt/mem; ls /proc/$rt/fd",
            ),
        ]);
        assert!(results[0].text.contains("PATH="), "{}", results[0].text);
        assert!(results[2].text.contains("runtime="), "{}", results[2].text);
        assert!(
            results[2].text.contains("Permission denied"),
            "{}",
            results[2].text
        );
        for result in &results {
            assert!(!result.text.contains(KEY), "{mode}: {}", result.text);
        }
        attack
            .rt
            .request(serde_json::json!("bye"), "shutdown", serde_json::json!({}));
        let _ = attack.rt.wait_exit();
        let everything = attack.everything_written();
        assert!(contains(&everything, "runtime="), "the log was searched");
        assert!(!contains(&everything, KEY), "{mode}: the key was written");
    }
}

/// Attack 5: commands cannot signal the runtime, their own supervisor, or
/// the client; the request in flight is answered.
#[test]
fn commands_cannot_kill_the_runtime() {
    for mode in RESTRICTED {
        let mut attack = Attack::start(mode, &[]);
        let runtime = attack.rt.child.id();
        let results = attack.run(&[
            bash(&format!("kill -9 {runtime}; echo rc=$?")),
            bash("kill -9 $PPID; echo rc=$?"),
            bash("kill -9 0; echo survived"),
            bash(&format!(
                "python3 -c \"import os,signal; os.kill({runtime}, signal.SIGSTOP)\" 2>&1 | tail -1"
            )),
        ]);
        assert!(results[0].text.contains("rc=1"), "{}", results[0].text);
        assert!(results[0].text.contains("Operation not permitted"));
        assert!(results[1].text.contains("rc=1"), "{}", results[1].text);
        assert!(
            results[3].text.contains("PermissionError"),
            "{}",
            results[3].text
        );
        // The runtime is alive and answers the next turn.
        assert!(attack.rt.child.try_wait().ok().flatten().is_none());
        let again = attack.run(&[bash("echo still here")]);
        assert_eq!(again[0].text, "still here\n");
    }
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
    assert_eq!(first[0].text, "first\n");
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
        assert!(
            result.text.contains("Read-only file system") && !result.text.contains("rc=0"),
            "{}",
            result.text
        );
    }
    assert!(results[4].text.contains("aaaa"), "the spill still works");
    assert!(!target.exists(), "nothing written through a planted link");
    let now = snapshot(&home);
    for (path, bytes) in &logs {
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
    for result in &results[..3] {
        assert!(
            result.text.contains("Device or resource busy") && result.text.contains("rc=1"),
            "{}",
            result.text
        );
    }
    assert_eq!(results[3].text, "rc=0\n", "the parent stays writable");
    assert!(parent.join("home").is_dir() && parent.join("ws").is_dir());
}
