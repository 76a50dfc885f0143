//! The attachment store: prompt images kept by content hash under
//! `DSH_HOME/attachments/v1/objects/<hex[0:2]>/<sha256 hex>`.
//!
//! Directories are 0700 and objects 0600 whatever the umask; objects are
//! written through `attachments/v1/tmp` and renamed into place, read without
//! following a symbolic link, and must be regular files owned by the
//! runtime ([`crate::private_fs`]).

use crate::private_fs::{
    PrivateFsError, create_dir, create_dir_all, create_file, file_exists, open_file,
};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// What a stored image is called in errors.
const OBJECT: &str = "attachment";
/// What a staged image is called in errors.
const STAGED: &str = "attachment staging file";
/// What a directory of the store is called in errors.
const DIR: &str = "attachment directory";

/// Why an image could not be admitted (the text is the wire error).
#[derive(Debug, thiserror::Error)]
pub enum AdmitError {
    /// `data` is not canonical base64.
    #[error("Image upload is not canonical base64.")]
    NotCanonical,
    /// The bytes are not an image this runtime can pass on.
    #[error("Image upload is not a PNG, JPEG, WebP or GIF image.")]
    NotAnImage,
    /// Storing the bytes failed (or an entry on the way is a symbolic link
    /// or another user's).
    #[error("Image upload could not be stored: {0}")]
    Store(#[from] PrivateFsError),
}

/// Content-addressed image storage.
#[derive(Debug, Clone)]
pub struct AttachmentStore {
    home: PathBuf,
    root: PathBuf,
}

impl AttachmentStore {
    /// The store of `dsh_home`. Nothing is created until an image is admitted.
    pub fn new(dsh_home: &Path) -> Self {
        Self {
            home: dsh_home.to_path_buf(),
            root: dsh_home.join("attachments").join("v1"),
        }
    }

    /// Where the object with this sha256 hex digest lives.
    pub fn object_path(&self, hex: &str) -> PathBuf {
        self.root
            .join("objects")
            .join(hex.get(..2).unwrap_or("00"))
            .join(hex)
    }

    /// Decodes an SDK image block's `data`, stores the bytes (atomically,
    /// 0600, once per content) and returns the `attachment` object.
    pub fn admit(&self, data: &str) -> Result<Value, AdmitError> {
        let bytes = STANDARD
            .decode(data)
            .map_err(|_| AdmitError::NotCanonical)?;
        if STANDARD.encode(&bytes) != data {
            return Err(AdmitError::NotCanonical);
        }
        let media_type = media_type(&bytes).ok_or(AdmitError::NotAnImage)?;
        let size = imagesize::blob_size(&bytes).map_err(|_| AdmitError::NotAnImage)?;
        let id = self.keep(&bytes)?;
        Ok(json!({
            "attachmentId": id,
            "mediaType": media_type,
            "width": size.width,
            "height": size.height,
            "bytes": bytes.len(),
        }))
    }

    /// Stores `bytes` (atomically, 0600, once per content) and returns
    /// their attachment id, `sha256:<hex>`. The caller vouches that they
    /// are an image.
    pub fn keep(&self, bytes: &[u8]) -> Result<String, PrivateFsError> {
        let hex = hex_digest(bytes);
        let path = self.object_path(&hex);
        // An object this runtime stored is reused; anything else in its
        // place (a symbolic link, another user's file) is replaced by the
        // rename, never followed.
        if !file_exists(OBJECT, &path).unwrap_or(false) {
            self.write_atomically(&path, bytes)?;
        }
        Ok(format!("sha256:{hex}"))
    }

    /// The stored bytes of an `attachment` object (a regular file owned by
    /// the runtime, read without following a symbolic link).
    pub fn load(&self, attachment: &Value) -> std::io::Result<Vec<u8>> {
        let hex = attachment_hex(attachment).ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "attachment without a sha256 id",
            )
        })?;
        let path = self.object_path(hex);
        let mut file = open_file(OBJECT, &path, OpenOptions::new().read(true))
            .map_err(std::io::Error::other)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// Writes `bytes` to a new staging file and renames it to `path`,
    /// creating the missing directories (0700).
    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> Result<(), PrivateFsError> {
        create_dir_all(&self.home)?;
        let objects = self.root.join("objects");
        let tmp_dir = self.root.join("tmp");
        let parent = path.parent().unwrap_or(&objects);
        for dir in [
            self.root.parent().unwrap_or(&self.root),
            &self.root,
            &tmp_dir,
            &objects,
            parent,
        ] {
            create_dir(DIR, dir)?;
        }
        let tmp = tmp_dir.join(format!("{}-{}", std::process::id(), uuid_like()));
        let io = |action: &'static str, source: std::io::Error| PrivateFsError::Io {
            action,
            path: tmp.clone(),
            source,
        };
        let mut file = create_file(STAGED, &tmp, OpenOptions::new().write(true))?;
        let written = file
            .write_all(bytes)
            .map_err(|e| io("write", e))
            .and_then(|()| file.sync_data().map_err(|e| io("sync", e)))
            .and_then(|()| std::fs::rename(&tmp, path).map_err(|e| io("rename", e)));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

fn uuid_like() -> String {
    format!("{:016x}", fastrand::u64(..))
}

/// The hex digest of an `attachment` object's `sha256:` id.
pub fn attachment_hex(attachment: &Value) -> Option<&str> {
    attachment
        .get("attachmentId")?
        .as_str()?
        .strip_prefix("sha256:")
}

fn hex_digest(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn media_type(bytes: &[u8]) -> Option<&'static str> {
    match imagesize::image_type(bytes).ok()? {
        imagesize::ImageType::Png => Some("image/png"),
        imagesize::ImageType::Jpeg => Some("image/jpeg"),
        imagesize::ImageType::Gif => Some("image/gif"),
        imagesize::ImageType::Webp => Some("image/webp"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 8×8 PNG of the official `image_prompt` capture.
    pub const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEklEQVR4nGP4z8CAFWEXHbQSACj/P8Fu7N9hAAAAAElFTkSuQmCC";

    #[test]
    fn admits_like_the_official_runtime() {
        let home = std::env::temp_dir().join(format!("dsh-attach-{}", std::process::id()));
        let store = AttachmentStore::new(&home);
        let attachment = store.admit(PNG).unwrap();
        assert_eq!(
            attachment,
            json!({"attachmentId": "sha256:57cda64cead0869cd5f90dfebb024f4bd9a922aaea91d513de6fa3e949d88921", "mediaType": "image/png", "width": 8, "height": 8, "bytes": 75})
        );
        let path = home.join("attachments/v1/objects/57/57cda64cead0869cd5f90dfebb024f4bd9a922aaea91d513de6fa3e949d88921");
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path)
            .map(|m| m.permissions().mode() & 0o777)
            .unwrap_or(0);
        assert_eq!(mode, 0o600);
        assert_eq!(store.load(&attachment).map(|b| b.len()).ok(), Some(75));
        // Admitting the same bytes again is idempotent.
        assert_eq!(store.admit(PNG).ok(), Some(attachment));
        let _ = std::fs::remove_dir_all(&home);
    }

    #[test]
    fn a_symlink_planted_as_an_object_is_refused_not_followed() {
        use std::os::unix::fs::PermissionsExt;
        let home = std::env::temp_dir().join(format!("dsh-attach-link-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&home);
        let store = AttachmentStore::new(&home);
        let attachment = store.admit(PNG).unwrap();
        let hex = attachment_hex(&attachment).unwrap_or_default().to_owned();
        let path = store.object_path(&hex);
        let victim = home.join("victim");
        std::fs::write(&victim, b"not an image").unwrap();
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(&victim, &path).unwrap();
        let err = store.load(&attachment).err().map(|e| e.to_string());
        assert_eq!(
            err,
            Some(format!(
                "attachment {} is a symbolic link: refusing it",
                path.display()
            ))
        );
        // Admitting the image again replaces the link; the target is untouched.
        assert_eq!(store.admit(PNG).ok(), Some(attachment.clone()));
        assert_eq!(store.load(&attachment).map(|b| b.len()).ok(), Some(75));
        assert_eq!(std::fs::read(&victim).unwrap_or_default(), b"not an image");
        for dir in [
            "attachments",
            "attachments/v1",
            "attachments/v1/tmp",
            "attachments/v1/objects",
        ] {
            let mode = std::fs::metadata(home.join(dir))
                .map(|m| m.permissions().mode() & 0o777)
                .unwrap_or(0);
            assert_eq!(mode, 0o700, "{dir}");
        }
        let _ = std::fs::remove_dir_all(&home);
    }

    #[test]
    fn refuses_non_canonical_base64_and_non_images() {
        let store = AttachmentStore::new(Path::new("/nonexistent-dsh-home"));
        assert!(matches!(
            store.admit(&PNG[..PNG.len() - 1]),
            Err(AdmitError::NotCanonical)
        ));
        assert!(matches!(
            store.admit("aGVsbG9="),
            Err(AdmitError::NotCanonical)
        ));
        assert!(matches!(
            store.admit("aGVsbG8=\n"),
            Err(AdmitError::NotCanonical)
        ));
        assert!(matches!(
            store.admit("aGVsbG8="),
            Err(AdmitError::NotAnImage)
        ));
    }
}
