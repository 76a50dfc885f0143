//! `dsh headless [--json] [--session-id <id>] [--provider P] [--model M] <task…|->`:
//! one task, start to finish, from the command line.
//!
//! The sdk profile's server runs in process; a [`dsh_client::Client`] drives
//! it over an in-memory duplex, as a client would over stdio: `initialize`,
//! `session/resume` (with `--session-id`), [`Session::run_observed`]
//! (`session/prompt`, then the session's events until it is idle), then
//! `shutdown`. Plain mode prints the final answer on stdout and reasoning
//! and errors on stderr; `--json` prints one NDJSON record per step of the
//! run.
//!
//! [`Session::run_observed`]: dsh_client::Session::run_observed

use crate::cli::HeadlessArgs;
use crate::launch::Launch;
use dsh_client::{Client, ClientError, text_block};
use dsh_protocol::FrameWriter;
use dsh_protocol::catalog::{AbortReason, Event, HookRunEvent, TurnEndReason};
use dsh_protocol::message::text_of;
use dsh_server::{RpcError, Server, serve};
use serde_json::{Value, json};
use std::io::Read;
use std::path::Path;
use std::process::ExitCode;
use tokio_util::io::SyncIoBridge;

/// Runs the task; exit 0 iff the last turn completed.
pub fn run(launch: Box<Launch>, args: HeadlessArgs) -> ExitCode {
    // Said only where the place was not chosen: `DSH_HOME` defaults to
    // `~/.dsh` here.
    if launch.var("DSH_HOME").is_none() {
        eprintln!("dsh: state in {}", launch.dsh_home().display());
    }
    let mut out = Output {
        json: args.json,
        step_usage: None,
        refused: None,
    };
    match execute(launch, &args, &mut out) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(message) => {
            out.error(&message);
            ExitCode::from(1)
        }
    }
}

fn execute(mut launch: Box<Launch>, args: &HeadlessArgs, out: &mut Output) -> Result<bool, String> {
    for file in &args.mcp {
        launch.add_mcp_file(&launch.process_cwd.join(file))?;
    }
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
    let (provider, model) = launch.route(
        args.provider.as_deref(),
        args.model.as_deref(),
        |scenario| {
            if launch.var("DEEPSEEK_API_KEY").is_some() && !scenario {
                "deepseek-official"
            } else {
                "scripted"
            }
        },
    );
    let runtime =
        crate::launch::runtime().map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let completed = runtime.block_on(async {
        let (ours, theirs) = tokio::io::duplex(1 << 16);
        let (requests, frames) = tokio::io::split(theirs);
        let (writer, _writer_thread) = FrameWriter::spawn(SyncIoBridge::new(frames))
            .map_err(|e| format!("cannot start: {e}"))?;
        let server = Server::new(launch.server_config(), writer);
        let serving = tokio::spawn(async move { serve(&server, requests).await });
        let (reader, writer) = tokio::io::split(ours);
        let client = Client::connect(reader, writer, &cwd);
        let completed = converse(&client, args, &task, &cwd, (&provider, &model), out).await;
        let _ = client.shutdown().await;
        let _ = serving.await;
        completed
    });
    runtime.shutdown_background();
    completed
}

/// `initialize`, the session, the task's run; reports every step of the
/// run and returns whether the last turn completed.
async fn converse(
    client: &Client,
    args: &HeadlessArgs,
    task: &str,
    cwd: &Path,
    (provider, model): (&str, &str),
    out: &mut Output,
) -> Result<bool, String> {
    client.initialize(provider, model).await.map_err(text)?;
    let session = match &args.session_id {
        Some(id) => client.resume(id).await.map_err(|err| match err {
            // The official CLI's words for an unknown id.
            ClientError::Rpc { message, .. }
                if message == RpcError::NotFound(id.clone()).to_string() =>
            {
                format!("session \"{id}\" does not exist; omit --session-id to start a new Session")
            }
            other => format!("{} (omit --session-id to start a new session)", text(other)),
        })?,
        None => client.session(format!("session-{}", uuid::Uuid::new_v4())),
    };
    out.record(json!({"type": "session", "sessionId": session.id(), "cwd": cwd}));
    let result = session
        .run_observed(vec![text_block(task)], |_, typed| {
            if let Some(event) = typed {
                out.event(event);
            }
        })
        .await
        .map_err(text)?;
    match &result.finish {
        Some(TurnEndReason::Error { error }) => out.failure(error.code.as_str(), &error.message),
        Some(TurnEndReason::Blocked) => out.error(&format!(
            "the task was refused by a UserPromptSubmit hook: {}",
            out.refused.clone().unwrap_or_default()
        )),
        Some(TurnEndReason::Aborted {
            reason: AbortReason::Hook { reason },
        }) => out.error(&format!("a hook stopped the agent: {reason}")),
        _ => {}
    }
    out.finish(&result.final_response);
    Ok(result.finish_reason.as_deref() == Some("completed"))
}

/// What a failed request prints: the runtime's message as is.
fn text(err: ClientError) -> String {
    match err {
        ClientError::Rpc { message, .. } => message,
        ClientError::Closed { .. } => "the runtime stopped unexpectedly".into(),
        other => other.to_string(),
    }
}

/// The records of `--json`, as the official `--profile headless --json`
/// writes them.
struct Output {
    json: bool,
    /// The usage of the step's reply, for its `step_end` record.
    step_usage: Option<Value>,
    /// Why a `UserPromptSubmit` hook refused the task.
    refused: Option<String>,
}

impl Output {
    fn record(&self, record: Value) {
        if self.json {
            println!("{record}");
        }
    }

    /// Reports one event.
    fn event(&mut self, event: &Event) {
        let status =
            |phase: &str, turn: u32| json!({"type": "status", "phase": phase, "turn": turn});
        match event {
            Event::TurnStart(start) => self.record(status("turn_start", start.turn)),
            Event::StepStart(start) => {
                let mut record = status("step_start", start.turn);
                record["step"] = start.step.into();
                self.record(record);
            }
            Event::StepEnd(end) => {
                let mut record = status("step_end", end.turn);
                record["step"] = end.step.into();
                if let Some(usage) = self.step_usage.take() {
                    record["usage"] = usage;
                }
                self.record(record);
            }
            Event::TurnEnd(end) => {
                let mut record = status("turn_end", end.turn);
                record["reason"] = serde_json::to_value(&end.reason).unwrap_or(Value::Null);
                self.record(record);
            }
            Event::AssistantMessage(reply) => {
                self.step_usage = reply.usage.as_ref().map(|usage| {
                    json!({
                        "inputTokens": usage.input_tokens,
                        "outputTokens": usage.output_tokens,
                        "totalTokens": usage.total_tokens,
                    })
                });
                for block in &reply.message.content {
                    let text = block["text"].as_str().unwrap_or_default();
                    match block["type"].as_str() {
                        Some("reasoning") if self.json => {
                            self.record(json!({"type": "thinking", "text": text}));
                        }
                        Some("reasoning") => eprintln!("dsh: reasoning:\n{text}"),
                        Some("text") => self.record(json!({"type": "text", "text": text})),
                        _ => {}
                    }
                }
            }
            Event::HookRun(run) => self.hook(run),
            Event::ToolCall(call) => {
                // The arguments as an object; text that is no JSON as is.
                let input = serde_json::from_str::<Value>(&call.arguments)
                    .unwrap_or_else(|_| Value::String(call.arguments.clone()));
                self.record(json!({"type": "tool_call", "callId": call.call_id, "tool": call.name, "input": input}));
            }
            Event::ToolResult(result) => {
                let message = &result.message;
                let text: String = text_of(&message.content).collect();
                let status = if message.is_error {
                    "error"
                } else {
                    "completed"
                };
                self.record(json!({"type": "tool_result", "callId": message.tool_call_id, "status": status, "result": text}));
            }
            _ => {}
        }
    }

    /// A hook's run: a `hook` record; in plain mode a hook that failed
    /// or blocked is told on stderr.
    fn hook(&mut self, run: &HookRunEvent) {
        if run.event == "UserPromptSubmit" && run.decision == "block" {
            self.refused = run.reason.clone();
        }
        if self.json {
            self.record(
                json!({"type": "hook", "event": run.event, "command": run.command,
                "decision": run.decision, "exitCode": run.exit_code, "reason": run.reason,
                "message": run.message}),
            );
            return;
        }
        if let Some(message) = &run.message {
            eprintln!("dsh: {} hook `{}`: {message}", run.event, run.command);
        }
        if matches!(run.decision.as_str(), "error" | "deny" | "block" | "stop") {
            let reason = run.reason.as_deref().unwrap_or_default();
            eprintln!(
                "dsh: {} hook `{}`: {}: {reason}",
                run.event, run.command, run.decision
            );
        }
    }

    fn failure(&self, code: &str, message: &str) {
        eprintln!("dsh: {code}: {message}");
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
