//! `glob`: files whose path matches a glob pattern, newest first.

use super::{TypedTool, spec, string};
use crate::{ToolContext, ToolOutput, paths};
use dsh_llm::ToolSpec;
use globset::GlobBuilder;
use serde::Deserialize;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Most paths listed in one result.
pub(crate) const GLOB_LIMIT: usize = 100;

const DESCRIPTION: &str = "Find files by name pattern, e.g. \"**/*.rs\" or \"src/**/test_*.py\". The pattern is matched against paths relative to the search directory: * and ? stay within one path segment, ** spans any number of directories, {a,b} gives alternatives. Returns absolute paths of files (not directories), most recently modified first, at most 100. Files excluded by .gitignore and .ignore files, and the .git directory, are skipped.";

#[derive(Deserialize)]
pub(crate) struct Args {
    pattern: String,
    path: Option<String>,
}

/// The `glob` tool.
pub(crate) struct Glob {
    spec: ToolSpec,
}

impl Glob {
    pub(crate) fn new() -> Self {
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
        let task = tokio::task::spawn_blocking(move || glob(&base, &a.pattern));
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

fn glob(base: &Path, pattern: &str) -> ToolOutput {
    if pattern.trim().is_empty() {
        return ToolOutput::failure("Error: the pattern is empty.");
    }
    if !base.is_dir() {
        return ToolOutput::failure(format!(
            "Error: {} does not exist or is not a directory.",
            base.display()
        ));
    }
    let (root, rest) = split_pattern(base, pattern);
    let matcher = match GlobBuilder::new(&rest).literal_separator(true).build() {
        Ok(glob) => glob.compile_matcher(),
        Err(err) => {
            return ToolOutput::failure(format!(
                "Error: invalid glob pattern \"{pattern}\": {err}"
            ));
        }
    };
    let mut found: Vec<(SystemTime, PathBuf)> = Vec::new();
    if root.is_dir() {
        let walker = ignore::WalkBuilder::new(&root)
            .hidden(false)
            .require_git(false)
            .filter_entry(|entry| entry.file_name() != ".git")
            .build();
        for entry in walker.flatten() {
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            let Ok(relative) = entry.path().strip_prefix(&root) else {
                continue;
            };
            if matcher.is_match(relative) {
                let modified = entry
                    .metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                found.push((modified, entry.into_path()));
            }
        }
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let total = found.len();
    let meta =
        json!({"root": paths::display(&root), "matches": total, "truncated": total > GLOB_LIMIT});
    if total == 0 {
        return ToolOutput::text(format!(
            "No files match \"{pattern}\" under {}.",
            base.display()
        ))
        .with_meta(meta);
    }
    let mut text = found
        .iter()
        .take(GLOB_LIMIT)
        .map(|(_, path)| paths::display(path))
        .collect::<Vec<_>>()
        .join("\n");
    if total > GLOB_LIMIT {
        text.push_str(&format!(
            "\n({} more matching files not shown: only the {GLOB_LIMIT} most recently modified are listed. Narrow the pattern or path to see others.)",
            total - GLOB_LIMIT
        ));
    }
    ToolOutput::text(text).with_meta(meta)
}
