//! `glob`: files whose path matches a glob pattern, oldest first, hidden
//! and ignored files included (only `.git` is skipped), as the official
//! runtime lists them. Past 100 paths the full list goes to a spill file.

use super::{TypedTool, spec, string};
use crate::jobs::SpillDir;
use crate::output::Refusal;
use crate::{ToolContext, ToolOutput, ToolsConfig, paths};
use dsh_protocol::catalog::{ToolErrorCode, ToolSpec};
use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// Most paths listed in one result.
pub(crate) const GLOB_LIMIT: usize = 100;

const DESCRIPTION: &str = "Find files by name pattern, e.g. \"**/*.rs\" or \"src/**/test_*.py\". A pattern without a slash matches file names at any depth; one with a slash is matched against paths relative to the search directory: * and ? stay within one path segment, ** spans any number of directories, {a,b} gives alternatives. Returns paths of files (not directories) relative to the current working directory, least recently modified first, at most 100; the full list of a longer result is saved to a file whose path is given. Hidden files and files excluded by .gitignore are included; the .git directory is skipped.";

#[derive(Deserialize)]
pub(crate) struct Args {
    pattern: String,
    path: Option<String>,
}

/// The `glob` tool.
pub(crate) struct Glob {
    spec: ToolSpec,
    config: Arc<ToolsConfig>,
}

impl Glob {
    pub(crate) fn new(config: Arc<ToolsConfig>) -> Self {
        Self {
            spec: spec(
                "glob",
                DESCRIPTION,
                vec![
                    (
                        "pattern",
                        string(
                            "The glob pattern to match, relative to path (an absolute pattern is also accepted).",
                        ),
                    ),
                    (
                        "path",
                        string(
                            "The directory to search in, absolute or relative to the current working directory. Defaults to the current working directory.",
                        ),
                    ),
                ],
                &["pattern"],
            ),
            config,
        }
    }
}

impl TypedTool for Glob {
    type Args = Args;
    const BATCHED: bool = false;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, a: Args, ctx: ToolContext) -> ToolOutput {
        if a.pattern.trim().is_empty() {
            return ToolOutput::failure("Error: pattern must be a non-empty string");
        }
        if a.path.as_deref().is_some_and(|path| path.trim().is_empty()) {
            return ToolOutput::failure("Error: path must be a non-empty string when given");
        }
        if let Err(err) = GlobBuilder::new(&a.pattern).literal_separator(true).build() {
            return rejected(&err);
        }
        let spill_dir = self.config.spill_dir.clone();
        let task = tokio::task::spawn_blocking(move || {
            let base = match &a.path {
                Some(path) => match search_root("glob", &ctx.cwd, path) {
                    Ok(SearchRoot::Dir) => paths::resolve(&ctx.cwd, path),
                    Ok(SearchRoot::File) => {
                        return listed_file(&paths::resolve(&ctx.cwd, path), &ctx.cwd);
                    }
                    Err(out) => return *out,
                },
                None => ctx.cwd.clone(),
            };
            glob(&base, &ctx.cwd, &a.pattern, &spill_dir)
        });
        task.await
            .unwrap_or_else(|err| ToolOutput::failure(format!("Error: the search failed: {err}")))
    }
}

/// What a search's `path` names.
pub(crate) enum SearchRoot {
    /// A directory: searched through.
    Dir,
    /// Anything else that exists: searched (grep) or listed (glob) itself.
    File,
}

/// Examines a `glob` or `grep` `path` as the official runtime's ripgrep
/// does: joined to the working directory as written, `..` and links
/// resolved by the kernel. A path that cannot be examined fails the
/// search with ripgrep's wording, the path as given (`SEARCH_FAILED`).
pub(crate) fn search_root(tool: &str, cwd: &Path, path: &str) -> Result<SearchRoot, Refusal> {
    match std::fs::metadata(cwd.join(path)) {
        Ok(meta) if meta.is_dir() => Ok(SearchRoot::Dir),
        Ok(_) => Ok(SearchRoot::File),
        Err(err) => Err(ToolOutput::failure(format!(
            "Error: {tool} search failed (exit 2): rg: {path}: IO error for operation on {path}: {err}"
        ))
        .with_error(ToolErrorCode::SearchFailed)
        .into()),
    }
}

/// A pattern ripgrep refuses (`SEARCH_INVALID_PATTERN`).
fn rejected(err: &globset::Error) -> ToolOutput {
    ToolOutput::failure(format!(
        "Error: glob pattern rejected by ripgrep: rg: {err}"
    ))
    .with_error(ToolErrorCode::SearchInvalidPattern)
}

/// The result of a `glob` whose `path` is a file: that file, whatever the
/// pattern (ripgrep lists a path it is given).
fn listed_file(file: &Path, cwd: &Path) -> ToolOutput {
    let shown = match file.strip_prefix(cwd) {
        Ok(relative) => paths::display(relative),
        Err(_) => paths::display(file),
    };
    ToolOutput::text(shown.clone())
        .with_meta(json!({"shape": "paths", "paths": [shown], "truncated": false, "total": 1}))
}

/// Splits `pattern` into the literal directory prefix and the glob rest.
pub(crate) fn split_pattern(base: &Path, pattern: &str) -> (PathBuf, String) {
    let mut root = if pattern.starts_with('/') {
        PathBuf::from("/")
    } else {
        base.to_path_buf()
    };
    let parts: Vec<&str> = pattern
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let mut index = 0;
    while index + 1 < parts.len() && !is_glob(parts[index]) {
        root.push(parts[index]);
        index += 1;
    }
    (paths::normalize(&root), parts[index..].join("/"))
}

fn is_glob(part: &str) -> bool {
    part.contains(['*', '?', '[', '{']) || part == ".."
}

/// How a pattern is matched: a pattern without `/` against file names at
/// any depth, else against the path relative to the literal prefix.
enum Matcher {
    Name(GlobMatcher),
    Relative(GlobMatcher),
}

impl Matcher {
    fn is_match(&self, root: &Path, path: &Path) -> bool {
        match self {
            Self::Name(glob) => path.file_name().is_some_and(|name| glob.is_match(name)),
            Self::Relative(glob) => path
                .strip_prefix(root)
                .is_ok_and(|relative| glob.is_match(relative)),
        }
    }
}

fn glob(base: &Path, cwd: &Path, pattern: &str, spill_dir: &Path) -> ToolOutput {
    let (root, rest) = if pattern.contains('/') {
        split_pattern(base, pattern)
    } else {
        (base.to_path_buf(), pattern.to_owned())
    };
    let matcher = match GlobBuilder::new(&rest).literal_separator(true).build() {
        Ok(glob) if pattern.contains('/') => Matcher::Relative(glob.compile_matcher()),
        Ok(glob) => Matcher::Name(glob.compile_matcher()),
        Err(err) => return rejected(&err),
    };
    let mut found: Vec<(SystemTime, PathBuf)> = Vec::new();
    if root.is_dir() {
        let walker = ignore::WalkBuilder::new(&root)
            .standard_filters(false)
            .filter_entry(|entry| entry.file_name() != ".git")
            .build();
        for entry in walker.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            if matcher.is_match(&root, entry.path()) {
                let modified = entry
                    .metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                found.push((modified, entry.into_path()));
            }
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    let listed: Vec<String> = found
        .iter()
        .map(|(_, path)| match path.strip_prefix(cwd) {
            Ok(relative) => paths::display(relative),
            Err(_) => paths::display(path),
        })
        .collect();
    let total = listed.len();
    let shown = &listed[..total.min(GLOB_LIMIT)];
    let meta =
        json!({"shape": "paths", "paths": shown, "truncated": total > GLOB_LIMIT, "total": total});
    if total == 0 {
        return ToolOutput::text("No files found").with_meta(meta);
    }
    let mut text = shown.join("\n");
    if total > GLOB_LIMIT {
        let more = total - GLOB_LIMIT;
        let note = match spill(spill_dir, &listed) {
            Ok(file) => format!(
                "({more} more matching files not shown. All {total} paths, in the same order, are in {}: read it in parts or grep it.)",
                file.display()
            ),
            Err(err) => {
                tracing::warn!("the full glob result is not saved: {err}");
                format!(
                    "({more} more matching files not shown. Narrow the pattern or path to see others.)"
                )
            }
        };
        text.push_str("\n\n");
        text.push_str(&note);
    }
    ToolOutput::text(text).with_meta(meta)
}

/// Writes every path, one per line, to a new private file of the spill
/// directory.
fn spill(spill_dir: &Path, listed: &[String]) -> std::io::Result<PathBuf> {
    let dir = SpillDir::open(spill_dir)?;
    let name = format!("glob-{}.txt", uuid::Uuid::new_v4().simple());
    let (path, file) = dir.create(&name)?;
    let mut out = std::io::BufWriter::new(file);
    for line in listed {
        writeln!(out, "{line}")?;
    }
    out.flush()?;
    Ok(path)
}
