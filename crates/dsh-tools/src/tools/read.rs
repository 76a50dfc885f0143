//! `read`: numbered lines of a text file.

use super::{TypedTool, number, spec, string};
use crate::regular::{self, OpenError};
use crate::{ToolContext, ToolOutput, args, lines, paths};
use dsh_protocol::catalog::ToolSpec;
use serde::Deserialize;
use serde_json::json;
use std::path::PathBuf;

/// Lines returned when the call gives no `limit`.
const DEFAULT_LIMIT: u64 = 2000;

/// Characters kept of one line; the rest is cut with a note.
const MAX_LINE_CHARS: usize = 2000;

/// What to do with a file above the size limit.
const HINT: &str = "inspect it with bash (head, tail, sed -n)";

const DESCRIPTION: &str = "Read a text file and return its lines numbered from 1, as \"N: text\". Reads up to 2000 lines from the start by default; use offset and limit to page through longer files (the footer says where to continue). Lines longer than 2000 characters are cut. Directories, binary files and images are refused (use read_image for pictures). Reading a file is required before changing it with write or edit.";

#[derive(Deserialize)]
pub(crate) struct Args {
    file_path: String,
    offset: Option<f64>,
    limit: Option<f64>,
}

/// The `read` tool.
pub(crate) struct Read {
    spec: ToolSpec,
    /// Files larger than this are refused (read them in pieces with bash).
    max_bytes: u64,
}

impl Read {
    pub(crate) fn new(max_bytes: u64) -> Self {
        Self {
            max_bytes,
            spec: spec(
                "read",
                DESCRIPTION,
                vec![
                    (
                        "file_path",
                        string(
                            "The file to read, absolute or relative to the current working directory.",
                        ),
                    ),
                    (
                        "offset",
                        number("The line number to start from, counting from 1 (default 1)."),
                    ),
                    (
                        "limit",
                        number("How many lines to return at most (default 2000)."),
                    ),
                ],
                &["file_path"],
            ),
        }
    }
}

impl TypedTool for Read {
    type Args = Args;
    const PARALLEL: bool = true;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, a: Args, ctx: ToolContext) -> ToolOutput {
        let numbers =
            args::positive_integer("offset", a.offset, u64::MAX >> 11).and_then(|offset| {
                Ok((
                    offset,
                    args::positive_integer("limit", a.limit, u64::MAX >> 11)?,
                ))
            });
        let (offset, limit) = match numbers {
            Ok((offset, limit)) => (offset.unwrap_or(1), limit.unwrap_or(DEFAULT_LIMIT)),
            Err(out) => return out.into(),
        };
        let path = paths::resolve(&ctx.cwd, &a.file_path);
        let state = ctx.state.clone();
        let max_bytes = self.max_bytes;
        let task = tokio::task::spawn_blocking(move || {
            let out = read_file(path.clone(), offset, limit, max_bytes);
            if !out.is_error {
                state.mark_seen(&path);
            }
            out
        });
        task.await.unwrap_or_else(|err| {
            ToolOutput::failure(format!("Error: reading the file failed: {err}"))
        })
    }
}

fn read_file(path: PathBuf, offset: u64, limit: u64, max_bytes: u64) -> ToolOutput {
    let shown = path.display();
    let meta = match std::fs::metadata(&path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return ToolOutput::failure(format!("Error: file not found: {shown}"));
        }
        Err(err) => return ToolOutput::failure(format!("Error: cannot read {shown}: {err}")),
    };
    if meta.is_dir() {
        return ToolOutput::failure(format!(
            "Error: {shown} is a directory, not a file. List it with bash (ls) or glob."
        ));
    }
    let mut file = match regular::open_read(&path) {
        Ok(file) => file,
        Err(OpenError::Special) => {
            return regular::not_regular("read", &path);
        }
        Err(OpenError::Io(err)) => {
            return ToolOutput::failure(format!("Error: cannot read {shown}: {err}"));
        }
    };
    let size = regular::size(&file).ok();
    if size.is_some_and(|size| size > max_bytes) {
        return ToolOutput::failure(regular::too_large("read", &path, size, max_bytes, HINT));
    }
    let bytes = match regular::read_bounded(&mut file, max_bytes) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return ToolOutput::failure(regular::too_large("read", &path, None, max_bytes, HINT));
        }
        Err(err) => return ToolOutput::failure(format!("Error: cannot read {shown}: {err}")),
    };
    drop(file);
    if let Some(kind) = super::read_image::image_type(&bytes) {
        return ToolOutput::failure(format!(
            "Error: {shown} is an image ({kind}); use read_image to look at it."
        ));
    }
    if bytes.iter().take(8192).any(|b| *b == 0) {
        return ToolOutput::failure(format!(
            "Error: {shown} looks like a binary file; read only handles text."
        ));
    }
    // Only the lines shown are decoded and kept: the rest is counted, so
    // memory stays at the file's bytes plus the page returned.
    let total = lines::count(&bytes);
    if offset > 1 && offset > total {
        return ToolOutput::failure(format!(
            "Error: offset {offset} is past the end of {shown}, which has {total} lines."
        ));
    }
    let first = offset - 1;
    let last = total.min(first.saturating_add(limit));
    let mut body = String::new();
    let mut meta_lines = Vec::new();
    for (index, line) in lines::Lines::new(&bytes)
        .enumerate()
        .skip(first as usize)
        .take((last - first) as usize)
    {
        let number = index + 1;
        let line = clip_line(&String::from_utf8_lossy(line));
        body.push_str(&format!("{number}: {line}\n"));
        meta_lines.push(json!({"number": number, "text": line}));
    }
    let footer = if last < total {
        format!(
            "(Showing lines {}-{last} of {total}. Use offset={} to continue.)",
            first + 1,
            last + 1
        )
    } else {
        format!("(End of file - total {total} lines)")
    };
    let text =
        format!("<path>{shown}</path>\n<type>file</type>\n<content>\n{body}\n{footer}\n</content>");
    ToolOutput::text(text).with_meta(json!({
        "path": paths::display(&path),
        "offset": offset,
        "lines": meta_lines,
        "totalLines": total,
    }))
}

fn clip_line(line: &str) -> String {
    if line.chars().count() <= MAX_LINE_CHARS {
        return line.to_owned();
    }
    let kept: String = line.chars().take(MAX_LINE_CHARS).collect();
    format!("{kept}… [line cut at {MAX_LINE_CHARS} characters]")
}
