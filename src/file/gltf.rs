//! Loading a glTF document and its buffers, and reading accessors with every bound checked.
//!
//! The `gltf` crate's own accessor reader trusts the file (it panics, in debug builds, on an
//! accessor with `count: 0`, a stride smaller than an element, or a component type other than the
//! one asked for), so Drape reads accessors itself: every offset, stride and count is checked
//! against the bytes actually present before anything is allocated or indexed.
//!
//! Files come from anywhere, so the loader also bounds what a file can make it do:
//!
//! - External buffers are read only from the glTF file's own folder (or below it): a URI with a
//!   `..` segment, an absolute path, a drive letter, a `file:` or any other scheme, or a path
//!   that a symbolic link leads outside that folder is refused. Only regular files are read, and
//!   no more of them than the buffer's declared `byteLength`.
//! - `data:` URIs are checked before they are decoded: the base64 text may not decode to more
//!   than the buffer's declared `byteLength` (plus [`DATA_URI_SLACK`]) nor to more than
//!   [`MAX_DATA_URI_BYTES`].
//! - A GLB file's chunks are walked and checked against the file's length before parsing.
//! - An accessor without a bufferView (zeros plus sparse values) may not describe more bytes
//!   than [`VIEWLESS_FACTOR`] times the file's buffers plus [`VIEWLESS_SLACK`], nor more than
//!   [`MAX_VIEWLESS_BYTES`], so a small file cannot ask for a large allocation.
//!
//! Every message names the buffer, bufferView or accessor at fault and says what to do.

use std::io::Read as _;
use std::path::{Component, Path};

use gltf::accessor::{sparse::IndexType, DataType, Dimensions};
use gltf::buffer::Source;
use gltf::Accessor;

use crate::math::{Mat3, Vec2, Vec3};
use crate::mesh::MeshError;
use std::path::PathBuf;

/// Problems reading meshes from a glTF file; every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum GltfImportError {
    /// The file could not be read (missing, no permission).
    #[error("{}: cannot read the file: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid glTF 2.0: truncated, not glTF at all, or inconsistent.
    ///
    /// How to fix: re-export the file from the modelling tool; check it with the Khronos
    /// glTF-Validator.
    #[error("{}: not a valid glTF 2.0 file: {reason}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong (the glTF parser's message, or the failed check).
        reason: String,
    },
    /// The file has no triangle mesh in its scene.
    #[error("{}: the file contains no triangle mesh (in its default scene)", path.display())]
    NoMeshes {
        /// The file.
        path: PathBuf,
    },
    /// No mesh has the requested name.
    #[error("{}: no mesh named '{name}'; the file has: {}", path.display(), name_list(available))]
    MeshNotFound {
        /// The file.
        path: PathBuf,
        /// The requested name.
        name: String,
        /// The names of the meshes in the file.
        available: Vec<String>,
    },
    /// No name was given, and the file has more than one mesh.
    #[error("{}: the file has several meshes ({}); name the one to use", path.display(), name_list(available))]
    SeveralMeshes {
        /// The file.
        path: PathBuf,
        /// The names of the meshes in the file.
        available: Vec<String>,
    },
    /// The mesh was read but is unusable (bad index, non-finite position, no triangles).
    ///
    /// How to fix: the message says, for each kind of problem.
    #[error("{}: {source} ({location}); {}", path.display(), mesh_fix(source))]
    InvalidMesh {
        /// The file.
        path: PathBuf,
        /// What is wrong with the mesh.
        #[source]
        source: MeshError,
        /// Where in the file: the primitive and accessor, e.g.
        /// `primitive 0, indices (accessor 2) entry 5`.
        location: String,
    },
    /// The requested mesh has no triangle primitives (only points or lines).
    #[error("{}: mesh '{mesh}' has only {mode} primitives; Drape needs triangles (triangulate it in the modelling tool)", path.display())]
    UnsupportedMode {
        /// The file.
        path: PathBuf,
        /// The mesh name.
        mesh: String,
        /// The glTF primitive mode, e.g. `LINES`.
        mode: String,
    },
}

/// What to do about an unusable mesh.
fn mesh_fix(e: &MeshError) -> &'static str {
    match e {
        MeshError::Empty(_) => "export the mesh's faces (Drape needs triangles)",
        MeshError::IndexOutOfRange { .. } | MeshError::AttributeLength { .. } => {
            "the file is damaged: export it again from the modelling tool"
        }
        MeshError::NonFinite { .. } => {
            "fix or delete that vertex in the modelling tool and export the file again"
        }
        MeshError::AllDegenerate(_) => "check the export scale and remove collapsed faces",
        MeshError::TooFar { .. } => "export in metres (set the unit scale), or fix that vertex",
    }
}

/// Formats mesh names as `'a', 'b'` (or `(none)`).
pub(crate) fn name_list(names: &[String]) -> String {
    if names.is_empty() {
        return "(none)".into();
    }
    names
        .iter()
        .map(|n| format!("'{n}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Largest accessor without a buffer view (all zeros plus sparse values) Drape will allocate.
const MAX_VIEWLESS_BYTES: usize = 1 << 30;

/// An accessor without a buffer view may describe at most this many times the bytes of all
/// the file's buffers (plus [`VIEWLESS_SLACK`]): sparse morph targets, the usual reason for one,
/// describe no more vertices than the mesh's own attributes hold.
const VIEWLESS_FACTOR: usize = 16;

/// Bytes an accessor without a buffer view may describe beyond [`VIEWLESS_FACTOR`] times the
/// buffers (1 MiB).
const VIEWLESS_SLACK: usize = 1 << 20;

/// Bytes a `data:` URI may decode to beyond its buffer's declared `byteLength` (padding).
const DATA_URI_SLACK: usize = 64;

/// Largest buffer Drape decodes from a `data:` URI (256 MiB); larger data belongs in a `.glb`.
const MAX_DATA_URI_BYTES: usize = 256 << 20;

/// What to do about a damaged file, appended to the messages that have no more specific advice.
pub(crate) const REEXPORT: &str =
    "export the file again from the modelling tool, or check it with the Khronos glTF-Validator";

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
    let json = check_glb_header(path, &bytes)?;
    check_position_accessors(path, json.unwrap_or(&bytes))?;
    // The header checks above cover the panics known in `gltf` 1.4's parser; catching an unwind
    // is the last line of defence against a damaged file taking the process down.
    let parsed = std::panic::catch_unwind(|| gltf::Gltf::from_slice(&bytes)).map_err(|_| {
        malformed(
            path,
            format!("the glTF parser failed on this file; {REEXPORT}"),
        )
    })?;
    let gltf::Gltf { document, blob } = parsed.map_err(|e| {
        let reason = match &e {
            gltf::Error::Deserialize(_) => diagnose_json(json.unwrap_or(&bytes)),
            _ => None,
        };
        let reason = reason.unwrap_or_else(|| {
            // The parser's validation messages end with ';'.
            let e = e.to_string();
            format!("{}; {REEXPORT}", e.trim_end_matches([';', ' ']))
        });
        malformed(path, reason)
    })?;
    check_sizes_fit(path, &document)?;
    let buffers = load_buffers(path, &document, blob)?;
    Ok(GltfFile {
        doc: document,
        buffers,
    })
}

/// Names the accessor, bufferView or buffer whose count, offset, length or stride is not a
/// whole number (negative, fractional, or too large), when the parser refused the JSON for
/// that; `None` when the JSON has no such field (the parser's own message is used then).
/// Checks that every primitive's `POSITION` names an existing accessor: `gltf-json` 1.4's
/// validation indexes the accessors with it unchecked and panics (found by the `gltf_import`
/// fuzz target). Unparsable JSON is left to the parser, which reports it.
fn check_position_accessors(path: &Path, json: &[u8]) -> Result<(), GltfImportError> {
    let Ok(root) = serde_json::from_slice::<serde_json::Value>(json) else {
        return Ok(());
    };
    let array = |v: Option<&serde_json::Value>| v.and_then(|a| a.as_array()).cloned();
    let accessors = array(root.get("accessors")).map_or(0, |a| a.len());
    for (m, mesh) in array(root.get("meshes"))
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        for (p, primitive) in array(mesh.get("primitives"))
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let position = primitive.get("attributes").and_then(|a| a.get("POSITION"));
            if let Some(index) = position.and_then(|i| i.as_u64()) {
                if index >= accessors as u64 {
                    return Err(malformed(
                        path,
                        format!(
                            "mesh {m}, primitive {p}: POSITION names accessor {index}, but the \
                             file has {accessors} accessors; {REEXPORT}"
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

fn diagnose_json(json: &[u8]) -> Option<String> {
    let root: serde_json::Value = serde_json::from_slice(json).ok()?;
    let fields: [(&str, &str, &[&str]); 3] = [
        ("accessors", "accessor", &["count", "byteOffset"]),
        (
            "bufferViews",
            "bufferView",
            &["byteLength", "byteOffset", "byteStride"],
        ),
        ("buffers", "buffer", &["byteLength"]),
    ];
    for (array, object, names) in fields {
        let Some(items) = root.get(array).and_then(|a| a.as_array()) else {
            continue;
        };
        for (i, item) in items.iter().enumerate() {
            let sparse = item.get("sparse");
            let sparse_fields = [
                ("sparse.count", sparse.and_then(|s| s.get("count"))),
                (
                    "sparse.indices.byteOffset",
                    sparse.and_then(|s| s.get("indices")?.get("byteOffset")),
                ),
                (
                    "sparse.values.byteOffset",
                    sparse.and_then(|s| s.get("values")?.get("byteOffset")),
                ),
            ];
            let own = names.iter().map(|&n| (n, item.get(n)));
            for (name, value) in own.chain(sparse_fields) {
                if let Some(v) = value.filter(|v| v.as_u64().is_none()) {
                    return Some(format!(
                        "{object} {i}: {name} is {v}, which is not a whole number of bytes or \
                         elements (0 or more, below 2^64); {REEXPORT}"
                    ));
                }
            }
        }
    }
    None
}

/// Checks that every count, offset and length of the document fits in `usize` (on a 32-bit
/// machine a count of 2^32 or more would otherwise wrap around when the `gltf` crate reads it).
fn check_sizes_fit(path: &Path, doc: &gltf::Document) -> Result<(), GltfImportError> {
    let json = doc.as_json();
    let too_big = |object: &str, i: usize, field: &str, v: u64| {
        malformed(
            path,
            format!("{object} {i}: {field} is {v}, more than this machine can address; {REEXPORT}"),
        )
    };
    let fits = |v: u64| usize::try_from(v).is_ok();
    for (i, a) in json.accessors.iter().enumerate() {
        let mut values = vec![("count", a.count.0)];
        values.extend(a.byte_offset.map(|o| ("byteOffset", o.0)));
        if let Some(s) = &a.sparse {
            values.push(("sparse.count", s.count.0));
            values.push(("sparse.indices.byteOffset", s.indices.byte_offset.0));
            values.push(("sparse.values.byteOffset", s.values.byte_offset.0));
        }
        if let Some((field, v)) = values.into_iter().find(|&(_, v)| !fits(v)) {
            return Err(too_big("accessor", i, field, v));
        }
    }
    for (i, v) in json.buffer_views.iter().enumerate() {
        let values = [("byteLength", v.byte_length.0)]
            .into_iter()
            .chain(v.byte_offset.map(|o| ("byteOffset", o.0)));
        if let Some((field, v)) = values.into_iter().find(|&(_, v)| !fits(v)) {
            return Err(too_big("bufferView", i, field, v));
        }
    }
    for (i, b) in json.buffers.iter().enumerate() {
        if !fits(b.byte_length.0) {
            return Err(too_big("buffer", i, "byteLength", b.byte_length.0));
        }
    }
    // The parser validates the channels' samplers but not their targets, and the `gltf` crate
    // unwraps both when a channel is read.
    for (a, anim) in json.animations.iter().enumerate() {
        for (c, channel) in anim.channels.iter().enumerate() {
            let target = &channel.target;
            if target.node.value() >= json.nodes.len() {
                return Err(malformed(
                    path,
                    format!(
                        "animation {a}, channel {c}: target node {} does not exist (the file has \
                         {} nodes); {REEXPORT}",
                        target.node.value(),
                        json.nodes.len()
                    ),
                ));
            }
            if !matches!(target.path, gltf::json::validation::Checked::Valid(_)) {
                return Err(malformed(
                    path,
                    format!(
                        "animation {a}, channel {c}: the target path is not translation, \
                         rotation, scale or weights; {REEXPORT}"
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// Checks a binary glTF header and its chunks against the file length (the `gltf` crate
/// subtracts before it checks, and would panic on a declared length under 12), and returns the
/// JSON chunk; `None` for a `.gltf` (JSON) file.
fn check_glb_header<'b>(path: &Path, bytes: &'b [u8]) -> Result<Option<&'b [u8]>, GltfImportError> {
    if !bytes.starts_with(b"glTF") {
        if bytes.is_empty() {
            return Err(malformed(path, format!("the file is empty; {REEXPORT}")));
        }
        return Ok(None);
    }
    let cut = "the file was cut short: download or export it again";
    let word = |bytes: &[u8], at: usize| -> Option<u32> {
        let b = bytes.get(at..at.checked_add(4)?)?;
        Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let (Some(version), Some(length)) = (word(bytes, 4), word(bytes, 8)) else {
        return Err(malformed(
            path,
            format!("truncated: only {} bytes of GLB header; {cut}", bytes.len()),
        ));
    };
    if version != 2 {
        return Err(malformed(
            path,
            format!(
                "GLB version {version}; only glTF 2.0 is supported (convert the file to glTF 2.0)"
            ),
        ));
    }
    let length = length as usize;
    if length < 20 {
        return Err(malformed(
            path,
            format!(
                "the GLB header declares {length} bytes, too short for a JSON chunk; {REEXPORT}"
            ),
        ));
    }
    if length > bytes.len() {
        return Err(malformed(
            path,
            format!(
                "truncated: the GLB header declares {length} bytes but the file has {}; {cut}",
                bytes.len()
            ),
        ));
    }
    // Walk the chunks: each is a length, a type and that many bytes, within the declared length.
    let glb = &bytes[..length];
    let mut at = 12;
    let mut json = None;
    let mut k = 0;
    while at < length {
        let (Some(chunk_len), Some(ty)) = (word(glb, at), word(glb, at + 4)) else {
            return Err(malformed(
                path,
                format!(
                    "truncated: GLB chunk {k} has only {} bytes of its 8-byte header; {cut}",
                    length - at
                ),
            ));
        };
        let name = match &ty.to_le_bytes() {
            b"JSON" => "JSON".to_string(),
            b"BIN\0" => "BIN".to_string(),
            _ => format!("type 0x{ty:08x}"),
        };
        let start = at + 8;
        let left = length.saturating_sub(start);
        let chunk_len = chunk_len as usize;
        if chunk_len > left {
            return Err(malformed(
                path,
                format!(
                    "truncated: GLB chunk {k} ({name}) declares {chunk_len} bytes but only {left} \
                     follow its header; {cut}"
                ),
            ));
        }
        if k == 0 {
            json = glb.get(start..start + chunk_len);
        }
        at = start + chunk_len;
        k += 1;
    }
    Ok(json)
}

/// Loads each buffer: the GLB binary chunk, a `data:` URI, or a file next to the glTF file.
///
/// Every buffer must hold at least its declared `byteLength`; an external file is checked
/// against that length (from its metadata) before it is read.
fn load_buffers(
    path: &Path,
    doc: &gltf::Document,
    mut blob: Option<Vec<u8>>,
) -> Result<Vec<Vec<u8>>, GltfImportError> {
    let base = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut out = Vec::new();
    for buffer in doc.buffers() {
        let i = buffer.index();
        let declared = buffer.length();
        let data = match buffer.source() {
            Source::Bin => blob.take().ok_or_else(|| {
                malformed(
                    path,
                    format!("buffer {i} refers to the GLB binary chunk, but the file has none; {REEXPORT}"),
                )
            })?,
            Source::Uri(uri) => match data_uri_rest(uri) {
                Some(rest) => decode_data_uri(rest, declared).map_err(|e| {
                    malformed(
                        path,
                        format!("buffer {i} (embedded data URI) cannot be loaded: {e}"),
                    )
                })?,
                None => read_external(path, base, i, uri, declared)?,
            },
        };
        if data.len() < declared {
            return Err(malformed(
                path,
                format!(
                    "truncated: buffer {i} declares {declared} bytes but has {}; {REEXPORT}",
                    data.len()
                ),
            ));
        }
        out.push(data);
    }
    Ok(out)
}

/// The part of a `data:` URI after `data:` (the scheme is matched without regard to case), or
/// `None` for any other URI.
fn data_uri_rest(uri: &str) -> Option<&str> {
    let scheme = uri.get(..5)?;
    scheme
        .eq_ignore_ascii_case("data:")
        .then(|| uri.get(5..))
        .flatten()
}

/// Decodes the part of a `data:` URI after `data:`: `[<media type>][;<parameter>]*;base64,<data>`.
///
/// The base64 text is measured before it is decoded: it may decode to at most `declared`
/// (the buffer's `byteLength`) plus [`DATA_URI_SLACK`] bytes, and to at most
/// [`MAX_DATA_URI_BYTES`].
fn decode_data_uri(rest: &str, declared: usize) -> Result<Vec<u8>, String> {
    use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
    use base64::engine::DecodePaddingMode;
    use base64::Engine as _;
    const BASE64: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    let (header, payload) = rest.split_once(',').ok_or(format!(
        "the data URI has no ',' before its data; {REEXPORT}"
    ))?;
    let is_base64 = header
        .rsplit(';')
        .next()
        .is_some_and(|p| p.eq_ignore_ascii_case("base64"))
        && header.contains(';');
    if !is_base64 {
        return Err(format!(
            "the data URI ('data:{header},…') is not base64-encoded; only base64 data URIs are \
             supported (save the file as .glb, or with its buffers embedded as base64)"
        ));
    }
    if declared > MAX_DATA_URI_BYTES {
        return Err(format!(
            "it declares byteLength {declared}, more than the {} MiB Drape decodes from a data \
             URI; save the file as .glb (binary glTF) instead",
            MAX_DATA_URI_BYTES >> 20
        ));
    }
    // Four base64 characters carry three bytes.
    let decoded_at_most = payload.len() / 4 * 3 + (payload.len() % 4).saturating_sub(1);
    let allowed = declared.saturating_add(DATA_URI_SLACK);
    if decoded_at_most.saturating_sub(2) > allowed {
        return Err(format!(
            "its data URI holds {} characters of base64 (about {decoded_at_most} bytes), but \
             byteLength declares {declared} bytes; the file is inconsistent: {REEXPORT}",
            payload.len()
        ));
    }
    BASE64
        .decode(payload)
        .map_err(|e| format!("invalid base64: {e}; {REEXPORT}"))
}

/// Reads an external buffer: `uri` is a relative reference, resolved against `base` (the folder
/// of the glTF file at `path`) after percent-decoding. It must name a regular file inside that
/// folder, symbolic links resolved; at most `declared` bytes of it are read.
fn read_external(
    path: &Path,
    base: &Path,
    i: usize,
    uri: &str,
    declared: usize,
) -> Result<Vec<u8>, GltfImportError> {
    let refuse = |why: &str| malformed(path, format!("buffer {i} has URI '{uri}': {why}"));
    let keep_inside = "buffer files must lie in the glTF file's folder or below it (move the \
                       file there and give its path relative to the glTF file)";
    if uri.is_empty() {
        return Err(refuse(&format!("an empty URI names no file; {REEXPORT}")));
    }
    if let Some(scheme) = uri_scheme(uri) {
        return Err(refuse(&format!(
            "the '{scheme}:' scheme is not supported; only data: URIs and relative file paths \
             are ({keep_inside})"
        )));
    }
    let decoded = percent_decode(uri).ok_or_else(|| {
        refuse(&format!(
            "it does not percent-decode to valid UTF-8; {REEXPORT}"
        ))
    })?;
    let relative = Path::new(&decoded);
    // Both separators count, so `..\x.bin` and `\\server\share` are caught on every platform.
    if relative.has_root()
        || relative.is_absolute()
        || decoded.starts_with(['/', '\\'])
        || relative
            .components()
            .any(|c| matches!(c, Component::Prefix(_)))
    {
        return Err(refuse(&format!(
            "absolute paths are not supported; {keep_inside}"
        )));
    }
    if decoded.split(['/', '\\']).any(|segment| segment == "..") {
        return Err(refuse(&format!(
            "a '..' segment leads outside the glTF file's folder; {keep_inside}"
        )));
    }
    let file = base.join(relative);
    let cannot = |e: &dyn std::fmt::Display| {
        malformed(
            path,
            format!(
                "buffer {i} ('{}') cannot be loaded: {e} (the file must sit next to the glTF \
                 file, as the URI says)",
                file.display()
            ),
        )
    };
    // A symbolic link may still lead outside the folder: compare the resolved paths.
    let real_base = std::fs::canonicalize(base).map_err(|e| cannot(&e))?;
    let real_file = std::fs::canonicalize(&file).map_err(|e| cannot(&e))?;
    if !real_file.starts_with(&real_base) {
        return Err(refuse(&format!(
            "it resolves (through a symbolic link) to '{}', outside the glTF file's folder; \
             {keep_inside}",
            real_file.display()
        )));
    }
    let meta = std::fs::metadata(&real_file).map_err(|e| cannot(&e))?;
    if !meta.is_file() {
        return Err(refuse(&format!(
            "'{}' is not a regular file; {keep_inside}",
            file.display()
        )));
    }
    let size = meta.len();
    if !usize::try_from(size).is_ok_and(|size| size >= declared) {
        return Err(malformed(
            path,
            format!(
                "truncated: buffer {i} ('{}') declares {declared} bytes but the file has {size}; \
                 {REEXPORT}",
                file.display()
            ),
        ));
    }
    let mut data = Vec::with_capacity(declared);
    std::fs::File::open(&real_file)
        .and_then(|f| f.take(declared as u64).read_to_end(&mut data))
        .map_err(|e| cannot(&e))?;
    Ok(data)
}

/// The scheme of an absolute URI (`http` in `http://…`), or `None` for a relative reference.
///
/// A scheme is a letter followed by letters, digits, `+`, `-` or `.`, then `:` (RFC 3986 §3.1);
/// a drive letter (`C:\…`) counts as one, so it is refused too.
fn uri_scheme(uri: &str) -> Option<&str> {
    let (scheme, _) = uri.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
    .then_some(scheme)
}

/// Percent-decodes `uri` (invalid `%` escapes are kept literally); `None` when the result is not
/// valid UTF-8.
fn percent_decode(uri: &str) -> Option<String> {
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
    String::from_utf8(out).ok()
}

/// Number of components of an accessor type (vectors, scalars and `MAT4`).
///
/// `MAT4` is read like a 16-component vector: its columns (4, 8 or 16 bytes) never need the
/// column padding that `MAT2` and `MAT3` of bytes or shorts have, so those two are refused.
fn components(d: Dimensions) -> Option<usize> {
    match d {
        Dimensions::Scalar => Some(1),
        Dimensions::Vec2 => Some(2),
        Dimensions::Vec3 => Some(3),
        Dimensions::Vec4 => Some(4),
        Dimensions::Mat4 => Some(16),
        Dimensions::Mat2 | Dimensions::Mat3 => None,
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
    let data = buffers.get(b).ok_or_else(|| {
        format!(
            "bufferView {} refers to missing buffer {b}; {REEXPORT}",
            view.index()
        )
    })?;
    let start = view.offset();
    let end = start.checked_add(view.length());
    end.and_then(|end| data.get(start..end)).ok_or_else(|| {
        format!(
            "bufferView {} (offset {start}, {} bytes) lies outside buffer {b} ({} bytes); \
             {REEXPORT}",
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
                    "accessor {i}: bufferView {} has stride {stride}, smaller than an element \
                     ({elem} bytes); {REEXPORT}",
                    view.index()
                ));
            }
            copy_strided(src, acc.offset(), stride, elem, count, &mut bytes).ok_or_else(|| {
                format!(
                    "accessor {i}: {count} elements of {elem} bytes from offset {} with stride \
                     {stride} run past the end of bufferView {} ({} bytes); {REEXPORT}",
                    acc.offset(),
                    view.index(),
                    src.len()
                )
            })?;
        }
        None => {
            // Zeros (plus sparse values): bounded by the data the file actually holds.
            let held: usize = buffers.iter().map(Vec::len).sum();
            let limit = held
                .saturating_mul(VIEWLESS_FACTOR)
                .saturating_add(VIEWLESS_SLACK)
                .min(MAX_VIEWLESS_BYTES);
            let n = count
                .checked_mul(elem)
                .filter(|&n| n <= limit)
                .ok_or_else(|| {
                    format!(
                        "accessor {i} has no bufferView and a count of {count} elements of \
                         {elem} bytes, more than the file's {held} bytes of buffers can \
                         plausibly describe (at most {limit} bytes); {REEXPORT}"
                    )
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
        copy_strided(src, indices.offset(), index_size, index_size, n, &mut idx).ok_or_else(
            || format!("accessor {i}: {n} sparse indices run past their bufferView; {REEXPORT}"),
        )?;
        let values = sparse.values();
        let mut vals = Vec::new();
        let src = view_bytes(&values.view(), buffers)?;
        copy_strided(src, values.offset(), elem, elem, n, &mut vals).ok_or_else(|| {
            format!("accessor {i}: {n} sparse values run past their bufferView; {REEXPORT}")
        })?;
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
                .and_then(|s| bytes.get_mut(s..s.checked_add(elem)?))
                .ok_or_else(|| {
                    format!(
                        "accessor {i}: sparse index {target} is not below the count {count}; \
                         {REEXPORT}"
                    )
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

/// Checks, before an accessor is read, that it has `expected` elements (an attribute must have
/// one per vertex, like POSITION): a wrong count is refused without allocating for it.
pub(crate) fn check_count(acc: &Accessor, expected: usize, what: &str) -> Result<(), String> {
    let count = acc.count();
    if count == expected {
        return Ok(());
    }
    Err(format!(
        "accessor {} ({what}) has {count} elements but {expected} are needed (one per vertex); \
         {REEXPORT}",
        acc.index()
    ))
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

/// Reads a float accessor, or a normalised 8- or 16-bit integer one, of exactly `components`
/// components per element (rotations, morph weights and skin weights may be stored either way).
pub(crate) fn read_float_or_normalized(
    acc: &Accessor,
    buffers: &[Vec<u8>],
    components: usize,
    what: &str,
) -> Result<Vec<f32>, String> {
    let i = acc.index();
    let ok_type = acc.data_type() == DataType::F32
        || (acc.normalized()
            && matches!(
                acc.data_type(),
                DataType::U8 | DataType::I8 | DataType::U16 | DataType::I16
            ));
    if !ok_type {
        return Err(format!(
            "accessor {i} ({what}) has component type {:?}{}; expected float or a normalised \
             8- or 16-bit integer",
            acc.data_type(),
            if acc.normalized() {
                " (normalised)"
            } else {
                ""
            }
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

/// Reads a `MAT4` float accessor (inverse bind matrices), each matrix column-major.
pub(crate) fn read_mat4(
    acc: &Accessor,
    buffers: &[Vec<u8>],
    what: &str,
) -> Result<Vec<[f32; 16]>, String> {
    let i = acc.index();
    if acc.dimensions() != Dimensions::Mat4 {
        return Err(format!(
            "accessor {i} ({what}) has type {:?}, expected MAT4",
            acc.dimensions()
        ));
    }
    let v = read_float_vectors(acc, buffers, 16, what, false)?;
    Ok(v.chunks_exact(16)
        .map(|c| std::array::from_fn(|k| c[k]))
        .collect())
}

/// Reads a `VEC4` accessor of unsigned bytes or shorts (`JOINTS_n`).
pub(crate) fn read_joints(
    acc: &Accessor,
    buffers: &[Vec<u8>],
    what: &str,
) -> Result<Vec<[u16; 4]>, String> {
    let i = acc.index();
    if acc.dimensions() != Dimensions::Vec4 {
        return Err(format!(
            "accessor {i} ({what}) has type {:?}, expected VEC4",
            acc.dimensions()
        ));
    }
    let p = packed(acc, buffers)?;
    match p.data_type {
        DataType::U8 => Ok(p
            .bytes
            .chunks_exact(4)
            .map(|b| [b[0], b[1], b[2], b[3]].map(u16::from))
            .collect()),
        DataType::U16 => Ok(p
            .bytes
            .chunks_exact(8)
            .map(|b| std::array::from_fn(|k| u16::from_le_bytes([b[2 * k], b[2 * k + 1]])))
            .collect()),
        t => Err(format!(
            "accessor {i} ({what}) has component type {t:?}; joint indices must be unsigned bytes or shorts"
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A `.gltf` with one buffer of `len` bytes at `uri` and nothing that reads it.
    fn gltf_with_buffer(dir: &Path, name: &str, uri: &str, len: usize) -> std::path::PathBuf {
        let json = serde_json::json!({
            "asset": { "version": "2.0" },
            "buffers": [ { "byteLength": len, "uri": uri } ]
        });
        let path = dir.join(name);
        std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
        path
    }

    fn error(path: &Path) -> String {
        match open(path) {
            Ok(_) => panic!("{} loaded", path.display()),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn data_uris_decode_with_either_media_type_and_any_padding() {
        let dir = tempfile::tempdir().unwrap();
        for (uri, want) in [
            (
                "data:application/octet-stream;base64,AQIDBA==",
                &[1u8, 2, 3, 4][..],
            ),
            (
                "data:application/gltf-buffer;base64,AQIDBA==",
                &[1, 2, 3, 4],
            ),
            ("data:application/gltf-buffer;base64,AQIDBA", &[1, 2, 3, 4]),
            ("DATA:;BASE64,AQID", &[1, 2, 3]),
        ] {
            let path = gltf_with_buffer(dir.path(), "d.gltf", uri, want.len());
            let file = open(&path).unwrap_or_else(|e| panic!("{uri}: {e}"));
            assert_eq!(file.buffers, vec![want.to_vec()], "{uri}");
        }
    }

    #[test]
    fn bad_data_uris_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        for (uri, says) in [
            ("data:application/octet-stream,%01%02", "not base64-encoded"),
            ("data:base64,AQID", "not base64-encoded"),
            ("data:application/octet-stream;base64", "no ','"),
            (
                "data:application/octet-stream;base64,@@@@",
                "invalid base64",
            ),
            (
                "data:application/octet-stream;base64,AQID",
                "declares 4 bytes but has 3",
            ),
        ] {
            let path = gltf_with_buffer(dir.path(), "bad_data.gltf", uri, 4);
            let msg = error(&path);
            assert!(
                msg.contains("bad_data.gltf") && msg.contains(says),
                "{uri}: {msg}"
            );
        }
    }

    #[test]
    fn relative_files_are_percent_decoded_and_resolved_next_to_the_gltf() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub dir")).unwrap();
        std::fs::write(dir.path().join("sub dir/dätä.bin"), [7u8, 8, 9, 10, 11]).unwrap();
        let path = gltf_with_buffer(dir.path(), "ext.gltf", "sub%20dir/d%C3%A4t%C3%A4.bin", 5);
        assert_eq!(open(&path).unwrap().buffers, vec![vec![7, 8, 9, 10, 11]]);
    }

    #[test]
    fn short_missing_and_unsupported_external_buffers_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("short.bin"), [1u8, 2]).unwrap();
        let abs = dir.path().join("short.bin");
        let abs = abs.to_str().unwrap();
        for (uri, says) in [
            (
                "short.bin",
                "short.bin') declares 1073741824 bytes but the file has 2",
            ),
            ("nowhere.bin", "nowhere.bin') cannot be loaded"),
            ("%FF%FE.bin", "does not percent-decode to valid UTF-8"),
            (
                "http://example.com/a.bin",
                "the 'http:' scheme is not supported",
            ),
            ("file:///etc/passwd", "the 'file:' scheme is not supported"),
            ("C:/data/a.bin", "the 'C:' scheme is not supported"),
            ("/etc/passwd", "absolute paths are not supported"),
            ("%2Fetc%2Fpasswd", "absolute paths are not supported"),
            (abs, "not supported"),
            ("", "an empty URI"),
        ] {
            let path = gltf_with_buffer(dir.path(), "ext_bad.gltf", uri, 1 << 30);
            let msg = error(&path);
            assert!(
                msg.contains("ext_bad.gltf") && msg.contains(says),
                "{uri}: {msg}"
            );
        }
    }

    #[test]
    fn a_bin_buffer_without_a_binary_chunk_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let json = br#"{"asset":{"version":"2.0"},"buffers":[{"byteLength":4}]}"#;
        let path = dir.path().join("nobin.gltf");
        std::fs::write(&path, json).unwrap();
        let msg = error(&path);
        assert!(
            msg.contains("nobin.gltf") && msg.contains("binary chunk"),
            "{msg}"
        );
    }

    #[test]
    fn uri_schemes_are_recognised_by_rfc_3986_rules() {
        assert_eq!(uri_scheme("http://x"), Some("http"));
        assert_eq!(uri_scheme("svn+ssh://x"), Some("svn+ssh"));
        assert_eq!(uri_scheme("a.bin"), None);
        assert_eq!(uri_scheme("dir/a:b.bin"), None);
        assert_eq!(uri_scheme("1x:y"), None);
        assert_eq!(percent_decode("a%20b%zz%4"), Some("a b%zz%4".to_string()));
        assert_eq!(percent_decode("%E2%82%AC"), Some("€".to_string()));
        assert_eq!(percent_decode("%C3"), None);
    }
}
