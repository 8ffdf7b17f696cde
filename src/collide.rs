//! Collisions of cloth particles against the body, on parry3d.
//!
//! The body is a parry3d [`TriMesh`] with its BVH and the `ORIENTED` flag, so a point projection
//! also says whether the point is inside the closed surface (pseudo-normal test, Bærentzen &
//! Aanæs 2005).
//!
//! A particle within `thickness + margin` of the surface gets a contact: the closest surface
//! point `q` and a normal `n` pointing out of the body. The solver then keeps
//! `C = n·(x − q) − thickness ≥ 0` as an inequality constraint for the rest of the substep
//! (see [`crate::constraints::solve_contact`]).

use parry3d::query::{PointQuery, Ray, RayCast};
use parry3d::shape::{TriMesh, TriMeshFlags};

use crate::math::{Real, Vec3};
use crate::mesh::Mesh;

/// A body mesh that cannot be used as a collider.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ColliderError {
    /// parry3d refused the mesh.
    #[error("body mesh '{name}' cannot be used as a collider: {reason}")]
    Invalid {
        /// Mesh name.
        name: String,
        /// parry3d's reason.
        reason: String,
    },
    /// A pose did not have one position per body vertex.
    #[error("body pose has {got} vertices, the body mesh has {expected}")]
    PoseLength {
        /// Vertices of the body mesh.
        expected: usize,
        /// Vertices in the pose.
        got: usize,
    },
    /// A pose had a non-finite vertex (a broken rig or animation).
    #[error("body pose has a non-finite vertex position (check the rig and its animation)")]
    NonFinitePose,
}

/// The body as a collision shape.
///
/// A moving body is posed with [`BodyCollider::set_pose`] at every substep: the vertices move,
/// parry3d refits the BVH in place (its structure is kept, only the boxes grow or shrink), and
/// the previous vertex positions are kept so that a contact knows how far the body surface
/// under it moved during the substep.
pub struct BodyCollider {
    shape: TriMesh,
    closed: bool,
    /// For each collider vertex, the body-mesh vertex it was welded from.
    source_of: Vec<u32>,
    /// Number of body-mesh vertices [`Self::set_pose`] expects.
    source_count: usize,
    /// Collider vertex positions at the previous pose (m).
    prev: Vec<Vec3>,
    /// Scratch for the new vertex positions.
    scratch: Vec<Vec3>,
    /// Sum over pose updates of the largest vertex displacement (m): a bound on how far any
    /// surface point has moved since a given update.
    travel_m: Real,
}

impl std::fmt::Debug for BodyCollider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyCollider")
            .field("triangles", &self.shape.indices().len())
            .field("closed", &self.closed)
            .finish()
    }
}

/// Vertices of the body closer than this are merged before the collider is built (m).
pub const BODY_WELD_TOLERANCE_M: Real = 1.0e-6;

/// One particle–body contact, valid for one substep. 44 bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact {
    /// Particle index.
    pub particle: u32,
    /// Closest point on the body surface (m).
    pub point_m: Vec3,
    /// Unit normal pointing out of the body.
    pub normal: Vec3,
    /// How far the body surface at `point_m` moved during this substep (m): the body's
    /// velocity there times the step, for friction and relative motion.
    pub body_motion_m: Vec3,
}

/// Result of a point query against the body.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SurfacePoint {
    /// Closest point on the surface (m).
    pub point_m: Vec3,
    /// Unit normal out of the body at the query point.
    pub normal: Vec3,
    /// Signed distance from the surface (m): negative inside the body.
    pub signed_distance_m: Real,
    /// The collider triangle the closest point lies on.
    pub triangle: u32,
}

impl BodyCollider {
    /// Builds the collider.
    ///
    /// The mesh is welded first (UV seams split the vertices of almost every textured
    /// character), then the body counts as closed when every edge has two triangles and the
    /// enclosed volume is positive: only then are inside and outside defined (the `ORIENTED`
    /// pseudo-normal test). An open body only pushes particles to the side they are on.
    pub fn new(mesh: &Mesh) -> Result<Self, ColliderError> {
        let welded = crate::mesh::weld(mesh, BODY_WELD_TOLERANCE_M);
        if welded.mesh.indices.is_empty() {
            return Err(ColliderError::Invalid {
                name: mesh.name.clone(),
                reason: "every triangle collapses to a line or a point".into(),
            });
        }
        let closed = crate::mesh::Topology::new(&welded.mesh).is_closed()
            && welded.mesh.signed_volume() > 0.0;
        let flags = if closed {
            TriMeshFlags::ORIENTED
        } else {
            TriMeshFlags::empty()
        };
        let mut source_of = vec![u32::MAX; welded.mesh.positions.len()];
        for (src, &dst) in welded.original_to_welded.iter().enumerate() {
            let slot = &mut source_of[dst as usize];
            if *slot == u32::MAX {
                *slot = src as u32;
            }
        }
        let prev = welded.mesh.positions.clone();
        let shape = TriMesh::with_flags(welded.mesh.positions, welded.mesh.indices, flags)
            .map_err(|e| ColliderError::Invalid {
                name: mesh.name.clone(),
                reason: e.to_string(),
            })?;
        Ok(Self {
            shape,
            closed,
            source_of,
            source_count: mesh.positions.len(),
            scratch: Vec::with_capacity(prev.len()),
            prev,
            travel_m: 0.0,
        })
    }

    /// Moves the body to a new pose: `positions` are the body mesh's vertices (in the order of
    /// the mesh given to [`Self::new`]) in m.
    ///
    /// The BVH is refitted in place rather than rebuilt: `benches/standard_scene.rs` measures
    /// both (`collider_update`), and the refit is the faster one for the deformations of a
    /// skinned character. Fails when the vertex count differs from the mesh's.
    pub fn set_pose(&mut self, positions: &[Vec3]) -> Result<(), ColliderError> {
        if positions.len() != self.source_count {
            return Err(ColliderError::PoseLength {
                expected: self.source_count,
                got: positions.len(),
            });
        }
        self.scratch.clear();
        self.scratch
            .extend(self.source_of.iter().map(|&s| positions[s as usize]));
        if self.scratch.iter().any(|p| !p.is_finite()) {
            return Err(ColliderError::NonFinitePose);
        }
        self.prev.clear();
        self.prev.extend_from_slice(self.shape.vertices());
        let step = (self.prev.iter().zip(&self.scratch))
            .map(|(a, b)| a.distance_squared(*b))
            .fold(0.0, Real::max)
            .sqrt();
        self.travel_m += step;
        self.shape.set_vertices(&self.scratch);
        Ok(())
    }

    /// Rebuilds the collider from scratch at a new pose (the alternative to
    /// [`Self::set_pose`]'s refit; kept for the benchmark that compares the two).
    pub fn rebuild_at_pose(&mut self, positions: &[Vec3]) -> Result<(), ColliderError> {
        if positions.len() != self.source_count {
            return Err(ColliderError::PoseLength {
                expected: self.source_count,
                got: positions.len(),
            });
        }
        let verts: Vec<Vec3> = self
            .source_of
            .iter()
            .map(|&s| positions[s as usize])
            .collect();
        self.prev.clear();
        self.prev.extend_from_slice(self.shape.vertices());
        let flags = self.shape.flags();
        self.shape =
            TriMesh::with_flags(verts, self.shape.indices().to_vec(), flags).map_err(|e| {
                ColliderError::Invalid {
                    name: "body".into(),
                    reason: e.to_string(),
                }
            })?;
        Ok(())
    }

    /// How far the surface point `point_m` of triangle `tri` moved since the previous pose
    /// (m): the same barycentric point on the triangle's previous vertices, subtracted.
    pub fn surface_motion(&self, tri: u32, point_m: Vec3) -> Vec3 {
        let Some(idx) = self.shape.indices().get(tri as usize) else {
            return Vec3::ZERO;
        };
        let v = self.shape.vertices();
        let [a, b, c] = idx.map(|i| v[i as usize]);
        let bary = barycentric(point_m, a, b, c);
        let [pa, pb, pc] = idx.map(|i| self.prev[i as usize]);
        point_m - (pa * bary[0] + pb * bary[1] + pc * bary[2])
    }

    /// Whether the body surface is closed (watertight), so that "inside" is defined.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The parry3d shape.
    pub fn shape(&self) -> &TriMesh {
        &self.shape
    }

    /// Closest surface point within `max_distance_m` of `p`, with the outward normal and the
    /// signed distance, or `None` when the surface is farther away.
    pub fn query(&self, p: Vec3, max_distance_m: Real) -> Option<SurfacePoint> {
        let proj = self
            .shape
            .project_local_point_with_max_dist(p, false, max_distance_m)?;
        Some(self.surface_point(p, proj.point, proj.is_inside, proj.subshape))
    }

    /// Closest surface point of `p` at any distance.
    pub fn closest(&self, p: Vec3) -> SurfacePoint {
        let proj = self.shape.project_local_point(p, false);
        self.surface_point(p, proj.point, proj.is_inside, proj.subshape)
    }

    fn surface_point(&self, p: Vec3, q: Vec3, inside: bool, tri: u32) -> SurfacePoint {
        let inside = inside && self.closed;
        let d = p - q;
        let dist = d.length();
        let face_normal = || self.shape.triangle(tri).normal().unwrap_or(Vec3::Y);
        let normal = if dist > 1.0e-7 {
            if inside {
                -d / dist
            } else {
                d / dist
            }
        } else {
            face_normal()
        };
        SurfacePoint {
            point_m: q,
            normal,
            signed_distance_m: if inside { -dist } else { dist },
            triangle: tri,
        }
    }

    /// Depth (m) of `p` strictly inside the closed body, or 0 outside or on the surface.
    pub fn penetration_depth(&self, p: Vec3) -> Real {
        if !self.closed {
            return 0.0;
        }
        let proj = self.shape.project_local_point(p, false);
        if proj.is_inside {
            (p - proj.point).length()
        } else {
            0.0
        }
    }

    /// Generates contacts for every particle with `inv_mass > 0` that lies within
    /// `thickness_m + margin_m` of the surface (or inside it), appending to `out`.
    ///
    /// `x_prev` are the particles' positions at the start of the substep and `x` the predicted
    /// ones; the body is at the substep's end pose ([`Self::set_pose`]).
    ///
    /// **Continuous test.** A particle whose motion relative to the body surface exceeds the
    /// thickness is swept: the segment from where it would be had it moved with the surface
    /// (`x_prev` plus the surface's motion) to `x` is cast against the body. When it enters
    /// the body through a face, the contact is that face at the entry point, so the particle is
    /// pushed back to the side it came from instead of through to the nearest (far) side of a
    /// thin limb.
    ///
    /// `cache` keeps, per particle, where it was last queried and a lower bound of its distance
    /// to the surface then. The distance now is at least that bound minus how far the particle
    /// moved since, minus how far the body moved since, so particles still provably out of
    /// reach skip the BVH query.
    #[allow(clippy::too_many_arguments)]
    pub fn contacts(
        &self,
        x_prev: &[Vec3],
        x: &[Vec3],
        inv_mass: &[Real],
        thickness_m: Real,
        margin_m: Real,
        cache: &mut ProximityCache,
        out: &mut Vec<Contact>,
    ) {
        let reach = thickness_m + margin_m;
        // Look this much farther than needed, so the bound stays useful for a few substeps.
        let radius = reach + PROXIMITY_LOOKAHEAD_M;
        cache.resize(x.len());
        for (i, (&p, &w)) in x.iter().zip(inv_mass).enumerate() {
            if w <= 0.0 {
                continue;
            }
            let start = x_prev.get(i).copied().unwrap_or(p);
            let moved_far = (p - start).length_squared() > thickness_m * thickness_m;
            let bound = cache.distance_m[i]
                - (p - cache.queried_at[i]).length()
                - (self.travel_m - cache.travel_at[i]);
            if bound > reach && !moved_far {
                continue;
            }
            cache.queried_at[i] = p;
            cache.travel_at[i] = self.travel_m;
            let near = self.query(p, radius);
            let surface_motion = near
                .map(|s| self.surface_motion(s.triangle, s.point_m))
                .unwrap_or(Vec3::ZERO);
            if let Some(c) = self.sweep(i as u32, start + surface_motion, p, thickness_m) {
                cache.distance_m[i] = 0.0;
                out.push(c);
                continue;
            }
            match near {
                Some(s) => {
                    cache.distance_m[i] = s.signed_distance_m.max(0.0);
                    if s.signed_distance_m <= reach {
                        out.push(Contact {
                            particle: i as u32,
                            point_m: s.point_m,
                            normal: s.normal,
                            body_motion_m: surface_motion,
                        });
                    }
                }
                None => {
                    // Far from the surface, or deep inside a closed body (then it needs a
                    // contact that pushes it out). The unbounded query also gives a longer bound.
                    let s = self.closest(p);
                    if s.signed_distance_m < 0.0 {
                        cache.distance_m[i] = 0.0;
                        out.push(Contact {
                            particle: i as u32,
                            point_m: s.point_m,
                            normal: s.normal,
                            body_motion_m: self.surface_motion(s.triangle, s.point_m),
                        });
                    } else {
                        cache.distance_m[i] = s.signed_distance_m.max(radius);
                    }
                }
            }
        }
    }

    /// The continuous test of [`Self::contacts`]: casts the segment `from → to` against the
    /// body and returns a contact on the first face it enters, if any.
    fn sweep(&self, particle: u32, from: Vec3, to: Vec3, thickness_m: Real) -> Option<Contact> {
        let d = to - from;
        let len2 = d.length_squared();
        if len2 <= thickness_m * thickness_m {
            return None;
        }
        let ray = Ray::new(from, d);
        let hit = self.shape.cast_local_ray_and_get_normal(&ray, 1.0, false)?;
        let tri = self.shape.triangle(hit.subshape);
        let face = tri.normal()?;
        let entering = face.dot(d) < 0.0;
        let normal = if entering {
            face
        } else if self.closed {
            // Leaving a closed body: the particle started inside; the regular deep contact
            // pushes it out.
            return None;
        } else {
            // An open surface has no inside: keep the particle on the side it came from.
            -face
        };
        let point = from + d * hit.time_of_impact;
        Some(Contact {
            particle,
            point_m: point,
            normal,
            body_motion_m: self.surface_motion(hit.subshape, point),
        })
    }
}

/// A point attached to the body surface: a triangle of the body mesh, barycentric coordinates
/// in it, and an offset along its unit normal. It follows the body as it is skinned.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SurfaceAnchor {
    /// Body mesh vertices of the triangle (indices into the mesh given to
    /// [`BodyCollider::new`]).
    pub vertices: [u32; 3],
    /// Barycentric coordinates of the foot point in the triangle's plane (sum 1; may lie
    /// outside `[0, 1]` when the point projects outside the triangle).
    pub barycentric: [Real; 3],
    /// Distance from the triangle's plane along its unit normal (m).
    pub offset_m: Real,
}

impl SurfaceAnchor {
    /// The anchored point for the body mesh vertices `positions` (m).
    pub fn evaluate(&self, positions: &[Vec3]) -> Vec3 {
        let [a, b, c] = self.vertices.map(|i| positions[i as usize]);
        let [u, v, w] = self.barycentric;
        let n = (b - a).cross(c - a).normalize_or_zero();
        a * u + b * v + c * w + n * self.offset_m
    }
}

impl BodyCollider {
    /// Binds `point` to the body surface at the current pose: the closest triangle, the
    /// barycentric coordinates of the point's foot in that triangle's plane and the distance
    /// along its normal. [`SurfaceAnchor::evaluate`] at this pose gives `point` back (to
    /// rounding).
    pub fn anchor(&self, point: Vec3) -> SurfaceAnchor {
        let tri = self.closest(point).triangle;
        let idx = self.shape.indices()[tri as usize];
        let v = self.shape.vertices();
        let [a, b, c] = idx.map(|i| v[i as usize]);
        let n = (b - a).cross(c - a).normalize_or_zero();
        let offset = n.dot(point - a);
        let foot = point - n * offset;
        SurfaceAnchor {
            vertices: idx.map(|i| self.source_of[i as usize]),
            barycentric: barycentric(foot, a, b, c),
            offset_m: offset,
        }
    }
}

/// Barycentric coordinates of `p` (assumed in the triangle's plane) in triangle `abc`; the
/// centroid's for a degenerate triangle.
pub fn barycentric(p: Vec3, a: Vec3, b: Vec3, c: Vec3) -> [Real; 3] {
    let (e0, e1, ep) = (b - a, c - a, p - a);
    let (d00, d01, d11) = (e0.dot(e0), e0.dot(e1), e1.dot(e1));
    let (d20, d21) = (ep.dot(e0), ep.dot(e1));
    let denom = d00 * d11 - d01 * d01;
    if denom.abs() <= Real::EPSILON * d00 * d11 || denom == 0.0 {
        return [1.0 / 3.0; 3];
    }
    let v = (d11 * d20 - d01 * d21) / denom;
    let w = (d00 * d21 - d01 * d20) / denom;
    [1.0 - v - w, v, w]
}

/// How much farther than the contact reach a proximity query looks (m).
pub const PROXIMITY_LOOKAHEAD_M: Real = 0.05;

/// Per-particle lower bounds of the distance to the body, for [`BodyCollider::contacts`].
#[derive(Clone, Debug, Default)]
pub struct ProximityCache {
    queried_at: Vec<Vec3>,
    distance_m: Vec<Real>,
    /// The body's travel ([`BodyCollider::set_pose`]) at the particle's last query (m).
    travel_at: Vec<Real>,
}

impl ProximityCache {
    fn resize(&mut self, n: usize) {
        if self.queried_at.len() != n {
            // Unknown: a bound of 0 forces a query.
            self.queried_at = vec![Vec3::ZERO; n];
            self.distance_m = vec![0.0; n];
            self.travel_at = vec![0.0; n];
        }
    }
}

/// Penetration counts over a set of points (DESIGN §3 `body_penetrations`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Penetrations {
    /// Points strictly inside the body.
    pub count: usize,
    /// Deepest penetration (m).
    pub max_depth_m: Real,
}

/// Counts the points strictly inside the closed body, by parry3d's signed point projection.
pub fn measure_penetrations(body: &BodyCollider, points: &[Vec3]) -> Penetrations {
    points.iter().fold(Penetrations::default(), |acc, &p| {
        let depth = body.penetration_depth(p);
        if depth > 0.0 {
            Penetrations {
                count: acc.count + 1,
                max_depth_m: acc.max_depth_m.max(depth),
            }
        } else {
            acc
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    /// A closed unit cube centred at the origin, outward winding.
    fn cube() -> Mesh {
        let p = (0..8)
            .map(|i| {
                Vec3::new(
                    if i & 1 == 0 { -0.5 } else { 0.5 },
                    if i & 2 == 0 { -0.5 } else { 0.5 },
                    if i & 4 == 0 { -0.5 } else { 0.5 },
                )
            })
            .collect();
        let quads = [
            [0, 2, 3, 1],
            [4, 5, 7, 6],
            [0, 1, 5, 4],
            [2, 6, 7, 3],
            [0, 4, 6, 2],
            [1, 3, 7, 5],
        ];
        let t = quads
            .iter()
            .flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]])
            .collect();
        Mesh::new("cube", p, t)
    }

    #[test]
    fn inside_and_outside_are_signed() {
        let m = cube();
        assert!(m.signed_volume() > 0.0);
        let c = BodyCollider::new(&m).unwrap();
        assert!(c.is_closed());
        let s = c.closest(Vec3::new(0.0, 0.4, 0.0));
        assert_relative_eq!(s.signed_distance_m, -0.1, epsilon = 1e-6);
        assert_relative_eq!(s.normal.y, 1.0, epsilon = 1e-6);
        let s = c.closest(Vec3::new(0.0, 0.7, 0.0));
        assert_relative_eq!(s.signed_distance_m, 0.2, epsilon = 1e-6);
        assert_relative_eq!(
            c.penetration_depth(Vec3::new(0.45, 0.0, 0.0)),
            0.05,
            epsilon = 1e-6
        );
        assert_eq!(c.penetration_depth(Vec3::new(0.55, 0.0, 0.0)), 0.0);
        let pen = measure_penetrations(&c, &[Vec3::ZERO, Vec3::X, Vec3::new(0.0, 0.0, 0.3)]);
        assert_eq!(pen.count, 2);
        assert_relative_eq!(pen.max_depth_m, 0.5, epsilon = 1e-6);
    }

    /// Regression (review): a closed body whose vertices are split along UV seams was taken
    /// for an open one, which turned the inside test and the penetration count off.
    #[test]
    fn seamed_closed_body_is_closed() {
        let mut m = cube();
        // Split every triangle's corners into their own vertices, as UV seams do.
        let tris = m.indices.clone();
        m.positions = tris
            .iter()
            .flat_map(|t| t.map(|i| m.positions[i as usize]))
            .collect();
        m.indices = (0..tris.len() as u32)
            .map(|t| [3 * t, 3 * t + 1, 3 * t + 2])
            .collect();
        let c = BodyCollider::new(&m).unwrap();
        assert!(c.is_closed());
        let pen = measure_penetrations(&c, &[Vec3::ZERO, Vec3::new(0.0, 0.4, 0.0)]);
        assert_eq!(pen.count, 2);
    }

    #[test]
    fn deep_particle_gets_a_contact() {
        // A 2 m cube: its centre is 1 m deep, beyond any contact reach.
        let mut m = cube();
        for p in &mut m.positions {
            *p *= 4.0;
        }
        let c = BodyCollider::new(&m).unwrap();
        let mut out = Vec::new();
        let mut cache = ProximityCache::default();
        c.contacts(
            &[Vec3::new(0.0, 0.1, 0.0)],
            &[Vec3::new(0.0, 0.1, 0.0)],
            &[1.0],
            0.01,
            0.0,
            &mut cache,
            &mut out,
        );
        assert_eq!(out.len(), 1);
        assert!(
            out[0].normal.y > 0.99,
            "pushed out through the nearest face"
        );
    }

    #[test]
    fn contacts_within_reach_only() {
        let c = BodyCollider::new(&cube()).unwrap();
        let x = [
            Vec3::new(0.0, 0.505, 0.0),
            Vec3::new(0.0, 0.9, 0.0),
            Vec3::new(0.0, 0.49, 0.0),
            Vec3::new(0.0, 0.501, 0.0),
        ];
        let mut out = Vec::new();
        let mut cache = ProximityCache::default();
        c.contacts(
            &x,
            &x,
            &[1.0, 1.0, 1.0, 0.0],
            0.01,
            0.0,
            &mut cache,
            &mut out,
        );
        let ids: Vec<u32> = out.iter().map(|k| k.particle).collect();
        assert_eq!(ids, vec![0, 2]);
        assert!(out.iter().all(|k| k.normal.y > 0.99));
        // Particle 1 is 0.4 m away: a small move keeps it skipped, a move into reach finds it.
        let mut y = x;
        y[1].y = 0.88;
        out.clear();
        c.contacts(
            &y,
            &y,
            &[1.0, 1.0, 1.0, 0.0],
            0.01,
            0.0,
            &mut cache,
            &mut out,
        );
        assert_eq!(out.len(), 2);
        y[1].y = 0.505;
        out.clear();
        c.contacts(
            &y,
            &y,
            &[1.0, 1.0, 1.0, 0.0],
            0.01,
            0.0,
            &mut cache,
            &mut out,
        );
        let ids: Vec<u32> = out.iter().map(|k| k.particle).collect();
        assert_eq!(ids, vec![0, 1, 2]);
    }
}
