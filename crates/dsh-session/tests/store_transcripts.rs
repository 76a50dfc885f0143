//! The store against the official runtime's session logs and `DSH_HOME`
//! trees in `tests/fixtures/official-transcripts`.

mod common;

use common::{Transcript, all_logs, events, install, line, log, read, temp, transcripts};
use dsh_protocol::catalog::{SessionEvent, SurfaceOp};
use dsh_session::store::{
    Encoding, SessionHeader, SessionReader, SessionStore, SessionWriter, encode_session_id,
    project_key, repair_closers, resume_facts,
};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::path::Path;

/// `(project dir, session dir)` of every session directory in a
/// `dsh-home-tree.txt`, with the files listed inside it.
fn tree_sessions(tree: &str) -> Vec<(String, String, Vec<String>)> {
    let mut sessions: Vec<(String, String, Vec<String>)> = Vec::new();
    for entry in tree.lines() {
        let path = entry.split("  (").next().unwrap_or(entry);
        let Some(rest) = path.strip_prefix("sessions/") else {
            continue;
        };
        let parts: Vec<&str> = rest.trim_end_matches('/').split('/').collect();
        match parts.as_slice() {
            [project, session] if path.ends_with('/') => {
                sessions.push(((*project).to_owned(), (*session).to_owned(), Vec::new()));
            }
            [project, session, file] => {
                let found = sessions
                    .iter_mut()
                    .find(|(p, s, _)| p == project && s == session);
                match found {
                    Some((_, _, files)) => files.push(entry.to_owned()),
                    None => panic!("file before its directory: {entry}"),
                }
                assert!(!file.is_empty());
            }
            _ => {}
        }
    }
    sessions
}

#[test]
fn names_match_every_session_directory_of_the_transcripts() {
    let logs = all_logs();
    let mut checked = 0;
    for scenario in fs::read_dir(transcripts()).unwrap() {
        let scenario = scenario.unwrap().path();
        let tree_file = scenario.join("dsh-home-tree.txt");
        let Ok(tree) = fs::read_to_string(&tree_file) else {
            continue;
        };
        let name = scenario
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        for (project, session, files) in tree_sessions(&tree) {
            // The log of that session, by its encoded id.
            let matching: Vec<&Transcript> = logs
                .iter()
                .filter(|t| t.scenario == name && encode_session_id(&t.header().id) == session)
                .collect();
            assert_eq!(matching.len(), 1, "{name}: {project}/{session}");
            let header = matching[0].header();
            assert_eq!(
                project_key(header.cwd.as_deref().map(Path::new)),
                project,
                "{name}: project key of {:?}",
                header.cwd
            );
            // What the official runtime leaves in a session directory: an
            // empty lock and the zstd log (profile sdk).
            let names: BTreeSet<String> = files
                .iter()
                .map(|f| f.rsplit('/').next().unwrap_or_default().to_owned())
                .collect();
            let expected: BTreeSet<String> = [
                "session.lock  (0 bytes)".to_owned(),
                format!(
                    "session.v4.jsonl.zstd  ({}",
                    files
                        .iter()
                        .find(|f| f.contains("session.v4.jsonl.zstd"))
                        .and_then(|f| f.split("zstd  (").nth(1))
                        .unwrap_or_default()
                ),
            ]
            .into();
            assert_eq!(names, expected, "{name}: {session}");
            checked += 1;
        }
    }
    assert_eq!(
        checked,
        logs.len(),
        "every log has its directory and vice versa"
    );
}

#[test]
fn every_official_header_round_trips_byte_for_byte() {
    for transcript in all_logs() {
        let first = transcript.lines()[0].to_owned();
        let header = transcript.header();
        assert_eq!(
            serde_json::to_string(&header).unwrap_or_default(),
            first,
            "{}",
            transcript.path.display()
        );
    }
    let child = log("subagent", "77f213c4-6d86-481e-8f30-13237ea2021b").header();
    assert_eq!(
        child.parent_session.as_deref(),
        Some("session-subagent-parent")
    );
    assert_eq!(child.origin.as_deref(), Some("subagent"));
    assert_eq!(child.delegation_depth, 1);
}

#[test]
fn every_official_log_reads_in_both_encodings() {
    for transcript in all_logs() {
        let header = transcript.header();
        let lines = transcript.lines();
        // Plain, as the transcripts hold it.
        let home = temp();
        let store = SessionStore::new(home.path());
        let location = install(&store, &header, Encoding::Plain, &transcript.bytes);
        assert_eq!(
            store.locate(&header.id).ok().flatten().as_ref(),
            Some(&location)
        );
        let stored = read(&location);
        assert!(!stored.torn_tail);
        assert_eq!(stored.header, header);
        assert_eq!(stored.events.len(), lines.len() - 1);
        for (event, original) in stored.events.iter().zip(&lines[1..]) {
            assert_eq!(&line(event), original, "{}", transcript.path.display());
        }
        // zstd, one frame per batch of up to 7 lines, as the sdk profile
        // stores it.
        let mut compressed = Vec::new();
        for batch in lines.chunks(7) {
            let mut text = batch.join("\n");
            text.push('\n');
            compressed.extend(zstd::bulk::compress(text.as_bytes(), 3).unwrap());
        }
        let home = temp();
        let store = SessionStore::new(home.path());
        let location = install(&store, &header, Encoding::Zstd, &compressed);
        let again = read(&location);
        assert_eq!(again.events, stored.events);
        assert!(!again.torn_tail);
    }
}

#[test]
fn a_zstd_stream_frame_without_content_size_reads_too() {
    let transcript = log("two_turns", "session-two-turns");
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 19).unwrap();
    encoder.write_all(&transcript.bytes).unwrap();
    let compressed = encoder.finish().unwrap();
    let home = temp();
    let store = SessionStore::new(home.path());
    let location = install(&store, &transcript.header(), Encoding::Zstd, &compressed);
    assert_eq!(read(&location).events, events(&transcript));
}

/// The first `count` events of a transcript.
fn cut(scenario: &str, id: &str, count: usize) -> Vec<SessionEvent> {
    let mut events = events(&log(scenario, id));
    events.truncate(count);
    events
}

/// A repair closer as plain JSON, to compare with expectations.
#[derive(Debug, Clone, PartialEq)]
struct Closer {
    kind: String,
    time: u64,
    data: Value,
    source_event_seqs: Option<Vec<u64>>,
    surface_append: bool,
}

impl Closer {
    fn into_event(self, seq: u64) -> SessionEvent {
        SessionEvent {
            kind: self.kind,
            seq,
            time: self.time,
            data: self.data,
            source_event_seqs: self.source_event_seqs,
            surface_op: self.surface_append.then_some(SurfaceOp::APPEND),
            ignorable: None,
        }
    }
}

/// The repair closers of `events`, as plain JSON.
fn closers(events: &[SessionEvent], now: u64) -> Vec<Closer> {
    repair_closers(events, now)
        .into_iter()
        .map(|draft| Closer {
            kind: draft.kind().to_owned(),
            time: draft
                .time
                .unwrap_or_else(|| panic!("closers carry their time")),
            data: serde_json::to_value(&draft.data).unwrap_or_else(|e| panic!("{e}")),
            source_event_seqs: draft.source_event_seqs,
            surface_append: draft.surface_op == Some(SurfaceOp::APPEND),
        })
        .collect()
}

/// A closer without cited seqs or surfaceOp.
fn plain_draft(kind: &str, time: u64, data: Value) -> Closer {
    Closer {
        kind: kind.to_owned(),
        time,
        data,
        source_event_seqs: None,
        surface_append: false,
    }
}

fn tool_result(call: &str, seq: u64, text_has: &str, error: (&str, &str), drafts: &Closer) {
    assert_eq!(drafts.kind, "tool/result");
    assert!(drafts.surface_append);
    let data = &drafts.data;
    let message = &data["message"];
    assert_eq!(
        message["id"],
        json!(format!("interrupted-tool-result-{call}-{seq}"))
    );
    assert_eq!(message["role"], json!("tool"));
    assert_eq!(message["source"], json!({"kind": "tool", "callId": call}));
    assert_eq!(message["toolCallId"], json!(call));
    assert_eq!(message["isError"], json!(true));
    let text = message["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains(text_has), "{text}");
    assert_eq!(data["error"], json!({"name": error.0, "code": error.1}));
    let keys: Vec<&str> = data
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(keys, ["turn", "step", "message", "error"]);
    let message_keys: Vec<&str> = message
        .as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default();
    assert_eq!(
        message_keys,
        ["role", "source", "toolCallId", "content", "isError", "id"]
    );
}

const NOW: u64 = 1_900_000_000_000;

#[test]
fn repair_after_a_recorded_tool_call() {
    // tool_bash cut right after its tool/call (seq 15).
    let events = cut("tool_bash", "session-tool-bash", 16);
    let drafts = closers(&events, NOW);
    let t = 1796008602312;
    assert_eq!(
        drafts[1..],
        [
            plain_draft("step/end", t, json!({"turn": 1, "step": 1})),
            plain_draft(
                "turn/end",
                t,
                json!({"turn": 1, "reason": {"kind": "interrupted"}})
            ),
            plain_draft("session/end-seed", NOW, json!({})),
        ]
    );
    tool_result(
        "toolu_fake_bash_1",
        16,
        "outcome is unknown",
        ("ToolOutcomeUnknownError", "TOOL_OUTCOME_UNKNOWN"),
        &drafts[0],
    );
    assert_eq!(drafts[0].source_event_seqs, Some(vec![15]));
    assert_eq!(drafts[0].time, t);
    assert_eq!(drafts[0].data["turn"], json!(1));
    assert_eq!(drafts[0].data["step"], json!(1));
    // After the job events too: same closers, later seqs.
    let events = cut("tool_bash", "session-tool-bash", 18);
    let drafts = closers(&events, NOW);
    assert_eq!(drafts.len(), 4);
    tool_result(
        "toolu_fake_bash_1",
        18,
        "not known to be safe",
        ("ToolOutcomeUnknownError", "TOOL_OUTCOME_UNKNOWN"),
        &drafts[0],
    );
    assert_eq!(drafts[0].time, 1796008602380);
}

#[test]
fn repair_before_the_tool_call_was_recorded() {
    // tool_bash cut after the assistant/message carrying the call (seq 14).
    let events = cut("tool_bash", "session-tool-bash", 15);
    let drafts = closers(&events, NOW);
    let kinds: Vec<&str> = drafts.iter().map(|d| d.kind.as_str()).collect();
    assert_eq!(
        kinds,
        ["tool/result", "step/end", "turn/end", "session/end-seed"]
    );
    tool_result(
        "toolu_fake_bash_1",
        15,
        "safe to retry",
        ("ToolNotStartedError", "TOOL_NOT_STARTED"),
        &drafts[0],
    );
    assert_eq!(drafts[0].source_event_seqs, None);
    assert_eq!(drafts[0].time, 1796008602310);
}

#[test]
fn repair_after_the_tool_result_closes_step_and_turn() {
    let events = cut("tool_bash", "session-tool-bash", 19);
    let kinds: Vec<String> = closers(&events, NOW).into_iter().map(|d| d.kind).collect();
    assert_eq!(kinds, ["step/end", "turn/end", "session/end-seed"]);
    // Between steps: only the turn is open.
    let events = cut("tool_bash", "session-tool-bash", 20);
    let drafts = closers(&events, NOW);
    let kinds: Vec<&str> = drafts.iter().map(|d| d.kind.as_str()).collect();
    assert_eq!(kinds, ["turn/end", "session/end-seed"]);
    assert_eq!(drafts[0].time, 1796008602384);
}

#[test]
fn repair_of_a_three_call_step_cut_mid_way() {
    // tool_parallel cut after the second call's tool/call (seq 19): the first
    // call has its result, the second's outcome is unknown, the third never
    // started.
    let events = cut("tool_parallel", "session-tool-parallel", 20);
    let drafts = closers(&events, NOW);
    let kinds: Vec<&str> = drafts.iter().map(|d| d.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "tool/result",
            "tool/result",
            "step/end",
            "turn/end",
            "session/end-seed"
        ]
    );
    tool_result(
        "toolu_par_2",
        20,
        "outcome is unknown",
        ("ToolOutcomeUnknownError", "TOOL_OUTCOME_UNKNOWN"),
        &drafts[0],
    );
    assert_eq!(drafts[0].source_event_seqs, Some(vec![19]));
    tool_result(
        "toolu_par_3",
        21,
        "safe to retry",
        ("ToolNotStartedError", "TOOL_NOT_STARTED"),
        &drafts[1],
    );
    assert_eq!(drafts[1].source_event_seqs, None);
}

#[test]
fn repair_in_the_middle_of_a_retry() {
    // error_500 cut after its first llm/retry (seq 14): the retry-started and
    // later events are lost, as in the spec's observed tail.
    let events = cut("error_500", "session-error-500", 15);
    let drafts = closers(&events, NOW);
    let t = 1796008620605;
    assert_eq!(
        drafts,
        [
            plain_draft("step/end", t, json!({"turn": 1, "step": 1})),
            plain_draft(
                "turn/end",
                t,
                json!({"turn": 1, "reason": {"kind": "interrupted"}})
            ),
            plain_draft("session/end-seed", NOW, json!({})),
        ]
    );
}

#[test]
fn repair_of_closed_logs_is_the_seed_alone() {
    // What the official runtime appended on resume of a completed turn.
    let full = events(&log("resume", "session-resume"));
    let before = &full[..17];
    let drafts = closers(before, NOW);
    assert_eq!(drafts.len(), 1);
    let seed = drafts[0].clone().into_event(17);
    assert_eq!(seed.kind, full[17].kind);
    assert_eq!(seed.data, full[17].data);
    assert_eq!(seed.seq, full[17].seq);
    for transcript in all_logs() {
        let events = events(&transcript);
        let drafts = closers(&events, NOW);
        let kinds: Vec<&str> = drafts.iter().map(|d| d.kind.as_str()).collect();
        assert_eq!(kinds, ["session/end-seed"], "{}", transcript.path.display());
    }
}

#[test]
fn repaired_logs_are_written_and_read_back() {
    let transcript = log("tool_bash", "session-tool-bash");
    let header = transcript.header();
    let lines = transcript.lines();
    // The log as a crash after the tool/call left it (plain and zstd).
    for encoding in [Encoding::Plain, Encoding::Zstd] {
        let mut text = lines[..17].join("\n");
        text.push('\n');
        let bytes = match encoding {
            Encoding::Plain => text.into_bytes(),
            Encoding::Zstd => zstd::bulk::compress(text.as_bytes(), 3).unwrap(),
        };
        let home = temp();
        let store = SessionStore::new(home.path());
        let location = install(&store, &header, encoding, &bytes);
        let (mut writer, stored) = SessionWriter::resume(&location).unwrap();
        let repaired = closers(&stored.events, NOW);
        for (seq, draft) in (stored.next_seq()..).zip(repaired) {
            writer.append_event(&draft.into_event(seq)).unwrap();
        }
        writer.sync().unwrap();
        drop(writer);
        let again = SessionReader::read(&location).unwrap();
        assert_eq!(again.events.len(), 20);
        assert_eq!(again.events[..16], stored.events[..]);
        let written = fs::read(&location.file).unwrap();
        let plain = match encoding {
            Encoding::Plain => written,
            Encoding::Zstd => zstd::stream::decode_all(&written[..]).unwrap(),
        };
        let text = String::from_utf8(plain).unwrap();
        let tail: Vec<&str> = text.lines().skip(17).collect();
        assert_eq!(
            tail[1],
            r#"{"type":"step/end","seq":17,"time":1796008602312,"data":{"turn":1,"step":1}}"#
        );
        assert_eq!(
            tail[2],
            r#"{"type":"turn/end","seq":18,"time":1796008602312,"data":{"turn":1,"reason":{"kind":"interrupted"}}}"#
        );
        assert_eq!(
            tail[3],
            format!(r#"{{"type":"session/end-seed","seq":19,"time":{NOW},"data":{{}}}}"#)
        );
        assert!(
            tail[0].starts_with(r#"{"type":"tool/result","seq":16,"time":1796008602312,"data":{"turn":1,"step":1,"message":{"role":"tool","source":{"kind":"tool","callId":"toolu_fake_bash_1"},"toolCallId":"toolu_fake_bash_1","content":[{"type":"text","text":"#),
            "{}",
            tail[0]
        );
        assert!(
            tail[0].ends_with(r#""isError":true,"id":"interrupted-tool-result-toolu_fake_bash_1-16"},"error":{"name":"ToolOutcomeUnknownError","code":"TOOL_OUTCOME_UNKNOWN"}},"sourceEventSeqs":[15],"surfaceOp":"append"}"#),
            "{}",
            tail[0]
        );
        // The repaired log is closed: resuming again only seeds.
        let kinds: Vec<String> = closers(&again.events, NOW + 1)
            .into_iter()
            .map(|d| d.kind)
            .collect();
        assert!(kinds.is_empty(), "{kinds:?}");
    }
}

#[test]
fn resume_facts_of_the_resume_transcript() {
    let full = events(&log("resume", "session-resume"));
    let facts = resume_facts(&full[..17]).unwrap();
    assert_eq!(facts.last_turn, 1);
    assert!(facts.has_title);
    assert_eq!(facts.cwd, None);
    assert!(facts.inbox.next_turn.is_empty() && facts.inbox.next_step.is_empty());
    let seqs: Vec<u64> = facts.history.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [7, 8, 9, 14]);
    assert!(facts.last_system.is_some());
    assert_eq!(
        facts.last_runtime_context.as_ref().map(|m| m.id.as_str()),
        { full[9].data.get("id").and_then(Value::as_str) }
    );
    // Messages keep their exact shape.
    for entry in &facts.history {
        let event = &full[usize::try_from(entry.seq).unwrap_or_default()];
        let original = if event.kind == "user/message" {
            event.data.clone()
        } else {
            event.data["message"].clone()
        };
        assert_eq!(
            serde_json::to_value(&*entry.message.get()).ok(),
            Some(original)
        );
    }
    let all = resume_facts(&full).unwrap();
    assert_eq!(all.last_turn, 2);
    assert_eq!(all.history.len(), 6);
}

#[test]
fn resume_facts_of_working_directory_and_busy_prompts() {
    let cwd_events = events(&log("working_directory", "session-cwd"));
    // Before the turn claimed them: four notices and the prompt are queued.
    let facts = resume_facts(&cwd_events[..12]).unwrap();
    assert_eq!(
        facts.cwd.as_deref(),
        Some("/home/user/workdir/working_directory/outside")
    );
    assert_eq!(facts.inbox.next_step.len(), 4);
    assert_eq!(facts.inbox.next_turn.len(), 1);
    let order: Vec<String> = facts
        .inbox
        .next_step
        .iter()
        .map(|m| m.content[0]["text"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        order[0].contains("to \"/home/user/workdir/working_directory/workspace/sub\""),
        "{order:?}"
    );
    assert!(order[3].contains("outside"), "{order:?}");
    let facts = resume_facts(&cwd_events).unwrap();
    assert!(facts.inbox.next_step.is_empty() && facts.inbox.next_turn.is_empty());
    // prompt_while_busy: the follow-up queued behind the running turn.
    let busy = events(&log("prompt_while_busy", "session-busy"));
    let at = busy
        .iter()
        .position(|e| e.seq == 14)
        .unwrap_or_else(|| panic!("seq 14"));
    let facts = resume_facts(&busy[..at]).unwrap();
    assert_eq!(facts.inbox.next_turn.len(), 1);
    assert_eq!(
        facts.inbox.next_turn[0].content[0]["text"],
        json!("Follow-up while busy")
    );
    for transcript in all_logs() {
        resume_facts(&events(&transcript))
            .unwrap_or_else(|e| panic!("{}: {e}", transcript.path.display()));
    }
}

#[test]
fn header_of_created_sessions_matches_the_official_shape() {
    let transcript = log("subagent", "77f213c4-6d86-481e-8f30-13237ea2021b");
    let official = transcript.header();
    let ours = SessionHeader::subagent_child(
        official.id.clone(),
        official.created_at,
        official.cwd.clone(),
        "session-subagent-parent",
        1,
    );
    assert_eq!(
        serde_json::to_string(&ours).unwrap_or_default(),
        transcript.lines()[0]
    );
}
