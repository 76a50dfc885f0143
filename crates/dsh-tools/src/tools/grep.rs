//! `grep`: regular-expression search through file contents.

use super::glob::search_root;
use super::{TypedTool, spec, string};
use crate::output::Refusal;
use crate::regular::{self, FILE_MAX_BYTES_VAR};
use crate::{ToolContext, ToolOutput, paths};
use dsh_protocol::catalog::{ToolErrorCode, ToolSpec};
use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::Lossy};
use serde::Deserialize;
use serde_json::json;
use std::path::{Path, PathBuf};

/// Most matching lines reported in one result.
pub(crate) const GREP_LIMIT: usize = 250;

/// Characters kept of a matching line.
const MAX_LINE_CHARS: usize = 500;

const DESCRIPTION: &str = "Search file contents with a regular expression (Rust regex syntax, like ripgrep: \\b, \\d, (?i) for case-insensitive, escape literal braces and dots). Searches a file, or every file under a directory except those excluded by .gitignore/.ignore files, the .git directory and binary files. Results are grouped by file in path order: the file's absolute path followed by a colon, then its matching lines as \"  N: text\". At most 250 matching lines are returned.";

#[derive(Deserialize)]
pub(crate) struct Args {
    pattern: String,
    path: Option<String>,
    include: Option<String>,
}

/// The `grep` tool.
pub(crate) struct Grep {
    spec: ToolSpec,
    /// Longest line searched: a file with a longer one is skipped (with a
    /// note) instead of being buffered whole.
    max_line_bytes: u64,
}

impl Grep {
    pub(crate) fn new(max_line_bytes: u64) -> Self {
        Self {
            max_line_bytes,
            spec: spec(
                "grep",
                DESCRIPTION,
                vec![
                    ("pattern", string("The regular expression to look for.")),
                    (
                        "path",
                        string(
                            "The file or directory to search, absolute or relative to the current working directory. Defaults to the current working directory.",
                        ),
                    ),
                    (
                        "include",
                        string(
                            "Only search files matching this glob, e.g. \"*.rs\" or \"*.{ts,tsx}\". A glob without / is matched against file names, one with / against paths relative to the search directory.",
                        ),
                    ),
                ],
                &["pattern"],
            ),
        }
    }
}

impl TypedTool for Grep {
    type Args = Args;
    const BATCHED: bool = false;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, a: Args, ctx: ToolContext) -> ToolOutput {
        if a.pattern.is_empty() {
            return ToolOutput::failure("Error: pattern must be a non-empty string");
        }
        if a.path.as_deref().is_some_and(|path| path.trim().is_empty()) {
            return ToolOutput::failure("Error: path must be a non-empty string when given");
        }
        if a.include
            .as_deref()
            .is_some_and(|glob| glob.trim().is_empty())
        {
            return ToolOutput::failure("Error: include must be a non-empty glob when given");
        }
        let max_line = usize::try_from(self.max_line_bytes).unwrap_or(usize::MAX);
        let task = tokio::task::spawn_blocking(move || {
            let checked = Checked::new(&a.pattern, a.include.as_deref())?;
            let root = match &a.path {
                Some(path) => {
                    search_root("grep", &ctx.cwd, path)?;
                    paths::resolve(&ctx.cwd, path)
                }
                None => ctx.cwd.clone(),
            };
            Ok::<_, Refusal>(grep(&root, &a.pattern, &checked, max_line))
        });
        match task.await {
            Ok(Ok(out)) => out,
            Ok(Err(out)) => *out,
            Err(err) => ToolOutput::failure(format!("Error: the search failed: {err}")),
        }
    }
}

/// The compiled pattern and include glob of a call.
struct Checked {
    matcher: RegexMatcher,
    include: Option<Include>,
}

impl Checked {
    /// Compiles both, or the refusal ripgrep gives (`SEARCH_INVALID_PATTERN`).
    fn new(pattern: &str, include: Option<&str>) -> Result<Self, Refusal> {
        let rejected = |err: &dyn std::fmt::Display| -> Refusal {
            ToolOutput::failure(format!(
                "Error: grep pattern rejected by ripgrep: rg: {err}"
            ))
            .with_error(ToolErrorCode::SearchInvalidPattern)
            .into()
        };
        let matcher = RegexMatcherBuilder::new()
            .line_terminator(Some(b'\n'))
            .build(pattern)
            .map_err(|err| rejected(&err))?;
        let include = match include.map(str::trim) {
            None => None,
            Some(glob) => {
                let by_path = glob.contains('/');
                let built = GlobBuilder::new(glob)
                    .literal_separator(by_path)
                    .build()
                    .map_err(|err| rejected(&err))?;
                Some(Include {
                    matcher: built.compile_matcher(),
                    by_path,
                })
            }
        };
        Ok(Self { matcher, include })
    }
}

/// Which files `include` admits.
struct Include {
    matcher: GlobMatcher,
    by_path: bool,
}

impl Include {
    fn admits(&self, root: &Path, path: &Path) -> bool {
        if self.by_path {
            path.strip_prefix(root)
                .is_ok_and(|rel| self.matcher.is_match(rel))
        } else {
            path.file_name()
                .is_some_and(|name| self.matcher.is_match(name))
        }
    }
}

fn grep(root: &Path, pattern: &str, checked: &Checked, max_line: usize) -> ToolOutput {
    let (matcher, include) = (&checked.matcher, &checked.include);
    if !root.is_dir() && regular::is_special_at(root) {
        return regular::not_regular("search", root);
    }
    let files: Vec<PathBuf> = if root.is_file() {
        vec![root.to_path_buf()]
    } else {
        ignore::WalkBuilder::new(root)
            .hidden(false)
            .require_git(false)
            .filter_entry(|entry| entry.file_name() != ".git")
            .sort_by_file_path(|a, b| a.cmp(b))
            .build()
            .flatten()
            .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
            .map(|entry| entry.into_path())
            .filter(|path| include.as_ref().is_none_or(|inc| inc.admits(root, path)))
            .collect()
    };
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .heap_limit(Some(max_line))
        .build();
    let mut skipped: Vec<(PathBuf, std::io::Error)> = Vec::new();
    let mut groups: Vec<(PathBuf, Vec<(u64, String)>)> = Vec::new();
    let mut count = 0usize;
    let mut more = false;
    for file in files {
        let mut hits = Vec::new();
        // Opened without blocking and checked on the descriptor: a file
        // swapped for a FIFO or a device after the walk is passed over.
        let Ok(opened) = regular::open_read(&file) else {
            continue;
        };
        let result = searcher.search_file(
            matcher,
            &opened,
            Lossy(|number, line| {
                if count >= GREP_LIMIT {
                    more = true;
                    return Ok(false);
                }
                count += 1;
                hits.push((number, clip(line)));
                Ok(true)
            }),
        );
        match result {
            Ok(()) if !hits.is_empty() => groups.push((file, hits)),
            Ok(()) => {}
            Err(err) => skipped.push((file, err)),
        }
        if more {
            break;
        }
    }
    let meta = json!({"matches": count, "files": groups.len(), "truncated": more});
    let note = skipped_note(&skipped, max_line);
    if count == 0 {
        return ToolOutput::text(format!(
            "No matches for /{pattern}/ under {}.{note}",
            root.display()
        ))
        .with_meta(meta);
    }
    let mut text = if more {
        format!(
            "Showing the first {GREP_LIMIT} matches in {}; more exist. Narrow the pattern, path or include to see the rest.\n",
            plural(groups.len(), "file", "files")
        )
    } else {
        format!(
            "Found {} in {}.\n",
            plural(count, "match", "matches"),
            plural(groups.len(), "file", "files")
        )
    };
    for (file, hits) in &groups {
        text.push('\n');
        text.push_str(&format!("{}:\n", file.display()));
        for (number, line) in hits {
            text.push_str(&format!("  {number}: {line}\n"));
        }
    }
    ToolOutput::text(format!("{}{note}", text.trim_end())).with_meta(meta)
}

/// The line telling which files could not be searched (a line longer
/// than the limit, a read error), empty when none.
fn skipped_note(skipped: &[(PathBuf, std::io::Error)], max_line: usize) -> String {
    let Some((first, err)) = skipped.first() else {
        return String::new();
    };
    format!(
        "\n\n({} not searched: a line longer than {max_line} bytes (set by {FILE_MAX_BYTES_VAR}) or a read error; e.g. {}: {err}.)",
        plural(skipped.len(), "file was", "files were"),
        first.display()
    )
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn clip(line: &str) -> String {
    let line = line.trim_end_matches(['\n', '\r']);
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_owned();
    }
    let kept: String = line.chars().take(MAX_LINE_CHARS).collect();
    format!("{kept}…")
}
