//! Node globals and the linear-blend-skinning loop (the formulas are in the
//! [module docs](super)).
//!
//! [`SkinData`] is the solver-side copy of the body: every vertex's four joint-matrix slots and
//! weights, flattened once on load, so that [`SkinData::run`] is one pass over the joint
//! matrices and one tight pass over the vertices, with no allocation once its buffers have grown.

use crate::body::{BodyPart, Mat4, Node, Pose, Skin};
use crate::math::Vec3;

/// One skinned vertex's influences: indices into the joint-matrix slots and their weights,
/// which sum to 1 (32 bytes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Influence {
    /// Joint-matrix slots.
    pub slots: [u32; 4],
    /// Weights of the slots.
    pub weights: [f32; 4],
}

/// What moves a part.
#[derive(Clone, Debug, PartialEq)]
enum Mover {
    /// Linear blend skinning, one entry per vertex.
    Skinned(Vec<Influence>),
    /// The global transform of this node.
    Rigid(usize),
}

/// Per-vertex skinning data for the whole body, built once on load.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct SkinData {
    /// Joint-matrix slots: `(joint node, inverse bind matrix)`, every used skin's joints in turn.
    slots: Vec<(usize, Mat4)>,
    /// One mover per part, in part order.
    movers: Vec<Mover>,
}

/// Buffers reused by [`crate::body::Rig::skin`].
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// Global transform per node.
    pub globals: Vec<Mat4>,
    /// `G(joint) · B(joint)` per slot.
    pub joints: Vec<Mat4>,
}

/// The rest transform `T · R · S` of a node.
fn rest_local(node: &Node) -> Mat4 {
    Mat4::from_scale_rotation_translation(node.scale, node.rotation, node.translation)
}

/// The global transform of every node at `pose` into `out`, visiting `order` (parents first).
/// A node the pose lacks keeps its rest transform.
pub(crate) fn globals(nodes: &[Node], order: &[usize], pose: &Pose, out: &mut Vec<Mat4>) {
    out.clear();
    out.resize(nodes.len(), Mat4::IDENTITY);
    for &n in order {
        let Some(node) = nodes.get(n) else { continue };
        let local = if n < pose.node_count() {
            pose.local_matrix(n)
        } else {
            rest_local(node)
        };
        let parent = node.parent.and_then(|p| out.get(p).copied());
        out[n] = match parent {
            Some(p) => p * local,
            None => local,
        };
    }
}

impl SkinData {
    /// Flattens the parts' joints and weights. `parts` have been validated: every joint index is
    /// below its skin's joint count, and every skin index exists.
    pub fn build(parts: &[BodyPart], skins: &[Skin]) -> Self {
        let mut slots = Vec::new();
        // First slot of each skin, assigned when a part first uses it.
        let mut base: Vec<Option<u32>> = vec![None; skins.len()];
        let mut movers = Vec::with_capacity(parts.len());
        for part in parts {
            let skin = part
                .skin
                .and_then(|s| Some((s, skins.get(s)?, base.get(s)?)));
            let Some((s, skin, first)) = skin else {
                movers.push(Mover::Rigid(part.node));
                continue;
            };
            let first = match first {
                Some(b) => *b,
                None => {
                    let b = slots.len() as u32;
                    slots.extend(
                        skin.joints
                            .iter()
                            .copied()
                            .zip(skin.inverse_bind.iter().copied()),
                    );
                    base[s] = Some(b);
                    b
                }
            };
            let influences = part
                .joints
                .iter()
                .zip(&part.weights)
                .map(|(j, w)| Influence {
                    slots: j.map(|j| first + u32::from(j)),
                    weights: *w,
                })
                .collect();
            movers.push(Mover::Skinned(influences));
        }
        Self { slots, movers }
    }

    /// The transform that places part `i` at the given globals: its node's global for a rigid
    /// part, `G · B` of its skin's first joint for a skinned one (used for the winding).
    pub fn part_transform(&self, i: usize, globals: &[Mat4]) -> Mat4 {
        let global = |n: usize| globals.get(n).copied().unwrap_or(Mat4::IDENTITY);
        match self.movers.get(i) {
            Some(Mover::Rigid(node)) => global(*node),
            Some(Mover::Skinned(inf)) => inf
                .first()
                .and_then(|f| self.slots.get(f.slots[0] as usize))
                .map_or(Mat4::IDENTITY, |&(node, ibm)| global(node) * ibm),
            None => Mat4::IDENTITY,
        }
    }

    /// Skins every part: the world-space positions of all body vertices into `out` (resized to
    /// the vertex count), given the node globals (missing ones count as the identity) and the
    /// pose's morph weights. `joints` is scratch space for the joint matrices.
    pub fn run(
        &self,
        parts: &[BodyPart],
        globals: &[Mat4],
        pose: &Pose,
        joints: &mut Vec<Mat4>,
        out: &mut Vec<Vec3>,
    ) {
        let global = |n: usize| globals.get(n).copied().unwrap_or(Mat4::IDENTITY);
        joints.clear();
        joints.extend(self.slots.iter().map(|&(node, ibm)| global(node) * ibm));
        let total = parts.last().map_or(0, |p| p.vertices.end);
        out.resize(total, Vec3::ZERO);
        for (part, mover) in parts.iter().zip(&self.movers) {
            let Some(dst) = out.get_mut(part.vertices.clone()) else {
                continue;
            };
            let weights = pose.weights.get(part.node).map_or(&[][..], Vec::as_slice);
            let morphed = !part.morph_targets.is_empty() && weights.iter().any(|&w| w != 0.0);
            let rest = |i: usize, p: Vec3| -> Vec3 {
                if !morphed {
                    return p;
                }
                part.morph_targets
                    .iter()
                    .zip(weights)
                    .fold(p, |acc, (target, &w)| acc + target[i] * w)
            };
            match mover {
                Mover::Skinned(influences) => {
                    for (i, (o, (&p, f))) in dst
                        .iter_mut()
                        .zip(part.positions.iter().zip(influences))
                        .enumerate()
                    {
                        let [a, b, c, d] = f.slots.map(|s| joints[s as usize]);
                        let [wa, wb, wc, wd] = f.weights;
                        let m = a * wa + b * wb + c * wc + d * wd;
                        *o = m.transform_point3(rest(i, p));
                    }
                }
                Mover::Rigid(node) => {
                    let m = global(*node);
                    for (i, (o, &p)) in dst.iter_mut().zip(&part.positions).enumerate() {
                        *o = m.transform_point3(rest(i, p));
                    }
                }
            }
        }
    }
}
