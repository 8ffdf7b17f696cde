//! Body-vertex contacts: the body's vertices pushing the cloth's triangles.
//!
//! The particle contacts of [`crate::collide`] keep every cloth *vertex* out of the body, but a
//! body feature narrower than the cloth's edges (a hand, fingers, a wrist) can pass between
//! the vertices and come out through a triangle. The cloth is then threaded on it: its vertices
//! lie outside, on both sides of the feature, and the edges between them run through the body,
//! so they cannot shorten and are dragged along with it. On CesiumMan's walk every edge of the
//! 768-vertex fitted skirt stretched past 50 % had a point inside the body (measured: 1 to 11
//! such edges per frame from frame 14 on, up to 1.3 cm deep).
//!
//! Each substep, every *sharp* body vertex ([`sharp_vertices`]: where the surface is curved
//! tightly enough to reach between two particles) within the contact reach of a cloth triangle
//! gets a contact that keeps the triangle's closest point in front of the vertex along the
//! body's vertex normal:
//!
//! ```text
//! C = (Σ βᵢ xᵢ − v) · n ≥ 0,      ∇ₓᵢ C = βᵢ n
//! ```
//!
//! (`β` the barycentric coordinates of the closest point, `v` the body vertex, `n` its unit
//! normal out of the body), projected like a particle contact (rigid, push only), just before
//! the particle contacts in every sweep, so that those have the last word on every particle.
//!
//! - **Only triangles that started in front.** A triangle is taken only when its closest point
//!   was in front of the vertex's tangent plane at the start of the substep (positions
//!   `x_prev`, the body at its previous pose). One that started behind is on the far side of
//!   that part of the body, or already threaded on it: pushing it through would thread it.
//! - **Not where the body is buried in itself.** A vertex whose point one collision thickness
//!   out along its normal is inside the body (a hand sunk into the thigh, a tight crease) gets
//!   no contact: the cloth cannot be in front of it anyway, and pushing it there drives it into
//!   the other part.
//! - **No thickness.** The particle contacts keep the cloth's distance from the surface; these
//!   only stop the surface from crossing the cloth between particles. With the collision
//!   thickness here too, a hand pinching the skirt against the thigh made the two surfaces'
//!   vertex contacts push the cloth into each other's body, and the 768-vertex skirt diverged
//!   at frame 12 of the walk.
//!
//! Measured on that skirt over CesiumMan's 97-frame walk (docs/solver.md, "Body-vertex
//! contacts"): at 10 substeps the mean of the per-frame largest stretch fell from 145 % to
//! 14 % (frames above 20 %: 86 → 13); at 20 substeps it went from 7.7 % to 10.9 % (frames
//! above 20 %: 9 → 12), pinches being sensitive to any change.

use crate::collide::self_collision::{closest_on_triangle, Aabb, SpatialHash};
use crate::collide::BodyCollider;
use crate::math::{Real, Vec3};

/// One body-vertex contact, valid for one substep. 44 bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VertexContact {
    /// The cloth triangle (particle indices).
    pub triangle: [u32; 3],
    /// Barycentric coordinates of the triangle's point closest to the body vertex.
    pub bary: [Real; 3],
    /// The body vertex (m).
    pub point_m: Vec3,
    /// Unit normal out of the body at the vertex.
    pub normal: Vec3,
}

/// Finds and projects the body-vertex contacts ([module docs](self)); keeps its buffers
/// between substeps.
#[derive(Clone, Debug, Default)]
pub struct BodyVertexContacts {
    /// The body vertices that can pass between the cloth's particles ([`sharp_vertices`]),
    /// chosen at the first [`Self::find`] for a body of `sharp_for` vertices.
    sharp: Vec<u32>,
    sharp_for: Option<usize>,
    boxes: Vec<Aabb>,
    hash: SpatialHash,
    contacts: Vec<VertexContact>,
    lambdas: Vec<Real>,
}

impl BodyVertexContacts {
    /// The contacts found by the last [`Self::find`].
    pub fn contacts(&self) -> &[VertexContact] {
        &self.contacts
    }

    /// Replaces the contacts with those of the body's sharp vertices against `triangles` at
    /// the positions `x` (`x_prev` at the start of the substep, with the body at its previous
    /// pose): every sharp vertex within `reach_m` of a triangle that has a particle free to
    /// move and that was in front of the vertex at the start of the substep, unless the point
    /// `clearance_m` out from the vertex along its normal is inside the body. The sharp
    /// vertices are chosen at the first call for this body, for a margin of
    /// `reach_m − clearance_m`.
    #[allow(clippy::too_many_arguments)]
    pub fn find(
        &mut self,
        body: &BodyCollider,
        x_prev: &[Vec3],
        x: &[Vec3],
        inv_mass: &[Real],
        triangles: &[[u32; 3]],
        reach_m: Real,
        clearance_m: Real,
    ) {
        self.contacts.clear();
        self.lambdas.clear();
        if triangles.is_empty() {
            return;
        }
        let vertices = body.vertices();
        if self.sharp_for != Some(vertices.len()) {
            let edge_m = mean_edge_length(x, triangles);
            self.sharp = sharp_vertices(
                vertices,
                body.vertex_normals(),
                body.triangles(),
                edge_m,
                reach_m - clearance_m,
            );
            self.sharp_for = Some(vertices.len());
        }
        if self.sharp.is_empty() {
            return;
        }
        self.boxes.clear();
        // Hash cells as large as the mean triangle box.
        let mut extent_sum = 0.0;
        let mut cloth = (Vec3::splat(Real::MAX), Vec3::splat(Real::MIN));
        for t in triangles {
            let [a, b, c] = t.map(|i| x[i as usize]);
            let lo = a.min(b).min(c) - Vec3::splat(reach_m);
            let hi = a.max(b).max(c) + Vec3::splat(reach_m);
            extent_sum += (hi - lo).max_element();
            cloth = (cloth.0.min(lo), cloth.1.max(hi));
            self.boxes.push((lo, hi));
        }
        let normals = body.vertex_normals();
        let previous = body.previous_vertices();
        // The hash is built at the first sharp vertex within the cloth's box: most of the body
        // is nowhere near the cloth, and a garment away from the hands needs no hash at all.
        let mut hashed = false;
        for &i in &self.sharp {
            let (v, n) = (vertices[i as usize], normals[i as usize]);
            if n == Vec3::ZERO || v.cmplt(cloth.0).any() || v.cmpgt(cloth.1).any() {
                continue;
            }
            if !hashed {
                self.hash
                    .build(&self.boxes, extent_sum / triangles.len() as Real);
                hashed = true;
            }
            let v0 = previous.get(i as usize).copied().unwrap_or(v);
            let query = (v, v);
            let contacts = &mut self.contacts;
            // Whether the vertex is buried in another part of the body (a hand sunk into the
            // thigh) or in a crease narrower than `clearance_m`: asked only of vertices near
            // the cloth, once.
            let mut buried = None;
            self.hash.query(&query, |k| {
                let t = triangles[k as usize];
                if t.iter().all(|&i| inv_mass[i as usize] <= 0.0) {
                    return;
                }
                if *buried.get_or_insert_with(|| body.penetration_depth(v + n * clearance_m) > 0.0)
                {
                    return;
                }
                let [a, b, c] = t.map(|i| x[i as usize]);
                let bary = closest_on_triangle(v, a, b, c);
                let q = a * bary[0] + b * bary[1] + c * bary[2];
                if q.distance_squared(v) > reach_m * reach_m {
                    return;
                }
                // Only a triangle that was in front of the vertex at the start of the substep
                // (its closest point then on the outer side of the vertex's tangent plane) is
                // kept there: one that started behind it is on the far side of that part of
                // the body, or already threaded on it, and pushing it through would thread it
                // (further).
                let [a0, b0, c0] = t.map(|i| x_prev[i as usize]);
                let bary0 = closest_on_triangle(v0, a0, b0, c0);
                let q0 = a0 * bary0[0] + b0 * bary0[1] + c0 * bary0[2];
                if (q0 - v0).dot(n) < 0.0 {
                    return;
                }
                contacts.push(VertexContact {
                    triangle: t,
                    bary,
                    point_m: v,
                    normal: n,
                });
            });
        }
        self.lambdas.resize(self.contacts.len(), 0.0);
    }

    /// Drops every contact (the setting was turned off, or there is no body).
    pub fn clear(&mut self) {
        self.contacts.clear();
        self.lambdas.clear();
    }

    /// Projects every contact once (rigid, push only): the triangle's closest point moves to
    /// the front of the vertex.
    ///
    /// `max_push` limits how far one projection moves any particle (m), and the multiplier with
    /// it, as for the particle contacts while the garment settles (on the CesiumMan skirt the
    /// bake is the same with and without the limit).
    pub fn project(&mut self, x: &mut [Vec3], inv_mass: &[Real], max_push: Option<Real>) {
        for (c, l) in self.contacts.iter().zip(self.lambdas.iter_mut()) {
            let idx = c.triangle.map(|i| i as usize);
            let q: Vec3 = (0..3).map(|k| x[idx[k]] * c.bary[k]).sum();
            let violation = (q - c.point_m).dot(c.normal);
            let grad_w: Real = (0..3)
                .map(|k| inv_mass[idx[k]] * c.bary[k] * c.bary[k])
                .sum();
            if grad_w <= 0.0 {
                continue;
            }
            // λ ≥ 0: a contact only pushes, and gives back at most what it pushed.
            let mut dl = (-violation / grad_w).max(-*l);
            if dl == 0.0 {
                continue;
            }
            if let Some(m) = max_push {
                let largest = (0..3)
                    .map(|k| inv_mass[idx[k]] * c.bary[k])
                    .fold(0.0, Real::max)
                    * dl.abs();
                if largest > m {
                    dl *= m / largest;
                }
            }
            *l += dl;
            for k in 0..3 {
                x[idx[k]] += c.normal * (inv_mass[idx[k]] * c.bary[k] * dl);
            }
        }
    }
}

/// How far the body may bulge into one cloth edge's span before its vertices get contacts, as
/// a fraction of the contact margin.
pub const SHARP_SAGITTA_FRACTION: Real = 0.25;

/// The body vertices where the surface is curved tightly enough to pass between particles
/// `edge_m` apart: where the sagitta `edge_m²·κ/8` of the surface over one cloth edge exceeds
/// [`SHARP_SAGITTA_FRACTION`] of `margin_m`, with `κ` the largest convex normal curvature of
/// the surface at the vertex, estimated along its edges as `2·n·(v − w)/|v − w|²`. A smooth
/// sphere of radius 0.3 m under a 1.6 cm cloth edge bulges 0.1 mm (none of its vertices are
/// chosen, and the search costs nothing); a finger of radius 8 mm under a 2 cm edge, 6 mm.
pub fn sharp_vertices(
    vertices: &[Vec3],
    normals: &[Vec3],
    triangles: &[[u32; 3]],
    edge_m: Real,
    margin_m: Real,
) -> Vec<u32> {
    let mut kappa: Vec<Real> = vec![0.0; vertices.len()];
    let mut visit = |i: u32, j: u32| {
        let (i, j) = (i as usize, j as usize);
        let d = vertices[i] - vertices[j];
        let l2 = d.length_squared();
        if l2 > 0.0 {
            kappa[i] = kappa[i].max(2.0 * normals[i].dot(d) / l2);
        }
    };
    for &[a, b, c] in triangles {
        for (i, j) in [(a, b), (b, c), (c, a)] {
            visit(i, j);
            visit(j, i);
        }
    }
    let threshold = SHARP_SAGITTA_FRACTION * margin_m * 8.0 / (edge_m * edge_m);
    (0..vertices.len() as u32)
        .filter(|&i| kappa[i as usize] > threshold)
        .collect()
}

/// Mean edge length of `triangles` at `x` (m), each edge counted once per triangle.
fn mean_edge_length(x: &[Vec3], triangles: &[[u32; 3]]) -> Real {
    let sum: Real = triangles
        .iter()
        .map(|t| {
            let [a, b, c] = t.map(|i| x[i as usize]);
            a.distance(b) + b.distance(c) + c.distance(a)
        })
        .sum();
    sum / (3 * triangles.len()) as Real
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::shapes::uv_sphere;

    fn sharp(radius_m: Real, edge_m: Real) -> usize {
        let ball = uv_sphere(radius_m, 32, 16);
        let body = BodyCollider::new(&ball).unwrap();
        sharp_vertices(
            body.vertices(),
            body.vertex_normals(),
            body.triangles(),
            edge_m,
            0.005,
        )
        .len()
    }

    /// One contact: a body vertex 2 mm in front of a cloth triangle (normal +z) lifts the
    /// triangle's closest point to it, by inverse mass and barycentric weight; a triangle
    /// already in front is not pulled; `max_push` caps the move.
    #[test]
    fn a_contact_moves_the_triangle_to_the_front_of_the_vertex_and_never_pulls() {
        let contact = |z: Real| {
            let mut c = BodyVertexContacts::default();
            c.contacts.push(VertexContact {
                triangle: [0, 1, 2],
                bary: [0.5, 0.25, 0.25],
                point_m: Vec3::new(0.25, 0.25, 0.002),
                normal: Vec3::Z,
            });
            c.lambdas.push(0.0);
            let x = vec![
                Vec3::new(0.0, 0.0, z),
                Vec3::new(1.0, 0.0, z),
                Vec3::new(0.0, 1.0, z),
            ];
            (c, x)
        };
        let w = [1.0, 1.0, 0.0];
        let point = |x: &[Vec3]| x[0] * 0.5 + x[1] * 0.25 + x[2] * 0.25;
        let (mut c, mut x) = contact(0.0);
        c.project(&mut x, &w, None);
        assert!((point(&x).z - 0.002).abs() < 1e-7, "{:?}", point(&x));
        // By inverse mass times weight: the pinned particle stays, particle 0 moves twice as
        // far as particle 1.
        assert_eq!(x[2].z, 0.0);
        assert!((x[0].z - 2.0 * x[1].z).abs() < 1e-7);
        assert!(c.lambdas[0] > 0.0);
        let before = x.clone();
        c.project(&mut x, &w, None);
        assert!((point(&x).z - 0.002).abs() < 1e-7);
        assert!(x
            .iter()
            .zip(&before)
            .all(|(a, b)| (*a - *b).length() < 1e-7));
        let (mut c, mut x) = contact(0.01);
        c.project(&mut x, &w, None);
        assert!(x.iter().all(|p| p.z == 0.01));
        let (mut c, mut x) = contact(0.0);
        c.project(&mut x, &w, Some(0.001));
        assert!(x.iter().all(|p| p.z <= 0.001 + 1e-7), "{x:?}");
        assert!(x[0].z > 0.0009);
    }

    /// The standard scene's sphere under its cloth's edges bulges 0.1 mm: no vertex is
    /// chosen. A fingertip-sized ball under the same edges: every vertex is.
    #[test]
    fn only_surfaces_curved_tighter_than_the_cloth_edges_are_sharp() {
        let all = BodyCollider::new(&uv_sphere(0.3, 32, 16))
            .unwrap()
            .vertices()
            .len();
        assert_eq!(sharp(0.3, 1.0 / 63.0), 0);
        assert_eq!(sharp(0.006, 1.0 / 63.0), all);
        // The threshold: a sagitta of a quarter of the 5 mm margin, 1.25 mm. A 0.3 m sphere
        // reaches it under edges of sqrt(8 · 0.3 · 1.25 mm) ≈ 5.5 cm (on this coarse mesh the
        // curvature estimate runs high near the poles, so the test keeps clear of the edge).
        assert_eq!(sharp(0.3, 0.04), 0);
        assert_eq!(sharp(0.3, 0.08), all);
    }
}
