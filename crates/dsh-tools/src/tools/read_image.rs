//! `read_image`: a PNG, JPEG, GIF or WebP file as an image attachment, as
//! the official runtime returns it: stored by content hash in the
//! attachment store, large images scaled down and re-encoded first
//! ([`normalise`]).

mod normalise;
mod sizing;

use super::{TypedTool, spec, string};
use crate::regular::{self, OpenError};
use crate::{ToolContext, ToolOutput, ToolsConfig, output::text_block, paths};
use dsh_protocol::catalog::ToolSpec;
use dsh_protocol::catalog::{ToolError, ToolErrorCode};
use dsh_session::attachments::AttachmentStore;
use normalise::{MAX_FILE_BYTES, Normalised, normalise};
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;

const DESCRIPTION: &str = "Look at an image file (PNG, JPEG, GIF or WebP, up to 20 MiB). The picture is attached to the result so you can see it; images above 2048x2048 pixels or 4 MiB are sent as a smaller re-encoded copy. The type is recognised from the file's content, not its name.";

#[derive(Deserialize)]
pub(crate) struct Args {
    file_path: String,
}

/// The `read_image` tool.
pub(crate) struct ReadImage {
    spec: ToolSpec,
    attachments: AttachmentStore,
}

impl ReadImage {
    pub(crate) fn new(config: Arc<ToolsConfig>) -> Self {
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
            attachments: config.attachments.clone(),
        }
    }
}

impl TypedTool for ReadImage {
    type Args = Args;
    const BATCHED: bool = true;

    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn call(&self, a: Args, ctx: ToolContext) -> ToolOutput {
        if let Err(out) = super::require_file_path(&a.file_path) {
            return *out;
        }
        let path = paths::resolve(&ctx.cwd, &a.file_path);
        let store = self.attachments.clone();
        // Decoding and re-encoding are CPU work: off the async workers.
        let task = tokio::task::spawn_blocking(move || read_image(&path, &store));
        task.await.unwrap_or_else(|err| {
            ToolOutput::failure(format!("Error: reading the image failed: {err}"))
        })
    }
}

fn read_image(path: &Path, store: &AttachmentStore) -> ToolOutput {
    let shown = paths::display(path);
    let cannot_read = |why: &dyn std::fmt::Display| {
        ToolOutput::failure(format!("Error: cannot read \"{shown}\": {why}"))
    };
    let bytes = match read_file(path) {
        Ok(bytes) => bytes,
        Err((why, code)) => {
            let mut out = cannot_read(&why);
            out.error = code.map(ToolError::new);
            return out;
        }
    };
    let image = match normalise(bytes) {
        Ok(image) => image,
        Err(err) if err.names_the_file() => return cannot_read(&err),
        Err(err) => return ToolOutput::failure(format!("Error: {err}")),
    };
    let id = match store.keep(&image.bytes) {
        Ok(id) => id,
        Err(err) => return ToolOutput::failure(format!("Error: cannot store the image: {err}")),
    };
    ToolOutput {
        content: vec![
            text_block(format!(
                "<path>{shown}</path>\n<type>image</type>\n<content>\n{}\n</content>",
                summary(&image)
            )),
            json!({"type": "image", "attachment": attachment(id, &image, path)}),
        ],
        is_error: false,
        meta: Some(json!({"path": shown})),
        error: None,
    }
}

/// The file's bytes, or why they cannot be had and the official error code
/// (`FS_NOT_FOUND`, `FS_NOT_REGULAR_FILE`, `FS_TOO_LARGE`) when there is one.
fn read_file(path: &Path) -> Result<Vec<u8>, (String, Option<ToolErrorCode>)> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
            return Err(("not found".into(), Some(ToolErrorCode::FsNotFound)));
        }
        Err(err) => return Err((err.to_string(), None)),
    };
    let not_regular = || {
        (
            "not a regular file".to_owned(),
            Some(ToolErrorCode::FsNotRegularFile),
        )
    };
    if !meta.is_file() {
        return Err(not_regular());
    }
    let too_large = |size: String| {
        (
            format!("{size} bytes exceeds the {MAX_FILE_BYTES}-byte limit"),
            Some(ToolErrorCode::FsTooLarge),
        )
    };
    // Opened without blocking and checked on the descriptor: a FIFO or
    // device swapped in after the check above is refused, and a file that
    // grows while read is never read past the limit.
    let mut file = match regular::open_read(path) {
        Ok(file) => file,
        Err(OpenError::Special) => return Err(not_regular()),
        Err(OpenError::Io(err)) => return Err((err.to_string(), None)),
    };
    match regular::size(&file) {
        Ok(size) if size > MAX_FILE_BYTES => return Err(too_large(size.to_string())),
        Ok(_) => {}
        Err(err) => return Err((err.to_string(), None)),
    }
    match regular::read_bounded(&mut file, MAX_FILE_BYTES) {
        Ok(Some(bytes)) => Ok(bytes),
        Ok(None) => Err(too_large(format!("more than {MAX_FILE_BYTES}"))),
        Err(err) => Err((err.to_string(), None)),
    }
}

/// `<media type> image, <w>x<h> px, <bytes> bytes`, followed for a scaled
/// copy by `(downscaled from <W>x<H> px; …<factor>…)`.
fn summary(image: &Normalised) -> String {
    let mut text = format!(
        "{} image, {}x{} px, {} bytes",
        image.media_type,
        image.width,
        image.height,
        image.bytes.len()
    );
    if let Some((w, h)) = image.original {
        let factor = f64::from(w) / f64::from(image.width.max(1));
        text.push_str(&format!(
            " (downscaled from {w}x{h} px; scale coordinates in this copy by {factor:.2} to find them in the original)"
        ));
    }
    text
}

/// The `attachment` object of the image block, in the official field order.
/// An image block for `bytes` (PNG, JPEG, GIF or WebP) named `name`,
/// normalised and stored as `read_image` stores a file's image (for images
/// other tool sources return, e.g. MCP servers); why not, otherwise.
pub fn image_block(store: &AttachmentStore, bytes: Vec<u8>, name: &str) -> Result<Value, String> {
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("the image is over {MAX_FILE_BYTES} bytes"));
    }
    let image = normalise(bytes).map_err(|err| err.to_string())?;
    let id = store
        .keep(&image.bytes)
        .map_err(|err| format!("cannot store the image: {err}"))?;
    Ok(json!({"type": "image", "attachment": attachment(id, &image, Path::new(name))}))
}

fn attachment(id: String, image: &Normalised, path: &Path) -> Value {
    let mut attachment = json!({
        "attachmentId": id,
        "mediaType": image.media_type,
        "bytes": image.bytes.len(),
        "width": image.width,
        "height": image.height,
    });
    if let Some(name) = path.file_name() {
        attachment["name"] = json!(name.to_string_lossy());
    }
    if let Some((width, height)) = image.original {
        attachment["originalDimensions"] = json!({"width": width, "height": height});
    }
    attachment
}
