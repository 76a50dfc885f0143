//! Issue 15 for the file tools: special files (devices, FIFOs, sockets)
//! are refused without blocking or streaming, and `read`, `edit` and
//! `write` share one size limit whose refusal names `DSH_FILE_MAX_BYTES`.

use crate::common::{Fixture, js, ok, text};
use dsh_tools::PermissionMode;
use serde_json::json;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Runs a call, failing (instead of hanging the suite) if it never ends.
async fn call(fx: &Fixture, tool: &str, arguments: String) -> dsh_tools::ToolOutput {
    let run = fx.call(tool, &arguments);
    match tokio::time::timeout(Duration::from_secs(60), run).await {
        Ok(out) => out,
        Err(_) => panic!("{tool} {arguments} never returned"),
    }
}

fn path_arg(path: &Path) -> String {
    format!("{{\"file_path\":{}}}", js(&path.to_string_lossy()))
}

fn mkfifo(path: &Path) {
    let status = ok(Command::new("mkfifo").arg(path).status(), "mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

fn assert_refused(out: &dsh_tools::ToolOutput, action: &str, path: &Path) {
    assert!(out.is_error, "{}", text(out));
    assert_eq!(
        text(out),
        format!(
            "Error: cannot {action} \"{}\": not a regular file",
            path.display()
        )
    );
    let error = out
        .error
        .as_ref()
        .map(|e| (e.name.as_str(), e.code.as_str()));
    assert_eq!(error, Some(("FsError", "FS_NOT_REGULAR_FILE")));
}

#[tokio::test]
async fn devices_fifos_and_sockets_are_refused_by_every_file_tool() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let fifo = fx.path("fifo");
    mkfifo(&fifo);
    let socket = fx.path("socket");
    let _listener = ok(std::os::unix::net::UnixListener::bind(&socket), "bind");
    let link = fx.path("zero-link");
    ok(std::os::unix::fs::symlink("/dev/zero", &link), "symlink");
    let device = |name: &str| Path::new("/dev").join(name);
    for path in [
        device("zero"),
        device("urandom"),
        link,
        fifo.clone(),
        socket,
    ] {
        let out = call(&fx, "read", path_arg(&path)).await;
        assert_refused(&out, "read", &path);
        let image = call(&fx, "read_image", path_arg(&path)).await;
        assert_refused(&image, "read", &path);
    }
    let write = call(
        &fx,
        "write",
        format!("{{\"file_path\":{},\"content\":\"x\"}}", js("fifo")),
    )
    .await;
    assert_refused(&write, "write", &fifo);
    let edit = call(
        &fx,
        "edit",
        format!(
            "{{\"file_path\":{},\"old_string\":\"a\",\"new_string\":\"b\"}}",
            js("fifo")
        ),
    )
    .await;
    // Never read (a FIFO cannot be): refused before its type is looked at.
    assert!(
        text(&edit).starts_with("Error: cannot modify \"")
            && text(&edit).contains("has not been read"),
        "{}",
        text(&edit)
    );
    // A file read, then replaced by a FIFO: refused for its type.
    let swapped = fx.write_file("swapped", "a\n");
    call(&fx, "read", path_arg(&swapped)).await;
    ok(std::fs::remove_file(&swapped), "rm");
    mkfifo(&swapped);
    let edit = call(
        &fx,
        "edit",
        format!(
            "{{\"file_path\":{},\"old_string\":\"a\",\"new_string\":\"b\"}}",
            js("swapped")
        ),
    )
    .await;
    assert_refused(&edit, "edit", &swapped);
    let grep = call(
        &fx,
        "grep",
        format!("{{\"pattern\":\"x\",\"path\":{}}}", js("fifo")),
    )
    .await;
    assert_refused(&grep, "search", &fifo);
    // The FIFO is still a FIFO: nothing replaced it.
    let meta = ok(std::fs::symlink_metadata(&fifo), "stat fifo");
    assert!(std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()));
}

#[tokio::test]
async fn grep_walks_past_special_files() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    mkfifo(&fx.path("a-fifo"));
    fx.write_file("b.txt", "needle\n");
    let out = call(&fx, "grep", "{\"pattern\":\"needle\"}".to_owned()).await;
    assert!(!out.is_error, "{}", text(&out));
    assert_eq!(text(&out), "Found 1 match\n\nb.txt\nLine 1: needle");
    assert_eq!(
        out.meta,
        Some(json!({
            "shape": "matches",
            "files": [{"path": "b.txt", "matches": [{"lineNumber": 1, "line": "needle"}]}],
            "truncated": false,
            "total": 1,
        }))
    );
}

/// The fixture's tools with a size limit of `limit` bytes.
fn limited(limit: u64) -> Fixture {
    Fixture::with(PermissionMode::WorkspaceWrite, |mut config| {
        config.file_max_bytes = limit;
        config
    })
}

#[tokio::test]
async fn read_accepts_a_file_at_the_limit_and_refuses_one_above() {
    let fx = limited(100);
    let at = fx.write_file("at.txt", &"x\n".repeat(50));
    let out = call(&fx, "read", path_arg(&at)).await;
    assert!(!out.is_error, "{}", text(&out));
    assert!(text(&out).contains("(End of file - total 50 lines)"));
    let above = fx.write_file("above.txt", &"x\n".repeat(51));
    let out = call(&fx, "read", path_arg(&above)).await;
    assert!(out.is_error);
    assert_eq!(
        text(&out),
        format!(
            "Error: {} is 102 bytes, more than read accepts (100 bytes, set by DSH_FILE_MAX_BYTES); inspect it with bash (head, tail, sed -n).",
            above.display()
        )
    );
}

#[tokio::test]
async fn write_refuses_content_above_the_limit_before_touching_the_file() {
    let fx = limited(100);
    let out = call(
        &fx,
        "write",
        format!(
            "{{\"file_path\":\"big.txt\",\"content\":{}}}",
            js(&"y".repeat(101))
        ),
    )
    .await;
    assert!(out.is_error);
    assert_eq!(
        text(&out),
        "Error: the content is 101 bytes, more than write accepts (100 bytes, set by DSH_FILE_MAX_BYTES); nothing was written."
    );
    assert!(!fx.path("big.txt").exists());
    let fits = call(
        &fx,
        "write",
        format!(
            "{{\"file_path\":\"big.txt\",\"content\":{}}}",
            js(&"y".repeat(100))
        ),
    )
    .await;
    assert!(!fits.is_error, "{}", text(&fits));
}

#[tokio::test]
async fn edit_refuses_a_result_above_the_limit_and_changes_nothing() {
    let fx = limited(100);
    let path = fx.write_file("grow.txt", &"a\n".repeat(40));
    let read = call(&fx, "read", path_arg(&path)).await;
    assert!(!read.is_error, "{}", text(&read));
    let edit = |new: &str| {
        format!(
            "{{\"file_path\":\"grow.txt\",\"old_string\":\"a\",\"new_string\":{},\"replace_all\":true}}",
            js(new)
        )
    };
    let out = call(&fx, "edit", edit("aaa")).await;
    assert!(out.is_error);
    assert_eq!(
        text(&out),
        format!(
            "Error: the edit would make {} 160 bytes, more than edit writes (100 bytes, set by DSH_FILE_MAX_BYTES); nothing was changed.",
            path.display()
        )
    );
    assert_eq!(
        ok(std::fs::read_to_string(&path), "read back"),
        "a\n".repeat(40)
    );
    let fits = call(&fx, "edit", edit("b")).await;
    assert!(!fits.is_error, "{}", text(&fits));
    assert_eq!(
        ok(std::fs::read_to_string(&path), "read back"),
        "b\n".repeat(40)
    );
}

#[tokio::test]
async fn grep_skips_a_file_whose_line_is_longer_than_the_limit_with_a_note() {
    let fx = limited(64 * 1024);
    let long = fx.write_file("a-long.txt", &"needle".repeat(20_000));
    fx.write_file("b-short.txt", "needle\n");
    let out = call(&fx, "grep", "{\"pattern\":\"needle\"}".to_owned()).await;
    assert!(!out.is_error, "{}", text(&out));
    let body = text(&out);
    assert!(
        body.starts_with(&format!(
            "Found 1 match\n\nb-short.txt\nLine 1: needle\n\n(1 file was not searched: a line longer than 65536 bytes (set by DSH_FILE_MAX_BYTES) or a read error; e.g. {}: ",
            long.display()
        )),
        "{body}"
    );
    assert!(body.ends_with(".)"), "{body}");
    assert_eq!(
        out.meta,
        Some(json!({
            "shape": "matches",
            "files": [{"path": "b-short.txt", "matches": [{"lineNumber": 1, "line": "needle"}]}],
            "truncated": false,
            "total": 1,
        }))
    );
}

#[tokio::test]
async fn read_of_many_short_lines_pages_as_before() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let path = fx.write_file("blank.txt", &"\r\n".repeat(3000));
    let out = call(&fx, "read", path_arg(&path)).await;
    let body = text(&out);
    let numbered: String = (1..=2000).map(|n| format!("{n}: \n")).collect();
    assert_eq!(
        body,
        format!(
            "<path>{}</path>\n<type>file</type>\n<content>\n{numbered}\n(Showing lines 1-2000 of 3000. Use offset=2001 to continue.)\n</content>",
            path.display()
        )
    );
    let tail = call(
        &fx,
        "read",
        "{\"file_path\":\"blank.txt\",\"offset\":2999}".to_owned(),
    )
    .await;
    assert!(
        text(&tail).contains("<content>\n2999: \n3000: \n\n(End of file - total 3000 lines)"),
        "{}",
        text(&tail)
    );
}
