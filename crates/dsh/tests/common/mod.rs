//! Spawning the real `dsh` binary for black-box tests.

#![allow(dead_code)] // each test binary uses a different subset

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

/// A fresh temporary directory, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static COUNTER: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let path = std::env::temp_dir().join(format!("dsh-test-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
        Self(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `dsh` with a clean environment: no DSH_HOME, no API key, HOME in `home`.
pub fn dsh(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_dsh"));
    cmd.env_remove("DSH_HOME")
        .env_remove("DEEPSEEK_API_KEY")
        .env_remove("DSH_PERMISSION_MODE")
        .env("HOME", home)
        .current_dir(home);
    cmd
}

/// A running runtime with line access to its stdout.
pub struct Runtime {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    pub dir: TempDir,
    /// What `/proc` shows for the pipe the runtime's stdout was given.
    pub stdout_pipe: Option<PathBuf>,
    stdout_seen: Arc<Mutex<Vec<u8>>>,
    stderr_seen: Arc<Mutex<Vec<u8>>>,
}

impl Runtime {
    /// Starts `dsh --profile <profile>` with DSH_HOME and cwd in a temp dir.
    pub fn start(profile: &str) -> Self {
        Self::start_with(profile, |_| {})
    }

    pub fn start_with(profile: &str, configure: impl FnOnce(&mut Command)) -> Self {
        Self::start_command(|dir| {
            let mut cmd = dsh(dir);
            cmd.args(["--profile", profile]);
            configure(&mut cmd);
            cmd
        })
    }

    /// As [`Runtime::start_with`], with the runtime started by
    /// `sh -c 'umask <umask>; exec dsh …'`.
    pub fn start_with_umask(
        profile: &str,
        umask: &str,
        configure: impl FnOnce(&mut Command),
    ) -> Self {
        Self::start_command(|dir| {
            let mut cmd = Command::new("sh");
            cmd.args([
                "-c",
                &format!("umask {umask}; exec \"$0\" \"$@\""),
                env!("CARGO_BIN_EXE_dsh"),
            ])
            .env_remove("DSH_HOME")
            .env_remove("DEEPSEEK_API_KEY")
            .env_remove("DSH_PERMISSION_MODE")
            .env("HOME", dir)
            .current_dir(dir)
            .args(["--profile", profile]);
            configure(&mut cmd);
            cmd
        })
    }

    /// Starts the command `make` builds in the temp dir (cwd, HOME), with
    /// DSH_HOME set to `<dir>/home` unless `make` set it, and the workspace
    /// `<dir>/ws` created.
    pub fn start_command(make: impl FnOnce(&Path) -> Command) -> Self {
        let dir = TempDir::new("rt");
        let home = dir.path().join("home");
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap_or_else(|e| panic!("{e}"));
        let mut cmd = make(dir.path());
        if !cmd
            .get_envs()
            .any(|(key, value)| key == "DSH_HOME" && value.is_some())
        {
            cmd.env("DSH_HOME", &home);
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn dsh: {e}"));
        let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
        let stdout_pipe = {
            use std::os::fd::AsRawFd;
            std::fs::read_link(format!("/proc/self/fd/{}", stdout.as_raw_fd())).ok()
        };
        let (tx, lines) = mpsc::channel();
        let stdout_seen = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&stdout_seen);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                match line {
                    Ok(line) => {
                        if let Ok(mut seen) = seen.lock() {
                            seen.extend_from_slice(line.as_bytes());
                            seen.push(b'\n');
                        }
                        if tx.send(line).is_err() {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        });
        let stderr_seen = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut stderr) = child.stderr.take() {
            let seen = Arc::clone(&stderr_seen);
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                while let Ok(n) = std::io::Read::read(&mut stderr, &mut buf) {
                    if n == 0 {
                        break;
                    }
                    if let Ok(mut seen) = seen.lock() {
                        seen.extend_from_slice(&buf[..n]);
                    }
                }
            });
        }
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            lines,
            dir,
            stdout_pipe,
            stdout_seen,
            stderr_seen,
        }
    }

    /// Every byte the runtime wrote on stdout so far (lines as read).
    pub fn stdout_bytes(&self) -> Vec<u8> {
        self.stdout_seen
            .lock()
            .map(|b| b.clone())
            .unwrap_or_default()
    }

    /// Every byte the runtime wrote on stderr so far.
    pub fn stderr_bytes(&self) -> Vec<u8> {
        self.stderr_seen
            .lock()
            .map(|b| b.clone())
            .unwrap_or_default()
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    /// Writes raw bytes to stdin.
    pub fn write(&mut self, bytes: &[u8]) {
        if let Some(stdin) = self.stdin.as_mut() {
            let _ = stdin.write_all(bytes).and_then(|()| stdin.flush());
        }
    }

    /// Writes one frame line.
    pub fn send(&mut self, frame: &Value) {
        self.write(format!("{frame}\n").as_bytes());
    }

    /// Closes stdin.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// The next stdout line as sent, within 10 s.
    pub fn next_raw(&mut self) -> String {
        self.next_raw_within(Duration::from_secs(10))
    }

    /// The next stdout line as sent, within `wait`.
    pub fn next_raw_within(&mut self, wait: Duration) -> String {
        self.lines
            .recv_timeout(wait)
            .unwrap_or_else(|e| panic!("no frame from dsh within {wait:?}: {e}"))
    }

    /// The next stdout line as JSON, within 10 s.
    pub fn next(&mut self) -> Value {
        let line = self.next_raw();
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"))
    }

    /// Frames until (and including) the response with `id`.
    pub fn until_response(&mut self, id: &Value) -> Vec<Value> {
        let mut frames = Vec::new();
        loop {
            let frame = self.next();
            let done = frame.get("id") == Some(id);
            frames.push(frame);
            if done {
                return frames;
            }
        }
    }

    /// Sends a request and returns its response (skipping notifications).
    pub fn request(&mut self, id: Value, method: &str, params: Value) -> Value {
        self.send(
            &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        );
        self.until_response(&id).pop().unwrap_or(Value::Null)
    }

    /// Initializes with the scripted echo model on the temp workspace.
    pub fn initialize_echo(&mut self) {
        let ws = self.workspace();
        let resp = self.request(
            Value::from("init"),
            "initialize",
            serde_json::json!({"cwd": ws, "provider": "scripted", "model": "echo"}),
        );
        assert!(resp.get("result").is_some(), "initialize failed: {resp}");
    }

    /// Remaining stdout lines after the process exits.
    pub fn drain(&mut self) -> Vec<String> {
        let mut rest = Vec::new();
        while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(10)) {
            rest.push(line);
        }
        rest
    }

    /// Waits up to 5 s for the exit code.
    pub fn wait_exit(&mut self) -> Option<i32> {
        for _ in 0..500 {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        panic!("dsh did not exit within 5 s");
    }

    /// Sends a signal by name with kill(1).
    pub fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .unwrap_or_else(|e| panic!("kill: {e}"));
        assert!(status.success());
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
