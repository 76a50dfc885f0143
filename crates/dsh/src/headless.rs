//! `dsh headless [--json] [--session-id <id>] [--provider P] [--model M] <task…|->`:
//! one task, start to finish, from the command line.
//!
//! It drives the same SDK server in process, as a client would over stdio:
//! `initialize`, `session/resume` (with `--session-id`), `session/prompt`,
//! then the session's notifications until it is idle, then `shutdown`.
//! Plain mode prints the final answer on stdout and reasoning and errors on
//! stderr; `--json` prints one NDJSON record per step of the run.

use crate::launch::Launch;
use clap::Parser;
use dsh_protocol::FrameWriter;
use dsh_server::{Server, serve};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::mpsc;
use tokio::io::AsyncWriteExt;

/// The profile name that selects this mode.
pub const HEADLESS: &str = "headless";

/// Arguments of `dsh headless`.
#[derive(Debug, Parser)]
#[command(
    name = "dsh headless",
    about = "Run one agent task and print the answer"
)]
pub struct HeadlessArgs {
    /// Print NDJSON records instead of the plain answer.
    #[arg(long)]
    json: bool,
    /// Continue this stored session instead of starting a new one.
    #[arg(long, value_name = "ID")]
    session_id: Option<String>,
    /// Model provider: `scripted` when `--model` names a scenario file,
    /// else `deepseek-official` when DEEPSEEK_API_KEY is set, else
    /// `scripted` (echo); or `openai-compatible`.
    #[arg(long)]
    provider: Option<String>,
    /// Model id; for `scripted`, `echo` or a scenario file (relative paths
    /// resolve against the current directory).
    #[arg(long)]
    model: Option<String>,
    /// The task: words, or `-` to read it from stdin.
    #[arg(required = true, allow_hyphen_values = true, trailing_var_arg = true)]
    task: Vec<String>,
}

/// Frames the server writes, one `write_all` per frame.
struct ChannelWrite(mpsc::Sender<Vec<u8>>);

impl Write for ChannelWrite {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .send(buf.to_vec())
            .map_err(|_| std::io::ErrorKind::BrokenPipe)?;
        Ok(buf.len())
    }
    /// One message per call, whatever the parts: the client reads one
    /// frame per message.
    fn write_vectored(&mut self, bufs: &[std::io::IoSlice<'_>]) -> std::io::Result<usize> {
        let mut frame = Vec::with_capacity(bufs.iter().map(|part| part.len()).sum());
        for part in bufs {
            frame.extend_from_slice(part);
        }
        let len = frame.len();
        self.0
            .send(frame)
            .map_err(|_| std::io::ErrorKind::BrokenPipe)?;
        Ok(len)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Runs the task; exit 0 iff the last turn completed.
pub fn run(launch: Box<Launch>, args: HeadlessArgs) -> ExitCode {
    eprintln!("dsh: state in {}", launch.dsh_home().display());
    let mut out = Output { json: args.json };
    match execute(launch, &args, &mut out) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(message) => {
            out.error(&message);
            ExitCode::from(1)
        }
    }
}

fn execute(launch: Box<Launch>, args: &HeadlessArgs, out: &mut Output) -> Result<bool, String> {
    let task = if args.task == ["-"] {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read the task from stdin: {e}"))?;
        text.trim_end().to_owned()
    } else {
        args.task.join(" ")
    };
    if task.trim().is_empty() {
        return Err("the task is empty".into());
    }
    // What is left of stdin is no tool's input: `read` of /dev/stdin finds
    // an empty device, not the terminal or the rest of a pipe.
    crate::stdio::detach_stdin().map_err(|e| format!("cannot detach stdin: {e}"))?;
    let cwd = launch.process_cwd.clone();
    // A scenario file as the model means the offline scripted provider;
    // otherwise DeepSeek when a key is configured, else scripted echo.
    let scenario = args.model.as_ref().is_some_and(|m| cwd.join(m).is_file());
    let provider = args.provider.clone().unwrap_or_else(|| {
        let deepseek = launch.var("DEEPSEEK_API_KEY").is_some() && !scenario;
        if deepseek {
            "deepseek-official"
        } else {
            "scripted"
        }
        .to_owned()
    });
    let model = match (&args.model, provider.as_str()) {
        (Some(model), "scripted") if model != "echo" => {
            cwd.join(model).to_string_lossy().into_owned()
        }
        (Some(model), _) => model.clone(),
        (None, "scripted") => "echo".to_owned(),
        (None, _) => "deepseek-v4-flash".to_owned(),
    };
    let (frames_tx, frames) = mpsc::channel();
    let (writer, _writer_thread) =
        FrameWriter::spawn(ChannelWrite(frames_tx)).map_err(|e| format!("cannot start: {e}"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let server = Server::new(launch.server_config(), writer);
    let (mut requests, input) = tokio::io::duplex(1 << 16);
    let serving = runtime.spawn(async move { serve(&server, input).await });
    let mut client = Client { frames, next_id: 0 };
    let mut send = |request: Value| {
        let line = format!("{request}\n");
        runtime
            .block_on(requests.write_all(line.as_bytes()))
            .map_err(|e| format!("runtime stopped: {e}"))
    };
    send(client.request(
        "initialize",
        json!({"cwd": cwd, "provider": provider, "model": model}),
    ))?;
    client.result()?;
    let session_id = match &args.session_id {
        Some(id) => {
            send(client.request("session/resume", json!({"sessionId": id})))?;
            client
                .result()
                .map_err(|e| format!("{e} (omit --session-id to start a new session)"))?;
            id.clone()
        }
        None => format!("session-{}", uuid::Uuid::new_v4().simple()),
    };
    out.record(json!({"type": "session", "sessionId": session_id, "cwd": cwd}));
    let prompt =
        json!({"sessionId": session_id, "contentBlocks": [{"type": "text", "text": task}]});
    send(client.request("session/prompt", prompt))?;
    let completed = client.follow(&session_id, out)?;
    send(client.request("shutdown", Value::Null))?;
    let _ = client.result();
    let _ = runtime.block_on(serving);
    runtime.shutdown_background();
    Ok(completed)
}

struct Client {
    frames: mpsc::Receiver<Vec<u8>>,
    next_id: u64,
}

impl Client {
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        json!({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
    }

    fn next(&self) -> Result<Value, String> {
        let bytes = self
            .frames
            .recv()
            .map_err(|_| "the runtime stopped unexpectedly".to_owned())?;
        serde_json::from_slice(&bytes).map_err(|e| format!("bad frame from the runtime: {e}"))
    }

    /// The result of the latest request (notifications before it skipped).
    fn result(&self) -> Result<Value, String> {
        loop {
            let frame = self.next()?;
            if frame.get("id").and_then(Value::as_u64) == Some(self.next_id) {
                if let Some(error) = frame.get("error") {
                    return Err(error["message"]
                        .as_str()
                        .unwrap_or("request failed")
                        .to_owned());
                }
                return Ok(frame["result"].clone());
            }
        }
    }

    /// Follows the session until it is idle after the prompt; reports every
    /// step of the run and returns whether the last turn completed.
    fn follow(&self, session_id: &str, out: &mut Output) -> Result<bool, String> {
        let mut last_text = String::new();
        let mut last_reason = None;
        loop {
            let frame = self.next()?;
            if let Some(error) = frame.get("error") {
                return Err(error["message"]
                    .as_str()
                    .unwrap_or("the prompt failed")
                    .to_owned());
            }
            let params = &frame["params"];
            if params["sessionId"] != session_id {
                continue;
            }
            match frame["method"].as_str() {
                Some("session.status") if params["status"] == "idle" => break,
                Some("session.event") => {
                    let event = &params["event"];
                    if let Some(text) = out.event(event) {
                        last_text = text;
                    }
                    if event["type"] == "turn/end" {
                        last_reason = Some(event["data"]["reason"].clone());
                    }
                }
                _ => {}
            }
        }
        let reason = last_reason.unwrap_or(Value::Null);
        if reason["kind"] == "error" {
            let error = &reason["error"];
            out.failure(
                error["code"].as_str().unwrap_or("UNKNOWN"),
                error["message"].as_str().unwrap_or_default(),
            );
        }
        out.finish(&last_text);
        Ok(reason["kind"] == "completed")
    }
}

struct Output {
    json: bool,
}

impl Output {
    fn record(&self, record: Value) {
        if self.json {
            println!("{record}");
        }
    }

    /// Reports one event; returns the text of an assistant message.
    fn event(&self, event: &Value) -> Option<String> {
        let data = &event["data"];
        let phase = match event["type"].as_str()? {
            "turn/start" => Some("turn_start"),
            "step/start" => Some("step_start"),
            "step/end" => Some("step_end"),
            "turn/end" => Some("turn_end"),
            _ => None,
        };
        if let Some(phase) = phase {
            let mut record = json!({"type": "status", "phase": phase, "turn": data["turn"]});
            if let Some(step) = data.get("step") {
                record["step"] = step.clone();
            }
            if let Some(reason) = data.get("reason") {
                record["reason"] = reason["kind"].clone();
            }
            self.record(record);
            return None;
        }
        match event["type"].as_str()? {
            "assistant/message" => {
                let mut text = String::new();
                for block in data["message"]["content"].as_array().into_iter().flatten() {
                    match block["type"].as_str() {
                        Some("reasoning") => {
                            let thinking = block["text"].as_str().unwrap_or_default();
                            if self.json {
                                self.record(json!({"type": "thinking", "text": thinking}));
                            } else {
                                eprintln!("dsh: reasoning:\n{thinking}");
                            }
                        }
                        Some("text") => {
                            let part = block["text"].as_str().unwrap_or_default();
                            self.record(json!({"type": "text", "text": part}));
                            text.push_str(part);
                        }
                        _ => {}
                    }
                }
                Some(text)
            }
            "tool/call" => {
                self.record(json!({"type": "tool_call", "callId": data["callId"], "name": data["name"], "arguments": data["arguments"]}));
                None
            }
            "tool/result" => {
                let message = &data["message"];
                let text: String = message["content"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|b| b["text"].as_str())
                    .collect();
                self.record(json!({"type": "tool_result", "callId": message["toolCallId"], "isError": message["isError"], "text": text}));
                None
            }
            _ => None,
        }
    }

    fn failure(&self, code: &str, message: &str) {
        if !self.json {
            eprintln!("dsh: {code}: {message}");
        }
    }

    fn error(&self, message: &str) {
        eprintln!("dsh: {message}");
        self.record(json!({"type": "error", "message": message}));
    }

    fn finish(&self, text: &str) {
        if self.json {
            self.record(json!({"type": "final", "text": text}));
        } else {
            println!("{text}");
        }
    }
}
