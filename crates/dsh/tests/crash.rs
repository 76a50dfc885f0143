//! The wire never runs ahead of the log: the runtime is SIGKILLed at random
//! moments of a turn full of events that settle nothing (`job/registered`
//! while a command runs, `tool/call`, `step/start`), and every
//! `session.event` a client saw must be on disk with the same seq, type,
//! time and data; a fresh runtime then resumes the session, its repair must
//! not give a seen seq to another event, and a next turn must complete.
//!
//! `DSH_CRASH_KILLS` sets the number of kills (default [`DEFAULT_KILLS`]),
//! `DSH_CRASH_SEED` the seed of the random moments (printed on failure).

mod common;

use common::{Runtime, TempDir};
use dsh_session::store::{SessionReader, SessionStore, StoredSession};
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Kills when `DSH_CRASH_KILLS` is not set.
const DEFAULT_KILLS: u32 = 100;

/// The session every run plays.
const SESSION: &str = "crash";

/// One turn of four steps: each streams reasoning and text deltas, the
/// first three run a short command (so `job/registered` is notified while
/// it runs); then text-only replies for the turns after resume.
fn scenario() -> Value {
    let mut replies: Vec<Value> = (0..3)
        .map(|i| {
            json!({
                "reasoning": ["Let me ", "think ", "about ", format!("step {i}")],
                "text": ["I will ", "run a ", "command."],
                "blocks": [{"tool_call": {
                    "id": format!("call_{i}"),
                    "name": "bash",
                    "arguments": {"command": format!("sleep 0.02; echo step {i}"), "description": "a short command"},
                }}],
                "stop": "tool_use",
            })
        })
        .collect();
    replies.push(json!({"reasoning": ["All ", "done"], "text": ["Every ", "step ", "ran."]}));
    replies.extend((0..8).map(|i| json!({"text": ["after ", format!("resume {i}")]})));
    json!({"replies": replies})
}

/// One run's files: `DSH_HOME`, the workspace and the scenario.
struct Run {
    dir: TempDir,
}

impl Run {
    fn new() -> Self {
        let dir = TempDir::new("crash");
        std::fs::create_dir_all(dir.path().join("ws")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("scenario.json"), scenario().to_string())
            .unwrap_or_else(|e| panic!("{e}"));
        Self { dir }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// `dsh --profile sdk` on this run's `DSH_HOME`, initialized on its
    /// workspace and scenario.
    fn start(&self) -> Runtime {
        let home = self.home();
        let mut rt = Runtime::start_with("sdk", move |cmd| {
            cmd.env("DSH_HOME", home);
        });
        let init = rt.request(
            json!("init"),
            "initialize",
            json!({
                "cwd": self.dir.path().join("ws"),
                "provider": "scripted",
                "model": self.dir.path().join("scenario.json"),
            }),
        );
        assert!(init.get("result").is_some(), "initialize failed: {init}");
        rt
    }

    /// The stored log, if it exists yet.
    fn stored(&self) -> Option<StoredSession> {
        let location = SessionStore::new(self.home())
            .locate(SESSION)
            .unwrap_or_else(|e| panic!("locate: {e}"))?;
        Some(SessionReader::read(&location).unwrap_or_else(|e| panic!("read the log: {e}")))
    }
}

fn prompt(rt: &mut Runtime, id: &str, text: &str) {
    rt.send(
        &json!({"jsonrpc": "2.0", "id": id, "method": "session/prompt",
        "params": {"sessionId": SESSION, "contentBlocks": [{"type": "text", "text": text}]}}),
    );
}

/// The event of a `session.event` frame.
fn event_of(frame: &Value) -> Option<&Value> {
    (frame["method"] == "session.event").then(|| &frame["params"]["event"])
}

/// Every event of `stored` as JSON, by seq.
fn stored_json(stored: &StoredSession) -> Vec<Value> {
    stored
        .events
        .iter()
        .map(|event| serde_json::to_value(event).unwrap_or_else(|e| panic!("{e}")))
        .collect()
}

/// Plays the turn to its end without a kill; returns the events notified.
fn full_turn(run: &Run) -> Vec<Value> {
    let mut rt = run.start();
    prompt(&mut rt, "p", "go");
    let mut events = Vec::new();
    loop {
        let frame = rt.next();
        if let Some(event) = event_of(&frame) {
            events.push(event.clone());
            if event["type"] == "turn/end" {
                return events;
            }
        }
    }
}

/// One kill: after `after` notified events and `pause` more, SIGKILL; then
/// the checks. `ctx` names the run in failures.
fn kill_and_check(after: usize, pause: Duration, ctx: &str) {
    let run = Run::new();
    let mut rt = run.start();
    prompt(&mut rt, "p", "go");
    let mut seen = Vec::new();
    while seen.len() < after {
        let frame = rt.next();
        if let Some(event) = event_of(&frame) {
            seen.push(event.clone());
        }
    }
    let until = Instant::now() + pause;
    while Instant::now() < until {
        std::hint::spin_loop();
    }
    rt.signal("KILL");
    assert_eq!(rt.wait_exit(), None, "{ctx}: killed by a signal");
    // What the pipe still held was written by the runtime before it died:
    // a client reads it too.
    for line in rt.drain() {
        let frame: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        if let Some(event) = event_of(&frame) {
            seen.push(event.clone());
        }
    }
    drop(rt);

    // Every notified event is on disk, the same.
    let on_disk = run.stored().map(|s| stored_json(&s)).unwrap_or_default();
    for event in &seen {
        let seq = event["seq"].as_u64().unwrap_or(u64::MAX);
        let stored = usize::try_from(seq).ok().and_then(|i| on_disk.get(i));
        assert_eq!(
            stored,
            Some(event),
            "{ctx}: notified seq {seq} ({}) is not on disk as notified ({} events on disk)",
            event["type"],
            on_disk.len()
        );
    }

    // A fresh runtime resumes: the repair appends after every seen seq.
    let mut rt = run.start();
    let resumed = rt.request(json!("r"), "session/resume", json!({"sessionId": SESSION}));
    if seen.is_empty() && run.stored().is_none() {
        // Killed before anything was written: there is nothing to resume.
        assert!(resumed.get("error").is_some(), "{ctx}: {resumed}");
        return;
    }
    assert!(
        resumed.get("result").is_some(),
        "{ctx}: resume failed: {resumed}"
    );
    let repaired = run.stored().map(|s| stored_json(&s)).unwrap_or_default();
    for event in &seen {
        let seq = event["seq"].as_u64().unwrap_or(u64::MAX);
        let stored = usize::try_from(seq).ok().and_then(|i| repaired.get(i));
        assert_eq!(
            stored,
            Some(event),
            "{ctx}: after resume, seq {seq} is no longer the notified {}",
            event["type"]
        );
    }

    // A next turn works, and continues the seqs.
    prompt(&mut rt, "p2", "again");
    let mut next = Vec::new();
    loop {
        let frame = rt.next();
        if frame.get("id") == Some(&json!("p2")) {
            assert!(
                frame.get("result").is_some(),
                "{ctx}: prompt refused: {frame}"
            );
        }
        if let Some(event) = event_of(&frame) {
            next.push(event["seq"].as_u64().unwrap_or(u64::MAX));
            if event["type"] == "turn/end" {
                assert_eq!(
                    event["data"]["reason"]["kind"], "completed",
                    "{ctx}: {event}"
                );
                break;
            }
        }
    }
    let first = repaired.len() as u64;
    assert_eq!(
        next,
        (first..first + next.len() as u64).collect::<Vec<_>>(),
        "{ctx}: the next turn's seqs follow the repaired log"
    );
    rt.request(json!("bye"), "shutdown", json!({}));
    assert_eq!(rt.wait_exit(), Some(0), "{ctx}: shutdown");
}

/// Seconds since the epoch, as a default seed.
fn clock_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn env_number(name: &str) -> Option<u64> {
    let value = std::env::var(name).ok()?;
    Some(
        value
            .parse()
            .unwrap_or_else(|e| panic!("{name}={value:?}: {e}")),
    )
}

#[test]
fn every_notified_event_survives_a_sigkill_at_a_random_moment() {
    let kills = env_number("DSH_CRASH_KILLS").map_or(DEFAULT_KILLS, |n| n as u32);
    let seed = env_number("DSH_CRASH_SEED").unwrap_or_else(clock_seed);
    let mut rng = fastrand::Rng::with_seed(seed);

    let calibration = Run::new();
    let started = Instant::now();
    let turn = full_turn(&calibration);
    let turn_time = started.elapsed();
    let kinds: Vec<&str> = turn.iter().filter_map(|e| e["type"].as_str()).collect();
    for kind in ["job/registered", "tool/call", "step/start", "tool/result"] {
        assert!(
            kinds.contains(&kind),
            "the scenario emits {kind}: {kinds:?}"
        );
    }
    // A pause up to the mean time between two events moves the kill
    // anywhere between them.
    let gap_us = (turn_time.as_micros() / turn.len() as u128).max(1) as u64;
    let started = Instant::now();
    for i in 0..kills {
        let after = rng.usize(0..=turn.len());
        let pause = Duration::from_micros(rng.u64(0..=gap_us));
        let ctx = format!(
            "DSH_CRASH_SEED={seed}, kill {i}: after {after} of {} events + {pause:?}",
            turn.len()
        );
        kill_and_check(after, pause, &ctx);
    }
    eprintln!(
        "{kills} kills in {:.1?} (seed {seed}, {} events per turn)",
        started.elapsed(),
        turn.len()
    );
}
