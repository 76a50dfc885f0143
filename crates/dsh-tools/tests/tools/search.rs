//! `glob` and `grep`.

use crate::common::{Fixture, js, ok, some, text};
use dsh_tools::{PermissionMode, ToolOutput};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

fn set_mtime(path: &std::path::Path, seconds_ago: u64) {
    let file = ok(std::fs::File::options().write(true).open(path), "open");
    let when = SystemTime::now() - Duration::from_secs(seconds_ago);
    ok(file.set_modified(when), "set mtime");
}

// Order, relative paths, hidden and ignored files, meta shape and the
// limit of 100 measured on the official runtime.
#[tokio::test]
async fn glob_lists_oldest_first_caps_at_100_and_spills_the_full_list() {
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
    assert_eq!(lines.len(), 102, "{body}");
    assert_eq!(lines[0], "src/f000.rs");
    assert_eq!(lines[99], "src/f099.rs");
    assert_eq!(lines[100], "");
    assert!(
        lines[101].starts_with("(5 more matching files not shown"),
        "{}",
        lines[101]
    );
    let meta = some(out.meta, "meta");
    assert_eq!(meta["shape"], "paths");
    assert_eq!(meta["total"], 105);
    assert_eq!(meta["truncated"], true);
    assert_eq!(meta["paths"].as_array().map(Vec::len), Some(100));
    assert_eq!(meta["paths"][0], "src/f000.rs");
    // The full list, in the same order, in a private spill file.
    let spilled = some(
        std::fs::read_dir(&fx.spill)
            .ok()
            .and_then(|mut dir| dir.next())
            .and_then(Result::ok),
        "spill file",
    );
    assert!(
        lines[101].contains(&*spilled.path().to_string_lossy()),
        "{}",
        lines[101]
    );
    let full = ok(std::fs::read_to_string(spilled.path()), "read spill");
    let expected: Vec<String> = (0..105).map(|n| format!("src/f{n:03}.rs")).collect();
    assert_eq!(full.lines().collect::<Vec<_>>(), expected);
    use std::os::unix::fs::PermissionsExt;
    let mode = ok(spilled.metadata(), "stat").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // At the limit nothing is spilled.
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    for n in 0..100 {
        fx.write_file(&format!("f{n:03}.rs"), "x");
    }
    let out = fx.call("glob", "{\"pattern\":\"*.rs\"}").await;
    assert_eq!(text(&out).lines().count(), 100);
    assert_eq!(some(out.meta, "meta")["truncated"], false);
    assert!(!fx.spill.exists());
}

#[tokio::test]
async fn glob_includes_hidden_and_ignored_files_and_matches_names_at_any_depth() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let files = [
        ".gitignore",
        "top.rs",
        "ignored.rs",
        ".hidden.rs",
        "build/gen.rs",
        "deep/er/inner.rs",
        ".git/config.rs",
    ];
    for (age, name) in files.iter().enumerate() {
        let path = fx.write_file(
            name,
            if *name == ".gitignore" {
                "ignored.rs\nbuild/\n"
            } else {
                "x"
            },
        );
        set_mtime(&path, 100 - age as u64);
    }
    let expected = "top.rs\nignored.rs\n.hidden.rs\nbuild/gen.rs\ndeep/er/inner.rs";
    assert_eq!(
        text(&fx.call("glob", "{\"pattern\":\"*.rs\"}").await),
        expected
    );
    assert_eq!(
        text(&fx.call("glob", "{\"pattern\":\"**/*.rs\"}").await),
        expected
    );
    let anchored = text(&fx.call("glob", "{\"pattern\":\"deep/*.rs\"}").await);
    assert_eq!(anchored, "No files found");
    let scoped = fx
        .call("glob", "{\"pattern\":\"*.rs\",\"path\":\"deep/er\"}")
        .await;
    assert_eq!(
        text(&scoped),
        "deep/er/inner.rs",
        "relative to the cwd, not to path"
    );
    let none = fx.call("glob", "{\"pattern\":\"*.py\"}").await;
    assert!(!none.is_error);
    assert_eq!(text(&none), "No files found");
    let meta = some(none.meta, "meta");
    assert_eq!(
        meta,
        serde_json::json!({"shape": "paths", "paths": [], "truncated": false, "total": 0})
    );
    let bad = fx.call("glob", "{\"pattern\":\"a[\"}").await;
    assert_eq!(
        text(&bad),
        "Error: glob pattern rejected by ripgrep: rg: error parsing glob 'a[': unclosed character class; missing ']'"
    );
    assert_eq!(
        bad.error.map(|e| (e.name, e.code.to_string())),
        Some((
            "SearchError".to_owned(),
            "SEARCH_INVALID_PATTERN".to_owned()
        ))
    );
}

#[tokio::test]
async fn glob_and_grep_paths_as_ripgrep_sees_them() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    fx.write_file("notes.txt", "line\n");
    fx.write_file("d/a.txt", "a\n");
    for tool in ["glob", "grep"] {
        for (path, why) in [
            ("nowhere", "No such file or directory (os error 2)"),
            ("./nowhere/", "No such file or directory (os error 2)"),
            // The kernel resolves `..` after a missing directory: it fails.
            ("nowhere/../d", "No such file or directory (os error 2)"),
            ("notes.txt/x", "Not a directory (os error 20)"),
        ] {
            let args = format!("{{\"pattern\":\"txt\",\"path\":{}}}", js(path));
            let out = fx.call(tool, &args).await;
            assert!(out.is_error, "{}", text(&out));
            assert_eq!(
                text(&out),
                format!(
                    "Error: {tool} search failed (exit 2): rg: {path}: IO error for operation on {path}: {why}"
                )
            );
            assert_eq!(
                out.error.map(|e| (e.name, e.code.to_string())),
                Some(("SearchError".to_owned(), "SEARCH_FAILED".to_owned()))
            );
        }
        let blank = fx.call(tool, "{\"pattern\":\"txt\",\"path\":\" \"}").await;
        assert_eq!(
            text(&blank),
            "Error: path must be a non-empty string when given"
        );
    }
    // glob lists a file it is given, whatever the pattern.
    let file = fx
        .call("glob", "{\"pattern\":\"*.zzz\",\"path\":\"notes.txt\"}")
        .await;
    assert!(!file.is_error);
    assert_eq!(text(&file), "notes.txt");
    assert_eq!(
        some(file.meta, "meta"),
        serde_json::json!({"shape": "paths", "paths": ["notes.txt"], "truncated": false, "total": 1})
    );
    for (tool, pattern, expected) in [
        ("glob", " ", "Error: pattern must be a non-empty string"),
        ("grep", "", "Error: pattern must be a non-empty string"),
    ] {
        let out = fx
            .call(tool, &format!("{{\"pattern\":{}}}", js(pattern)))
            .await;
        assert_eq!(text(&out), expected);
    }
    let include = fx
        .call("grep", "{\"pattern\":\"a\",\"include\":\" \"}")
        .await;
    assert_eq!(
        text(&include),
        "Error: include must be a non-empty glob when given"
    );
}

/// A matching line as grep reports it: the file (relative to the
/// workspace, the fixture's cwd), the line number and the line.
type Hit = (String, u64, String);

fn hit(file: &str, number: u64, line: &str) -> Hit {
    (file.to_owned(), number, line.to_owned())
}

/// The files under `dir`, relative to `root`, in the order grep walks
/// them: depth first, the entries of each directory in the reverse of
/// the order the file system lists them.
fn walk_order(root: &Path, dir: &Path, into: &mut Vec<String>) {
    let mut entries: Vec<PathBuf> = ok(std::fs::read_dir(dir), "read dir")
        .map(|entry| ok(entry, "entry").path())
        .collect();
    entries.reverse();
    for path in entries {
        if path.is_dir() {
            walk_order(root, &path, into);
        } else {
            let relative = ok(path.strip_prefix(root), "relative path");
            into.push(relative.to_string_lossy().into_owned());
        }
    }
}

/// `hits` with their files in the walk order of the workspace (each
/// file's lines keep their order).
fn in_walk_order(fx: &Fixture, mut hits: Vec<Hit>) -> Vec<Hit> {
    let mut order = Vec::new();
    walk_order(&fx.workspace, &fx.workspace, &mut order);
    let position = |file: &str| some(order.iter().position(|f| f == file), file);
    hits.sort_by_key(|(file, _, _)| position(file));
    hits
}

/// The blocks of `hits`: per file its path then `Line N: text` per line,
/// blocks separated by a blank line.
fn blocks(hits: &[Hit]) -> String {
    let mut out = String::new();
    let mut last: Option<&str> = None;
    for (file, number, line) in hits {
        if last != Some(file.as_str()) {
            if last.is_some() {
                out.push_str("\n\n");
            }
            out.push_str(file);
            last = Some(file);
        }
        out.push_str(&format!("\nLine {number}: {line}"));
    }
    out
}

/// The `files` member of the meta of `hits`.
fn files_meta(hits: &[Hit]) -> Value {
    let mut files: Vec<Value> = Vec::new();
    let mut last: Option<&str> = None;
    for (file, number, line) in hits {
        if last != Some(file.as_str()) {
            files.push(json!({"path": file, "matches": []}));
            last = Some(file);
        }
        let entry = some(files.last_mut(), "file entry");
        let matches = some(entry["matches"].as_array_mut(), "matches");
        matches.push(json!({"lineNumber": number, "line": line}));
    }
    Value::Array(files)
}

/// The text and meta of a search that found `hits` (at most 250), in
/// walk order.
fn found(fx: &Fixture, hits: Vec<Hit>) -> (String, Value) {
    let hits = in_walk_order(fx, hits);
    let header = match hits.len() {
        1 => "Found 1 match".to_owned(),
        n => format!("Found {n} matches"),
    };
    let meta = json!({
        "shape": "matches",
        "files": files_meta(&hits),
        "truncated": false,
        "total": hits.len(),
    });
    (format!("{header}\n\n{}", blocks(&hits)), meta)
}

/// Asserts that `out` is the successful result of a search that found
/// `hits`.
fn assert_found(fx: &Fixture, out: &ToolOutput, hits: Vec<Hit>) {
    assert!(!out.is_error, "{}", text(out));
    let (expected, meta) = found(fx, hits);
    assert_eq!(text(out), expected);
    assert_eq!(out.meta, Some(meta));
}

#[tokio::test]
async fn grep_groups_matches_by_file() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    fx.write_file("a.rs", "fn main() {}\nlet x = 1;\nfn helper() {}\n");
    fx.write_file("b.txt", "nothing\nfn in text\n");
    fx.write_file("sub/c.rs", "// fn\n");
    let out = fx.call("grep", "{\"pattern\":\"^fn \\\\w+\"}").await;
    assert_found(
        &fx,
        &out,
        vec![
            hit("a.rs", 1, "fn main() {}"),
            hit("a.rs", 3, "fn helper() {}"),
            hit("b.txt", 2, "fn in text"),
        ],
    );
    // Files outside the cwd are named by their absolute path.
    let mut outside = fx.ctx();
    outside.cwd = fx.path("sub");
    let out = fx
        .tools
        .run("grep", "{\"pattern\":\"^fn\",\"path\":\"..\"}", outside)
        .await;
    let absolute = |name: &str| fx.path(name).display().to_string();
    let hits = in_walk_order(
        &fx,
        vec![
            hit("a.rs", 1, "fn main() {}"),
            hit("a.rs", 3, "fn helper() {}"),
            hit("b.txt", 2, "fn in text"),
        ],
    );
    let hits: Vec<Hit> = hits
        .into_iter()
        .map(|(file, number, line)| (absolute(&file), number, line))
        .collect();
    assert_eq!(text(&out), format!("Found 3 matches\n\n{}", blocks(&hits)));
}

#[tokio::test]
async fn grep_include_filters_files() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    fx.write_file("a.rs", "needle\n");
    fx.write_file("b.txt", "needle\n");
    fx.write_file("sub/c.rs", "needle\n");
    let by_name = fx
        .call("grep", "{\"pattern\":\"needle\",\"include\":\"*.rs\"}")
        .await;
    assert_found(
        &fx,
        &by_name,
        vec![hit("a.rs", 1, "needle"), hit("sub/c.rs", 1, "needle")],
    );
    let by_path = fx
        .call("grep", "{\"pattern\":\"needle\",\"include\":\"sub/*.rs\"}")
        .await;
    assert_found(&fx, &by_path, vec![hit("sub/c.rs", 1, "needle")]);
    let single = fx
        .call("grep", "{\"pattern\":\"needle\",\"path\":\"b.txt\"}")
        .await;
    assert_found(&fx, &single, vec![hit("b.txt", 1, "needle")]);
}

#[tokio::test]
async fn grep_caps_at_250_matches() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let many: String = (0..300).map(|n| format!("hit {n}\n")).collect();
    fx.write_file("many.txt", &many);
    fx.write_file("zz.txt", "hit last\n");
    let out = fx.call("grep", "{\"pattern\":\"hit\"}").await;
    assert!(!out.is_error, "{}", text(&out));
    let body = text(&out);
    let mut all: Vec<Hit> = (0..300)
        .map(|n| hit("many.txt", n + 1, &format!("hit {n}")))
        .collect();
    all.push(hit("zz.txt", 1, "hit last"));
    let all = in_walk_order(&fx, all);
    let shown = &all[..250];
    // The complete listing, in the same blocks, in a private spill file.
    let spilled = some(
        std::fs::read_dir(&fx.spill)
            .ok()
            .and_then(|mut dir| dir.next())
            .and_then(Result::ok),
        "spill file",
    );
    assert_eq!(
        body,
        format!(
            "Found 250 of 301 matches\n\n{}\n\n(All 301 matching lines, grouped by file the same way, are in {}: read it in parts or grep it; 51 are not shown here.)",
            blocks(shown),
            spilled.path().display()
        )
    );
    assert_eq!(body.lines().filter(|l| l.starts_with("Line ")).count(), 250);
    assert_eq!(
        out.meta,
        Some(json!({
            "shape": "matches",
            "files": files_meta(shown),
            "truncated": true,
            "total": 301,
        }))
    );
    let full = ok(std::fs::read_to_string(spilled.path()), "read spill");
    assert_eq!(full, format!("{}\n", blocks(&all)));
    assert_eq!(full.lines().filter(|l| l.starts_with("Line ")).count(), 301);
    use std::os::unix::fs::PermissionsExt;
    let mode = ok(spilled.metadata(), "stat").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    // At the limit nothing is spilled.
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let exact: String = (0..250).map(|n| format!("hit {n}\n")).collect();
    fx.write_file("exact.txt", &exact);
    let out = fx.call("grep", "{\"pattern\":\"hit\"}").await;
    let hits = (0..250)
        .map(|n| hit("exact.txt", n + 1, &format!("hit {n}")))
        .collect();
    assert_found(&fx, &out, hits);
    assert!(!fx.spill.exists());
}

#[tokio::test]
async fn grep_errors_and_empty_results() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    fx.write_file("a.txt", "abc\n");
    let bad = fx.call("grep", "{\"pattern\":\"(unclosed\"}").await;
    assert!(
        bad.is_error
            && text(&bad)
                .starts_with("Error: grep pattern rejected by ripgrep: rg: regex parse error:")
    );
    let bad_include = fx
        .call("grep", "{\"pattern\":\"a\",\"include\":\"[\"}")
        .await;
    assert_eq!(
        text(&bad_include),
        "Error: grep pattern rejected by ripgrep: rg: error parsing glob '[': unclosed character class; missing ']'"
    );
    let none = fx.call("grep", "{\"pattern\":\"zzz\"}").await;
    assert!(!none.is_error, "{}", text(&none));
    assert_eq!(text(&none), "No matches found");
    assert_eq!(
        none.meta,
        Some(json!({"shape": "matches", "files": [], "truncated": false, "total": 0}))
    );
    ok(std::fs::write(fx.path("bin.dat"), b"abc\0abc"), "bin");
    let skipped = fx.call("grep", "{\"pattern\":\"abc\"}").await;
    assert_found(&fx, &skipped, vec![hit("a.txt", 1, "abc")]);
}
