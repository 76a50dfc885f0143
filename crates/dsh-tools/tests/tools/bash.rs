//! `bash` (sdk): output format, job events, truncation, background jobs,
//! cancellation, escalation and process isolation.

use crate::common::{Fixture, job_id, live_processes, ok, some, text, wait_until};
use dsh_tools::{CancellationToken, OUTPUT_DISPLAY_LIMIT, PermissionMode};
use serde_json::{Value, json};

#[tokio::test]
async fn echo_returns_stdout_with_cwd_meta_and_job_events() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx.bash("echo hi", "").await;
    assert_eq!(text(&out), "hi\n");
    assert!(!out.is_error);
    assert_eq!(
        out.meta,
        Some(json!({"cwd": fx.workspace.to_string_lossy()}))
    );
    assert_eq!(out.error, None);

    let events = fx.host.events();
    assert_eq!(fx.host.kinds(), ["job/registered", "job/settled"]);
    let registered = &events[0].1;
    let id = some(registered["jobId"].as_str(), "jobId");
    assert!(id.starts_with("bash-") && id.len() == 21, "job id {id}");
    assert!(id[5..].chars().all(|c| c.is_ascii_hexdigit()));
    let keys: Vec<&String> = some(registered.as_object(), "object").keys().collect();
    assert_eq!(
        keys,
        ["jobId", "owner", "kind", "label", "startedAt", "toolCall"]
    );
    assert_eq!(registered["owner"], "session-test");
    assert_eq!(registered["kind"], "bash");
    assert_eq!(registered["label"], "echo hi");
    assert!(registered["startedAt"].is_u64());
    assert_eq!(
        registered["toolCall"],
        json!({"callId": "call-1", "rootCallId": "call-1"})
    );

    let settled = &events[1].1;
    let keys: Vec<&String> = some(settled.as_object(), "object").keys().collect();
    assert_eq!(
        keys,
        [
            "jobId",
            "owner",
            "kind",
            "label",
            "startedAt",
            "toolCall",
            "finishedAt",
            "status",
            "cause",
            "producerReported",
            "detail"
        ]
    );
    assert_eq!(settled["jobId"], registered["jobId"]);
    assert_eq!(settled["status"], "completed");
    assert_eq!(settled["cause"], "producer");
    assert_eq!(settled["producerReported"], true);
    assert_eq!(settled["detail"], "exit code: 0");
}

#[tokio::test]
async fn stderr_and_exit_code_match_the_observed_format() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx.bash("echo hi; echo oops >&2; exit 3", "").await;
    assert_eq!(text(&out), "hi\n[stderr]\noops\n[exit code: 3]");
    assert!(!out.is_error, "a non-zero exit is not a tool error");
    let settled = fx.host.of_kind("job/settled");
    assert_eq!(settled[0]["status"], "completed");
    assert_eq!(settled[0]["detail"], "exit code: 3");
}

#[tokio::test]
async fn empty_output_says_so() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    assert_eq!(text(&fx.bash("true", "").await), "(no output)");
    assert_eq!(
        text(&fx.bash("exit 4", "").await),
        "(no output)\n[exit code: 4]"
    );
    assert_eq!(text(&fx.bash("echo -n err >&2", "").await), "[stderr]\nerr");
}

#[tokio::test]
async fn killed_by_signal_is_reported() {
    let fx = Fixture::new(PermissionMode::DangerFullAccess);
    let out = fx.bash("kill -TERM $$", "").await;
    assert_eq!(text(&out), "(no output)\n[killed by signal: SIGTERM]");
    let settled = fx.host.of_kind("job/settled");
    assert_eq!(settled[0]["status"], "failed");
    assert_eq!(settled[0]["detail"], "killed by signal: SIGTERM");
}

#[tokio::test]
async fn workdir_is_resolved_against_the_cwd() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    fx.write_file("sub/file.txt", "x");
    let out = fx.bash("pwd", ",\"workdir\":\"sub\"").await;
    let sub = fx.path("sub");
    assert_eq!(text(&out), format!("{}\n", sub.display()));
    assert_eq!(out.meta, Some(json!({"cwd": sub.to_string_lossy()})));
    // As the official runtime: meta.cwd is the directory as written, and
    // the kernel (not a lexical clean-up) resolves it.
    let dotted = fx.bash("pwd", ",\"workdir\":\"./sub/../sub/\"").await;
    assert_eq!(text(&dotted), format!("{}\n", sub.display()));
    let written = fx.path("./sub/../sub/");
    assert!(written.to_string_lossy().ends_with("/./sub/../sub/"));
    assert_eq!(dotted.meta, Some(json!({"cwd": written.to_string_lossy()})));
    let through_missing = fx.bash("pwd", ",\"workdir\":\"sub/nope/..\"").await;
    assert!(through_missing.is_error, "{}", text(&through_missing));
    let home = fx.bash("pwd", ",\"workdir\":\"~\"").await;
    assert!(home.is_error, "~ is not expanded: {}", text(&home));
    let missing = fx.bash("pwd", ",\"workdir\":\"nope\"").await;
    assert!(missing.is_error);
    assert!(text(&missing).starts_with("Error: the working directory"));
    assert!(
        fx.host.of_kind("job/registered").len() == 2,
        "no job for a bad workdir"
    );
}

#[tokio::test]
async fn long_output_keeps_the_tail_and_spills_the_whole() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx
        .bash(
            "head -c 100000 /dev/zero | tr '\\0' a; echo; echo END; echo warn >&2",
            "",
        )
        .await;
    let body = text(&out);
    assert!(!out.is_error);
    let last = some(body.lines().last(), "last line");
    let path = some(
        last.strip_prefix("[output truncated; full output: ")
            .and_then(|rest| rest.strip_suffix(']')),
        "truncation marker",
    );
    assert!(path.starts_with(&fx.spill.to_string_lossy().into_owned()));
    let shown = &body[..body.len() - last.len()];
    assert!(shown.len() <= OUTPUT_DISPLAY_LIMIT);
    assert!(shown.ends_with("END\n[stderr]\nwarn\n"));
    let full = ok(std::fs::read_to_string(path), "spill file");
    assert_eq!(full.len(), 100_000 + "\nEND\n[stderr]\nwarn\n".len());
    assert!(full.starts_with("aaaa"));
    assert!(full.ends_with("END\n[stderr]\nwarn\n"));
}

#[tokio::test]
async fn very_long_output_is_streamed_to_the_spill_file() {
    let fx = Fixture::new(PermissionMode::DangerFullAccess);
    let out = fx.bash("yes 0123456789 | head -c 3000000", "").await;
    let body = text(&out);
    let path = some(
        body.lines()
            .last()
            .and_then(|l| l.strip_prefix("[output truncated; full output: "))
            .and_then(|l| l.strip_suffix(']')),
        "marker",
    );
    let meta = ok(std::fs::metadata(path), "spill file");
    assert_eq!(meta.len(), 3_000_000);
    assert!(body.len() < OUTPUT_DISPLAY_LIMIT + 200);
}

#[tokio::test]
async fn timeout_moves_the_command_to_the_background() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx
        .bash("echo started; sleep 2; echo finished", ",\"timeoutMs\":300")
        .await;
    assert!(!out.is_error);
    let id = job_id(&out);
    assert_eq!(
        text(&out),
        format!(
            "started\n[still running after 300ms; moved to background job {id}]\nThe command keeps running in the background. You will be notified when it finishes; read newer output with job_output, stop it with job_kill."
        )
    );
    assert_eq!(fx.host.kinds(), ["job/registered"]);
    let waited = fx
        .call(
            "job_output",
            &format!("{{\"job_id\":\"{id}\",\"wait\":true,\"timeout_ms\":20000}}"),
        )
        .await;
    assert_eq!(
        text(&waited),
        format!("Job {id}: completed (exit code: 0)\nstarted\nfinished\n")
    );
    assert_eq!(some(waited.meta.as_ref(), "meta")["status"], "completed");
    assert_eq!(fx.host.kinds(), ["job/registered", "job/settled"]);
}

#[tokio::test]
async fn a_silent_command_moved_to_the_background_shows_no_output_line() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx.bash("sleep 2", ",\"timeoutMs\":200").await;
    let id = job_id(&out);
    assert_eq!(
        text(&out),
        format!(
            "[still running after 200ms; moved to background job {id}]\nThe command keeps running in the background. You will be notified when it finishes; read newer output with job_output, stop it with job_kill."
        )
    );
}

#[tokio::test]
async fn run_in_background_returns_at_once() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx
        .bash("sleep 0.3; echo late", ",\"run_in_background\":true")
        .await;
    let id = job_id(&out);
    assert!(text(&out).contains(&id));
    assert!(!out.is_error);
    let waited = fx
        .call(
            "job_output",
            &format!("{{\"job_id\":\"{id}\",\"wait\":true}}"),
        )
        .await;
    assert!(text(&waited).ends_with("late\n"), "{}", text(&waited));
}

/// Runs `command` and cancels the call once the job runs and a process
/// whose command line holds `marker` is alive; returns the result.
async fn cancelled_run(fx: &Fixture, command: &str, marker: &'static str) -> dsh_tools::ToolOutput {
    let cancel = CancellationToken::new();
    let host = fx.host.clone();
    let trigger = cancel.clone();
    let canceller = tokio::spawn(async move {
        wait_until("the job to start", || {
            !live_processes(marker).is_empty() && !host.of_kind("job/registered").is_empty()
        })
        .await;
        trigger.cancel();
    });
    let arguments = serde_json::json!({"description": "d", "command": command}).to_string();
    let out = fx.tools.run("bash", &arguments, fx.ctx_with(cancel)).await;
    ok(canceller.await, "canceller");
    out
}

#[tokio::test]
async fn cancellation_aborts_the_call_and_stops_the_command() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = cancelled_run(&fx, "sleep 7761.5", "7761.5").await;
    // The official aborted-call result: the text, the error class and code,
    // no meta; the job settled at once as killed.
    assert!(out.is_error);
    assert_eq!(text(&out), "Error: tool call aborted");
    assert_eq!(
        serde_json::to_value(&out.error).unwrap_or_default(),
        serde_json::json!({"name": "AbortError", "code": "ABORTED"})
    );
    assert!(out.meta.is_none());
    let settled = fx.host.of_kind("job/settled");
    assert_eq!(settled.len(), 1);
    assert_eq!(settled[0]["status"], "killed");
    assert_eq!(settled[0]["cause"], "kill");
    assert_eq!(settled[0]["detail"], "signal: SIGTERM; tool call aborted");
    // The sandbox supervisor answers SIGTERM by killing the command's
    // whole process group.
    wait_until("the process to go", || live_processes("7761.5").is_empty()).await;
    // The command's own exit later settles nothing more.
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert_eq!(fx.host.of_kind("job/settled").len(), 1);
}

#[tokio::test]
async fn wider_sandbox_requests_are_declined_without_an_approver() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx
        .bash(
            "echo should-not-run",
            ",\"sandbox_permissions\":\"danger-full-access\",\"justification\":\"need /etc \"",
        )
        .await;
    assert!(out.is_error);
    // The official runtime's texts, as observed.
    assert_eq!(
        text(&out),
        "Error: sandbox escalation to \"danger-full-access\" requires approval, but no approval channel is available"
    );
    let events = fx.host.events();
    assert_eq!(fx.host.kinds(), ["approval/asked", "approval/decided"]);
    let asked = &events[0].1;
    assert_eq!(asked["toolName"], "bash");
    assert_eq!(asked["callId"], "call-1");
    assert_eq!(
        asked["reason"],
        "escalate sandbox to danger-full-access: need /etc "
    );
    assert_eq!(
        events[1].1,
        json!({"id": asked["id"], "outcome": "unavailable"})
    );

    // Asking for no more than the session has needs no approval.
    let same = fx
        .bash("echo fine", ",\"sandbox_permissions\":\"workspace-write\"")
        .await;
    assert_eq!(text(&same), "fine\n");
}

#[tokio::test]
async fn sandbox_requests_are_checked_as_the_official_runtime_checks_them() {
    let full = Fixture::new(PermissionMode::DangerFullAccess);
    let cases = [
        (
            ",\"sandbox_permissions\":\"workspace-write\"",
            "Error: invalid escalation: sandbox_permissions requires a justification",
        ),
        (
            ",\"sandbox_permissions\":\"workspace-write\",\"justification\":\" \"",
            "Error: invalid justification: expected a non-empty sentence",
        ),
        (
            ",\"sandbox_permissions\":\"workspace-write\",\"justification\":\"j\"",
            "Error: sandbox escalation to \"workspace-write\" is not strictly wider than this call's current \"danger-full-access\" mode",
        ),
        (
            ",\"justification\":\"j\"",
            "Error: invalid escalation: justification is only valid together with sandbox_permissions",
        ),
    ];
    for (extra, expected) in cases {
        let out = full.bash("echo should-not-run", extra).await;
        assert!(out.is_error, "{extra}");
        assert_eq!(text(&out), expected, "{extra}");
    }
    assert!(full.host.kinds().is_empty());
    // A blank justification alone is no request.
    let blank = full.bash("echo fine", ",\"justification\":\"  \"").await;
    assert_eq!(text(&blank), "fine\n");
    // An empty command is refused before the request is looked at.
    let ws = Fixture::new(PermissionMode::WorkspaceWrite);
    let empty = ws
        .bash(
            " ",
            ",\"sandbox_permissions\":\"danger-full-access\",\"justification\":\"j\"",
        )
        .await;
    assert!(empty.is_error && !text(&empty).contains("escalation"));
    assert!(ws.host.kinds().is_empty());
}

#[tokio::test]
async fn children_share_one_process_group() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx
        .bash(
            "sleep 7762.1 & sleep 7762.2 & wait",
            ",\"run_in_background\":true",
        )
        .await;
    let id = job_id(&out);
    // The supervising launcher, bash itself and both sleeps carry the marker.
    wait_until("both sleeps", || live_processes("7762.").len() == 4).await;
    let groups: Vec<i32> = live_processes("7762.").iter().map(|(_, g)| *g).collect();
    assert!(groups.windows(2).all(|w| w[0] == w[1]), "groups {groups:?}");
    let own_stat = ok(std::fs::read_to_string("/proc/self/stat"), "own stat");
    let own_group: Option<i32> = own_stat
        .rfind(')')
        .and_then(|i| own_stat[i + 1..].split_whitespace().nth(2))
        .and_then(|g| g.parse().ok());
    assert!(own_group.is_some());
    assert_ne!(
        Some(groups[0]),
        own_group,
        "the job must have its own group"
    );
    let killed = fx
        .call(
            "job_kill",
            &format!("{{\"job_id\":\"{id}\",\"reason\":\"test cleanup\"}}"),
        )
        .await;
    assert!(!killed.is_error, "{}", text(&killed));
    assert_eq!(text(&killed), format!("Job {id} was killed."));
    wait_until("the group to die", || live_processes("7762.").is_empty()).await;
    let settled = fx.host.of_kind("job/settled");
    assert_eq!(settled[0]["status"], "failed");
    assert_eq!(settled[0]["detail"], "killed: test cleanup");
}

/// Runs in a child copy of this test binary (see the outer test below):
/// command output must land in the result, never on the process's own
/// stdout or stderr.
#[tokio::test]
async fn fd_isolation_inner() {
    if std::env::var_os("DSH_TOOLS_FD_INNER").is_none() {
        return;
    }
    let marker = format!("{}-{}", "FDLEAK", 4242);
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx
        .bash(
            &format!("echo {marker}-one; echo {marker}-two >&2; echo {marker}-three > /dev/stderr"),
            "",
        )
        .await;
    assert!(text(&out).contains("-one") && text(&out).contains("-two"));
    let minimal = Fixture::minimal(|c| c);
    let out = minimal
        .call(
            "bash",
            &format!("{{\"command\":\"echo {marker}-four; echo {marker}-five >&2\"}}"),
        )
        .await;
    assert!(
        text(&out).contains("-four") && text(&out).contains("-five"),
        "{}",
        text(&out)
    );
}

#[tokio::test]
async fn command_output_never_reaches_the_runtime_stdout() {
    let exe = ok(std::env::current_exe(), "exe");
    let child = ok(
        std::process::Command::new(exe)
            .args([
                "--exact",
                "bash::fd_isolation_inner",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("DSH_TOOLS_FD_INNER", "1")
            .output(),
        "run inner test",
    );
    let stdout = String::from_utf8_lossy(&child.stdout);
    let stderr = String::from_utf8_lossy(&child.stderr);
    assert!(
        child.status.success(),
        "inner test failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("1 passed"),
        "inner test did not run:\n{stdout}"
    );
    assert!(!stdout.contains("FDLEAK"), "leak on stdout:\n{stdout}");
    assert!(!stderr.contains("FDLEAK"), "leak on stderr:\n{stderr}");
}

#[tokio::test]
async fn meta_is_json_object_with_cwd_only() {
    let fx = Fixture::new(PermissionMode::DangerFullAccess);
    let out = fx.bash("echo $((6*7))", "").await;
    assert_eq!(text(&out), "42\n");
    let meta = some(out.meta, "meta");
    assert_eq!(meta.as_object().map(|m| m.len()), Some(1));
    assert!(matches!(meta.get("cwd"), Some(Value::String(_))));
}

/// Records what a tap sees, per file descriptor.
#[derive(Default)]
struct SeenOutput(std::sync::Mutex<Vec<(u32, Vec<u8>)>>);

impl dsh_tools::OutputTap for SeenOutput {
    fn output(&self, fd: u32, data: &[u8]) {
        if let Ok(mut seen) = self.0.lock() {
            seen.push((fd, data.to_vec()));
        }
    }
}

impl SeenOutput {
    fn joined(&self, fd: u32) -> String {
        let seen = self.0.lock().map(|s| s.clone()).unwrap_or_default();
        let bytes: Vec<u8> = seen
            .into_iter()
            .filter(|(f, _)| *f == fd)
            .flat_map(|(_, d)| d)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

#[tokio::test]
async fn a_tap_sees_the_output_of_a_waited_call_only() {
    let mut fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let seen = std::sync::Arc::new(SeenOutput::default());
    fx.tap = Some(seen.clone());
    let out = fx
        .bash(
            "printf one; sleep 0.1; printf two >&2; sleep 0.1; printf three",
            "",
        )
        .await;
    assert_eq!(text(&out), "onethree\n[stderr]\ntwo");
    assert_eq!(seen.joined(1), "onethree");
    assert_eq!(seen.joined(2), "two");
    // The first write was seen before the command ended: it streamed.
    let first = seen.0.lock().map(|s| s[0].clone()).unwrap_or_default();
    assert_eq!(first, (1, b"one".to_vec()));

    // A background job is not watched: its call returned at once.
    let before = seen.0.lock().map(|s| s.len()).unwrap_or_default();
    let out = fx
        .bash("sleep 0.2; echo later", r#","run_in_background":true"#)
        .await;
    let id = job_id(&out);
    let waited = fx
        .call("job_output", &format!(r#"{{"job_id":"{id}","wait":true}}"#))
        .await;
    assert!(text(&waited).ends_with("later\n"), "{}", text(&waited));
    assert_eq!(seen.0.lock().map(|s| s.len()).unwrap_or_default(), before);
    // Nor is a command moved to the background by its timeout, once moved.
    let out = fx
        .bash(
            "printf early; sleep 0.5; printf late",
            r#","timeoutMs":200"#,
        )
        .await;
    let id = job_id(&out);
    let waited = fx
        .call("job_output", &format!(r#"{{"job_id":"{id}","wait":true}}"#))
        .await;
    assert!(text(&waited).contains("late"), "{}", text(&waited));
    assert!(seen.joined(1).ends_with("early"), "{}", seen.joined(1));
}
