//! Loading a glTF document and its buffers, and reading accessors with every bound checked.
//!
//! The `gltf` crate's own accessor reader trusts the file (it panics, in debug builds, on an
//! accessor with `count: 0`, a stride smaller than an element, or a component type other than the
//! one asked for), so Drape reads accessors itself: every offset, stride and count is checked
//! against the bytes actually present before anything is allocated or indexed.

use std::path::Path;

use gltf::accessor::{sparse::IndexType, DataType, Dimensions};
use gltf::buffer::Source;
use gltf::Accessor;

use crate::io::gltf_import::GltfImportError;
use crate::math::{Mat3, Vec2, Vec3};

/// Largest accessor without a buffer view (all zeros plus sparse values) Drape will allocate.
const MAX_VIEWLESS_BYTES: usize = 1 << 30;

/// A parsed glTF document with the bytes of each of its buffers.
pub(crate) struct GltfFile {
    /// The validated document.
    pub doc: gltf::Document,
    /// Buffer data, indexed like `doc.buffers()`; each at least as long as its declared length.
    pub buffers: Vec<Vec<u8>>,
}

fn malformed(path: &Path, reason: impl Into<String>) -> GltfImportError {
    GltfImportError::Malformed {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Reads and parses a `.gltf` or `.glb` file and loads its buffers (not its images).
pub(crate) fn open(path: &Path) -> Result<GltfFile, GltfImportError> {
    let bytes = std::fs::read(path).map_err(|source| GltfImportError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    check_glb_header(path, &bytes)?;
    // The header checks above cover the panics known in `gltf` 1.4's parser; catching an unwind
    // is the last line of defence against a damaged file taking the process down.
    let parsed = std::panic::catch_unwind(|| gltf::Gltf::from_slice(&bytes))
        .map_err(|_| malformed(path, "the glTF parser failed on this file"))?;
    let gltf::Gltf { document, blob } = parsed.map_err(|e| malformed(path, e.to_string()))?;
    let buffers = load_buffers(path, &document, blob)?;
    Ok(GltfFile {
        doc: document,
        buffers,
    })
}

/// Checks a binary glTF header against the file length (the `gltf` crate subtracts before it
/// checks, and would panic on a declared length under 12).
fn check_glb_header(path: &Path, bytes: &[u8]) -> Result<(), GltfImportError> {
    if !bytes.starts_with(b"glTF") {
        if bytes.is_empty() {
            return Err(malformed(path, "the file is empty"));
        }
        return Ok(());
    }
    let word = |at: usize| -> Option<u32> {
        let b = bytes.get(at..at + 4)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (Some(version), Some(length)) = (word(4), word(8)) else {
        return Err(malformed(
            path,
            format!("truncated: only {} bytes of GLB header", bytes.len()),
        ));
    };
    if version != 2 {
        return Err(malformed(
            path,
            format!("GLB version {version}; only glTF 2.0 is supported"),
        ));
    }
    let length = length as usize;
    if length < 20 {
        return Err(malformed(
            path,
            format!("the GLB header declares {length} bytes, too short for a JSON chunk"),
        ));
    }
    if length > bytes.len() {
        return Err(malformed(
            path,
            format!(
                "truncated: the GLB header declares {length} bytes but the file has {}",
                bytes.len()
            ),
        ));
    }
    Ok(())
}

/// Loads each buffer: the GLB binary chunk, a `data:` URI, or a file next to the glTF file.
fn load_buffers(
    path: &Path,
    doc: &gltf::Document,
    mut blob: Option<Vec<u8>>,
) -> Result<Vec<Vec<u8>>, GltfImportError> {
    let base = path.parent().unwrap_or_else(|| Path::new("."));
    let mut out = Vec::new();
    for buffer in doc.buffers() {
        let i = buffer.index();
        let source = buffer.source();
        if let Source::Uri(uri) = source {
            // `gltf` unwraps the percent-decoding of relative URIs: decode first to reject
            // ones that are not UTF-8.
            if !uri.starts_with("data:") && !percent_decodes_to_utf8(uri) {
                return Err(malformed(
                    path,
                    format!("buffer {i} has an invalid URI '{uri}'"),
                ));
            }
        }
        let what = match source {
            Source::Uri(uri) if !uri.starts_with("data:") => {
                format!("buffer {i} ('{}')", base.join(uri).display())
            }
            Source::Uri(_) => format!("buffer {i} (embedded data URI)"),
            Source::Bin => format!("buffer {i} (GLB binary chunk)"),
        };
        let data = gltf::buffer::Data::from_source_and_blob(source, Some(base), &mut blob)
            .map_err(|e| malformed(path, format!("{what} cannot be loaded: {e}")))?;
        if data.0.len() < buffer.length() {
            return Err(malformed(
                path,
                format!(
                    "truncated: buffer {i} declares {} bytes but has {}",
                    buffer.length(),
                    data.0.len()
                ),
            ));
        }
        out.push(data.0);
    }
    Ok(out)
}

/// Whether percent-decoding `uri` gives valid UTF-8 (invalid `%` escapes are kept literally).
fn percent_decodes_to_utf8(uri: &str) -> bool {
    let b = uri.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).is_ok()
}

/// Number of components of an accessor type (vectors and scalars only).
fn components(d: Dimensions) -> Option<usize> {
    match d {
        Dimensions::Scalar => Some(1),
        Dimensions::Vec2 => Some(2),
        Dimensions::Vec3 => Some(3),
        Dimensions::Vec4 => Some(4),
        Dimensions::Mat2 | Dimensions::Mat3 | Dimensions::Mat4 => None,
    }
}

fn component_size(t: DataType) -> usize {
    match t {
        DataType::I8 | DataType::U8 => 1,
        DataType::I16 | DataType::U16 => 2,
        DataType::U32 | DataType::F32 => 4,
    }
}

/// The bytes of a buffer view, checked against its buffer.
fn view_bytes<'b>(view: &gltf::buffer::View, buffers: &'b [Vec<u8>]) -> Result<&'b [u8], String> {
    let b = view.buffer().index();
    let data = buffers
        .get(b)
        .ok_or_else(|| format!("bufferView {} refers to missing buffer {b}", view.index()))?;
    let start = view.offset();
    let end = start.checked_add(view.length());
    end.and_then(|end| data.get(start..end)).ok_or_else(|| {
        format!(
            "bufferView {} (offset {start}, {} bytes) lies outside buffer {b} ({} bytes)",
            view.index(),
            view.length(),
            data.len()
        )
    })
}

/// Appends `count` elements of `elem` bytes, `stride` apart from `offset`, to `out`.
fn copy_strided(
    src: &[u8],
    offset: usize,
    stride: usize,
    elem: usize,
    count: usize,
    out: &mut Vec<u8>,
) -> Option<()> {
    if count == 0 {
        return Some(());
    }
    let end = (count - 1)
        .checked_mul(stride)?
        .checked_add(elem)?
        .checked_add(offset)?;
    if end > src.len() {
        return None;
    }
    out.reserve(count.checked_mul(elem)?);
    for i in 0..count {
        let s = offset + i * stride;
        out.extend_from_slice(src.get(s..s + elem)?);
    }
    Some(())
}

/// An accessor's elements, tightly packed, with sparse substitution applied.
struct Packed {
    bytes: Vec<u8>,
    data_type: DataType,
    components: usize,
    normalized: bool,
}

fn packed(acc: &Accessor, buffers: &[Vec<u8>]) -> Result<Packed, String> {
    let i = acc.index();
    let data_type = acc.data_type();
    let components = components(acc.dimensions())
        .ok_or_else(|| format!("accessor {i} is a matrix where a vector was expected"))?;
    let elem = component_size(data_type) * components;
    let count = acc.count();
    let mut bytes = Vec::new();
    match acc.view() {
        Some(view) => {
            let src = view_bytes(&view, buffers)?;
            let stride = view.stride().unwrap_or(elem);
            if stride < elem {
                return Err(format!(
                    "accessor {i}: bufferView {} has stride {stride}, smaller than an element ({elem} bytes)",
                    view.index()
                ));
            }
            copy_strided(src, acc.offset(), stride, elem, count, &mut bytes).ok_or_else(|| {
                format!(
                    "accessor {i}: {count} elements from offset {} with stride {stride} run past \
                     the end of bufferView {} ({} bytes)",
                    acc.offset(),
                    view.index(),
                    src.len()
                )
            })?;
        }
        None => {
            let n = count
                .checked_mul(elem)
                .filter(|&n| n <= MAX_VIEWLESS_BYTES)
                .ok_or_else(|| {
                    format!("accessor {i} without a bufferView is too large ({count} elements)")
                })?;
            bytes = vec![0; n];
        }
    }
    if let Some(sparse) = acc.sparse() {
        let n = sparse.count();
        let indices = sparse.indices();
        let index_size = match indices.index_type() {
            IndexType::U8 => 1,
            IndexType::U16 => 2,
            IndexType::U32 => 4,
        };
        let mut idx = Vec::new();
        let src = view_bytes(&indices.view(), buffers)?;
        copy_strided(src, indices.offset(), index_size, index_size, n, &mut idx)
            .ok_or_else(|| format!("accessor {i}: sparse indices run past their bufferView"))?;
        let values = sparse.values();
        let mut vals = Vec::new();
        let src = view_bytes(&values.view(), buffers)?;
        copy_strided(src, values.offset(), elem, elem, n, &mut vals)
            .ok_or_else(|| format!("accessor {i}: sparse values run past their bufferView"))?;
        for (k, val) in vals.chunks_exact(elem).enumerate() {
            let at = k * index_size;
            let target = match index_size {
                1 => idx.get(at).map(|&b| b as usize),
                2 => idx
                    .get(at..at + 2)
                    .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize),
                _ => idx
                    .get(at..at + 4)
                    .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize),
            }
            .ok_or_else(|| format!("accessor {i}: sparse index {k} is missing"))?;
            let dst = target
                .checked_mul(elem)
                .and_then(|s| bytes.get_mut(s..s + elem))
                .ok_or_else(|| {
                    format!("accessor {i}: sparse index {target} is not below the count {count}")
                })?;
            dst.copy_from_slice(val);
        }
    }
    Ok(Packed {
        bytes,
        data_type,
        components,
        normalized: acc.normalized(),
    })
}

/// Reads an accessor of any component type as `f32`, applying normalisation where declared.
///
/// Returns the values and the number of components per element.
pub(crate) fn read_f32(acc: &Accessor, buffers: &[Vec<u8>]) -> Result<(Vec<f32>, usize), String> {
    let p = packed(acc, buffers)?;
    let n = p.normalized;
    let values: Vec<f32> = match p.data_type {
        DataType::F32 => p
            .bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
        DataType::U8 => p
            .bytes
            .iter()
            .map(|&v| if n { v as f32 / 255.0 } else { v as f32 })
            .collect(),
        DataType::I8 => p
            .bytes
            .iter()
            .map(|&v| {
                let v = v as i8 as f32;
                if n {
                    (v / 127.0).max(-1.0)
                } else {
                    v
                }
            })
            .collect(),
        DataType::U16 => p
            .bytes
            .chunks_exact(2)
            .map(|b| {
                let v = u16::from_le_bytes([b[0], b[1]]) as f32;
                if n {
                    v / 65535.0
                } else {
                    v
                }
            })
            .collect(),
        DataType::I16 => p
            .bytes
            .chunks_exact(2)
            .map(|b| {
                let v = i16::from_le_bytes([b[0], b[1]]) as f32;
                if n {
                    (v / 32767.0).max(-1.0)
                } else {
                    v
                }
            })
            .collect(),
        DataType::U32 => p
            .bytes
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f32)
            .collect(),
    };
    Ok((values, p.components))
}

/// Reads a float accessor of exactly `components` components per element.
fn read_float_vectors(
    acc: &Accessor,
    buffers: &[Vec<u8>],
    components: usize,
    what: &str,
    allow_normalized: bool,
) -> Result<Vec<f32>, String> {
    let i = acc.index();
    let ok_type = acc.data_type() == DataType::F32
        || (allow_normalized
            && acc.normalized()
            && matches!(acc.data_type(), DataType::U8 | DataType::U16));
    if !ok_type {
        return Err(format!(
            "accessor {i} ({what}) has component type {:?}, which Drape does not read",
            acc.data_type()
        ));
    }
    let (v, c) = read_f32(acc, buffers)?;
    if c != components {
        return Err(format!(
            "accessor {i} ({what}) has {c} components per element, expected {components}"
        ));
    }
    Ok(v)
}

/// Reads a `VEC3` float accessor (positions, normals).
pub(crate) fn read_vec3(
    acc: &Accessor,
    buffers: &[Vec<u8>],
    what: &str,
) -> Result<Vec<Vec3>, String> {
    let v = read_float_vectors(acc, buffers, 3, what, false)?;
    Ok(v.chunks_exact(3)
        .map(|c| Vec3::new(c[0], c[1], c[2]))
        .collect())
}

/// Reads a `VEC2` texture-coordinate accessor (float, or normalised unsigned bytes or shorts).
pub(crate) fn read_vec2(
    acc: &Accessor,
    buffers: &[Vec<u8>],
    what: &str,
) -> Result<Vec<Vec2>, String> {
    let v = read_float_vectors(acc, buffers, 2, what, true)?;
    Ok(v.chunks_exact(2).map(|c| Vec2::new(c[0], c[1])).collect())
}

/// Reads a `SCALAR` index accessor of unsigned bytes, shorts or ints.
pub(crate) fn read_indices(acc: &Accessor, buffers: &[Vec<u8>]) -> Result<Vec<u32>, String> {
    let i = acc.index();
    if acc.dimensions() != Dimensions::Scalar {
        return Err(format!("index accessor {i} is not SCALAR"));
    }
    let p = packed(acc, buffers)?;
    match p.data_type {
        DataType::U8 => Ok(p.bytes.iter().map(|&v| v as u32).collect()),
        DataType::U16 => Ok(p
            .bytes
            .chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]) as u32)
            .collect()),
        DataType::U32 => Ok(p
            .bytes
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()),
        t => Err(format!(
            "index accessor {i} has component type {t:?}; indices must be unsigned integers"
        )),
    }
}

/// An affine transform: `x ↦ linear · x + translation` (a glTF node matrix without its
/// projective row, which glTF requires to be `0 0 0 1`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Affine {
    /// The 3×3 part: rotation, scale and shear.
    pub linear: Mat3,
    /// The translation (m).
    pub translation: Vec3,
}

impl Affine {
    /// The identity transform.
    pub const IDENTITY: Self = Self {
        linear: Mat3::IDENTITY,
        translation: Vec3::ZERO,
    };

    /// From a glTF column-major 4×4 matrix.
    pub fn from_cols(m: [[f32; 4]; 4]) -> Self {
        let col = |c: [f32; 4]| Vec3::new(c[0], c[1], c[2]);
        Self {
            linear: Mat3::from_cols(col(m[0]), col(m[1]), col(m[2])),
            translation: col(m[3]),
        }
    }

    /// `self ∘ child`: applies `child` first, then `self`.
    pub fn then_child(&self, child: &Affine) -> Self {
        Self {
            linear: self.linear * child.linear,
            translation: self.linear * child.translation + self.translation,
        }
    }

    /// Transforms a point.
    pub fn point(&self, p: Vec3) -> Vec3 {
        self.linear * p + self.translation
    }
}
