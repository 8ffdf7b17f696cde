//! Regression tests for the fuzz corpus (issue 9, docs/fuzzing.md).
//!
//! Every file under `tests/fuzz_corpus/<target>/` runs through the same entry points as the
//! cargo-fuzz target `<target>` (`fuzz/src/entry.rs`, included below): no call may panic. A file
//! named `seed-*` is a valid input written by Drape's own code ([`seed_corpus`]), and at least
//! one loader must accept it; a file named `crash-*` is an input a fuzzer once crashed on, and
//! every loader must now refuse it with an error.
//!
//! `DRAPE_WRITE_FUZZ_SEEDS=1 cargo test --test fuzz_regressions seed_corpus` rewrites the seeds.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

#[path = "../fuzz/src/entry.rs"]
mod entry;

use entry::Outcome;

/// Corpus files that still crash a loader whose fix is pending: `(target, file, what)`. They are
/// left out of the corpus tests and run by [`known_crashes_still_pending`] (ignored), so CI stays
/// green until the fix lands; then the entry is removed from here.
const PENDING: &[(&str, &str, &str)] = &[];

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz_corpus")
        .join(target)
}

fn corpus_files(target: &str) -> Vec<PathBuf> {
    let dir = corpus_dir(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

fn file_name(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

thread_local! {
    /// Panics on this thread so far, caught or not.
    static PANICS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts every panic per thread, also one that Drape catches itself (as `gltf_common::open`
/// does around the `gltf` parser): the fuzzers abort on those too.
fn count_panics() {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.with(|p| p.set(p.get() + 1));
            default(info);
        }));
    });
}

/// Runs one file; `Err` says what went wrong (a panic, a seed refused, a crash accepted).
fn check_file(path: &Path, run: fn(&[u8]) -> Outcome) -> Result<(), String> {
    count_panics();
    let name = file_name(path);
    let bytes = std::fs::read(path).map_err(|e| format!("{name}: cannot read: {e}"))?;
    let before = PANICS.with(|p| p.get());
    let outcome = catch_unwind(AssertUnwindSafe(|| run(&bytes))).map_err(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        format!("{name}: panicked: {msg}")
    })?;
    if PANICS.with(|p| p.get()) != before {
        return Err(format!(
            "{name}: panicked inside a loader, which caught it (see the message above): {:?}",
            outcome.calls
        ));
    }
    if name.starts_with("seed-") && !outcome.any_ok() {
        return Err(format!(
            "{name}: a seed must load, but every call failed: {:?}",
            outcome.calls
        ));
    }
    if name.starts_with("crash-") && !outcome.all_err() {
        return Err(format!(
            "{name}: malformed input must give an error, got: {:?}",
            outcome.calls
        ));
    }
    Ok(())
}

fn check_corpus(target: &str, run: fn(&[u8]) -> Outcome) {
    let files = corpus_files(target);
    assert!(
        files.iter().any(|f| file_name(f).starts_with("seed-")),
        "{target}: no seeds in {}",
        corpus_dir(target).display()
    );
    let failures: Vec<String> = files
        .iter()
        .filter(|f| {
            let name = file_name(f);
            !PENDING.iter().any(|(t, n, _)| *t == target && *n == name)
        })
        .filter_map(|f| check_file(f, run).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{target}: {} of {} corpus files failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}

#[test]
fn gltf_import_corpus_does_not_panic() {
    check_corpus("gltf_import", entry::gltf_import);
}

#[test]
fn scene_load_corpus_does_not_panic() {
    check_corpus("scene_load", entry::scene_load);
}

#[test]
fn preset_load_corpus_does_not_panic() {
    check_corpus("preset_load", entry::preset_load);
}

/// The crashes in [`PENDING`]: fails while any of them still fails.
#[test]
#[ignore = "corpus files whose fix is pending, see PENDING"]
fn known_crashes_still_pending() {
    let failures: Vec<String> = PENDING
        .iter()
        .filter_map(|(target, name, what)| {
            let run: fn(&[u8]) -> Outcome = match *target {
                "gltf_import" => entry::gltf_import,
                "scene_load" => entry::scene_load,
                _ => entry::preset_load,
            };
            check_file(&corpus_dir(target).join(name), run)
                .err()
                .map(|e| format!("{e} ({what})"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Reads a file written into a temporary folder.
fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The seeds: `(target, file name, bytes)`, each made by Drape's own code.
fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut out = Vec::new();
    out.extend(gltf_seeds().into_iter().map(|(n, b)| ("gltf_import", n, b)));
    out.extend(scene_seeds().into_iter().map(|(n, b)| ("scene_load", n, b)));
    out.extend(
        preset_seeds()
            .into_iter()
            .map(|(n, b)| ("preset_load", n, b)),
    );
    out
}

fn gltf_seeds() -> Vec<(String, Vec<u8>)> {
    use drape::body::{Playback, Rig};
    use drape::io::gltf_export::{
        write_bake_glb, write_painted_glb, write_static_glb, BakeExport, BodyExport, PaintedMesh,
    };
    use drape::math::Vec3;
    use drape::mesh::shapes::{cuboid, grid_cloth, uv_sphere};
    use drape::paint::{MapKind, VertexMaps};

    let dir = tempfile::tempdir().unwrap();
    let p = |name: &str| dir.path().join(name);
    let mut out = Vec::new();

    let cloth = grid_cloth(0.5, 4, 0.5);
    write_static_glb(&p("cloth.glb"), &[&cloth]).unwrap();
    out.push(("seed-cloth.glb".into(), read(&p("cloth.glb"))));

    let mut sphere = uv_sphere(0.3, 6, 3);
    sphere.name = "sphere".into();
    let box_mesh = cuboid("box", Vec3::new(-0.1, 0.0, -0.1), Vec3::new(0.1, 0.4, 0.1));
    write_static_glb(&p("two.glb"), &[&sphere, &box_mesh]).unwrap();
    out.push(("seed-two-meshes.glb".into(), read(&p("two.glb"))));

    let small = grid_cloth(0.5, 3, 0.5);
    let mut maps = VertexMaps::new(small.vertex_count());
    maps.set(
        MapKind::Attachment,
        vec![1.0, 1.0, 1.0, 0.5, 0.5, 0.5, 0.0, 0.0, 0.0],
    );
    maps.set(MapKind::StretchScale, vec![2.0; 9]);
    write_painted_glb(
        &p("painted.glb"),
        &[PaintedMesh {
            mesh: &small,
            maps: Some(&maps),
        }],
    )
    .unwrap();
    out.push(("seed-painted.glb".into(), read(&p("painted.glb"))));

    let frames: Vec<Vec<Vec3>> = (0..3)
        .map(|k| {
            let drop = Vec3::new(0.0, -0.01 * k as f32, 0.0);
            small.positions.iter().map(|&x| x + drop).collect()
        })
        .collect();
    write_bake_glb(
        &p("bake.glb"),
        &BakeExport {
            garment: &small,
            frames: &frames,
            fps: 24.0,
            body: Some(BodyExport::Static(&box_mesh)),
        },
    )
    .unwrap();
    out.push(("seed-bake-static.glb".into(), read(&p("bake.glb"))));

    let skinned = skinned_strip_gltf();
    std::fs::write(p("strip.gltf"), &skinned).unwrap();
    out.push(("seed-skinned.gltf".into(), skinned));
    let rig = Rig::load(&p("strip.gltf"), None).unwrap();
    let poses: Vec<_> = (0..3)
        .map(|k| rig.sample(0, k as f64 / 2.0, Playback::Clamp))
        .collect();
    write_bake_glb(
        &p("bake-skinned.glb"),
        &BakeExport {
            garment: &small,
            frames: &frames,
            fps: 2.0,
            body: Some(BodyExport::Animated {
                rig: &rig,
                poses: &poses,
            }),
        },
    )
    .unwrap();
    out.push(("seed-bake-skinned.glb".into(), read(&p("bake-skinned.glb"))));
    out
}

/// A skinned, morphed and animated strip of four triangles (two joints, a LINEAR rotation, a
/// STEP translation, a CUBICSPLINE morph weight) plus a rigid triangle, as a `.gltf` with its
/// buffer in a `data:` URI.
fn skinned_strip_gltf() -> Vec<u8> {
    use base64::Engine as _;
    use serde_json::{json, Value};

    #[derive(Default)]
    struct Bin {
        bin: Vec<u8>,
        views: Vec<Value>,
        accessors: Vec<Value>,
    }
    impl Bin {
        fn add(&mut self, bytes: &[u8], component: u32, count: usize, ty: &str) -> usize {
            while self.bin.len() % 4 != 0 {
                self.bin.push(0);
            }
            self.views.push(json!({
                "buffer": 0, "byteOffset": self.bin.len(), "byteLength": bytes.len()
            }));
            self.bin.extend_from_slice(bytes);
            self.accessors.push(json!({
                "bufferView": self.views.len() - 1, "componentType": component,
                "count": count, "type": ty
            }));
            self.accessors.len() - 1
        }
        fn floats(&mut self, v: &[f32], ty: &str, per: usize) -> usize {
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            let i = self.add(&bytes, 5126, v.len() / per, ty);
            if per == 3 {
                let col = |c: usize| v.iter().skip(c).step_by(3).copied();
                let lo: Vec<f32> = (0..3).map(|c| col(c).fold(f32::MAX, f32::min)).collect();
                let hi: Vec<f32> = (0..3).map(|c| col(c).fold(f32::MIN, f32::max)).collect();
                self.accessors[i]["min"] = json!(lo);
                self.accessors[i]["max"] = json!(hi);
            }
            i
        }
    }

    let mut b = Bin::default();
    let strip = [
        0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 2.0, 0.0, 1.0, 2.0, 0.0,
    ];
    let pos = b.floats(&strip, "VEC3", 3);
    let joints: [u8; 24] = [
        0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,
    ];
    let j = b.add(&joints, 5121, 6, "VEC4");
    let weights = [
        1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.5, 0.5, 0.0, 0.0, 0.5, 0.5, 0.0, 0.0, 1.0, 0.0,
        0.0, 0.0, 1.0, 0.0, 0.0, 0.0,
    ];
    let w = b.floats(&weights, "VEC4", 4);
    let idx: Vec<u8> = [0u16, 1, 3, 0, 3, 2, 2, 3, 5, 2, 5, 4]
        .iter()
        .flat_map(|i| i.to_le_bytes())
        .collect();
    let ind = b.add(&idx, 5123, 12, "SCALAR");
    let morph = b.floats(&[0.0, 0.0, 1.0].repeat(6), "VEC3", 3);
    let tri = b.floats(&[0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.1, 0.0], "VEC3", 3);
    let mut ibms = vec![
        1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0,
    ];
    ibms.extend([
        1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, -1.0, 0.0, 1.0,
    ]);
    let ibm = b.floats(&ibms, "MAT4", 16);
    let times = b.floats(&[0.0, 1.0], "SCALAR", 1);
    let s = std::f32::consts::FRAC_1_SQRT_2;
    let rot = b.floats(&[0.0, 0.0, 0.0, 1.0, 0.0, 0.0, s, s], "VEC4", 4);
    let step = b.floats(&[0.0, 0.0, 0.0, 0.0, 0.0, 2.0], "VEC3", 3);
    let cubic = b.floats(&[0.0, 0.0, 2.0, 0.0, 1.0, 0.0], "SCALAR", 1);
    let data = base64::engine::general_purpose::STANDARD.encode(&b.bin);
    let root = json!({
        "asset": { "version": "2.0", "generator": "tests/fuzz_regressions.rs" },
        "scene": 0,
        "scenes": [ { "nodes": [0] } ],
        "nodes": [
            { "name": "root", "children": [3, 1] },
            { "name": "hip", "children": [2, 4] },
            { "name": "knee", "translation": [0.0, 1.0, 0.0] },
            { "name": "strip", "mesh": 0, "skin": 0 },
            { "name": "badge", "mesh": 1, "translation": [2.0, 0.0, 0.0] }
        ],
        "meshes": [
            { "name": "strip", "weights": [0.0], "primitives": [ {
                "attributes": { "POSITION": pos, "JOINTS_0": j, "WEIGHTS_0": w },
                "indices": ind, "targets": [ { "POSITION": morph } ] } ] },
            { "name": "badge", "primitives": [ { "attributes": { "POSITION": tri } } ] }
        ],
        "skins": [ { "joints": [1, 2], "inverseBindMatrices": ibm } ],
        "animations": [
            { "name": "bend", "samplers": [
                { "input": times, "output": rot },
                { "input": times, "output": step, "interpolation": "STEP" }
              ], "channels": [
                { "sampler": 0, "target": { "node": 2, "path": "rotation" } },
                { "sampler": 1, "target": { "node": 1, "path": "translation" } }
              ] },
            { "name": "swell", "samplers": [
                { "input": times, "output": cubic, "interpolation": "CUBICSPLINE" }
              ], "channels": [
                { "sampler": 0, "target": { "node": 3, "path": "weights" } }
              ] }
        ],
        "accessors": b.accessors,
        "bufferViews": b.views,
        "buffers": [ { "byteLength": b.bin.len(),
            "uri": format!("data:application/octet-stream;base64,{data}") } ]
    });
    serde_json::to_vec(&root).unwrap()
}

fn scene_seeds() -> Vec<(String, Vec<u8>)> {
    use drape::body::AnimationRef;
    use drape::paint::{GarmentMaps, MapKind, VertexMaps};
    use drape::preset::{builtin_fabric, builtin_solver};
    use drape::scene::demo::{sphere_drop_scene, write_demo, DemoScene};
    use drape::scene::{BodySpec, GarmentSpec, PinTarget, Pins, ProxySpec, Scene, Timeline};

    let dir = tempfile::tempdir().unwrap();
    let mut out = Vec::new();
    let demo = write_demo(&dir.path().join("default"), DemoScene::Default, None).unwrap();
    out.push(("seed-default.ron".into(), read(&demo)));

    let path = dir.path().join("sphere.ron");
    sphere_drop_scene(8).save(&path).unwrap();
    out.push(("seed-sphere-drop.ron".into(), read(&path)));

    // Every field set, each enum in a variant the demos do not use.
    let mut values = VertexMaps::new(4);
    values.set(MapKind::Attachment, vec![1.0, 0.5, 0.0, 0.0]);
    values.set(MapKind::MassScale, vec![1.0, 2.0, 1.0, 0.5]);
    let scene = Scene {
        name: "every-field".into(),
        body: Some(BodySpec {
            path: "body.glb".into(),
            mesh: Some("body".into()),
            animation: Some(AnimationRef::Name("walk".into())),
            ..Default::default()
        }),
        garments: vec![
            GarmentSpec {
                name: "cape".into(),
                path: "cape.glb".into(),
                fabric_override: Some(builtin_fabric("denim").unwrap()),
                pins: Pins::Weights {
                    weights: vec![1.0, 0.5, 0.0, 0.25],
                    threshold: 0.9,
                    soft_compliance_m_per_n: 1.0e-3,
                },
                pin_target: PinTarget::Body,
                proxy: Some(ProxySpec::Vertices(500)),
                maps: Some(GarmentMaps {
                    values,
                    ..Default::default()
                }),
                layer: 1,
                ..Default::default()
            },
            GarmentSpec {
                name: "scarf".into(),
                path: "scarf.glb".into(),
                mesh: Some("scarf".into()),
                fabric: "silk_charmeuse".into(),
                pins: Pins::Box {
                    min: [-1.0, 1.4, -1.0],
                    max: [1.0, 2.0, 1.0],
                },
                pin_target: PinTarget::World,
                proxy: Some(ProxySpec::EdgeLength(0.02)),
                weld_tolerance_m: 1.0e-4,
                ..Default::default()
            },
        ],
        solver: drape::solver::SolverSettings {
            adaptive_iterations: Some(drape::solver::AdaptiveIterations::default()),
            ..builtin_solver("production").unwrap()
        },
        timeline: Timeline {
            fps: 30.0,
            start_frame: 0,
            end_frame: Some(10),
            preroll_frames: 12,
            ..Default::default()
        },
        ..Default::default()
    };
    let path = dir.path().join("every-field.ron");
    scene.save(&path).unwrap();
    out.push(("seed-every-field.ron".into(), read(&path)));
    out
}

fn preset_seeds() -> Vec<(String, Vec<u8>)> {
    use drape::preset::PresetKind;
    let mut out = Vec::new();
    for kind in PresetKind::ALL {
        for (name, text) in kind.builtins() {
            out.push((format!("seed-{kind}-{name}.ron"), text.as_bytes().to_vec()));
        }
    }
    out
}

/// The seeds in `tests/fuzz_corpus/` are those Drape's code writes today; with
/// `DRAPE_WRITE_FUZZ_SEEDS=1`, this test (re)writes them. Byte-for-byte equality is not
/// required (an exporter change may alter them), only that each seed exists.
#[test]
fn seed_corpus() {
    let write = std::env::var_os("DRAPE_WRITE_FUZZ_SEEDS").is_some_and(|v| v == "1");
    for (target, name, bytes) in seeds() {
        assert!(
            bytes.len() < 64 * 1024,
            "{target}/{name}: {} bytes",
            bytes.len()
        );
        let path = corpus_dir(target).join(&name);
        if write {
            std::fs::create_dir_all(corpus_dir(target)).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        assert!(
            path.is_file(),
            "{} is missing: run `DRAPE_WRITE_FUZZ_SEEDS=1 cargo test --test fuzz_regressions seed_corpus`",
            path.display()
        );
    }
}
