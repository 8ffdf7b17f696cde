//! Files on disk, below every format: atomic writes, paths relative to a scene, and the glTF
//! container (opening a document and its buffers, reading accessors with every bound checked).
//!
//! - [`atomic`] writes a file through a temporary file and a rename, so a crash or a full disk
//!   never leaves a half-written output in place of a good one.
//! - [`gltf`] is what every glTF reader shares (garments in [`crate::io`], bodies in
//!   [`crate::body`]), with [`GltfImportError`], the error all of them report.
//!
//! May import: [`crate::math`], [`crate::mesh`].

pub mod atomic;
pub(crate) mod gltf;

use std::path::{Path, PathBuf};

pub use atomic::{write_atomic, write_atomic_with};
pub use gltf::GltfImportError;

/// A path written relative to a file (a scene's `.glb` or sidecar) resolved against that file's
/// folder; an absolute `relative` is returned as it is.
pub fn resolve(base_file: &Path, relative: &Path) -> PathBuf {
    base_file
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(relative)
}
