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

use parry3d::query::PointQuery;
use parry3d::shape::{TriMesh, TriMeshFlags};

use crate::math::{Real, Vec3};
use crate::mesh::Mesh;

/// A body mesh that cannot be used as a collider.
#[derive(Debug, thiserror::Error)]
pub enum ColliderError {
    /// parry3d refused the mesh.
    #[error("body mesh '{name}' cannot be used as a collider: {reason}")]
    Invalid {
        /// Mesh name.
        name: String,
        /// parry3d's reason.
        reason: String,
    },
}

/// The body as a collision shape.
pub struct BodyCollider {
    shape: TriMesh,
    closed: bool,
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

/// One particle–body contact, valid for one substep. 32 bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact {
    /// Particle index.
    pub particle: u32,
    /// Closest point on the body surface (m).
    pub point_m: Vec3,
    /// Unit normal pointing out of the body.
    pub normal: Vec3,
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
}

impl BodyCollider {
    /// Builds the collider.
    ///
    /// The mesh is welded first (UV seams split the vertices of almost every textured
    /// character), then the body counts as closed when every edge has two triangles and the
    /// enclosed volume is positive: only then are inside and outside defined (the `ORIENTED`
    /// pseudo-normal test). An open body only pushes particles to the side they are on.
    pub fn new(mesh: &Mesh) -> Result<Self, ColliderError> {
        let welded = crate::mesh::weld(mesh, BODY_WELD_TOLERANCE_M).mesh;
        if welded.indices.is_empty() {
            return Err(ColliderError::Invalid {
                name: mesh.name.clone(),
                reason: "every triangle collapses to a line or a point".into(),
            });
        }
        let closed =
            crate::mesh::Topology::new(&welded).is_closed() && welded.signed_volume() > 0.0;
        let flags = if closed {
            TriMeshFlags::ORIENTED
        } else {
            TriMeshFlags::empty()
        };
        let shape = TriMesh::with_flags(welded.positions, welded.indices, flags).map_err(|e| {
            ColliderError::Invalid {
                name: mesh.name.clone(),
                reason: e.to_string(),
            }
        })?;
        Ok(Self { shape, closed })
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
    /// `cache` keeps, per particle, where it was last queried and a lower bound of its distance
    /// to the surface then. By the triangle inequality the distance now is at least that bound
    /// minus how far the particle moved since, so particles still provably out of reach skip
    /// the BVH query. The bound assumes a static body.
    pub fn contacts(
        &self,
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
            let bound = cache.distance_m[i] - (p - cache.queried_at[i]).length();
            if bound > reach {
                continue;
            }
            cache.queried_at[i] = p;
            match self.query(p, radius) {
                Some(s) => {
                    cache.distance_m[i] = s.signed_distance_m.max(0.0);
                    if s.signed_distance_m <= reach {
                        out.push(Contact {
                            particle: i as u32,
                            point_m: s.point_m,
                            normal: s.normal,
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
                        });
                    } else {
                        cache.distance_m[i] = s.signed_distance_m.max(radius);
                    }
                }
            }
        }
    }
}

/// How much farther than the contact reach a proximity query looks (m).
pub const PROXIMITY_LOOKAHEAD_M: Real = 0.05;

/// Per-particle lower bounds of the distance to the body, for [`BodyCollider::contacts`].
#[derive(Clone, Debug, Default)]
pub struct ProximityCache {
    queried_at: Vec<Vec3>,
    distance_m: Vec<Real>,
}

impl ProximityCache {
    fn resize(&mut self, n: usize) {
        if self.queried_at.len() != n {
            // Unknown: a bound of 0 forces a query.
            self.queried_at = vec![Vec3::ZERO; n];
            self.distance_m = vec![0.0; n];
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
        c.contacts(&x, &[1.0, 1.0, 1.0, 0.0], 0.01, 0.0, &mut cache, &mut out);
        let ids: Vec<u32> = out.iter().map(|k| k.particle).collect();
        assert_eq!(ids, vec![0, 2]);
        assert!(out.iter().all(|k| k.normal.y > 0.99));
        // Particle 1 is 0.4 m away: a small move keeps it skipped, a move into reach finds it.
        let mut y = x;
        y[1].y = 0.88;
        out.clear();
        c.contacts(&y, &[1.0, 1.0, 1.0, 0.0], 0.01, 0.0, &mut cache, &mut out);
        assert_eq!(out.len(), 2);
        y[1].y = 0.505;
        out.clear();
        c.contacts(&y, &[1.0, 1.0, 1.0, 0.0], 0.01, 0.0, &mut cache, &mut out);
        let ids: Vec<u32> = out.iter().map(|k| k.particle).collect();
        assert_eq!(ids, vec![0, 1, 2]);
    }
}
