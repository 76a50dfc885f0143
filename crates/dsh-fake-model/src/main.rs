//! `dsh-fake-model --scenario <file> [--record <file.jsonl>]`: serves a
//! scenario on an ephemeral 127.0.0.1 port, prints `{"baseUrl": …}` as its
//! first stdout line, appends every request to the record file, and exits
//! when its stdin closes.

use dsh_fake_model::{FakeServer, RequestHook};
use dsh_llm::scripted::Scenario;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tokio::io::AsyncReadExt;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let (mut scenario, mut record) = (None, None);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--scenario", Some(path)) => scenario = Some(PathBuf::from(path)),
            ("--record", Some(path)) => record = Some(PathBuf::from(path)),
            _ => {
                eprintln!("usage: dsh-fake-model --scenario <file> [--record <file.jsonl>]");
                return ExitCode::from(2);
            }
        }
    }
    let Some(scenario) = scenario else {
        eprintln!("dsh-fake-model: --scenario is required");
        return ExitCode::from(2);
    };
    let scenario = match Scenario::load(&scenario) {
        Ok(s) => s,
        Err(err) => {
            eprintln!("dsh-fake-model: {err}");
            return ExitCode::from(2);
        }
    };
    let on_request: Option<RequestHook> = record.map(|path| {
        Box::new(move |request: &serde_json::Value| {
            // Lone surrogates go back to `\udXXX` escapes, as sent.
            let line = dsh_protocol::surrogates::decode(format!("{request}\n").into_bytes());
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(&line));
            if let Err(err) = written {
                eprintln!("dsh-fake-model: cannot record to {}: {err}", path.display());
            }
        }) as RequestHook
    });
    let server = match FakeServer::start(scenario, on_request).await {
        Ok(server) => server,
        Err(err) => {
            eprintln!("dsh-fake-model: cannot listen: {err}");
            return ExitCode::from(1);
        }
    };
    println!("{}", serde_json::json!({"baseUrl": server.base_url()}));
    let _ = std::io::stdout().flush();
    let mut sink = Vec::new();
    let _ = tokio::io::stdin().read_to_end(&mut sink).await;
    ExitCode::SUCCESS
}
