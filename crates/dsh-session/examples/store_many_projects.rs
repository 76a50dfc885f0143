//! Measures what the number of project directories under one `DSH_HOME`
//! costs a new session: the time to claim and first-write a new session
//! (what `session/prompt` on a new id does) with 0 and with 10,000 empty
//! project directories, and, for comparison, one scan of every project
//! directory (what a lookup of an id the index does not know costs, and
//! what every creation cost before the index).
//!
//! `cargo run --release -p dsh-session --example store_many_projects [DIR]`
//! (DIR defaults to the system temporary directory; a temporary `DSH_HOME`
//! is made inside it and removed at the end).

use dsh_session::store::{Encoding, SessionHeader, SessionStore, SessionWriter, StoreError};
use std::path::PathBuf;
use std::time::{Duration, Instant};

const PROJECTS: usize = 10_000;
const SESSIONS: u32 = 200;

/// Median time of creating `SESSIONS` new sessions (claim + first write).
fn create_cost(store: &SessionStore, tag: &str) -> Result<Duration, StoreError> {
    let mut times = Vec::new();
    for n in 0..SESSIONS {
        let id = format!("{tag}-{n}");
        let header = SessionHeader::root(&id, 1_796_008_646_846, Some("/bench/ws".to_owned()));
        let start = Instant::now();
        let mut writer = SessionWriter::create(store, &header, Encoding::Zstd)?;
        writer.append(r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#)?;
        writer.flush()?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok(times[times.len() / 2])
}

/// Median time of looking up an id that is on disk nowhere and not
/// indexed: one scan of every project directory.
fn scan_cost(store: &SessionStore) -> Result<Duration, StoreError> {
    let mut times = Vec::new();
    for n in 0..20 {
        let start = Instant::now();
        let found = store.locate(&format!("absent-{n}"))?;
        times.push(start.elapsed());
        assert!(found.is_none());
    }
    times.sort();
    Ok(times[times.len() / 2])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let base = std::env::args()
        .nth(1)
        .map_or_else(std::env::temp_dir, PathBuf::from);
    let home = tempfile::tempdir_in(base)?;
    let store = SessionStore::new(home.path());
    // The first claim builds the index (a scan of nothing here).
    let empty = create_cost(&store, "empty")?;
    let empty_scan = scan_cost(&store)?;
    for n in 0..PROJECTS {
        std::fs::create_dir_all(home.path().join(format!("sessions/--project-{n}--")))?;
    }
    let many = create_cost(&store, "many")?;
    let many_scan = scan_cost(&store)?;
    // A DSH_HOME whose index is not built yet: the first claim pays one scan.
    std::fs::remove_dir_all(home.path().join("session-index"))?;
    let start = Instant::now();
    create_cost_once(&store)?;
    let first = start.elapsed();
    println!("new session (claim + first write), median of {SESSIONS}:");
    println!("  0 project directories:      {empty:?}");
    println!("  {PROJECTS} project directories: {many:?}");
    println!("lookup of an unindexed id (scan of every project directory), median of 20:");
    println!("  0 project directories:      {empty_scan:?}");
    println!("  {PROJECTS} project directories: {many_scan:?}");
    println!("first new session in a DSH_HOME without an index (builds it): {first:?}");
    Ok(())
}

/// One creation (the one that builds a missing index).
fn create_cost_once(store: &SessionStore) -> Result<(), StoreError> {
    let header = SessionHeader::root("rebuild", 1_796_008_646_846, Some("/bench/ws".to_owned()));
    let mut writer = SessionWriter::create(store, &header, Encoding::Zstd)?;
    writer.append(r#"{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}}"#)?;
    writer.flush()
}
