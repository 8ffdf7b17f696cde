//! The animated body through the public API: skinning the Khronos samples (RiggedSimple,
//! CesiumMan, Fox; see `../shared/data/khronos/LICENSES.md`), a hand-built skinned glTF with
//! morph targets and a rigid part, and damaged files.

mod common;

use std::f32::consts::FRAC_PI_2;
use std::path::{Path, PathBuf};

use approx::assert_abs_diff_eq;
use drape::body::{AnimationRef, BodyError, Mat4, Playback, Quat, Rig};
use drape::math::{bounds, Vec3};
use serde_json::{json, Value};

fn asset(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/khronos")
        .join(name)
}

fn max_distance(a: &[Vec3], b: &[Vec3]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(p, q)| (*p - *q).length())
        .fold(0.0, f32::max)
}

// ---------------------------------------------------------------------------------------------
// RiggedSimple: a cylinder on two joints (nodes 2 and 3), under a Z-up → Y-up root matrix.

#[test]
fn rigged_simple_bind_pose_reproduces_the_positions() {
    let rig = Rig::load(&asset("RiggedSimple.glb"), None).unwrap();
    assert!(rig.warnings().is_empty(), "{:?}", rig.warnings());
    let part = &rig.parts()[0];
    let skin = &rig.skins()[part.skin.unwrap()];
    assert_eq!(skin.joints, [2, 3]);
    // Each joint's global set to the inverse of its inverse bind matrix: G · B = I, so every
    // skinned vertex is its POSITION, whatever its weights.
    let mut globals = rig.world_transforms(&rig.rest_pose());
    for (&joint, ibm) in skin.joints.iter().zip(&skin.inverse_bind) {
        globals[joint] = ibm.inverse();
    }
    let mut out = Vec::new();
    rig.skin_with_globals(&globals, &rig.rest_pose(), &mut out);
    assert!(max_distance(&out, &part.positions) < 1e-6);
}

#[test]
fn rigged_simple_rest_pose_is_the_bind_pose_under_the_root_matrix() {
    // The file's inverse bind matrices are the inverses of the joints' rest globals *with* the
    // root matrix (Z-up → Y-up) factored out: G(joint) · B(joint) = G(node 0) for both joints
    // (to ~1e-6). So at the rest pose the skinned cylinder lies where a rigid mesh on its own
    // node 1 (a child of node 0 with an identity transform) would: G(node 1) · POSITION,
    // standing 9.15 m tall along +Y.
    let rig = Rig::load(&asset("RiggedSimple.glb"), None).unwrap();
    let pose = rig.rest_pose();
    let g = rig.world_transforms(&pose);
    let skin = &rig.skins()[0];
    for (&joint, ibm) in skin.joints.iter().zip(&skin.inverse_bind) {
        assert!((g[joint] * *ibm).abs_diff_eq(g[0], 1e-5), "joint {joint}");
    }
    let part = &rig.parts()[0];
    let expected: Vec<Vec3> = part
        .positions
        .iter()
        .map(|p| g[1].transform_point3(*p))
        .collect();
    let rest = &rig.rest_mesh().positions;
    assert!(max_distance(rest, &expected) < 1e-5);
    let mut out = Vec::new();
    rig.skin(&pose, &mut out);
    assert_eq!(&out, rest);
    let (lo, hi) = bounds(rest).unwrap();
    assert_abs_diff_eq!(hi.y - lo.y, 9.15, epsilon = 0.01);
}

/// Rotates `joint` by `angle` about its local axis `axis` and checks that the vertices bound
/// (weight ≥ 0.9999) to a joint in `moved` turn rigidly about `joint`'s origin, and those bound
/// to a joint in `still` do not move.
fn check_joint_rotation(joint: usize, moved: &[usize], still: &[usize]) {
    let rig = Rig::load(&asset("RiggedSimple.glb"), None).unwrap();
    let rest = rig.rest_pose();
    let before = rig.rest_mesh().positions.clone();
    let g = rig.world_transforms(&rest);
    let (_, joint_rotation, origin) = g[joint].to_scale_rotation_translation();
    let turn = Quat::from_axis_angle(Vec3::new(1.0, 0.0, 1.0).normalize(), 30f32.to_radians());
    let mut pose = rest.clone();
    pose.set_rotation(joint, rest.rotation(joint) * turn);
    let mut after = Vec::new();
    rig.skin(&pose, &mut after);
    // In world space the local turn is `R_joint · turn · R_joint⁻¹`, about the joint's origin.
    let world_turn = joint_rotation * turn * joint_rotation.inverse();
    let part = &rig.parts()[0];
    let skin = &rig.skins()[0];
    let bound_to = |v: usize| -> Option<usize> {
        let k = part.weights[v].iter().position(|&w| w >= 0.9999)?;
        Some(skin.joints[part.joints[v][k] as usize])
    };
    let (mut n_moved, mut n_still) = (0, 0);
    for v in 0..rig.vertex_count() {
        match bound_to(v) {
            Some(j) if moved.contains(&j) => {
                let want = origin + world_turn * (before[v] - origin);
                assert!((after[v] - want).length() < 1e-5, "vertex {v}");
                n_moved += 1;
            }
            Some(j) if still.contains(&j) => {
                assert!((after[v] - before[v]).length() < 1e-5, "vertex {v}");
                n_still += 1;
            }
            _ => {}
        }
    }
    assert!(n_moved > 0 && n_moved + n_still > 10, "{n_moved} {n_still}");
}

#[test]
fn rigged_simple_turning_a_joint_turns_its_vertices_about_it() {
    // The child joint (node 3): its vertices turn, the parent's stay.
    check_joint_rotation(3, &[3], &[2]);
    // The parent joint (node 2): the whole skeleton turns with it.
    check_joint_rotation(2, &[2, 3], &[]);
}

// ---------------------------------------------------------------------------------------------
// CesiumMan: 3273 vertices, 19 joints, a 2 s walk; Z-up under a root matrix, so Y is up.

/// World positions of the left (node 10) and right (node 6) ankle joints. At the rest pose the
/// man faces +X (his toes reach x = +0.18 m, his heels −0.08 m), so his left is −Z: node 10
/// lies at z = −0.085 m, node 6 at z = +0.075 m.
fn ankles(rig: &Rig, t: f64) -> (Vec3, Vec3) {
    let g = rig.world_transforms(&rig.sample(0, t, Playback::Loop));
    (g[10].w_axis.truncate(), g[6].w_axis.truncate())
}

#[test]
fn cesium_man_walks_upright_and_alternates_feet() {
    let rig = Rig::load(&asset("CesiumMan.glb"), None).unwrap();
    assert_eq!(rig.vertex_count(), 3273);
    assert!(rig.is_animated());
    assert_eq!(rig.animations().len(), 1);
    assert_eq!(rig.animations()[0].channels, 57);
    assert_abs_diff_eq!(rig.animations()[0].end_s, 2.0);
    let mut out = Vec::new();
    let mut ahead = Vec::new();
    for t in [0.0, 0.5, 1.0, 1.5] {
        rig.skin(&rig.sample(0, t, Playback::Loop), &mut out);
        assert_eq!(out.len(), 3273);
        assert!(out.iter().all(|p| p.is_finite()), "t = {t}");
        let (lo, hi) = bounds(&out).unwrap();
        let height = hi.y - lo.y;
        assert!((1.3..1.6).contains(&height), "t = {t}: height {height} m");
        // The body is taller than it is deep or wide: Y is up.
        assert!(height > hi.x - lo.x && height > hi.z - lo.z, "t = {t}");
        assert!(lo.y.abs() < 0.03, "t = {t}: feet at {} m", lo.y);
        let (left, right) = ankles(&rig, t);
        assert!(left.z < 0.0 && right.z > 0.0, "t = {t}");
        // Stride: the ankles are at least 20 cm apart along the walking direction (+X).
        assert!(
            (left.x - right.x).abs() > 0.2,
            "t = {t}: {left:?} {right:?}"
        );
        ahead.push(left.x > right.x);
    }
    // Half a cycle (1 s) apart, the other foot leads: right at 0 s, left at 0.5 s and 1 s,
    // right again at 1.5 s.
    assert_eq!(ahead, [false, true, true, false]);
}

#[test]
fn cesium_man_weights_are_normalised_with_one_warning() {
    let rig = Rig::load(&asset("CesiumMan.glb"), None).unwrap();
    assert_eq!(
        rig.warnings(),
        ["CesiumMan.glb: skin weights of 210 vertices did not sum to 1; normalised"]
    );
    for w in &rig.parts()[0].weights {
        assert_abs_diff_eq!(w.iter().sum::<f32>(), 1.0, epsilon = 1e-5);
    }
}

#[test]
fn cesium_man_rest_pose_is_the_bind_pose() {
    // Every joint's G · B is the root's Z-up → Y-up matrix: the rest pose is the bind pose (a
    // T-pose, arms along ±Z, 1.51 m tall).
    let rig = Rig::load(&asset("CesiumMan.glb"), None).unwrap();
    let g = rig.world_transforms(&rig.rest_pose());
    let skin = &rig.skins()[0];
    assert_eq!(skin.joints.len(), 19);
    for (&joint, ibm) in skin.joints.iter().zip(&skin.inverse_bind) {
        assert!((g[joint] * *ibm).abs_diff_eq(g[0], 1e-4), "joint {joint}");
    }
    let (lo, hi) = bounds(&rig.rest_mesh().positions).unwrap();
    assert_abs_diff_eq!(hi.y - lo.y, 1.5065, epsilon = 1e-3);
    assert_abs_diff_eq!(hi.z - lo.z, 1.138, epsilon = 1e-3);
}

#[test]
fn cesium_man_loop_wraps_and_clamp_holds() {
    let rig = Rig::load(&asset("CesiumMan.glb"), None).unwrap();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    rig.skin(&rig.sample(0, 0.7, Playback::Loop), &mut a);
    for t in [2.7, 4.7, -1.3] {
        rig.skin(&rig.sample(0, t, Playback::Loop), &mut b);
        assert!(max_distance(&a, &b) < 1e-5, "t = {t}");
    }
    rig.skin(&rig.sample(0, 2.0, Playback::Clamp), &mut a);
    rig.skin(&rig.sample(0, 7.0, Playback::Clamp), &mut b);
    assert_eq!(a, b);
    // Skinning reuses the output buffer.
    let ptr = b.as_ptr();
    rig.skin(&rig.sample(0, 0.1, Playback::Clamp), &mut b);
    assert_eq!(ptr, b.as_ptr());
}

#[test]
fn animations_are_found_by_name_or_index() {
    let fox = Rig::load(&asset("Fox.glb"), None).unwrap();
    let names: Vec<_> = fox.animations().iter().map(|a| a.name.clone()).collect();
    assert_eq!(
        names,
        [
            Some("Survey".into()),
            Some("Walk".into()),
            Some("Run".into())
        ]
    );
    assert_eq!(
        fox.find_animation(&AnimationRef::Name("Walk".into()))
            .unwrap(),
        1
    );
    assert_eq!(fox.find_animation(&AnimationRef::Index(2)).unwrap(), 2);
    let e = fox
        .find_animation(&AnimationRef::Name("Jump".into()))
        .unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("Fox.glb") && msg.contains("'Jump'") && msg.contains("#1 'Walk'"),
        "{msg}"
    );
    let man = Rig::load(&asset("CesiumMan.glb"), None).unwrap();
    let msg = man
        .find_animation(&AnimationRef::Index(3))
        .unwrap_err()
        .to_string();
    assert!(msg.contains("#3") && msg.contains("#0 (unnamed)"), "{msg}");
}

#[test]
fn rigs_can_be_shared_between_threads() {
    fn shared<T: Send + Sync + Clone>() {}
    shared::<Rig>();
    let rig = Rig::load(&asset("CesiumMan.glb"), None).unwrap();
    // The walk animates the 19 joints (node 2, the hips, is one); not the mesh node.
    let animated = rig.animated_nodes(0);
    assert_eq!(animated.len(), 19);
    assert!(!animated.contains(&1));
    assert!(rig.animated_nodes(1).is_empty());
}

#[test]
fn animation_refs_and_playback_round_trip_through_ron() {
    for r in [AnimationRef::Index(2), AnimationRef::Name("Walk".into())] {
        let text = ron::to_string(&r).unwrap();
        assert_eq!(ron::from_str::<AnimationRef>(&text).unwrap(), r);
    }
    assert_eq!(Playback::default(), Playback::Clamp);
    assert_eq!(ron::from_str::<Playback>("Loop").unwrap(), Playback::Loop);
}

// ---------------------------------------------------------------------------------------------
// A hand-built file: a 1 × 2 m strip on two joints, with a morph target, a rigid triangle and
// one animation of each interpolation.

/// Appends typed data to one buffer, one bufferView and accessor each.
#[derive(Default)]
struct Builder {
    bin: Vec<u8>,
    views: Vec<Value>,
    accessors: Vec<Value>,
}

impl Builder {
    fn add(&mut self, bytes: &[u8], component: u32, count: usize, ty: &str, extra: Value) -> usize {
        while self.bin.len() % 4 != 0 {
            self.bin.push(0);
        }
        self.views.push(json!({
            "buffer": 0, "byteOffset": self.bin.len(), "byteLength": bytes.len()
        }));
        self.bin.extend_from_slice(bytes);
        let mut acc = json!({
            "bufferView": self.views.len() - 1, "componentType": component,
            "count": count, "type": ty
        });
        if let (Some(a), Value::Object(e)) = (acc.as_object_mut(), extra) {
            a.extend(e);
        }
        self.accessors.push(acc);
        self.accessors.len() - 1
    }

    fn floats(&mut self, v: &[f32], ty: &str, per: usize) -> usize {
        let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
        let extra = if per <= 3 {
            let col = |c: usize| v.iter().skip(c).step_by(per).copied();
            let lo: Vec<f32> = (0..per).map(|c| col(c).fold(f32::MAX, f32::min)).collect();
            let hi: Vec<f32> = (0..per).map(|c| col(c).fold(f32::MIN, f32::max)).collect();
            json!({ "min": lo, "max": hi })
        } else {
            json!({})
        };
        self.add(&bytes, 5126, v.len() / per, ty, extra)
    }
}

/// Vertex positions of the strip: rows at y = 0, 1, 2 m.
const STRIP: [[f32; 3]; 6] = [
    [0.0, 0.0, 0.0],
    [1.0, 0.0, 0.0],
    [0.0, 1.0, 0.0],
    [1.0, 1.0, 0.0],
    [0.0, 2.0, 0.0],
    [1.0, 2.0, 0.0],
];

/// Writes the strip file; `weights` are the strip's WEIGHTS_0, `edit` may change the JSON.
fn strip_file(
    dir: &Path,
    name: &str,
    weights: [[f32; 4]; 6],
    edit: impl FnOnce(&mut Value),
) -> PathBuf {
    let mut b = Builder::default();
    let pos = b.floats(STRIP.as_flattened(), "VEC3", 3);
    // Bottom row on joint 0, middle row shared, top row on joint 1.
    let joints: [[u8; 4]; 6] = [
        [0, 1, 0, 0],
        [0, 1, 0, 0],
        [0, 1, 0, 0],
        [0, 1, 0, 0],
        [1, 0, 0, 0],
        [1, 0, 0, 0],
    ];
    let j = b.add(joints.as_flattened(), 5121, 6, "VEC4", json!({}));
    let w = b.floats(weights.as_flattened(), "VEC4", 4);
    let idx: Vec<u8> = [0u16, 1, 3, 0, 3, 2, 2, 3, 5, 2, 5, 4]
        .iter()
        .flat_map(|i| i.to_le_bytes())
        .collect();
    let ind = b.add(&idx, 5123, 12, "SCALAR", json!({}));
    let morph = b.floats(&[0.0, 0.0, 1.0].repeat(6), "VEC3", 3);
    let tri = b.floats(&[0.0, 0.0, 0.0, 0.1, 0.0, 0.0, 0.0, 0.1, 0.0], "VEC3", 3);
    let ibm = Mat4::from_translation(Vec3::new(0.0, -1.0, 0.0));
    let ibms: Vec<f32> = [Mat4::IDENTITY, ibm]
        .iter()
        .flat_map(|m| m.to_cols_array())
        .collect();
    let ibm = b.floats(&ibms, "MAT4", 16);
    let times = b.floats(&[0.0, 1.0], "SCALAR", 1);
    let backwards = b.floats(&[1.0, 0.5], "SCALAR", 1);
    let quarter = Quat::from_rotation_z(FRAC_PI_2).to_array();
    let rot = b.floats(&[[0.0, 0.0, 0.0, 1.0], quarter].concat(), "VEC4", 4);
    let wts = b.floats(&[0.0, 1.0], "SCALAR", 1);
    let step = b.floats(&[0.0, 0.0, 0.0, 0.0, 0.0, 2.0], "VEC3", 3);
    // CUBICSPLINE weights: (in, value, out) per key; out-tangent 2/s at key 0.
    let cubic = b.floats(&[0.0, 0.0, 2.0, 0.0, 1.0, 0.0], "SCALAR", 1);
    let mut root = json!({
        "asset": { "version": "2.0" },
        "scene": 0,
        "scenes": [ { "nodes": [0] } ],
        "nodes": [
            { "name": "root", "children": [3, 1] },
            { "name": "hip", "children": [2, 4] },
            { "name": "knee", "translation": [0.0, 1.0, 0.0] },
            // A skinned mesh's own node transform is ignored.
            { "name": "strip", "mesh": 0, "skin": 0, "translation": [5.0, 5.0, 5.0] },
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
                { "input": times, "output": wts },
                { "input": times, "output": step, "interpolation": "STEP" }
              ], "channels": [
                { "sampler": 0, "target": { "node": 2, "path": "rotation" } },
                { "sampler": 1, "target": { "node": 3, "path": "weights" } },
                { "sampler": 2, "target": { "node": 1, "path": "translation" } }
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
            "uri": format!("data:application/octet-stream;base64,{}", common::base64(&b.bin)) } ]
    });
    // For the error case: the index of an accessor with decreasing times.
    root["extras"] = json!({ "backwards": backwards });
    edit(&mut root);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(&root).unwrap()).unwrap();
    path
}

const GOOD_WEIGHTS: [[f32; 4]; 6] = [
    [1.0, 0.0, 0.0, 0.0],
    [1.0, 0.0, 0.0, 0.0],
    [0.5, 0.5, 0.0, 0.0],
    [0.5, 0.5, 0.0, 0.0],
    [1.0, 0.0, 0.0, 0.0],
    [1.0, 0.0, 0.0, 0.0],
];

#[test]
fn hand_built_rig_skins_morphs_and_moves_its_rigid_part() {
    let dir = tempfile::tempdir().unwrap();
    let path = strip_file(dir.path(), "strip.gltf", GOOD_WEIGHTS, |_| {});
    let rig = Rig::load(&path, None).unwrap();
    assert!(rig.warnings().is_empty(), "{:?}", rig.warnings());
    assert!(rig.is_animated());
    assert_eq!(rig.parts().len(), 2);
    assert_eq!(rig.vertex_count(), 9);
    assert_eq!(rig.parts()[1].vertices, 6..9);
    // Rest: the bind pose (G · B = I), the strip at its POSITIONs although its node is moved;
    // the badge at its node's translation.
    let rest = &rig.rest_mesh().positions;
    let strip: Vec<Vec3> = STRIP.iter().map(|p| Vec3::from(*p)).collect();
    assert!(max_distance(&rest[..6], &strip) < 1e-6);
    assert!((rest[7] - Vec3::new(2.1, 0.0, 0.0)).length() < 1e-6);
    assert_eq!(rig.rest_mesh().indices.len(), 4 + 1);

    // Halfway: the knee has turned 45° about +Z, the morph weight is 0.5 (+0.5 m along Z),
    // and the STEP translation still holds its first key.
    let pose = rig.sample(0, 0.5, Playback::Clamp);
    assert_abs_diff_eq!(pose.morph_weights(3)[0], 0.5, epsilon = 1e-6);
    let mut out = Vec::new();
    rig.skin(&pose, &mut out);
    let knee = Vec3::new(0.0, 1.0, 0.0);
    let turn = Quat::from_rotation_z(FRAC_PI_2 / 2.0);
    let lift = Vec3::new(0.0, 0.0, 0.5);
    for v in [0, 1] {
        assert!((out[v] - (strip[v] + lift)).length() < 1e-5, "vertex {v}");
    }
    for v in [4, 5] {
        let want = knee + turn * (strip[v] + lift - knee);
        assert!((out[v] - want).length() < 1e-5, "vertex {v}: {:?}", out[v]);
    }
    // The middle row blends half and half: the average of the two joints' images.
    let want = 0.5 * (strip[3] + lift) + 0.5 * (knee + turn * (strip[3] + lift - knee));
    assert!((out[3] - want).length() < 1e-5);
    // The rigid badge is not morphed and does not follow the knee.
    assert!((out[7] - Vec3::new(2.1, 0.0, 0.0)).length() < 1e-6);

    // At 1 s the STEP key (0, 0, 2) moves the hip, and with it both joints and the badge.
    let pose = rig.sample(0, 1.0, Playback::Clamp);
    rig.skin(&pose, &mut out);
    assert!((out[7] - Vec3::new(2.1, 0.0, 2.0)).length() < 1e-6);
    assert!((out[0] - Vec3::new(0.0, 0.0, 3.0)).length() < 1e-5);

    // CUBICSPLINE weights: v0 = 0, b0 = 2/s, v1 = 1, a1 = 0, Δ = 1 s; at u = 0.5:
    // 0.125·2 + 0.5·1 = 0.75.
    let pose = rig.sample(1, 0.5, Playback::Clamp);
    assert_abs_diff_eq!(pose.morph_weights(3)[0], 0.75, epsilon = 1e-6);

    // Blending the rest pose with the bent one halfway turns the knee by half as much.
    let bent = rig.sample(0, 1.0, Playback::Clamp);
    let half = Rig::blend(&rig.rest_pose(), &bent, 0.5);
    let (_, angle) = half.rotation(2).to_axis_angle();
    assert_abs_diff_eq!(angle, FRAC_PI_2 / 2.0, epsilon = 1e-5);
    assert_abs_diff_eq!(half.translation(1).z, 1.0, epsilon = 1e-6);
}

#[test]
fn only_the_named_mesh_is_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let path = strip_file(dir.path(), "named.gltf", GOOD_WEIGHTS, |_| {});
    let rig = Rig::load(&path, Some("badge")).unwrap();
    assert_eq!(rig.vertex_count(), 3);
    assert_eq!(rig.parts()[0].skin, None);
    let e = Rig::load(&path, Some("cape")).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("named.gltf") && msg.contains("'strip', 'badge'"),
        "{msg}"
    );
}

#[test]
fn a_node_matrix_is_decomposed_for_the_rest_pose() {
    let dir = tempfile::tempdir().unwrap();
    let path = strip_file(dir.path(), "matrix.gltf", GOOD_WEIGHTS, |r| {
        let m = Mat4::from_scale_rotation_translation(
            Vec3::splat(2.0),
            Quat::from_rotation_x(0.5),
            Vec3::new(0.0, 1.0, 0.0),
        );
        r["nodes"][2] = json!({ "name": "knee", "matrix": m.to_cols_array() });
    });
    let rig = Rig::load(&path, None).unwrap();
    let knee = &rig.nodes()[2];
    assert!((knee.translation - Vec3::new(0.0, 1.0, 0.0)).length() < 1e-6);
    assert!((knee.scale - Vec3::splat(2.0)).length() < 1e-5);
    assert!(knee.rotation.abs_diff_eq(Quat::from_rotation_x(0.5), 1e-5));
    assert!(rig.warnings().is_empty(), "{:?}", rig.warnings());
}

#[test]
fn unnormalised_and_empty_weights_are_repaired_with_warnings() {
    let dir = tempfile::tempdir().unwrap();
    let mut weights = GOOD_WEIGHTS;
    weights[2] = [0.25, 0.25, 0.0, 0.0];
    weights[3] = [2.0, 2.0, 0.0, 0.0];
    weights[5] = [0.0; 4];
    let path = strip_file(dir.path(), "weights.gltf", weights, |_| {});
    let rig = Rig::load(&path, None).unwrap();
    assert_eq!(
        rig.warnings(),
        [
            "weights.gltf: skin weights of 2 vertices did not sum to 1; normalised",
            "weights.gltf: 1 vertices have no skin weight; each is bound fully to its first joint"
        ]
    );
    let w = &rig.parts()[0].weights;
    assert_eq!(w[2], [0.5, 0.5, 0.0, 0.0]);
    assert_eq!(w[3], [0.5, 0.5, 0.0, 0.0]);
    assert_eq!(w[5], [1.0, 0.0, 0.0, 0.0]);
}

#[test]
fn broken_files_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    // JOINTS_0 names joint 1, but the skin now has only one joint.
    let path = strip_file(dir.path(), "one_joint.gltf", GOOD_WEIGHTS, |r| {
        r["skins"][0]["joints"] = json!([1]);
    });
    let e = Rig::load(&path, None).unwrap_err();
    assert!(
        matches!(
            e,
            BodyError::JointOutOfRange {
                joint: 1,
                joints: 1,
                ..
            }
        ),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("one_joint.gltf") && msg.contains("joint 1"),
        "{msg}"
    );

    // A sampler whose key times go backwards.
    let path = strip_file(dir.path(), "backwards.gltf", GOOD_WEIGHTS, |r| {
        r["animations"][0]["samplers"][1]["input"] = r["extras"]["backwards"].clone();
    });
    let e = Rig::load(&path, None).unwrap_err();
    assert!(
        matches!(e, BodyError::BadSampler { sampler: 1, .. }),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.contains("backwards.gltf")
            && msg.contains("'bend'")
            && msg.contains("strictly increasing"),
        "{msg}"
    );

    // More output values than the keys need.
    let path = strip_file(dir.path(), "wrong_output.gltf", GOOD_WEIGHTS, |r| {
        // The LINEAR weights sampler gets the 6 values of the CUBICSPLINE one.
        r["animations"][0]["samplers"][1]["output"] =
            r["animations"][1]["samplers"][0]["output"].clone();
    });
    let msg = Rig::load(&path, None).unwrap_err().to_string();
    assert!(
        msg.contains("wrong_output.gltf")
            && msg.contains("animation #0 'bend'")
            && msg.contains("need 2 output values, but the output has 6"),
        "{msg}"
    );

    // A skinned primitive without weights.
    let path = strip_file(dir.path(), "no_weights.gltf", GOOD_WEIGHTS, |r| {
        r["meshes"][0]["primitives"][0]["attributes"]
            .as_object_mut()
            .unwrap()
            .remove("WEIGHTS_0");
    });
    let msg = Rig::load(&path, None).unwrap_err().to_string();
    assert!(
        msg.contains("no_weights.gltf") && msg.contains("no WEIGHTS_0"),
        "{msg}"
    );

    // A missing file.
    let missing = dir.path().join("nowhere.glb");
    let e = Rig::load(&missing, None).unwrap_err();
    assert!(matches!(e, BodyError::Gltf(_)), "{e:?}");
    assert!(e.to_string().contains("nowhere.glb"), "{e}");
}
