//! `write`: create or replace a UTF-8 text file.

use super::{TypedTool, justification, sandbox_permissions, spec, string};
use crate::regular::{self, FILE_MAX_BYTES_VAR};
use crate::write_guard::{change_file, check_mode, check_read_first};
use crate::{ToolContext, ToolOutput, paths};
use dsh_protocol::catalog::ToolSpec;
use serde::Deserialize;
use serde_json::json;
use std::io::Write as _;

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
    const PARALLEL: bool = false;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, a: Args, ctx: ToolContext) -> ToolOutput {
        let escalation = (a.sandbox_permissions.as_deref(), a.justification.as_deref());
        if a.content.len() as u64 > self.max_bytes {
            return ToolOutput::failure(format!(
                "Error: the content is {} bytes, more than write accepts ({} bytes, set by {FILE_MAX_BYTES_VAR}); nothing was written.",
                a.content.len(),
                self.max_bytes
            ));
        }
        let content = a.content.clone();
        change_file(
            ctx,
            "write",
            escalation,
            &a.file_path,
            "writing",
            move |ctx, path| write_file(ctx, path, &content),
        )
        .await
    }
}

fn write_file(ctx: &ToolContext, path: &std::path::Path, content: &str) -> ToolOutput {
    let target = match check_mode(ctx, path) {
        Ok(target) => target,
        Err(out) => return out.into(),
    };
    let shown = path.display();
    if path.is_dir() {
        return ToolOutput::failure(format!("Error: {shown} is a directory."));
    }
    if regular::is_special_at(path) {
        return regular::not_regular("write", path);
    }
    if let Err(out) = check_read_first(ctx, path) {
        return out.into();
    }
    if let Err(err) = target.create_parents(path) {
        return target
            .failure(ctx, "create the parent directories of", path, &err)
            .into();
    }
    let created = match target
        .create_or_truncate(path)
        .and_then(|(file, created)| Ok((regular::is_special(&file)?, file, created)))
    {
        Ok((true, _, _)) => {
            return regular::not_regular("write", path);
        }
        Ok((false, mut file, created)) => match file.write_all(content.as_bytes()) {
            Ok(()) => created,
            Err(err) => return target.failure(ctx, "write", path, &err).into(),
        },
        Err(err) => return target.failure(ctx, "write", path, &err).into(),
    };
    ctx.state.mark_seen(path);
    let bytes = content.len();
    let text = if created {
        format!("Created {shown} ({bytes} bytes).")
    } else {
        format!("Replaced the content of {shown} ({bytes} bytes).")
    };
    ToolOutput::text(text).with_meta(json!({
        "path": paths::display(path),
        "bytes": bytes,
        "created": created,
    }))
}
