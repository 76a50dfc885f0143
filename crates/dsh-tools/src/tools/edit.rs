//! `edit`: literal search-and-replace in a text file.

use super::{TypedTool, boolean, justification, sandbox_permissions, spec, string};
use crate::regular::{self, FILE_MAX_BYTES_VAR};
use crate::write_guard::{change_file, check_mode, check_read_first};
use crate::{ToolContext, ToolOutput, paths};
use dsh_protocol::catalog::ToolSpec;
use serde::Deserialize;
use serde_json::json;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

const DESCRIPTION: &str = "Change part of a text file by replacing an exact piece of text. old_string is matched literally, including whitespace and indentation, and must occur exactly once unless replace_all is set; include enough surrounding lines to make it unique. The file must have been read with read in this session first. Writes are limited by the session's sandbox mode.";

#[derive(Deserialize)]
pub(crate) struct Args {
    file_path: String,
    old_string: String,
    new_string: String,
    replace_all: Option<bool>,
    sandbox_permissions: Option<String>,
    justification: Option<String>,
}

/// The `edit` tool.
pub(crate) struct Edit {
    spec: ToolSpec,
    /// Largest file edited, before and after the change.
    max_bytes: u64,
}

impl Edit {
    pub(crate) fn new(max_bytes: u64) -> Self {
        Self {
            max_bytes,
            spec: spec(
                "edit",
                DESCRIPTION,
                vec![
                    (
                        "file_path",
                        string(
                            "The file to change, absolute or relative to the current working directory.",
                        ),
                    ),
                    ("old_string", string("The exact text to replace.")),
                    (
                        "new_string",
                        string("The text to put in its place; must differ from old_string."),
                    ),
                    (
                        "replace_all",
                        boolean(
                            "Replace every occurrence of old_string instead of requiring exactly one (default false).",
                        ),
                    ),
                    ("sandbox_permissions", sandbox_permissions()),
                    ("justification", justification()),
                ],
                &["file_path", "old_string", "new_string"],
            ),
        }
    }
}

impl TypedTool for Edit {
    type Args = Args;
    const PARALLEL: bool = false;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, a: Args, ctx: ToolContext) -> ToolOutput {
        // `a` moves into the blocking task; the frame needs its own copies.
        let (permissions, justification, file_path) = (
            a.sandbox_permissions.clone(),
            a.justification.clone(),
            a.file_path.clone(),
        );
        let escalation = (permissions.as_deref(), justification.as_deref());
        let max_bytes = self.max_bytes;
        change_file(
            ctx,
            "edit",
            escalation,
            &file_path,
            "editing",
            move |ctx, path| edit_file(ctx, path, &a, max_bytes),
        )
        .await
    }
}

/// What to do with a file above the size limit.
const HINT: &str = "change it with bash (sed -i, or a script)";

fn edit_file(ctx: &ToolContext, path: &Path, a: &Args, max_bytes: u64) -> ToolOutput {
    let shown = path.display();
    if a.old_string.is_empty() {
        return ToolOutput::failure(
            "Error: old_string is empty. Give the exact text to replace; to create a file use write.",
        );
    }
    if a.old_string == a.new_string {
        return ToolOutput::failure(
            "Error: old_string and new_string are identical, so the edit would change nothing.",
        );
    }
    let target = match check_mode(ctx, path) {
        Ok(target) => target,
        Err(out) => return out.into(),
    };
    if !path.exists() || path.is_dir() {
        return ToolOutput::failure(format!(
            "Error: {shown} does not exist or is not a file. Use write to create a file."
        ));
    }
    if regular::is_special_at(path) {
        return regular::not_regular("edit", path);
    }
    if let Err(out) = check_read_first(ctx, path) {
        return out.into();
    }
    // Read and rewrite through one descriptor: the bytes replaced are the
    // bytes read, whatever happens to the name meanwhile.
    let mut file = match target.open_existing(path) {
        Ok(file) => file,
        Err(err) => return target.failure(ctx, "edit", path, &err).into(),
    };
    match regular::is_special(&file) {
        Ok(false) => {}
        Ok(true) => return regular::not_regular("edit", path),
        Err(err) => return ToolOutput::failure(format!("Error: cannot read {shown}: {err}")),
    }
    let size = regular::size(&file).ok();
    if size.is_some_and(|size| size > max_bytes) {
        return ToolOutput::failure(regular::too_large("edit", path, size, max_bytes, HINT));
    }
    let bytes = match regular::read_bounded(&mut file, max_bytes) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return ToolOutput::failure(regular::too_large("edit", path, None, max_bytes, HINT));
        }
        Err(err) => return ToolOutput::failure(format!("Error: cannot read {shown}: {err}")),
    };
    let Ok(content) = String::from_utf8(bytes) else {
        return ToolOutput::failure(format!(
            "Error: {shown} is not valid UTF-8 text; edit only changes text files."
        ));
    };
    let count = content.matches(a.old_string.as_str()).count();
    let replace_all = a.replace_all == Some(true);
    if count == 0 {
        return ToolOutput::failure(format!(
            "Error: old_string was not found in {shown}. It must match the file exactly, including whitespace; read the file again to copy the current text."
        ));
    }
    if count > 1 && !replace_all {
        return ToolOutput::failure(format!(
            "Error: old_string occurs {count} times in {shown}. Include more surrounding text to pick one occurrence, or set replace_all to replace all {count}."
        ));
    }
    // The size of the result is known before it is built: refuse one
    // that would pass the limit (e.g. replace_all of a short string by a
    // long one) without allocating it.
    let grown = (content.len() - count * a.old_string.len()) as u128
        + count as u128 * a.new_string.len() as u128;
    if grown > u128::from(max_bytes) {
        return ToolOutput::failure(format!(
            "Error: the edit would make {shown} {grown} bytes, more than edit writes ({max_bytes} bytes, set by {FILE_MAX_BYTES_VAR}); nothing was changed."
        ));
    }
    let updated = content.replace(a.old_string.as_str(), &a.new_string);
    if let Err(err) = rewrite(&mut file, updated.as_bytes()) {
        return ToolOutput::failure(format!("Error: cannot write {shown}: {err}"));
    }
    ctx.state.mark_seen(path);
    let noun = if count == 1 {
        "occurrence"
    } else {
        "occurrences"
    };
    ToolOutput::text(format!("Edited {shown}: replaced {count} {noun}.")).with_meta(json!({
        "path": paths::display(path),
        "replacements": count,
    }))
}

/// Replaces the whole content of the open `file` with `content`.
fn rewrite(file: &mut File, content: &[u8]) -> std::io::Result<()> {
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(content)
}
