//! What every channel needs from a request's [`Attachment`]s: the base64 payload or the bytes,
//! the media type, a name to show, and private files for CLIs that take attachments as paths.

use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine as _;

use crate::request::Attachment;

/// Why an attachment could not be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AttachmentError {
    /// An inline attachment whose data is not base64.
    #[error("attachment {name} is not valid base64 ({reason})")]
    InvalidBase64 {
        /// [`Attachment::shown_name`].
        name: String,
        /// The decoder's message.
        reason: String,
    },
    /// A local image that cannot be read.
    #[error("cannot read attachment {}: {reason}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        reason: String,
    },
}

impl Attachment {
    /// The base64 text of an inline attachment, without a `data:…;base64,` prefix; `None` for
    /// a local image.
    ///
    /// ```
    /// use bridge_core::request::Attachment;
    /// let a = Attachment::Inline {
    ///     file_name: None,
    ///     media_type: "image/png".into(),
    ///     data: "data:image/png;base64,iVBO".into(),
    /// };
    /// assert_eq!(a.inline_base64(), Some("iVBO"));
    /// ```
    pub fn inline_base64(&self) -> Option<&str> {
        match self {
            Attachment::Inline { data, .. } => Some(match data.split_once(";base64,") {
                Some((_, payload)) if data.starts_with("data:") => payload,
                _ => data.as_str(),
            }),
            Attachment::LocalImage { .. } => None,
        }
    }

    /// The MIME type: as declared, or for a local image guessed from its extension.
    pub fn media_type(&self) -> String {
        match self {
            Attachment::Inline { media_type, .. } => media_type.clone(),
            Attachment::LocalImage { path } => image_media_type(path).to_string(),
        }
    }

    /// How messages name the attachment: its file name, its path, or `attachment N` (`index`
    /// counts from 0).
    pub fn shown_name(&self, index: usize) -> String {
        match self {
            Attachment::Inline {
                file_name: Some(name),
                ..
            } => name.clone(),
            Attachment::Inline { .. } => format!("attachment {}", index + 1),
            Attachment::LocalImage { path } => path.display().to_string(),
        }
    }

    /// The payload as base64: inline data as given (without a `data:` prefix), a local image
    /// read and encoded.
    pub fn to_base64(&self) -> Result<String, AttachmentError> {
        match self {
            Attachment::Inline { .. } => Ok(self.inline_base64().unwrap_or_default().to_string()),
            Attachment::LocalImage { path } => {
                Ok(base64::engine::general_purpose::STANDARD.encode(read(path)?))
            }
        }
    }

    /// The payload's bytes: inline data decoded, a local image read. `index` names an inline
    /// attachment without a file name in the error.
    pub fn to_bytes(&self, index: usize) -> Result<Vec<u8>, AttachmentError> {
        match self {
            Attachment::Inline { .. } => base64::engine::general_purpose::STANDARD
                .decode(self.inline_base64().unwrap_or_default().trim())
                .map_err(|e| AttachmentError::InvalidBase64 {
                    name: self.shown_name(index),
                    reason: e.to_string(),
                }),
            Attachment::LocalImage { path } => read(path),
        }
    }
}

fn read(path: &Path) -> Result<Vec<u8>, AttachmentError> {
    std::fs::read(path).map_err(|e| AttachmentError::Unreadable {
        path: path.to_path_buf(),
        reason: e.to_string(),
    })
}

/// An image's MIME type guessed from its file extension (PNG, GIF, WebP, BMP; else JPEG).
///
/// ```
/// use std::path::Path;
/// assert_eq!(bridge_core::attachment::image_media_type(Path::new("a/b.PNG")), "image/png");
/// assert_eq!(bridge_core::attachment::image_media_type(Path::new("photo")), "image/jpeg");
/// ```
pub fn image_media_type(path: &Path) -> &'static str {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("png") => "image/png",
        Some("gif") => "image/gif",
        Some("webp") => "image/webp",
        Some("bmp") => "image/bmp",
        _ => "image/jpeg",
    }
}

/// The file extension for an image MIME type (the inverse of [`image_media_type`]).
pub fn image_extension(media_type: &str) -> &'static str {
    match media_type {
        "image/png" => "png",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/bmp" => "bmp",
        _ => "jpg",
    }
}

/// Creates `path` readable by its owner only (0600 on Unix) and writes `bytes`; fails if it
/// exists. For attachments handed to a CLI as files.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)?.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inline(data: &str, name: Option<&str>) -> Attachment {
        Attachment::Inline {
            file_name: name.map(str::to_string),
            media_type: "image/png".into(),
            data: data.into(),
        }
    }

    #[test]
    fn inline_payloads_decode_with_or_without_a_data_url() {
        for data in ["aGk=", "data:image/png;base64,aGk=", " aGk=\n"] {
            assert_eq!(inline(data, None).to_bytes(0).unwrap(), b"hi", "{data:?}");
        }
        assert_eq!(
            inline("data:image/png;base64,aGk=", None)
                .to_base64()
                .unwrap(),
            "aGk="
        );
        let error = inline("not base64!", None).to_bytes(2).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("attachment attachment 3 is not valid base64"),
            "{error}"
        );
        let error = inline("%%", Some("dot.png")).to_bytes(0).unwrap_err();
        assert!(
            error.to_string().starts_with("attachment dot.png is"),
            "{error}"
        );
    }

    #[test]
    fn local_images_are_read_typed_and_private_files_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shot.webp");
        write_private(&path, b"RIFF").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(write_private(&path, b"again").is_err(), "never overwrites");
        let local = Attachment::LocalImage { path: path.clone() };
        assert_eq!(local.media_type(), "image/webp");
        assert_eq!(local.to_bytes(0).unwrap(), b"RIFF");
        assert_eq!(local.to_base64().unwrap(), "UklGRg==");
        assert_eq!(local.inline_base64(), None);
        let missing = Attachment::LocalImage {
            path: dir.path().join("gone.png"),
        };
        assert!(matches!(
            missing.to_base64(),
            Err(AttachmentError::Unreadable { .. })
        ));
        assert_eq!(image_extension(image_media_type(&path)), "webp");
    }
}
