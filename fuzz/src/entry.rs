//! What each fuzz target does with its input. Shared by the fuzz targets (through this crate's
//! `lib.rs`) and by `tests/fuzz_regressions.rs` (included with `#[path]`), so a corpus file
//! runs through the same calls in both.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use drape::body::{Playback, Rig};
use drape::io::gltf_import::{load_mesh_with_maps, load_meshes};
use drape::preset::{self, PresetKind};
use drape::scene::Scene;

/// What the entry points returned for one input: one line per call, `Ok` or the error text.
#[derive(Debug, Default)]
pub struct Outcome {
    /// `(call, result)` in call order; the error is the `Display` text of the loader's error.
    pub calls: Vec<(&'static str, Result<(), String>)>,
}

impl Outcome {
    fn record<T, E: std::fmt::Display>(&mut self, call: &'static str, r: &Result<T, E>) {
        self.calls
            .push((call, r.as_ref().map(|_| ()).map_err(|e| e.to_string())));
    }

    /// Whether at least one call accepted the input.
    pub fn any_ok(&self) -> bool {
        self.calls.iter().any(|(_, r)| r.is_ok())
    }

    /// Whether every loader refused the input with an error (decoding the bytes as UTF-8 is a
    /// step before the loaders, not a loader: a malformed scene is often valid text).
    pub fn all_err(&self) -> bool {
        (self.calls.iter())
            .filter(|(call, _)| *call != "from_utf8")
            .all(|(_, r)| r.is_err())
    }
}

/// A fresh, empty folder for one glTF input, so that relative buffer URIs in the input find
/// nothing but the input itself. Under `$TMPDIR` (point it at a tmpfs for speed).
fn scratch_dir() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("drape-fuzz-{}-{n}", std::process::id()))
}

/// Writes `bytes` to a temporary `input.glb` and reads it with every glTF reader Drape has: the
/// garment loaders ([`load_mesh_with_maps`], [`load_meshes`]) and the body loader
/// ([`Rig::load`]); a body that loads is then posed and skinned at the start, middle and end
/// of each animation.
pub fn gltf_import(bytes: &[u8]) -> Outcome {
    let dir = scratch_dir();
    let mut out = Outcome::default();
    if std::fs::create_dir_all(&dir).is_err() {
        return out;
    }
    let path = dir.join("input.glb");
    if std::fs::write(&path, bytes).is_ok() {
        read_gltf(&path, &mut out);
    }
    let _ = std::fs::remove_dir_all(&dir);
    out
}

fn read_gltf(path: &Path, out: &mut Outcome) {
    out.record("load_mesh_with_maps", &load_mesh_with_maps(path, None));
    out.record("load_meshes", &load_meshes(path));
    let rig = Rig::load(path, None);
    out.record("Rig::load", &rig);
    let Ok(rig) = rig else {
        return;
    };
    let mut skinned = Vec::new();
    rig.skin(&rig.rest_pose(), &mut skinned);
    for (a, info) in rig.animations().iter().enumerate() {
        for t in [
            info.start_s,
            info.start_s + 0.5 * info.duration_s(),
            info.end_s,
        ] {
            for playback in [Playback::Clamp, Playback::Loop] {
                let pose = rig.sample(a, t, playback);
                rig.skin(&pose, &mut skinned);
            }
        }
    }
}

/// Parses and validates the bytes as a scene ([`Scene::from_ron`]); input that is not UTF-8
/// is refused first, as [`Scene::load`] does.
pub fn scene_load(bytes: &[u8]) -> Outcome {
    let mut out = Outcome::default();
    let text = std::str::from_utf8(bytes);
    out.record("from_utf8", &text);
    if let Ok(text) = text {
        out.record(
            "Scene::from_ron",
            &Scene::from_ron(text, Path::new("fuzz.ron")),
        );
    }
    out
}

/// Parses and validates the bytes as a preset of either kind ([`preset::parse`]), then as each
/// kind ([`preset::parse_kind`]); input that is not UTF-8 is refused first.
pub fn preset_load(bytes: &[u8]) -> Outcome {
    let mut out = Outcome::default();
    let text = std::str::from_utf8(bytes);
    out.record("from_utf8", &text);
    if let Ok(text) = text {
        out.record("preset::parse", &preset::parse(text, "fuzz.ron"));
        for kind in PresetKind::ALL {
            out.record(
                "preset::parse_kind",
                &preset::parse_kind(kind, text, "fuzz.ron"),
            );
        }
    }
    out
}
