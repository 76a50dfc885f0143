//! ACP prompt content as the SDK protocol's content blocks.
//!
//! | ACP block | SDK block |
//! |---|---|
//! | `text` | `text` |
//! | `image` | `image {data, mimeType}` (stored as an attachment by the server) |
//! | `resource` with `text` | `text`: the URI, then the text |
//! | `resource` with an image `blob` | `image` |
//! | `resource_link` | `text` naming the link |
//! | `audio`, other blobs | refused |

use crate::error::AcpError;
use serde_json::{Map, Value, json};

/// The SDK blocks of an ACP prompt, or why it is refused.
pub fn sdk_blocks(prompt: &[Value]) -> Result<Vec<Map<String, Value>>, AcpError> {
    if prompt.is_empty() {
        return Err(AcpError::InvalidParams(
            "session/prompt prompt must hold at least one content block".into(),
        ));
    }
    prompt
        .iter()
        .enumerate()
        .map(|(index, block)| {
            let block = sdk_block(block).map_err(|why| {
                AcpError::InvalidParams(format!("session/prompt prompt[{index}]: {why}"))
            })?;
            match block {
                Value::Object(block) => Ok(block),
                _ => Err(AcpError::InvalidParams(format!(
                    "session/prompt prompt[{index}] is not an object"
                ))),
            }
        })
        .collect()
}

fn sdk_block(block: &Value) -> Result<Value, String> {
    let text = |key: &str| block.get(key).and_then(Value::as_str);
    match text("type") {
        Some("text") => Ok(json!({"type": "text", "text": text("text").unwrap_or_default()})),
        Some("image") => image(text("data"), text("mimeType")),
        Some("resource") => {
            let resource = block.get("resource").unwrap_or(&Value::Null);
            let field = |key: &str| resource.get(key).and_then(Value::as_str);
            let uri = field("uri").unwrap_or("(no uri)");
            match (field("text"), field("blob")) {
                (Some(body), _) => {
                    Ok(json!({"type": "text", "text": format!("Resource {uri}:\n{body}")}))
                }
                (None, Some(blob))
                    if field("mimeType").is_some_and(|m| m.starts_with("image/")) =>
                {
                    image(Some(blob), field("mimeType"))
                }
                (None, Some(_)) => Err(format!(
                    "the embedded resource {uri} is binary and not an image; only text and image resources are accepted"
                )),
                (None, None) => Err("an embedded resource needs `text` or `blob`".into()),
            }
        }
        Some("resource_link") => {
            let uri = text("uri").unwrap_or_default();
            let name = text("name").unwrap_or(uri);
            let mut line = format!("Linked resource \"{name}\": {uri}");
            if let Some(description) = text("description") {
                line.push_str(&format!(" ({description})"));
            }
            Ok(json!({"type": "text", "text": line}))
        }
        Some("audio") => {
            Err("audio prompts are not supported (promptCapabilities.audio is false)".into())
        }
        Some(other) => Err(format!("unknown content block type \"{other}\"")),
        None => Err("a content block needs a string `type`".into()),
    }
}

fn image(data: Option<&str>, mime: Option<&str>) -> Result<Value, String> {
    match (data, mime) {
        (Some(data), Some(mime)) => Ok(json!({"type": "image", "data": data, "mimeType": mime})),
        _ => Err("an image needs `data` (base64) and `mimeType`".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_accepted_block_maps() {
        let prompt = [
            json!({"type": "text", "text": "hi"}),
            json!({"type": "image", "data": "AAAA", "mimeType": "image/png"}),
            json!({"type": "resource", "resource": {"uri": "file:///a.rs", "text": "fn main() {}"}}),
            json!({"type": "resource", "resource": {"uri": "file:///p.png", "blob": "AAAA", "mimeType": "image/png"}}),
            json!({"type": "resource_link", "uri": "file:///b.md", "name": "b.md"}),
        ];
        let blocks = sdk_blocks(&prompt).unwrap();
        assert_eq!(
            Value::Object(blocks[0].clone()),
            json!({"type": "text", "text": "hi"})
        );
        assert_eq!(blocks[1]["mimeType"], "image/png");
        assert_eq!(blocks[2]["text"], "Resource file:///a.rs:\nfn main() {}");
        assert_eq!(blocks[3]["type"], "image");
        assert_eq!(blocks[4]["text"], "Linked resource \"b.md\": file:///b.md");
    }

    #[test]
    fn audio_binary_and_empty_prompts_are_refused() {
        let audio = [json!({"type": "audio", "data": "AAAA", "mimeType": "audio/wav"})];
        let err = sdk_blocks(&audio).unwrap_err().to_string();
        assert!(
            err.starts_with("session/prompt prompt[0]: audio prompts"),
            "{err}"
        );
        let blob = [
            json!({"type": "resource", "resource": {"uri": "x:/z", "blob": "AA", "mimeType": "application/zip"}}),
        ];
        assert!(sdk_blocks(&blob).is_err());
        assert!(sdk_blocks(&[]).is_err());
    }
}
