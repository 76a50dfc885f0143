//! `job_list`, `job_output`, `job_kill` and the session's shutdown.

use crate::common::{Fixture, job_id, live_processes, ok, outside_dir, some, text, wait_until};
use dsh_tools::PermissionMode;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;
use std::sync::Arc;

#[tokio::test]
async fn job_list_shows_every_job() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let empty = fx.call("job_list", "").await;
    assert_eq!(text(&empty), "This session has no jobs.");
    fx.bash("echo one", "").await;
    let running = fx.bash("sleep 7771.1", ",\"run_in_background\":true").await;
    let id = job_id(&running);
    let list = fx.call("job_list", "{}").await;
    let body = text(&list);
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines.len(), 2, "{body}");
    assert!(lines[0].contains("completed (exit code: 0)") && lines[0].ends_with("echo one"));
    assert!(lines[1].starts_with(&id) && lines[1].contains("running"));
    let meta = some(list.meta, "meta");
    assert_eq!(meta["jobs"][1]["status"], "running");
    assert_eq!(meta["jobs"][0]["detail"], "exit code: 0");
    fx.call("job_kill", &format!("{{\"job_id\":\"{id}\"}}"))
        .await;
    wait_until("sleep gone", || live_processes("7771.1").is_empty()).await;
}

#[tokio::test]
async fn job_output_reports_progress_and_end() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx
        .bash("echo first; sleep 7772.1", ",\"run_in_background\":true")
        .await;
    let id = job_id(&out);
    let fx_ref = &fx;
    let mut seen = String::new();
    for _ in 0..500 {
        let now = fx_ref
            .call("job_output", &format!("{{\"job_id\":\"{id}\"}}"))
            .await;
        seen = text(&now);
        if seen.contains("first") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        seen.starts_with(&format!("Job {id}: running for ")),
        "{seen}"
    );
    assert!(seen.ends_with("first\n"), "{seen}");

    let waited = fx
        .call(
            "job_output",
            &format!("{{\"job_id\":\"{id}\",\"wait\":true,\"timeout_ms\":50}}"),
        )
        .await;
    assert!(
        text(&waited).ends_with("[still running after waiting 50ms]"),
        "{}",
        text(&waited)
    );

    let killed = fx
        .call("job_kill", &format!("{{\"job_id\":\"{id}\"}}"))
        .await;
    assert!(!killed.is_error);
    let after = fx
        .call("job_output", &format!("{{\"job_id\":\"{id}\"}}"))
        .await;
    assert_eq!(
        text(&after),
        format!("Job {id}: failed (killed: job_kill)\nfirst\n[stopped: job_kill]")
    );
    let again = fx
        .call("job_kill", &format!("{{\"job_id\":\"{id}\"}}"))
        .await;
    assert!(!again.is_error);
    assert!(text(&again).contains("had already ended"));
}

#[tokio::test]
async fn unknown_job_ids_are_errors() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    for tool in ["job_output", "job_kill"] {
        let out = fx
            .call(tool, "{\"job_id\":\"bash-0000000000000000\"}")
            .await;
        assert!(out.is_error);
        assert!(text(&out).starts_with("Error: this session has no job \"bash-0000000000000000\""));
    }
    let bad = fx
        .call("job_output", "{\"job_id\":\"x\",\"timeout_ms\":-5}")
        .await;
    assert!(bad.is_error);
    assert!(text(&bad).contains("\"timeout_ms\""));
}

#[tokio::test]
async fn shutdown_kills_every_job_and_refuses_new_ones() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    fx.bash("sleep 7773.1 & sleep 7773.2", ",\"run_in_background\":true")
        .await;
    fx.bash("sleep 7773.3", ",\"run_in_background\":true").await;
    // A finished command's stray child goes too.
    fx.bash("(sleep 7773.4 > /dev/null 2>&1 &); echo spawned", "")
        .await;
    wait_until("all sleeps", || live_processes("7773.").len() >= 4).await;
    fx.state.shutdown();
    wait_until("all sleeps gone", || live_processes("7773.").is_empty()).await;
    assert!(fx.state.is_shut_down());
    let refused = fx.bash("echo late", "").await;
    assert!(refused.is_error);
    wait_until("settlements", || fx.host.of_kind("job/settled").len() == 3).await;
    let details: Vec<String> = fx
        .host
        .of_kind("job/settled")
        .iter()
        .map(|s| s["detail"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert!(
        details.contains(&"killed: the session shut down".to_owned()),
        "{details:?}"
    );
}

#[tokio::test]
async fn dropping_the_session_state_kills_its_jobs() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    fx.bash("sleep 7774.1", ",\"run_in_background\":true").await;
    // The supervising launcher and the command.
    wait_until("sleep", || live_processes("7774.1").len() == 2).await;
    let Fixture { state, .. } = fx;
    assert_eq!(Arc::strong_count(&state), 1);
    assert_eq!(state.running_jobs(), 1);
    drop(state);
    wait_until("sleep gone", || live_processes("7774.1").is_empty()).await;
}

/// Permission bits of `path` itself (a link is not followed).
fn mode_of(path: &Path) -> u32 {
    ok(std::fs::symlink_metadata(path), "metadata")
        .permissions()
        .mode()
        & 0o7777
}

#[tokio::test]
async fn spill_files_and_their_directory_are_private() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    // A directory left wide open (an older runtime, a permissive umask).
    ok(std::fs::create_dir(&fx.spill), "mkdir spill");
    ok(
        std::fs::set_permissions(&fx.spill, std::fs::Permissions::from_mode(0o777)),
        "chmod",
    );
    let out = fx
        .bash(
            "head -c 300000 /dev/zero | tr '\\0' a; sleep 7774.1",
            ",\"run_in_background\":true",
        )
        .await;
    let id = job_id(&out);
    let stdout = fx.spill.join(format!("{id}.stdout"));
    wait_until("stdout spilled", || stdout.exists()).await;
    assert_eq!(mode_of(&stdout), 0o600);
    assert_eq!(mode_of(&fx.spill), 0o700);
    let shown = fx
        .call("job_output", &format!("{{\"job_id\":\"{id}\"}}"))
        .await;
    let log = fx.spill.join(format!("{id}.log"));
    assert!(text(&shown).contains(&log.to_string_lossy().into_owned()));
    assert_eq!(mode_of(&log), 0o600);
    assert_eq!(ok(std::fs::metadata(&log), "log").len(), 300_000);
    fx.call("job_kill", &format!("{{\"job_id\":\"{id}\"}}"))
        .await;
    wait_until("sleep gone", || live_processes("7774.1").is_empty()).await;
}

#[tokio::test]
async fn planted_names_in_the_spill_directory_are_never_followed() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let outside = outside_dir();
    let victim = outside.path().join("victim.txt");
    let absent = outside.path().join("absent.txt");
    ok(std::fs::write(&victim, "untouched"), "victim");
    let out = fx
        .bash(
            "sleep 1; head -c 300000 /dev/zero | tr '\\0' a; head -c 300000 /dev/zero | tr '\\0' b >&2",
            ",\"run_in_background\":true",
        )
        .await;
    let id = job_id(&out);
    // Planted while the command still sleeps, before any output.
    ok(std::fs::create_dir_all(&fx.spill), "mkdir spill");
    let planted = |suffix: &str| fx.spill.join(format!("{id}.{suffix}"));
    ok(symlink(&victim, planted("stdout")), "plant stdout");
    ok(std::fs::write(planted("stderr"), "planted"), "plant stderr");
    ok(symlink(&absent, planted("log")), "plant log");
    let done = fx
        .call(
            "job_output",
            &format!("{{\"job_id\":\"{id}\",\"wait\":true,\"timeout_ms\":30000}}"),
        )
        .await;
    let body = text(&done);
    assert!(!done.is_error, "{body}");
    assert!(
        body.contains("[output truncated; the full output could not be saved]"),
        "{body}"
    );
    assert!(body.contains("bbbbbbbb"), "the tail is kept");
    assert_eq!(ok(std::fs::read_to_string(&victim), "victim"), "untouched");
    assert!(
        !absent.exists(),
        "a file was created through the planted link"
    );
    assert_eq!(
        ok(std::fs::read_to_string(planted("stderr")), "stderr"),
        "planted"
    );
    assert!(
        ok(std::fs::symlink_metadata(planted("log")), "log")
            .file_type()
            .is_symlink()
    );
    let mut names: Vec<_> = ok(std::fs::read_dir(outside.path()), "outside")
        .map(|e| ok(e, "entry").file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["victim.txt"]);
}

#[tokio::test]
async fn a_spill_directory_that_is_a_link_is_refused() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let outside = outside_dir();
    ok(
        std::fs::set_permissions(outside.path(), std::fs::Permissions::from_mode(0o755)),
        "chmod",
    );
    ok(symlink(outside.path(), &fx.spill), "plant spill dir");
    let out = fx
        .bash("head -c 300000 /dev/zero | tr '\\0' a; echo END", "")
        .await;
    let body = text(&out);
    assert!(!out.is_error, "{body}");
    assert!(body.contains("aaaaEND\n"), "the tail is kept");
    assert!(
        body.ends_with("[output truncated; the full output could not be saved]"),
        "{body}"
    );
    assert_eq!(ok(std::fs::read_dir(outside.path()), "outside").count(), 0);
    assert_eq!(mode_of(outside.path()), 0o755);
}
