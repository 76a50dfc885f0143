//! `grep`: regular-expression search through file contents.

use super::glob::search_root;
use super::{TypedTool, spec, string};
use crate::jobs::SpillDir;
use crate::output::Refusal;
use crate::regular::{self, FILE_MAX_BYTES_VAR};
use crate::{ToolContext, ToolOutput, ToolsConfig, paths};
use dsh_protocol::catalog::{ToolErrorCode, ToolSpec};
use globset::{GlobBuilder, GlobMatcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, SearcherBuilder, sinks::Lossy};
use serde::Deserialize;
use serde_json::json;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Most matching lines shown in one result; past it the whole listing goes
/// to a spill file.
pub(crate) const GREP_LIMIT: usize = 250;

/// Bytes kept of a matching line (UTF-8, as ripgrep counts columns).
const MAX_LINE_BYTES: usize = 2000;

/// Largest spill file of one search: a listing past it is cut there.
const SPILL_MAX_BYTES: u64 = 64 << 20;

const DESCRIPTION: &str = "Search file contents with a regular expression (Rust regex syntax, like ripgrep: \\b, \\d, (?i) for case-insensitive, escape literal braces and dots). Searches a file, or every file under a directory except those excluded by .gitignore/.ignore files, the .git directory and binary files. The result starts with the number of matching lines, then for each file its path (relative to the working directory when inside it) and its matching lines as \"Line N: text\". At most 250 lines are shown; past that the result says where the complete listing was saved.";

#[derive(Deserialize)]
pub(crate) struct Args {
    pattern: String,
    path: Option<String>,
    include: Option<String>,
}

/// The `grep` tool.
pub(crate) struct Grep {
    spec: ToolSpec,
    /// The longest line searched (`file_max_bytes`: a file with a longer
    /// one is skipped with a note instead of being buffered whole) and the
    /// spill directory.
    config: Arc<ToolsConfig>,
}

impl Grep {
    pub(crate) fn new(config: Arc<ToolsConfig>) -> Self {
        Self {
            config,
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
        let max_line = usize::try_from(self.config.file_max_bytes).unwrap_or(usize::MAX);
        let spill_dir = self.config.spill_dir.clone();
        let task = tokio::task::spawn_blocking(move || {
            let checked = Checked::new(&a.pattern, a.include.as_deref())?;
            let root = match &a.path {
                Some(path) => {
                    search_root("grep", &ctx.cwd, path)?;
                    paths::resolve(&ctx.cwd, path)
                }
                None => ctx.cwd.clone(),
            };
            Ok::<_, Refusal>(grep(&root, &ctx.cwd, &checked, max_line, &spill_dir))
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

fn grep(
    root: &Path,
    cwd: &Path,
    checked: &Checked,
    max_line: usize,
    spill_dir: &Path,
) -> ToolOutput {
    let (matcher, include) = (&checked.matcher, &checked.include);
    if !root.is_dir() && regular::is_special_at(root) {
        return regular::not_regular("search", root);
    }
    let files = if root.is_file() {
        vec![root.to_path_buf()]
    } else {
        walk(root)
            .into_iter()
            .filter(|path| include.as_ref().is_none_or(|inc| inc.admits(root, path)))
            .collect()
    };
    let mut searcher = SearcherBuilder::new()
        .binary_detection(BinaryDetection::quit(0))
        .line_number(true)
        .heap_limit(Some(max_line))
        .build();
    let mut skipped: Vec<(PathBuf, std::io::Error)> = Vec::new();
    let mut listing = Listing::new(spill_dir);
    for file in files {
        // Opened without blocking and checked on the descriptor: a file
        // swapped for a FIFO or a device after the walk is passed over.
        let Ok(opened) = regular::open_read(&file) else {
            continue;
        };
        let shown = match file.strip_prefix(cwd) {
            Ok(relative) => paths::display(relative),
            Err(_) => paths::display(&file),
        };
        let mut hits = listing.file(shown);
        let result = searcher.search_file(
            matcher,
            &opened,
            Lossy(|number, line| {
                hits.hit(number, line.trim_end_matches(['\n', '\r']));
                Ok(true)
            }),
        );
        if let Err(err) = result {
            skipped.push((file, err));
        }
    }
    listing.finish(&skipped_note(&skipped, max_line))
}

/// Every file under `root` the search reads, in the official runtime's
/// order: depth first, the entries of a directory in the reverse of the
/// order the file system lists them (the one-thread parallel walker works
/// from a stack). Ignore files are honoured, hidden files are not skipped,
/// `.git` is.
fn walk(root: &Path) -> Vec<PathBuf> {
    let found = std::sync::Mutex::new(Vec::new());
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .require_git(false)
        .filter_entry(|entry| entry.file_name() != ".git")
        .threads(1)
        .build_parallel()
        .run(|| {
            Box::new(|entry| {
                if let Ok(entry) = entry
                    && entry.file_type().is_some_and(|t| t.is_file())
                {
                    found
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(entry.into_path());
                }
                ignore::WalkState::Continue
            })
        });
    found
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The matches of one search: the first [`GREP_LIMIT`] lines kept for the
/// result, every line counted, and past the limit the whole listing
/// written to a spill file the model can page through.
struct Listing<'a> {
    spill_dir: &'a Path,
    /// The shown files and their matching lines.
    groups: Vec<(String, Vec<(u64, String)>)>,
    total: usize,
    spill: Spill,
}

/// Where the listing past the limit goes.
enum Spill {
    /// Not needed yet.
    Unused,
    /// Being written; `bytes` so far, the file's last group's path.
    Open {
        path: PathBuf,
        out: std::io::BufWriter<std::fs::File>,
        bytes: u64,
        last: Option<String>,
    },
    /// Cut at [`SPILL_MAX_BYTES`].
    Full(PathBuf),
    /// Could not be written (the reason was logged).
    Failed,
}

/// The files of one search: a file's matches go through this.
struct FileHits<'l, 'a> {
    listing: &'l mut Listing<'a>,
    path: String,
}

impl FileHits<'_, '_> {
    /// Records the matching line `number`.
    fn hit(&mut self, number: u64, line: &str) {
        self.listing.hit(&self.path, number, line);
    }
}

impl<'a> Listing<'a> {
    fn new(spill_dir: &'a Path) -> Self {
        Self {
            spill_dir,
            groups: Vec::new(),
            total: 0,
            spill: Spill::Unused,
        }
    }

    fn file(&mut self, path: String) -> FileHits<'_, 'a> {
        FileHits {
            listing: self,
            path,
        }
    }

    fn hit(&mut self, path: &str, number: u64, line: &str) {
        self.total += 1;
        let line = clip(line);
        if self.total <= GREP_LIMIT {
            match self.groups.last_mut() {
                Some((last, lines)) if last == path => lines.push((number, line)),
                _ => self.groups.push((path.to_owned(), vec![(number, line)])),
            }
            return;
        }
        if matches!(self.spill, Spill::Unused) {
            self.spill = self.open_spill();
        }
        self.spill.write(path, number, &line);
    }

    /// Opens the spill file and writes the shown lines to it.
    fn open_spill(&self) -> Spill {
        let opened = SpillDir::open(self.spill_dir)
            .and_then(|dir| dir.create(&format!("grep-{}.txt", uuid::Uuid::new_v4().simple())));
        let mut spill = match opened {
            Ok((path, file)) => Spill::Open {
                path,
                out: std::io::BufWriter::new(file),
                bytes: 0,
                last: None,
            },
            Err(err) => {
                tracing::warn!("the full grep result is not saved: {err}");
                return Spill::Failed;
            }
        };
        for (path, lines) in &self.groups {
            for (number, line) in lines {
                spill.write(path, *number, line);
            }
        }
        spill
    }

    /// The result: the header, each file's path and matching lines, then
    /// where the rest is and `note`.
    fn finish(mut self, note: &str) -> ToolOutput {
        let spilled = self.spill.close();
        let meta = json!({
            "shape": "matches",
            "files": self.groups.iter().map(|(path, lines)| json!({
                "path": path,
                "matches": lines.iter().map(|(number, line)| json!({"lineNumber": number, "line": line})).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "truncated": self.total > GREP_LIMIT,
            "total": self.total,
        });
        if self.total == 0 {
            return ToolOutput::text(format!("No matches found{note}")).with_meta(meta);
        }
        let mut text = match self.total {
            1 => "Found 1 match".to_owned(),
            total if total <= GREP_LIMIT => format!("Found {total} matches"),
            total => format!("Found {GREP_LIMIT} of {total} matches"),
        };
        for (path, lines) in std::mem::take(&mut self.groups) {
            text.push_str("\n\n");
            text.push_str(&path);
            for (number, line) in lines {
                text.push_str(&format!("\nLine {number}: {line}"));
            }
        }
        if self.total > GREP_LIMIT {
            let more = self.total - GREP_LIMIT;
            text.push_str(&match spilled {
                Some((file, false)) => format!(
                    "\n\n(All {} matching lines, grouped by file the same way, are in {}: read it in parts or grep it; {more} are not shown here.)",
                    self.total,
                    file.display()
                ),
                Some((file, true)) => format!(
                    "\n\n({more} more matching lines are not shown; the first {} MiB of the full listing are in {}. Narrow the pattern, path or include to see the rest.)",
                    SPILL_MAX_BYTES >> 20,
                    file.display()
                ),
                None => format!(
                    "\n\n({more} more matching lines are not shown. Narrow the pattern, path or include to see them.)"
                ),
            });
        }
        ToolOutput::text(format!("{text}{note}")).with_meta(meta)
    }
}

impl Spill {
    /// Appends one matching line, with its file's path first when it
    /// starts a new group; past [`SPILL_MAX_BYTES`] the file is closed.
    fn write(&mut self, file: &str, number: u64, line: &str) {
        let Spill::Open {
            path,
            out,
            bytes,
            last,
        } = self
        else {
            return;
        };
        let mut block = String::new();
        if last.as_deref() != Some(file) {
            if last.is_some() {
                block.push_str("\n\n");
            }
            block.push_str(file);
            *last = Some(file.to_owned());
        }
        block.push_str(&format!("\nLine {number}: {line}"));
        *bytes += block.len() as u64;
        if *bytes > SPILL_MAX_BYTES {
            let path = std::mem::take(path);
            *self = Spill::Full(path);
            return;
        }
        if let Err(err) = out.write_all(block.as_bytes()) {
            tracing::warn!("the full grep result is not saved: {err}");
            *self = Spill::Failed;
        }
    }

    /// Flushes the file: its path and whether it was cut, or `None` when
    /// there is none.
    fn close(&mut self) -> Option<(PathBuf, bool)> {
        match std::mem::replace(self, Spill::Failed) {
            Spill::Open { path, mut out, .. } => {
                match out.write_all(b"\n").and_then(|()| out.flush()) {
                    Ok(()) => Some((path, false)),
                    Err(err) => {
                        tracing::warn!("the full grep result is not saved: {err}");
                        None
                    }
                }
            }
            Spill::Full(path) => Some((path, true)),
            Spill::Unused | Spill::Failed => None,
        }
    }
}

/// The line telling which files could not be searched (a line longer
/// than the limit, a read error), empty when none.
fn skipped_note(skipped: &[(PathBuf, std::io::Error)], max_line: usize) -> String {
    let Some((first, err)) = skipped.first() else {
        return String::new();
    };
    let files = if skipped.len() == 1 {
        "1 file was".to_owned()
    } else {
        format!("{} files were", skipped.len())
    };
    format!(
        "\n\n({files} not searched: a line longer than {max_line} bytes (set by {FILE_MAX_BYTES_VAR}) or a read error; e.g. {}: {err}.)",
        first.display()
    )
}

/// A matching line as the result shows it: at most [`MAX_LINE_BYTES`]
/// bytes of it (cut at a character boundary), and the official note when
/// cut.
fn clip(line: &str) -> String {
    if line.len() <= MAX_LINE_BYTES {
        return line.to_owned();
    }
    format!(
        "{} (line truncated)",
        crate::lines::prefix_within(line, MAX_LINE_BYTES)
    )
}
