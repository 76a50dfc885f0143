//! `glob`: files whose path matches a glob pattern, oldest first, hidden
//! and ignored files included (only `.git` is skipped), as the official
//! runtime lists them. Past 100 paths the full list goes to a spill file.

use super::{TypedTool, spec, string};
use crate::jobs::SpillDir;
use crate::{ToolContext, ToolOutput, ToolsConfig, paths};
use dsh_protocol::catalog::ToolSpec;
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
    const PARALLEL: bool = true;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, a: Args, ctx: ToolContext) -> ToolOutput {
        let base = match &a.path {
            Some(path) => paths::resolve(&ctx.cwd, path),
            None => ctx.cwd.clone(),
        };
        let spill_dir = self.config.spill_dir.clone();
        let task =
            tokio::task::spawn_blocking(move || glob(&base, &ctx.cwd, &a.pattern, &spill_dir));
        task.await
            .unwrap_or_else(|err| ToolOutput::failure(format!("Error: the search failed: {err}")))
    }
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
    if pattern.trim().is_empty() {
        return ToolOutput::failure("Error: the pattern is empty.");
    }
    if !base.is_dir() {
        return ToolOutput::failure(format!(
            "Error: {} does not exist or is not a directory.",
            base.display()
        ));
    }
    let (root, rest) = if pattern.contains('/') {
        split_pattern(base, pattern)
    } else {
        (base.to_path_buf(), pattern.to_owned())
    };
    let matcher = match GlobBuilder::new(&rest).literal_separator(true).build() {
        Ok(glob) if pattern.contains('/') => Matcher::Relative(glob.compile_matcher()),
        Ok(glob) => Matcher::Name(glob.compile_matcher()),
        Err(err) => {
            return ToolOutput::failure(format!(
                "Error: invalid glob pattern \"{pattern}\": {err}"
            ));
        }
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
        return ToolOutput::text(format!(
            "No files match \"{pattern}\" under {}.",
            base.display()
        ))
        .with_meta(meta);
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
