//! Resume: a session whose process died in the middle of a tool call is
//! read back from its store, repaired and restored (as the server's
//! `session/resume` does), and its next model request carries exactly the
//! history its log holds.

mod common;

use common::{Launch, Resumed, Rig, SESSION, idle, kinds, prompt};
use dsh_session::now_ms;
use dsh_session::store::{
    Encoding, SessionHeader, SessionReader, SessionWriter, repair_closers, resume_facts,
};
use serde_json::{Value, json};

#[tokio::test]
async fn a_restored_session_asks_the_model_with_exactly_its_stored_history() {
    let rig = Rig::new();
    let store = rig.store();
    let replies = json!([
        {"blocks": [{"text": "checking"}, {"tool_call": {"id": "call_1", "name": "gate"}}]},
        {"text": "welcome back"},
    ]);

    // Run 1, persisted: the process dies while the tool call runs. Dropping
    // the agent stops its loop without any closer, as a SIGKILL would.
    let cwd = rig.workspace.to_string_lossy().into_owned();
    let header = SessionHeader::root(SESSION, now_ms(), Some(cwd));
    let writer = SessionWriter::create(&store, &header, Encoding::Zstd).unwrap();
    let launch = Launch {
        writer: Some(writer),
        ..Launch::default()
    };
    let (agent, before) = rig.start(&rig.script("before", replies.clone()), launch);
    prompt(&agent, "first");
    before.until("tool/call").await;
    drop(agent);

    // Read back (without the lock, which the dead run's writer may still
    // hold): every published event is on disk as it was published.
    let location = store
        .locate(SESSION)
        .unwrap()
        .unwrap_or_else(|| panic!("session {SESSION} not stored"));
    let stored = SessionReader::read(&location).unwrap();
    let on_disk: Vec<Value> = stored
        .events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect();
    assert_eq!(on_disk, before.events());
    // Repair the interrupted turn, then rebuild the facts.
    let mut events = stored.events;
    let closers: Vec<_> = repair_closers(&events, now_ms())
        .into_iter()
        .enumerate()
        .map(|(n, closer)| {
            let event = closer.into_event(events.len() as u64 + n as u64, now_ms());
            event.to_raw().unwrap()
        })
        .collect();
    let closer_kinds: Vec<&str> = closers.iter().map(|c| c.kind.as_str()).collect();
    assert_eq!(
        closer_kinds,
        ["tool/result", "step/end", "turn/end", "session/end-seed"]
    );
    assert_eq!(closers[0].data["error"]["code"], "TOOL_OUTCOME_UNKNOWN");
    let repaired_result = closers[0].data["message"].clone();
    events.extend(closers);
    let facts = resume_facts(&events).unwrap();
    let next_seq = events.len() as u64;
    let last_time = events.last().map_or(0, |e| e.time);

    // Run 2: a new model plays the same scenario; it continues after the one
    // reply the history holds.
    let model = rig.script("after", replies);
    let resumed = Resumed {
        facts,
        next_seq,
        last_time,
    };
    let launch = Launch {
        resumed: Some(resumed),
        ..Launch::default()
    };
    let (agent, after) = rig.start(&model, launch);
    prompt(&agent, "second");
    idle(&agent).await;

    // Nothing restored is announced again: no system prompt, runtime
    // context, model context or title; the header says `resume`.
    assert_eq!(
        after.kinds(),
        kinds(&[
            "agent/inbox/spliced",
            "session.status running",
            "turn/start",
            "agent/inbox/spliced",
            "step/start",
            "user/message",
            "request/header",
            "assistant/message",
            "step/end",
            "turn/end",
            "session.status idle",
        ])
    );
    assert_eq!(after.events()[0]["seq"], json!(next_seq));
    assert_eq!(after.data("turn/start"), [json!({"turn": 2})]);
    assert_eq!(after.data("request/header")[0]["reason"], "resume");
    assert_eq!(
        after.data("assistant/message")[0]["message"]["content"],
        json!([{"type": "text", "text": "welcome back"}])
    );

    // The request: run 1's messages (the prompt, the runtime context, the
    // reply with its call; not the system prompt), the repaired result of
    // the interrupted call, then the new prompt.
    let mut history: Vec<Value> = before
        .events()
        .into_iter()
        .filter_map(|mut e| match e["type"].as_str() {
            Some("user/message") => Some(e["data"].take()),
            Some("assistant/message") => Some(e["data"]["message"].take()),
            _ => None,
        })
        .collect();
    assert_eq!(history.len(), 3);
    history.push(repaired_result);
    history.push(after.data("user/message")[0].clone());
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let sent: Vec<Value> = requests[0]
        .messages
        .iter()
        .map(|m| serde_json::to_value(&*m.get()).unwrap())
        .collect();
    assert_eq!(sent, history);
    let system = &before.data("system/message")[0]["message"]["content"][0]["text"];
    assert_eq!(requests[0].system, *system);
}
