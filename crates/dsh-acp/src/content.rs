//! ACP prompt content as the SDK protocol's content blocks.
//!
//! As the official `acp` profile does, text is joined into one user text
//! block: `text` blocks as they are, with no separator, and a
//! `resource_link` as a line `[resource_link name="…" uri="…"]`. dsh also
//! takes what the official profile refuses: an `image` (`data`,
//! `mimeType`) becomes an SDK image block (stored as an attachment by the
//! server), an embedded text `resource` joins the text between
//! `[resource uri="…"]` and `[/resource]` lines, an embedded image blob is
//! an image. `audio` and other binary resources are refused.

use crate::error::AcpError;
use serde_json::{Map, Value, json};

/// The SDK blocks of an ACP prompt, or why it is refused.
pub fn sdk_blocks(prompt: &[Value]) -> Result<Vec<Map<String, Value>>, AcpError> {
    if prompt.is_empty() {
        return Err(AcpError::InvalidParams("empty prompt".into()));
    }
    let mut blocks = Vec::new();
    let mut text = String::new();
    let flush = |text: &mut String, blocks: &mut Vec<Map<String, Value>>| {
        if !text.is_empty() {
            blocks.push(object(
                json!({"type": "text", "text": std::mem::take(text)}),
            ));
        }
    };
    for block in prompt {
        let field = |key: &str| block.get(key).and_then(Value::as_str);
        match field("type") {
            Some("text") => text.push_str(field("text").unwrap_or_default()),
            Some("resource_link") => {
                let uri = field("uri").unwrap_or_default();
                let name = field("name").unwrap_or(uri);
                text.push_str(&format!(
                    "\n[resource_link name={} uri={}]\n",
                    quoted(name),
                    quoted(uri)
                ));
            }
            Some("image") => {
                flush(&mut text, &mut blocks);
                blocks.push(image(field("data"), field("mimeType"))?);
            }
            Some("resource") => {
                let resource = block.get("resource").unwrap_or(&Value::Null);
                let inner = |key: &str| resource.get(key).and_then(Value::as_str);
                let uri = inner("uri").unwrap_or_default();
                match (inner("text"), inner("blob"), inner("mimeType")) {
                    (Some(body), _, _) => {
                        text.push_str(&format!(
                            "\n[resource uri={}]\n{body}\n[/resource]\n",
                            quoted(uri)
                        ));
                    }
                    (None, Some(blob), Some(mime)) if mime.starts_with("image/") => {
                        flush(&mut text, &mut blocks);
                        blocks.push(image(Some(blob), Some(mime))?);
                    }
                    _ => {
                        return Err(AcpError::InvalidParams(format!(
                            "embedded resource {uri} is neither text nor an image"
                        )));
                    }
                }
            }
            Some("audio") => {
                return Err(AcpError::InvalidParams(
                    "audio prompt content is not supported".into(),
                ));
            }
            Some(other) => {
                return Err(AcpError::InvalidParams(format!(
                    "unknown prompt content type: {other}"
                )));
            }
            None => {
                return Err(AcpError::InvalidParams(
                    "prompt content needs a string type".into(),
                ));
            }
        }
    }
    flush(&mut text, &mut blocks);
    if blocks.is_empty() {
        return Err(AcpError::InvalidParams("empty prompt".into()));
    }
    Ok(blocks)
}

/// `text` as a JSON string (quotes and escapes).
fn quoted(text: &str) -> String {
    Value::String(text.to_owned()).to_string()
}

fn image(data: Option<&str>, mime: Option<&str>) -> Result<Map<String, Value>, AcpError> {
    match (data, mime) {
        (Some(data), Some(mime)) => Ok(object(
            json!({"type": "image", "data": data, "mimeType": mime}),
        )),
        _ => Err(AcpError::InvalidParams(
            "an image needs data and mimeType".into(),
        )),
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one_text(prompt: &[Value]) -> String {
        let blocks = sdk_blocks(prompt).unwrap();
        assert_eq!(blocks.len(), 1, "{blocks:?}");
        blocks[0]["text"].as_str().unwrap().to_owned()
    }

    #[test]
    fn text_and_links_join_as_the_official_profile_joins_them() {
        assert_eq!(
            one_text(&[
                json!({"type": "text", "text": "a"}),
                json!({"type": "text", "text": "b"})
            ]),
            "ab"
        );
        let link = [
            json!({"type": "text", "text": "link"}),
            json!({"type": "resource_link", "uri": "file:///x/b.txt", "name": "b.txt"}),
        ];
        assert_eq!(
            one_text(&link),
            "link\n[resource_link name=\"b.txt\" uri=\"file:///x/b.txt\"]\n"
        );
    }

    #[test]
    fn images_and_embedded_resources_are_taken() {
        let prompt = [
            json!({"type": "text", "text": "see"}),
            json!({"type": "resource", "resource": {"uri": "file:///a.rs", "text": "fn main() {}"}}),
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
            json!({"type": "resource", "resource": {"uri": "file:///p.png", "blob": "AAAA", "mimeType": "image/png"}}),
        ];
        let blocks = sdk_blocks(&prompt).unwrap();
        assert_eq!(
            blocks[0]["text"],
            "see\n[resource uri=\"file:///a.rs\"]\nfn main() {}\n[/resource]\n"
        );
        assert_eq!(blocks[1]["mimeType"], "image/png");
        assert_eq!(blocks[2]["type"], "image");
    }

    #[test]
    fn audio_binary_and_empty_prompts_are_refused() {
        let audio = [json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"})];
        assert_eq!(
            sdk_blocks(&audio).unwrap_err().to_string(),
            "audio prompt content is not supported"
        );
        let blob = [
            json!({"type": "resource", "resource": {"uri": "x:/z", "blob": "AA", "mimeType": "application/zip"}}),
        ];
        assert!(sdk_blocks(&blob).is_err());
        assert_eq!(sdk_blocks(&[]).unwrap_err().to_string(), "empty prompt");
    }
}
