//! The Rust client crate driving the real binary.

mod common;

use common::TempDir;
use dsh_client::{ClientConfig, ClientError, HarnessClient};

fn config(dir: &TempDir) -> ClientConfig {
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("sub")).unwrap_or_else(|e| panic!("{e}"));
    let mut config = ClientConfig::new(env!("CARGO_BIN_EXE_dsh"), dir.path().join("home"), ws);
    config
        .env
        .push(("HOME".into(), dir.path().to_string_lossy().into_owned()));
    config
}

#[tokio::test]
async fn runs_turns_and_reports_errors_verbatim() {
    let dir = TempDir::new("client-run");
    let client = HarnessClient::spawn(config(&dir)).await.unwrap();
    let err = client
        .initialize("not-a-provider", "m")
        .await
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("no adapter registered for provider \"not-a-provider\" (code -32603)")
    );
    let info = client.initialize("scripted", "echo").await.unwrap();
    assert_eq!(info["serverInfo"]["name"], "deepseek-harness-sdk-runtime");

    let session = client.session("s-client");
    let first = session.run("héllo 😀").await.unwrap();
    assert_eq!(first.final_response, "héllo 😀");
    assert_eq!(first.finish_reason.as_deref(), Some("completed"));
    assert_eq!(first.events[0].kind, "agent/inbox/spliced");
    let second = session.run("again").await.unwrap();
    let turn = second
        .events
        .iter()
        .find(|e| e.kind == "turn/start")
        .map(|e| e.data["turn"].clone());
    assert_eq!(turn, Some(2.into()));

    let cwd = client
        .set_working_directory("s-client", "sub")
        .await
        .unwrap();
    assert!(cwd.ends_with("/ws/sub"), "{cwd}");
    assert_eq!(client.working_directory("s-client").await.ok(), Some(cwd));
    let missing = client.set_working_directory("s-client", "nope").await.err();
    assert!(
        matches!(missing, Some(ClientError::Rpc { ref message, .. }) if message == "working-directory: directory does not exist: \"nope\""),
        "{missing:?}"
    );
    client.wait("s-client").await.unwrap();
    let status = client.close().await.unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn sessions_resume_across_clients() {
    let dir = TempDir::new("client-resume");
    let client = HarnessClient::spawn(config(&dir)).await.unwrap();
    client.initialize("scripted", "echo").await.unwrap();
    client.session("s-kept").run("remember me").await.unwrap();
    client.close().await.unwrap();

    let client = HarnessClient::spawn(config(&dir)).await.unwrap();
    client.initialize("scripted", "echo").await.unwrap();
    let unknown = client.resume("never").await.err().map(|e| e.to_string());
    assert_eq!(
        unknown.as_deref(),
        Some("session \"never\" not found (code -32603)")
    );
    let session = client.resume("s-kept").await.unwrap();
    let result = session.run("back").await.unwrap();
    let header = result
        .events
        .iter()
        .find(|e| e.kind == "request/header")
        .map(|e| e.data["reason"].clone());
    assert_eq!(header, Some("resume".into()));
    assert_eq!(result.final_response, "back");
    client.close().await.unwrap();
}

#[tokio::test]
async fn a_missing_binary_is_a_spawn_error() {
    let dir = TempDir::new("client-missing");
    let mut config = config(&dir);
    config.dsh_bin = dir.path().join("no-such-dsh");
    assert!(matches!(
        HarnessClient::spawn(config).await,
        Err(ClientError::Spawn { .. })
    ));
}

/// A scenario file of the `scripted` provider (the model id is its path).
fn scenario(dir: &TempDir, replies: serde_json::Value) -> String {
    let path = dir.path().join("scenario.json");
    std::fs::write(&path, serde_json::json!({"replies": replies}).to_string())
        .unwrap_or_else(|e| panic!("{e}"));
    path.to_string_lossy().into_owned()
}

#[tokio::test]
async fn an_approval_handler_answers_and_the_call_runs_with_the_wider_sandbox() {
    use dsh_protocol::methods::{
        ApprovalDecision, ApprovalResponse, ClientCapabilities, InitializeExtensions,
    };
    use std::sync::{Arc, Mutex};

    let dir = TempDir::new("client-approvals");
    let model = scenario(
        &dir,
        serde_json::json!([
            {"blocks": [{"tool_call": {"id": "t1", "name": "bash", "arguments": {
                "description": "d", "command": "touch allowed.txt",
                "sandbox_permissions": "danger-full-access", "justification": "needed"}}}]},
            {"blocks": [{"tool_call": {"id": "t2", "name": "write", "arguments": {
                "file_path": "refused.txt", "content": "x",
                "sandbox_permissions": "danger-full-access", "justification": "needed"}}}]},
            {"text": "done"}
        ]),
    );
    let client = HarnessClient::spawn(config(&dir)).await.unwrap();
    let asked: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let seen = Arc::clone(&asked);
    client.set_approval_handler(Arc::new(move |request| {
        seen.lock()
            .unwrap()
            .push((request.tool_name.clone(), request.reason.clone()));
        let decision = if request.tool_name == "bash" {
            ApprovalDecision::AllowOnce
        } else {
            ApprovalDecision::Reject
        };
        Box::pin(async move {
            ApprovalResponse {
                decision,
                message: Some("only bash today".into()),
            }
        })
    }));
    let extensions = InitializeExtensions {
        client_capabilities: Some(ClientCapabilities {
            approvals: true,
            ..ClientCapabilities::default()
        }),
        ..InitializeExtensions::default()
    };
    let info = client
        .initialize_with("scripted", &model, &extensions)
        .await
        .unwrap();
    assert_eq!(info["capabilities"]["approvals"], true);
    let run = client.session("s-approve").run("go").await.unwrap();
    assert_eq!(run.final_response, "done");
    let ws = dir.path().join("ws");
    assert!(ws.join("allowed.txt").exists());
    assert!(!ws.join("refused.txt").exists());
    assert_eq!(
        asked.lock().unwrap().clone(),
        [
            (
                "bash".to_owned(),
                "escalate sandbox to danger-full-access: needed".to_owned()
            ),
            (
                "write".to_owned(),
                "escalate sandbox to danger-full-access: needed".to_owned()
            ),
        ]
    );
    let outcomes: Vec<_> = run
        .events
        .iter()
        .filter(|e| e.kind == "approval/decided")
        .map(|e| e.data["outcome"].clone())
        .collect();
    assert_eq!(outcomes, ["approved", "rejected"]);
    assert!(client.close().await.unwrap().success());
}

#[tokio::test]
async fn cancel_stops_the_running_turn_and_names_it() {
    let dir = TempDir::new("client-cancel");
    let model = scenario(
        &dir,
        serde_json::json!([{"text": "late", "delay_ms": 20000}, {"text": "next"}]),
    );
    let client = HarnessClient::spawn(config(&dir)).await.unwrap();
    client.initialize("scripted", &model).await.unwrap();
    assert_eq!(
        client
            .cancel("s-cancel", false, false)
            .await
            .err()
            .map(|e| e.to_string()),
        Some("unknown SDK session: s-cancel (code -32603)".to_owned())
    );
    let session = client.session("s-cancel");
    let (run, cancelled) = tokio::join!(session.run("slow"), async {
        // Until the prompt has made the turn: a cancel before names none.
        loop {
            if let Ok(result) = client.cancel("s-cancel", false, false).await
                && result.turn.is_some()
            {
                return result;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    });
    assert_eq!(cancelled.turn, Some(1));
    let run = run.unwrap();
    assert_eq!(run.finish_reason.as_deref(), Some("aborted"));
    assert_eq!(session.run("again").await.unwrap().final_response, "next");
    assert!(client.close().await.unwrap().success());
}

#[tokio::test]
async fn events_pages_through_a_session_log() {
    let dir = TempDir::new("client-events");
    let client = HarnessClient::spawn(config(&dir)).await.unwrap();
    client.initialize("scripted", "echo").await.unwrap();
    let run = client.session("s-events").run("hello").await.unwrap();
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = client.events("s-events", after, Some(2)).await.unwrap();
        assert!(page.events.len() <= 2);
        seen.extend(page.events.iter().map(|e| (e.seq, e.kind.clone())));
        after = page.events.last().map(|e| e.seq);
        if !page.more {
            assert_eq!(page.last_seq, after);
            break;
        }
    }
    // The run's events are the log's last ones (the session's first
    // events, its policy, came before the run).
    let notified: Vec<_> = run.events.iter().map(|e| e.kind.clone()).collect();
    let kinds: Vec<_> = seen.iter().map(|(_, kind)| kind.clone()).collect();
    assert_eq!(kinds[kinds.len() - notified.len()..], notified[..]);
    assert_eq!(kinds[0], "permission/preset");
    assert_eq!(
        seen.iter().map(|(seq, _)| *seq).collect::<Vec<_>>(),
        (0..seen.len() as u64).collect::<Vec<_>>()
    );
    assert!(client.close().await.unwrap().success());
}

#[tokio::test]
async fn lists_and_forks_sessions() {
    use dsh_protocol::methods::{ListParams, SessionActivity};
    let dir = TempDir::new("client-sessions");
    let client = HarnessClient::spawn(config(&dir)).await.unwrap();
    client.initialize("scripted", "echo").await.unwrap();
    for id in ["s-old", "s-new"] {
        client
            .session(id)
            .run(&format!("hello {id}"))
            .await
            .unwrap();
    }
    let first = client
        .list_sessions(&ListParams {
            limit: Some(1),
            ..ListParams::default()
        })
        .await
        .unwrap();
    assert_eq!(first.sessions.len(), 1);
    assert_eq!(first.sessions[0].session_id, "s-new");
    assert_eq!(first.sessions[0].title.as_deref(), Some("hello s-new"));
    assert_eq!(first.sessions[0].status, SessionActivity::Running);
    let second = client
        .list_sessions(&ListParams {
            cursor: first.next_cursor.clone(),
            ..ListParams::default()
        })
        .await
        .unwrap();
    let ids: Vec<_> = second
        .sessions
        .iter()
        .map(|s| s.session_id.as_str())
        .collect();
    assert_eq!((ids, second.next_cursor), (vec!["s-old"], None));

    let forked = client
        .fork_session("s-old", None, Some("s-fork"))
        .await
        .unwrap();
    assert_eq!((forked.session_id.as_str(), forked.turns), ("s-fork", 1));
    let err = client
        .fork_session("s-old", None, Some("s-fork"))
        .await
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("session \"s-fork\" already exists (code -32603)")
    );
    let session = client.resume("s-fork").await.unwrap();
    let run = session.run("go on").await.unwrap();
    assert_eq!(run.final_response, "go on");
    let turn = run.events.iter().find(|e| e.kind == "turn/start").unwrap();
    assert_eq!(turn.data["turn"], 2);
    let listed = client
        .list_sessions(&ListParams {
            query: Some("FORK".into()),
            ..ListParams::default()
        })
        .await
        .unwrap();
    assert_eq!(listed.sessions.len(), 1);
    let fork = &listed.sessions[0];
    assert_eq!(fork.turns, 2);
    assert_eq!(
        fork.forked_from
            .as_ref()
            .map(|f| (f.session_id.as_str(), f.seq)),
        Some(("s-old", forked.forked_from_seq))
    );
    assert!(client.close().await.unwrap().success());
}

#[tokio::test]
async fn usage_deltas_and_budgets_through_the_rust_client() {
    use dsh_client::Update;
    use dsh_protocol::methods::{Budget, ClientCapabilities, InitializeExtensions};
    let dir = TempDir::new("client-usage");
    let call = serde_json::json!({"blocks": [{"tool_call": {"name": "bash",
        "arguments": {"description": "d", "command": "echo hi"}}}],
        "usage": {"input_tokens": 1000, "output_tokens": 10, "cache_hit_tokens": 3000}});
    let answer = serde_json::json!({"reasoning": ["thinking ", "it over"], "text": ["all ", "done"],
        "usage": {"input_tokens": 500, "output_tokens": 20, "cache_hit_tokens": 4000}});
    let scenario = dir.path().join("scenario.json");
    let replies = serde_json::json!({"replies": [call, answer, call, call, call, answer]});
    std::fs::write(&scenario, replies.to_string()).unwrap();
    let client = HarnessClient::spawn(config(&dir)).await.unwrap();
    let extensions = InitializeExtensions {
        client_capabilities: Some(ClientCapabilities {
            deltas: true,
            usage: true,
            ..ClientCapabilities::default()
        }),
        ..InitializeExtensions::default()
    };
    let model = scenario.to_string_lossy().into_owned();
    client
        .initialize_with("scripted", &model, &extensions)
        .await
        .unwrap();
    let session = client.session("s-usage");
    let mut text = String::new();
    let mut reasoning = String::new();
    let mut notices = 0;
    let run = session
        .run_with(
            vec![dsh_client::text_block("go")],
            None,
            |update| match update {
                Update::Delta(delta) => match delta.kind {
                    dsh_protocol::methods::DeltaKind::Text => text.push_str(&delta.delta),
                    dsh_protocol::methods::DeltaKind::Reasoning => reasoning.push_str(&delta.delta),
                    _ => {}
                },
                Update::Usage(_) => notices += 1,
                Update::Event(..) => {}
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (text.as_str(), reasoning.as_str()),
        ("all done", "thinking it over")
    );
    assert_eq!(run.final_response, text);
    // One notice per reply, one at the turn's end.
    assert_eq!(notices, 3);
    let usage = run.usage.unwrap();
    assert!(usage.turn_ended);
    let total = usage.turn_total.counts;
    assert_eq!(
        (
            total.requests,
            total.input_tokens,
            total.cache_hit_tokens,
            total.output_tokens
        ),
        (2, 8500, 7000, 30)
    );
    let stored = client.usage("s-usage").await.unwrap();
    assert_eq!(stored.total, usage.turn_total);

    // A budget of two model requests stops the tool loop after two.
    let run = session
        .run_with(
            vec![dsh_client::text_block("loop")],
            Some(Budget {
                max_cost_usd: None,
                max_turns: Some(2),
            }),
            |_| {},
        )
        .await
        .unwrap();
    assert_eq!(run.finish_reason.as_deref(), Some("aborted"));
    let reason = serde_json::to_value(&run.finish).unwrap();
    assert_eq!(
        reason,
        serde_json::json!({"kind": "aborted", "reason": {"kind": "budget", "limit": "maxTurns"}})
    );
    assert_eq!(run.usage.unwrap().turn_total.counts.requests, 2);
    assert!(client.close().await.unwrap().success());
}
