//! Hostile and broken glTF files (issue 9, "Hostile glTF" and "Clear failures"): each malformed
//! case, read as a garment ([`load_mesh`]) and as a body ([`Rig::load`]), is an error, never a
//! panic, whose message names the file and the buffer or accessor at fault; each repairable one
//! loads with a warning. Every case runs under a counting global allocator, and the largest
//! single allocation it asks for must stay under [`ALLOCATION_LIMIT`].
//!
//! The files are built here from a valid hand-written skinned quad (JSON plus a binary buffer),
//! which [`the_valid_quad_loads_every_way`] loads, then damaged one fault at a time.

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use base64::Engine as _;
use drape::body::Rig;
use drape::io::gltf_import::load_mesh_with_warnings;
use drape::io::load_mesh;
use drape::math::Vec3;
use serde_json::{json, Value};

/// The largest single allocation a malformed file may cause (64 MiB).
const ALLOCATION_LIMIT: usize = 64 << 20;

/// Records the largest single allocation (or reallocation) asked for since the last reset.
struct Counting;

static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is forwarded unchanged to the system allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The tests of this file share [`LARGEST`], so they run one at a time.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `f`, asserting that no single allocation it asks for reaches [`ALLOCATION_LIMIT`].
fn watched<T>(what: &str, f: impl FnOnce() -> T) -> T {
    LARGEST.store(0, Ordering::SeqCst);
    let out = f();
    let largest = LARGEST.load(Ordering::SeqCst);
    assert!(
        largest < ALLOCATION_LIMIT,
        "{what}: an allocation of {largest} bytes (limit {ALLOCATION_LIMIT})"
    );
    out
}

/// Loads `path` as a garment and as a body; both must fail with a message naming the file
/// and containing every one of `says`.
fn refused(path: &Path, says: &[&str]) {
    let file = path.file_name().unwrap().to_str().unwrap();
    let garment = watched(file, || load_mesh(path, None).map(|_| ()));
    let body = watched(file, || Rig::load(path, None).map(|_| ()));
    for (loader, result) in [
        ("load_mesh", garment.map_err(|e| e.to_string())),
        ("Rig::load", body.map_err(|e| e.to_string())),
    ] {
        let msg = match result {
            Ok(()) => panic!("{loader} accepted {file}"),
            Err(msg) => msg,
        };
        assert!(msg.contains(file), "{loader}: no file name in: {msg}");
        for s in says {
            assert!(msg.contains(s), "{loader}: no '{s}' in: {msg}");
        }
    }
}

const POSITIONS: [[f32; 3]; 4] = [
    [0.0, 0.0, 0.0],
    [1.0, 0.0, 0.0],
    [0.0, 1.0, 0.0],
    [1.0, 1.0, 0.0],
];
const NORMALS: [[f32; 3]; 4] = [[0.0, 0.0, 1.0]; 4];
const WEIGHTS: [[f32; 4]; 4] = [[1.0, 0.0, 0.0, 0.0]; 4];
const INDICES: [u16; 6] = [0, 1, 2, 2, 1, 3];

/// A skinned quad: accessors 0 POSITION, 1 NORMAL, 2 JOINTS_0, 3 WEIGHTS_0, 4 indices, each
/// in its own bufferView of buffer 0 (188 bytes); two joints, nodes 0 and 1; mesh 'quad'.
struct Quad {
    json: Value,
    bin: Vec<u8>,
}

impl Quad {
    fn new(positions: [[f32; 3]; 4], normals: [[f32; 3]; 4], weights: [[f32; 4]; 4]) -> Self {
        let mut bin = Vec::new();
        let floats = |bin: &mut Vec<u8>, v: &[f32]| {
            bin.extend(v.iter().flat_map(|x| x.to_le_bytes()));
        };
        floats(&mut bin, positions.as_flattened());
        floats(&mut bin, normals.as_flattened());
        bin.extend([0u8, 1, 0, 0].repeat(4));
        floats(&mut bin, weights.as_flattened());
        bin.extend(INDICES.iter().flat_map(|i| i.to_le_bytes()));
        bin.resize(188, 0);
        let json = json!({
            "asset": { "version": "2.0" },
            "scene": 0,
            "scenes": [ { "nodes": [0, 2] } ],
            "nodes": [
                { "name": "hips", "children": [1] },
                { "name": "spine", "translation": [0.0, 0.5, 0.0] },
                { "name": "quad", "mesh": 0, "skin": 0 }
            ],
            "skins": [ { "joints": [0, 1] } ],
            "meshes": [ { "name": "quad", "primitives": [ {
                "attributes": { "POSITION": 0, "NORMAL": 1, "JOINTS_0": 2, "WEIGHTS_0": 3 },
                "indices": 4
            } ] } ],
            "accessors": [
                { "bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3",
                  "min": [0.0, 0.0, 0.0], "max": [1.0, 1.0, 0.0] },
                { "bufferView": 1, "componentType": 5126, "count": 4, "type": "VEC3" },
                { "bufferView": 2, "componentType": 5121, "count": 4, "type": "VEC4" },
                { "bufferView": 3, "componentType": 5126, "count": 4, "type": "VEC4" },
                { "bufferView": 4, "componentType": 5123, "count": 6, "type": "SCALAR" }
            ],
            "bufferViews": [
                { "buffer": 0, "byteOffset": 0, "byteLength": 48 },
                { "buffer": 0, "byteOffset": 48, "byteLength": 48 },
                { "buffer": 0, "byteOffset": 96, "byteLength": 16 },
                { "buffer": 0, "byteOffset": 112, "byteLength": 64 },
                { "buffer": 0, "byteOffset": 176, "byteLength": 12 }
            ],
            "buffers": [ { "byteLength": 188, "uri": "quad.bin" } ]
        });
        Self { json, bin }
    }

    fn valid() -> Self {
        Self::new(POSITIONS, NORMALS, WEIGHTS)
    }

    /// Writes `name` with its buffer in `quad.bin` beside it (or wherever the URI says).
    fn write_gltf(&self, dir: &Path, name: &str) -> PathBuf {
        std::fs::write(dir.join("quad.bin"), &self.bin).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, serde_json::to_vec_pretty(&self.json).unwrap()).unwrap();
        path
    }

    /// Writes `name` with its buffer embedded as a base64 `data:` URI.
    fn write_embedded(&self, dir: &Path, name: &str) -> PathBuf {
        let mut json = self.json.clone();
        json["buffers"][0]["uri"] = json!(format!(
            "data:application/octet-stream;base64,{}",
            base64::engine::general_purpose::STANDARD.encode(&self.bin)
        ));
        let path = dir.join(name);
        std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
        path
    }

    /// The binary glTF bytes: header, JSON chunk, BIN chunk.
    fn glb(&self) -> Vec<u8> {
        let mut json = self.json.clone();
        json["buffers"][0].as_object_mut().unwrap().remove("uri");
        let mut text = serde_json::to_vec(&json).unwrap();
        while text.len() % 4 != 0 {
            text.push(b' ');
        }
        let mut out = b"glTF".to_vec();
        out.extend(2u32.to_le_bytes());
        out.extend(((12 + 8 + text.len() + 8 + self.bin.len()) as u32).to_le_bytes());
        out.extend((text.len() as u32).to_le_bytes());
        out.extend(b"JSON");
        out.extend(text);
        out.extend((self.bin.len() as u32).to_le_bytes());
        out.extend(b"BIN\0");
        out.extend(&self.bin);
        out
    }
}

#[test]
fn the_valid_quad_loads_every_way() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let quad = Quad::valid();
    let glb = dir.path().join("quad.glb");
    std::fs::write(&glb, quad.glb()).unwrap();
    for path in [
        quad.write_gltf(dir.path(), "quad.gltf"),
        quad.write_embedded(dir.path(), "embedded.gltf"),
        glb,
    ] {
        let (mesh, warnings) = watched("valid", || load_mesh_with_warnings(&path, None)).unwrap();
        assert_eq!((mesh.vertex_count(), mesh.indices.len()), (4, 2));
        assert!(warnings.is_empty(), "{warnings:?}");
        let rig = watched("valid", || Rig::load(&path, None)).unwrap();
        assert_eq!(rig.vertex_count(), 4);
        assert!(rig.warnings().is_empty(), "{:?}", rig.warnings());
    }
}

#[test]
fn the_allocation_watch_sees_a_large_allocation() {
    let _serial = serial();
    LARGEST.store(0, Ordering::SeqCst);
    let big: Vec<u8> = Vec::with_capacity(ALLOCATION_LIMIT);
    assert!(LARGEST.load(Ordering::SeqCst) >= ALLOCATION_LIMIT);
    drop(big);
}

#[test]
fn a_parent_dir_uri_is_refused() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let asset = dir.path().join("asset");
    std::fs::create_dir_all(asset.join("sub")).unwrap();
    let mut quad = Quad::valid();
    // The bytes are there, one folder up: a file must still not reach them.
    std::fs::write(dir.path().join("outside.bin"), &quad.bin).unwrap();
    for uri in [
        "../outside.bin",
        "sub/../../outside.bin",
        "..%2Foutside.bin",
        "..\\outside.bin",
        "./../outside.bin",
    ] {
        quad.json["buffers"][0]["uri"] = json!(uri);
        let path = quad.write_gltf(&asset, "parent.gltf");
        refused(
            &path,
            &["buffer 0", "'..'", "outside the glTF file's folder"],
        );
    }
}

#[test]
fn an_absolute_uri_is_refused() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let mut quad = Quad::valid();
    // The absolute path of the buffer file itself, right beside the glTF file.
    quad.write_gltf(dir.path(), "absolute.gltf");
    let bin = dir.path().join("quad.bin");
    let bin = bin.to_str().unwrap();
    for (uri, says) in [
        (bin.to_string(), "absolute paths are not supported"),
        (format!("file://{bin}"), "'file:' scheme is not supported"),
        ("C:/assets/quad.bin".into(), "'C:' scheme is not supported"),
        ("\\\\server\\share\\quad.bin".into(), "absolute paths"),
        ("%2Fetc%2Fpasswd".into(), "absolute paths are not supported"),
    ] {
        quad.json["buffers"][0]["uri"] = json!(uri);
        let path = quad.write_gltf(dir.path(), "absolute.gltf");
        refused(&path, &["buffer 0", says]);
    }
}

#[cfg(unix)]
#[test]
fn a_symbolic_link_out_of_the_folder_is_refused() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let asset = dir.path().join("asset");
    std::fs::create_dir(&asset).unwrap();
    let mut quad = Quad::valid();
    std::fs::write(dir.path().join("outside.bin"), &quad.bin).unwrap();
    std::os::unix::fs::symlink(dir.path().join("outside.bin"), asset.join("link.bin")).unwrap();
    std::os::unix::fs::symlink(dir.path(), asset.join("up")).unwrap();
    for uri in ["link.bin", "up/outside.bin"] {
        quad.json["buffers"][0]["uri"] = json!(uri);
        let path = quad.write_gltf(&asset, "link.gltf");
        refused(
            &path,
            &[
                "buffer 0",
                "symbolic link",
                "outside the glTF file's folder",
            ],
        );
    }
}

#[test]
fn an_accessor_larger_than_its_buffer_is_refused() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let mut quad = Quad::valid();
    quad.json["accessors"][0]["count"] = json!(1000);
    let path = quad.write_gltf(dir.path(), "long_accessor.gltf");
    refused(
        &path,
        &[
            "mesh 'quad'",
            "primitive 0",
            "accessor 0",
            "1000 elements",
            "bufferView 0 (48 bytes)",
        ],
    );

    // A bufferView that runs past its buffer.
    let mut quad = Quad::valid();
    quad.json["bufferViews"][0]["byteLength"] = json!(1_000_000);
    let path = quad.write_gltf(dir.path(), "long_view.gltf");
    refused(
        &path,
        &["bufferView 0", "lies outside buffer 0 (188 bytes)"],
    );

    // An offset and stride that overflow when multiplied out.
    let mut quad = Quad::valid();
    quad.json["bufferViews"][0]["byteStride"] = json!(252);
    quad.json["accessors"][0]["byteOffset"] = json!(u64::MAX - 8);
    let path = quad.write_gltf(dir.path(), "overflow.gltf");
    refused(&path, &["accessor 0", "run past the end of bufferView 0"]);
}

/// The parser checks an animation channel's sampler but not its target, and the `gltf` crate
/// unwraps the target when the channel is read: a channel aimed at a node that does not exist,
/// or at a property that is not translation, rotation, scale or weights, is refused at load.
#[test]
fn an_animation_channel_with_a_bad_target_is_refused() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let animation = |target: Value| {
        json!([{
            "channels": [{ "sampler": 0, "target": target }],
            "samplers": [{ "input": 0, "output": 0 }],
        }])
    };
    let mut quad = Quad::valid();
    quad.json["animations"] = animation(json!({ "node": 99, "path": "translation" }));
    let path = quad.write_gltf(dir.path(), "bad_channel_node.gltf");
    refused(
        &path,
        &["animation 0, channel 0", "target node 99 does not exist"],
    );

    let mut quad = Quad::valid();
    quad.json["animations"] = animation(json!({ "node": 0, "path": "bogus" }));
    let path = quad.write_gltf(dir.path(), "bad_channel_path.gltf");
    refused(&path, &["animation 0, channel 0", "target path"]);
}

#[test]
fn a_negative_count_is_refused() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let mut quad = Quad::valid();
    quad.json["accessors"][0]["count"] = json!(-1);
    let path = quad.write_gltf(dir.path(), "negative.gltf");
    refused(&path, &["accessor 0", "count is -1", "not a whole number"]);

    let mut quad = Quad::valid();
    quad.json["bufferViews"][1]["byteOffset"] = json!(-48);
    let path = quad.write_gltf(dir.path(), "negative_offset.gltf");
    refused(&path, &["bufferView 1", "byteOffset is -48"]);
}

#[test]
fn an_absurd_count_is_refused_before_anything_is_allocated() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let huge = 1u64 << 31;

    let mut quad = Quad::valid();
    quad.json["accessors"][0]["count"] = json!(huge);
    let path = quad.write_gltf(dir.path(), "huge_positions.gltf");
    refused(&path, &["primitive 0", "accessor 0", "2147483648 elements"]);

    // An attribute whose count disagrees with POSITION's: refused before it is read.
    let mut quad = Quad::valid();
    quad.json["accessors"][1]["count"] = json!(huge);
    let path = quad.write_gltf(dir.path(), "huge_normals.gltf");
    refused(&path, &["accessor 1 (NORMAL)", "2147483648 elements but 4"]);

    // No bufferView: zeros plus one sparse value. 2^25 positions would be 384 MiB from a file
    // of a few hundred bytes.
    let mut quad = Quad::valid();
    let acc = quad.json["accessors"][0].as_object_mut().unwrap();
    acc.remove("bufferView");
    acc.insert("count".into(), json!(1u64 << 25));
    acc.insert(
        "sparse".into(),
        json!({
            "count": 1,
            "indices": { "bufferView": 4, "componentType": 5123 },
            "values": { "bufferView": 0 }
        }),
    );
    let path = quad.write_gltf(dir.path(), "huge_zeros.gltf");
    refused(&path, &["accessor 0", "no bufferView", "33554432 elements"]);

    // A sparse accessor with 2^31 substitutions.
    let mut quad = Quad::valid();
    quad.json["accessors"][0]["sparse"] = json!({
        "count": huge,
        "indices": { "bufferView": 4, "componentType": 5123 },
        "values": { "bufferView": 0 }
    });
    let path = quad.write_gltf(dir.path(), "huge_sparse.gltf");
    refused(&path, &["accessor 0", "2147483648 sparse indices"]);
}

#[test]
fn a_truncated_glb_chunk_is_refused() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let glb = Quad::valid().glb();
    // The BIN chunk cut by 40 bytes, the header's total length lying to match the cut file.
    let mut cut = glb[..glb.len() - 40].to_vec();
    let len = cut.len() as u32;
    cut[8..12].copy_from_slice(&len.to_le_bytes());
    let path = dir.path().join("cut_bin.glb");
    std::fs::write(&path, &cut).unwrap();
    refused(
        &path,
        &[
            "truncated",
            "GLB chunk 1 (BIN) declares 188 bytes but only 148",
        ],
    );

    // The JSON chunk cut.
    let mut cut = glb[..40].to_vec();
    cut[8..12].copy_from_slice(&40u32.to_le_bytes());
    let path = dir.path().join("cut_json.glb");
    std::fs::write(&path, &cut).unwrap();
    refused(&path, &["truncated", "GLB chunk 0 (JSON)"]);

    // A file simply cut short.
    let path = dir.path().join("cut.glb");
    std::fs::write(&path, &glb[..glb.len() / 2]).unwrap();
    refused(&path, &["truncated", "the file was cut short"]);
}

#[test]
fn a_nan_or_infinite_position_is_refused() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    for (name, bad) in [("nan.gltf", f32::NAN), ("infinite.gltf", f32::INFINITY)] {
        let mut positions = POSITIONS;
        positions[2][0] = bad;
        let path = Quad::new(positions, NORMALS, WEIGHTS).write_gltf(dir.path(), name);
        refused(
            &path,
            &[
                "mesh 'quad'",
                "primitive 0",
                "POSITION (accessor 0) element 2",
                "modelling tool",
            ],
        );
    }
}

#[test]
fn out_of_range_indices_are_refused() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let mut quad = Quad::valid();
    // The last index (entry 5) becomes 7, with 4 vertices.
    quad.bin[186..188].copy_from_slice(&7u16.to_le_bytes());
    let path = quad.write_gltf(dir.path(), "bad_index.gltf");
    refused(
        &path,
        &[
            "mesh 'quad'",
            "primitive 0",
            "indices (accessor 4) entry 5",
            "7",
            "4 vertices",
        ],
    );
}

#[test]
fn an_oversized_data_uri_is_refused_before_it_is_decoded() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let mut quad = Quad::valid();
    // 1 MiB of data behind a buffer that declares 188 bytes.
    quad.bin.resize(1 << 20, 0);
    let mut path = quad.write_embedded(dir.path(), "oversized.gltf");
    let mut json: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    json["buffers"][0]["byteLength"] = json!(188);
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    refused(
        &path,
        &["buffer 0", "data URI", "byteLength declares 188 bytes"],
    );

    // A declared length beyond what Drape decodes from a data URI.
    json["buffers"][0]["byteLength"] = json!(1u64 << 40);
    path = dir.path().join("declared_huge.gltf");
    std::fs::write(&path, serde_json::to_vec(&json).unwrap()).unwrap();
    refused(
        &path,
        &[
            "buffer 0",
            "byteLength 1099511627776",
            "save the file as .glb",
        ],
    );
}

#[test]
fn zero_length_and_nan_normals_are_recomputed_with_a_warning() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let mut normals = NORMALS;
    normals[1] = [0.0; 3];
    normals[2] = [f32::NAN, 0.0, 1.0];
    let path = Quad::new(POSITIONS, normals, WEIGHTS).write_gltf(dir.path(), "normals.gltf");
    let says = [
        "normals.gltf",
        "mesh 'quad', primitive 0",
        "accessor 1",
        "recomputed",
    ];

    let (mesh, warnings) = watched("normals", || load_mesh_with_warnings(&path, None)).unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(says.iter().all(|s| warnings[0].contains(s)), "{warnings:?}");
    assert!(warnings[0].contains("2 of 4 normals"), "{warnings:?}");
    for n in mesh.normals.as_ref().unwrap() {
        assert!((*n - Vec3::Z).length() < 1e-6, "{n:?}");
    }

    // A scene with this garment carries the repair into the bake's warnings (printed by the
    // CLI and listed in the stats report).
    let scene = drape::scene::Scene {
        garments: vec![drape::scene::GarmentSpec {
            path: "normals.gltf".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let scene_path = dir.path().join("scene.ron");
    scene.save(&scene_path).unwrap();
    let loaded = drape::bake::LoadedScene::load(&scene_path).unwrap();
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| says.iter().all(|s| w.contains(s))),
        "{:?}",
        loaded.warnings
    );

    let rig = watched("normals", || Rig::load(&path, None)).unwrap();
    assert_eq!(rig.warnings().len(), 1, "{:?}", rig.warnings());
    assert!(
        says.iter().all(|s| rig.warnings()[0].contains(s)),
        "{:?}",
        rig.warnings()
    );
    for n in rig.parts()[0].normals.as_ref().unwrap() {
        assert!((*n - Vec3::Z).length() < 1e-6, "{n:?}");
    }
}

#[test]
fn negative_and_unnormalised_skin_weights_are_repaired_with_warnings() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let weights = [
        [0.5, 0.5, 0.0, 0.0],
        [1.5, -0.5, 0.0, 0.0],
        [-1.0, -1.0, 0.0, 0.0],
        [0.2, 0.2, 0.0, 0.0],
    ];
    let path = Quad::new(POSITIONS, NORMALS, weights).write_gltf(dir.path(), "weights.gltf");
    let rig = watched("weights", || Rig::load(&path, None)).unwrap();
    let warnings = rig.warnings();
    assert_eq!(
        warnings,
        [
            "weights.gltf: 2 vertices have negative or non-finite skin weights; those weights \
             are set to 0 and the rest renormalised (check the weight painting)",
            "weights.gltf: skin weights of 2 vertices did not sum to 1; normalised",
            "weights.gltf: 1 vertices have no skin weight; each is bound fully to its first joint",
        ],
    );
    let w = &rig.parts()[0].weights;
    let want = [
        [0.5, 0.5, 0.0, 0.0],
        [1.0, 0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0, 0.0],
        [0.5, 0.5, 0.0, 0.0],
    ];
    for (got, want) in w.iter().zip(want) {
        for (g, e) in got.iter().zip(want) {
            assert!((g - e).abs() < 1e-6, "{w:?}");
        }
    }
    // The repaired body skins to finite positions.
    assert!(rig.rest_mesh().positions.iter().all(|p| p.is_finite()));
}
