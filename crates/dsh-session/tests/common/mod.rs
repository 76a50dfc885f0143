//! Helpers shared by the store's integration tests.

#![allow(dead_code)]

use dsh_protocol::catalog::SessionEvent;
use dsh_session::store::{
    Encoding, SessionHeader, SessionLocation, SessionReader, SessionStore, StoredSession,
    encode_session_id, project_key,
};
use std::fs;
use std::path::{Path, PathBuf};

/// The official transcripts the repository holds
/// (`tests/fixtures/official-transcripts`); fails when absent.
pub fn transcripts() -> PathBuf {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/official-transcripts");
    assert!(
        dir.is_dir(),
        "reference transcripts missing at {}",
        dir.display()
    );
    dir
}

/// One official session log of the transcripts.
pub struct Transcript {
    /// Scenario folder name.
    pub scenario: String,
    /// The decompressed log file.
    pub path: PathBuf,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

impl Transcript {
    /// The lines (without their `\n`).
    pub fn lines(&self) -> Vec<&str> {
        std::str::from_utf8(&self.bytes)
            .unwrap_or_else(|e| panic!("{}: {e}", self.path.display()))
            .lines()
            .collect()
    }

    /// The parsed header.
    pub fn header(&self) -> SessionHeader {
        let first = self.lines().first().copied().unwrap_or_default().to_owned();
        serde_json::from_str(&first).unwrap_or_else(|e| panic!("{}: {e}", self.path.display()))
    }
}

/// Every `session-*.v4.jsonl` of every scenario, sorted.
pub fn all_logs() -> Vec<Transcript> {
    let mut logs = Vec::new();
    let mut scenarios: Vec<_> = fs::read_dir(transcripts())
        .unwrap_or_else(|e| panic!("{e}"))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    scenarios.sort();
    for scenario in scenarios {
        let mut files: Vec<_> = fs::read_dir(&scenario)
            .unwrap_or_else(|e| panic!("{e}"))
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("session-") && n.ends_with(".v4.jsonl"))
            })
            .collect();
        files.sort();
        for path in files {
            let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            logs.push(Transcript {
                scenario: scenario
                    .file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
                    .to_owned(),
                path,
                bytes,
            });
        }
    }
    assert!(
        logs.len() >= 30,
        "expected the official session logs, found {}",
        logs.len()
    );
    logs
}

/// The official log of `scenario` whose session id is `id`.
pub fn log(scenario: &str, id: &str) -> Transcript {
    let path = transcripts()
        .join(scenario)
        .join(format!("session-{id}.v4.jsonl"));
    let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    Transcript {
        scenario: scenario.to_owned(),
        path,
        bytes,
    }
}

/// The parsed events of `transcript`.
pub fn events(transcript: &Transcript) -> Vec<SessionEvent> {
    transcript.lines()[1..]
        .iter()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}")))
        .collect()
}

/// A fresh temporary directory.
pub fn temp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"))
}

/// Lays `bytes` down as the log of `header`'s session in `store`, the way
/// the official runtime stores it.
pub fn install(
    store: &SessionStore,
    header: &SessionHeader,
    encoding: Encoding,
    bytes: &[u8],
) -> SessionLocation {
    let location = store.location_for(header.cwd.as_deref().map(Path::new), &header.id, encoding);
    fs::create_dir_all(&location.dir).unwrap_or_else(|e| panic!("{e}"));
    fs::write(location.lock_file(), b"").unwrap_or_else(|e| panic!("{e}"));
    fs::write(&location.file, bytes).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        location
            .dir
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str()),
        Some(project_key(header.cwd.as_deref().map(Path::new)).as_str())
    );
    assert_eq!(
        location.dir.file_name().and_then(|n| n.to_str()),
        Some(encode_session_id(&header.id).as_str())
    );
    location
}

/// Reads `location`, panicking on errors.
pub fn read(location: &SessionLocation) -> StoredSession {
    SessionReader::read(location).unwrap_or_else(|e| panic!("{}: {e}", location.file.display()))
}

/// Compact JSON of `event` (official key order).
pub fn line(event: &SessionEvent) -> String {
    serde_json::to_string(event).unwrap_or_else(|e| panic!("{e}"))
}
