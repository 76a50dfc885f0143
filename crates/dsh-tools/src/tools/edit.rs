//! `edit`: literal search-and-replace in a text file.

use super::{TypedTool, boolean, justification, sandbox_permissions, spec, string};
use crate::approval::{Escalation, shown};
use crate::paths::Resolved;
use crate::regular::{self, FILE_MAX_BYTES_VAR};
use crate::session::Observed;
use crate::write_guard::{change_file, changed, changed_since_read, check_mode, not_observed};
use crate::{ToolContext, ToolOutput, diffs, paths};
use dsh_protocol::catalog::{ToolErrorCode, ToolSpec};
use serde::Deserialize;
use serde_json::json;
use std::fs::File;
use std::io::{Seek, SeekFrom, Write};

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
    const BATCHED: bool = false;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, a: Args, ctx: ToolContext) -> ToolOutput {
        if let Err(out) = super::require_file_path(&a.file_path) {
            return *out;
        }
        if a.old_string.is_empty() {
            return ToolOutput::failure("Error: old_string must be a non-empty string");
        }
        if a.old_string == a.new_string {
            return ToolOutput::failure("Error: old_string and new_string must differ");
        }
        // `a` moves into the blocking task; the frame needs its own copies.
        let (permissions, justification, file_path) = (
            a.sandbox_permissions.clone(),
            a.justification.clone(),
            a.file_path.clone(),
        );
        let escalation = Escalation {
            requested: permissions.as_deref(),
            justification: justification.as_deref(),
            subject: &file_path,
            arguments: json!({
                "file_path": file_path,
                "old_string": shown(&a.old_string),
                "new_string": shown(&a.new_string),
                "replace_all": a.replace_all,
                "sandbox_permissions": permissions,
                "justification": justification,
            }),
        };
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

/// The official order: the session must have read the file (a `read` that
/// found nothing makes it "not found"), the sandbox must allow the change,
/// the file must still be a regular file and unchanged since it was read,
/// and `old_string` must occur exactly once (or `replace_all`).
fn edit_file(ctx: &ToolContext, resolved: &Resolved, a: &Args, max_bytes: u64) -> ToolOutput {
    let (path, shown) = (resolved.real.as_path(), resolved.display.as_path());
    let seen = match ctx.state.seen(path) {
        None => return not_observed(shown),
        Some(Observed::Absent) => {
            return ToolOutput::failure(format!(
                "Error: cannot edit \"{}\": not found",
                shown.display()
            ))
            .with_error(ToolErrorCode::FsNotFound);
        }
        Some(Observed::Present(seen)) => seen,
    };
    let target = match check_mode(ctx, path) {
        Ok(target) => target,
        Err(out) => return *out,
    };
    match std::fs::metadata(path) {
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return changed_since_read("edit", shown);
        }
        Err(err) => {
            return ToolOutput::failure(format!(
                "Error: cannot edit \"{}\": {err}",
                shown.display()
            ));
        }
        Ok(meta) if !meta.is_file() => return regular::not_regular("edit", shown),
        Ok(_) => {}
    }
    if changed(seen, path) {
        return changed_since_read("edit", shown);
    }
    // Read and rewrite through one descriptor: the bytes replaced are the
    // bytes read, whatever happens to the name meanwhile.
    let mut file = match target.open_existing(path) {
        Ok(file) => file,
        Err(err) => return target.failure(ctx, "edit", shown, &err),
    };
    match regular::is_special(&file) {
        Ok(false) => {}
        Ok(true) => return regular::not_regular("edit", shown),
        Err(err) => {
            return ToolOutput::failure(format!(
                "Error: cannot edit \"{}\": {err}",
                shown.display()
            ));
        }
    }
    let size = regular::size(&file).ok();
    if size.is_some_and(|size| size > max_bytes) {
        return ToolOutput::failure(regular::too_large("edit", shown, size, max_bytes, HINT))
            .with_error(ToolErrorCode::FsTooLarge);
    }
    let bytes = match regular::read_bounded(&mut file, max_bytes) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return ToolOutput::failure(regular::too_large("edit", shown, None, max_bytes, HINT))
                .with_error(ToolErrorCode::FsTooLarge);
        }
        Err(err) => {
            return ToolOutput::failure(format!(
                "Error: cannot edit \"{}\": {err}",
                shown.display()
            ));
        }
    };
    // The editor's text (with its unsaved changes) is what is edited; when
    // it cannot give it, the disk's is.
    let editor = ctx.editor.as_deref();
    let bytes = match editor.and_then(|editor| editor.read_text(path)) {
        Some(Ok(text)) => text.into_bytes(),
        Some(Err(err)) => {
            tracing::debug!(
                "the editor could not read {}: {err}; edit the disk's text",
                path.display()
            );
            bytes
        }
        None => bytes,
    };
    let Ok(content) = String::from_utf8(bytes) else {
        return ToolOutput::failure(format!(
            "Error: cannot edit \"{}\": invalid UTF-8 text",
            shown.display()
        ))
        .with_error(ToolErrorCode::FsNotText);
    };
    let count = content.matches(a.old_string.as_str()).count();
    let replace_all = a.replace_all == Some(true);
    if count == 0 {
        return ToolOutput::failure(format!(
            "Error: old_string was not found in \"{}\"",
            shown.display()
        ))
        .with_error(ToolErrorCode::FsEditNotFound);
    }
    if count > 1 && !replace_all {
        return ToolOutput::failure(format!(
            "Error: old_string matched {count} times in \"{}\"; provide a more specific old_string or set replace_all to true",
            shown.display()
        ))
        .with_error(ToolErrorCode::FsAmbiguousEdit);
    }
    // The size of the result is known before it is built: refuse one
    // that would pass the limit (e.g. replace_all of a short string by a
    // long one) without allocating it.
    let grown = (content.len() - count * a.old_string.len()) as u128
        + count as u128 * a.new_string.len() as u128;
    if grown > u128::from(max_bytes) {
        return ToolOutput::failure(format!(
            "Error: the edit would make {} {grown} bytes, more than edit writes ({max_bytes} bytes, set by {FILE_MAX_BYTES_VAR}); nothing was changed.",
            shown.display()
        ))
        .with_error(ToolErrorCode::FsTooLarge);
    }
    let updated = content.replace(a.old_string.as_str(), &a.new_string);
    match editor.and_then(|editor| target.hand_to_editor(editor, path, &updated)) {
        Some(Ok(())) => {}
        Some(Err(why)) => {
            return ToolOutput::failure(format!(
                "Error: cannot edit \"{}\": {why}",
                shown.display()
            ));
        }
        None => {
            if let Err(err) = rewrite(&mut file, updated.as_bytes()) {
                return target.failure(ctx, "write", shown, &err);
            }
        }
    }
    ctx.state.mark_seen(path);
    let shown = paths::display(path);
    let text = if replace_all {
        format!("The file {shown} has been updated. All occurrences were successfully replaced.")
    } else {
        format!("The file {shown} has been updated successfully.")
    };
    let diffs = diffs::hunks(&shown, &content, &updated);
    ToolOutput::text(text).with_meta(json!({"path": shown, "diffs": diffs}))
}

/// Replaces the whole content of the open `file` with `content`.
fn rewrite(file: &mut File, content: &[u8]) -> std::io::Result<()> {
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(content)
}
