//! The launcher: grammar, profiles, overlays, DSH_HOME, exit codes.

mod common;

use common::{Runtime, TempDir, dsh};
use serde_json::{Value, json};
use std::process::Output;

fn run(dir: &TempDir, args: &[&str], home: Option<&str>) -> Output {
    let mut cmd = dsh(dir.path());
    cmd.args(args);
    if let Some(home) = home {
        cmd.env("DSH_HOME", home);
    }
    cmd.output().unwrap_or_else(|e| panic!("run dsh: {e}"))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn sdk_profiles_refuse_a_missing_or_blank_dsh_home_and_write_nothing() {
    let dir = TempDir::new("nohome");
    for profile in ["sdk", "sdk-minimal"] {
        for home in [None, Some(""), Some("  ")] {
            let out = run(&dir, &["--profile", profile], home);
            assert_eq!(out.status.code(), Some(2), "{profile} {home:?}");
            assert!(out.stdout.is_empty());
            assert!(
                stderr(&out).contains("requires an explicit DSH_HOME"),
                "{}",
                stderr(&out)
            );
        }
    }
    assert!(
        !dir.path().join(".dsh").exists(),
        "~/.dsh must never be created"
    );
}

#[test]
fn grammar_errors_exit_1_with_a_message() {
    let dir = TempDir::new("grammar");
    let out = run(&dir, &[], Some("h"));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("--profile <name> is required"));
    let out = run(&dir, &["nosuch"], Some("h"));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("profile \"nosuch\" does not exist"),
        "{}",
        stderr(&out)
    );
    let out = run(&dir, &["--profile", "sdk", "--foo"], Some("h"));
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("error: unknown option '--foo'"));
    let out = run(&dir, &["--profile", "sdk", "--profile", "sdk"], Some("h"));
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn version_and_help_go_to_stdout_with_exit_0() {
    let dir = TempDir::new("help");
    for args in [&["-V"][..], &["--version"], &["--help"], &["sdk", "--help"]] {
        let out = run(&dir, args, None);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(!out.stdout.is_empty(), "{args:?}");
    }
    let out = run(&dir, &["--version"], None);
    assert!(String::from_utf8_lossy(&out.stdout).contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn overlays_are_read_and_validated() {
    let dir = TempDir::new("patch");
    let missing = dir.path().join("missing.yml");
    let out = run(&dir, &["sdk", "--patch", "missing.yml"], Some("h"));
    assert_eq!(out.status.code(), Some(1));
    let expected = format!("Error: dsh: failed to read overlay {}:", missing.display());
    assert!(stderr(&out).starts_with(&expected), "{}", stderr(&out));
    // Messages and exit codes measured on the official runtime.
    for (name, text, message) in [
        ("bad.yml", "env: [unclosed", "failed to parse overlay {}: "),
        (
            "empty.yml",
            "",
            "overlay {} must be a top-level YAML array of loader patch entries",
        ),
        (
            "comment.yml",
            "# nothing\n",
            "overlay {} must be a top-level YAML array of loader patch entries",
        ),
        (
            "scalar.yml",
            "42\n",
            "overlay {} must be a top-level YAML array of loader patch entries",
        ),
        (
            "list.yml",
            "- a\n- b\n",
            "overlay entry 1 in {} must be a mapping (a loader patch entry)",
        ),
        (
            "second.yml",
            "- {}\n- [1]\n",
            "overlay entry 2 in {} must be a mapping (a loader patch entry)",
        ),
        (
            "env.yml",
            "env: 3\n",
            "invalid overlay {}: env must be a mapping",
        ),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
        let out = run(&dir, &["sdk", "--patch", name], Some("h"));
        assert_eq!(out.status.code(), Some(1), "{name}");
        let path = dir.path().join(name);
        let expected = format!(
            "Error: dsh: {}",
            message.replace("{}", &path.display().to_string())
        );
        assert!(
            stderr(&out).starts_with(&expected),
            "{name}: {}",
            stderr(&out)
        );
    }
}

#[test]
fn official_patch_lists_are_accepted_with_a_warning_per_entry() {
    let dir = TempDir::new("patchlist");
    for (name, text, warnings) in [
        ("wheel.yml", "# the official profile's patch layer\n[]\n", 0),
        (
            "entries.yml",
            "- id: some-plugin\n  config:\n    a: !!js 1+1\n- {}\n",
            2,
        ),
    ] {
        std::fs::write(dir.path().join(name), text).unwrap();
        let mut cmd = dsh(dir.path());
        cmd.args(["sdk", "--patch", name]).env("DSH_HOME", "h");
        cmd.stdin(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        drop(child.stdin.take());
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        let ignored = stderr(&out)
            .matches("is not supported by dsh and is ignored")
            .count();
        assert_eq!(ignored, warnings, "{name}: {}", stderr(&out));
    }
}

#[test]
fn overlay_env_fills_unset_variables() {
    let mut rt = Runtime::start_with("sdk", |cmd| {
        let patch = std::env::temp_dir().join(format!("dsh-env-patch-{}.yml", std::process::id()));
        std::fs::write(&patch, "env:\n  DSH_PERMISSION_MODE: danger-full-access\n").unwrap();
        cmd.arg("--patch").arg(patch);
    });
    rt.initialize_echo();
    rt.send(
        &json!({"id": 1, "method": "session/working-directory/get", "params": {"sessionId": "s"}}),
    );
    let frames = rt.until_response(&json!(1));
    let data: Vec<&Value> = frames
        .iter()
        .filter_map(|f| f.pointer("/params/event/data"))
        .collect();
    assert_eq!(
        data,
        [
            &json!({"preset": "danger-full-access"}),
            &json!({"mode": "danger-full-access"}),
            &json!({"policy": "never"})
        ]
    );
}

#[test]
fn a_bad_permission_mode_is_refused() {
    let dir = TempDir::new("mode");
    let out = dsh(dir.path())
        .args(["sdk"])
        .env("DSH_HOME", "h")
        .env("DSH_PERMISSION_MODE", "yolo")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("DSH_PERMISSION_MODE"));
}

#[test]
fn exit_codes_for_shutdown_eof_and_signals() {
    let mut rt = Runtime::start("sdk");
    let resp = rt.request(json!("x"), "shutdown", Value::Null);
    assert_eq!(resp, json!({"jsonrpc": "2.0", "id": "x", "result": {}}));
    assert_eq!(rt.wait_exit(), Some(0));

    let mut rt = Runtime::start("sdk");
    rt.close_stdin();
    assert_eq!(rt.wait_exit(), Some(0));

    for (signal, code) in [("TERM", 0), ("INT", 130)] {
        let mut rt = Runtime::start("sdk");
        rt.initialize_echo(); // the runtime is up and serving
        rt.signal(signal);
        assert_eq!(rt.wait_exit(), Some(code), "SIG{signal}");
    }
}

/// Every environment variable the runtime's code reads (outside its unit
/// tests), found in the sources of the shipped crates.
fn variables_read() -> std::collections::BTreeSet<String> {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut names = std::collections::BTreeSet::new();
    let mut dirs = vec![crates];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{e}"))
            .flatten()
        {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                // Shipped sources only: not tests, benches, examples or the
                // test kits (the fake model, the repository checks).
                if ![
                    "tests",
                    "benches",
                    "examples",
                    "target",
                    "dsh-fake-model",
                    "dsh-repo-checks",
                ]
                .contains(&name.as_str())
                {
                    dirs.push(path);
                }
            } else if name.ends_with(".rs") {
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
                let code = text.split("#[cfg(test)]").next().unwrap_or_default();
                for part in code.split('"').skip(1).step_by(2) {
                    let is_var = ["DSH_", "DEEPSEEK_", "OPENAI_"]
                        .iter()
                        .any(|p| part.starts_with(p))
                        && part.chars().all(|c| c.is_ascii_uppercase() || c == '_');
                    if is_var {
                        names.insert(part.to_owned());
                    }
                }
            }
        }
    }
    names
}

#[test]
fn help_lists_every_environment_variable_the_runtime_reads() {
    let dir = TempDir::new("helpenv");
    let names = variables_read();
    assert!(names.contains("DSH_HOME") && names.len() > 15, "{names:?}");
    for args in [&["--help"][..], &["headless", "--help"][..]] {
        let out = run(&dir, args, None);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        let help = String::from_utf8_lossy(&out.stdout);
        let missing: Vec<&String> = names
            .iter()
            .filter(|n| !help.contains(n.as_str()))
            .collect();
        assert!(missing.is_empty(), "{args:?} does not explain {missing:?}");
    }
}
