//! read_image through the tool: small images attached as they are, large
//! ones scaled down and re-encoded as the official runtime does, and the
//! limits checked before anything is decoded.

use crate::common::{Fixture, ok, some, text};
use dsh_session::attachments::AttachmentStore;
use dsh_tools::{PermissionMode, ToolOutput};
use image::{ImageEncoder, ImageFormat, codecs::png::PngEncoder};
use serde_json::{Value, json};

/// A PNG of `w`×`h` pixels of `channels` (3 or 4) bytes, filled by `pixel`.
fn png(w: u32, h: u32, channels: u8, pixel: impl Fn(u32, u32, usize) -> u8) -> Vec<u8> {
    let mut raw = Vec::with_capacity((w * h) as usize * usize::from(channels));
    for y in 0..h {
        for x in 0..w {
            for c in 0..usize::from(channels) {
                raw.push(pixel(x, y, c));
            }
        }
    }
    let color = if channels == 4 {
        image::ExtendedColorType::Rgba8
    } else {
        image::ExtendedColorType::Rgb8
    };
    let mut out = Vec::new();
    ok(
        PngEncoder::new(&mut out).write_image(&raw, w, h, color),
        "encode png",
    );
    out
}

/// A gradient, which compresses well.
fn gradient(w: u32, h: u32) -> Vec<u8> {
    png(w, h, 3, |x, y, c| ((x + 2 * y + 60 * c as u32) % 251) as u8)
}

/// Noise, which does not compress: 3 bytes a pixel and more.
fn noise(w: u32, h: u32) -> Vec<u8> {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let bytes: Vec<u8> = (0..w * h * 3)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    png(w, h, 3, |x, y, c| bytes[((y * w + x) * 3) as usize + c])
}

/// Calls read_image on `name` after writing `bytes` there.
async fn read(fx: &Fixture, name: &str, bytes: &[u8]) -> ToolOutput {
    ok(std::fs::write(fx.path(name), bytes), "write image");
    fx.call("read_image", &json!({"file_path": name}).to_string())
        .await
}

/// The attachment of a successful result, checked against the store.
fn attachment(fx: &Fixture, out: &ToolOutput) -> (Value, Vec<u8>) {
    assert!(!out.is_error, "{}", text(out));
    assert_eq!(out.content.len(), 2);
    assert_eq!(out.content[1]["type"], "image");
    let attachment = out.content[1]["attachment"].clone();
    let stored = ok(AttachmentStore::new(&fx.spill).load(&attachment), "stored");
    assert_eq!(attachment["bytes"], json!(stored.len()));
    (attachment, stored)
}

fn summary(fx: &Fixture, name: &str, line: &str) -> String {
    format!(
        "<path>{}</path>\n<type>image</type>\n<content>\n{line}\n</content>",
        fx.path(name).display()
    )
}

#[tokio::test]
async fn a_small_image_is_attached_as_it_is() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let bytes = gradient(8, 8);
    let out = read(&fx, "dot.png", &bytes).await;
    let (attachment, stored) = attachment(&fx, &out);
    assert_eq!(stored, bytes);
    let line = format!("image/png image, 8x8 px, {} bytes", bytes.len());
    assert_eq!(out.content[0]["text"], summary(&fx, "dot.png", &line));
    let id = some(attachment["attachmentId"].as_str(), "id");
    assert!(id.starts_with("sha256:") && id.len() == 71, "{id}");
    assert_eq!(
        attachment,
        json!({"attachmentId": id, "mediaType": "image/png", "bytes": bytes.len(), "width": 8, "height": 8, "name": "dot.png"})
    );
    assert_eq!(
        out.meta,
        Some(json!({"path": fx.path("dot.png").display().to_string()}))
    );
}

#[tokio::test]
async fn a_large_png_is_scaled_down_to_a_jpeg() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = read(&fx, "big.png", &gradient(4000, 3000)).await;
    let (attachment, stored) = attachment(&fx, &out);
    assert_eq!(attachment["mediaType"], "image/jpeg");
    assert_eq!(
        (attachment["width"].clone(), attachment["height"].clone()),
        (json!(2364), json!(1773))
    );
    assert_eq!(
        attachment["originalDimensions"],
        json!({"width": 4000, "height": 3000})
    );
    assert_eq!(attachment["name"], "big.png");
    let decoded = ok(
        image::load_from_memory_with_format(&stored, ImageFormat::Jpeg),
        "jpeg",
    );
    assert_eq!((decoded.width(), decoded.height()), (2364, 1773));
    let prefix = format!(
        "image/jpeg image, 2364x1773 px, {} bytes (downscaled from 4000x3000 px; ",
        stored.len()
    );
    let text = some(out.content[0]["text"].as_str(), "text");
    let line = some(text.lines().nth(3), "summary line");
    assert!(
        line.starts_with(&prefix) && line.contains("1.69") && line.ends_with(')'),
        "{line}"
    );
}

#[tokio::test]
async fn a_png_over_four_mib_is_re_encoded_at_its_size() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let bytes = noise(1300, 1300);
    assert!(bytes.len() > 4 * 1024 * 1024);
    let out = read(&fx, "noise.png", &bytes).await;
    let (attachment, stored) = attachment(&fx, &out);
    assert_eq!(attachment["mediaType"], "image/jpeg");
    assert_eq!(attachment.get("originalDimensions"), None);
    assert!(stored.len() < bytes.len() / 3, "{} bytes", stored.len());
    let line = format!("image/jpeg image, 1300x1300 px, {} bytes", stored.len());
    assert_eq!(out.content[0]["text"], summary(&fx, "noise.png", &line));
}

#[tokio::test]
async fn an_image_with_alpha_is_scaled_down_to_a_webp() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let bytes = png(
        2100,
        2100,
        4,
        |x, _, c| if c == 3 { 128 } else { (x % 256) as u8 },
    );
    let out = read(&fx, "alpha.png", &bytes).await;
    let (attachment, stored) = attachment(&fx, &out);
    assert_eq!(attachment["mediaType"], "image/webp");
    let decoded = ok(
        image::load_from_memory_with_format(&stored, ImageFormat::WebP),
        "webp",
    );
    assert_eq!((decoded.width(), decoded.height()), (2048, 2048));
    assert!(decoded.color().has_alpha());
}

/// A PNG whose header declares `w`×`h` but holds almost nothing.
fn declared(w: u32, h: u32) -> Vec<u8> {
    let mut bytes = gradient(1, 1);
    // IHDR's width and height follow the signature, length and type.
    bytes[16..20].copy_from_slice(&w.to_be_bytes());
    bytes[20..24].copy_from_slice(&h.to_be_bytes());
    let crc = crc32(&bytes[12..29]);
    bytes[29..33].copy_from_slice(&crc.to_be_bytes());
    bytes
}

/// The CRC-32 of PNG chunks.
fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0_u32;
    for &byte in data {
        crc ^= u32::from(byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[tokio::test]
async fn limits_are_checked_before_decoding() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let cannot = |name: &str, why: &str| {
        format!("Error: cannot read \"{}\": {why}", fx.path(name).display())
    };
    for (name, bytes, why) in [
        (
            "bomb.png",
            declared(100_000, 100_000),
            "the image exceeds the 64000000-pixel decoded-size limit; downscale the image and read the smaller copy",
        ),
        (
            "wide.png",
            declared(8193, 100),
            "at least one image side exceeds the 8192px limit; downscale the image and read the smaller copy",
        ),
    ] {
        let out = read(&fx, name, &bytes).await;
        assert!(out.is_error);
        assert_eq!(text(&out), cannot(name, why));
    }
    let big = ok(std::fs::File::create(fx.path("big.png")), "big");
    ok(big.set_len(20 * 1024 * 1024 + 1), "sparse");
    ok(std::fs::create_dir(fx.path("dir")), "dir");
    for (name, why, code) in [
        (
            "big.png",
            "20971521 bytes exceeds the 20971520-byte limit",
            "FS_TOO_LARGE",
        ),
        ("none.png", "not found", "FS_NOT_FOUND"),
        ("dir", "not a regular file", "FS_NOT_REGULAR_FILE"),
    ] {
        let out = fx
            .call("read_image", &json!({"file_path": name}).to_string())
            .await;
        assert!(out.is_error);
        assert_eq!(text(&out), cannot(name, why));
        let error = some(out.error, "error");
        assert_eq!(
            (error.name.as_str(), error.code.as_str()),
            ("FsError", code)
        );
    }
    for (name, bytes) in [
        ("text.png", b"not really a png".to_vec()),
        ("cut.png", gradient(3000, 3000)[..5000].to_vec()),
    ] {
        let out = read(&fx, name, &bytes).await;
        assert!(out.is_error);
        assert_eq!(text(&out), "Error: Unsupported or malformed image data.");
    }
}
