//! glTF export and import through the public API: the bake's morph targets and STEP animation
//! read back with the `gltf` crate, static round trips, damaged files, and the Khronos
//! glTF-Validator.

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use approx::assert_abs_diff_eq;
use drape::io::{
    inspect, load_mesh, load_meshes, write_bake_glb, write_static_glb, BakeExport, BodyExport,
    GltfImportError,
};
use drape::math::{Vec2, Vec3};
use drape::mesh::Mesh;
use serde_json::{json, Value};

const FPS: f32 = 24.0;
const FRAMES: usize = 12;

/// A 10 × 10-vertex garment panel in the XZ plane at 1.5 m, with UVs.
fn garment() -> Mesh {
    let n = 10;
    let mut positions = Vec::new();
    let mut uvs = Vec::new();
    for j in 0..n {
        for i in 0..n {
            positions.push(Vec3::new(i as f32 * 0.05, 1.5, j as f32 * 0.05));
            uvs.push(Vec2::new(i as f32 / 9.0, j as f32 / 9.0));
        }
    }
    let mut indices = Vec::new();
    for j in 0..n - 1 {
        for i in 0..n - 1 {
            let a = (j * n + i) as u32;
            let (b, c, d) = (a + 1, a + n as u32, a + n as u32 + 1);
            indices.push([a, c, b]);
            indices.push([b, c, d]);
        }
    }
    let mut m = Mesh::new("garment", positions, indices);
    m.uvs = Some(uvs);
    m
}

/// A closed octahedron of radius 0.3 m around (0, 1, 0), outward-facing.
fn body() -> Mesh {
    let c = Vec3::new(0.0, 1.0, 0.0);
    let r = 0.3;
    let positions = vec![
        c + Vec3::X * r,
        c - Vec3::X * r,
        c + Vec3::Y * r,
        c - Vec3::Y * r,
        c + Vec3::Z * r,
        c - Vec3::Z * r,
    ];
    let mut indices = Vec::new();
    for (sx, x) in [(1, 0u32), (-1, 1)] {
        for (sy, y) in [(1, 2u32), (-1, 3)] {
            for (sz, z) in [(1, 4u32), (-1, 5)] {
                // Outward for (+,+,+); each negative sign mirrors, flipping the winding.
                if sx * sy * sz > 0 {
                    indices.push([x, y, z]);
                } else {
                    indices.push([x, z, y]);
                }
            }
        }
    }
    Mesh::new("body", positions, indices)
}

/// `FRAMES` deformations of the garment: a falling, waving sheet.
fn frames(g: &Mesh) -> Vec<Vec<Vec3>> {
    (0..FRAMES)
        .map(|k| {
            g.positions
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let phase = k as f32 * 0.5 + i as f32 * 0.3;
                    *p + Vec3::new(
                        0.01 * phase.sin(),
                        -0.02 * k as f32 + 0.03 * (p.x * 7.0 + k as f32).sin(),
                        0.01 * phase.cos(),
                    )
                })
                .collect()
        })
        .collect()
}

fn write_bake(dir: &Path) -> (PathBuf, Mesh, Vec<Vec<Vec3>>) {
    let g = garment();
    let b = body();
    let f = frames(&g);
    let path = dir.join("bake.glb");
    write_bake_glb(
        &path,
        &BakeExport {
            garment: &g,
            frames: &f,
            fps: FPS,
            body: Some(BodyExport::Static(&b)),
        },
    )
    .unwrap();
    (path, g, f)
}

#[test]
fn bake_morph_targets_reproduce_frames_and_animation_steps_through_them() {
    let dir = tempfile::tempdir().unwrap();
    let (path, g, f) = write_bake(dir.path());
    let (doc, buffers) = common::read_glb(&path);
    let data = |b: gltf::Buffer| Some(&buffers[b.index()][..]);

    assert_eq!(doc.meshes().count(), 2);
    let mesh = doc.meshes().find(|m| m.name() == Some("garment")).unwrap();
    assert_eq!(mesh.weights().unwrap(), &vec![0.0; FRAMES][..]);
    let extras: Value = serde_json::from_str(mesh.extras().as_ref().unwrap().get()).unwrap();
    let names: Vec<String> = (0..FRAMES).map(|k| format!("frame_{k:04}")).collect();
    assert_eq!(extras["targetNames"], json!(names));

    let prim = mesh.primitives().next().unwrap();
    let reader = prim.reader(data);
    let base: Vec<[f32; 3]> = reader.read_positions().unwrap().collect();
    assert_eq!(base.len(), g.positions.len());
    for (b, p) in base.iter().zip(&g.positions) {
        assert_eq!(Vec3::from_array(*b), *p);
    }
    let normals: Vec<[f32; 3]> = reader.read_normals().unwrap().collect();
    assert_eq!(normals.len(), base.len());
    let uvs: Vec<[f32; 2]> = reader.read_tex_coords(0).unwrap().into_f32().collect();
    assert_eq!(uvs[11], [1.0 / 9.0, 1.0 / 9.0]);

    let targets: Vec<_> = reader.read_morph_targets().collect();
    assert_eq!(targets.len(), FRAMES);
    for (k, (dx, dn, _)) in targets.into_iter().enumerate() {
        let dx: Vec<[f32; 3]> = dx.unwrap().collect();
        let frame_normals = g.vertex_normals_for(&f[k]);
        let base_normals = g.vertex_normals_for(&g.positions);
        for (i, (d, nd)) in dx.iter().zip(dn.unwrap()).enumerate() {
            let x = Vec3::from_array(base[i]) + Vec3::from_array(*d);
            assert_abs_diff_eq!(x.x, f[k][i].x, epsilon = 1e-5);
            assert_abs_diff_eq!(x.y, f[k][i].y, epsilon = 1e-5);
            assert_abs_diff_eq!(x.z, f[k][i].z, epsilon = 1e-5);
            let n = Vec3::from_array(normals[i]) + Vec3::from_array(nd);
            assert!((n - frame_normals[i]).length() < 1e-5);
            assert!((Vec3::from_array(normals[i]) - base_normals[i]).length() < 1e-6);
        }
    }

    let anims: Vec<_> = doc.animations().collect();
    assert_eq!(anims.len(), 1);
    let anim = &anims[0];
    assert_eq!(anim.samplers().count(), 1);
    let channels: Vec<_> = anim.channels().collect();
    assert_eq!(channels.len(), 1);
    let ch = &channels[0];
    assert_eq!(
        ch.target().property(),
        gltf::animation::Property::MorphTargetWeights
    );
    assert_eq!(ch.target().node().mesh().unwrap().index(), mesh.index());
    assert_eq!(
        ch.sampler().interpolation(),
        gltf::animation::Interpolation::Step
    );
    let r = ch.reader(data);
    let times: Vec<f32> = r.read_inputs().unwrap().collect();
    assert_eq!(times.len(), FRAMES);
    for (k, t) in times.iter().enumerate() {
        assert_abs_diff_eq!(*t, k as f32 / FPS, epsilon = 1e-6);
    }
    let weights: Vec<f32> = match r.read_outputs().unwrap() {
        gltf::animation::util::ReadOutputs::MorphTargetWeights(w) => w.into_f32().collect(),
        _ => panic!("the animation must drive morph target weights"),
    };
    assert_eq!(weights.len(), FRAMES * FRAMES);
    for k in 0..FRAMES {
        for t in 0..FRAMES {
            let expected = if t == k { 1.0 } else { 0.0 };
            assert_eq!(weights[k * FRAMES + t], expected, "key {k}, target {t}");
        }
    }

    // The body is there, static, with normals.
    let body_mesh = doc.meshes().find(|m| m.name() == Some("body")).unwrap();
    let bp = body_mesh.primitives().next().unwrap();
    assert!(bp.get(&gltf::Semantic::Normals).is_some());
    assert_eq!(bp.morph_targets().count(), 0);
}

#[test]
fn static_glb_round_trips_through_load_mesh() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("scene.glb");
    let (g, b) = (garment(), body());
    write_static_glb(&path, &[&g, &b]).unwrap();

    let meshes = load_meshes(&path).unwrap();
    assert_eq!(meshes.len(), 2);
    assert_eq!(meshes[0].name, "garment");
    assert_eq!(meshes[1].name, "body");

    let g2 = load_mesh(&path, Some("garment")).unwrap();
    assert_eq!(g2.positions, g.positions);
    assert_eq!(g2.indices, g.indices);
    assert_eq!(g2.uvs, g.uvs);
    let normals = g2.normals.unwrap();
    for (a, b) in normals.iter().zip(g.vertex_normals_for(&g.positions)) {
        assert!((*a - b).length() < 1e-6);
    }
    let b2 = load_mesh(&path, Some("body")).unwrap();
    assert_eq!(b2.positions, b.positions);
    assert!(b2.signed_volume() > 0.0);
    assert!(b2.uvs.is_none());

    // Without a name, a file of two meshes is ambiguous, and the error lists both.
    let e = load_mesh(&path, None).unwrap_err();
    assert!(matches!(e, GltfImportError::SeveralMeshes { .. }));
    let msg = e.to_string();
    assert!(msg.contains("scene.glb") && msg.contains("'garment'") && msg.contains("'body'"));

    let single = dir.path().join("single.glb");
    write_static_glb(&single, &[&b]).unwrap();
    assert_eq!(load_mesh(&single, None).unwrap().name, "body");
}

#[test]
fn missing_mesh_name_lists_the_available_ones() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("named.glb");
    write_static_glb(&path, &[&garment(), &body()]).unwrap();
    let e = load_mesh(&path, Some("shirt")).unwrap_err();
    assert!(matches!(e, GltfImportError::MeshNotFound { .. }));
    let msg = e.to_string();
    assert!(msg.contains("named.glb"), "{msg}");
    assert!(msg.contains("'shirt'") && msg.contains("'garment'") && msg.contains("'body'"));
}

#[test]
fn inspect_reports_meshes_morph_targets_and_animation() {
    let dir = tempfile::tempdir().unwrap();
    let (path, g, _) = write_bake(dir.path());
    let report = inspect(&path).unwrap();
    assert_eq!(report.nodes, 2);
    assert_eq!(report.meshes.len(), 2);
    let m = &report.meshes[0];
    assert_eq!(m.name, "garment");
    assert_eq!(m.vertices, g.positions.len());
    assert_eq!(m.triangles, g.indices.len());
    assert_eq!(m.morph_targets, FRAMES);
    assert_eq!(report.meshes[1].morph_targets, 0);
    assert!(report.skins.is_empty());
    assert_eq!(report.animations.len(), 1);
    assert_eq!(report.animations[0].channels, 1);
    assert_abs_diff_eq!(
        report.animations[0].duration_s,
        (FRAMES - 1) as f32 / FPS,
        epsilon = 1e-6
    );
    let text = report.to_string();
    assert!(text.contains("bake.glb"));
    assert!(text.contains("'garment': 100 vertices, 162 triangles, 12 morph targets"));
    assert!(text.contains("0.458 s"), "{text}");
}

/// Writes a `.gltf` with one embedded buffer: a triangle mesh `tri` with positions, normals and
/// 16-bit indices, placed by `nodes` (node 0 is the scene root). `edit` may damage the JSON.
fn embedded_gltf(
    dir: &Path,
    file: &str,
    positions: &[[f32; 3]],
    normals: &[[f32; 3]],
    indices: &[u16],
    nodes: Value,
    edit: impl FnOnce(&mut Value),
) -> PathBuf {
    let mut bin = Vec::new();
    for v in positions.iter().chain(normals).flatten() {
        bin.extend_from_slice(&v.to_le_bytes());
    }
    let index_offset = bin.len();
    for i in indices {
        bin.extend_from_slice(&i.to_le_bytes());
    }
    while bin.len() % 4 != 0 {
        bin.push(0);
    }
    let n = positions.len();
    let (mut lo, mut hi) = ([f32::MAX; 3], [f32::MIN; 3]);
    for p in positions {
        for c in 0..3 {
            lo[c] = lo[c].min(p[c]);
            hi[c] = hi[c].max(p[c]);
        }
    }
    let mut root = json!({
        "asset": { "version": "2.0" },
        "scene": 0,
        "scenes": [ { "nodes": [0] } ],
        "nodes": nodes,
        "meshes": [ { "name": "tri", "primitives": [ {
            "attributes": { "POSITION": 0, "NORMAL": 1 }, "indices": 2
        } ] } ],
        "accessors": [
            { "bufferView": 0, "componentType": 5126, "count": n, "type": "VEC3",
              "min": lo, "max": hi },
            { "bufferView": 0, "byteOffset": n * 12, "componentType": 5126, "count": n,
              "type": "VEC3" },
            { "bufferView": 1, "componentType": 5123, "count": indices.len(), "type": "SCALAR" }
        ],
        "bufferViews": [
            { "buffer": 0, "byteLength": index_offset, "target": 34962 },
            { "buffer": 0, "byteOffset": index_offset, "byteLength": indices.len() * 2,
              "target": 34963 }
        ],
        "buffers": [ { "byteLength": bin.len(),
            "uri": format!("data:application/octet-stream;base64,{}", common::base64(&bin)) } ]
    });
    edit(&mut root);
    let path = dir.join(file);
    fs::write(&path, serde_json::to_vec_pretty(&root).unwrap()).unwrap();
    path
}

const TRI: [[f32; 3]; 3] = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]];
const TRI_N: [[f32; 3]; 3] = [[0.0, 0.0, 1.0]; 3];

#[test]
fn node_transforms_apply_to_positions_and_normals() {
    let dir = tempfile::tempdir().unwrap();
    let h = std::f32::consts::FRAC_1_SQRT_2;
    // Parent: translate (1, 2, 3) after a 90° turn about +Y; child: scale x by 2.
    let nodes = json!([
        { "name": "root", "translation": [1.0, 2.0, 3.0], "rotation": [0.0, h, 0.0, h],
          "children": [1] },
        { "name": "leaf", "scale": [2.0, 1.0, 1.0], "mesh": 0 }
    ]);
    let path = embedded_gltf(
        dir.path(),
        "xf.gltf",
        &TRI,
        &TRI_N,
        &[0, 1, 2],
        nodes,
        |_| {},
    );
    let m = load_mesh(&path, None).unwrap();
    assert_eq!(m.name, "tri");
    // (1,0,0) → scale (2,0,0) → turn (0,0,−2) → translate (1,2,1).
    assert!((m.positions[1] - Vec3::new(1.0, 2.0, 1.0)).length() < 1e-5);
    assert!((m.positions[2] - Vec3::new(1.0, 3.0, 3.0)).length() < 1e-5);
    // n = (0,0,1): the inverse transpose R·S⁻¹ gives (1,0,0).
    for n in m.normals.as_ref().unwrap() {
        assert!((*n - Vec3::X).length() < 1e-5, "{n:?}");
    }

    // A mirroring scale reverses the winding so the face still points along its normal.
    let nodes = json!([{ "scale": [-1.0, 1.0, 1.0], "mesh": 0 }]);
    let path = embedded_gltf(
        dir.path(),
        "mirror.gltf",
        &TRI,
        &TRI_N,
        &[0, 1, 2],
        nodes,
        |_| {},
    );
    let m = load_mesh(&path, Some("tri")).unwrap();
    let [a, b, c] = m.indices[0].map(|i| m.positions[i as usize]);
    let face = (b - a).cross(c - a).normalize();
    assert!((face - m.normals.as_ref().unwrap()[0]).length() < 1e-5);
    assert!((face - Vec3::Z).length() < 1e-5);
}

#[test]
fn out_of_range_index_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let nodes = json!([{ "mesh": 0 }]);
    let path = embedded_gltf(
        dir.path(),
        "badindex.gltf",
        &TRI,
        &TRI_N,
        &[0, 1, 5],
        nodes,
        |_| {},
    );
    for result in [
        load_mesh(&path, None).map(|_| ()),
        load_meshes(&path).map(|_| ()),
    ] {
        let e = result.unwrap_err();
        assert!(matches!(e, GltfImportError::InvalidMesh { .. }), "{e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains("badindex.gltf") && msg.contains("vertex 5"),
            "{msg}"
        );
    }
}

#[test]
fn damaged_accessors_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    type Edit = fn(&mut Value);
    let cases: Vec<(&str, Edit)> = vec![
        ("zero_count.gltf", |r| r["accessors"][2]["count"] = json!(0)),
        ("huge_count.gltf", |r| {
            r["accessors"][0]["count"] = json!(4_000_000_000u64)
        }),
        ("short_stride.gltf", |r| {
            r["bufferViews"][0]["byteStride"] = json!(4)
        }),
        ("far_offset.gltf", |r| {
            r["accessors"][1]["byteOffset"] = json!(1_000_000)
        }),
        ("view_past_buffer.gltf", |r| {
            r["bufferViews"][1]["byteOffset"] = json!(1 << 20)
        }),
        ("long_buffer.gltf", |r| {
            r["buffers"][0]["byteLength"] = json!(1 << 30)
        }),
        ("byte_positions.gltf", |r| {
            r["accessors"][0]["componentType"] = json!(5121)
        }),
        ("float_indices.gltf", |r| {
            r["accessors"][2]["componentType"] = json!(5126)
        }),
        ("vec2_normals.gltf", |r| {
            r["accessors"][1]["type"] = json!("VEC2")
        }),
        ("no_position.gltf", |r| {
            r["meshes"][0]["primitives"][0]["attributes"]
                .as_object_mut()
                .unwrap()
                .remove("POSITION");
        }),
        ("bad_mesh_ref.gltf", |r| r["nodes"][0]["mesh"] = json!(7)),
        ("node_cycle.gltf", |r| {
            r["nodes"][0]["children"] = json!([0])
        }),
        ("sparse_out_of_range.gltf", |r| {
            r["accessors"][0]["sparse"] = json!({
                "count": 1,
                "indices": { "bufferView": 1, "componentType": 5123 },
                "values": { "bufferView": 0 }
            });
            // Index 5 (the third index) into a 3-vertex accessor.
        }),
        ("bad_uri.gltf", |r| {
            r["buffers"][0]["uri"] = json!("%FF%FE.bin")
        }),
        ("missing_file.gltf", |r| {
            r["buffers"][0]["uri"] = json!("nowhere.bin")
        }),
        ("bad_base64.gltf", |r| {
            r["buffers"][0]["uri"] = json!("data:application/octet-stream;base64,@@@@")
        }),
    ];
    for (file, edit) in cases {
        let indices: &[u16] = if file.starts_with("sparse") {
            &[5, 1, 2]
        } else {
            &[0, 1, 2]
        };
        let nodes = json!([{ "mesh": 0 }]);
        let path = embedded_gltf(dir.path(), file, &TRI, &TRI_N, indices, nodes, edit);
        let e = load_meshes(&path).expect_err(file);
        assert!(e.to_string().contains(file), "{file}: {e}");
        // `inspect` must not panic either (it reads less, so it may succeed).
        let _ = inspect(&path);
    }
}

#[test]
fn truncated_and_garbage_files_are_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _, _) = write_bake(dir.path());
    let bytes = fs::read(&path).unwrap();

    let half = dir.path().join("half.glb");
    fs::write(&half, &bytes[..bytes.len() / 2]).unwrap();
    for e in [
        load_mesh(&half, Some("garment")).map(|_| ()).unwrap_err(),
        inspect(&half).map(|_| ()).unwrap_err(),
    ] {
        assert!(matches!(e, GltfImportError::Malformed { .. }), "{e:?}");
        assert!(e.to_string().contains("half.glb"), "{e}");
    }

    // Every cut is an error, never a panic.
    let cut = dir.path().join("cut.glb");
    let step = bytes.len() / 97 + 1;
    for len in (0..bytes.len()).step_by(step).chain(0..40) {
        fs::write(&cut, &bytes[..len]).unwrap();
        let e = load_meshes(&cut).unwrap_err();
        assert!(e.to_string().contains("cut.glb"), "{len}: {e}");
        assert!(inspect(&cut).is_err());
    }

    // Damaged bytes anywhere: errors or (for damage in vertex data) a mesh, never a panic.
    let damaged = dir.path().join("damaged.glb");
    let mut state = 0x2545_f491_u32;
    for _ in 0..200 {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let mut b = bytes.clone();
        let at = state as usize % b.len();
        b[at] ^= (state >> 24) as u8 | 1;
        fs::write(&damaged, &b).unwrap();
        if let Err(e) = load_meshes(&damaged) {
            assert!(e.to_string().contains("damaged.glb"), "{e}");
        }
        let _ = inspect(&damaged);
    }

    // Lying GLB headers.
    let lying = dir.path().join("lying.glb");
    let mut header = b"glTF".to_vec();
    header.extend_from_slice(&2u32.to_le_bytes());
    header.extend_from_slice(&4u32.to_le_bytes());
    fs::write(&lying, &header).unwrap();
    assert!(load_meshes(&lying)
        .unwrap_err()
        .to_string()
        .contains("lying.glb"));
    let mut header = b"glTF".to_vec();
    header.extend_from_slice(&2u32.to_le_bytes());
    header.extend_from_slice(&u32::MAX.to_le_bytes());
    header.extend_from_slice(&u32::MAX.to_le_bytes());
    header.extend_from_slice(b"JSON");
    fs::write(&lying, &header).unwrap();
    assert!(load_meshes(&lying)
        .unwrap_err()
        .to_string()
        .contains("lying.glb"));

    let garbage = dir.path().join("garbage.glb");
    let noise: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    fs::write(&garbage, &noise).unwrap();
    let e = load_meshes(&garbage).unwrap_err();
    assert!(matches!(e, GltfImportError::Malformed { .. }));
    assert!(e.to_string().contains("garbage.glb"), "{e}");
    fs::write(&garbage, b"").unwrap();
    assert!(load_meshes(&garbage)
        .unwrap_err()
        .to_string()
        .contains("garbage.glb"));
    fs::write(&garbage, br#"{"asset": {"version": "2.0"}, "meshes": [ {"#).unwrap();
    assert!(load_meshes(&garbage)
        .unwrap_err()
        .to_string()
        .contains("garbage.glb"));

    let missing = dir.path().join("missing.glb");
    let e = load_meshes(&missing).unwrap_err();
    assert!(matches!(e, GltfImportError::Read { .. }));
    assert!(e.to_string().contains("missing.glb"));
}

#[test]
fn exported_files_pass_the_khronos_validator() {
    let dir = tempfile::tempdir().unwrap();
    let (bake, _, _) = write_bake(dir.path());
    let scene = dir.path().join("static.glb");
    write_static_glb(&scene, &[&garment(), &body()]).unwrap();
    for path in [&bake, &scene] {
        let report = common::validate_gltf(path);
        println!(
            "{}: {} errors, {} warnings, {} infos",
            path.display(),
            report.errors,
            report.warnings,
            report.infos
        );
        for m in &report.messages {
            println!("  {m}");
        }
        assert_eq!(report.errors, 0, "{:#?}", report.messages);
    }
}
