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

/// Asserts a failed result with exactly `expected` as its text and `code`
/// (`FsError`, `SearchError`…) as its `error`, or no `error` at all.
fn assert_failure(out: &dsh_tools::ToolOutput, expected: &str, code: Option<&str>) {
    assert!(out.is_error, "{}", text(out));
    assert_eq!(text(out), expected);
    assert_eq!(
        out.error
            .as_ref()
            .map(|error| (error.name.as_str(), error.code.as_str())),
        code.map(|code| (dsh_tools::ToolErrorCode::from(code).class_name(), code))
    );
}

/// The official text of a write or edit the sandbox refuses.
fn sandbox_denied(mode: &str) -> String {
    format!(
        "Error: [sandbox: file access denied under {mode} mode]\n[sandbox: escalation available — retry this exact operation once with sandbox_permissions (the narrowest wider mode that suffices) + justification; the approval prompt asks the user]"
    )
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
    assert_failure(
        &past,
        &format!(
            "Error: offset 11 is out of range for \"{}\" (10 lines)",
            fx.path("rows.txt").display()
        ),
        Some("FS_NOT_FOUND"),
    );
    let zero = fx
        .call("read", "{\"file_path\":\"rows.txt\",\"offset\":0}")
        .await;
    assert!(zero.is_error);
    assert_eq!(text(&zero), "Error: offset must be a positive integer");
}

#[tokio::test]
async fn read_refuses_what_is_not_a_text_file() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let ws = fx.workspace.display();
    let missing = fx.call("read", &read_args("nope.txt")).await;
    assert_failure(
        &missing,
        &format!("Error: cannot read \"{ws}/nope.txt\": not found"),
        Some("FS_NOT_FOUND"),
    );
    std::fs::create_dir_all(fx.path("dir")).unwrap();
    let dir = fx.call("read", &read_args("dir/")).await;
    assert_failure(
        &dir,
        &format!("Error: cannot read \"{ws}/dir\": not a regular file"),
        Some("FS_NOT_REGULAR_FILE"),
    );
    ok(
        std::fs::write(fx.path("blob.bin"), [0u8, 1, 2, 3, 0, 9]),
        "blob",
    );
    let blob = fx.call("read", &read_args("blob.bin")).await;
    assert_failure(
        &blob,
        &format!("Error: cannot read \"{ws}/blob.bin\": binary file"),
        Some("FS_NOT_TEXT"),
    );
    // No NUL in the first 8192 bytes, but not UTF-8 (late in the file).
    let mut latin = "a\n".repeat(9000).into_bytes();
    latin.extend_from_slice(b"caf\xe9\n");
    ok(std::fs::write(fx.path("latin.txt"), latin), "latin");
    let latin = fx.call("read", &read_args("latin.txt")).await;
    assert_failure(
        &latin,
        &format!("Error: cannot read \"{ws}/latin.txt\": invalid UTF-8 text"),
        Some("FS_NOT_TEXT"),
    );
    // A NUL past the first 8192 bytes does not make a file binary.
    let mut late = vec![b'a'; 8192];
    late.push(0);
    ok(std::fs::write(fx.path("late.txt"), late), "late");
    assert!(!fx.call("read", &read_args("late.txt")).await.is_error);
}

#[tokio::test]
async fn read_resolves_paths_on_the_file_system() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let ws = fx.workspace.display();
    fx.write_file("notes.txt", "one\n");
    fx.write_file("e/sub/b.txt", "b\n");
    fx.write_file("e/top.txt", "top\n");
    ok(symlink("e/sub", fx.path("ln_dir")), "symlink");
    ok(symlink("loop", fx.path("loop")), "symlink");
    for (raw, shown) in [
        ("notes.txt/x", "notes.txt/x"),
        ("./notes.txt//x/", "notes.txt/x"),
    ] {
        assert_failure(
            &fx.call("read", &read_args(raw)).await,
            &format!(
                "Error: cannot resolve \"{ws}/{shown}\": a parent path segment is not a directory"
            ),
            Some("FS_NOT_FOUND"),
        );
    }
    assert_failure(
        &fx.call("read", &read_args("nope/../notes.txt")).await,
        &format!(
            "Error: cannot resolve \"{ws}/nope/../notes.txt\": parent traversal crosses a missing directory"
        ),
        Some("FS_NOT_FOUND"),
    );
    assert_failure(
        &fx.call("read", &read_args("loop")).await,
        &format!("Error: ELOOP: too many symbolic links encountered, realpath '{ws}/loop'"),
        None,
    );
    // `..` after a link goes up from the link's target; a result names
    // the file itself, an error the path as given.
    let up = fx.call("read", &read_args("ln_dir/../top.txt")).await;
    assert!(
        text(&up).starts_with(&format!("<path>{ws}/e/top.txt</path>")),
        "{}",
        text(&up)
    );
    assert_failure(
        &fx.call("read", &read_args("ln_dir/../notes.txt")).await,
        &format!("Error: cannot read \"{ws}/ln_dir/../notes.txt\": not found"),
        Some("FS_NOT_FOUND"),
    );
    // `~` is an ordinary name.
    assert_failure(
        &fx.call("read", &read_args("~/notes.txt")).await,
        &format!("Error: cannot read \"{ws}/~/notes.txt\": not found"),
        Some("FS_NOT_FOUND"),
    );
    for empty in ["", "  "] {
        assert_failure(
            &fx.call("read", &read_args(empty)).await,
            "Error: file_path must be a non-empty string",
            None,
        );
    }
}

#[tokio::test]
async fn read_of_an_empty_file_and_long_lines() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    fx.write_file("empty.txt", "");
    let out = fx.call("read", &read_args("empty.txt")).await;
    assert!(text(&out).ends_with("<content>\n(End of file - total 0 lines)\n</content>"));
    fx.write_file("wide.txt", &"x".repeat(5000));
    let wide = fx.call("read", &read_args("wide.txt")).await;
    let cut = format!(
        "1: {}... (line truncated to 2000 chars)\n",
        "x".repeat(2000)
    );
    assert!(text(&wide).contains(&cut), "{}", text(&wide));
    // Lines are measured in UTF-16 units: 2000 of them hold 1000 emoji.
    fx.write_file("emoji.txt", &"\u{1F600}".repeat(1001));
    let emoji = fx.call("read", &read_args("emoji.txt")).await;
    let cut = format!("1: {}... (line", "\u{1F600}".repeat(1000));
    assert!(text(&emoji).contains(&cut), "{}", text(&emoji));
    // A byte-order mark is dropped.
    fx.write_file("bom.txt", "\u{feff}hi\n");
    let bom = fx.call("read", &read_args("bom.txt")).await;
    assert!(text(&bom).contains("<content>\n1: hi\n"), "{}", text(&bom));
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
    let path = fx.path("a/b/new.txt");
    assert_eq!(text(&out), write_result(&path, "Created file"));
    assert_eq!(
        out.meta,
        Some(json!({"operation": "create", "path": path.to_string_lossy(), "diffs": []}))
    );
    // Replacing it reports an update and the changed lines.
    fx.call("read", &read_args("a/b/new.txt")).await;
    let updated = fx
        .call("write", &write_args("a/b/new.txt", "hello\nworld\n"))
        .await;
    assert!(!updated.is_error, "{}", text(&updated));
    assert_eq!(text(&updated), write_result(&path, "Updated file"));
    assert_eq!(
        updated.meta,
        Some(json!({
            "operation": "update",
            "path": path.to_string_lossy(),
            "diffs": [{"path": path.to_string_lossy(), "oldText": "hello", "newText": "hello\nworld"}]
        }))
    );
}

#[tokio::test]
async fn write_requires_reading_an_existing_file_first() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    fx.write_file("old.txt", "v1\n");
    let blind = fx
        .call("write", "{\"file_path\":\"old.txt\",\"content\":\"v2\"}")
        .await;
    let old = fx.path("old.txt");
    assert_failure(
        &blind,
        &format!(
            "Error: cannot modify \"{}\": file has not been read — read the file, then retry",
            old.display()
        ),
        Some("FS_NOT_OBSERVED"),
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
    assert_failure(
        &stale,
        &format!(
            "Error: cannot write \"{}\": file changed since it was read — re-read the file, then retry",
            old.display()
        ),
        Some("FS_STALE_VERSION"),
    );
    // A file the session saw that is gone is not silently created again.
    fx.call("read", &read_args("old.txt")).await;
    ok(std::fs::remove_file(&old), "rm");
    assert_failure(
        &fx.call("write", &write_args("old.txt", "v5")).await,
        &format!(
            "Error: cannot write \"{}\": file no longer exists — re-read the file, then retry",
            old.display()
        ),
        Some("FS_STALE_VERSION"),
    );
    // A read that found nothing lets write create the file.
    fx.call("read", &read_args("fresh.txt")).await;
    let fresh = fx.call("write", &write_args("fresh.txt", "new")).await;
    assert!(!fresh.is_error, "{}", text(&fresh));
}

#[tokio::test]
async fn write_refuses_what_is_not_a_regular_file() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let ws = fx.workspace.display();
    fx.write_file("notes.txt", "n\n");
    fx.write_file("d/a.txt", "a\n");
    assert_failure(
        &fx.call("write", &write_args("d/", "x")).await,
        &format!("Error: cannot write \"{ws}/d\": not a regular file"),
        Some("FS_NOT_REGULAR_FILE"),
    );
    assert_failure(
        &fx.call("write", &write_args("notes.txt/x", "x")).await,
        &format!(
            "Error: cannot resolve \"{ws}/notes.txt/x\": a parent path segment is not a directory"
        ),
        Some("FS_NOT_FOUND"),
    );
    assert_failure(
        &fx.call("write", &write_args("d/../nope/../new.txt", "x"))
            .await,
        &format!(
            "Error: cannot resolve \"{ws}/d/../nope/../new.txt\": parent traversal crosses a missing directory"
        ),
        Some("FS_NOT_FOUND"),
    );
    assert!(!fx.path("new.txt").exists());
    assert_failure(
        &fx.call("write", &write_args(" ", "x")).await,
        "Error: file_path must be a non-empty string",
        None,
    );
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
    assert_failure(
        &denied,
        &sandbox_denied("workspace-write"),
        Some("FS_SANDBOX_DENIED"),
    );
    assert!(!target.exists());
    let dotdot = ww
        .call(
            "write",
            "{\"file_path\":\"../escape.txt\",\"content\":\"x\"}",
        )
        .await;
    assert_failure(
        &dotdot,
        &sandbox_denied("workspace-write"),
        Some("FS_SANDBOX_DENIED"),
    );

    let ro = Fixture::new(PermissionMode::ReadOnly);
    let denied = ro
        .call("write", "{\"file_path\":\"in.txt\",\"content\":\"x\"}")
        .await;
    assert_failure(
        &denied,
        &sandbox_denied("read-only"),
        Some("FS_SANDBOX_DENIED"),
    );
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
    assert!(unread.is_error && text(&unread).contains("file has not been read"));
    fx.call("read", &read_args("code.rs")).await;
    let out = fx
        .call(
            "edit",
            "{\"file_path\":\"code.rs\",\"old_string\":\"fn a\",\"new_string\":\"fn z\"}",
        )
        .await;
    assert!(!out.is_error, "{}", text(&out));
    let path = fx.path("code.rs");
    let shown = path.to_string_lossy();
    assert_eq!(
        text(&out),
        format!("The file {shown} has been updated successfully.")
    );
    assert_eq!(
        out.meta,
        Some(json!({
            "path": shown,
            "diffs": [{"path": shown, "oldText": "fn a() {}\nfn b() {}", "newText": "fn z() {}\nfn b() {}"}]
        }))
    );
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
    assert_eq!(
        text(&second),
        format!("The file {shown} has been updated successfully.")
    );
    assert_eq!(
        some(second.meta, "meta")["diffs"],
        json!([{"path": shown, "oldText": "fn z() {}\nfn b() {}", "newText": "fn z() {}\nfn y() {}"}])
    );
}

#[tokio::test]
async fn edit_failure_modes() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let dup = fx.write_file("dup.txt", "x = 1\nx = 1\nx = 1\n");
    let shown = dup.display();
    fx.call("read", &read_args("dup.txt")).await;
    let ambiguous = fx
        .call("edit", &edit_args("dup.txt", "x = 1", "x = 2"))
        .await;
    assert_failure(
        &ambiguous,
        &format!(
            "Error: old_string matched 3 times in \"{shown}\"; provide a more specific old_string or set replace_all to true"
        ),
        Some("FS_AMBIGUOUS_EDIT"),
    );
    let missing = fx
        .call("edit", &edit_args("dup.txt", "y = 1", "y = 2"))
        .await;
    assert_failure(
        &missing,
        &format!("Error: old_string was not found in \"{shown}\""),
        Some("FS_EDIT_NOT_FOUND"),
    );
    let same = fx.call("edit", &edit_args("dup.txt", "x", "x")).await;
    assert_failure(&same, "Error: old_string and new_string must differ", None);
    let empty = fx.call("edit", &edit_args("dup.txt", "", "x")).await;
    assert_failure(&empty, "Error: old_string must be a non-empty string", None);
    let all = fx
        .call(
            "edit",
            "{\"file_path\":\"dup.txt\",\"old_string\":\"x = 1\",\"new_string\":\"x = 2\",\"replace_all\":true}",
        )
        .await;
    assert!(!all.is_error, "{}", text(&all));
    assert_eq!(
        text(&all),
        format!("The file {shown} has been updated. All occurrences were successfully replaced.")
    );
    assert_eq!(
        all.meta,
        Some(json!({
            "path": dup.to_string_lossy(),
            "diffs": [{
                "path": dup.to_string_lossy(),
                "oldText": "x = 1\nx = 1\nx = 1",
                "newText": "x = 2\nx = 2\nx = 2"
            }]
        }))
    );
    assert_eq!(
        ok(std::fs::read_to_string(fx.path("dup.txt")), "dup"),
        "x = 2\nx = 2\nx = 2\n"
    );
    // Never read: refused whatever is there (nothing, a directory).
    let ws = fx.workspace.display();
    std::fs::create_dir_all(fx.path("dir")).unwrap();
    for name in ["absent.txt", "dir"] {
        assert_failure(
            &fx.call("edit", &edit_args(name, "a", "b")).await,
            &format!(
                "Error: cannot modify \"{ws}/{name}\": file has not been read — read the file, then retry"
            ),
            Some("FS_NOT_OBSERVED"),
        );
    }
    // A read that found nothing makes the edit "not found".
    fx.call("read", &read_args("absent.txt")).await;
    assert_failure(
        &fx.call("edit", &edit_args("absent.txt", "a", "b")).await,
        &format!("Error: cannot edit \"{ws}/absent.txt\": not found"),
        Some("FS_NOT_FOUND"),
    );
    // Changed, removed or replaced by a directory since it was read.
    fx.write_file("gone.txt", "g\n");
    fx.call("read", &read_args("gone.txt")).await;
    fx.write_file("gone.txt", "changed\n");
    let stale = format!(
        "Error: cannot edit \"{ws}/gone.txt\": file changed since it was read — re-read the file, then retry"
    );
    let changed = fx.call("edit", &edit_args("gone.txt", "g", "h")).await;
    assert_failure(&changed, &stale, Some("FS_STALE_VERSION"));
    ok(std::fs::remove_file(fx.path("gone.txt")), "rm");
    let removed = fx.call("edit", &edit_args("gone.txt", "g", "h")).await;
    assert_failure(&removed, &stale, Some("FS_STALE_VERSION"));
    fx.write_file("was_file.txt", "f\n");
    fx.call("read", &read_args("was_file.txt")).await;
    ok(std::fs::remove_file(fx.path("was_file.txt")), "rm");
    ok(std::fs::create_dir(fx.path("was_file.txt")), "mkdir");
    assert_failure(
        &fx.call("edit", &edit_args("was_file.txt", "f", "g")).await,
        &format!("Error: cannot edit \"{ws}/was_file.txt\": not a regular file"),
        Some("FS_NOT_REGULAR_FILE"),
    );
}

#[tokio::test]
async fn edit_respects_the_mode() {
    let fx = Fixture::new(PermissionMode::ReadOnly);
    fx.write_file("f.txt", "a\n");
    fx.call("read", &read_args("f.txt")).await;
    let out = fx.call("edit", &edit_args("f.txt", "a", "b")).await;
    assert_failure(
        &out,
        &sandbox_denied("read-only"),
        Some("FS_SANDBOX_DENIED"),
    );
    assert_eq!(ok(std::fs::read_to_string(fx.path("f.txt")), "f"), "a\n");
}

/// The text of a successful write of `path` (absolute, links resolved):
/// `done` is "Created file" or "Updated file".
fn write_result(path: &Path, done: &str) -> String {
    format!(
        "<path>{}</path>\n<type>file</type>\n<content>\n{done}\n</content>",
        path.display()
    )
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

/// Asserts the sandbox's refusal of a write that leads out of the
/// workspace (links are followed first, as the official runtime does).
fn assert_link_refusal(out: &dsh_tools::ToolOutput) {
    assert_failure(
        out,
        &sandbox_denied("workspace-write"),
        Some("FS_SANDBOX_DENIED"),
    );
}

#[tokio::test]
async fn write_through_a_dangling_link_to_the_outside_is_refused() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let outside = outside_dir();
    let target = outside.path().join("planted.txt");
    ok(symlink(&target, fx.path("dangling")), "symlink");
    // A dangling link is not a regular file: refused, as officially.
    let out = fx.call("write", &write_args("dangling", "owned")).await;
    assert_failure(
        &out,
        &format!(
            "Error: cannot write \"{}\": not a regular file",
            fx.path("dangling").display()
        ),
        Some("FS_NOT_REGULAR_FILE"),
    );
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
    // Results name the file itself, links resolved.
    let real = fx.path("real/dir/new.txt");
    let shown = real.to_string_lossy();
    assert_eq!(text(&out), write_result(&real, "Created file"));
    assert_eq!(
        out.meta,
        Some(json!({"operation": "create", "path": shown, "diffs": []}))
    );
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
        text(&edited),
        format!("The file {shown} has been updated successfully.")
    );
    assert_eq!(
        edited.meta,
        Some(json!({
            "path": shown,
            "diffs": [{"path": shown, "oldText": "one", "newText": "two"}]
        }))
    );
    assert_eq!(
        ok(std::fs::read_to_string(fx.path("real/dir/new.txt")), "new"),
        "two\n"
    );
    let replaced = fx
        .call("write", &write_args("inner_link/new.txt", "three"))
        .await;
    assert!(!replaced.is_error, "{}", text(&replaced));
    assert_eq!(text(&replaced), write_result(&real, "Updated file"));
    assert_eq!(
        replaced.meta,
        Some(json!({
            "operation": "update",
            "path": shown,
            "diffs": [{"path": shown, "oldText": "two", "newText": "three"}]
        }))
    );
    // An absolute link that stays inside works too.
    ok(symlink(fx.path("real/dir"), fx.path("abs_link")), "symlink");
    let absolute = fx
        .call("write", &write_args("abs_link/abs.txt", "abs"))
        .await;
    assert!(!absolute.is_error, "{}", text(&absolute));
    // A link to a file that does not exist yet is not a regular file:
    // refused, as officially, and nothing is created.
    ok(symlink("real/pending.txt", fx.path("pending")), "symlink");
    let pending = fx.call("write", &write_args("pending", "made")).await;
    assert!(pending.is_error, "{}", text(&pending));
    assert!(!fx.path("real/pending.txt").exists());
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

/// An editor whose second read (the one `edit` makes of a file the session
/// read) swaps the file's directory for a link to `outside`, as a command
/// running meanwhile could; it records every write it is handed.
struct SwappingEditor {
    reads: std::sync::Mutex<usize>,
    dir: std::path::PathBuf,
    outside: std::path::PathBuf,
    writes: std::sync::Mutex<Vec<std::path::PathBuf>>,
}

impl dsh_tools::EditorFiles for SwappingEditor {
    fn read_text(&self, path: &Path) -> Option<Result<String, String>> {
        let mut reads = ok(self.reads.lock(), "lock");
        *reads += 1;
        if *reads == 2 {
            ok(
                std::fs::rename(&self.dir, self.dir.with_extension("real")),
                "rename",
            );
            ok(symlink(&self.outside, &self.dir), "symlink");
        }
        Some(std::fs::read_to_string(path).map_err(|e| e.to_string()))
    }

    fn write_text(&self, path: &Path, _content: &str) -> Option<Result<(), String>> {
        ok(self.writes.lock(), "lock").push(path.to_path_buf());
        Some(Ok(()))
    }
}

#[tokio::test]
async fn an_editor_write_never_follows_a_directory_swapped_after_the_checks() {
    let mut fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let outside = outside_dir();
    ok(
        std::fs::write(outside.path().join("x.txt"), "secret = 1\n"),
        "write",
    );
    fx.write_file("d/x.txt", "secret = 1\n");
    let editor = Arc::new(SwappingEditor {
        reads: std::sync::Mutex::new(0),
        dir: fx.path("d"),
        outside: outside.path().to_path_buf(),
        writes: std::sync::Mutex::new(Vec::new()),
    });
    fx.editor = Some(editor.clone());
    let read = fx.call("read", &read_args("d/x.txt")).await;
    assert!(!read.is_error, "{}", text(&read));
    let args = json!({"file_path": "d/x.txt", "old_string": "1", "new_string": "2"}).to_string();
    let out = fx.call("edit", &args).await;
    assert!(
        out.is_error,
        "the edit went through a swapped directory: {}",
        text(&out)
    );
    assert!(
        text(&out).contains("no longer leads where it was checked"),
        "{}",
        text(&out)
    );
    assert!(
        editor.writes.lock().unwrap().is_empty(),
        "the editor was handed a write"
    );
    assert_eq!(
        std::fs::read_to_string(outside.path().join("x.txt")).unwrap(),
        "secret = 1\n"
    );
}
