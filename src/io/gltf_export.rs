//! Writing binary glTF 2.0 (`.glb`): static meshes, skinned meshes, and the baked garment as
//! morph targets.
//!
//! The file is written by hand: the binary chunk is filled straight into one `Vec<u8>`, and the
//! JSON chunk is built with `serde_json`. Every accessor gets its own buffer view (4-byte aligned,
//! with its `target`), and every `POSITION` accessor, morph targets' included, its exact `min`
//! and `max`, so the output passes the Khronos glTF-Validator with no errors.
//!
//! The bake layout (`DESIGN.md` §3, "Baked glTF"), for `F` frames of an `N`-vertex garment:
//!
//! ```text
//! base POSITION   x₀ = garment.positions (the rest pose)
//! base NORMAL     n₀ = vertex normals of x₀
//! target k        POSITION Δx_k = frames[k] − x₀,  NORMAL Δn_k = n(frames[k]) − n₀,  k < F
//! mesh.weights    [0; F]
//! mesh.extras     { "targetNames": ["frame_0000", …] }   (Blender names shape keys from it)
//! animation       one sampler on the garment node's "weights", interpolation STEP:
//!                   input  t_k = k / fps (s)
//!                   output F × F weights, key k one-hot on target k
//! ```
//!
//! A viewer thus shows frame `k` exactly from `t_k` until `t_{k+1}`. The garment node is a root
//! with the identity transform: its positions are world space (m).
//!
//! The body, when given, is either
//!
//! - [`BodyExport::Static`]: one more root node holding the body mesh as it is (world space), or
//! - [`BodyExport::Animated`]: the rig's skinned character, playing in sync with the garment
//!   (the layout is in the [`body`] module docs): its node hierarchy, one skinned mesh per body
//!   part, its skins, and channels added to the same `drape_bake` animation, keyed at the same
//!   times `t_k`, so that one animation plays the whole shot.
//!
//! [`write_skinned_glb`] writes a skinned mesh with one animation of its joints' rotations
//! (Drape's own walking mannequin, [`crate::scene::walk`]): the joints as nodes translated to their
//! bind positions, one skin whose inverse bind matrices undo those translations, and a LINEAR
//! rotation channel per joint.
//!
//! Files are written atomically ([`write_atomic_with`]).

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::body::{Pose, Quat, Rig};
use crate::file::atomic::write_atomic_with;
use crate::math::{Vec2, Vec3};
use crate::mesh::{Mesh, MeshError};
use crate::paint::{MapKind, VertexMaps};

pub mod body;

/// `bufferView.target` for vertex attributes.
const ARRAY_BUFFER: u32 = 34962;
/// `bufferView.target` for indices.
const ELEMENT_ARRAY_BUFFER: u32 = 34963;
/// `componentType` FLOAT.
const FLOAT: u32 = 5126;
/// `componentType` UNSIGNED_INT.
const UNSIGNED_INT: u32 = 5125;
/// `componentType` UNSIGNED_SHORT.
const UNSIGNED_SHORT: u32 = 5123;
/// `primitive.mode` TRIANGLES.
const TRIANGLES: u32 = 4;
/// Bytes of GLB header plus the two chunk headers.
const GLB_OVERHEAD: u64 = 12 + 8 + 8;
/// Room kept for the JSON chunk when checking the 4 GiB limit up front.
const JSON_ALLOWANCE: u64 = 64 << 20;

/// Problems writing a glTF file; every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum GltfExportError {
    /// The file could not be written.
    #[error("{}: cannot write the file: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// No mesh was given to write.
    #[error("{}: no meshes to write", path.display())]
    NoMeshes {
        /// The file.
        path: PathBuf,
    },
    /// The bake has no frames.
    #[error("{}: the bake has no frames; bake at least one frame", path.display())]
    NoFrames {
        /// The file.
        path: PathBuf,
    },
    /// A frame does not have one position per garment vertex.
    #[error("{}: frame {frame} has {got} positions, but the garment has {expected} vertices", path.display())]
    FrameLength {
        /// The file.
        path: PathBuf,
        /// The frame number (from 0).
        frame: usize,
        /// Positions in that frame.
        got: usize,
        /// Garment vertex count.
        expected: usize,
    },
    /// A value is NaN or infinite.
    #[error("{}: {what} is not finite (the simulation diverged, or the mesh is damaged)", path.display())]
    NonFinite {
        /// The file.
        path: PathBuf,
        /// Which value, e.g. `frame 3, vertex 12`.
        what: String,
    },
    /// The frame rate is not a positive finite number.
    #[error("{}: fps is {fps}; it must be finite and positive", path.display())]
    BadFps {
        /// The file.
        path: PathBuf,
        /// The frame rate given (frames per second).
        fps: f32,
    },
    /// A mesh is unusable.
    #[error("{}: {source}", path.display())]
    InvalidMesh {
        /// The file.
        path: PathBuf,
        /// What is wrong with the mesh.
        #[source]
        source: MeshError,
    },
    /// The data exceed the 4 GiB a GLB file can hold.
    #[error("{}: the output would be about {bytes} bytes, over the 4 GiB limit of a .glb; bake fewer frames or a coarser garment", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Estimated size (bytes).
        bytes: u64,
    },
    /// The body's poses do not match the garment's frames one to one.
    ///
    /// How to fix: pass one body pose per baked frame (the pose at `t_k = k / fps`).
    #[error("{}: the body has {poses} poses but the garment has {frames} frames; the animated body needs one pose per baked frame", path.display())]
    PoseCount {
        /// The file.
        path: PathBuf,
        /// Body poses given.
        poses: usize,
        /// Garment frames given.
        frames: usize,
    },
    /// A body pose was not made by the rig being exported.
    ///
    /// How to fix: sample the poses with that rig ([`Rig::sample`]).
    #[error("{}: body pose {pose} has {got} nodes, but the rig has {expected}; the poses belong to another rig", path.display())]
    PoseNodes {
        /// The file.
        path: PathBuf,
        /// The pose (frame) number, from 0.
        pose: usize,
        /// Nodes in that pose.
        got: usize,
        /// Nodes of the rig.
        expected: usize,
    },
    /// A painted map cannot be written (wrong length, non-finite or out-of-range values).
    #[error("{}: {source}", path.display())]
    Maps {
        /// The file.
        path: PathBuf,
        /// What is wrong with the map; it names the mesh.
        #[source]
        source: crate::paint::MapError,
    },
    /// A skinned mesh's rig or animation does not fit its mesh ([`write_skinned_glb`]).
    #[error("{}: {problem}", path.display())]
    Skin {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// The JSON chunk could not be serialised.
    #[error("{}: cannot encode the glTF JSON: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: serde_json::Error,
    },
}

/// The body written with a bake.
#[derive(Clone, Copy, Debug)]
pub enum BodyExport<'a> {
    /// One static node holding this mesh, in world space (m), e.g. the body at its rest pose.
    Static(&'a Mesh),
    /// The skinned, animated character: the rig's hierarchy, skinned parts and skins, and the
    /// body animation keyed at every baked frame's time `t_k = k / fps` (s).
    Animated {
        /// The body.
        rig: &'a Rig,
        /// The body's pose at each baked frame, made by `rig`; one per garment frame.
        poses: &'a [Pose],
    },
}

/// A baked garment animation, ready to export.
#[derive(Clone, Copy, Debug)]
pub struct BakeExport<'a> {
    /// The garment render mesh; its positions are the rest pose (the morph base).
    pub garment: &'a Mesh,
    /// Garment positions for each frame, one per garment vertex (m).
    pub frames: &'a [Vec<Vec3>],
    /// Playback rate (frames per second).
    pub fps: f32,
    /// The body, if any: static, or skinned and animated in sync with the garment.
    pub body: Option<BodyExport<'a>>,
}

/// Writes meshes as a static `.glb`: one node and one mesh per input mesh, names kept.
///
/// Each mesh gets positions, normals (its own, renormalised, or computed when it has none),
/// texture coordinates when present, and 32-bit indices.
pub fn write_static_glb(path: &Path, meshes: &[&Mesh]) -> Result<(), GltfExportError> {
    if meshes.is_empty() {
        return Err(GltfExportError::NoMeshes {
            path: path.to_path_buf(),
        });
    }
    let mut estimate = 0u64;
    for m in meshes {
        check_mesh(path, m)?;
        estimate = estimate.saturating_add(static_bytes(m));
    }
    check_size(path, estimate)?;
    let mut b = Builder::with_capacity(estimate);
    let mut nodes = Vec::new();
    let mut gl_meshes = Vec::new();
    for (i, m) in meshes.iter().enumerate() {
        let normals = unit_normals(m);
        let primitive = b.static_primitive(m, &normals);
        gl_meshes.push(named(json!({ "primitives": [primitive] }), &m.name));
        nodes.push(named(json!({ "mesh": i }), &m.name));
    }
    let scene_nodes = (0..nodes.len()).collect();
    let root = b.root(Document {
        nodes,
        scene_nodes,
        meshes: gl_meshes,
        skins: Vec::new(),
        animation: None,
    });
    b.write(path, &root)
}

/// One joint of a [`SkinnedMesh`].
#[derive(Clone, Copy, Debug)]
pub struct SkinJoint<'a> {
    /// Node name.
    pub name: &'a str,
    /// The parent joint (an index into the joints, before this one), `None` for the root.
    pub parent: Option<usize>,
    /// Where the joint is at the bind pose (m, world space); no joint is rotated there.
    pub origin_m: Vec3,
}

/// A mesh skinned to a hierarchy of joints, with one animation of their rotations, for
/// [`write_skinned_glb`].
#[derive(Clone, Copy, Debug)]
pub struct SkinnedMesh<'a> {
    /// The mesh at the bind pose (m).
    pub mesh: &'a Mesh,
    /// The joints, every parent before its children.
    pub joints: &'a [SkinJoint<'a>],
    /// Per vertex, four indices into `joints` …
    pub vertex_joints: &'a [[u16; 4]],
    /// … and their weights (each set summing to 1).
    pub vertex_weights: &'a [[f32; 4]],
    /// The animation's name.
    pub animation: &'a str,
    /// The key times (s), increasing.
    pub times_s: &'a [f32],
    /// `rotations[k][j]`: joint `j`'s rotation relative to its parent at `times_s[k]` (unit
    /// quaternions; played back with LINEAR interpolation, i.e. slerp).
    pub rotations: &'a [Vec<Quat>],
}

/// Writes a skinned, animated mesh as a `.glb`: the joints as a node hierarchy (translations
/// only at the bind pose), one skin (inverse bind matrices: the joints' bind translations
/// undone), the mesh (positions, normals, JOINTS_0, WEIGHTS_0) on a node of its own, and one
/// animation with a LINEAR rotation channel per joint.
///
/// Fails, naming the file, when the rig does not fit the mesh: per-vertex arrays of another
/// length, a joint index out of range, a parent after its child, weights that are negative or
/// do not sum to 1, key times that are not finite and increasing, or a rotation that is not
/// a finite unit quaternion.
pub fn write_skinned_glb(path: &Path, skinned: &SkinnedMesh) -> Result<(), GltfExportError> {
    let m = skinned.mesh;
    check_mesh(path, m)?;
    let problem = |problem: String| GltfExportError::Skin {
        path: path.to_path_buf(),
        problem,
    };
    check_skin(skinned).map_err(problem)?;
    let n = m.positions.len();
    let keys = skinned.times_s.len();
    let joint_count = skinned.joints.len();
    let estimate = static_bytes(m)
        + (n as u64) * 24
        + (joint_count as u64) * 64
        + (keys as u64) * (4 + 16 * joint_count as u64);
    check_size(path, estimate)?;
    let mut b = Builder::with_capacity(estimate);
    let normals = unit_normals(m);
    let mut primitive = b.static_primitive(m, &normals);
    primitive["attributes"]["JOINTS_0"] = json!(b.joints(skinned.vertex_joints));
    let weights: Vec<f32> = skinned.vertex_weights.iter().flatten().copied().collect();
    primitive["attributes"]["WEIGHTS_0"] = json!(b.floats(&weights, 4, "VEC4", Some(ARRAY_BUFFER)));
    let ibm: Vec<f32> = (skinned.joints.iter())
        .flat_map(|j| {
            let o = j.origin_m;
            [
                1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, -o.x, -o.y, -o.z, 1.0,
            ]
        })
        .collect();
    let ibm = b.floats(&ibm, 16, "MAT4", None);
    let mut nodes: Vec<Value> = (skinned.joints.iter())
        .map(|j| {
            let local = match j.parent {
                Some(p) => j.origin_m - skinned.joints[p].origin_m,
                None => j.origin_m,
            };
            named(json!({ "translation": local.to_array().map(num) }), j.name)
        })
        .collect();
    for (k, j) in skinned.joints.iter().enumerate() {
        if let Some(p) = j.parent {
            let children = &mut nodes[p]["children"];
            if children.is_null() {
                *children = json!([]);
            }
            if let Some(c) = children.as_array_mut() {
                c.push(json!(k));
            }
        }
    }
    let mesh_node = nodes.len();
    nodes.push(named(json!({ "mesh": 0, "skin": 0 }), &m.name));
    let input = b.scalars(skinned.times_s, true);
    let mut samplers = Vec::with_capacity(joint_count);
    let mut channels = Vec::with_capacity(joint_count);
    for j in 0..joint_count {
        let values: Vec<f32> = (skinned.rotations.iter())
            .flat_map(|r| r[j].to_array())
            .collect();
        let output = b.floats(&values, 4, "VEC4", None);
        samplers.push(json!({ "input": input, "output": output, "interpolation": "LINEAR" }));
        channels.push(json!({ "sampler": j, "target": { "node": j, "path": "rotation" } }));
    }
    let root_joints: Vec<usize> = (0..joint_count)
        .filter(|&j| skinned.joints[j].parent.is_none())
        .collect();
    let mut scene_nodes = root_joints.clone();
    scene_nodes.push(mesh_node);
    let mut skin = json!({
        "joints": (0..joint_count).collect::<Vec<_>>(),
        "inverseBindMatrices": ibm,
    });
    if let [root] = root_joints[..] {
        skin["skeleton"] = json!(root);
    }
    let root = b.root(Document {
        nodes,
        scene_nodes,
        meshes: vec![named(json!({ "primitives": [primitive] }), &m.name)],
        skins: vec![skin],
        animation: Some(named(
            json!({ "samplers": samplers, "channels": channels }),
            skinned.animation,
        )),
    });
    b.write(path, &root)
}

/// What is wrong with a [`SkinnedMesh`]'s rig or animation, if anything.
fn check_skin(s: &SkinnedMesh) -> Result<(), String> {
    let n = s.mesh.positions.len();
    let joints = s.joints.len();
    if joints == 0 || joints > usize::from(u16::MAX) {
        return Err(format!("a skin needs 1 to 65535 joints, not {joints}"));
    }
    if s.vertex_joints.len() != n || s.vertex_weights.len() != n {
        return Err(format!(
            "the mesh has {n} vertices but {} joint sets and {} weight sets",
            s.vertex_joints.len(),
            s.vertex_weights.len()
        ));
    }
    for (k, j) in s.joints.iter().enumerate() {
        if j.parent.is_some_and(|p| p >= k) {
            return Err(format!("joint {k} ('{}') comes before its parent", j.name));
        }
        if !j.origin_m.is_finite() {
            return Err(format!(
                "joint {k} ('{}') is not at a finite position",
                j.name
            ));
        }
    }
    for (v, (js, ws)) in s.vertex_joints.iter().zip(s.vertex_weights).enumerate() {
        if js.iter().any(|&j| usize::from(j) >= joints) {
            return Err(format!(
                "vertex {v} names a joint past the {joints} of the skin"
            ));
        }
        let sum: f32 = ws.iter().sum();
        // A NaN weight is not finite, so it is caught too.
        let valid = ws.iter().all(|w| w.is_finite() && *w >= 0.0) && (sum - 1.0).abs() <= 1.0e-5;
        if !valid {
            return Err(format!(
                "vertex {v}'s weights {ws:?} are not non-negative numbers summing to 1"
            ));
        }
    }
    if s.times_s.is_empty() {
        return Err("the animation has no keys".into());
    }
    if s.times_s.iter().any(|t| !t.is_finite()) || s.times_s.windows(2).any(|w| w[1] <= w[0]) {
        return Err("the animation's key times are not finite and increasing".into());
    }
    if s.rotations.len() != s.times_s.len() {
        return Err(format!(
            "the animation has {} key times but {} sets of rotations",
            s.times_s.len(),
            s.rotations.len()
        ));
    }
    for (k, r) in s.rotations.iter().enumerate() {
        if r.len() != joints {
            return Err(format!(
                "key {k} has {} rotations for {joints} joints",
                r.len()
            ));
        }
        if r.iter()
            .any(|q| !q.is_finite() || (q.length() - 1.0).abs() > 1.0e-4)
        {
            return Err(format!(
                "key {k} has a rotation that is not a unit quaternion"
            ));
        }
    }
    Ok(())
}

/// A mesh with its painted maps, for [`write_painted_glb`].
#[derive(Clone, Copy, Debug)]
pub struct PaintedMesh<'a> {
    /// The mesh (m).
    pub mesh: &'a Mesh,
    /// Its maps, one value per vertex in each, if it has any.
    pub maps: Option<&'a VertexMaps>,
}

/// A compliance or mass scale as a colour channel in `[0, 1]`: `0.5 + log₁₀(s)/6`, clamped, so
/// 1 (unpainted) is 0.5, 1000 is 1 and 0.001 (or 0) is 0.
pub fn scale_to_colour(s: f32) -> f32 {
    if s > 0.0 {
        (0.5 + s.log10() / 6.0).clamp(0.0, 1.0)
    } else {
        0.0
    }
}

/// [`write_static_glb`] with painted maps: each painted mesh also gets the FLOAT SCALAR vertex
/// attributes `_DRAPE_PIN`, `_DRAPE_STRETCH_SCALE`, `_DRAPE_BEND_SCALE` and `_DRAPE_MASS_SCALE`
/// (exact values, read back by [`crate::io::gltf_import::load_mesh_with_maps`]) and a
/// `COLOR_0` (FLOAT VEC3) for other tools: red the attachment weight, green and blue the
/// stretch and bend scales through [`scale_to_colour`].
pub fn write_painted_glb(path: &Path, meshes: &[PaintedMesh]) -> Result<(), GltfExportError> {
    if meshes.is_empty() {
        return Err(GltfExportError::NoMeshes {
            path: path.to_path_buf(),
        });
    }
    let mut estimate = 0u64;
    for pm in meshes {
        check_mesh(path, pm.mesh)?;
        if let Some(maps) = pm.maps {
            maps.validate(&pm.mesh.name, pm.mesh.vertex_count())
                .map_err(|source| GltfExportError::Maps {
                    path: path.to_path_buf(),
                    source,
                })?;
        }
        estimate =
            estimate.saturating_add(static_bytes(pm.mesh) + pm.mesh.vertex_count() as u64 * 28);
    }
    check_size(path, estimate)?;
    let mut b = Builder::with_capacity(estimate);
    let mut nodes = Vec::new();
    let mut gl_meshes = Vec::new();
    for (i, pm) in meshes.iter().enumerate() {
        let m = pm.mesh;
        let normals = unit_normals(m);
        let mut primitive = b.static_primitive(m, &normals);
        if let Some(maps) = pm.maps {
            for kind in MapKind::ALL {
                let acc = b.floats(maps.get(kind), 1, "SCALAR", Some(ARRAY_BUFFER));
                primitive["attributes"][kind.gltf_attribute()] = json!(acc);
            }
            let (w, s, k) = (
                maps.get(MapKind::Attachment),
                maps.get(MapKind::StretchScale),
                maps.get(MapKind::BendScale),
            );
            let rgb: Vec<f32> = (0..m.vertex_count())
                .flat_map(|v| [w[v], scale_to_colour(s[v]), scale_to_colour(k[v])])
                .collect();
            primitive["attributes"]["COLOR_0"] =
                json!(b.floats(&rgb, 3, "VEC3", Some(ARRAY_BUFFER)));
        }
        gl_meshes.push(named(json!({ "primitives": [primitive] }), &m.name));
        nodes.push(named(json!({ "mesh": i }), &m.name));
    }
    let scene_nodes = (0..nodes.len()).collect();
    let root = b.root(Document {
        nodes,
        scene_nodes,
        meshes: gl_meshes,
        skins: Vec::new(),
        animation: None,
    });
    b.write(path, &root)
}

/// Writes a baked garment as a `.glb` with one morph target per frame and a STEP `weights`
/// animation (see the [module docs](self) for the layout), plus the body if given: static, or
/// skinned and animated in the same animation.
pub fn write_bake_glb(path: &Path, bake: &BakeExport) -> Result<(), GltfExportError> {
    let BakeExport {
        garment,
        frames,
        fps,
        body,
    } = *bake;
    if !(fps.is_finite() && fps > 0.0) {
        return Err(GltfExportError::BadFps {
            path: path.to_path_buf(),
            fps,
        });
    }
    check_mesh(path, garment)?;
    if let Some(BodyExport::Static(body)) = body {
        check_mesh(path, body)?;
    }
    if frames.is_empty() {
        return Err(GltfExportError::NoFrames {
            path: path.to_path_buf(),
        });
    }
    let n = garment.vertex_count();
    for (k, frame) in frames.iter().enumerate() {
        if frame.len() != n {
            return Err(GltfExportError::FrameLength {
                path: path.to_path_buf(),
                frame: k,
                got: frame.len(),
                expected: n,
            });
        }
        if let Some(v) = frame.iter().position(|p| !p.is_finite()) {
            return Err(GltfExportError::NonFinite {
                path: path.to_path_buf(),
                what: format!("frame {k}, vertex {v}"),
            });
        }
    }
    let plan = match body {
        Some(BodyExport::Animated { rig, poses }) => {
            Some(body::Plan::new(path, rig, poses, frames.len())?)
        }
        _ => None,
    };
    let f = frames.len() as u64;
    let body_bytes = match (body, &plan) {
        (_, Some(plan)) => plan.bytes(),
        (Some(BodyExport::Static(m)), None) => static_bytes(m),
        _ => 0,
    };
    let estimate = static_bytes(garment)
        .saturating_add(f.saturating_mul(n as u64).saturating_mul(24))
        .saturating_add(f.saturating_mul(f.saturating_add(1)).saturating_mul(4))
        .saturating_add(body_bytes);
    check_size(path, estimate)?;

    let mut b = Builder::with_capacity(estimate);
    let seams = SeamNormals::new(garment);
    let base_normals = seams.normals(&garment.positions);
    let mut primitive = b.static_primitive(garment, &base_normals);
    let mut targets = Vec::with_capacity(frames.len());
    for frame in frames {
        let normals = seams.normals(frame);
        let dx = b.vec3(
            frame.iter().zip(&garment.positions).map(|(x, x0)| *x - *x0),
            n,
            Some(ARRAY_BUFFER),
            true,
        );
        let dn = b.vec3(
            normals.iter().zip(&base_normals).map(|(a, a0)| *a - *a0),
            n,
            Some(ARRAY_BUFFER),
            false,
        );
        targets.push(json!({ "POSITION": dx, "NORMAL": dn }));
    }
    primitive["targets"] = Value::Array(targets);
    let target_names: Vec<String> = (0..frames.len()).map(|k| format!("frame_{k:04}")).collect();
    let garment_mesh = named(
        json!({
            "primitives": [primitive],
            "weights": vec![0.0; frames.len()],
            "extras": { "targetNames": target_names },
        }),
        &garment.name,
    );
    let mut nodes = vec![named(json!({ "mesh": 0 }), &garment.name)];
    let mut scene_nodes = vec![0];
    let mut gl_meshes = vec![garment_mesh];
    let mut skins = Vec::new();

    let times: Vec<f32> = (0..frames.len()).map(|k| k as f32 / fps).collect();
    let input = b.scalars(&times, true);
    let mut weights = vec![0.0f32; frames.len() * frames.len()];
    for k in 0..frames.len() {
        weights[k * frames.len() + k] = 1.0;
    }
    let output = b.scalars(&weights, false);
    let mut channels = vec![json!({ "sampler": 0, "target": { "node": 0, "path": "weights" } })];
    let mut samplers = vec![json!({ "input": input, "output": output, "interpolation": "STEP" })];

    if let Some(plan) = &plan {
        let out = plan.write(&mut b, nodes.len(), gl_meshes.len(), input);
        scene_nodes.extend(out.roots);
        nodes.extend(out.nodes);
        gl_meshes.extend(out.meshes);
        skins = out.skins;
        for (channel, sampler) in out.tracks {
            channels.push(json!({ "sampler": samplers.len(), "target": channel }));
            samplers.push(sampler);
        }
    } else if let Some(BodyExport::Static(body)) = body {
        let normals = unit_normals(body);
        let primitive = b.static_primitive(body, &normals);
        scene_nodes.push(nodes.len());
        nodes.push(named(json!({ "mesh": gl_meshes.len() }), &body.name));
        gl_meshes.push(named(json!({ "primitives": [primitive] }), &body.name));
    }

    let animation = json!({
        "name": "drape_bake",
        "channels": channels,
        "samplers": samplers,
    });
    let root = b.root(Document {
        nodes,
        scene_nodes,
        meshes: gl_meshes,
        skins,
        animation: Some(animation),
    });
    b.write(path, &root)
}

/// Validates a mesh and checks the attributes the validator would reject.
fn check_mesh(path: &Path, m: &Mesh) -> Result<(), GltfExportError> {
    m.validate()
        .map_err(|source| GltfExportError::InvalidMesh {
            path: path.to_path_buf(),
            source,
        })?;
    let non_finite = |what: &str, v: usize| GltfExportError::NonFinite {
        path: path.to_path_buf(),
        what: format!("mesh '{}' {what} {v}", m.name),
    };
    if let Some(v) = m
        .uvs
        .as_ref()
        .and_then(|uv| uv.iter().position(|t| !t.is_finite()))
    {
        return Err(non_finite("uv", v));
    }
    if let Some(v) = m
        .normals
        .as_ref()
        .and_then(|ns| ns.iter().position(|n| !n.is_finite()))
    {
        return Err(non_finite("normal", v));
    }
    Ok(())
}

/// Vertex normals that are smooth across UV seams: computed on the mesh welded by rest position,
/// then copied to every duplicate, so a seam never shows as a shading crease.
pub(crate) struct SeamNormals {
    welded: crate::mesh::Welded,
}

impl SeamNormals {
    /// Vertices of the rest pose closer than this share a normal (m).
    const TOLERANCE_M: f32 = 1.0e-6;

    pub(crate) fn new(mesh: &Mesh) -> Self {
        Self {
            welded: crate::mesh::weld(mesh, Self::TOLERANCE_M),
        }
    }

    pub(crate) fn normals(&self, positions: &[Vec3]) -> Vec<Vec3> {
        let map = &self.welded.original_to_welded;
        let mut welded = vec![Vec3::ZERO; self.welded.mesh.positions.len()];
        for (i, &w) in map.iter().enumerate() {
            welded[w as usize] = positions[i];
        }
        let n = self.welded.mesh.vertex_normals_for(&welded);
        map.iter().map(|&w| n[w as usize]).collect()
    }
}

/// Unit normals of a validated mesh: its own, renormalised, or computed when absent.
fn unit_normals(m: &Mesh) -> Vec<Vec3> {
    match &m.normals {
        Some(ns) => ns
            .iter()
            .map(|n| n.try_normalize().unwrap_or(Vec3::Y))
            .collect(),
        None => m.vertex_normals_for(&m.positions),
    }
}

/// Bytes of binary data for one static mesh (positions, normals, UVs, indices).
fn static_bytes(m: &Mesh) -> u64 {
    let n = m.positions.len() as u64;
    let uv = if m.uvs.is_some() { 8 } else { 0 };
    n * (24 + uv) + m.indices.len() as u64 * 12
}

fn check_size(path: &Path, bin_bytes: u64) -> Result<(), GltfExportError> {
    let total = bin_bytes
        .saturating_add(GLB_OVERHEAD)
        .saturating_add(JSON_ALLOWANCE);
    if total > u64::from(u32::MAX) {
        return Err(GltfExportError::TooLarge {
            path: path.to_path_buf(),
            bytes: bin_bytes.saturating_add(GLB_OVERHEAD),
        });
    }
    Ok(())
}

/// Adds `"name"` to a JSON object unless the name is empty.
fn named(mut v: Value, name: &str) -> Value {
    if !name.is_empty() {
        v["name"] = Value::String(name.to_string());
    }
    v
}

/// A float as a JSON number holding exactly its `f32` value.
fn num(x: f32) -> Value {
    Value::from(f64::from(x))
}

/// The JSON objects of a document, besides its accessors and buffer views.
struct Document {
    /// Every node.
    nodes: Vec<Value>,
    /// The root nodes of the one scene.
    scene_nodes: Vec<usize>,
    /// Every mesh.
    meshes: Vec<Value>,
    /// Every skin (none: no `skins` array).
    skins: Vec<Value>,
    /// The one animation, if any.
    animation: Option<Value>,
}

/// Collects the binary chunk and the buffer views and accessors that describe it.
struct Builder {
    bin: Vec<u8>,
    views: Vec<Value>,
    accessors: Vec<Value>,
}

impl Builder {
    fn with_capacity(bytes: u64) -> Self {
        Self {
            bin: Vec::with_capacity(usize::try_from(bytes).unwrap_or(0)),
            views: Vec::new(),
            accessors: Vec::new(),
        }
    }

    /// Adds a buffer view over the bytes written since `start`; returns its index.
    fn view(&mut self, start: usize, target: Option<u32>) -> usize {
        let mut v = json!({
            "buffer": 0,
            "byteOffset": start,
            "byteLength": self.bin.len() - start,
        });
        if let Some(t) = target {
            v["target"] = json!(t);
        }
        self.views.push(v);
        self.views.len() - 1
    }

    /// Pads the binary chunk to a multiple of 4 bytes (every view starts aligned).
    fn align(&mut self) -> usize {
        while self.bin.len() % 4 != 0 {
            self.bin.push(0);
        }
        self.bin.len()
    }

    fn accessor(&mut self, mut a: Value) -> usize {
        if a.get("min").is_some_and(Value::is_null) {
            if let Some(o) = a.as_object_mut() {
                o.remove("min");
                o.remove("max");
            }
        }
        self.accessors.push(a);
        self.accessors.len() - 1
    }

    /// Writes `count` 3-vectors; `min_max` adds their exact bounds (required for POSITION).
    fn vec3(
        &mut self,
        values: impl Iterator<Item = Vec3>,
        count: usize,
        target: Option<u32>,
        min_max: bool,
    ) -> usize {
        let start = self.align();
        let mut lo = Vec3::splat(f32::INFINITY);
        let mut hi = Vec3::splat(f32::NEG_INFINITY);
        for v in values {
            lo = lo.min(v);
            hi = hi.max(v);
            for c in v.to_array() {
                self.bin.extend_from_slice(&c.to_le_bytes());
            }
        }
        let view = self.view(start, target);
        let (min, max) = if min_max {
            (
                Value::Array(lo.to_array().map(num).to_vec()),
                Value::Array(hi.to_array().map(num).to_vec()),
            )
        } else {
            (Value::Null, Value::Null)
        };
        self.accessor(json!({
            "bufferView": view, "componentType": FLOAT, "count": count, "type": "VEC3",
            "min": min, "max": max,
        }))
    }

    fn vec2(&mut self, values: &[Vec2]) -> usize {
        let start = self.align();
        for v in values {
            for c in v.to_array() {
                self.bin.extend_from_slice(&c.to_le_bytes());
            }
        }
        let view = self.view(start, Some(ARRAY_BUFFER));
        self.accessor(json!({
            "bufferView": view, "componentType": FLOAT, "count": values.len(), "type": "VEC2",
        }))
    }

    fn indices(&mut self, triangles: &[[u32; 3]]) -> usize {
        let start = self.align();
        for i in triangles.iter().flatten() {
            self.bin.extend_from_slice(&i.to_le_bytes());
        }
        let view = self.view(start, Some(ELEMENT_ARRAY_BUFFER));
        self.accessor(json!({
            "bufferView": view, "componentType": UNSIGNED_INT, "count": triangles.len() * 3,
            "type": "SCALAR",
        }))
    }

    /// Writes scalars with no view target (animation data); `min_max` adds their bounds.
    fn scalars(&mut self, values: &[f32], min_max: bool) -> usize {
        let start = self.align();
        for v in values {
            self.bin.extend_from_slice(&v.to_le_bytes());
        }
        let view = self.view(start, None);
        let (min, max) = if min_max {
            let lo = values.iter().copied().fold(f32::INFINITY, f32::min);
            let hi = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            (json!([num(lo)]), json!([num(hi)]))
        } else {
            (Value::Null, Value::Null)
        };
        self.accessor(json!({
            "bufferView": view, "componentType": FLOAT, "count": values.len(), "type": "SCALAR",
            "min": min, "max": max,
        }))
    }

    /// Writes `values` as FLOAT components of accessor type `ty` (`"VEC4"`, `"MAT4"`, …), with
    /// `width` components per element; returns the accessor.
    fn floats(&mut self, values: &[f32], width: usize, ty: &str, target: Option<u32>) -> usize {
        let start = self.align();
        for v in values {
            self.bin.extend_from_slice(&v.to_le_bytes());
        }
        let view = self.view(start, target);
        self.accessor(json!({
            "bufferView": view, "componentType": FLOAT, "count": values.len() / width.max(1),
            "type": ty,
        }))
    }

    /// Writes `JOINTS_0`: four UNSIGNED_SHORT joint indices per vertex; returns the accessor.
    fn joints(&mut self, joints: &[[u16; 4]]) -> usize {
        let start = self.align();
        for j in joints.iter().flatten() {
            self.bin.extend_from_slice(&j.to_le_bytes());
        }
        let view = self.view(start, Some(ARRAY_BUFFER));
        self.accessor(json!({
            "bufferView": view, "componentType": UNSIGNED_SHORT, "count": joints.len(),
            "type": "VEC4",
        }))
    }

    /// Writes a mesh's base attributes and indices; returns the primitive's JSON.
    fn static_primitive(&mut self, m: &Mesh, normals: &[Vec3]) -> Value {
        let n = m.positions.len();
        let pos = self.vec3(m.positions.iter().copied(), n, Some(ARRAY_BUFFER), true);
        let nrm = self.vec3(normals.iter().copied(), n, Some(ARRAY_BUFFER), false);
        let mut attributes = json!({ "POSITION": pos, "NORMAL": nrm });
        if let Some(uvs) = &m.uvs {
            attributes["TEXCOORD_0"] = json!(self.vec2(uvs));
        }
        let indices = self.indices(&m.indices);
        json!({ "attributes": attributes, "indices": indices, "mode": TRIANGLES })
    }

    /// The document root around the given nodes, meshes, skins and animation.
    fn root(&mut self, doc: Document) -> Value {
        self.align();
        let Document {
            nodes,
            scene_nodes,
            meshes,
            skins,
            animation,
        } = doc;
        let mut root = json!({
            "asset": {
                "version": "2.0",
                "generator": format!("Drape {}", crate::VERSION),
            },
            "scene": 0,
            "scenes": [ { "nodes": scene_nodes } ],
            "nodes": nodes,
            "meshes": meshes,
            "accessors": std::mem::take(&mut self.accessors),
            "bufferViews": std::mem::take(&mut self.views),
            "buffers": [ { "byteLength": self.bin.len() } ],
        });
        if !skins.is_empty() {
            root["skins"] = Value::Array(skins);
        }
        if let Some(a) = animation {
            root["animations"] = json!([a]);
        }
        root
    }

    /// Writes the GLB: header, JSON chunk (space-padded), BIN chunk (zero-padded).
    fn write(self, path: &Path, root: &Value) -> Result<(), GltfExportError> {
        let mut json = serde_json::to_vec(root).map_err(|source| GltfExportError::Json {
            path: path.to_path_buf(),
            source,
        })?;
        while json.len() % 4 != 0 {
            json.push(b' ');
        }
        let bin = self.bin;
        let total = GLB_OVERHEAD + json.len() as u64 + bin.len() as u64;
        let too_large = || GltfExportError::TooLarge {
            path: path.to_path_buf(),
            bytes: total,
        };
        let total32 = u32::try_from(total).map_err(|_| too_large())?;
        let json_len = u32::try_from(json.len()).map_err(|_| too_large())?;
        let bin_len = u32::try_from(bin.len()).map_err(|_| too_large())?;
        write_atomic_with(path, |w: &mut dyn Write| {
            w.write_all(b"glTF")?;
            w.write_all(&2u32.to_le_bytes())?;
            w.write_all(&total32.to_le_bytes())?;
            w.write_all(&json_len.to_le_bytes())?;
            w.write_all(b"JSON")?;
            w.write_all(&json)?;
            w.write_all(&bin_len.to_le_bytes())?;
            w.write_all(b"BIN\0")?;
            w.write_all(&bin)
        })
        .map_err(|source| GltfExportError::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A skinned mesh whose rig does not fit gets an error naming the file and the problem,
    /// and writes nothing.
    #[test]
    fn skinned_export_rejects_rigs_that_do_not_fit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.glb");
        let mesh = Mesh::new("tri", vec![Vec3::ZERO, Vec3::X, Vec3::Y], vec![[0, 1, 2]]);
        let joints = [
            SkinJoint {
                name: "root",
                parent: None,
                origin_m: Vec3::ZERO,
            },
            SkinJoint {
                name: "tip",
                parent: Some(0),
                origin_m: Vec3::X,
            },
        ];
        let vj = [[0u16, 1, 0, 0]; 3];
        let vw = [[0.5f32, 0.5, 0.0, 0.0]; 3];
        let times = [0.0f32, 1.0];
        let rotations = vec![vec![Quat::IDENTITY; 2]; 2];
        let good = SkinnedMesh {
            mesh: &mesh,
            joints: &joints,
            vertex_joints: &vj,
            vertex_weights: &vw,
            animation: "a",
            times_s: &times,
            rotations: &rotations,
        };
        write_skinned_glb(&path, &good).unwrap();
        std::fs::remove_file(&path).unwrap();

        let heavy = [[0.5f32, 0.6, 0.0, 0.0]; 3];
        let far = [[0u16, 2, 0, 0]; 3];
        let backwards = [
            SkinJoint {
                name: "tip",
                parent: Some(1),
                origin_m: Vec3::X,
            },
            SkinJoint {
                name: "root",
                parent: None,
                origin_m: Vec3::ZERO,
            },
        ];
        let unsorted = [1.0f32, 0.0];
        let stretched = vec![vec![Quat::from_xyzw(0.0, 0.0, 0.0, 2.0); 2]; 2];
        let cases: [(SkinnedMesh, &str); 5] = [
            (
                SkinnedMesh {
                    vertex_weights: &heavy,
                    ..good
                },
                "summing to 1",
            ),
            (
                SkinnedMesh {
                    vertex_joints: &far,
                    ..good
                },
                "names a joint past",
            ),
            (
                SkinnedMesh {
                    joints: &backwards,
                    ..good
                },
                "before its parent",
            ),
            (
                SkinnedMesh {
                    times_s: &unsorted,
                    ..good
                },
                "finite and increasing",
            ),
            (
                SkinnedMesh {
                    rotations: &stretched,
                    ..good
                },
                "unit quaternion",
            ),
        ];
        for (bad, expected) in cases {
            let e = write_skinned_glb(&path, &bad).unwrap_err().to_string();
            assert!(e.contains("bad.glb") && e.contains(expected), "{e}");
            assert!(!path.exists(), "{e}: a file was written");
        }
    }

    /// Regression (review): normals were computed on the unwelded render mesh, so every UV
    /// seam showed as a crease in every frame.
    #[test]
    fn seam_duplicates_share_one_normal() {
        // Two triangles folded along the x axis, the fold vertices duplicated as a seam.
        let m = Mesh::new(
            "fold",
            vec![
                Vec3::new(0.0, 0.0, 0.0),
                Vec3::new(1.0, 0.0, 0.0),
                Vec3::new(0.5, 0.0, 1.0),
                Vec3::new(0.0, 0.0, 0.0),
                Vec3::new(1.0, 0.0, 0.0),
                Vec3::new(0.5, 1.0, -0.2),
            ],
            vec![[0, 1, 2], [4, 3, 5]],
        );
        let n = SeamNormals::new(&m).normals(&m.positions);
        assert!((n[0] - n[3]).length() < 1e-6 && (n[1] - n[4]).length() < 1e-6);
        // Unwelded, the duplicates disagree: that was the crease.
        let raw = m.vertex_normals_for(&m.positions);
        assert!((raw[0] - raw[3]).length() > 0.1);
    }

    fn quad() -> Mesh {
        Mesh::new(
            "quad",
            vec![
                Vec3::new(0.0, 0.0, 0.0),
                Vec3::new(1.0, 0.0, 0.0),
                Vec3::new(1.0, 1.0, 0.0),
                Vec3::new(0.0, 1.0, 0.0),
            ],
            vec![[0, 1, 2], [0, 2, 3]],
        )
    }

    #[test]
    fn glb_chunks_are_aligned_and_lengths_consistent() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.glb");
        write_static_glb(&path, &[&quad()]).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..4], b"glTF");
        let word = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
        assert_eq!(word(8), bytes.len());
        let json_len = word(12);
        assert_eq!(json_len % 4, 0);
        assert_eq!(&bytes[16..20], b"JSON");
        let bin_at = 20 + json_len;
        assert_eq!(word(bin_at) % 4, 0);
        assert_eq!(&bytes[bin_at + 4..bin_at + 8], b"BIN\0");
        assert_eq!(bin_at + 8 + word(bin_at), bytes.len());
        let root: Value = serde_json::from_slice(&bytes[20..20 + json_len]).unwrap();
        assert_eq!(root["asset"]["version"], "2.0");
        assert_eq!(
            root["asset"]["generator"],
            format!("Drape {}", crate::VERSION)
        );
        assert_eq!(root["meshes"][0]["name"], "quad");
    }

    #[test]
    fn bad_bakes_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("b.glb");
        let g = quad();
        let ok = vec![g.positions.clone()];
        let bake = |frames: &[Vec<Vec3>], fps: f32| {
            write_bake_glb(
                &path,
                &BakeExport {
                    garment: &g,
                    frames,
                    fps,
                    body: None,
                },
            )
        };
        assert!(matches!(
            bake(&[], 24.0),
            Err(GltfExportError::NoFrames { .. })
        ));
        assert!(matches!(
            bake(&ok, 0.0),
            Err(GltfExportError::BadFps { .. })
        ));
        assert!(matches!(
            bake(&ok, f32::NAN),
            Err(GltfExportError::BadFps { .. })
        ));
        let short = vec![g.positions[..3].to_vec()];
        assert!(matches!(
            bake(&short, 24.0),
            Err(GltfExportError::FrameLength {
                frame: 0,
                got: 3,
                ..
            })
        ));
        let mut nan = ok.clone();
        nan[0][2].x = f32::NAN;
        let e = bake(&nan, 24.0).unwrap_err();
        assert!(e.to_string().contains("frame 0, vertex 2"), "{e}");
        assert!(e.to_string().contains("b.glb"), "{e}");
        assert!(!path.exists());
        bake(&ok, 24.0).unwrap();
        assert!(path.exists());
    }
}
