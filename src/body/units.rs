//! Rescaling and moving a whole rig: a body authored in other units (centimetres, inches) is
//! brought to metres, and a body far from the origin is moved next to it for the solver.
//!
//! # Scaling by `u` about the origin
//!
//! Every vertex must end up at `u · x` at every pose. With `S = diag(u, u, u, 1)`, conjugating
//! every node's local transform gives
//!
//! ```text
//! L'(n) = S · T(t_n) · R(q_n) · S(s_n) · S⁻¹ = T(u · t_n) · R(q_n) · S(s_n)
//! G'(n) = S · G(n) · S⁻¹                      (by induction from the roots)
//! B'(j) = S · B(j) · S⁻¹                      (the inverse bind matrix, translation × u)
//! p'    = u · p,   δ'_k = u · δ_k             (positions and morph deltas, mesh space)
//! x'    = G'(j) · B'(j) · p' = S · G(j) · B(j) · S⁻¹ · u · p = u · x
//! ```
//!
//! since a uniform scale commutes with rotations and scales. So translations (rest and
//! animated, CUBICSPLINE tangents included), inverse bind translations, mesh positions and morph
//! deltas are multiplied by `u`; rotations, node scales and morph weights are unchanged.
//!
//! # Moving by `d`
//!
//! `G'(n) = T(d) · G(n)` for every node when every root's local transform becomes
//! `T(d) · L(root) = T(t_root + d) · R · S`: the roots' rest and animated translations move by
//! `d` (CUBICSPLINE tangents, being rates, do not). Inverse bind matrices and mesh-space data
//! are unchanged, and `x' = x + d` for skinned and rigid parts alike.

use crate::body::anim::{Interpolation, Property};
use crate::body::{skin, Mat4, Rig};
use crate::math::{Real, Vec3};

impl Rig {
    /// Scales the whole body by `factor` about the world origin, at every pose: rest mesh,
    /// parts, morph targets, node and animation translations and inverse bind matrices
    /// (see the [module docs](self)). Used for a body authored in other units, e.g. `0.01`
    /// for centimetres. A factor that is not finite and positive leaves the rig unchanged.
    pub fn scale(&mut self, factor: Real) {
        if !(factor.is_finite() && factor > 0.0) || factor == 1.0 {
            return;
        }
        for node in &mut self.nodes {
            node.translation *= factor;
        }
        for clip in &mut self.clips {
            for ch in &mut clip.channels {
                if ch.property == Property::Translation {
                    // Values and CUBICSPLINE tangents alike are lengths (or lengths per second).
                    for v in &mut ch.values {
                        *v *= factor;
                    }
                }
            }
        }
        for skin in &mut self.skins {
            for b in &mut skin.inverse_bind {
                *b = scale_translation(*b, factor);
            }
        }
        for part in &mut self.parts {
            for p in &mut part.positions {
                *p *= factor;
            }
            for target in &mut part.morph_targets {
                for d in target {
                    *d *= factor;
                }
            }
        }
        for p in &mut self.rest_mesh.positions {
            *p *= factor;
        }
        self.hot = skin::SkinData::build(&self.parts, &self.skins);
    }

    /// Moves the whole body by `offset_m` (m), at every pose: every root node's rest and
    /// animated translation, and the rest mesh (see the [module docs](self)). The solver runs
    /// on a body moved next to the origin when the scene is far from it.
    pub fn translate(&mut self, offset_m: Vec3) {
        if !offset_m.is_finite() || offset_m == Vec3::ZERO {
            return;
        }
        let roots: Vec<bool> = self.nodes.iter().map(|n| n.parent.is_none()).collect();
        for (node, &root) in self.nodes.iter_mut().zip(&roots) {
            if root {
                node.translation += offset_m;
            }
        }
        for clip in &mut self.clips {
            for ch in &mut clip.channels {
                if ch.property != Property::Translation
                    || !roots.get(ch.node).copied().unwrap_or(false)
                {
                    continue;
                }
                let per_key = match ch.interpolation {
                    Interpolation::CubicSpline => 3,
                    _ => 1,
                };
                // The value of each key (the middle element for CUBICSPLINE), not tangents.
                let which = per_key / 2;
                for key in ch.values.chunks_exact_mut(per_key * ch.width) {
                    let value = &mut key[which * ch.width..(which + 1) * ch.width];
                    for (v, d) in value.iter_mut().zip(offset_m.to_array()) {
                        *v += d;
                    }
                }
            }
        }
        for p in &mut self.rest_mesh.positions {
            *p += offset_m;
        }
    }

    /// The axis-aligned bounds `(min, max)` of the body at its rest pose (m), or `None` for
    /// a body without vertices.
    pub fn rest_bounds(&self) -> Option<(Vec3, Vec3)> {
        bounds(&self.rest_mesh.positions)
    }
}

/// `S · m · S⁻¹` for `S` a uniform scale by `u`: `m` with its translation multiplied by `u`.
fn scale_translation(m: Mat4, u: Real) -> Mat4 {
    let mut m = m;
    m.w_axis.x *= u;
    m.w_axis.y *= u;
    m.w_axis.z *= u;
    m
}

/// The axis-aligned bounds `(min, max)` of `points`, or `None` when there are none.
pub(crate) fn bounds(points: &[Vec3]) -> Option<(Vec3, Vec3)> {
    let first = *points.first()?;
    Some(
        points
            .iter()
            .fold((first, first), |(lo, hi), &p| (lo.min(p), hi.max(p))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::Playback;
    use std::path::Path;

    /// CesiumMan (`../shared/data/khronos/`, see its LICENSES.md): skinned, animated.
    fn cesium() -> Rig {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/khronos/CesiumMan.glb");
        Rig::load(&path, None).expect("CesiumMan loads")
    }

    fn skinned(rig: &Rig, t: f64) -> Vec<Vec3> {
        let mut out = Vec::new();
        rig.skin(&rig.sample(0, t, Playback::Loop), &mut out);
        out
    }

    #[test]
    fn scaling_a_skinned_animated_body_scales_every_pose() {
        let rig = cesium();
        let mut scaled = rig.clone();
        scaled.scale(0.01);
        for t in [0.0, 0.37, 1.2] {
            let (a, b) = (skinned(&rig, t), skinned(&scaled, t));
            assert_eq!(a.len(), b.len());
            for (p, q) in a.iter().zip(&b) {
                assert!(
                    (*p * 0.01 - *q).length() < 1e-6,
                    "{p} × 0.01 vs {q} at t = {t}"
                );
            }
        }
        for (p, q) in rig
            .rest_mesh()
            .positions
            .iter()
            .zip(&scaled.rest_mesh().positions)
        {
            assert!((*p * 0.01 - *q).length() < 1e-6);
        }
        // The rest mesh is still the rest pose, skinned.
        let mut rest = Vec::new();
        scaled.skin(&scaled.rest_pose(), &mut rest);
        for (p, q) in rest.iter().zip(&scaled.rest_mesh().positions) {
            assert!((*p - *q).length() < 1e-6);
        }
    }

    #[test]
    fn translating_a_skinned_animated_body_moves_every_pose() {
        let rig = cesium();
        let d = Vec3::new(3.0, -2.0, 0.5);
        let mut moved = rig.clone();
        moved.translate(d);
        for t in [0.0, 0.37, 1.2] {
            let (a, b) = (skinned(&rig, t), skinned(&moved, t));
            for (p, q) in a.iter().zip(&b) {
                assert!((*p + d - *q).length() < 1e-5, "{p} + d vs {q} at t = {t}");
            }
        }
        let (lo, hi) = rig.rest_bounds().unwrap();
        let (lo2, hi2) = moved.rest_bounds().unwrap();
        assert!((lo + d - lo2).length() < 1e-5 && (hi + d - hi2).length() < 1e-5);
    }
}
