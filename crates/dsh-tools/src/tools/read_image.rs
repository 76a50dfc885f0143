//! `read_image`: a PNG, JPEG, GIF or WebP file as an image block.

use super::{TypedTool, spec, string};
use crate::regular::{self, OpenError};
use crate::{ToolContext, ToolOutput, output::text_block, paths};
use base64::Engine;
use dsh_llm::ToolSpec;
use serde::Deserialize;
use serde_json::json;
use std::path::PathBuf;

/// Largest image accepted.
pub(crate) const MAX_IMAGE_BYTES: u64 = 10 * 1024 * 1024;

const DESCRIPTION: &str = "Look at an image file (PNG, JPEG, GIF or WebP, up to 10 MiB). The picture is attached to the result so you can see it. The type is recognised from the file's content, not its name.";

#[derive(Deserialize)]
pub(crate) struct Args {
    file_path: String,
}

/// The media type of an image recognised by its first bytes.
pub(crate) fn image_type(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The `read_image` tool.
pub(crate) struct ReadImage {
    spec: ToolSpec,
}

impl ReadImage {
    pub(crate) fn new() -> Self {
        Self {
            spec: spec(
                "read_image",
                DESCRIPTION,
                vec![(
                    "file_path",
                    string(
                        "The image file, absolute or relative to the current working directory.",
                    ),
                )],
                &["file_path"],
            ),
        }
    }
}

impl TypedTool for ReadImage {
    type Args = Args;
    const PARALLEL: bool = true;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, a: Args, ctx: ToolContext) -> ToolOutput {
        let path = paths::resolve(&ctx.cwd, &a.file_path);
        let task = tokio::task::spawn_blocking(move || read_image(path));
        task.await.unwrap_or_else(|err| {
            ToolOutput::failure(format!("Error: reading the image failed: {err}"))
        })
    }
}

fn read_image(path: PathBuf) -> ToolOutput {
    let shown = path.display();
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => {
            return ToolOutput::failure(format!("Error: {shown} is not a file."));
        }
        Ok(_) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return ToolOutput::failure(format!("Error: file not found: {shown}"));
        }
        Err(err) => return ToolOutput::failure(format!("Error: cannot read {shown}: {err}")),
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
    let too_large = |size: String| {
        ToolOutput::failure(format!(
            "Error: {shown} is {size} bytes; images larger than 10 MiB ({MAX_IMAGE_BYTES} bytes) are not accepted."
        ))
    };
    match regular::size(&file) {
        Ok(size) if size > MAX_IMAGE_BYTES => return too_large(size.to_string()),
        Ok(_) => {}
        Err(err) => return ToolOutput::failure(format!("Error: cannot read {shown}: {err}")),
    }
    let bytes = match regular::read_bounded(&mut file, MAX_IMAGE_BYTES) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return too_large(format!("more than {MAX_IMAGE_BYTES}")),
        Err(err) => return ToolOutput::failure(format!("Error: cannot read {shown}: {err}")),
    };
    let Some(media_type) = image_type(&bytes) else {
        return ToolOutput::failure(format!(
            "Error: {shown} is not a PNG, JPEG, GIF or WebP image."
        ));
    };
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    ToolOutput {
        content: vec![
            text_block(format!(
                "Image {shown} ({media_type}, {} bytes):",
                bytes.len()
            )),
            json!({"type": "image", "data": data, "mimeType": media_type}),
        ],
        is_error: false,
        meta: Some(
            json!({"path": paths::display(&path), "mimeType": media_type, "bytes": bytes.len()}),
        ),
        error: None,
    }
}
