//! Measures what one batch costs the session writer: `flush` (write only)
//! against `sync` (write + `fdatasync`), for both encodings.
//!
//! `cargo run --release -p dsh-session --example store_flush_cost [DIR]`
//! (DIR defaults to the system temporary directory; put it on the file
//! system that will hold `DSH_HOME`).

use dsh_session::store::{Encoding, SessionHeader, SessionStore, SessionWriter, StoreError};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const BATCHES: u32 = 500;
const PER_BATCH: u64 = 10;

fn run(home: &std::path::Path, encoding: Encoding, sync: bool) -> Result<Duration, StoreError> {
    let store = SessionStore::new(home);
    let id = format!("bench-{encoding:?}-{sync}");
    let header = SessionHeader::root(id, 1, Some("/bench".to_owned()));
    let mut writer = SessionWriter::create(&store, &header, encoding)?;
    let pad = "lorem ipsum dolor sit amet ".repeat(8);
    let mut seq = 0u64;
    let mut total = Duration::ZERO;
    // The first batch creates the session; it is not counted.
    for batch in 0..=BATCHES {
        for _ in 0..PER_BATCH {
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = std::env::args_os()
        .nth(1)
        .map_or_else(std::env::temp_dir, PathBuf::from);
    let home = tempfile_dir(&base)?;
    println!(
        "{BATCHES} batches of {PER_BATCH} events (~300 bytes each) in {}",
        home.display()
    );
    for encoding in [Encoding::Zstd, Encoding::Plain] {
        let flush = run(&home, encoding, false)?;
        let sync = run(&home, encoding, true)?;
        println!(
            "{encoding:?}: flush {:>8.1} µs/batch, sync {:>8.1} µs/batch",
            flush.as_secs_f64() * 1e6,
            sync.as_secs_f64() * 1e6
        );
    }
    std::fs::remove_dir_all(&home)?;
    Ok(())
}

/// A fresh directory under `base`.
fn tempfile_dir(base: &std::path::Path) -> std::io::Result<PathBuf> {
    let dir = base.join(format!("dsh-store-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
