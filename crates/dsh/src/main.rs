//! `dsh`: the DeepSeek Harness SDK runtime as one native binary.
//!
//! # Layers
//!
//! Layer 1 is the bottom; a module uses only those in its layer or below
//! (`dsh-repo-checks`' layering test holds this list to the code):
//!
//! 1. `cli`, `home`, `stdio` — the launcher grammar; `DSH_HOME` at launch;
//!    the protocol channel made impossible to corrupt
//! 2. `launch` — everything decided before the runtime starts
//! 3. `headless`, `acp`, `web` — `dsh headless`: one task from the command
//!    line; `dsh acp`: the Agent Client Protocol on stdio; `dsh web`: the
//!    browser page

mod acp;
mod cli;
mod headless;
mod home;
mod launch;
mod stdio;
mod web;

use dsh_protocol::FrameWriter;
use dsh_server::{Server, serve};
use std::process::ExitCode;

fn main() -> ExitCode {
    // `dsh __sandbox-exec …` is the sandbox launcher that bash tools run
    // through: it confines itself and becomes the command, before anything
    // else happens in this process.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if args
        .get(1)
        .is_some_and(|arg| arg == dsh_tools::SANDBOX_EXEC_ARG)
    {
        return dsh_tools::sandbox_exec_main(args.get(2..).unwrap_or_default());
    }
    init_tracing();
    let cli = match cli::Cli::parse_args(std::env::args_os()) {
        Ok(cli) => cli,
        Err(err) => {
            let code = if err.use_stderr() { 1 } else { 0 };
            let _ = err.print();
            return ExitCode::from(code);
        }
    };
    if cli.print_schema {
        return print_schema();
    }
    let launch = match launch::Launch::prepare(&cli) {
        Ok(launch::Prepared::Run(launch)) => launch,
        Ok(launch::Prepared::Done) => return ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("{err}");
            return ExitCode::from(err.exit_code());
        }
    };
    match cli.command {
        Some(cli::Command::Headless(args)) => return headless::run(launch, args),
        Some(cli::Command::Acp(args)) => return acp::run(launch, args),
        Some(cli::Command::Web(args)) => return web::run(launch, args),
        None => {}
    }
    // From here on fd 0 is /dev/null and fd 1 is stderr: only the request
    // reader and the frame writer hold the protocol channel, and no tool,
    // library print or child process can reach it.
    let protocol_in = match stdio::take_protocol_stdin() {
        Ok(file) => file,
        Err(err) => {
            eprintln!("dsh: cannot set up the protocol channel: {err}");
            return ExitCode::from(1);
        }
    };
    let protocol_out = match stdio::take_protocol_stdout() {
        Ok(file) => file,
        Err(err) => {
            eprintln!("dsh: cannot set up the protocol channel: {err}");
            return ExitCode::from(1);
        }
    };
    let (writer, writer_thread) = match FrameWriter::spawn(protocol_out) {
        Ok(pair) => pair,
        Err(err) => {
            eprintln!("dsh: cannot start the protocol writer: {err}");
            return ExitCode::from(1);
        }
    };
    let runtime = match launch::runtime() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("dsh: cannot start the async runtime: {err}");
            return ExitCode::from(1);
        }
    };
    let code = runtime.block_on(run(
        Server::new(launch.server_config(), writer.clone()),
        tokio::fs::File::from_std(protocol_in),
    ));
    writer.flush();
    drop(writer);
    drop(writer_thread);
    // The request reader may still sit in a blocking read; exit without
    // waiting for it.
    runtime.shutdown_background();
    ExitCode::from(code)
}

/// `dsh --print-schema`: the protocol's JSON Schema, pretty, on stdout.
fn print_schema() -> ExitCode {
    use std::io::Write;
    let schema = dsh_protocol::schema::protocol_schema();
    let text = match serde_json::to_string_pretty(&schema) {
        Ok(text) => text,
        Err(err) => {
            eprintln!("dsh: cannot write the schema: {err}");
            return ExitCode::from(1);
        }
    };
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("dsh: cannot write the schema: {err}");
            ExitCode::from(1)
        }
    }
}

/// Longest the sessions' `SessionEnd` hooks are waited for after a signal.
const SIGNAL_CLOSE_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Serves the requests read from `input` until `shutdown`, end of input or
/// a signal; returns the exit code.
async fn run(server: Server, input: tokio::fs::File) -> u8 {
    let Some(signal) = launch::stop_signal() else {
        return 1;
    };
    tokio::select! {
        exit = serve(&server, input) => match exit {
            Ok(exit) => {
                tracing::debug!("stopping: {exit:?}");
                0
            }
            Err(err) => {
                tracing::error!("reading the protocol input failed: {err}");
                server.shutdown();
                1
            }
        },
        interrupted = signal => {
            server.close_sessions(false, SIGNAL_CLOSE_LIMIT).await;
            server.shutdown();
            if interrupted { 130 } else { 0 }
        }
    }
}

/// Diagnostics go to stderr, filtered by `DSH_LOG` (default: warnings;
/// the ACP library's note on every error response it sends is left out,
/// the client has the error).
fn init_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("DSH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,agent_client_protocol=error"));
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(filter)
        .with_ansi(false)
        .init();
}
