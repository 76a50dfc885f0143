//! A server's `tools/call` result as a tool result: text, images (stored
//! as attachments, as `read_image` stores them) and resources, under the
//! same display cap as `bash` output (the whole text saved to a file).

use base64::Engine;
use dsh_session::attachments::AttachmentStore;
use dsh_tools::{OUTPUT_DISPLAY_LIMIT, ToolOutput, text_block};
use rmcp::model::{CallToolResult, RawContent, ResourceContents};
use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Most images one result may carry; more are described, not attached.
const MAX_IMAGES: usize = 8;

/// Where results put what they keep.
#[derive(Debug, Clone)]
pub struct ResultStore {
    /// Image attachments.
    pub attachments: AttachmentStore,
    /// Where a long text is saved whole.
    pub spill_dir: PathBuf,
}

/// Converts `result` of `tool` (its full name).
pub(crate) fn to_output(tool: &str, result: CallToolResult, store: &ResultStore) -> ToolOutput {
    let mut text = String::new();
    let mut blocks = Vec::new();
    let mut images = 0usize;
    let push_text = |text: &mut String, piece: &str| {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(piece);
    };
    for content in result.content {
        match content.raw {
            RawContent::Text(t) => push_text(&mut text, &t.text),
            RawContent::Image(image) => {
                if images >= MAX_IMAGES {
                    push_text(
                        &mut text,
                        &format!("[image omitted: more than {MAX_IMAGES} images]"),
                    );
                    continue;
                }
                match image_block(&store.attachments, &image.data, tool) {
                    Ok(block) => {
                        images += 1;
                        blocks.push(block);
                    }
                    Err(why) => push_text(
                        &mut text,
                        &format!("[image ({}) not shown: {why}]", image.mime_type),
                    ),
                }
            }
            RawContent::Audio(audio) => push_text(
                &mut text,
                &format!(
                    "[audio ({}, {} base64 characters) not shown]",
                    audio.mime_type,
                    audio.data.len()
                ),
            ),
            RawContent::ResourceLink(link) => {
                let mut line = format!("Resource link: {}", link.uri);
                if !link.name.is_empty() {
                    line.push_str(&format!(" ({})", link.name));
                }
                if let Some(mime) = &link.mime_type {
                    line.push_str(&format!(" [{mime}]"));
                }
                if let Some(description) = &link.description {
                    line.push_str(&format!(": {description}"));
                }
                push_text(&mut text, &line);
            }
            RawContent::Resource(embedded) => match embedded.resource {
                ResourceContents::TextResourceContents {
                    uri, text: body, ..
                } => {
                    push_text(&mut text, &format!("Resource {uri}:\n{body}"));
                }
                ResourceContents::BlobResourceContents {
                    uri,
                    mime_type,
                    blob,
                    ..
                } => push_text(
                    &mut text,
                    &format!(
                        "[resource {uri} ({}, {} base64 characters) not shown]",
                        mime_type.as_deref().unwrap_or("binary"),
                        blob.len()
                    ),
                ),
            },
        }
    }
    if text.is_empty()
        && blocks.is_empty()
        && let Some(structured) = &result.structured_content
    {
        text = structured.to_string();
    }
    let is_error = result.is_error == Some(true);
    if is_error && !text.starts_with("Error") {
        text = format!("Error: {text}");
    }
    let mut content = Vec::with_capacity(blocks.len() + 1);
    if !text.is_empty() || blocks.is_empty() {
        content.push(text_block(capped(text, tool, &store.spill_dir)));
    }
    content.extend(blocks);
    ToolOutput {
        content,
        is_error,
        meta: None,
        error: None,
    }
}

/// An image block from base64 `data`, stored and normalised as
/// `read_image` does it.
fn image_block(store: &AttachmentStore, data: &str, tool: &str) -> Result<Value, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data.trim())
        .map_err(|e| format!("invalid base64: {e}"))?;
    let name = format!("{tool}.image");
    // Decoding and re-encoding are CPU work: off the async workers when
    // there is a runtime to hand them to.
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| dsh_tools::image_block(store, bytes, &name))
        }
        _ => dsh_tools::image_block(store, bytes, &name),
    }
}

/// `text` cut to the display cap; the whole text saved under `spill_dir`
/// and named in the cut text.
fn capped(text: String, tool: &str, spill_dir: &Path) -> String {
    if text.len() <= OUTPUT_DISPLAY_LIMIT {
        return text;
    }
    let mut cut = OUTPUT_DISPLAY_LIMIT;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let saved = save(&text, tool, spill_dir);
    let mut shown = text[..cut].to_owned();
    match saved {
        Ok(path) => shown.push_str(&format!(
            "\n…[result truncated: {} of {} bytes shown; the whole result is saved in {}]",
            cut,
            text.len(),
            path.display()
        )),
        Err(err) => shown.push_str(&format!(
            "\n…[result truncated: {} of {} bytes shown; it could not be saved: {err}]",
            cut,
            text.len()
        )),
    }
    shown
}

fn save(text: &str, tool: &str, spill_dir: &Path) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = spill_dir.join("mcp");
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)?;
    let path = dir.join(format!("{tool}-{}.txt", uuid::Uuid::new_v4()));
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    file.write_all(text.as_bytes())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::Content;

    fn store(dir: &Path) -> ResultStore {
        ResultStore {
            attachments: AttachmentStore::new(dir),
            spill_dir: dir.join("spill"),
        }
    }

    #[test]
    fn texts_join_errors_say_so_and_long_text_is_saved_whole() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = store(dir.path());
        let out = to_output(
            "mcp__s__t",
            CallToolResult::success(vec![Content::text("a"), Content::text("b")]),
            &store,
        );
        assert_eq!(out.text_content(), "a\nb");
        assert!(!out.is_error);
        let out = to_output(
            "mcp__s__t",
            CallToolResult::error(vec![Content::text("boom")]),
            &store,
        );
        assert!(out.is_error);
        assert_eq!(out.text_content(), "Error: boom");
        let long = "x".repeat(OUTPUT_DISPLAY_LIMIT + 10);
        let out = to_output(
            "mcp__s__t",
            CallToolResult::success(vec![Content::text(long.clone())]),
            &store,
        );
        let shown = out.text_content();
        assert!(shown.len() < long.len() + 200, "{}", shown.len());
        let path = shown
            .rsplit("saved in ")
            .next()
            .and_then(|p| p.strip_suffix(']'))
            .unwrap_or_default();
        assert_eq!(
            std::fs::read_to_string(path).ok().as_deref(),
            Some(long.as_str())
        );
    }

    #[test]
    fn a_bad_image_is_described_not_attached() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let out = to_output(
            "mcp__s__t",
            CallToolResult::success(vec![Content::image("not base64!", "image/png")]),
            &store(dir.path()),
        );
        assert_eq!(out.content.len(), 1);
        assert!(
            out.text_content().contains("not shown"),
            "{}",
            out.text_content()
        );
    }
}
