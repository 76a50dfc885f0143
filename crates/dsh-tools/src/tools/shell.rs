//! `bash` (sdk-minimal): commands in the session's persistent shell.

use super::{TypedTool, spec, string};
use crate::shell::{RunEnd, Shell, quote};
use crate::{ToolContext, ToolOutput, ToolsConfig};
use dsh_protocol::catalog::ToolSpec;
use serde::Deserialize;
use std::sync::Arc;

/// Most characters of output shown per command.
pub(crate) const SHELL_OUTPUT_LIMIT: usize = 16_000;

const DESCRIPTION: &str = "Run a command in a persistent bash shell. The shell lives for the whole session: the working directory, variables and functions set by one call are still there in the next. stdout and stderr come back together, followed by [Command finished with exit code N]. Only the last 16000 characters of output are shown. A command running longer than 300 seconds is stopped and the shell restarts fresh. Commands get no stdin, so avoid interactive programs.";

#[derive(Deserialize)]
pub(crate) struct Args {
    command: String,
}

/// The persistent-shell `bash` tool.
pub(crate) struct PersistentBash {
    spec: ToolSpec,
    config: Arc<ToolsConfig>,
}

impl PersistentBash {
    pub(crate) fn new(config: Arc<ToolsConfig>) -> Self {
        Self {
            spec: spec(
                "bash",
                DESCRIPTION,
                vec![("command", string("The command line to run in the shell."))],
                &["command"],
            ),
            config,
        }
    }

    async fn run_command(&self, command: String, ctx: ToolContext) -> ToolOutput {
        if ctx.state.is_shut_down() {
            return ToolOutput::failure(
                "Error: the session is shutting down; no new commands can start.",
            );
        }
        let mut guard = ctx.state.shell.lock().await;
        let mut notes = Vec::new();
        if guard.is_none() {
            if let Err(refusal) = self.config.sandbox.check(ctx.mode) {
                return ToolOutput::failure(format!("Error: {refusal}"));
            }
            match Shell::spawn(&self.config, ctx.mode, &ctx.cwd, &ctx.workspace).await {
                Ok(shell) => {
                    ctx.state.set_shell_pgid(shell.pgid());
                    *guard = Some(shell);
                }
                Err(err) => {
                    return ToolOutput::failure(format!("Error: cannot start bash: {err}"));
                }
            }
        }
        let Some(shell) = guard.as_mut() else {
            return ToolOutput::failure("Error: the shell is not available.");
        };
        // Follow the session when its working directory was changed by
        // other means (the working_directory tool) since the last call.
        let prelude = if shell.session_cwd != ctx.cwd {
            shell.session_cwd = ctx.cwd.clone();
            format!("cd -- {}\n", quote(&ctx.cwd.to_string_lossy()))
        } else {
            String::new()
        };
        let deadline = tokio::time::Instant::now() + self.config.shell_timeout;
        let result = shell.run(&prelude, &command, deadline, &ctx.cancel).await;
        let reset = "the shell was stopped; a fresh one starts with the next command, so the working directory and variables are back to their defaults";
        let mut is_error = false;
        match &result.end {
            RunEnd::Done { code } => {
                notes.push(format!("[Command finished with exit code {code}]"));
            }
            RunEnd::ShellExited(code) => {
                let code = code.map_or_else(|| "unknown".to_owned(), |c| c.to_string());
                notes.push(format!("[Command finished with exit code {code}]"));
                notes.push("[The shell exited; a fresh one starts with the next command, so the working directory and variables are back to their defaults]".to_owned());
            }
            RunEnd::TimedOut => {
                is_error = true;
                notes.push(format!(
                    "[Command timed out after {}ms; {reset}]",
                    self.config.shell_timeout.as_millis()
                ));
            }
            RunEnd::Cancelled => {
                is_error = true;
                notes.push(format!("[stopped: cancelled; {reset}]"));
            }
            RunEnd::Broken(why) => {
                is_error = true;
                notes.push(format!("[{why}; {reset}]"));
            }
        }
        if !matches!(result.end, RunEnd::Done { .. }) {
            if let Some(mut shell) = guard.take() {
                shell.kill();
            }
            ctx.state.set_shell_pgid(None);
        }
        drop(guard);
        let mut text = clip(&result.output, result.dropped, &mut notes);
        for note in notes {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&note);
        }
        // No `meta`: the official persistent shell reports none.
        if is_error {
            ToolOutput::failure(text)
        } else {
            ToolOutput::text(text)
        }
    }
}

/// The last [`SHELL_OUTPUT_LIMIT`] characters of `output`, with a note
/// when anything was left out.
fn clip(output: &str, dropped: bool, notes: &mut Vec<String>) -> String {
    let total = output.chars().count();
    if total <= SHELL_OUTPUT_LIMIT && !dropped {
        return output.to_owned();
    }
    let skip = total.saturating_sub(SHELL_OUTPUT_LIMIT);
    let kept: String = output.chars().skip(skip).collect();
    let note = if dropped {
        format!(
            "[output clipped: showing only the last {SHELL_OUTPUT_LIMIT} characters of a very long output]"
        )
    } else {
        format!("[output clipped: showing the last {SHELL_OUTPUT_LIMIT} of {total} characters]")
    };
    notes.insert(0, note);
    kept
}

impl TypedTool for PersistentBash {
    type Args = Args;
    const BATCHED: bool = false;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, a: Args, ctx: ToolContext) -> ToolOutput {
        self.run_command(a.command, ctx).await
    }
}
