//! The animated body: glTF skins, animation sampling and linear blend skinning.
//!
//! A [`Rig`] is read from a glTF 2.0 file: every triangle mesh instance of the default scene
//! (each a [`BodyPart`]), the node hierarchy ([`Node`]), the skins ([`Skin`]) and the animations.
//! A [`Pose`] holds every node's local translation, rotation and scale, and the morph weights of
//! every node with a morphed mesh; [`Rig::sample`] evaluates an animation at a time into a pose,
//! and [`Rig::skin`] turns a pose into the world-space positions of every body vertex.
//!
//! # Skinning (glTF 2.0 §3.7.3, linear blend skinning)
//!
//! ```text
//! L(n) = T(t_n) · R(q_n) · S(s_n)              node n's local transform at the pose
//! G(n) = G(parent(n)) · L(n),  G(root) = L(root)  its global transform
//! p    = x₀ + Σ_k m_k · δ_k                    the morphed rest position (mesh space, m)
//! x    = Σ_{i=1..4} w_i · G(j_i) · B(j_i) · p  a skinned vertex (world, m)
//! x    = G(node) · p                           a vertex of a mesh without a skin
//! ```
//!
//! `t_n` is a translation (m), `q_n` a unit quaternion, `s_n` a scale (dimensionless); `x₀` is the
//! vertex's `POSITION`, `δ_k` the `POSITION` delta of morph target `k` and `m_k` its weight in the
//! pose; `j_i` and `w_i` are the joints (`JOINTS_0`, indices into the skin's joint list) and
//! weights (`WEIGHTS_0`, normalised on load so that `Σ w_i = 1`); `B(j)` is the joint's inverse
//! bind matrix (the identity when the skin has none). As the glTF specification requires, the
//! transform of the node that instances a skinned mesh, and of its ancestors, is ignored: the
//! joints alone place the mesh.
//!
//! # Animation (glTF 2.0 §3.11 and Appendix C)
//!
//! A channel's keys are at times `t_0 < t_1 < … < t_{n−1}` (s). For `t_k ≤ t < t_{k+1}`, with
//! `Δ = t_{k+1} − t_k` and `u = (t − t_k) / Δ`:
//!
//! ```text
//! STEP         v(t) = v_k
//! LINEAR       v(t) = (1 − u) · v_k + u · v_{k+1}
//!              rotations: slerp(q_k, ±q_{k+1}, u), the sign making q_k · (±q_{k+1}) ≥ 0,
//!              so the rotation takes the shortest path
//! CUBICSPLINE  v(t) = (2u³ − 3u² + 1) · v_k + (u³ − 2u² + u) · Δ · b_k
//!                   + (−2u³ + 3u²) · v_{k+1} + (u³ − u²) · Δ · a_{k+1}
//!              b_k: the out-tangent of key k, a_{k+1}: the in-tangent of key k+1;
//!              rotations are normalised afterwards
//! ```
//!
//! Before its first key a channel holds its first value, after its last key its last value.
//! Nodes no channel animates keep their rest translation, rotation and scale (a node given as a
//! `matrix` is decomposed into these on load). An animation runs from the earliest first key to
//! the latest last key of its channels; [`Playback`] says what happens outside that interval.
//!
//! # Robustness
//!
//! Accessors are read with every bound checked (`file::gltf`); a damaged or unsupported
//! file is a [`BodyError`] naming it, never a panic. Repairable problems (skin weights that do
//! not sum to 1, more than four influences per vertex, matrices with shear) become
//! [`Rig::warnings`].

mod anim;
mod load;
mod parts;
mod pose;
mod skin;
mod units;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::file::GltfImportError;
use crate::math::{Real, Vec2, Vec3};
use crate::mesh::{Mesh, MeshError};

pub use parry3d::glamx::{Mat4, Quat};
pub use pose::Pose;
pub(crate) use units::bounds;

/// Problems loading a body or finding an animation in it; every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// The file could not be read, or is not valid glTF 2.0 (the message names the file).
    #[error(transparent)]
    Gltf(#[from] GltfImportError),
    /// The file is valid glTF but not a usable body: a broken hierarchy, skin or mesh.
    ///
    /// How to fix: re-export the body from the modelling tool and check it with the Khronos
    /// glTF-Validator.
    #[error("{}: {reason}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A vertex is bound to a joint its skin does not have.
    ///
    /// How to fix: re-export the skin; the joint indices in `JOINTS_0` index the skin's `joints`.
    #[error("{}: mesh '{mesh}', vertex {vertex}: JOINTS_0 names joint {joint}, but skin {skin} has only {joints} joints", path.display())]
    JointOutOfRange {
        /// The file.
        path: PathBuf,
        /// The mesh name.
        mesh: String,
        /// The vertex, counted over the mesh's triangle primitives.
        vertex: usize,
        /// The joint index found.
        joint: u16,
        /// The skin's index in the file.
        skin: usize,
        /// Number of joints of the skin.
        joints: usize,
    },
    /// An animation sampler cannot be evaluated: key times not finite or not strictly
    /// increasing, values missing or not finite, or an unsupported accessor type.
    ///
    /// How to fix: re-export (bake) the animation.
    #[error("{}: animation {animation}, sampler {sampler}: {reason}", path.display())]
    BadSampler {
        /// The file.
        path: PathBuf,
        /// The animation: its index and name.
        animation: String,
        /// The sampler's index within the animation.
        sampler: usize,
        /// What is wrong.
        reason: String,
    },
    /// The default scene has no triangle mesh.
    #[error("{}: the file contains no triangle mesh (in its default scene)", path.display())]
    NoMeshes {
        /// The file.
        path: PathBuf,
    },
    /// No mesh instance has the requested name.
    #[error("{}: no mesh named '{name}'; the file has: {}", path.display(), quoted(available))]
    MeshNotFound {
        /// The file.
        path: PathBuf,
        /// The requested name.
        name: String,
        /// The names of the mesh instances in the file.
        available: Vec<String>,
    },
    /// The requested animation does not exist.
    #[error("{}: no animation {wanted}; the file has: {}", path.display(), listed(available))]
    AnimationNotFound {
        /// The file.
        path: PathBuf,
        /// The animation asked for, e.g. `'Walk'` or `#3`.
        wanted: String,
        /// The animations of the file, e.g. `#0 'Walk'`.
        available: Vec<String>,
    },
    /// The rest mesh is unusable (non-finite or far-away positions).
    #[error("{}: {source}", path.display())]
    InvalidMesh {
        /// The file.
        path: PathBuf,
        /// What is wrong with the mesh.
        #[source]
        source: MeshError,
    },
}

/// Formats names as `'a', 'b'` (or `(none)`).
fn quoted(names: &[String]) -> String {
    if names.is_empty() {
        return "(none)".into();
    }
    let q: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    q.join(", ")
}

/// Joins already formatted entries with `, ` (or `(none)`).
fn listed(entries: &[String]) -> String {
    if entries.is_empty() {
        "(none)".into()
    } else {
        entries.join(", ")
    }
}

/// Which animation of a body to play: by index in the file, or by name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum AnimationRef {
    /// The animation's index in the file (from 0).
    Index(usize),
    /// The animation's name (the first one with that name).
    Name(String),
}

/// What happens when the time runs outside an animation's interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Playback {
    /// The animation repeats: the time wraps into `[start, end)`.
    Loop,
    /// The animation holds its first pose before its start and its last pose after its end.
    #[default]
    Clamp,
}

/// A summary of one animation.
#[derive(Clone, Debug, PartialEq)]
pub struct AnimationInfo {
    /// The animation's name in the file, if it has one.
    pub name: Option<String>,
    /// Time of the earliest key of its channels (s).
    pub start_s: f64,
    /// Time of the latest key of its channels (s).
    pub end_s: f64,
    /// Number of channels read (channels that animate nothing are dropped with a warning).
    pub channels: usize,
}

impl AnimationInfo {
    /// The animation's length, `end_s − start_s` (s).
    pub fn duration_s(&self) -> f64 {
        self.end_s - self.start_s
    }
}

/// One node of the file's hierarchy, at its rest transform.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The node's name in the file, if it has one.
    pub name: Option<String>,
    /// The parent node, or `None` for a root.
    pub parent: Option<usize>,
    /// The child nodes, in file order.
    pub children: Vec<usize>,
    /// Rest translation relative to the parent (m).
    pub translation: Vec3,
    /// Rest rotation relative to the parent (unit quaternion).
    pub rotation: Quat,
    /// Rest scale relative to the parent (dimensionless).
    pub scale: Vec3,
    /// The glTF mesh this node instances, if any.
    pub mesh: Option<usize>,
    /// The skin that deforms that mesh, if any.
    pub skin: Option<usize>,
    /// Default morph weights of the instanced mesh (the node's `weights`, else the mesh's, else
    /// zeros), one per morph target; empty when the mesh has no morph targets.
    pub weights: Vec<f32>,
}

/// A skin: the joints that deform a mesh and their inverse bind matrices.
#[derive(Clone, Debug, PartialEq)]
pub struct Skin {
    /// The skin's name in the file, if it has one.
    pub name: Option<String>,
    /// The joints, as node indices; `JOINTS_0` indexes this list.
    pub joints: Vec<usize>,
    /// One inverse bind matrix per joint (mesh space to the joint's space, m); the identity when
    /// the file gives none.
    pub inverse_bind: Vec<Mat4>,
    /// The skeleton root the file names, if any (informative only).
    pub skeleton: Option<usize>,
}

/// One mesh instance of the body, in the mesh's own space (the glTF `POSITION` values).
///
/// All triangle primitives of the mesh are merged. A part's vertices are
/// `vertices.start..vertices.end` of [`Rig::rest_mesh`] and of [`Rig::skin`]'s output.
#[derive(Clone, Debug, PartialEq)]
pub struct BodyPart {
    /// The mesh name, else the node name, else `mesh{index}`.
    pub name: String,
    /// The node that instances the mesh.
    pub node: usize,
    /// The glTF mesh index.
    pub mesh: usize,
    /// The skin deforming the part, or `None` for a mesh that moves with its node.
    pub skin: Option<usize>,
    /// Vertex positions in mesh space (m).
    pub positions: Vec<Vec3>,
    /// Vertex normals in mesh space, when every primitive has them.
    pub normals: Option<Vec<Vec3>>,
    /// Texture coordinates, when every primitive has them (dimensionless).
    pub uvs: Option<Vec<Vec2>>,
    /// Triangles, as indices into `positions`, in the file's winding.
    pub indices: Vec<[u32; 3]>,
    /// Per vertex, four indices into the skin's joint list; empty without a skin.
    pub joints: Vec<[u16; 4]>,
    /// Per vertex, the four weights of `joints`, summing to 1; empty without a skin.
    pub weights: Vec<[f32; 4]>,
    /// Morph targets: per target, one `POSITION` delta per vertex (m).
    pub morph_targets: Vec<Vec<Vec3>>,
    /// This part's vertices in the concatenated body.
    pub vertices: Range<usize>,
}

/// A loaded body: its parts, hierarchy, skins and animations, ready to pose and skin.
#[derive(Debug)]
pub struct Rig {
    /// The file it was read from.
    path: PathBuf,
    /// Every node of the file.
    nodes: Vec<Node>,
    /// Node indices, every parent before its children.
    order: Vec<usize>,
    /// Every skin of the file.
    skins: Vec<Skin>,
    /// The mesh instances of the body.
    parts: Vec<BodyPart>,
    /// One summary per animation.
    animations: Vec<AnimationInfo>,
    /// The channels of each animation.
    clips: Vec<anim::Clip>,
    /// The body at the rest pose, in world space.
    rest_mesh: Mesh,
    /// Repairs made on load.
    warnings: Vec<String>,
    /// Whether a channel moves a vertex.
    animated: bool,
    /// What the skinning loop reads.
    hot: skin::SkinData,
    /// Matrices reused by every [`Rig::skin`] call.
    scratch: Mutex<skin::Scratch>,
}

impl Clone for Rig {
    fn clone(&self) -> Self {
        Self {
            path: self.path.clone(),
            nodes: self.nodes.clone(),
            order: self.order.clone(),
            skins: self.skins.clone(),
            parts: self.parts.clone(),
            animations: self.animations.clone(),
            clips: self.clips.clone(),
            rest_mesh: self.rest_mesh.clone(),
            warnings: self.warnings.clone(),
            animated: self.animated,
            hot: self.hot.clone(),
            scratch: Mutex::new(skin::Scratch::default()),
        }
    }
}

impl Rig {
    /// The name a body's node goes by in a scene's `exclude_joints`: its own, or `node_N`
    /// (its glTF index) for a node without one (CesiumMan's joints have none).
    pub fn node_label(&self, node: usize) -> String {
        match self.nodes.get(node).and_then(|n| n.name.as_deref()) {
            Some(name) if !name.is_empty() => name.to_string(),
            _ => format!("node_{node}"),
        }
    }

    /// The labels ([`Self::node_label`]) of every skin's joints, in skin order.
    pub fn joint_labels(&self) -> Vec<String> {
        let mut seen = std::collections::BTreeSet::new();
        (self.skins.iter())
            .flat_map(|s| s.joints.iter().copied())
            .filter(|&j| seen.insert(j))
            .map(|j| self.node_label(j))
            .collect()
    }

    /// How much each rest-mesh vertex follows the nodes named `joints` ([`Self::node_label`])
    /// and their descendants: the sum of its skin weights to them, in `[0, 1]`. A part without
    /// a skin follows its node rigidly: 1 for every vertex when that node is one of them, else
    /// 0. Fails with a message that lists the joints when a name is not a node of the file.
    pub fn joint_influence(&self, joints: &[String]) -> Result<Vec<Real>, BodyError> {
        let mut chosen = vec![false; self.nodes.len()];
        for name in joints {
            let node = (0..self.nodes.len())
                .find(|&i| self.node_label(i) == *name)
                .ok_or_else(|| BodyError::Malformed {
                    path: self.path.clone(),
                    reason: format!(
                        "exclude_joints: no node named '{name}'; the joints are: {}",
                        self.joint_labels().join(", ")
                    ),
                })?;
            chosen[node] = true;
        }
        // Parents come before their children in `order`.
        for &n in &self.order {
            if let Some(parent) = self.nodes[n].parent {
                chosen[n] |= chosen[parent];
            }
        }
        let mut influence = vec![0.0; self.rest_mesh.positions.len()];
        for part in &self.parts {
            let out = &mut influence[part.vertices.clone()];
            match part.skin.and_then(|s| self.skins.get(s)) {
                None => out.fill(if chosen[part.node] { 1.0 } else { 0.0 }),
                Some(skin) => {
                    for ((o, j), w) in out.iter_mut().zip(&part.joints).zip(&part.weights) {
                        let sum: f32 = (0..4)
                            .filter(|&k| skin.joints.get(j[k] as usize).is_some_and(|&n| chosen[n]))
                            .map(|k| w[k])
                            .sum();
                        *o = (sum as Real).clamp(0.0, 1.0);
                    }
                }
            }
        }
        Ok(influence)
    }

    /// Loads the body: every triangle mesh instance in the default scene (or the first scene;
    /// every root node when the file has none), or only the instances named `mesh` (mesh name,
    /// else node name), each with its skin if it has one.
    pub fn load(path: &Path, mesh: Option<&str>) -> Result<Rig, BodyError> {
        load::load(path, mesh)
    }

    /// The file the body was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Repairs made while loading, each naming the file, e.g. `CesiumMan.glb: skin weights of
    /// 210 vertices did not sum to 1; normalised`.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The world-space body at the rest pose (every node at its own translation, rotation and
    /// scale; no animation), all parts concatenated in [`Rig::parts`] order (m).
    ///
    /// Its vertex order is that of [`Rig::skin`]'s output, and `rest_mesh().positions` equals
    /// `skin(&rest_pose())`. Triangles whose rest transform mirrors (negative determinant) are
    /// reversed so they stay counter-clockwise from the front. It has UVs when every part has
    /// them, and no normals.
    pub fn rest_mesh(&self) -> &Mesh {
        &self.rest_mesh
    }

    /// Number of body vertices, over all parts.
    pub fn vertex_count(&self) -> usize {
        self.rest_mesh.positions.len()
    }

    /// The mesh instances of the body, in scene order.
    pub fn parts(&self) -> &[BodyPart] {
        &self.parts
    }

    /// Every node of the file, indexed like the file's nodes.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Every skin of the file, indexed like the file's skins.
    pub fn skins(&self) -> &[Skin] {
        &self.skins
    }

    /// One summary per animation, indexed like the file's animations.
    pub fn animations(&self) -> &[AnimationInfo] {
        &self.animations
    }

    /// The index of an animation, or an error listing the animations of the file.
    pub fn find_animation(&self, r: &AnimationRef) -> Result<usize, BodyError> {
        let found = match r {
            AnimationRef::Index(i) => (*i < self.animations.len()).then_some(*i),
            AnimationRef::Name(name) => self
                .animations
                .iter()
                .position(|a| a.name.as_deref() == Some(name.as_str())),
        };
        found.ok_or_else(|| BodyError::AnimationNotFound {
            path: self.path.clone(),
            wanted: match r {
                AnimationRef::Index(i) => format!("#{i}"),
                AnimationRef::Name(n) => format!("'{n}'"),
            },
            available: self
                .animations
                .iter()
                .enumerate()
                .map(|(i, a)| match &a.name {
                    Some(n) => format!("#{i} '{n}'"),
                    None => format!("#{i} (unnamed)"),
                })
                .collect(),
        })
    }

    /// The nodes animation `animation` animates (translation, rotation, scale or morph
    /// weights), sorted, without repeats; empty for an index out of range. An exporter writes
    /// channels for these and the rest transform for the others.
    pub fn animated_nodes(&self, animation: usize) -> Vec<usize> {
        let mut nodes: Vec<usize> = self
            .clips
            .get(animation)
            .map(|c| c.channels.iter().map(|ch| ch.node).collect())
            .unwrap_or_default();
        nodes.sort_unstable();
        nodes.dedup();
        nodes
    }

    /// Whether some animation channel moves a body vertex: it animates a joint of a part's
    /// skin or an ancestor of one, a node carrying a part without a skin or an ancestor of it,
    /// or the morph weights of a part with morph targets.
    pub fn is_animated(&self) -> bool {
        self.animated
    }

    /// The rest pose: every node at its own translation, rotation and scale, every mesh at its
    /// default morph weights.
    pub fn rest_pose(&self) -> Pose {
        Pose::rest(&self.nodes)
    }

    /// The pose of animation `animation` at `time_s` (s).
    ///
    /// With [`Playback::Loop`] the time wraps into `[start_s, end_s)`; with [`Playback::Clamp`]
    /// it is clamped to `[start_s, end_s]`. A NaN time means `start_s`. An index out of range
    /// gives the rest pose (use [`Rig::find_animation`] to get a valid one).
    pub fn sample(&self, animation: usize, time_s: f64, playback: Playback) -> Pose {
        let mut pose = self.rest_pose();
        self.sample_into(animation, time_s, playback, &mut pose);
        pose
    }

    /// [`Rig::sample`] into an existing pose, reusing its storage.
    pub fn sample_into(&self, animation: usize, time_s: f64, playback: Playback, pose: &mut Pose) {
        pose.reset_to_rest(&self.nodes);
        let (Some(clip), Some(info)) = (self.clips.get(animation), self.animations.get(animation))
        else {
            return;
        };
        let t = anim::wrap_time(time_s, info.start_s, info.end_s, playback);
        clip.apply(t, pose);
    }

    /// Blends two poses of this rig: translations, scales and morph weights are interpolated
    /// linearly, rotations by shortest-path slerp. `s = 0` gives `a`, `s = 1` gives `b`.
    pub fn blend(a: &Pose, b: &Pose, s: f32) -> Pose {
        Pose::blend(a, b, s)
    }

    /// The global transform of every node at `pose`, indexed like [`Rig::nodes`] (m).
    pub fn world_transforms(&self, pose: &Pose) -> Vec<Mat4> {
        let mut out = Vec::new();
        skin::globals(&self.nodes, &self.order, pose, &mut out);
        out
    }

    /// The world-space position of every body vertex at `pose` (m); `out` is resized to
    /// [`Rig::vertex_count`].
    ///
    /// After the first call this allocates nothing: the per-vertex data is prepared on load and
    /// the joint matrices live in a buffer kept by the rig.
    pub fn skin(&self, pose: &Pose, out: &mut Vec<Vec3>) {
        let mut scratch = self
            .scratch
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let skin::Scratch { globals, joints } = &mut *scratch;
        skin::globals(&self.nodes, &self.order, pose, globals);
        self.hot.run(&self.parts, globals, pose, joints, out);
    }

    /// Like [`Rig::skin`], but with the global transform of every node given (indexed like
    /// [`Rig::nodes`]; missing entries count as the identity) instead of computed from a pose.
    /// `pose` gives only the morph weights.
    ///
    /// With each joint's global set to the inverse of its inverse bind matrix (the bind pose),
    /// every skinned vertex lands on its `POSITION`.
    pub fn skin_with_globals(&self, globals: &[Mat4], pose: &Pose, out: &mut Vec<Vec3>) {
        let mut joints = Vec::new();
        self.hot.run(&self.parts, globals, pose, &mut joints, out);
    }
}

/// The file, for error messages (full path) and warnings (file name).
struct Ctx<'a> {
    /// The file.
    pub path: &'a Path,
    /// Its file name.
    pub label: String,
}

impl Ctx<'_> {
    pub fn malformed(&self, reason: impl Into<String>) -> BodyError {
        BodyError::Malformed {
            path: self.path.to_path_buf(),
            reason: reason.into(),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.path.to_path_buf()
    }
}
