//! `write`: create or replace a UTF-8 text file.

use super::{TypedTool, justification, sandbox_permissions, spec, string};
use crate::approval::{Escalation, shown};
use crate::output::Refusal;
use crate::paths::Resolved;
use crate::regular::{self, FILE_MAX_BYTES_VAR};
use crate::session::Observed;
use crate::write_guard::{
    Target, change_file, changed, changed_since_read, check_mode, not_observed,
};
use crate::{ToolContext, ToolOutput, diffs, paths};
use dsh_protocol::catalog::{ToolErrorCode, ToolSpec};
use serde::Deserialize;
use serde_json::json;
use std::io::Write as _;
use std::path::Path;

const DESCRIPTION: &str = "Create a text file or replace all of its content. Parent directories are created as needed. An existing file must have been read with read in this session first, and must not have changed since. Prefer edit for changing part of a file. Writes are limited by the session's sandbox mode.";

#[derive(Deserialize)]
pub(crate) struct Args {
    file_path: String,
    content: String,
    sandbox_permissions: Option<String>,
    justification: Option<String>,
}

/// The `write` tool.
pub(crate) struct Write {
    spec: ToolSpec,
    /// Largest content written.
    max_bytes: u64,
}

impl Write {
    pub(crate) fn new(max_bytes: u64) -> Self {
        Self {
            max_bytes,
            spec: spec(
                "write",
                DESCRIPTION,
                vec![
                    (
                        "file_path",
                        string(
                            "The file to write, absolute or relative to the current working directory.",
                        ),
                    ),
                    ("content", string("The complete new content of the file.")),
                    ("sandbox_permissions", sandbox_permissions()),
                    ("justification", justification()),
                ],
                &["file_path", "content"],
            ),
        }
    }
}

impl TypedTool for Write {
    type Args = Args;
    const BATCHED: bool = false;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, a: Args, ctx: ToolContext) -> ToolOutput {
        if let Err(out) = super::require_file_path(&a.file_path) {
            return *out;
        }
        let escalation = Escalation {
            requested: a.sandbox_permissions.as_deref(),
            justification: a.justification.as_deref(),
            subject: &a.file_path,
            arguments: json!({
                "file_path": a.file_path,
                "content": shown(&a.content),
                "sandbox_permissions": a.sandbox_permissions,
                "justification": a.justification,
            }),
        };
        if a.content.len() as u64 > self.max_bytes {
            return ToolOutput::failure(format!(
                "Error: the content is {} bytes, more than write accepts ({} bytes, set by {FILE_MAX_BYTES_VAR}); nothing was written.",
                a.content.len(),
                self.max_bytes
            ))
            .with_error(ToolErrorCode::FsTooLarge);
        }
        let content = a.content.clone();
        let max_bytes = self.max_bytes;
        change_file(
            ctx,
            "write",
            escalation,
            &a.file_path,
            "writing",
            move |ctx, path| write_file(ctx, path, &content, max_bytes),
        )
        .await
    }
}

/// The official order: the sandbox must allow the change; something that
/// is not a regular file (a directory, a dangling link, a device) is
/// refused; an existing file must have been read and be unchanged since;
/// a file the session saw must still exist.
fn write_file(ctx: &ToolContext, resolved: &Resolved, content: &str, max_bytes: u64) -> ToolOutput {
    let (path, shown) = (resolved.real.as_path(), resolved.display.as_path());
    let target = match check_mode(ctx, path) {
        Ok(target) => target,
        Err(out) => return *out,
    };
    let exists = match std::fs::symlink_metadata(path) {
        Ok(meta) if !meta.is_file() => return regular::not_regular("write", shown),
        Ok(_) => true,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => false,
        Err(err) => {
            return ToolOutput::failure(format!(
                "Error: cannot write \"{}\": {err}",
                shown.display()
            ));
        }
    };
    match (exists, ctx.state.seen(path)) {
        (true, None | Some(Observed::Absent)) => return not_observed(shown),
        (true, Some(Observed::Present(seen))) if changed(seen, path) => {
            return changed_since_read("write", shown);
        }
        (false, Some(Observed::Present(_))) => {
            return ToolOutput::failure(format!(
                "Error: cannot write \"{}\": file no longer exists — re-read the file, then retry",
                shown.display()
            ))
            .with_error(ToolErrorCode::FsStaleVersion);
        }
        _ => {}
    }
    // What the file held, for the diff the result reports (none when it
    // cannot be read within the limit).
    let from_disk = || {
        regular::open_read(path)
            .ok()
            .and_then(|mut file| regular::read_bounded(&mut file, max_bytes).ok().flatten())
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
    };
    let editor = ctx.editor.as_deref();
    let before = exists
        .then(|| match editor.and_then(|editor| editor.read_text(path)) {
            Some(Ok(text)) => Some(text),
            _ => from_disk(),
        })
        .flatten();
    if let Err(err) = target.create_parents(path) {
        return target.failure(ctx, "create the parent directories of", shown, &err);
    }
    let through_editor = editor.and_then(|editor| target.hand_to_editor(editor, path, content));
    let created = match through_editor {
        Some(Ok(())) => !exists,
        Some(Err(why)) => {
            return ToolOutput::failure(format!(
                "Error: cannot write \"{}\": {why}",
                shown.display()
            ));
        }
        None => match write_on_disk(ctx, &target, path, shown, content) {
            Ok(created) => created,
            Err(out) => return *out,
        },
    };
    ctx.state.mark_seen(path);
    let shown = paths::display(path);
    let (operation, done, diffs) = if created {
        ("create", "Created file", Vec::new())
    } else {
        let diffs = before.map_or_else(Vec::new, |before| diffs::hunks(&shown, &before, content));
        ("update", "Updated file", diffs)
    };
    ToolOutput::text(format!(
        "<path>{shown}</path>\n<type>file</type>\n<content>\n{done}\n</content>"
    ))
    .with_meta(json!({"operation": operation, "path": shown, "diffs": diffs}))
}

/// Creates or truncates `path` through the sandbox's `target` and writes
/// `content`; whether the file was created.
fn write_on_disk(
    ctx: &ToolContext,
    target: &Target,
    path: &Path,
    shown: &Path,
    content: &str,
) -> Result<bool, Refusal> {
    match target
        .create_or_truncate(path)
        .and_then(|(file, created)| Ok((regular::is_special(&file)?, file, created)))
    {
        Ok((true, _, _)) => Err(regular::not_regular("write", shown).into()),
        Ok((false, mut file, created)) => match file.write_all(content.as_bytes()) {
            Ok(()) => Ok(created),
            Err(err) => Err(target.failure(ctx, "write", shown, &err).into()),
        },
        Err(err) => Err(target.failure(ctx, "write", shown, &err).into()),
    }
}
