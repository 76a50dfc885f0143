//! Resume cost of a long session: reading a 100 000-event log (zstd, as the
//! sdk profile writes it), computing the repair and the resume facts.

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_session::store::{
    Encoding, SessionHeader, SessionReader, SessionStore, SessionWriter, repair_closers,
    resume_facts,
};
use serde_json::json;

const EVENTS: u64 = 100_000;

/// Writes a session of `EVENTS` events in turns of 10: receipt, turn/start,
/// claim, step/start, user/message, assistant/message, step/end, turn/end…
fn write_session(store: &SessionStore) {
    let header = SessionHeader::root("bench-resume", 1, Some("/bench/ws".into()));
    let mut writer =
        SessionWriter::create(store, &header, Encoding::Zstd).unwrap_or_else(|e| panic!("{e}"));
    let mut seq = 0u64;
    let mut turn = 0u64;
    while seq < EVENTS {
        turn += 1;
        let id = format!("m-{turn}");
        let user = json!({"content": [{"type": "text", "text": format!("question {turn}")}], "source": {"kind": "user"}, "role": "user", "id": id});
        let assistant = json!({"role": "assistant", "content": [{"type": "text", "text": format!("answer {turn} with some words to make it realistic")}], "source": {"kind": "model", "provider": "scripted", "model": "echo"}, "id": format!("a-{turn}")});
        let turn_events = [
            (
                "agent/inbox/spliced",
                json!({"target": "next-turn", "start": 0, "inserted": [user.clone()]}),
                false,
            ),
            ("turn/start", json!({"turn": turn}), false),
            (
                "agent/inbox/spliced",
                json!({"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}),
                false,
            ),
            ("step/start", json!({"turn": turn, "step": 1}), false),
            ("user/message", user, true),
            (
                "assistant/message",
                json!({"turn": turn, "step": 1, "message": assistant, "stream": []}),
                true,
            ),
            ("step/end", json!({"turn": turn, "step": 1}), false),
            (
                "turn/end",
                json!({"turn": turn, "reason": {"kind": "completed"}}),
                false,
            ),
        ];
        for (kind, data, surfaced) in turn_events {
            if seq >= EVENTS {
                break;
            }
            let mut event = json!({"type": kind, "seq": seq, "time": 1_000 + seq, "data": data});
            if surfaced {
                event["surfaceOp"] = json!("append");
            }
            writer
                .append(&event.to_string())
                .unwrap_or_else(|e| panic!("{e}"));
            seq += 1;
        }
        if turn % 50 == 0 {
            writer.flush().unwrap_or_else(|e| panic!("{e}"));
        }
    }
    writer.close().unwrap_or_else(|e| panic!("{e}"));
}

fn resume(c: &mut Criterion) {
    let home = std::env::temp_dir().join(format!("dsh-bench-resume-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&home);
    let store = SessionStore::new(&home);
    write_session(&store);
    let location = store
        .locate("bench-resume")
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("session not written"));
    let mut group = c.benchmark_group("resume");
    group.sample_size(10);
    group.bench_function("read + repair + facts, 100k events", |b| {
        b.iter(|| {
            let stored = SessionReader::read(&location).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(stored.events.len() as u64, EVENTS);
            let closers = repair_closers(&stored.events, 0);
            let facts = resume_facts(&stored.events).unwrap_or_else(|e| panic!("{e}"));
            (closers.len(), facts.history.len())
        })
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&home);
}

criterion_group!(benches, resume);
criterion_main!(benches);
