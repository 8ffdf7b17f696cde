//! A pose: every node's local transform and every morphed mesh's weights.

use crate::body::{anim, Mat4, Node, Quat};
use crate::math::Vec3;

/// Local translation, rotation and scale of every node, and morph weights of every node that
/// instances a mesh with morph targets, indexed like [`Rig::nodes`](crate::body::Rig::nodes).
///
/// A pose belongs to one rig: [`Rig::rest_pose`](crate::body::Rig::rest_pose) and
/// [`Rig::sample`](crate::body::Rig::sample) make them. The accessors panic on a node index out
/// of range, like slice indexing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Pose {
    /// Local translation per node (m).
    pub(crate) translation: Vec<Vec3>,
    /// Local rotation per node (unit quaternion).
    pub(crate) rotation: Vec<Quat>,
    /// Local scale per node (dimensionless).
    pub(crate) scale: Vec<Vec3>,
    /// Morph weights per node; empty for nodes without a morphed mesh.
    pub(crate) weights: Vec<Vec<f32>>,
}

impl Pose {
    /// The rest pose of `nodes`.
    pub(crate) fn rest(nodes: &[Node]) -> Self {
        let mut pose = Self::default();
        pose.reset_to_rest(nodes);
        pose
    }

    /// Overwrites this pose with the rest pose of `nodes`, reusing its storage.
    pub(crate) fn reset_to_rest(&mut self, nodes: &[Node]) {
        self.translation.clear();
        self.translation.extend(nodes.iter().map(|n| n.translation));
        self.rotation.clear();
        self.rotation.extend(nodes.iter().map(|n| n.rotation));
        self.scale.clear();
        self.scale.extend(nodes.iter().map(|n| n.scale));
        self.weights.resize_with(nodes.len(), Vec::new);
        for (w, n) in self.weights.iter_mut().zip(nodes) {
            w.clone_from(&n.weights);
        }
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.translation.len()
    }

    /// Local translation of `node` relative to its parent (m).
    pub fn translation(&self, node: usize) -> Vec3 {
        self.translation[node]
    }

    /// Local rotation of `node` relative to its parent (unit quaternion).
    pub fn rotation(&self, node: usize) -> Quat {
        self.rotation[node]
    }

    /// Local scale of `node` relative to its parent (dimensionless).
    pub fn scale(&self, node: usize) -> Vec3 {
        self.scale[node]
    }

    /// Morph weights of the mesh instanced by `node`, one per morph target (empty when it has
    /// none). glTF animates morph weights per node, so two instances of one mesh may differ.
    pub fn morph_weights(&self, node: usize) -> &[f32] {
        &self.weights[node]
    }

    /// Sets the local translation of `node` (m).
    pub fn set_translation(&mut self, node: usize, t: Vec3) {
        self.translation[node] = t;
    }

    /// Sets the local rotation of `node`; `q` is normalised (a zero quaternion becomes the
    /// identity).
    pub fn set_rotation(&mut self, node: usize, q: Quat) {
        self.rotation[node] = anim::normalize_quat(q);
    }

    /// Sets the local scale of `node` (dimensionless).
    pub fn set_scale(&mut self, node: usize, s: Vec3) {
        self.scale[node] = s;
    }

    /// Sets the morph weights of `node`'s mesh; only as many as it has targets are used.
    pub fn set_morph_weights(&mut self, node: usize, weights: &[f32]) {
        let w = &mut self.weights[node];
        let n = w.len().min(weights.len());
        w[..n].copy_from_slice(&weights[..n]);
    }

    /// The local transform `T · R · S` of `node`, or the identity for a node the pose lacks.
    pub fn local_matrix(&self, node: usize) -> Mat4 {
        match (
            self.translation.get(node),
            self.rotation.get(node),
            self.scale.get(node),
        ) {
            (Some(&t), Some(&r), Some(&s)) => Mat4::from_scale_rotation_translation(s, r, t),
            _ => Mat4::IDENTITY,
        }
    }

    /// Blends two poses: `(1 − s) · a + s · b` for translations, scales and morph weights,
    /// shortest-path slerp for rotations. Nodes (or weights) present in only one pose are
    /// dropped, so blend poses of the same rig.
    pub fn blend(a: &Pose, b: &Pose, s: f32) -> Pose {
        let lerp = |x: &Vec<Vec3>, y: &Vec<Vec3>| -> Vec<Vec3> {
            x.iter().zip(y).map(|(p, q)| p.lerp(*q, s)).collect()
        };
        Pose {
            translation: lerp(&a.translation, &b.translation),
            rotation: a
                .rotation
                .iter()
                .zip(&b.rotation)
                .map(|(p, q)| anim::slerp(*p, *q, s))
                .collect(),
            scale: lerp(&a.scale, &b.scale),
            weights: a
                .weights
                .iter()
                .zip(&b.weights)
                .map(|(p, q)| p.iter().zip(q).map(|(x, y)| x + (y - x) * s).collect())
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_abs_diff_eq;

    fn pose(t: Vec3, angle: f32, w: f32) -> Pose {
        Pose {
            translation: vec![t],
            rotation: vec![Quat::from_rotation_z(angle)],
            scale: vec![Vec3::ONE],
            weights: vec![vec![w]],
        }
    }

    #[test]
    fn blend_ends_are_the_inputs_and_the_middle_is_halfway() {
        let a = pose(Vec3::ZERO, 0.0, 0.0);
        let b = pose(Vec3::new(2.0, 0.0, 0.0), std::f32::consts::FRAC_PI_2, 1.0);
        assert_eq!(Pose::blend(&a, &b, 0.0).translation, a.translation);
        let end = Pose::blend(&a, &b, 1.0);
        assert_abs_diff_eq!(
            end.rotation[0].dot(b.rotation[0]).abs(),
            1.0,
            epsilon = 1e-6
        );
        let mid = Pose::blend(&a, &b, 0.5);
        assert_abs_diff_eq!(mid.translation[0].x, 1.0, epsilon = 1e-6);
        assert_abs_diff_eq!(mid.weights[0][0], 0.5, epsilon = 1e-6);
        let (axis, angle) = mid.rotation[0].to_axis_angle();
        assert_abs_diff_eq!(angle, std::f32::consts::FRAC_PI_4, epsilon = 1e-5);
        assert_abs_diff_eq!(axis.z, 1.0, epsilon = 1e-5);
    }

    #[test]
    fn set_rotation_normalises() {
        let mut p = pose(Vec3::ZERO, 0.0, 0.0);
        p.set_rotation(0, Quat::from_xyzw(0.0, 0.0, 2.0, 0.0));
        assert_abs_diff_eq!(p.rotation(0).length(), 1.0, epsilon = 1e-6);
        p.set_rotation(0, Quat::from_xyzw(0.0, 0.0, 0.0, 0.0));
        assert_eq!(p.rotation(0), Quat::IDENTITY);
    }
}
