//! `read`, `write` and `edit`.

use crate::common::{Fixture, js, ok, outside_dir, scratch_dir, some, text};
use dsh_tools::PermissionMode;
use serde_json::json;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn read_args(path: &str) -> String {
    format!("{{\"file_path\":{}}}", js(path))
}

#[tokio::test]
async fn read_matches_the_observed_format() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let path = fx.write_file("notes.txt", "line one\nline two\n");
    let out = fx.call("read", "{\"file_path\":\"notes.txt\"}").await;
    let shown = path.display();
    assert_eq!(
        text(&out),
        format!(
            "<path>{shown}</path>\n<type>file</type>\n<content>\n1: line one\n2: line two\n\n(End of file - total 2 lines)\n</content>"
        )
    );
    assert!(!out.is_error);
    assert_eq!(
        out.meta,
        Some(json!({
            "path": path.to_string_lossy(),
            "offset": 1,
            "lines": [{"number": 1, "text": "line one"}, {"number": 2, "text": "line two"}],
            "totalLines": 2
        }))
    );
}

#[tokio::test]
async fn read_pages_with_offset_and_limit() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let content: String = (1..=10).map(|n| format!("row {n}\n")).collect();
    fx.write_file("rows.txt", &content);
    let out = fx
        .call(
            "read",
            "{\"file_path\":\"rows.txt\",\"offset\":3,\"limit\":2}",
        )
        .await;
    let body = text(&out);
    assert!(body.contains("<content>\n3: row 3\n4: row 4\n\n(Showing lines 3-4 of 10. Use offset=5 to continue.)\n</content>"), "{body}");
    assert_eq!(some(out.meta, "meta")["offset"], 3);
    let tail = fx
        .call("read", "{\"file_path\":\"rows.txt\",\"offset\":9}")
        .await;
    assert!(text(&tail).contains("9: row 9\n10: row 10\n\n(End of file - total 10 lines)"));
    let past = fx
        .call("read", "{\"file_path\":\"rows.txt\",\"offset\":11}")
        .await;
    assert!(past.is_error);
    assert!(text(&past).contains("past the end"));
    let zero = fx
        .call("read", "{\"file_path\":\"rows.txt\",\"offset\":0}")
        .await;
    assert!(zero.is_error);
    assert_eq!(text(&zero), "Error: offset must be a positive integer");
}

#[tokio::test]
async fn read_refuses_what_is_not_a_text_file() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let missing = fx.call("read", &read_args("nope.txt")).await;
    assert!(missing.is_error);
    assert!(text(&missing).starts_with("Error: file not found: "));
    std::fs::create_dir_all(fx.path("dir")).unwrap();
    let dir = fx.call("read", &read_args("dir")).await;
    assert!(dir.is_error && text(&dir).contains("is a directory"));
    ok(
        std::fs::write(fx.path("blob.bin"), [0u8, 1, 2, 3, 0, 9]),
        "blob",
    );
    let blob = fx.call("read", &read_args("blob.bin")).await;
    assert!(blob.is_error && text(&blob).contains("binary"));
    ok(
        std::fs::write(fx.path("pic.png"), b"\x89PNG\r\n\x1a\n0000"),
        "png",
    );
    let png = fx.call("read", &read_args("pic.png")).await;
    assert!(png.is_error && text(&png).contains("read_image"));
}

#[tokio::test]
async fn read_of_an_empty_file_and_long_lines() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    fx.write_file("empty.txt", "");
    let out = fx.call("read", &read_args("empty.txt")).await;
    assert!(text(&out).ends_with("<content>\n\n(End of file - total 0 lines)\n</content>"));
    fx.write_file("wide.txt", &"x".repeat(5000));
    let wide = fx.call("read", &read_args("wide.txt")).await;
    assert!(text(&wide).contains("[line cut at 2000 characters]"));
}

#[tokio::test]
async fn write_creates_files_and_parents() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx
        .call(
            "write",
            "{\"file_path\":\"a/b/new.txt\",\"content\":\"hello\"}",
        )
        .await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(
        ok(std::fs::read_to_string(fx.path("a/b/new.txt")), "new"),
        "hello"
    );
    assert_eq!(some(out.meta, "meta")["created"], true);
}

#[tokio::test]
async fn write_requires_reading_an_existing_file_first() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    fx.write_file("old.txt", "v1\n");
    let blind = fx
        .call("write", "{\"file_path\":\"old.txt\",\"content\":\"v2\"}")
        .await;
    assert!(blind.is_error);
    assert!(
        text(&blind).contains("has not been read"),
        "{}",
        text(&blind)
    );
    assert_eq!(
        ok(std::fs::read_to_string(fx.path("old.txt")), "old"),
        "v1\n"
    );

    fx.call("read", &read_args("old.txt")).await;
    let written = fx
        .call("write", "{\"file_path\":\"old.txt\",\"content\":\"v2\"}")
        .await;
    assert!(!written.is_error, "{}", text(&written));
    assert_eq!(ok(std::fs::read_to_string(fx.path("old.txt")), "old"), "v2");

    // Our own write keeps the file "seen"; a change by someone else does not.
    let again = fx
        .call("write", "{\"file_path\":\"old.txt\",\"content\":\"v3\"}")
        .await;
    assert!(!again.is_error, "{}", text(&again));
    fx.write_file("old.txt", "changed elsewhere, longer\n");
    let stale = fx
        .call("write", "{\"file_path\":\"old.txt\",\"content\":\"v4\"}")
        .await;
    assert!(stale.is_error);
    assert!(text(&stale).contains("changed on disk"), "{}", text(&stale));
}

#[tokio::test]
async fn write_respects_the_mode() {
    let outside = scratch_dir();
    let target = outside.path().join("out.txt");
    let args = format!(
        "{{\"file_path\":{},\"content\":\"x\"}}",
        js(&target.to_string_lossy())
    );

    let ww = Fixture::new(PermissionMode::WorkspaceWrite);
    let denied = ww.call("write", &args).await;
    assert!(denied.is_error);
    assert!(text(&denied).ends_with("[sandbox: file access denied under workspace-write mode]"));
    assert!(!target.exists());
    let dotdot = ww
        .call(
            "write",
            "{\"file_path\":\"../escape.txt\",\"content\":\"x\"}",
        )
        .await;
    assert!(dotdot.is_error && text(&dotdot).contains("outside the workspace"));

    let ro = Fixture::new(PermissionMode::ReadOnly);
    let denied = ro
        .call("write", "{\"file_path\":\"in.txt\",\"content\":\"x\"}")
        .await;
    assert!(text(&denied).ends_with("[sandbox: file access denied under read-only mode]"));
    assert!(!ro.path("in.txt").exists());

    let full = Fixture::new(PermissionMode::DangerFullAccess);
    let allowed = full.call("write", &args).await;
    assert!(!allowed.is_error, "{}", text(&allowed));
    assert!(target.exists());
}

#[tokio::test]
async fn write_escalation_is_declined() {
    let fx = Fixture::new(PermissionMode::ReadOnly);
    let out = fx
        .call("write", "{\"file_path\":\"x.txt\",\"content\":\"x\",\"sandbox_permissions\":\"workspace-write\",\"justification\":\"save it\"}")
        .await;
    assert_eq!(
        text(&out),
        "Error: sandbox escalation to \"workspace-write\" requires approval, but no approval channel is available"
    );
    assert_eq!(fx.host.kinds(), ["approval/asked", "approval/decided"]);
    assert_eq!(fx.host.of_kind("approval/asked")[0]["toolName"], "write");
    assert_eq!(
        fx.host.of_kind("approval/asked")[0]["reason"],
        "escalate sandbox to workspace-write: save it"
    );
    assert!(!fx.path("x.txt").exists());
}

#[tokio::test]
async fn edit_replaces_a_unique_string() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    fx.write_file("code.rs", "fn a() {}\nfn b() {}\n");
    let unread = fx
        .call(
            "edit",
            "{\"file_path\":\"code.rs\",\"old_string\":\"fn a\",\"new_string\":\"fn z\"}",
        )
        .await;
    assert!(unread.is_error && text(&unread).contains("has not been read"));
    fx.call("read", &read_args("code.rs")).await;
    let out = fx
        .call(
            "edit",
            "{\"file_path\":\"code.rs\",\"old_string\":\"fn a\",\"new_string\":\"fn z\"}",
        )
        .await;
    assert!(!out.is_error, "{}", text(&out));
    assert!(text(&out).contains("replaced 1 occurrence"));
    assert_eq!(
        ok(std::fs::read_to_string(fx.path("code.rs")), "code"),
        "fn z() {}\nfn b() {}\n"
    );
    // A second edit needs no new read: the session wrote the file itself.
    let second = fx
        .call(
            "edit",
            "{\"file_path\":\"code.rs\",\"old_string\":\"fn b\",\"new_string\":\"fn y\"}",
        )
        .await;
    assert!(!second.is_error, "{}", text(&second));
}

#[tokio::test]
async fn edit_failure_modes() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    fx.write_file("dup.txt", "x = 1\nx = 1\nx = 1\n");
    fx.call("read", &read_args("dup.txt")).await;
    let ambiguous = fx
        .call(
            "edit",
            "{\"file_path\":\"dup.txt\",\"old_string\":\"x = 1\",\"new_string\":\"x = 2\"}",
        )
        .await;
    assert!(ambiguous.is_error);
    assert!(
        text(&ambiguous).contains("occurs 3 times"),
        "{}",
        text(&ambiguous)
    );
    let missing = fx
        .call(
            "edit",
            "{\"file_path\":\"dup.txt\",\"old_string\":\"y = 1\",\"new_string\":\"y = 2\"}",
        )
        .await;
    assert!(missing.is_error && text(&missing).contains("was not found"));
    let same = fx
        .call(
            "edit",
            "{\"file_path\":\"dup.txt\",\"old_string\":\"x\",\"new_string\":\"x\"}",
        )
        .await;
    assert!(same.is_error && text(&same).contains("identical"));
    let all = fx
        .call(
            "edit",
            "{\"file_path\":\"dup.txt\",\"old_string\":\"x = 1\",\"new_string\":\"x = 2\",\"replace_all\":true}",
        )
        .await;
    assert!(!all.is_error, "{}", text(&all));
    assert_eq!(some(all.meta, "meta")["replacements"], 3);
    assert_eq!(
        ok(std::fs::read_to_string(fx.path("dup.txt")), "dup"),
        "x = 2\nx = 2\nx = 2\n"
    );
    let absent = fx
        .call(
            "edit",
            "{\"file_path\":\"absent.txt\",\"old_string\":\"a\",\"new_string\":\"b\"}",
        )
        .await;
    assert!(absent.is_error && text(&absent).contains("does not exist"));
}

#[tokio::test]
async fn edit_respects_the_mode() {
    let fx = Fixture::new(PermissionMode::ReadOnly);
    fx.write_file("f.txt", "a\n");
    fx.call("read", &read_args("f.txt")).await;
    let out = fx
        .call(
            "edit",
            "{\"file_path\":\"f.txt\",\"old_string\":\"a\",\"new_string\":\"b\"}",
        )
        .await;
    assert!(out.is_error);
    assert!(text(&out).ends_with("[sandbox: file access denied under read-only mode]"));
    assert_eq!(ok(std::fs::read_to_string(fx.path("f.txt")), "f"), "a\n");
}

fn write_args(path: &str, content: &str) -> String {
    format!("{{\"file_path\":{},\"content\":{}}}", js(path), js(content))
}

fn edit_args(path: &str, old: &str, new: &str) -> String {
    format!(
        "{{\"file_path\":{},\"old_string\":{},\"new_string\":{}}}",
        js(path),
        js(old),
        js(new)
    )
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = ok(std::fs::read_dir(dir), "read dir")
        .map(|entry| {
            ok(entry, "entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

/// Asserts a write refusal that names the link escape and the sandbox.
fn assert_link_refusal(out: &dsh_tools::ToolOutput) {
    let body = text(out);
    assert!(out.is_error, "{body}");
    assert!(
        body.contains("outside the workspace") || body.contains("symbolic link"),
        "{body}"
    );
    assert!(
        body.ends_with("[sandbox: file access denied under workspace-write mode]"),
        "{body}"
    );
}

#[tokio::test]
async fn write_through_a_dangling_link_to_the_outside_is_refused() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let outside = outside_dir();
    let target = outside.path().join("planted.txt");
    ok(symlink(&target, fx.path("dangling")), "symlink");
    let out = fx.call("write", &write_args("dangling", "owned")).await;
    assert_link_refusal(&out);
    assert!(text(&out).contains("symbolic link"), "{}", text(&out));
    assert!(text(&out).contains("nothing was written"), "{}", text(&out));
    assert!(!target.exists(), "a file was created outside the workspace");
    assert!(names(outside.path()).is_empty());
}

#[tokio::test]
async fn write_below_a_link_to_an_outside_directory_is_refused() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let outside = outside_dir();
    ok(symlink(outside.path(), fx.path("link")), "symlink");
    let out = fx
        .call("write", &write_args("link/sub/file", "owned"))
        .await;
    assert_link_refusal(&out);
    let direct = fx.call("write", &write_args("link/file", "owned")).await;
    assert_link_refusal(&direct);
    assert!(
        names(outside.path()).is_empty(),
        "{:?}",
        names(outside.path())
    );
}

#[tokio::test]
async fn links_that_stay_inside_the_workspace_still_work() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    ok(std::fs::create_dir_all(fx.path("real/dir")), "mkdir");
    ok(symlink("./real/dir", fx.path("inner_link")), "symlink");
    let out = fx
        .call("write", &write_args("inner_link/new.txt", "one\n"))
        .await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(some(out.meta.clone(), "meta")["created"], true);
    assert_eq!(
        ok(std::fs::read_to_string(fx.path("real/dir/new.txt")), "new"),
        "one\n"
    );
    let nested = fx
        .call("write", &write_args("inner_link/a/b/c.txt", "deep"))
        .await;
    assert!(!nested.is_error, "{}", text(&nested));
    assert_eq!(
        ok(std::fs::read_to_string(fx.path("real/dir/a/b/c.txt")), "c"),
        "deep"
    );

    fx.call("read", &read_args("inner_link/new.txt")).await;
    let edited = fx
        .call("edit", &edit_args("inner_link/new.txt", "one", "two"))
        .await;
    assert!(!edited.is_error, "{}", text(&edited));
    assert_eq!(
        ok(std::fs::read_to_string(fx.path("real/dir/new.txt")), "new"),
        "two\n"
    );
    let replaced = fx
        .call("write", &write_args("inner_link/new.txt", "three"))
        .await;
    assert!(!replaced.is_error, "{}", text(&replaced));
    assert_eq!(some(replaced.meta, "meta")["created"], false);

    // A link to a file that does not exist yet, inside the workspace:
    // writing through it creates the file it names.
    ok(symlink("real/pending.txt", fx.path("pending")), "symlink");
    let pending = fx.call("write", &write_args("pending", "made")).await;
    assert!(!pending.is_error, "{}", text(&pending));
    assert_eq!(some(pending.meta, "meta")["created"], true);
    assert_eq!(
        ok(std::fs::read_to_string(fx.path("real/pending.txt")), "p"),
        "made"
    );
}

#[tokio::test]
async fn edit_through_a_link_to_the_outside_is_refused() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let outside = outside_dir();
    let secret = outside.path().join("secret.txt");
    ok(std::fs::write(&secret, "keep = 1\n"), "outside file");
    ok(symlink(&secret, fx.path("file_link")), "symlink");
    ok(symlink(outside.path(), fx.path("dir_link")), "symlink");
    for path in ["file_link", "dir_link/secret.txt"] {
        fx.call("read", &read_args(path)).await;
        let out = fx
            .call("edit", &edit_args(path, "keep = 1", "keep = 2"))
            .await;
        assert_link_refusal(&out);
    }
    assert_eq!(ok(std::fs::read_to_string(&secret), "secret"), "keep = 1\n");
    assert_eq!(names(outside.path()), ["secret.txt"]);
}

/// A background thread swaps the workspace directory `d` with a link to an
/// outside directory (atomic `renameat2(RENAME_EXCHANGE)`) as fast as it
/// can while `write` and `edit` keep targeting `d/…`: whatever the
/// interleaving of check and use, nothing may land outside.
#[tokio::test]
async fn a_directory_swapped_for_a_link_mid_call_never_leads_outside() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let outside = outside_dir();
    ok(
        std::fs::write(outside.path().join("e.txt"), "x\n"),
        "outside",
    );
    fx.write_file("d/e.txt", "x\n");
    ok(symlink(outside.path(), fx.path("swap")), "symlink");
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = stop.clone();
        let (d, swap) = (fx.path("d"), fx.path("swap"));
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let exchanged = rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    &d,
                    rustix::fs::CWD,
                    &swap,
                    rustix::fs::RenameFlags::EXCHANGE,
                );
                ok(exchanged, "exchange");
                swaps += 1;
            }
            swaps
        })
    };
    let deadline = Instant::now() + Duration::from_millis(1500);
    let (mut calls, mut edits) = (0, 0);
    while Instant::now() < deadline {
        fx.call("write", &write_args(&format!("d/f{calls}"), "w"))
            .await;
        fx.call("write", &write_args(&format!("d/s{calls}/f"), "w"))
            .await;
        // Every successful edit grows the file it reaches: one that went
        // outside could not be undone by a later one.
        fx.call("read", &read_args("d/e.txt")).await;
        let edit = fx.call("edit", &edit_args("d/e.txt", "x", "xz")).await;
        edits += usize::from(!edit.is_error);
        calls += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = ok(swapper.join().map_err(|_| "panicked"), "swapper");
    assert!(
        swaps > 100 && calls > 10 && edits > 0,
        "swaps {swaps}, calls {calls}, edits {edits}"
    );
    assert_eq!(names(outside.path()), ["e.txt"]);
    assert_eq!(
        ok(std::fs::read_to_string(outside.path().join("e.txt")), "e"),
        "x\n"
    );
}
