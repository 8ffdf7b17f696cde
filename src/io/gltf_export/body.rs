//! The animated body of a bake: the rig's skinned character, keyed at every baked frame.
//!
//! For `F` baked frames with the body's poses `P_0 … P_{F−1}` (pose `P_k` at `t_k = k / fps`,
//! the garment's key times), the body adds to the document:
//!
//! ```text
//! nodes      every node of each rig tree that holds a body part, a joint of a used skin or a
//!            skeleton root, with its name, children and rest translation, rotation and scale;
//!            the tree roots are scene roots next to the garment node. A rigid part's mesh stays
//!            on its node; a skinned part's mesh and skin go on a root node of their own, named
//!            like the part's node, with the identity transform (glTF ignores the transforms of
//!            a skinned mesh's node and its ancestors; the validator warns when it is no root);
//!            the part's original node is dropped when that leaves it an empty leaf
//! meshes     one per body part, in mesh space (the file's own POSITION values, m):
//!              POSITION (exact min/max), NORMAL (the part's own, renormalised, or computed),
//!              TEXCOORD_0 when the part has UVs, and for a skinned part JOINTS_0 (UNSIGNED_SHORT)
//!              and WEIGHTS_0 (FLOAT); morph targets (POSITION deltas, m) and their rest weights
//! skins      every skin a part uses: joints, inverse bind matrices (a MAT4 accessor), skeleton
//! animation  channels added to the garment's animation, all sharing its input t_k (s):
//!              translation / rotation / scale, LINEAR, for every node whose value differs
//!              from its rest value in some pose: output v_k = value at P_k
//!              weights, LINEAR, on the node holding the part's mesh, for every part whose morph
//!              weights differ from its rest weights in some pose
//! ```
//!
//! A node without a channel keeps its rest transform, which is then its value in every pose.
//! Rotation keys are unit quaternions, each one's sign chosen so that `q_{k−1} · q_k ≥ 0`: the
//! interpolation between keys never turns the long way round.
//!
//! Skin influences are written clean, as the glTF-Validator requires, whatever the source file
//! held: per vertex, a joint listed twice has its weights summed into one slot, slots of zero
//! weight name joint 0, and the weights are renormalised so they sum to 1.

use std::path::Path;

use serde_json::{json, Value};

use super::{check_mesh, named, unit_normals, Builder, GltfExportError, ARRAY_BUFFER};
use crate::body::{Pose, Quat, Rig};
use crate::math::Vec3;
use crate::mesh::Mesh;

/// One animated property of one rig node (its index in the rig).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Track {
    /// The node's translation (m).
    Translation(usize),
    /// The node's rotation (unit quaternion).
    Rotation(usize),
    /// The node's scale.
    Scale(usize),
    /// The morph weights of the node's part: the node, and the number of targets.
    Weights(usize, usize),
}

/// A body part ready to write: its mesh in mesh space and its clean skin influences.
struct PartData {
    /// The rig's part index.
    part: usize,
    /// Positions (m), indices, unit normals and UVs, in mesh space.
    mesh: Mesh,
    /// Per vertex, four joint indices into the part's skin (empty without a skin).
    joints: Vec<[u16; 4]>,
    /// Per vertex, the weights of `joints`, summing to 1 (empty without a skin).
    weights: Vec<[f32; 4]>,
}

/// What the body adds to the document, with indices already offset past the garment's.
pub(super) struct Written {
    /// The body's nodes, to append after the document's first `first_node` nodes.
    pub(super) nodes: Vec<Value>,
    /// The body's root nodes (document indices), to add to the scene.
    pub(super) roots: Vec<usize>,
    /// One mesh per part, to append after the document's first `first_mesh` meshes.
    pub(super) meshes: Vec<Value>,
    /// The skins (the document's only ones).
    pub(super) skins: Vec<Value>,
    /// Per animated property: the channel's `target` and its sampler.
    pub(super) tracks: Vec<(Value, Value)>,
}

/// The animated body, checked and laid out, before anything is written.
pub(super) struct Plan<'a> {
    /// The body.
    rig: &'a Rig,
    /// One pose per baked frame.
    poses: &'a [Pose],
    /// The rig nodes written, in rig order.
    kept: Vec<usize>,
    /// Per rig node, its position in `kept`.
    new_node: Vec<Option<usize>>,
    /// Per rig node, its position in `parts` when it carries a written part.
    part_of: Vec<Option<usize>>,
    /// The rig skins written, in rig order.
    skins: Vec<usize>,
    /// Per rig skin, its position in `skins`.
    new_skin: Vec<Option<usize>>,
    /// The parts written.
    parts: Vec<PartData>,
    /// The animated properties, in node order.
    tracks: Vec<Track>,
}

/// Per vertex, the influences as the glTF-Validator wants them: no joint twice with a weight,
/// joint 0 in the slots of zero weight, weights summing to 1.
fn clean_influence(joints: [u16; 4], weights: [f32; 4]) -> ([u16; 4], [f32; 4]) {
    let mut j = [0u16; 4];
    let mut w = [0f32; 4];
    let mut used = 0;
    for (&joint, &weight) in joints.iter().zip(&weights) {
        if weight.is_nan() || weight <= 0.0 {
            continue;
        }
        match j[..used].iter().position(|&x| x == joint) {
            Some(slot) => w[slot] += weight,
            None => {
                j[used] = joint;
                w[used] = weight;
                used += 1;
            }
        }
    }
    let sum: f32 = w.iter().sum();
    if used == 0 || !(sum.is_finite() && sum > 0.0) {
        return ([joints[0], 0, 0, 0], [1.0, 0.0, 0.0, 0.0]);
    }
    for x in &mut w[..used] {
        *x /= sum;
    }
    // Put the rounding left over into the largest weight, so the sum is 1 as nearly as f32
    // allows.
    let big = (0..used)
        .max_by(|&a, &b| w[a].total_cmp(&w[b]))
        .unwrap_or(0);
    let others: f32 = (0..used).filter(|&k| k != big).map(|k| w[k]).sum();
    w[big] = 1.0 - others;
    (j, w)
}

/// `q`, or `−q` when that is closer to `previous` (`previous · q ≥ 0` after the flip).
fn continuous(previous: Option<Quat>, q: Quat) -> Quat {
    match previous {
        Some(p) if p.dot(q) < 0.0 => -q,
        _ => q,
    }
}

/// A unit quaternion, or the identity for a degenerate one.
fn unit(q: Quat) -> Quat {
    let len = q.length();
    if len.is_finite() && len > 1e-12 {
        q / len
    } else {
        Quat::IDENTITY
    }
}

impl<'a> Plan<'a> {
    /// Checks the poses against the rig and the frames, and lays the body out: which nodes,
    /// parts and skins are written, and which properties are animated.
    pub(super) fn new(
        path: &Path,
        rig: &'a Rig,
        poses: &'a [Pose],
        frames: usize,
    ) -> Result<Self, GltfExportError> {
        if poses.len() != frames {
            return Err(GltfExportError::PoseCount {
                path: path.to_path_buf(),
                poses: poses.len(),
                frames,
            });
        }
        let nodes = rig.nodes();
        for (k, pose) in poses.iter().enumerate() {
            if pose.node_count() != nodes.len() {
                return Err(GltfExportError::PoseNodes {
                    path: path.to_path_buf(),
                    pose: k,
                    got: pose.node_count(),
                    expected: nodes.len(),
                });
            }
            for n in 0..nodes.len() {
                let finite = pose.translation(n).is_finite()
                    && pose.rotation(n).is_finite()
                    && pose.scale(n).is_finite()
                    && pose.morph_weights(n).iter().all(|w| w.is_finite());
                if !finite {
                    return Err(GltfExportError::NonFinite {
                        path: path.to_path_buf(),
                        what: format!("body pose {k}, node {n}"),
                    });
                }
            }
        }

        let mut parts = Vec::new();
        let mut part_of = vec![None; nodes.len()];
        for (i, part) in rig.parts().iter().enumerate() {
            if part.indices.is_empty() || part_of.get(part.node).is_none_or(Option::is_some) {
                continue;
            }
            let mut mesh = Mesh::new(
                part.name.clone(),
                part.positions.clone(),
                part.indices.clone(),
            );
            mesh.uvs.clone_from(&part.uvs);
            mesh.normals.clone_from(&part.normals);
            check_mesh(path, &mesh)?;
            mesh.normals = Some(unit_normals(&mesh));
            for (k, target) in part.morph_targets.iter().enumerate() {
                let bad = target
                    .iter()
                    .position(|d| !d.is_finite())
                    .or((target.len() != mesh.positions.len()).then_some(target.len()));
                if let Some(v) = bad {
                    return Err(GltfExportError::NonFinite {
                        path: path.to_path_buf(),
                        what: format!("body part '{}' morph target {k}, vertex {v}", part.name),
                    });
                }
            }
            let (joints, weights) = match part.skin {
                Some(_) => part
                    .joints
                    .iter()
                    .zip(&part.weights)
                    .map(|(&j, &w)| clean_influence(j, w))
                    .unzip(),
                None => (Vec::new(), Vec::new()),
            };
            part_of[part.node] = Some(parts.len());
            parts.push(PartData {
                part: i,
                mesh,
                joints,
                weights,
            });
        }

        // The nodes that must be written, then whole trees around them.
        let mut needed = Vec::new();
        let mut used_skin = vec![false; rig.skins().len()];
        for p in &parts {
            let part = &rig.parts()[p.part];
            needed.push(part.node);
            if let Some(s) = part
                .skin
                .and_then(|s| rig.skins().get(s).map(|skin| (s, skin)))
            {
                used_skin[s.0] = true;
                needed.extend(&s.1.joints);
                needed.extend(s.1.skeleton);
            }
        }
        let mut in_tree = vec![false; nodes.len()];
        let mut stack = Vec::new();
        for &n in &needed {
            // Up to the root; the rig's hierarchy is a checked forest, and the step count bounds
            // the walk anyway.
            let mut root = n;
            for _ in 0..nodes.len() {
                match nodes.get(root).and_then(|x| x.parent) {
                    Some(p) => root = p,
                    None => break,
                }
            }
            if in_tree.get(root) == Some(&false) {
                stack.push(root);
            }
            while let Some(m) = stack.pop() {
                if let Some(flag) = in_tree.get_mut(m).filter(|f| !**f) {
                    *flag = true;
                    stack.extend(&nodes[m].children);
                }
            }
        }
        // A leaf that only held a skinned part would be left empty once the part moves to a
        // root node of its own (see `write`): it is dropped. Its transform moved nothing.
        let mut joint = vec![false; nodes.len()];
        for skin in (0..used_skin.len()).filter(|&s| used_skin[s]) {
            let skin = &rig.skins()[skin];
            for &j in skin.joints.iter().chain(&skin.skeleton) {
                if let Some(flag) = joint.get_mut(j) {
                    *flag = true;
                }
            }
        }
        for p in &parts {
            let part = &rig.parts()[p.part];
            if part.skin.is_some() && nodes[part.node].children.is_empty() && !joint[part.node] {
                in_tree[part.node] = false;
            }
        }
        let kept: Vec<usize> = (0..nodes.len()).filter(|&n| in_tree[n]).collect();
        let mut new_node = vec![None; nodes.len()];
        for (i, &n) in kept.iter().enumerate() {
            new_node[n] = Some(i);
        }
        let skins: Vec<usize> = (0..used_skin.len()).filter(|&s| used_skin[s]).collect();
        let mut new_skin = vec![None; used_skin.len()];
        for (i, &s) in skins.iter().enumerate() {
            new_skin[s] = Some(i);
        }

        let mut tracks = Vec::new();
        for &n in &kept {
            let rest = &nodes[n];
            if poses.iter().any(|p| p.translation(n) != rest.translation) {
                tracks.push(Track::Translation(n));
            }
            if poses.iter().any(|p| p.rotation(n) != rest.rotation) {
                tracks.push(Track::Rotation(n));
            }
            if poses.iter().any(|p| p.scale(n) != rest.scale) {
                tracks.push(Track::Scale(n));
            }
        }
        for p in &parts {
            let part = &rig.parts()[p.part];
            let (n, targets) = (part.node, part.morph_targets.len());
            let rest = &nodes[n].weights;
            if targets > 0
                && rest.len() == targets
                && poses
                    .iter()
                    .any(|pose| pose.morph_weights(n) != rest.as_slice())
            {
                tracks.push(Track::Weights(n, targets));
            }
        }
        Ok(Self {
            rig,
            poses,
            kept,
            new_node,
            part_of,
            skins,
            new_skin,
            parts,
            tracks,
        })
    }

    /// The written skin (its index in the document) of written part `p`, if it is skinned.
    fn skin_of(&self, p: usize) -> Option<usize> {
        let part = &self.rig.parts()[self.parts.get(p)?.part];
        part.skin
            .and_then(|s| self.new_skin.get(s).copied().flatten())
    }

    /// Bytes of binary data the body adds: part attributes, indices and morph targets, inverse
    /// bind matrices and animation outputs.
    pub(super) fn bytes(&self) -> u64 {
        let mut total = 0u64;
        for p in &self.parts {
            let part = &self.rig.parts()[p.part];
            let n = p.mesh.positions.len() as u64;
            let uv = if p.mesh.uvs.is_some() { 8 } else { 0 };
            let skin = if p.joints.is_empty() { 0 } else { 8 + 16 };
            let targets = part.morph_targets.len() as u64;
            total = total
                .saturating_add(n.saturating_mul(24 + uv + skin))
                .saturating_add((p.mesh.indices.len() as u64).saturating_mul(12))
                .saturating_add(n.saturating_mul(12).saturating_mul(targets));
        }
        for &s in &self.skins {
            let joints = self.rig.skins()[s].joints.len() as u64;
            total = total.saturating_add(joints.saturating_mul(64));
        }
        let keys = self.poses.len() as u64;
        for t in &self.tracks {
            let per_key = match *t {
                Track::Translation(_) | Track::Scale(_) => 12,
                Track::Rotation(_) => 16,
                Track::Weights(_, w) => (w as u64).saturating_mul(4),
            };
            // Plus up to 3 bytes of alignment per accessor.
            total = total.saturating_add(keys.saturating_mul(per_key).saturating_add(3));
        }
        total
    }

    /// Writes the body's data into `b` and returns its JSON: nodes numbered from `first_node`,
    /// meshes from `first_mesh`, samplers reading the key times from accessor `input`.
    pub(super) fn write(
        &self,
        b: &mut Builder,
        first_node: usize,
        first_mesh: usize,
        input: usize,
    ) -> Written {
        let rig = self.rig;
        let node_index = |n: usize| self.new_node[n].map(|i| first_node + i);

        let mut meshes = Vec::with_capacity(self.parts.len());
        for p in &self.parts {
            let part = &rig.parts()[p.part];
            let normals = p.mesh.normals.clone().unwrap_or_default();
            let mut primitive = b.static_primitive(&p.mesh, &normals);
            if !p.joints.is_empty() {
                let joints = b.joints(&p.joints);
                let flat: Vec<f32> = p.weights.iter().flatten().copied().collect();
                let weights = b.floats(&flat, 4, "VEC4", Some(ARRAY_BUFFER));
                primitive["attributes"]["JOINTS_0"] = json!(joints);
                primitive["attributes"]["WEIGHTS_0"] = json!(weights);
            }
            let mut mesh = json!({});
            if !part.morph_targets.is_empty() {
                let n = p.mesh.positions.len();
                let targets: Vec<Value> = part
                    .morph_targets
                    .iter()
                    .map(|t| json!({ "POSITION": b.vec3(t.iter().copied(), n, Some(ARRAY_BUFFER), true) }))
                    .collect();
                primitive["targets"] = Value::Array(targets);
                let rest = &rig.nodes()[part.node].weights;
                let mut weights = vec![0.0f32; part.morph_targets.len()];
                for (w, r) in weights.iter_mut().zip(rest) {
                    *w = *r;
                }
                mesh["weights"] = json!(weights);
            }
            mesh["primitives"] = json!([primitive]);
            meshes.push(named(mesh, &part.name));
        }

        let mut skins = Vec::with_capacity(self.skins.len());
        for &s in &self.skins {
            let skin = &rig.skins()[s];
            let flat: Vec<f32> = skin
                .inverse_bind
                .iter()
                .flat_map(|m| m.to_cols_array())
                .collect();
            let ibm = b.floats(&flat, 16, "MAT4", None);
            let joints: Vec<usize> = skin.joints.iter().filter_map(|&j| node_index(j)).collect();
            let mut v = json!({ "joints": joints, "inverseBindMatrices": ibm });
            if let Some(root) = skin.skeleton.and_then(node_index) {
                v["skeleton"] = json!(root);
            }
            skins.push(named(v, skin.name.as_deref().unwrap_or("")));
        }

        // A skinned part goes on a root node of its own, with the identity transform: glTF
        // ignores the transforms of a skinned mesh's node and its ancestors anyway, and the
        // validator warns when that node is not a root. Its original node stays a plain
        // transform in the hierarchy unless it was an empty leaf (dropped in `new`). Per part,
        // the document node holding its mesh:
        let mut mesh_node: Vec<Option<usize>> = vec![None; self.parts.len()];
        let mut nodes = Vec::with_capacity(self.kept.len() + self.parts.len());
        let mut roots = Vec::new();
        for &n in &self.kept {
            let node = &rig.nodes()[n];
            let mut v = json!({});
            let children: Vec<usize> = node
                .children
                .iter()
                .filter_map(|&c| node_index(c))
                .collect();
            if !children.is_empty() {
                v["children"] = json!(children);
            }
            if node.translation != Vec3::ZERO {
                v["translation"] = json!(node.translation.to_array());
            }
            let rotation = unit(node.rotation);
            if rotation != Quat::IDENTITY {
                v["rotation"] = json!(rotation.to_array());
            }
            if node.scale != Vec3::ONE {
                v["scale"] = json!(node.scale.to_array());
            }
            if let Some(p) = self.part_of[n].filter(|&p| self.skin_of(p).is_none()) {
                v["mesh"] = json!(first_mesh + p);
                mesh_node[p] = node_index(n);
            }
            if node.parent.is_none() {
                roots.push(first_node + nodes.len());
            }
            nodes.push(named(v, node.name.as_deref().unwrap_or("")));
        }
        for (p, data) in self.parts.iter().enumerate() {
            let Some(skin) = self.skin_of(p) else {
                continue;
            };
            let name = rig.nodes()[rig.parts()[data.part].node].name.as_deref();
            mesh_node[p] = Some(first_node + nodes.len());
            roots.push(first_node + nodes.len());
            nodes.push(named(
                json!({ "mesh": first_mesh + p, "skin": skin }),
                name.unwrap_or(""),
            ));
        }

        let mut tracks = Vec::with_capacity(self.tracks.len());
        for &t in &self.tracks {
            let (node, path, output) = match t {
                Track::Translation(n) => {
                    let v: Vec<f32> = self
                        .poses
                        .iter()
                        .flat_map(|p| p.translation(n).to_array())
                        .collect();
                    (n, "translation", b.floats(&v, 3, "VEC3", None))
                }
                Track::Scale(n) => {
                    let v: Vec<f32> = self
                        .poses
                        .iter()
                        .flat_map(|p| p.scale(n).to_array())
                        .collect();
                    (n, "scale", b.floats(&v, 3, "VEC3", None))
                }
                Track::Rotation(n) => {
                    let mut previous = None;
                    let mut v = Vec::with_capacity(self.poses.len() * 4);
                    for p in self.poses {
                        let q = continuous(previous, unit(p.rotation(n)));
                        previous = Some(q);
                        v.extend(q.to_array());
                    }
                    (n, "rotation", b.floats(&v, 4, "VEC4", None))
                }
                Track::Weights(n, width) => {
                    let mut v = Vec::with_capacity(self.poses.len() * width);
                    for p in self.poses {
                        let w = p.morph_weights(n);
                        v.extend((0..width).map(|k| w.get(k).copied().unwrap_or(0.0)));
                    }
                    (n, "weights", b.floats(&v, 1, "SCALAR", None))
                }
            };
            let target = match t {
                Track::Weights(..) => self
                    .part_of
                    .get(node)
                    .copied()
                    .flatten()
                    .and_then(|p| mesh_node[p]),
                _ => node_index(node),
            };
            let Some(target) = target else {
                continue;
            };
            tracks.push((
                json!({ "node": target, "path": path }),
                json!({ "input": input, "output": output, "interpolation": "LINEAR" }),
            ));
        }
        Written {
            nodes,
            roots,
            meshes,
            skins,
            tracks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn influences_are_merged_zeroed_and_normalised() {
        let (j, w) = clean_influence([3, 3, 5, 7], [0.25, 0.25, 0.5, 0.0]);
        assert_eq!(j, [3, 5, 0, 0]);
        assert_eq!(w[2..], [0.0, 0.0]);
        assert!((w[0] - 0.5).abs() < 1e-7 && (w[1] - 0.5).abs() < 1e-7);
        assert_eq!(w.iter().sum::<f32>(), 1.0);
        let (j, w) = clean_influence([2, 4, 6, 8], [0.3, 0.3, 0.3, 0.0]);
        assert_eq!(j, [2, 4, 6, 0]);
        assert!((w.iter().sum::<f32>() - 1.0).abs() <= f32::EPSILON);
        // No weight at all: bound to the first joint.
        assert_eq!(
            clean_influence([9, 1, 1, 1], [0.0; 4]),
            ([9, 0, 0, 0], [1.0, 0.0, 0.0, 0.0])
        );
    }

    #[test]
    fn rotation_keys_keep_their_sign_continuous() {
        let a = Quat::from_rotation_y(0.1);
        let b = -Quat::from_rotation_y(0.2);
        let c = continuous(Some(a), b);
        assert!(a.dot(c) > 0.0);
        assert_eq!(continuous(None, b), b);
    }
}
