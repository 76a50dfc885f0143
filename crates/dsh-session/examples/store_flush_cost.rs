//! Measures what writing costs the session log:
//!
//! * one batch through the session writer: `flush` (write only) against
//!   `sync` (write + `fdatasync`), for both encodings, in batches of 10
//!   events and of 1 event;
//! * one event through [`EventLog::append`] (serialise, write, notify: every
//!   event is written before it is notified), for both encodings, against a
//!   log without a writer.
//!
//! `cargo run --release -p dsh-session --example store_flush_cost [DIR]`
//! (DIR defaults to the system temporary directory; put it on the file
//! system that will hold `DSH_HOME`).

use dsh_protocol::catalog::{AssistantMessageEvent, EventDraft};
use dsh_session::store::{Encoding, SessionHeader, SessionStore, SessionWriter, StoreError};
use dsh_session::{EventBytes, EventLog, EventObserver, SessionStatus};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const BATCHES: u32 = 500;
const EVENTS: u32 = 5_000;

/// ≈300 bytes of text in each event.
fn pad() -> String {
    "lorem ipsum dolor sit amet ".repeat(8)
}

fn writer(home: &Path, encoding: Encoding, tag: &str) -> Result<SessionWriter, StoreError> {
    let store = SessionStore::new(home);
    let id = format!("bench-{encoding:?}-{tag}");
    let header = SessionHeader::root(id, 1, Some("/bench".to_owned()));
    SessionWriter::create(&store, &header, encoding)
}

/// Mean time of one `flush` (or `sync`) of `per_batch` events.
fn batch_cost(
    home: &Path,
    encoding: Encoding,
    per_batch: u64,
    sync: bool,
) -> Result<Duration, StoreError> {
    let mut writer = writer(home, encoding, &format!("{per_batch}-{sync}"))?;
    let pad = pad();
    let mut seq = 0u64;
    let mut total = Duration::ZERO;
    // The first batch creates the session; it is not counted.
    for batch in 0..=BATCHES {
        for _ in 0..per_batch {
            let line = format!(
                r#"{{"type":"assistant/message","seq":{seq},"time":{},"data":{{"turn":1,"step":1,"text":"{pad}"}},"surfaceOp":"append"}}"#,
                1_796_000_000_000 + seq
            );
            writer.append(&line)?;
            seq += 1;
        }
        let start = Instant::now();
        if sync {
            writer.sync()?;
        } else {
            writer.flush()?;
        }
        if batch > 0 {
            total += start.elapsed();
        }
    }
    writer.close()?;
    Ok(total / BATCHES)
}

/// Counts what it is told, as the server's publisher would frame it.
#[derive(Default)]
struct Counting(AtomicUsize);

impl EventObserver for Counting {
    fn on_event(&self, _session_id: &str, event: &EventBytes) {
        self.0.fetch_add(event.len(), Ordering::Relaxed);
    }
    fn on_status(&self, _session_id: &str, _status: SessionStatus) {}
}

/// Mean time of one [`EventLog::append`] of a ≈300-byte event.
fn append_cost(home: &Path, encoding: Option<Encoding>) -> Result<Duration, StoreError> {
    let observer = Arc::new(Counting::default());
    let mut log = EventLog::new("bench", Some(observer.clone() as Arc<dyn EventObserver>));
    if let Some(encoding) = encoding {
        log = log.with_writer(writer(home, encoding, "log")?);
    }
    let data = AssistantMessageEvent {
        turn: 1,
        step: 1,
        message: json!({"text": pad()}),
        usage: None,
        stream: json!([]),
    };
    // The first event creates the session; it is not counted.
    let _ = log.append(EventDraft::new(&data));
    let start = Instant::now();
    for _ in 0..EVENTS {
        let _ = log.append(EventDraft::new(&data));
    }
    let elapsed = start.elapsed();
    if let Some(err) = log.write_error() {
        return Err(StoreError::Io {
            action: "write",
            path: home.to_path_buf(),
            source: std::io::Error::other(err.to_string()),
        });
    }
    assert!(observer.0.load(Ordering::Relaxed) > 0);
    Ok(elapsed / EVENTS)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = std::env::args_os()
        .nth(1)
        .map_or_else(std::env::temp_dir, PathBuf::from);
    let home = tempfile_dir(&base)?;
    println!("in {} (events of ~300 bytes)", home.display());
    for encoding in [Encoding::Zstd, Encoding::Plain] {
        for per_batch in [10, 1] {
            let flush = batch_cost(&home, encoding, per_batch, false)?;
            let sync = batch_cost(&home, encoding, per_batch, true)?;
            println!(
                "{encoding:?}, {BATCHES} batches of {per_batch:>2}: flush {:>8.1} µs/batch, sync {:>8.1} µs/batch",
                flush.as_secs_f64() * 1e6,
                sync.as_secs_f64() * 1e6
            );
        }
    }
    for encoding in [None, Some(Encoding::Zstd), Some(Encoding::Plain)] {
        let cost = append_cost(&home, encoding)?;
        let name = encoding.map_or_else(|| "no log".to_owned(), |e| format!("{e:?} log"));
        println!(
            "EventLog::append, {name:>10}: {:>6.1} µs/event ({EVENTS} events)",
            cost.as_secs_f64() * 1e6
        );
    }
    std::fs::remove_dir_all(&home)?;
    Ok(())
}

/// A fresh directory under `base`.
fn tempfile_dir(base: &Path) -> std::io::Result<PathBuf> {
    let dir = base.join(format!("dsh-store-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
