//! Helpers shared by the integration tests.
//!
//! [`validate_gltf`] runs the Khronos glTF-Validator (the npm package pinned in
//! `tests/validator/package.json`) through Node. Install it once with
//! `npm ci --prefix tests/validator`; CI does.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// What the glTF-Validator found in one file.
#[derive(Clone, Debug, Default)]
pub struct ValidatorReport {
    /// Number of errors (a valid file has none).
    pub errors: u64,
    /// Number of warnings.
    pub warnings: u64,
    /// Number of infos.
    pub infos: u64,
    /// Every issue as `SEVERITY CODE at POINTER: message`.
    pub messages: Vec<String>,
}

impl ValidatorReport {
    /// The messages of one severity: 0 error, 1 warning, 2 info, 3 hint.
    pub fn of_severity(&self, severity: &str) -> Vec<&String> {
        self.messages
            .iter()
            .filter(|m| m.starts_with(severity))
            .collect()
    }
}

/// The directory holding `package.json` and `validate.mjs`.
pub fn validator_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/validator")
}

/// Runs the Khronos glTF-Validator on `path`.
///
/// # Panics
///
/// When the validator is not installed (run `npm ci --prefix tests/validator`), when Node is
/// missing, or when the validator cannot read the file. A missing validator must fail the test,
/// not skip it.
pub fn validate_gltf(path: &Path) -> ValidatorReport {
    let dir = validator_dir();
    if !dir.join("node_modules/gltf-validator").is_dir() {
        panic!(
            "the Khronos glTF-Validator is not installed in {}: run `npm ci --prefix tests/validator` \
             (needs Node.js and npm) and rerun the tests",
            dir.display()
        );
    }
    let node = std::env::var_os("NODE").unwrap_or_else(|| "node".into());
    let out = Command::new(&node)
        .arg(dir.join("validate.mjs"))
        .arg(path)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run Node ({}) for the glTF-Validator: {e}; install Node.js or set NODE",
                node.to_string_lossy()
            )
        });
    assert!(
        out.status.success(),
        "glTF-Validator failed on {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "glTF-Validator printed something that is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    let count = |k: &str| v[k].as_u64().unwrap_or_else(|| panic!("no {k} in {v}"));
    let messages = v["messages"]
        .as_array()
        .map(|ms| {
            ms.iter()
                .map(|m| {
                    let severity = match m["severity"].as_u64() {
                        Some(0) => "ERROR",
                        Some(1) => "WARNING",
                        Some(2) => "INFO",
                        _ => "HINT",
                    };
                    format!(
                        "{severity} {} at {}: {}",
                        m["code"].as_str().unwrap_or("?"),
                        m["pointer"].as_str().unwrap_or(""),
                        m["message"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    ValidatorReport {
        errors: count("numErrors"),
        warnings: count("numWarnings"),
        infos: count("numInfos"),
        messages,
    }
}

/// Standard base64 (with padding), for embedding buffers in hand-made `.gltf` files.
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * k)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Reads back a binary glTF (`.glb`) written by Drape: the document and the data of each of its
/// buffers, indexed like `doc.buffers()`, for `reader(|b| Some(&buffers[b.index()]))`.
///
/// Drape's outputs have one buffer, the GLB binary chunk; any other buffer source fails the test.
///
/// # Panics
///
/// When the file cannot be read or parsed, or a buffer is not the binary chunk or is shorter than
/// its declared length.
pub fn read_glb(path: &Path) -> (gltf::Document, Vec<Vec<u8>>) {
    let bytes =
        std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let gltf::Gltf { document, mut blob } = gltf::Gltf::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{} is not a valid glTF: {e}", path.display()));
    let buffers = document
        .buffers()
        .map(|b| {
            assert!(
                matches!(b.source(), gltf::buffer::Source::Bin),
                "{}: buffer {} is not the GLB binary chunk",
                path.display(),
                b.index()
            );
            let data = blob.take().unwrap_or_else(|| {
                panic!(
                    "{}: no GLB binary chunk for buffer {}",
                    path.display(),
                    b.index()
                )
            });
            assert!(
                data.len() >= b.length(),
                "{}: buffer {} declares {} bytes but has {}",
                path.display(),
                b.index(),
                b.length(),
                data.len()
            );
            data
        })
        .collect();
    (document, buffers)
}

/// Writes a bake with its animated body as `drape bake` does (the garment's morph animation
/// and the rig's skin and poses), for the tests that validate and inspect the export.
pub fn write_animated_bake(path: &Path, result: &drape::bake::BakeResult, rig: &drape::body::Rig) {
    drape::io::gltf_export::write_bake_glb(
        path,
        &drape::io::gltf_export::BakeExport {
            garment: &result.render_mesh,
            frames: &result.frames,
            fps: result.fps,
            body: Some(drape::io::gltf_export::BodyExport::Animated {
                rig,
                poses: &result.body_poses,
            }),
        },
    )
    .unwrap();
}

/// A cloth model from a mesh in the default fabric, with the given hard pins at rest (no
/// tethers).
pub fn model_of(mesh: &drape::mesh::Mesh, pinned: &[u32]) -> drape::solver::ClothModel {
    use drape::garment::material::{build_cloth, DEFAULT_FABRIC};
    use drape::preset::builtin_fabric;
    let fabric = builtin_fabric(DEFAULT_FABRIC).unwrap();
    let topo = drape::mesh::Topology::new(mesh);
    let c = build_cloth(mesh, &topo, &fabric);
    let n = mesh.positions.len();
    drape::solver::ClothModel {
        positions: mesh.positions.clone(),
        mass_kg: c.mass_kg,
        damping_per_s: vec![fabric.damping_per_s; n],
        friction: vec![fabric.friction; n],
        stretch: c.stretch,
        shear: c.shear,
        bend: c.bend,
        pins: pinned
            .iter()
            .map(|&i| drape::solver::Pin {
                particle: i,
                target_m: mesh.positions[i as usize],
            })
            .collect(),
        ..Default::default()
    }
}
