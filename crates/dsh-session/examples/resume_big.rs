//! Resume cost of a big session log: time and peak memory.
//!
//! `cargo run --release -p dsh-session --example resume_big -- [MiB] [plain|zstd]`
//! writes a log of about `MiB` (default 1024) of turns shaped like the
//! official ones (a request header with its tool schemas, an assistant
//! message with its `stream`, a tool call run as a job, its result) in a
//! temporary directory, then resumes it in a fresh process of this example
//! (so the writing does not count): the whole-log read (`full`: every event
//! in memory, then repair and facts over the list) and the streaming scan
//! (`stream`); `RESUME_MODES=read` reads the events and drops them (the
//! cost of reading alone). Each reports the time, the peak resident memory (`VmHWM`)
//! and the resident memory left holding the restored facts (`VmRSS`). The
//! log is deleted at the end.

use dsh_protocol::catalog::SessionEvent;
use dsh_session::store::{
    Encoding, ResumeScan, SessionHeader, SessionLocation, SessionReader, SessionStore,
    SessionWriter, repair_closers, resume_facts,
};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;
use std::time::Instant;

const ID: &str = "resume-big";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--resume") {
        let [_, mode, home] = args.as_slice() else {
            return Err("usage: --resume full|stream HOME".into());
        };
        return resume(mode, Path::new(home));
    }
    let mib: u64 = args.first().map_or(Ok(1024), |a| a.parse())?;
    let encoding = match args.get(1).map(String::as_str) {
        None | Some("zstd") => Encoding::Zstd,
        Some("plain") => Encoding::Plain,
        Some(other) => return Err(format!("unknown encoding {other}").into()),
    };
    let home = tempfile::tempdir()?;
    let store = SessionStore::new(home.path());
    let started = Instant::now();
    let (events, turns) = write_log(&store, mib << 20, encoding)?;
    let location = store.locate(ID)?.ok_or("the log was not written")?;
    let size = std::fs::metadata(&location.file)?.len();
    println!(
        "log: {} ({:?}), {:.1} MiB on disk, {events} events, {turns} turns, written in {:.1} s",
        location.file.display(),
        encoding,
        size as f64 / 1048576.0,
        started.elapsed().as_secs_f64()
    );
    let modes = std::env::var("RESUME_MODES").unwrap_or_else(|_| "full,stream".into());
    for mode in modes.split(',') {
        let status = Command::new(std::env::current_exe()?)
            .args(["--resume", mode])
            .arg(home.path())
            .status()?;
        if !status.success() {
            return Err(format!("{mode}: {status}").into());
        }
    }
    Ok(())
}

/// One resume in this (fresh) process, reported on one line.
fn resume(mode: &str, home: &Path) -> Result<(), Box<dyn std::error::Error>> {
    let store = SessionStore::new(home);
    let location = store.locate(ID)?.ok_or("no log")?;
    let before = status_kib("VmHWM");
    let started = Instant::now();
    let (history, closers) = match mode {
        "full" => full(&location)?,
        "stream" => stream(&location)?,
        "read" => {
            let mut events = 0;
            SessionReader::read_each(&location, |_: SessionEvent| events += 1)?;
            (events, 0)
        }
        other => return Err(format!("unknown mode {other}").into()),
    };
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "{mode:>6}: {elapsed:6.2} s, peak RSS {:7.1} MiB (at start {:.1} MiB), RSS holding the facts {:7.1} MiB; {history} history messages (read: events), {closers} closers",
        status_kib("VmHWM") as f64 / 1024.0,
        before as f64 / 1024.0,
        status_kib("VmRSS") as f64 / 1024.0,
    );
    Ok(())
}

/// Every event read into memory, then repair and facts over the list.
fn full(location: &SessionLocation) -> Result<(usize, usize), Box<dyn std::error::Error>> {
    let stored = SessionReader::read(location)?;
    let closers = repair_closers(&stored.events, 0).len();
    let facts = resume_facts(&stored.events)?;
    drop(stored);
    let history = facts.history.len();
    // Measured while the facts are alive.
    std::hint::black_box(&facts);
    Ok((history, closers))
}

/// The streaming scan: one event at a time.
fn stream(location: &SessionLocation) -> Result<(usize, usize), Box<dyn std::error::Error>> {
    let mut scan = ResumeScan::new();
    SessionReader::read_each(location, |event: SessionEvent<Box<RawValue>>| {
        scan.push_raw(&event);
    })?;
    let (facts, closers) = scan.finish(0);
    let facts = facts?;
    let history = facts.history.len();
    std::hint::black_box(&facts);
    Ok((history, closers.len()))
}

/// `key` of /proc/self/status in KiB (0 where there is none).
fn status_kib(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Writes turns until the log holds about `target` uncompressed bytes;
/// the last turn is left open inside a tool call (so resume repairs it).
/// Returns the events and turns written.
fn write_log(
    store: &SessionStore,
    target: u64,
    encoding: Encoding,
) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let header = SessionHeader::root(ID, 1_796_008_646_846, Some("/bench/ws".into()));
    let mut writer = SessionWriter::create(store, &header, encoding)?;
    let mut log = Log {
        seq: 0,
        time: 1_796_008_646_851,
        bytes: 0,
    };
    let tools = tool_schemas();
    let mut turn = 0u64;
    while log.bytes < target {
        turn += 1;
        let open = log.bytes + 40_000 >= target;
        for line in turn_events(&mut log, turn, &tools, open) {
            writer.append(&line)?;
        }
        writer.flush()?;
    }
    writer.close()?;
    Ok((log.seq, turn))
}

/// Seq, time and size of what was written so far.
struct Log {
    seq: u64,
    time: u64,
    bytes: u64,
}

impl Log {
    /// The next event line.
    fn line(&mut self, kind: &str, data: Value, surfaced: bool, cites: Option<u64>) -> String {
        let mut event = json!({"type": kind, "seq": self.seq, "time": self.time, "data": data});
        if let Some(seq) = cites {
            event["sourceEventSeqs"] = json!([seq]);
        }
        if surfaced {
            event["surfaceOp"] = json!("append");
        }
        self.seq += 1;
        self.time += 3;
        let line = event.to_string();
        self.bytes += line.len() as u64 + 1;
        line
    }
}

/// The tool schemas a request header carries (about 6 KiB).
fn tool_schemas() -> Value {
    let tools: Vec<Value> = ["bash", "read", "write", "edit", "grep", "glob"]
        .iter()
        .map(|name| {
            json!({"name": name, "description": format!("{name}: {}", "Runs the tool with the given arguments and reports its output. ".repeat(12)), "parameters": {"type": "object", "properties": {"description": {"type": "string", "description": "What this call does, in a few words."}, "command": {"type": "string", "description": "The command line to run."}}, "required": ["command"]}})
        })
        .collect();
    Value::Array(tools)
}

/// One turn: prompt, request header, an assistant message calling bash
/// (with its stream), the job and the tool result, a final answer. With
/// `open`, the turn stops after the `tool/call`.
fn turn_events(log: &mut Log, turn: u64, tools: &Value, open: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let user = json!({"content": [{"type": "text", "text": format!("Please look at part {turn} of the project and fix what is wrong there.")}], "source": {"kind": "user"}, "role": "user", "id": format!("u-{turn}")});
    lines.push(log.line(
        "agent/inbox/spliced",
        json!({"target": "next-turn", "start": 0, "inserted": [user.clone()]}),
        false,
        None,
    ));
    lines.push(log.line("turn/start", json!({"turn": turn}), false, None));
    lines.push(log.line(
        "agent/inbox/spliced",
        json!({"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}),
        false,
        None,
    ));
    for step in 1..=2u64 {
        lines.push(log.line(
            "step/start",
            json!({"turn": turn, "step": step}),
            false,
            None,
        ));
        if step == 1 {
            lines.push(log.line("user/message", user.clone(), true, None));
        }
        if step == 1 {
            lines.push(log.line(
                "request/header",
                json!({"header": {"config": {"provider": "deepseek-official", "model": "deepseek-v4-flash", "maxTokens": 256000, "reasoningEffort": "high"}, "adapterDefaults": {"reasoningEffort": true, "maxTokens": true}, "tools": tools}, "reason": "initial"}),
                false,
                None,
            ));
        }
        let call_id = format!("call-{turn}-{step}");
        let (text, calls) = if step == 1 {
            (
                format!(
                    "I will inspect part {turn} first. {}",
                    "Looking at the files. ".repeat(10)
                ),
                true,
            )
        } else {
            (
                format!(
                    "Part {turn} is fixed. {}",
                    "The change keeps the behaviour and adds a test. ".repeat(20)
                ),
                false,
            )
        };
        let arguments =
            json!({"description": "List the files", "command": format!("ls -la part-{turn}")})
                .to_string();
        let mut content = vec![json!({"type": "text", "text": text})];
        if calls {
            content.push(
                json!({"type": "tool-call", "id": call_id, "name": "bash", "arguments": arguments}),
            );
        }
        let assistant = json!({"role": "assistant", "content": content, "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash", "replayState": {"response": {"kind": "deepseek-messages", "version": 1, "model": "deepseek-v4-flash"}, "blocks": [{"type": "text"}]}}, "id": format!("a-{turn}-{step}")});
        lines.push(log.line(
            "assistant/message",
            json!({"turn": turn, "step": step, "message": assistant, "usage": {"inputTokens": 14152, "outputTokens": 160, "totalTokens": 14312}, "stream": stream_of(&text, log.time)}),
            true,
            None,
        ));
        if calls {
            let call_seq = log.seq;
            lines.push(log.line(
                "tool/call",
                json!({"turn": turn, "step": step, "callId": call_id, "name": "bash", "arguments": arguments}),
                false,
                None,
            ));
            if open {
                return lines;
            }
            let job = json!({"jobId": format!("bash-{turn}"), "owner": ID, "kind": "bash", "label": "ls", "startedAt": log.time, "toolCall": {"callId": call_id, "rootCallId": call_id}});
            lines.push(log.line("job/registered", job.clone(), false, None));
            let mut settled = job;
            settled["finishedAt"] = json!(log.time);
            settled["status"] = json!("completed");
            settled["cause"] = json!("producer");
            settled["producerReported"] = json!(true);
            settled["detail"] = json!("exit code: 0");
            lines.push(log.line("job/settled", settled, false, None));
            let output: String = (0..30)
                .map(|i| {
                    format!(
                        "-rw-r--r-- 1 user user {:>6} Jan  1 00:00 file-{turn}-{i}.rs\n",
                        i * 97
                    )
                })
                .collect();
            lines.push(log.line(
                "tool/result",
                json!({"turn": turn, "step": step, "message": {"role": "tool", "source": {"kind": "tool", "callId": call_id}, "toolCallId": call_id, "content": [{"type": "text", "text": output}], "isError": false, "id": format!("r-{turn}")}, "meta": {"cwd": "/bench/ws"}}),
                true,
                Some(call_seq),
            ));
        }
        lines.push(log.line("step/end", json!({"turn": turn, "step": step}), false, None));
    }
    lines.push(log.line(
        "turn/end",
        json!({"turn": turn, "reason": {"kind": "completed"}}),
        false,
        None,
    ));
    lines
}

/// The `stream` of an assistant message saying `text`: its chunks several
/// times over (a long reasoning stream), as the official log records them.
fn stream_of(text: &str, time: u64) -> Value {
    let chars: Vec<char> = text.chars().collect();
    let texts: Vec<String> = chars.chunks(7).map(|c| c.iter().collect()).collect();
    let mut stream = vec![
        json!({"type": "chunk", "time": time, "chunk": {"type": "block-start", "index": 0, "blockType": "text"}}),
    ];
    for _ in 0..6 {
        let dt: Vec<u64> = (1..texts.len() as u64).map(|i| i % 3).collect();
        stream.push(
            json!({"type": "text-chunks", "time0": time, "index": 0, "dt": dt, "texts": texts}),
        );
    }
    stream.push(json!({"type": "chunk", "time": time, "chunk": {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}}}));
    stream.push(json!({"type": "chunk", "time": time, "chunk": {"type": "usage", "usage": {"inputTokens": 14152, "outputTokens": 160, "totalTokens": 14312}}}));
    stream.push(json!({"type": "chunk", "time": time, "chunk": {"type": "finish", "reason": {"kind": "stop"}}}));
    Value::Array(stream)
}
