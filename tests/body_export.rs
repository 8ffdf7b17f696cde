//! The animated body in a baked `.glb` (`BodyExport::Animated`), with no simulation: poses
//! sampled from the Khronos samples CesiumMan and RiggedSimple (see
//! `../shared/data/khronos/LICENSES.md`), a small moving garment, then the Khronos
//! glTF-Validator, a round trip through `Rig::load`, and `inspect`.

mod common;

use std::path::{Path, PathBuf};

use approx::assert_abs_diff_eq;
use drape::body::{Mat4, Playback, Pose, Quat, Rig};
use drape::io::{inspect, write_bake_glb, BakeExport, BodyExport, GltfExportError};
use drape::math::Vec3;
use drape::mesh::Mesh;
use serde_json::{json, Value};

const FPS: f32 = 24.0;
const FRAMES: usize = 49;

fn asset(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/khronos")
        .join(name)
}

/// Key time of frame `k`, exactly as the exporter writes it (s).
fn time(k: usize) -> f64 {
    f64::from(k as f32 / FPS)
}

/// A 1 m quad at 2 m height.
fn garment() -> Mesh {
    Mesh::new(
        "garment",
        vec![
            Vec3::new(-0.5, 2.0, -0.5),
            Vec3::new(0.5, 2.0, -0.5),
            Vec3::new(0.5, 2.0, 0.5),
            Vec3::new(-0.5, 2.0, 0.5),
        ],
        vec![[0, 2, 1], [0, 3, 2]],
    )
}

/// The quad sliding along +X and sagging in the middle of the shot, one frame per key.
fn frames(g: &Mesh) -> Vec<Vec<Vec3>> {
    (0..FRAMES)
        .map(|k| {
            let s = k as f32 / (FRAMES - 1) as f32;
            let offset = Vec3::new(0.5 * s, -0.2 * (std::f32::consts::PI * s).sin(), 0.0);
            g.positions.iter().map(|p| *p + offset).collect()
        })
        .collect()
}

/// The rig's poses at `t_k = k / 24 s`, k < 49 (2 s, CesiumMan's whole walk cycle).
fn poses(rig: &Rig) -> Vec<Pose> {
    (0..FRAMES)
        .map(|k| rig.sample(0, time(k), Playback::Clamp))
        .collect()
}

fn max_distance(a: &[Vec3], b: &[Vec3]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(p, q)| (*p - *q).length())
        .fold(0.0, f32::max)
}

/// Writes the animated bake of `asset_name` into `dir`; returns the file, the rig, the garment
/// and its frames.
fn write_animated(dir: &Path, asset_name: &str) -> (PathBuf, Rig, Mesh, Vec<Vec<Vec3>>) {
    let rig = Rig::load(&asset(asset_name), None).unwrap();
    assert!(rig.is_animated(), "{asset_name}");
    let poses = poses(&rig);
    let g = garment();
    let f = frames(&g);
    let path = dir.join(asset_name.replace(".glb", "_bake.glb"));
    write_bake_glb(
        &path,
        &BakeExport {
            garment: &g,
            frames: &f,
            fps: FPS,
            body: Some(BodyExport::Animated {
                rig: &rig,
                poses: &poses,
            }),
        },
    )
    .unwrap();
    (path, rig, g, f)
}

/// Validator: no errors; warnings and infos printed (run with `--nocapture` to see them).
fn assert_valid(path: &Path) -> common::ValidatorReport {
    let report = common::validate_gltf(path);
    println!(
        "{}: {} bytes; validator: {} errors, {} warnings, {} infos",
        path.display(),
        std::fs::metadata(path).unwrap().len(),
        report.errors,
        report.warnings,
        report.infos
    );
    for m in &report.messages {
        println!("  {m}");
    }
    assert_eq!(report.errors, 0, "{:#?}", report.of_severity("ERROR"));
    report
}

/// Re-reads the file as a rig and checks that at several key times every body part of the
/// original lands where the original rig puts it, and that the garment part shows its frame.
fn assert_round_trip(path: &Path, rig: &Rig, f: &[Vec<Vec3>]) {
    let back = Rig::load(path, None).unwrap();
    // The written skin weights are clean: nothing left to repair.
    assert!(back.warnings().is_empty(), "{:?}", back.warnings());
    assert!(back.is_animated());
    assert_eq!(back.animations().len(), 1);
    assert_eq!(back.animations()[0].name.as_deref(), Some("drape_bake"));
    assert_abs_diff_eq!(back.animations()[0].start_s, 0.0);
    assert_abs_diff_eq!(back.animations()[0].end_s, time(FRAMES - 1));
    let garment = back
        .parts()
        .iter()
        .find(|p| p.name == "garment")
        .expect("the garment is a part of the re-read file");
    let (mut want, mut got) = (Vec::new(), Vec::new());
    for k in [0, 1, 7, 12, 24, 31, 47, 48] {
        let t = time(k);
        rig.skin(&rig.sample(0, t, Playback::Clamp), &mut want);
        back.skin(&back.sample(0, t, Playback::Clamp), &mut got);
        for part in rig.parts() {
            let same = back
                .parts()
                .iter()
                .find(|p| p.name == part.name && p.positions.len() == part.positions.len())
                .unwrap_or_else(|| panic!("part '{}' is missing from the re-read file", part.name));
            let d = max_distance(&want[part.vertices.clone()], &got[same.vertices.clone()]);
            assert!(d < 1e-4, "frame {k}, part '{}': {d} m off", part.name);
        }
        let d = max_distance(&f[k], &got[garment.vertices.clone()]);
        assert!(d < 1e-5, "frame {k}, garment: {d} m off");
    }
}

#[test]
fn cesium_man_animated_bake_is_valid_and_plays_the_same_walk() {
    let dir = tempfile::tempdir().unwrap();
    let (path, rig, _, f) = write_animated(dir.path(), "CesiumMan.glb");
    // The source has invalid skin weights (the validator reports 210 errors on it); the bake
    // must not copy them.
    assert_eq!(rig.warnings().len(), 1, "{:?}", rig.warnings());
    assert_valid(&path);
    assert_round_trip(&path, &rig, &f);
}

#[test]
fn rigged_simple_animated_bake_is_valid_and_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let (path, rig, _, f) = write_animated(dir.path(), "RiggedSimple.glb");
    assert_valid(&path);
    assert_round_trip(&path, &rig, &f);
}

#[test]
fn inspect_shows_the_skin_the_morph_targets_and_equal_key_ranges() {
    let dir = tempfile::tempdir().unwrap();
    let (path, rig, g, _) = write_animated(dir.path(), "CesiumMan.glb");
    let report = inspect(&path).unwrap();
    assert_eq!(report.skins.len(), 1);
    assert_eq!(report.skins[0].joints, 19);
    let garment = &report.meshes[0];
    assert_eq!(garment.name, "garment");
    assert_eq!(garment.vertices, g.positions.len());
    assert_eq!(garment.morph_targets, FRAMES);
    assert!(!garment.skinned);
    let body = &report.meshes[1];
    assert_eq!(body.vertices, rig.vertex_count());
    assert!(body.skinned);
    assert_eq!(body.morph_targets, 0);

    assert_eq!(report.animations.len(), 1);
    let a = &report.animations[0];
    assert_eq!(a.name, "drape_bake");
    let end = (FRAMES - 1) as f32 / FPS;
    assert_abs_diff_eq!(a.duration_s, end, epsilon = 1e-6);
    assert_eq!(a.morph_weights.channels, 1);
    assert_eq!(a.morph_weights.nodes, 1);
    assert_eq!(a.morph_weights.key_range_s, Some((0.0, end)));
    // CesiumMan animates translation, rotation and scale of its 19 joints (57 channels).
    assert_eq!(a.transforms.nodes, 19);
    assert!(a.transforms.channels >= 19, "{:?}", a.transforms);
    assert_eq!(a.channels, a.transforms.channels + 1);
    assert_eq!(a.transforms.key_range_s, a.morph_weights.key_range_s);

    let text = report.to_string();
    println!("{text}");
    assert!(
        text.contains("'garment': 4 vertices, 2 triangles, 49 morph targets"),
        "{text}"
    );
    assert!(text.contains("skinned"), "{text}");
    assert!(text.contains("19 joints"), "{text}");
    assert!(
        text.contains("morph weights: 1 channel on 1 node, keys 0.000 s to 2.000 s"),
        "{text}"
    );
    assert!(
        text.contains("on 19 nodes, keys 0.000 s to 2.000 s"),
        "{text}"
    );
    assert!(text.contains("play over the same keys"), "{text}");
}

#[test]
fn rotation_keys_are_unit_and_sign_continuous() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, _, _) = write_animated(dir.path(), "CesiumMan.glb");
    let (doc, buffers) = common::read_glb(&path);
    let anim = doc.animations().next().unwrap();
    let mut rotations = 0;
    for channel in anim.channels() {
        let reader = channel.reader(|b| Some(&buffers[b.index()]));
        let inputs: Vec<f32> = reader.read_inputs().unwrap().collect();
        assert_eq!(inputs.len(), FRAMES);
        if let Some(gltf::animation::util::ReadOutputs::Rotations(r)) = reader.read_outputs() {
            rotations += 1;
            let q: Vec<[f32; 4]> = r.into_f32().collect();
            assert_eq!(q.len(), FRAMES);
            for (k, w) in q.windows(2).enumerate() {
                let len: f32 = w[1].iter().map(|x| x * x).sum::<f32>().sqrt();
                assert_abs_diff_eq!(len, 1.0, epsilon = 1e-6);
                let dot: f32 = w[0].iter().zip(&w[1]).map(|(a, b)| a * b).sum();
                assert!(dot >= 0.0, "key {k} to {}: dot {dot}", k + 1);
            }
        }
    }
    assert!(rotations > 0);
}

#[test]
fn body_poses_must_match_the_frames() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mismatch.glb");
    let rig = Rig::load(&asset("CesiumMan.glb"), None).unwrap();
    let g = garment();
    let f = frames(&g);
    let poses = poses(&rig);
    let err = write_bake_glb(
        &path,
        &BakeExport {
            garment: &g,
            frames: &f,
            fps: FPS,
            body: Some(BodyExport::Animated {
                rig: &rig,
                poses: &poses[..FRAMES - 1],
            }),
        },
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            GltfExportError::PoseCount {
                poses: 48,
                frames: 49,
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains("mismatch.glb"), "{msg}");
    assert!(
        msg.contains("48 poses") && msg.contains("49 frames"),
        "{msg}"
    );
    assert!(!path.exists());

    // Poses of another rig are refused too.
    let other = Rig::load(&asset("RiggedSimple.glb"), None).unwrap();
    let wrong = vec![other.rest_pose(); FRAMES];
    let err = write_bake_glb(
        &path,
        &BakeExport {
            garment: &g,
            frames: &f,
            fps: FPS,
            body: Some(BodyExport::Animated {
                rig: &rig,
                poses: &wrong,
            }),
        },
    )
    .unwrap_err();
    assert!(
        matches!(err, GltfExportError::PoseNodes { pose: 0, .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("mismatch.glb"), "{err}");
    assert!(!path.exists());
}

#[test]
fn a_static_body_is_one_plain_node() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("static.glb");
    let rig = Rig::load(&asset("CesiumMan.glb"), None).unwrap();
    let g = garment();
    let f = frames(&g);
    write_bake_glb(
        &path,
        &BakeExport {
            garment: &g,
            frames: &f,
            fps: FPS,
            body: Some(BodyExport::Static(rig.rest_mesh())),
        },
    )
    .unwrap();
    assert_valid(&path);
    let report = inspect(&path).unwrap();
    assert_eq!(report.nodes, 2);
    assert!(report.skins.is_empty());
    assert_eq!(report.animations[0].channels, 1);
    assert_eq!(report.animations[0].transforms.channels, 0);
}

// ---------------------------------------------------------------------------------------------
// A hand-built body: a strip skinned to two joints, with a morph target whose weight is
// animated, a rigid triangle on an animated node, and skin influences the validator rejects
// (a joint listed twice, a zero weight on a non-zero joint).

/// Adds `values` (FLOAT) as one accessor of `ty` with `per` components, `min`/`max` for up to 3.
fn add_floats(
    bin: &mut Vec<u8>,
    views: &mut Vec<Value>,
    accessors: &mut Vec<Value>,
    values: &[f32],
    ty: &str,
    per: usize,
) -> usize {
    views.push(json!({ "buffer": 0, "byteOffset": bin.len(), "byteLength": values.len() * 4 }));
    bin.extend(values.iter().flat_map(|x| x.to_le_bytes()));
    let mut acc = json!({
        "bufferView": views.len() - 1, "componentType": 5126, "count": values.len() / per,
        "type": ty,
    });
    if per <= 3 {
        let col = |c: usize| values.iter().skip(c).step_by(per).copied();
        let lo: Vec<f32> = (0..per).map(|c| col(c).fold(f32::MAX, f32::min)).collect();
        let hi: Vec<f32> = (0..per).map(|c| col(c).fold(f32::MIN, f32::max)).collect();
        acc["min"] = json!(lo);
        acc["max"] = json!(hi);
    }
    accessors.push(acc);
    accessors.len() - 1
}

fn strip_body(dir: &Path) -> PathBuf {
    let (mut bin, mut views, mut accessors) = (Vec::new(), Vec::new(), Vec::new());
    let mut f = |v: &[f32], ty: &str, per: usize| {
        add_floats(&mut bin, &mut views, &mut accessors, v, ty, per)
    };
    let strip = [
        0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 2.0, 0.0, 1.0, 2.0, 0.0,
    ];
    let pos = f(&strip, "VEC3", 3);
    let weights = f(
        &[
            1.0, 0.0, 0.0, 0.0, // joint 1 listed with weight 0
            1.0, 0.0, 0.0, 0.0, //
            0.25, 0.25, 0.5, 0.0, // joint 0 twice
            0.5, 0.5, 0.0, 0.0, //
            1.0, 0.0, 0.0, 0.0, //
            1.0, 0.0, 0.0, 0.0,
        ],
        "VEC4",
        4,
    );
    let morph = f(&[0.0, 0.0, 1.0].repeat(6), "VEC3", 3);
    let tri = f(&[0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.1, 0.0], "VEC3", 3);
    let ibm: Vec<f32> = [
        Mat4::IDENTITY,
        Mat4::from_translation(Vec3::new(0.0, -1.0, 0.0)),
    ]
    .iter()
    .flat_map(|m| m.to_cols_array())
    .collect();
    let ibm = f(&ibm, "MAT4", 16);
    let times = f(&[0.0, 1.0], "SCALAR", 1);
    let quarter = Quat::from_rotation_z(std::f32::consts::FRAC_PI_2).to_array();
    let rot = f(&[[0.0, 0.0, 0.0, 1.0], quarter].concat(), "VEC4", 4);
    let wts = f(&[0.0, 1.0], "SCALAR", 1);
    let slide = f(&[0.0, 0.0, 0.0, 0.0, 0.0, 0.5], "VEC3", 3);
    let joints: [u8; 24] = [
        0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0,
    ];
    views.push(json!({ "buffer": 0, "byteOffset": bin.len(), "byteLength": 24 }));
    bin.extend_from_slice(&joints);
    accessors.push(json!({
        "bufferView": views.len() - 1, "componentType": 5121, "count": 6, "type": "VEC4"
    }));
    let j = accessors.len() - 1;
    let idx: Vec<u8> = [0u16, 1, 3, 0, 3, 2, 2, 3, 5, 2, 5, 4]
        .iter()
        .flat_map(|i| i.to_le_bytes())
        .collect();
    views.push(json!({ "buffer": 0, "byteOffset": bin.len(), "byteLength": idx.len() }));
    bin.extend_from_slice(&idx);
    accessors.push(json!({
        "bufferView": views.len() - 1, "componentType": 5123, "count": 12, "type": "SCALAR"
    }));
    let ind = accessors.len() - 1;
    let root = json!({
        "asset": { "version": "2.0" },
        "scene": 0,
        "scenes": [ { "nodes": [0] } ],
        "nodes": [
            { "name": "root", "children": [3, 1] },
            { "name": "hip", "children": [2, 4] },
            { "name": "knee", "translation": [0.0, 1.0, 0.0] },
            { "name": "strip", "mesh": 0, "skin": 0, "translation": [5.0, 5.0, 5.0] },
            { "name": "badge", "mesh": 1, "translation": [2.0, 0.0, 0.0] }
        ],
        "meshes": [
            { "name": "strip", "weights": [0.0], "primitives": [ {
                "attributes": { "POSITION": pos, "JOINTS_0": j, "WEIGHTS_0": weights },
                "indices": ind, "targets": [ { "POSITION": morph } ] } ] },
            { "name": "badge", "primitives": [ { "attributes": { "POSITION": tri } } ] }
        ],
        "skins": [ { "joints": [1, 2], "inverseBindMatrices": ibm } ],
        "animations": [ { "name": "bend", "samplers": [
                { "input": times, "output": rot },
                { "input": times, "output": wts },
                { "input": times, "output": slide }
            ], "channels": [
                { "sampler": 0, "target": { "node": 2, "path": "rotation" } },
                { "sampler": 1, "target": { "node": 3, "path": "weights" } },
                { "sampler": 2, "target": { "node": 1, "path": "translation" } }
            ] } ],
        "accessors": accessors,
        "bufferViews": views,
        "buffers": [ { "byteLength": bin.len(),
            "uri": format!("data:application/octet-stream;base64,{}", common::base64(&bin)) } ]
    });
    let path = dir.join("strip.gltf");
    std::fs::write(&path, serde_json::to_vec_pretty(&root).unwrap()).unwrap();
    path
}

#[test]
fn morph_weights_rigid_parts_and_dirty_influences_are_written_valid() {
    let dir = tempfile::tempdir().unwrap();
    let source = strip_body(dir.path());
    let rig = Rig::load(&source, None).unwrap();
    assert_eq!(rig.parts().len(), 2);
    // The source itself is invalid: the influences are the reason.
    let src_report = common::validate_gltf(&source);
    assert!(src_report.errors > 0, "{:#?}", src_report.messages);

    let poses = poses(&rig);
    let g = garment();
    let f = frames(&g);
    let path = dir.path().join("strip_bake.glb");
    write_bake_glb(
        &path,
        &BakeExport {
            garment: &g,
            frames: &f,
            fps: FPS,
            body: Some(BodyExport::Animated {
                rig: &rig,
                poses: &poses,
            }),
        },
    )
    .unwrap();
    assert_valid(&path);
    assert_round_trip(&path, &rig, &f);

    let report = inspect(&path).unwrap();
    let strip = report.meshes.iter().find(|m| m.name == "strip").unwrap();
    assert_eq!(strip.morph_targets, 1);
    assert!(strip.skinned);
    let a = &report.animations[0];
    // The garment's frames and the strip's morph weight.
    assert_eq!(a.morph_weights.channels, 2);
    assert_eq!(a.morph_weights.nodes, 2);
    // The knee's rotation and the hip's translation.
    assert_eq!(a.transforms.channels, 2);
    assert_eq!(a.transforms.key_range_s, a.morph_weights.key_range_s);

    // The strip's skin and mesh sit on a root node with no transform; its old leaf node is
    // gone, the badge keeps its node under the hip.
    let (doc, _) = common::read_glb(&path);
    let scene: Vec<_> = doc.default_scene().unwrap().nodes().collect();
    let strip_node = scene.iter().find(|n| n.skin().is_some()).unwrap();
    assert_eq!(strip_node.name(), Some("strip"));
    assert_eq!(
        strip_node.transform().matrix(),
        Mat4::IDENTITY.to_cols_array_2d()
    );
    assert_eq!(doc.nodes().filter(|n| n.name() == Some("strip")).count(), 1);
    let badge = doc.nodes().find(|n| n.name() == Some("badge")).unwrap();
    assert!(badge.mesh().is_some() && badge.skin().is_none());
}
