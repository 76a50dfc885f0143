//! The docs name only what exists.
//!
//! Scans the repository's `README.md`, every page of `docs/`, every crate's
//! `README.md` and `examples/README.md`, and checks:
//!
//! * every relative markdown link, `[text](path)`, `[text](path#anchor)`,
//!   `[text](#anchor)` or a reference definition `[label]: path`, names a
//!   file or directory that exists (relative to the page; a leading `/` is
//!   the repository root) and stays inside the repository; an anchor into a
//!   markdown page (or into the page itself) names one of its headings, by
//!   GitHub's slug rules;
//! * every inline-code span that starts with a repository folder
//!   (`crates/`, `scripts/`, `tests/`, …) names a path that exists, after a
//!   `:line` or `::item` suffix is cut; spans holding a placeholder (`*`,
//!   `<`, `{`, `…`) are skipped.
//!
//! Fenced code blocks are not read. Every broken reference is reported at
//! once, as `file:line: problem`.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

/// Inline code starting with one of these is read as a repository path.
const PATH_PREFIXES: &[&str] = &[
    "crates/",
    "scripts/",
    "tests/",
    "bench/",
    "examples/",
    "docs/",
    "packaging/",
    "fuzz/",
    ".ci/",
];

/// Characters that make a code span a pattern or a placeholder, not a path.
const PLACEHOLDER_CHARS: &[char] = &['*', '<', '{', '…'];

/// What a reference in a markdown page points at.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    /// The target of a markdown link or reference definition, as written.
    Link,
    /// A repository path named in inline code, its suffix already cut.
    CodePath,
}

/// One reference found in a markdown page.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Reference {
    /// The 1-based line the reference starts on.
    line: usize,
    /// A link or a code path.
    kind: Kind,
    /// The link target or the path.
    text: String,
}

/// The markdown text outside fenced code blocks: fenced lines become empty
/// lines, so offsets still map to the same line numbers.
fn without_fences(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    // The fence's character and length while inside a fenced block.
    let mut fence: Option<(char, usize)> = None;
    for line in markdown.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
        let run = marker.map_or(0, |c| trimmed.chars().take_while(|x| *x == c).count());
        match (fence, marker) {
            (None, Some(c)) if run >= 3 => {
                fence = Some((c, run));
                out.push('\n');
            }
            (Some((c, len)), Some(m))
                if m == c && run >= len && trimmed[run..].trim().is_empty() =>
            {
                fence = None;
                out.push('\n');
            }
            (Some(_), _) => {
                if line.ends_with('\n') {
                    out.push('\n');
                }
            }
            (None, _) => out.push_str(line),
        }
    }
    out
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()
        .iter()
        .take(offset)
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// The inline code spans of `prose` (text without fences) as (offset,
/// content), and `prose` with every span's content masked by spaces so that
/// link syntax inside code is not read as a link.
fn code_spans(prose: &str) -> (Vec<(usize, String)>, String) {
    let bytes = prose.as_bytes();
    let mut spans = Vec::new();
    let mut masked = prose.as_bytes().to_vec();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'`' {
            i += 1;
            continue;
        }
        let run = bytes[i..].iter().take_while(|b| **b == b'`').count();
        let start = i + run;
        // Find the next run of exactly `run` backticks.
        let mut j = start;
        let mut close = None;
        while j < bytes.len() {
            if bytes[j] == b'`' {
                let other = bytes[j..].iter().take_while(|b| **b == b'`').count();
                if other == run {
                    close = Some(j);
                    break;
                }
                j += other;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                let content = prose[start..end].replace('\n', " ");
                let content = match content.strip_prefix(' ').and_then(|c| c.strip_suffix(' ')) {
                    Some(inner) if !inner.trim().is_empty() => inner.to_string(),
                    _ => content,
                };
                spans.push((i, content));
                for b in &mut masked[start..end] {
                    if *b != b'\n' {
                        *b = b' ';
                    }
                }
                i = end + run;
            }
            None => i = start,
        }
    }
    // Only ASCII bytes inside spans were replaced by ASCII spaces, and whole
    // spans at once, so the text stays UTF-8; fall back to the unmasked text.
    let masked = String::from_utf8(masked).unwrap_or_else(|_| prose.to_string());
    (spans, masked)
}

/// The target of the inline link whose `(` is at byte `open` of `text`.
fn link_target(text: &str, open: usize) -> Option<String> {
    let rest = text.get(open + 1..)?;
    let rest = rest.trim_start_matches([' ', '\t']);
    if let Some(angled) = rest.strip_prefix('<') {
        return angled.find('>').map(|end| angled[..end].to_string());
    }
    let mut depth = 0usize;
    for (k, c) in rest.char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => return Some(rest[..k].to_string()),
            ')' => depth -= 1,
            c if c.is_whitespace() => return Some(rest[..k].to_string()),
            _ => {}
        }
    }
    None
}

/// The repository path an inline code span names, if it names one.
fn code_path(span: &str) -> Option<String> {
    let token = span.split_whitespace().next()?;
    if !PATH_PREFIXES.iter().any(|p| token.starts_with(p)) {
        return None;
    }
    if token.contains(PLACEHOLDER_CHARS) {
        return None;
    }
    // `path:12`, `path:12:3`, `path::item`: the path is before the colon.
    let path = token.split(':').next().unwrap_or(token);
    let path = path.trim_end_matches([',', ';', '.', ')']);
    Some(path.to_string())
}

/// Every link target and repository path that `markdown` names, in order.
fn extract(markdown: &str) -> Vec<Reference> {
    let prose = without_fences(markdown);
    let (spans, masked) = code_spans(&prose);
    let mut found = Vec::new();
    for (offset, content) in spans {
        if let Some(path) = code_path(&content) {
            found.push(Reference {
                line: line_of(&prose, offset),
                kind: Kind::CodePath,
                text: path,
            });
        }
    }
    // Inline links and images: `](target)`.
    let mut from = 0;
    while let Some(k) = masked[from..].find("](") {
        let close = from + k;
        if let Some(target) = link_target(&masked, close + 1) {
            found.push(Reference {
                line: line_of(&masked, close),
                kind: Kind::Link,
                text: target,
            });
        }
        from = close + 2;
    }
    // Reference definitions: `[label]: target` at the start of a line.
    let mut offset = 0;
    for line in masked.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if line.len() - trimmed.len() <= 3
            && let Some(after) = trimmed.strip_prefix('[')
            && let Some(end) = after.find("]:")
            && !after[..end].is_empty()
            && let Some(target) = after[end + 2..].split_whitespace().next()
        {
            let target = target.trim_start_matches('<').trim_end_matches('>');
            found.push(Reference {
                line: line_of(&masked, offset),
                kind: Kind::Link,
                text: target.to_string(),
            });
        }
        offset += line.len();
    }
    found.sort_by_key(|r| r.line);
    found
}

/// GitHub's anchor for a heading's text: markdown links reduced to their
/// text, lowercased, every character but letters, digits, spaces, `-` and
/// `_` dropped, spaces made `-`.
fn slug(heading: &str) -> String {
    let mut text = String::new();
    let mut rest = heading;
    // `[text](url)` → `text`.
    while let Some(open) = rest.find('[') {
        text.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find("](") {
            Some(mid) => {
                text.push_str(&after[..mid]);
                let tail = &after[mid + 2..];
                rest = tail.find(')').map_or("", |end| &tail[end + 1..]);
            }
            None => rest = after,
        }
    }
    text.push_str(rest);
    text.to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a page's ATX headings (outside fences), with GitHub's
/// `-1`, `-2`, … for repeated ones.
fn anchors(markdown: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for line in without_fences(markdown).lines() {
        let trimmed = line.trim_start();
        if line.len() - trimmed.len() > 3 {
            continue;
        }
        let level = trimmed.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&level) {
            continue;
        }
        let text = &trimmed[level..];
        if !(text.is_empty() || text.starts_with([' ', '\t'])) {
            continue;
        }
        let text = text.trim().trim_end_matches('#').trim_end();
        let base = slug(text);
        let count = seen.entry(base.clone()).or_insert(0);
        out.push(if *count == 0 {
            base.clone()
        } else {
            format!("{base}-{count}")
        });
        *count += 1;
    }
    out
}

/// `%XX` escapes of a link decoded (invalid ones kept as written).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = text
            .get(i + 1..i + 3)
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

/// `path` with `.` and `..` resolved lexically; `None` when it climbs above
/// its first component (out of the repository).
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::Normal(part) => parts.push(part),
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.iter().collect())
}

/// Whether a link target leaves the checked repository (a URL or mail).
fn is_external(target: &str) -> bool {
    target.contains("://") || target.starts_with("mailto:") || target.starts_with("tel:")
}

/// The problems of one page: `page` is its path relative to `root`,
/// `markdown` its text. Each problem reads `page:line: …`.
fn check_page(root: &Path, page: &Path, markdown: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let dir = page.parent().unwrap_or(Path::new(""));
    let here = page.display();
    for reference in extract(markdown) {
        let line = reference.line;
        let text = &reference.text;
        match reference.kind {
            Kind::CodePath => {
                if !root.join(text).exists() {
                    problems.push(format!(
                        "{here}:{line}: `{text}` names no file or directory of the repository"
                    ));
                }
            }
            Kind::Link => {
                if text.is_empty() || is_external(text) {
                    continue;
                }
                let (path, anchor) = match text.split_once('#') {
                    Some((path, anchor)) => (path, Some(anchor)),
                    None => (text.as_str(), None),
                };
                let path = path.split('?').next().unwrap_or(path);
                if path.is_empty() {
                    // An anchor into this page: its own headings.
                    let anchor = percent_decode(anchor.unwrap_or(""));
                    if !anchor.is_empty() && !anchors(markdown).contains(&anchor) {
                        problems.push(format!(
                            "{here}:{line}: link `{text}`: {here} has no heading with the anchor #{anchor}"
                        ));
                    }
                    continue;
                }
                let target = if let Some(absolute) = path.strip_prefix('/') {
                    normalize(Path::new(&percent_decode(absolute)))
                } else {
                    normalize(&dir.join(percent_decode(path)))
                };
                let Some(target) = target else {
                    problems.push(format!(
                        "{here}:{line}: link `{text}` leaves the repository"
                    ));
                    continue;
                };
                let full = root.join(&target);
                if !full.exists() {
                    problems.push(format!(
                        "{here}:{line}: link `{text}`: {} does not exist",
                        target.display()
                    ));
                    continue;
                }
                let Some(anchor) = anchor.filter(|a| !a.is_empty()) else {
                    continue;
                };
                if full.extension().is_none_or(|e| e != "md") || !full.is_file() {
                    continue;
                }
                let anchor = percent_decode(anchor);
                match std::fs::read_to_string(&full) {
                    Ok(text_of_target) => {
                        if !anchors(&text_of_target).contains(&anchor) {
                            problems.push(format!(
                                "{here}:{line}: link `{text}`: {} has no heading with the anchor #{anchor}",
                                target.display()
                            ));
                        }
                    }
                    Err(e) => problems.push(format!(
                        "{here}:{line}: link `{text}`: cannot read {}: {e}",
                        target.display()
                    )),
                }
            }
        }
    }
    problems
}

/// The pages checked, relative to `root`: `README.md`, `docs/*.md`,
/// `crates/*/README.md` and `examples/README.md` (those that exist).
fn pages(root: &Path) -> Result<Vec<PathBuf>, String> {
    let mut pages = vec![PathBuf::from("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .map_err(|e| format!("cannot list docs/: {e}"))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .filter_map(|p| p.file_name().map(|name| Path::new("docs").join(name)))
        .collect();
    docs.sort();
    pages.extend(docs);
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .map_err(|e| format!("cannot list crates/: {e}"))?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            entry
                .file_name()
                .to_str()
                .map(|name| Path::new("crates").join(name).join("README.md"))
        })
        .filter(|p| root.join(p).is_file())
        .collect();
    crates.sort();
    pages.extend(crates);
    let examples = PathBuf::from("examples/README.md");
    if root.join(&examples).is_file() {
        pages.push(examples);
    }
    Ok(pages)
}

#[test]
fn every_link_and_path_in_the_docs_exists() {
    let root = dsh_repo_checks::repo_root();
    let pages = pages(&root).unwrap();
    assert!(
        pages.len() >= 10,
        "expected README.md and the pages of docs/, found {pages:?}"
    );
    let mut problems = Vec::new();
    let mut references = 0;
    for page in &pages {
        match std::fs::read_to_string(root.join(page)) {
            Ok(markdown) => {
                references += extract(&markdown).len();
                problems.extend(check_page(&root, page, &markdown));
            }
            Err(e) => problems.push(format!("{}: cannot read: {e}", page.display())),
        }
    }
    assert!(
        references > 100,
        "only {references} references found: is the extraction broken?"
    );
    assert!(
        problems.is_empty(),
        "{} broken reference(s) in the docs:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// A page with one reference of every kind, good and broken.
const SAMPLE: &str = "# Sample page

## The `scripted` provider

A [good link](other.md), a [broken one](missing.md), a
[good anchor](other.md#a-heading-here), a [broken anchor](other.md#nowhere),
[self](#the-scripted-provider), [self broken](#not-here), an
[escape](../../outside.md), [web](https://example.com/x.md) and
[mail](mailto:a@b.c).

Paths: `crates/demo/src/lib.rs:12`, `crates/demo/src/lib.rs::item`,
`crates/demo/gone.rs`, `scripts/*.sh`, `tests/<name>/`, `cargo run -p x`,
`crates/demo/`, a span over two lines `crates/demo/also-gone.rs
--verbose`, `[not a link](missing.md)`.

```sh
cat crates/demo/fenced-gone.rs   # [fenced](missing.md)
```

[ref]: sub/missing.md
";

#[test]
fn extraction_finds_links_and_paths_outside_code() {
    let found = extract(SAMPLE);
    let links: Vec<(usize, &str)> = found
        .iter()
        .filter(|r| r.kind == Kind::Link)
        .map(|r| (r.line, r.text.as_str()))
        .collect();
    assert_eq!(
        links,
        [
            (5, "other.md"),
            (5, "missing.md"),
            (6, "other.md#a-heading-here"),
            (6, "other.md#nowhere"),
            (7, "#the-scripted-provider"),
            (7, "#not-here"),
            (8, "../../outside.md"),
            (8, "https://example.com/x.md"),
            (9, "mailto:a@b.c"),
            (20, "sub/missing.md"),
        ]
    );
    let paths: Vec<(usize, &str)> = found
        .iter()
        .filter(|r| r.kind == Kind::CodePath)
        .map(|r| (r.line, r.text.as_str()))
        .collect();
    assert_eq!(
        paths,
        [
            (11, "crates/demo/src/lib.rs"),
            (11, "crates/demo/src/lib.rs"),
            (12, "crates/demo/gone.rs"),
            (13, "crates/demo/"),
            (13, "crates/demo/also-gone.rs"),
        ]
    );
}

#[test]
fn slugs_follow_github() {
    assert_eq!(slug("The `scripted` provider"), "the-scripted-provider");
    assert_eq!(slug("`dsh headless`"), "dsh-headless");
    assert_eq!(
        slug("Subagents, compaction & goals"),
        "subagents-compaction--goals"
    );
    assert_eq!(slug("A [linked](x.md) heading_1"), "a-linked-heading_1");
    assert_eq!(
        anchors("# A\n## A\n```\n# B\n```\n## A #\n"),
        ["a", "a-1", "a-2"]
    );
}

#[test]
fn the_check_reports_every_broken_reference() {
    let root = std::env::temp_dir().join(format!("dsh-repo-checks-docs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::create_dir_all(root.join("crates/demo/src")).unwrap();
    std::fs::write(root.join("crates/demo/src/lib.rs"), "").unwrap();
    std::fs::write(
        root.join("docs/other.md"),
        "# Other\n\n## A heading, here\n",
    )
    .unwrap();
    let problems = check_page(&root, Path::new("docs/sample.md"), SAMPLE);
    let _ = std::fs::remove_dir_all(&root);
    assert_eq!(
        problems,
        [
            "docs/sample.md:5: link `missing.md`: docs/missing.md does not exist",
            "docs/sample.md:6: link `other.md#nowhere`: docs/other.md has no heading with the anchor #nowhere",
            "docs/sample.md:7: link `#not-here`: docs/sample.md has no heading with the anchor #not-here",
            "docs/sample.md:8: link `../../outside.md` leaves the repository",
            "docs/sample.md:12: `crates/demo/gone.rs` names no file or directory of the repository",
            "docs/sample.md:13: `crates/demo/also-gone.rs` names no file or directory of the repository",
            "docs/sample.md:20: link `sub/missing.md`: docs/sub/missing.md does not exist",
        ]
    );
}
