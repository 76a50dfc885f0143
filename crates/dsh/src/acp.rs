//! `dsh acp [--provider P] [--model M] [--mcp F]…`: the Agent Client
//! Protocol on stdio (see `dsh_acp`).
//!
//! The route of new sessions: `--provider`, else `scripted` when
//! `--model` names a scenario file, else `deepseek-official`; `--model`,
//! else `echo` for `scripted` and `deepseek-v4-flash` otherwise. As for
//! the SDK profiles, stdin and stdout are taken as the protocol channel
//! first, so nothing else in the process (a tool, a child) can reach them.

use crate::cli::AcpArgs;
use crate::launch::Launch;
use dsh_acp::AcpConfig;
use std::process::ExitCode;

/// Serves ACP until the client closes its input or a signal; exit 0 then.
pub fn run(mut launch: Box<Launch>, args: AcpArgs) -> ExitCode {
    let (provider, model) =
        match launch.server_route(args.provider.as_deref(), args.model.as_deref(), &args.mcp) {
            Ok(route) => route,
            Err(err) => {
                eprintln!("dsh: {err}");
                return ExitCode::from(1);
            }
        };
    let channel = crate::stdio::take_protocol_stdin()
        .and_then(|input| crate::stdio::take_protocol_stdout().map(|output| (input, output)));
    let (input, output) = match channel {
        Ok(pair) => pair,
        Err(err) => {
            eprintln!("dsh: cannot set up the protocol channel: {err}");
            return ExitCode::from(1);
        }
    };
    let runtime = match crate::launch::runtime() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("dsh: cannot start the async runtime: {err}");
            return ExitCode::from(1);
        }
    };
    let config = AcpConfig {
        server: launch.server_config(),
        provider,
        model,
    };
    let code = runtime.block_on(async move {
        let Some(signal) = crate::launch::stop_signal() else {
            return 1;
        };
        let interrupted = std::sync::atomic::AtomicBool::new(false);
        let stop = async {
            if signal.await {
                interrupted.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        };
        let served = dsh_acp::serve(
            config,
            tokio::fs::File::from_std(input),
            tokio::fs::File::from_std(output),
            stop,
        )
        .await;
        match served {
            Err(err) => {
                tracing::error!("{err}");
                1
            }
            Ok(()) if interrupted.load(std::sync::atomic::Ordering::Relaxed) => 130,
            Ok(()) => 0,
        }
    });
    // A blocking read of stdin may still be in flight; do not wait for it.
    runtime.shutdown_background();
    ExitCode::from(code)
}
