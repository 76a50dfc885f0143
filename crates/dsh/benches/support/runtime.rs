//! A `dsh --profile sdk` (or `dsh acp`) process the benches drive over
//! stdio (shared by the benches that include it with `#[path =
//! "support/runtime.rs"] mod runtime;`).

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// The runtime under bench, its input and the lines it writes.
pub struct Runtime {
    /// The process (ended when this is dropped).
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next: u64,
}

impl Runtime {
    /// Spawns the built `dsh --profile sdk` in `dir` (its `HOME`;
    /// `DSH_HOME` is `dir/home`) with only `PATH` and `env` inherited.
    #[allow(dead_code, reason = "the acp bench spawns with `start_with` only")]
    pub fn start(dir: &Path, env: &[(&str, String)]) -> Self {
        Self::start_with(&["--profile", "sdk"], dir, env)
    }

    /// Spawns the built `dsh` with `args` (e.g. `["acp"]`), as
    /// [`Runtime::start`] does.
    pub fn start_with(args: &[&str], dir: &Path, env: &[(&str, String)]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dsh"))
            .args(args)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir)
            .env("DSH_HOME", dir.join("home"))
            .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
            .current_dir(dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn: {e}"));
        let stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Self {
            child,
            stdin: Some(stdin),
            lines,
            next: 0,
        }
    }

    /// Writes one frame.
    pub fn send(&mut self, frame: &Value) {
        let stdin = self
            .stdin
            .as_mut()
            .unwrap_or_else(|| panic!("input closed"));
        writeln!(stdin, "{frame}").unwrap_or_else(|e| panic!("write: {e}"));
        stdin.flush().unwrap_or_else(|e| panic!("flush: {e}"));
    }

    /// Reads lines up to the first one `wanted` accepts (at most 60 s);
    /// returns that one.
    pub fn until(&self, mut wanted: impl FnMut(&str) -> bool) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(60))
                .unwrap_or_else(|e| panic!("no frame: {e}"));
            if wanted(&line) {
                return line;
            }
        }
    }

    /// Sends a request and waits for its successful answer line.
    pub fn request(&mut self, method: &str, params: Value) -> String {
        self.next += 1;
        let id = format!("r{}", self.next);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let wanted = format!(r#""id":"{id}""#);
        let answer = self.until(|line| line.contains(&wanted));
        assert!(answer.contains(r#""result""#), "{method} failed: {answer}");
        answer
    }
}

impl Drop for Runtime {
    /// Ends the input, as a client ends a runtime (which then keeps what it
    /// writes on exit, e.g. the session list's cache); killed if it has not
    /// exited within 10 s.
    fn drop(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(2));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
