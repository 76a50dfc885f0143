//! Turning an image file's bytes into what the model is sent: the file
//! itself when it is small enough, otherwise a re-encoded copy scaled to
//! fit [`MAX_PIXELS`] and [`MAX_SEND_BYTES`], as the official runtime does.
//!
//! The header is read first; images whose declared size passes
//! [`MAX_DECODED_PIXELS`] or [`MAX_SIDE`] are refused before anything is
//! decoded, and the decoder runs under [`image::Limits`] as a second bound.

use super::sizing::{MAX_PIXELS, fit};
use image::codecs::webp::WebPEncoder;
use image::{DynamicImage, ExtendedColorType, ImageEncoder, ImageFormat, ImageReader, Limits};
use std::io::Cursor;

/// The largest file accepted (20 MiB).
pub(crate) const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;
/// The largest image sent as is (4 MiB); larger ones are re-encoded.
pub(crate) const MAX_SEND_BYTES: usize = 4 * 1024 * 1024;
/// The largest decoded size accepted, in pixels.
pub(crate) const MAX_DECODED_PIXELS: u64 = 64_000_000;
/// The longest side accepted, in pixels.
pub(crate) const MAX_SIDE: u32 = 8192;
/// The quality of re-encoded JPEGs (the official runtime's, read from its
/// quantisation tables).
const JPEG_QUALITY: u8 = 85;
/// What the decoder may allocate: 64 million pixels of 16-bit RGBA.
const MAX_DECODER_ALLOC: u64 = MAX_DECODED_PIXELS * 8;

/// Why an image cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ImageError {
    /// Not a PNG, JPEG, GIF or WebP image, or a damaged one.
    #[error("Unsupported or malformed image data.")]
    Malformed,
    /// The declared size passes [`MAX_DECODED_PIXELS`].
    #[error(
        "the image exceeds the {MAX_DECODED_PIXELS}-pixel decoded-size limit; downscale the image and read the smaller copy"
    )]
    TooManyPixels,
    /// A side passes [`MAX_SIDE`].
    #[error(
        "at least one image side exceeds the {MAX_SIDE}px limit; downscale the image and read the smaller copy"
    )]
    SideTooLong,
    /// Even the re-encoded copy is larger than [`MAX_SEND_BYTES`].
    #[error(
        "the image stays above the {MAX_SEND_BYTES}-byte limit when re-encoded; downscale the image and read the smaller copy"
    )]
    StillTooLarge,
}

impl ImageError {
    /// Whether the message is about this file's size (and names it).
    pub(crate) fn names_the_file(&self) -> bool {
        !matches!(self, Self::Malformed)
    }
}

/// The image the model is sent.
#[derive(Debug, PartialEq)]
pub(crate) struct Normalised {
    /// The encoded image: the file's bytes or a re-encoded copy.
    pub bytes: Vec<u8>,
    /// `image/png`, `image/jpeg`, `image/gif` or `image/webp`.
    pub media_type: &'static str,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// The file's size when it was scaled down.
    pub original: Option<(u32, u32)>,
}

/// The image the model is sent for a file holding `bytes`.
pub(crate) fn normalise(bytes: Vec<u8>) -> Result<Normalised, ImageError> {
    let (format, media_type) = format_of(&bytes).ok_or(ImageError::Malformed)?;
    let (width, height) = ImageReader::with_format(Cursor::new(&bytes), format)
        .into_dimensions()
        .map_err(|_| ImageError::Malformed)?;
    if u64::from(width) * u64::from(height) > MAX_DECODED_PIXELS {
        return Err(ImageError::TooManyPixels);
    }
    if width > MAX_SIDE || height > MAX_SIDE {
        return Err(ImageError::SideTooLong);
    }
    let target = fit(width, height, MAX_PIXELS);
    if target.is_none() && bytes.len() <= MAX_SEND_BYTES {
        return Ok(Normalised {
            bytes,
            media_type,
            width,
            height,
            original: None,
        });
    }
    let mut image = decode(&bytes, format)?;
    if let Some((w, h)) = target {
        image = image.thumbnail_exact(w, h);
    }
    let (bytes, media_type) = encode(&image)?;
    Ok(Normalised {
        bytes,
        media_type,
        width: image.width(),
        height: image.height(),
        original: target.map(|_| (width, height)),
    })
}

/// The format and media type of an image recognised by its first bytes.
pub(crate) fn format_of(bytes: &[u8]) -> Option<(ImageFormat, &'static str)> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some((ImageFormat::Png, "image/png"))
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some((ImageFormat::Jpeg, "image/jpeg"))
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        Some((ImageFormat::Gif, "image/gif"))
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some((ImageFormat::WebP, "image/webp"))
    } else {
        None
    }
}

/// Decodes the image (the first frame of an animation) under the limits.
fn decode(bytes: &[u8], format: ImageFormat) -> Result<DynamicImage, ImageError> {
    let mut limits = Limits::default();
    limits.max_image_width = Some(MAX_SIDE);
    limits.max_image_height = Some(MAX_SIDE);
    limits.max_alloc = Some(MAX_DECODER_ALLOC);
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    reader.limits(limits);
    reader.decode().map_err(|err| match err {
        image::ImageError::Limits(_) => ImageError::TooManyPixels,
        _ => ImageError::Malformed,
    })
}

/// Images with an alpha channel become (lossless) WebP, as the official
/// runtime chooses WebP for them; others, and WebP copies that stay too
/// large, become JPEG.
fn encode(image: &DynamicImage) -> Result<(Vec<u8>, &'static str), ImageError> {
    let (w, h) = (image.width(), image.height());
    if image.color().has_alpha() {
        let rgba = image.to_rgba8();
        let mut out = Vec::new();
        WebPEncoder::new_lossless(&mut out)
            .write_image(rgba.as_raw(), w, h, ExtendedColorType::Rgba8)
            .map_err(|_| ImageError::Malformed)?;
        if out.len() <= MAX_SEND_BYTES {
            return Ok((out, "image/webp"));
        }
    }
    // jpeg-encoder rather than image's encoder: at this quality it
    // subsamples chroma (4:2:0) and it can optimise the Huffman tables, as
    // the official output does; together they make the copy 2-4x smaller.
    let mut out = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut out, JPEG_QUALITY);
    encoder.set_optimized_huffman_tables(true);
    encoder.set_chroma_subsampling_method(jpeg_encoder::ChromaSubsamplingMethod::Average);
    let (w, h) = (
        u16::try_from(w).map_err(|_| ImageError::SideTooLong)?,
        u16::try_from(h).map_err(|_| ImageError::SideTooLong)?,
    );
    // Grey images too are written as three components, as the official
    // runtime writes them.
    let written = encoder.encode(image.to_rgb8().as_raw(), w, h, jpeg_encoder::ColorType::Rgb);
    written.map_err(|_| ImageError::Malformed)?;
    if out.len() > MAX_SEND_BYTES {
        return Err(ImageError::StillTooLarge);
    }
    Ok((out, "image/jpeg"))
}
