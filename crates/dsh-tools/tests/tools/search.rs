//! `glob` and `grep`.

use crate::common::{Fixture, ok, some, text};
use dsh_tools::PermissionMode;
use std::time::{Duration, SystemTime};

fn set_mtime(path: &std::path::Path, seconds_ago: u64) {
    let file = ok(std::fs::File::options().write(true).open(path), "open");
    let when = SystemTime::now() - Duration::from_secs(seconds_ago);
    ok(file.set_modified(when), "set mtime");
}

#[tokio::test]
async fn glob_lists_newest_first_and_caps_at_100() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    for n in 0..105 {
        let path = fx.write_file(&format!("src/f{n:03}.rs"), "x");
        // f104 is the newest, f000 the oldest.
        set_mtime(&path, 1000 - n);
    }
    fx.write_file("src/other.txt", "x");
    let out = fx.call("glob", "{\"pattern\":\"src/*.rs\"}").await;
    assert!(!out.is_error);
    let body = text(&out);
    let lines: Vec<&str> = body.lines().collect();
    assert_eq!(lines.len(), 101, "{body}");
    assert_eq!(lines[0], fx.path("src/f104.rs").to_string_lossy());
    assert_eq!(lines[99], fx.path("src/f005.rs").to_string_lossy());
    assert!(
        lines[100].starts_with("(5 more matching files not shown"),
        "{}",
        lines[100]
    );
    let meta = some(out.meta, "meta");
    assert_eq!(meta["matches"], 105);
    assert_eq!(meta["truncated"], true);
}

#[tokio::test]
async fn glob_respects_gitignore_and_segments() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    fx.write_file(".gitignore", "ignored.rs\nbuild/\n");
    fx.write_file("top.rs", "x");
    fx.write_file("ignored.rs", "x");
    fx.write_file("build/gen.rs", "x");
    fx.write_file("deep/er/inner.rs", "x");
    fx.write_file(".git/config.rs", "x");
    let top = text(&fx.call("glob", "{\"pattern\":\"*.rs\"}").await);
    assert_eq!(top, fx.path("top.rs").to_string_lossy());
    let all = text(&fx.call("glob", "{\"pattern\":\"**/*.rs\"}").await);
    let mut lines: Vec<&str> = all.lines().collect();
    lines.sort_unstable();
    let deep = fx.path("deep/er/inner.rs");
    let top_path = fx.path("top.rs");
    assert_eq!(lines, [deep.to_string_lossy(), top_path.to_string_lossy()]);
    let scoped = text(
        &fx.call("glob", "{\"pattern\":\"*.rs\",\"path\":\"deep/er\"}")
            .await,
    );
    assert_eq!(scoped, deep.to_string_lossy());
    let none = fx.call("glob", "{\"pattern\":\"*.py\"}").await;
    assert!(!none.is_error);
    assert!(text(&none).starts_with("No files match \"*.py\""));
    let bad = fx.call("glob", "{\"pattern\":\"a[\"}").await;
    assert!(bad.is_error && text(&bad).contains("invalid glob"));
    let missing = fx
        .call("glob", "{\"pattern\":\"*\",\"path\":\"nowhere\"}")
        .await;
    assert!(missing.is_error);
}

#[tokio::test]
async fn grep_groups_matches_by_file() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    fx.write_file("a.rs", "fn main() {}\nlet x = 1;\nfn helper() {}\n");
    fx.write_file("b.txt", "nothing\nfn in text\n");
    fx.write_file("sub/c.rs", "// fn\n");
    let out = fx.call("grep", "{\"pattern\":\"^fn \\\\w+\"}").await;
    assert!(!out.is_error);
    let expected = format!(
        "Found 3 matches in 2 files.\n\n{}:\n  1: fn main() {{}}\n  3: fn helper() {{}}\n\n{}:\n  2: fn in text",
        fx.path("a.rs").display(),
        fx.path("b.txt").display()
    );
    assert_eq!(text(&out), expected);
    let meta = some(out.meta, "meta");
    assert_eq!(meta["matches"], 3);
    assert_eq!(meta["files"], 2);
}

#[tokio::test]
async fn grep_include_filters_files() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    fx.write_file("a.rs", "needle\n");
    fx.write_file("b.txt", "needle\n");
    fx.write_file("sub/c.rs", "needle\n");
    let names = text(
        &fx.call("grep", "{\"pattern\":\"needle\",\"include\":\"*.rs\"}")
            .await,
    );
    assert!(names.contains("a.rs:") && names.contains("c.rs:"));
    assert!(!names.contains("b.txt"));
    let by_path = text(
        &fx.call("grep", "{\"pattern\":\"needle\",\"include\":\"sub/*.rs\"}")
            .await,
    );
    assert!(by_path.starts_with("Found 1 match in 1 file."), "{by_path}");
    assert!(by_path.contains("c.rs:"));
    let single = text(
        &fx.call("grep", "{\"pattern\":\"needle\",\"path\":\"b.txt\"}")
            .await,
    );
    assert!(single.contains("b.txt:\n  1: needle"));
}

#[tokio::test]
async fn grep_caps_at_250_matches() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let many: String = (0..300).map(|n| format!("hit {n}\n")).collect();
    fx.write_file("many.txt", &many);
    fx.write_file("zz.txt", "hit last\n");
    let out = fx.call("grep", "{\"pattern\":\"hit\"}").await;
    let body = text(&out);
    assert!(
        body.starts_with("Showing the first 250 matches in 1 file; more exist."),
        "{body}"
    );
    assert_eq!(body.lines().filter(|l| l.starts_with("  ")).count(), 250);
    assert!(!body.contains("zz.txt"));
    assert_eq!(some(out.meta, "meta")["truncated"], true);
}

#[tokio::test]
async fn grep_errors_and_empty_results() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    fx.write_file("a.txt", "abc\n");
    let bad = fx.call("grep", "{\"pattern\":\"(unclosed\"}").await;
    assert!(bad.is_error && text(&bad).starts_with("Error: invalid regular expression"));
    let none = fx.call("grep", "{\"pattern\":\"zzz\"}").await;
    assert!(!none.is_error && text(&none).starts_with("No matches for /zzz/"));
    ok(std::fs::write(fx.path("bin.dat"), b"abc\0abc"), "bin");
    let skipped = text(&fx.call("grep", "{\"pattern\":\"abc\"}").await);
    assert!(!skipped.contains("bin.dat"), "{skipped}");
}
