//! `read`: numbered lines of a text file.

use super::{TypedTool, number, spec, string};
use crate::output::Refusal;
use crate::paths::Resolved;
use crate::regular::{self, OpenError};
use crate::{EditorFiles, ToolContext, ToolOutput, args, lines, paths};
use dsh_protocol::catalog::{ToolErrorCode, ToolSpec};
use serde::Deserialize;
use serde_json::json;
use std::path::Path;

/// Lines returned when the call gives no `limit`.
const DEFAULT_LIMIT: u64 = 2000;

/// UTF-16 code units kept of one line; the rest is cut with a note.
const MAX_LINE_UNITS: usize = 2000;

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
    const BATCHED: bool = true;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, a: Args, ctx: ToolContext) -> ToolOutput {
        if let Err(out) = super::require_file_path(&a.file_path) {
            return *out;
        }
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
        let state = ctx.state.clone();
        let max_bytes = self.max_bytes;
        let task = tokio::task::spawn_blocking(move || {
            let resolved = match paths::resolve_file(&ctx.cwd, &a.file_path) {
                Ok(resolved) => resolved,
                Err(out) => return *out,
            };
            let editor = ctx.editor.as_deref();
            match read_file(&resolved, offset, limit, max_bytes, editor) {
                Ok(out) => {
                    state.mark_seen(&resolved.real);
                    out
                }
                Err(Refused::NotFound(out)) => {
                    state.mark_absent(&resolved.real);
                    *out
                }
                Err(Refused::Other(out)) => *out,
            }
        });
        task.await.unwrap_or_else(|err| {
            ToolOutput::failure(format!("Error: reading the file failed: {err}"))
        })
    }
}

/// Why a read returned no lines: nothing at the path (which the session
/// remembers, see [`crate::session::Observed::Absent`]), or anything else.
enum Refused {
    NotFound(Refusal),
    Other(Refusal),
}

impl From<ToolOutput> for Refused {
    fn from(out: ToolOutput) -> Self {
        Self::Other(out.into())
    }
}

/// `Error: cannot read "<path>": <why>` with an `FsError` code.
fn cannot_read(shown: &Path, why: &str, code: ToolErrorCode) -> Refused {
    Refused::from(
        ToolOutput::failure(format!("Error: cannot read \"{}\": {why}", shown.display()))
            .with_error(code),
    )
}

/// Bytes searched for a NUL that marks a file as binary.
const BINARY_PROBE: usize = 8192;

/// The official checks and texts, in the official order: nothing there,
/// not a regular file, binary (a NUL in the first 8192 bytes), not UTF-8,
/// an offset past the end. Errors name the path as given (`display`), a
/// result the file itself (`real`, links resolved).
fn read_file(
    resolved: &Resolved,
    offset: u64,
    limit: u64,
    max_bytes: u64,
    editor: Option<&dyn EditorFiles>,
) -> Result<ToolOutput, Refused> {
    let (path, shown) = (resolved.real.as_path(), resolved.display.as_path());
    let mut file = match regular::open_read(path) {
        Ok(file) => file,
        Err(OpenError::Special) => {
            return Err(Refused::from(regular::not_regular("read", shown)));
        }
        Err(OpenError::Io(err)) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(Refused::NotFound(
                ToolOutput::failure(format!(
                    "Error: cannot read \"{}\": not found",
                    shown.display()
                ))
                .with_error(ToolErrorCode::FsNotFound)
                .into(),
            ));
        }
        Err(OpenError::Io(err)) => {
            return Err(Refused::from(ToolOutput::failure(format!(
                "Error: cannot read \"{}\": {err}",
                shown.display()
            ))));
        }
    };
    let size = regular::size(&file).ok();
    if size.is_some_and(|size| size > max_bytes) {
        return Err(too_large(shown, size, max_bytes));
    }
    let bytes = match regular::read_bounded(&mut file, max_bytes) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return Err(too_large(shown, None, max_bytes)),
        Err(err) => {
            return Err(Refused::from(ToolOutput::failure(format!(
                "Error: cannot read \"{}\": {err}",
                shown.display()
            ))));
        }
    };
    drop(file);
    // The editor's text (with its unsaved changes) replaces the disk's;
    // when it cannot give it, the disk's stands.
    let bytes = match editor.and_then(|editor| editor.read_text(path)) {
        Some(Ok(text)) if text.len() as u64 <= max_bytes => text.into_bytes(),
        Some(Ok(text)) => return Err(too_large(shown, Some(text.len() as u64), max_bytes)),
        Some(Err(err)) => {
            tracing::debug!(
                "the editor could not read {}: {err}; read from disk",
                path.display()
            );
            bytes
        }
        None => bytes,
    };
    if bytes.iter().take(BINARY_PROBE).any(|b| *b == 0) {
        return Err(cannot_read(shown, "binary file", ToolErrorCode::FsNotText));
    }
    if std::str::from_utf8(&bytes).is_err() {
        return Err(cannot_read(
            shown,
            "invalid UTF-8 text",
            ToolErrorCode::FsNotText,
        ));
    }
    // A byte-order mark is not part of the first line.
    let text = bytes.strip_prefix(BOM).unwrap_or(&bytes);
    // Only the lines shown are decoded and kept: the rest is counted, so
    // memory stays at the file's bytes plus the page returned.
    let total = lines::count(text);
    if offset > 1 && offset > total {
        return Err(Refused::from(
            ToolOutput::failure(format!(
                "Error: offset {offset} is out of range for \"{}\" ({total} lines)",
                shown.display()
            ))
            .with_error(ToolErrorCode::FsNotFound),
        ));
    }
    let first = offset - 1;
    let last = total.min(first.saturating_add(limit));
    let mut body = String::new();
    let mut meta_lines = Vec::new();
    for (index, line) in lines::Lines::new(text)
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
    // The lines, a blank line, the footer; no blank line when no line is shown.
    if !body.is_empty() {
        body.push('\n');
    }
    let real = path.display();
    let text =
        format!("<path>{real}</path>\n<type>file</type>\n<content>\n{body}{footer}\n</content>");
    Ok(ToolOutput::text(text).with_meta(json!({
        "path": paths::display(path),
        "offset": offset,
        "lines": meta_lines,
        "totalLines": total,
    })))
}

/// The UTF-8 byte-order mark.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// A file above the size limit (ours: the official runtime reads any size).
fn too_large(shown: &Path, size: Option<u64>, max_bytes: u64) -> Refused {
    Refused::from(
        ToolOutput::failure(regular::too_large("read", shown, size, max_bytes, HINT))
            .with_error(ToolErrorCode::FsTooLarge),
    )
}

/// A line cut to its first [`MAX_LINE_UNITS`] UTF-16 code units, as the
/// official runtime counts them, followed by the official note. A cut
/// through a surrogate pair keeps the pair's first half as the lone
/// surrogate the official runtime sends, carried as the marker of
/// [`dsh_protocol::surrogates`].
fn clip_line(line: &str) -> String {
    // A UTF-8 byte never stands for more than one UTF-16 unit, so a line
    // of at most that many bytes needs no count.
    if line.len() <= MAX_LINE_UNITS {
        return line.to_owned();
    }
    let total: usize = line.chars().map(char::len_utf16).sum();
    if total <= MAX_LINE_UNITS {
        return line.to_owned();
    }
    let mut kept = String::new();
    let mut units = 0;
    for c in line.chars() {
        let width = c.len_utf16();
        if units + width > MAX_LINE_UNITS {
            if units < MAX_LINE_UNITS {
                // The high surrogate of `c`, written as the runtime's
                // lone-surrogate marker (U+10FFFF, then U+10F000 + offset).
                let high = (u32::from(c) - 0x1_0000) >> 10;
                kept.push('\u{10FFFF}');
                kept.extend(char::from_u32(0x10_F000 + high));
            }
            break;
        }
        units += width;
        kept.push(c);
    }
    format!("{kept}... (line truncated to {MAX_LINE_UNITS} chars)")
}
