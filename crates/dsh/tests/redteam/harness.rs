//! Running an attack: a scripted model that makes the given tool calls, one
//! per model request, through the real `dsh` binary.

use crate::common::{Runtime, TempDir};
use dsh_tools::{
    LANDLOCK_ABI_MAX_VAR, LandlockSupport, MIN_LANDLOCK_ABI, SCOPE_LANDLOCK_ABI, parse_abi_max,
};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A directory outside every place `workspace-write` leaves writable (the
/// workspace, `/tmp`, `/var/tmp`, `/dev/shm`), removed on drop.
pub fn outside() -> TempDir {
    static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let bases = [
        Some(PathBuf::from("/var/cache")),
        std::env::var_os("HOME").map(PathBuf::from),
    ];
    for base in bases.into_iter().flatten() {
        if ["/tmp", "/var/tmp", "/dev/shm"]
            .iter()
            .any(|t| base.starts_with(t))
        {
            continue;
        }
        let dir = base.join(format!("dsh-redteam-{}-{n}", std::process::id()));
        if std::fs::create_dir_all(&dir).is_ok() {
            return TempDir(dir);
        }
    }
    panic!("no directory outside the writable roots is usable");
}

/// A `bash` tool call.
pub fn bash(command: &str) -> Value {
    call("bash", json!({"command": command, "description": "attack"}))
}

/// A tool call by name.
pub fn call(name: &str, arguments: Value) -> Value {
    json!({"name": name, "arguments": arguments})
}

/// One tool result: its text and `isError`.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The text blocks joined.
    pub text: String,
    /// The result's `isError`.
    pub is_error: bool,
}

/// A runtime whose scripted model makes a list of tool calls.
pub struct Attack {
    /// The runtime.
    pub rt: Runtime,
    scenario: PathBuf,
    turns: usize,
}

impl Attack {
    /// `dsh --profile sdk` in `mode` with extra environment `env`.
    pub fn start(mode: &str, env: &[(&str, &str)]) -> Self {
        Self::start_program(|_| PathBuf::from(env!("CARGO_BIN_EXE_dsh")), &[], mode, env)
    }

    /// `program [pre_args…] --profile sdk` (e.g. `sh -c '…' dsh`), where
    /// `program` is chosen once the runtime's directory (holding `ws/`)
    /// exists.
    pub fn start_program(
        program: impl FnOnce(&Path) -> PathBuf,
        pre_args: &[&str],
        mode: &str,
        env: &[(&str, &str)],
    ) -> Self {
        Self::start_adjusted(program, pre_args, mode, env, |_, _| {})
    }

    /// [`Attack::start_program`], with `adjust` given the command and the
    /// runtime's directory last.
    pub fn start_adjusted(
        program: impl FnOnce(&Path) -> PathBuf,
        pre_args: &[&str],
        mode: &str,
        env: &[(&str, &str)],
        adjust: impl FnOnce(&Path, &mut Command),
    ) -> Self {
        let rt = Runtime::start_command(|dir| {
            let mut cmd = Command::new(program(dir));
            cmd.args(pre_args)
                .args(["--profile", "sdk"])
                .env_remove("DEEPSEEK_API_KEY")
                .env("HOME", dir)
                .env("DSH_PERMISSION_MODE", mode)
                .current_dir(dir);
            for (key, value) in env {
                cmd.env(key, value);
            }
            adjust(dir, &mut cmd);
            cmd
        });
        let scenario = rt.dir.path().join("scenario.json");
        Self {
            rt,
            scenario,
            turns: 0,
        }
    }

    /// `DSH_HOME` of this runtime.
    pub fn home(&self) -> PathBuf {
        self.rt.dir.path().join("home")
    }

    /// The session's workspace.
    pub fn workspace(&self) -> PathBuf {
        self.rt.workspace()
    }

    /// Plays one turn in which the model makes `calls` in order (one call
    /// per model request), then answers "done"; returns the results.
    pub fn run(&mut self, calls: &[Value]) -> Vec<Outcome> {
        let mut replies: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                json!({"blocks": [{"tool_call": {
                    "id": format!("call_{}_{i}", self.turns),
                    "name": c["name"],
                    "arguments": c["arguments"],
                }}], "stop": "tool_use"})
            })
            .collect();
        replies.push(json!({"text": "done"}));
        let scenario = self.scenario.with_extension(format!("{}.json", self.turns));
        std::fs::write(&scenario, json!({"replies": replies}).to_string())
            .unwrap_or_else(|e| panic!("scenario: {e}"));
        self.turns += 1;
        let ws = self.workspace();
        let init = self.rt.request(
            json!(format!("init-{}", self.turns)),
            "initialize",
            json!({"cwd": ws, "provider": "scripted", "model": scenario}),
        );
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        let id = json!(format!("prompt-{}", self.turns));
        self.rt.send(&json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
            "params": {"sessionId": format!("attack-{}", self.turns), "contentBlocks": [{"type": "text", "text": "go"}]}}));
        let mut results = Vec::new();
        loop {
            let frame = self.rt.next();
            if frame.get("id") == Some(&id) {
                assert!(frame.get("result").is_some(), "prompt refused: {frame}");
                continue;
            }
            let Some(event) = frame.pointer("/params/event") else {
                continue;
            };
            match event["type"].as_str() {
                Some("tool/result") => {
                    let message = &event["data"]["message"];
                    let text = message["content"]
                        .as_array()
                        .map(|blocks| {
                            blocks
                                .iter()
                                .filter_map(|b| b["text"].as_str())
                                .collect::<String>()
                        })
                        .unwrap_or_default();
                    results.push(Outcome {
                        text,
                        is_error: message["isError"] == json!(true),
                    });
                }
                Some("turn/end") => {
                    assert_eq!(results.len(), calls.len(), "every call answered: {event}");
                    return results;
                }
                _ => {}
            }
        }
    }

    /// Every byte `dsh` wrote: stdout, stderr and every file under
    /// `DSH_HOME`, zstd logs decompressed.
    pub fn everything_written(&self) -> Vec<u8> {
        let mut all = self.rt.stdout_bytes();
        all.extend(self.rt.stderr_bytes());
        let mut stack = vec![self.home()];
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if let Ok(bytes) = std::fs::read(&path) {
                    if path.extension().is_some_and(|e| e == "zstd") {
                        let plain = zstd::stream::decode_all(bytes.as_slice())
                            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                        all.extend(plain);
                    }
                    all.extend(bytes);
                }
            }
        }
        all
    }
}

/// Whether `needle` occurs in `haystack`.
pub fn contains(haystack: &[u8], needle: &str) -> bool {
    haystack
        .windows(needle.len())
        .any(|w| w == needle.as_bytes())
}

/// The restricted modes.
pub const RESTRICTED: [&str; 2] = ["workspace-write", "read-only"];

/// The Landlock support the runtimes under test work with: the kernel's,
/// lowered by `DSH_LANDLOCK_ABI_MAX`, which they inherit from this process
/// (`scripts/test.sh` reruns the suite at every fallback level).
pub fn landlock() -> LandlockSupport {
    let max = std::env::var(LANDLOCK_ABI_MAX_VAR)
        .ok()
        .filter(|value| !value.trim().is_empty())
        .map(|value| {
            parse_abi_max(&value).unwrap_or_else(|e| panic!("{LANDLOCK_ABI_MAX_VAR}: {e}"))
        });
    LandlockSupport::detect().capped(max)
}

/// What docs/tools-and-sandbox.md promises at a Landlock level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Below ABI 3: every command of a restricted mode is refused.
    FailsClosed,
    /// ABI 3 to 5: Landlock for files (and TCP from 4); the command is PID
    /// 1 of a PID namespace of its own; abstract sockets stay reachable.
    PidNamespace,
    /// ABI 6 and newer: Landlock also scopes signals and abstract sockets.
    Scoped,
}

/// The level of this run.
pub fn level() -> Level {
    match landlock().abi {
        abi if abi < MIN_LANDLOCK_ABI => Level::FailsClosed,
        abi if abi < SCOPE_LANDLOCK_ABI => Level::PidNamespace,
        _ => Level::Scoped,
    }
}

/// Why this run's Landlock cannot enforce a restricted mode, as the
/// refusal says it.
pub fn shortfall() -> String {
    let support = landlock();
    match support.lowered_from {
        Some(kernel) => format!(
            "DSH_LANDLOCK_ABI_MAX={abi} lowers the kernel's Landlock ABI {kernel} to ABI {abi} but at least ABI 3 is needed",
            abi = support.abi
        ),
        None if support.abi == 0 => "Landlock is not available on this kernel".to_owned(),
        None => format!(
            "the kernel offers Landlock ABI {} but at least ABI 3 is needed",
            support.abi
        ),
    }
}

/// Asserts that `outcome` is the fail-closed refusal of `mode` (the
/// command was not run). When the kernel itself, not the cap, is below
/// ABI 3, the confinement attacks cannot run on this machine: a skip (a
/// failure under CI).
pub fn assert_fails_closed(outcome: &Outcome, mode: &str) {
    assert_eq!(level(), Level::FailsClosed);
    let expected = format!(
        "Error: sandbox mode \"{mode}\" is in force but cannot be enforced here ({}), so the command was not run: running it without confinement is refused.",
        shortfall()
    );
    assert!(outcome.is_error, "{}", outcome.text);
    assert!(
        outcome.text.starts_with(&expected),
        "{}\nexpected: {expected}",
        outcome.text
    );
    if landlock().lowered_from.is_none() {
        dsh_repo_checks::skip(&format!(
            "redteam: the kernel offers Landlock ABI {}: only the fail-closed path is checked",
            landlock().abi
        ));
    }
}
