//! Collisions of cloth particles against the body, on parry3d.
//!
//! The body is a parry3d [`TriMesh`] with its BVH. For a closed body, a point projection also
//! says whether the point is inside, by the angle-weighted pseudo-normal test (Bærentzen &
//! Aanæs, *Signed distance computation using the angle weighted pseudonormal*, IEEE TVCG 2005)
//! on Drape's own pseudo-normals: parry3d's `ORIENTED` flag computes the same, but recomputing
//! them when a skinned body moves costs ten times the BVH refit (2.4 ms against 0.2 ms for
//! CesiumMan's 4672 triangles), while `BodyCollider::refresh_surface` reuses precomputed adjacency.
//!
//! A particle within `thickness + margin` of the surface gets a contact: the closest surface
//! point `q` and a normal `n` pointing out of the body. The solver then keeps
//! `C = n·(x − q) − thickness ≥ 0` as an inequality constraint for the rest of the substep
//! (see [`crate::constraints::solve_contact`]).
//!
//! Also here: contacts of body vertices against the cloth ([`body_points`]), cloth against itself
//! ([`self_collision`]) and the region-travel bound of a moving body ([`travel`]).
//!
//! May import: [`crate::math`], [`crate::mesh`], [`crate::constraints`].

pub mod body_points;
pub mod self_collision;
pub mod travel;

use std::collections::HashMap;

use parry3d::query::{PointQuery, PointQueryWithLocation, Ray, RayCast};
use parry3d::shape::{TriMesh, TriMeshFlags, TrianglePointLocation};
use rayon::prelude::*;

use crate::collide::travel::RegionTravel;
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
    /// Pseudo-normals of a closed body, for the inside test; `None` for an open one.
    pseudo: Option<PseudoNormals>,
    /// Area-weighted unit vertex normals at the current pose, for [`SurfaceAnchor`]s.
    normals: Vec<Vec3>,
    /// For each collider vertex, the body-mesh vertex it was welded from.
    source_of: Vec<u32>,
    /// Number of body-mesh vertices [`Self::set_pose`] expects.
    source_count: usize,
    /// The caps that close the holes collision exclusions leave in a closed body: collider
    /// vertices past `source_of`'s, each at the centre of its hole's rim.
    caps: HoleCaps,
    /// Collider vertex positions at the previous pose (m).
    prev: Vec<Vec3>,
    /// Scratch for the new vertex positions.
    scratch: Vec<Vec3>,
    /// Each triangle's bounding sphere at the current pose: its centroid and the distance to
    /// its farthest vertex (m). `|p − c| − r` is a lower bound of the distance from `p` to the
    /// triangle that costs a fraction of its projection.
    spheres: Vec<(Vec3, Real)>,
    /// How far each region of the body has moved since every pose: bounds on how far the
    /// surface near a point has moved since a given update.
    travel: RegionTravel,
    /// The triangles (`shape`'s indices), kept apart so that the surface can be refreshed
    /// while parry refits its BVH.
    indices: Vec<[u32; 3]>,
    /// Refit the BVH and refresh the surface at the same time, on rayon's threads
    /// ([`Self::set_parallel`]).
    parallel: bool,
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

/// One particle–body contact, valid for one substep. 48 bytes.
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
    /// Distance the particle keeps from the surface (m): the collision thickness, or less where
    /// the particle is pinched between two surfaces closer than twice that.
    pub thickness_m: Real,
    /// Whether the particle is held between two parts of the body: it has this contact and an
    /// opposing one on a surface facing the other way (an arm against the torso), or the body
    /// overlaps itself there and leaves it no room. The failure checks leave such a particle
    /// out: the body moves it, and smaller steps cannot make it room.
    pub pinched: bool,
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

/// The caps that close the holes collision exclusions cut in a closed body.
///
/// Each hole's rim (a loop of boundary edges of the kept triangles) gets one new vertex at the
/// mean of the rim's vertices and a fan of triangles from it, wound like the faces round it,
/// so the collider is closed again and its inside defined everywhere. The centre moves with the
/// rim: [`HoleCaps::place`] puts it back at the rim's mean at every pose.
#[derive(Clone, Debug, Default)]
pub struct HoleCaps {
    /// The collider vertex of the first cap's centre; the caps' centres follow in order.
    first: u32,
    /// Each cap's rim: a range of `rims`.
    ranges: Vec<std::ops::Range<u32>>,
    /// The rims' collider vertices, cap after cap.
    rims: Vec<u32>,
}

impl HoleCaps {
    /// Caps every hole of `mesh`: appends each cap's centre to its positions and its fan to its
    /// triangles. Rims of fewer than 3 edges, and rims that cannot be walked round to their
    /// start, are left open.
    fn close(mesh: &mut Mesh) -> Self {
        let mut boundary = crate::mesh::Topology::new(mesh).oriented_boundary(mesh);
        // Sorted: a deterministic walk, whatever the triangles' order.
        boundary.sort_unstable();
        // Each boundary edge a → b, by its start.
        let mut outgoing: HashMap<u32, Vec<u32>> = HashMap::new();
        for &[a, b] in &boundary {
            outgoing.entry(a).or_default().push(b);
        }
        let Mesh {
            positions, indices, ..
        } = mesh;
        let mut caps = Self {
            first: positions.len() as u32,
            ..Self::default()
        };
        for &[a0, b0] in &boundary {
            if !outgoing.get(&a0).is_some_and(|o| o.contains(&b0)) {
                continue; // already walked
            }
            // Walk the rim a0 → b0 → … back to a0, taking each edge once (so the walk ends).
            let mut rim = vec![a0];
            let mut at = b0;
            take(&mut outgoing, a0, b0);
            let closed = loop {
                if at == a0 {
                    break true;
                }
                rim.push(at);
                let Some(next) = outgoing.get(&at).and_then(|o| o.first().copied()) else {
                    break false;
                };
                take(&mut outgoing, at, next);
                at = next;
            };
            if !closed || rim.len() < 3 {
                continue;
            }
            let centre = positions.len() as u32;
            positions.push(rim_mean(positions, &rim));
            let start = caps.rims.len() as u32;
            // The kept face has the rim edge a → b; the cap's face runs b → a.
            for k in 0..rim.len() {
                let (a, b) = (rim[k], rim[(k + 1) % rim.len()]);
                indices.push([b, a, centre]);
            }
            caps.rims.extend_from_slice(&rim);
            caps.ranges.push(start..caps.rims.len() as u32);
        }
        caps
    }

    /// Number of holes capped.
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Whether no hole was capped.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Appends the caps' centres, each at its rim's mean, to `vertices`, which holds every
    /// collider vertex before them at the new pose.
    fn place(&self, vertices: &mut Vec<Vec3>) {
        debug_assert!(self.is_empty() || vertices.len() == self.first as usize);
        for r in &self.ranges {
            let rim = &self.rims[r.start as usize..r.end as usize];
            let mean = rim_mean(vertices, rim);
            vertices.push(mean);
        }
    }
}

/// Removes the boundary edge `a → b` from `outgoing`.
fn take(outgoing: &mut HashMap<u32, Vec<u32>>, a: u32, b: u32) {
    if let Some(o) = outgoing.get_mut(&a) {
        if let Some(k) = o.iter().position(|&x| x == b) {
            o.remove(k);
        }
    }
}

/// The mean of the rim's vertices (m).
fn rim_mean(positions: &[Vec3], rim: &[u32]) -> Vec3 {
    let sum: Vec3 = rim.iter().map(|&v| positions[v as usize]).sum();
    sum / rim.len() as Real
}

impl BodyCollider {
    /// Builds the collider.
    ///
    /// The mesh is welded first (UV seams split the vertices of almost every textured
    /// character), then the body counts as closed when every edge has two triangles and the
    /// enclosed volume is positive: only then are inside and outside defined (the
    /// pseudo-normal test, see the module docs). An open body only pushes particles to the side they are on.
    pub fn new(mesh: &Mesh) -> Result<Self, ColliderError> {
        Self::excluding(mesh, |_| false)
    }

    /// [`Self::new`] without the triangles `excluded` picks (it is given each welded triangle
    /// as the body-mesh vertices it was welded from): collision exclusions, such as hands that
    /// should pass through a skirt. Whether the body is closed is decided on the whole mesh, so
    /// the rest keeps its inside. In a closed body each hole an excluded region leaves (the
    /// stump of an excluded forearm) is capped ([`HoleCaps`]), so the rest stays closed and a
    /// particle cannot slip inside it through the hole.
    pub fn excluding(
        mesh: &Mesh,
        excluded: impl Fn([u32; 3]) -> bool,
    ) -> Result<Self, ColliderError> {
        let mut welded = crate::mesh::weld(mesh, BODY_WELD_TOLERANCE_M);
        if welded.mesh.indices.is_empty() {
            return Err(ColliderError::Invalid {
                name: mesh.name.clone(),
                reason: "every triangle collapses to a line or a point".into(),
            });
        }
        let closed = crate::mesh::Topology::new(&welded.mesh).is_closed()
            && welded.mesh.signed_volume() > 0.0;
        let mut source_of = vec![u32::MAX; welded.mesh.positions.len()];
        for (src, &dst) in welded.original_to_welded.iter().enumerate() {
            let slot = &mut source_of[dst as usize];
            if *slot == u32::MAX {
                *slot = src as u32;
            }
        }
        welded
            .mesh
            .indices
            .retain(|t| !excluded(t.map(|v| source_of[v as usize])));
        if welded.mesh.indices.is_empty() {
            return Err(ColliderError::Invalid {
                name: mesh.name.clone(),
                reason: "the collision exclusions leave no triangle".into(),
            });
        }
        let caps = if closed {
            HoleCaps::close(&mut welded.mesh)
        } else {
            HoleCaps::default()
        };
        let pseudo =
            closed.then(|| PseudoNormals::new(&welded.mesh.positions, &welded.mesh.indices));
        let prev = welded.mesh.positions.clone();
        let travel = RegionTravel::new(&welded.mesh.positions, &welded.mesh.indices);
        let shape = TriMesh::with_flags(
            welded.mesh.positions,
            welded.mesh.indices,
            TriMeshFlags::empty(),
        )
        .map_err(|e| ColliderError::Invalid {
            name: mesh.name.clone(),
            reason: e.to_string(),
        })?;
        let indices = shape.indices().to_vec();
        Ok(Self {
            shape,
            closed,
            pseudo,
            normals: Vec::new(),
            source_of,
            source_count: mesh.positions.len(),
            caps,
            scratch: Vec::with_capacity(prev.len()),
            prev,
            travel,
            spheres: Vec::new(),
            indices,
            parallel: false,
        }
        .with_surface())
    }

    /// Moves the body to a new pose: `positions` are the body mesh's vertices (in the order of
    /// the mesh given to [`Self::new`]) in m.
    ///
    /// The BVH is refitted in place rather than rebuilt: `benches/standard_scene.rs` measures
    /// both (`collider_update`), and the refit is the faster one for the deformations of a
    /// skinned character. Fails when the vertex count differs from the mesh's.
    pub fn set_pose(&mut self, positions: &[Vec3]) -> Result<(), ColliderError> {
        self.stage_pose(positions)?;
        let Self {
            shape,
            pseudo,
            normals,
            prev,
            scratch,
            spheres,
            travel,
            indices,
            parallel,
            ..
        } = self;
        // parry's refit and the rest of the update read the new vertices and write apart.
        let mut refit = || shape.set_vertices(scratch);
        let mut surface = || {
            travel.update(prev, scratch);
            refresh_surface(scratch, indices, spheres, normals, pseudo.as_mut());
        };
        if *parallel {
            rayon::join(refit, surface);
        } else {
            refit();
            surface();
        }
        Ok(())
    }

    /// Whether [`Self::set_pose`] refits the BVH on one of rayon's threads while it refreshes
    /// the rest of the surface on another (the same collider either way). Off for a new
    /// collider; the solver turns it on with [`crate::solver::SolverSettings::parallel`].
    pub fn set_parallel(&mut self, on: bool) {
        self.parallel = on;
    }

    /// Rebuilds the collider from scratch at a new pose (the alternative to
    /// [`Self::set_pose`]'s refit; kept for the benchmark that compares the two). The collider
    /// ends in the same state as after [`Self::set_pose`].
    pub fn rebuild_at_pose(&mut self, positions: &[Vec3]) -> Result<(), ColliderError> {
        self.stage_pose(positions)?;
        let flags = self.shape.flags();
        self.shape =
            TriMesh::with_flags(self.scratch.clone(), self.shape.indices().to_vec(), flags)
                .map_err(|e| ColliderError::Invalid {
                    name: "body (posed)".into(),
                    reason: e.to_string(),
                })?;
        self.travel.update(&self.prev, &self.scratch);
        self.refresh_surface();
        Ok(())
    }

    /// The shared first half of a pose update: checks `positions`, maps them onto the collider
    /// vertices in `scratch` and keeps the current vertices as the previous pose (the second
    /// half records the pose's displacements in the body's travel, refits and refreshes).
    fn stage_pose(&mut self, positions: &[Vec3]) -> Result<(), ColliderError> {
        if positions.len() != self.source_count {
            return Err(ColliderError::PoseLength {
                expected: self.source_count,
                got: positions.len(),
            });
        }
        self.scratch.clear();
        self.scratch
            .extend(self.source_of.iter().map(|&s| positions[s as usize]));
        self.caps.place(&mut self.scratch);
        if self.scratch.iter().any(|p| !p.is_finite()) {
            return Err(ColliderError::NonFinitePose);
        }
        self.prev.clear();
        self.prev.extend_from_slice(self.shape.vertices());
        Ok(())
    }

    /// The collider with its [`Self::refresh_surface`] done.
    fn with_surface(mut self) -> Self {
        self.refresh_surface();
        self
    }

    /// The distance from `p` to collider triangle `tri` (m), by [`triangle_distance`].
    #[inline]
    fn distance_to(&self, p: Vec3, tri: u32) -> Real {
        let v = self.shape.vertices();
        let [a, b, c] = self.shape.indices()[tri as usize].map(|i| v[i as usize]);
        triangle_distance(p, a, b, c)
    }

    /// A lower bound of the distance from `p` to triangle `tri` (m), from its bounding sphere,
    /// rounded down by a micrometre so that rounding never makes it exceed the true distance.
    #[inline]
    fn distance_at_least(&self, p: Vec3, tri: u32) -> Real {
        let (c, r) = self.spheres[tri as usize];
        p.distance(c) - r - 1.0e-6
    }

    /// Recomputes, for the current vertices, everything derived from them: the triangles'
    /// bounding spheres, the unit face normals and vertex pseudo-normals (closed body) and the
    /// area-weighted unit vertex normals, in one pass over the triangles (each triangle's
    /// cross product once; the sums are made in the same order as separate passes would).
    fn refresh_surface(&mut self) {
        refresh_surface(
            self.shape.vertices(),
            &self.indices,
            &mut self.spheres,
            &mut self.normals,
            self.pseudo.as_mut(),
        );
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

    /// Holes cut by collision exclusions that the collider capped ([`HoleCaps`]).
    pub fn capped_holes(&self) -> usize {
        self.caps.len()
    }

    /// Whether the body surface is closed (watertight), so that "inside" is defined.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// The collider's (welded) vertices at the current pose (m).
    pub fn vertices(&self) -> &[Vec3] {
        self.shape.vertices()
    }

    /// The collider's vertices at the previous pose (m): where they were at the start of the
    /// substep (the same as [`Self::vertices`] for a body that has not moved).
    pub fn previous_vertices(&self) -> &[Vec3] {
        &self.prev
    }

    /// The collider's triangles (indices into [`Self::vertices`]).
    pub fn triangles(&self) -> &[[u32; 3]] {
        self.shape.indices()
    }

    /// Area-weighted unit vertex normals at the current pose, one per [`Self::vertices`] entry
    /// (zero where the normal is undefined).
    pub fn vertex_normals(&self) -> &[Vec3] {
        &self.normals
    }

    /// The parry3d shape.
    pub fn shape(&self) -> &TriMesh {
        &self.shape
    }

    /// Closest surface point within `max_distance_m` of `p`, with the outward normal and the
    /// signed distance, or `None` when the surface is farther away.
    pub fn query(&self, p: Vec3, max_distance_m: Real) -> Option<SurfacePoint> {
        let (proj, (tri, location)) = self
            .shape
            .project_local_point_and_get_location_with_max_dist(p, false, max_distance_m)?;
        Some(self.surface_point(p, proj.point, tri, location))
    }

    /// [`Self::query`], first within the distance of triangle `hint` (the particle's closest
    /// one at its last query) when that is nearer than `max_distance_m`: the same answer,
    /// from a descent of the BVH that prunes every box farther than the hint from the start.
    ///
    /// parry's descent visits the boxes in the same order under any bound, only skipping those
    /// no nearer than the best so far, so it ends on the same triangle when the closest is
    /// within the smaller bound; a hint that rounds below parry's own distance finds nothing,
    /// and the full query answers.
    fn query_from(&self, p: Vec3, max_distance_m: Real, hint: Option<u32>) -> Option<SurfacePoint> {
        if let Some(tri) = hint.filter(|&t| (t as usize) < self.indices.len()) {
            let d = self.distance_to(p, tri) * (1.0 + 1.0e-5) + 1.0e-6;
            if d < max_distance_m {
                if let Some(s) = self.query(p, d) {
                    return Some(s);
                }
            }
        }
        self.query(p, max_distance_m)
    }

    /// Fills `near` with the collider triangles within `reach + CANDIDATE_LOOKAHEAD_M` of
    /// `p`, nearest first: at most [`CANDIDATES`], the radius shrunk to the nearest one left out
    /// when there are more. Where the body is too finely meshed for the list to cover `reach`
    /// with some room, it is left empty (and not gathered again until the particle or the body
    /// has moved by the lookahead): the BVH serves that particle.
    fn gather(&self, p: Vec3, reach: Real, near: &mut Candidates) {
        let radius_m = reach + CANDIDATE_LOOKAHEAD_M;
        let r = Vec3::splat(radius_m);
        let aabb = parry3d::bounding_volume::Aabb::new(p - r, p + r);
        let mut found = [(0.0, 0u32); 4 * CANDIDATES];
        let mut count = 0;
        let mut complete = true;
        for tri in self.shape.bvh().intersect_aabb(&aabb) {
            if self.distance_at_least(p, tri) > radius_m {
                continue;
            }
            let d = self.distance_to(p, tri);
            if d > radius_m {
                continue;
            }
            if count == found.len() {
                complete = false;
                break;
            }
            found[count] = (d, tri);
            count += 1;
        }
        let found = &mut found[..count];
        found.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let kept = count.min(CANDIDATES);
        // Every triangle nearer than the radius is kept: the radius is the nearest one left
        // out, a hair less (a tie with it may be left out too).
        let covered = match (complete, found.get(kept)) {
            (false, _) => 0.0,
            (true, Some(&(d, _))) => d * (1.0 - 1.0e-5),
            (true, None) => radius_m,
        };
        let useful = covered > reach + 0.25 * CANDIDATE_LOOKAHEAD_M;
        near.centre_m = p;
        near.pose_at = self.travel.pose();
        near.gathered = true;
        near.winner = None;
        near.radius_m = if useful { covered } else { 0.0 };
        near.count = if useful { kept as u8 } else { 0 };
        for (k, &(d, tri)) in found.iter().take(CANDIDATES).enumerate() {
            near.triangles[k] = tri;
            near.distances_m[k] = d;
        }
        // The cone of the listed faces' normals around the nearest one's.
        let faces = near.triangles[..near.count as usize].iter();
        let mut normals = faces.filter_map(|&t| self.face_normal(t));
        near.cone_axis = normals.next().unwrap_or(Vec3::ZERO);
        near.cone_cos = normals.fold(1.0, |c: Real, n| c.min(n.dot(near.cone_axis)));
    }

    /// How far the triangles a particle's list `near` is about can have moved since it was
    /// gathered (m): the whole body's travel, or, when that is too much for the list to cover
    /// the `reach` around `p` and no travel would be, the travel of the regions within the
    /// list's radius of its centre.
    fn list_travel(&self, near: &Candidates, p: Vec3, reach: Real) -> Real {
        let total = self.travel.total_since(near.pose_at);
        if !Listed::new(near, total).covers_ball(p, reach)
            && Listed::new(near, 0.0).covers_ball(p, reach)
        {
            self.travel
                .since(near.pose_at, near.centre_m, near.radius_m)
        } else {
            total
        }
    }

    /// The closest surface point of `p` when its candidates `near` prove it (they still cover
    /// the contact `reach` around `p`, and the nearest of them is nearer than any triangle they
    /// may have left out); `None` when they do not.
    ///
    /// The list's last winner is checked first: every triangle's distance changes by at most
    /// how far the particle and the body moved since, so while the winner's distance now stays
    /// below what its nearest rival's was less that motion, it is still the closest and the
    /// list need not be gone through again. Returns the winner to keep for the next substeps.
    fn nearest_candidate(
        &self,
        p: Vec3,
        reach: Real,
        near: &Listed<'_>,
    ) -> Option<(SurfacePoint, Option<Winner>)> {
        if !near.covers_ball(p, reach) {
            return None;
        }
        let kept = near.list.winner.and_then(|w| {
            let moved = p.distance(w.at_m) + self.travel.total_since(w.pose_at);
            // A micrometre for the rounding of the distances compared. (Charging only the
            // travel of the regions within the winner's distance, as the lists do, was tried:
            // sound, but on the walking CesiumMan no faster.)
            let d = self.distance_to(p, w.triangle);
            (d + 1.0e-6 < w.rival_m - moved).then_some(w)
        });
        if let Some(w) = kept {
            return Some((self.project_on(p, w.triangle), Some(w)));
        }
        // Any triangle not among the candidates is at least this far from `p` now.
        let slack = near.slack(p);
        let certain = near.radius_m() - slack;
        let mut best: Option<(Real, u32)> = None;
        // A lower bound of the distance of every triangle but the best.
        let mut rival = certain;
        for (&tri, &was) in near.triangles().iter().zip(near.distances()) {
            // Nearest first: none of the rest can beat the best found.
            if best.is_some_and(|b| was - slack >= b.0) {
                rival = rival.min(was - slack);
                break;
            }
            // Nor can a triangle whose bounding sphere is farther than the best.
            let at_least = self.distance_at_least(p, tri);
            if best.is_some_and(|b| at_least >= b.0) {
                rival = rival.min(at_least);
                continue;
            }
            let d = self.distance_to(p, tri);
            match best {
                Some(b) if d >= b.0 => rival = rival.min(d),
                _ => {
                    if let Some(b) = best {
                        rival = rival.min(b.0);
                    }
                    best = Some((d, tri));
                }
            }
        }
        let (_, tri) = best.filter(|b| b.0 <= certain)?;
        let winner = Winner {
            triangle: tri,
            at_m: p,
            pose_at: self.travel.pose(),
            rival_m: rival,
        };
        Some((self.project_on(p, tri), Some(winner)))
    }

    /// The surface point of `p` on triangle `tri` (its closest, with parry's location).
    fn project_on(&self, p: Vec3, tri: u32) -> SurfacePoint {
        let (proj, location) = self
            .shape
            .triangle(tri)
            .project_local_point_and_get_location(p, false);
        self.surface_point(p, proj.point, tri, location)
    }

    /// The unit normal of collider triangle `tri` at the current pose (kept with the
    /// pseudo-normals of a closed body, computed for an open one), or `None` when it is
    /// degenerate.
    fn face_normal(&self, tri: u32) -> Option<Vec3> {
        match &self.pseudo {
            Some(pn) => pn
                .face
                .get(tri as usize)
                .copied()
                .filter(|n| *n != Vec3::ZERO),
            None => self.shape.triangle(tri).normal(),
        }
    }

    /// Closest surface point of `p` at any distance.
    pub fn closest(&self, p: Vec3) -> SurfacePoint {
        let (proj, (tri, location)) = self.shape.project_local_point_and_get_location(p, false);
        self.surface_point(p, proj.point, tri, location)
    }

    /// Whether `p`, whose closest surface point is `q` at `location` on triangle `tri`, is
    /// inside the closed body (the pseudo-normal test); always `false` for an open body.
    fn is_inside(&self, p: Vec3, q: Vec3, tri: u32, location: TrianglePointLocation) -> bool {
        match &self.pseudo {
            Some(pn) => (p - q).dot(pn.at(tri, location, self.shape.indices())) < 0.0,
            None => false,
        }
    }

    fn surface_point(
        &self,
        p: Vec3,
        q: Vec3,
        tri: u32,
        location: TrianglePointLocation,
    ) -> SurfacePoint {
        let inside = self.is_inside(p, q, tri, location);
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
        let s = self.closest(p);
        (-s.signed_distance_m).max(0.0)
    }

    /// The room the body leaves at its surface point `s` (m): how far the ray from `s` along
    /// its outward normal travels before it meets the body again, or 0 when it starts inside
    /// another part of the body (the first face it meets is left, not entered: an arm sunk into
    /// the torso). `None` when nothing is met within `max_m`: the body leaves at least that.
    ///
    /// This is the pinch test of the stats ([`measure_penetrations`]): cloth at a surface point
    /// with less room than twice the collision thickness is pinched between two parts of the
    /// body, and cannot be both outside of them and clear of either.
    pub fn room_at(&self, s: &SurfacePoint, max_m: Real) -> Option<Real> {
        // Off the surface by a hair, so that the ray does not meet the triangle it starts on.
        let start = s.point_m + s.normal * ROOM_RAY_OFFSET_M;
        let ray = Ray::new(start, s.normal);
        // In a closed body the first face the ray meets says whether it started outside (it
        // enters) or inside another part (it leaves), however far that face is.
        let reach = if self.closed { Real::MAX } else { max_m };
        let hit = self
            .shape
            .cast_local_ray_and_get_normal(&ray, reach, false)?;
        let leaves = self
            .face_normal(hit.subshape)
            .is_some_and(|face| face.dot(s.normal) > 0.0);
        let room = hit.time_of_impact + ROOM_RAY_OFFSET_M;
        if self.closed && leaves {
            Some(0.0)
        } else {
            (room < max_m).then_some(room)
        }
    }

    /// Generates contacts for every particle `i` with `inv_mass > 0` that lies within
    /// `thickness_m + margin_m + motion_m[i]` of the surface (or inside it), appending to
    /// `out`. `motion_m` is how far the projection may carry each particle in this substep (m;
    /// the solver passes the largest predicted move among the particle and its neighbours); a
    /// particle past the end of `motion_m` gets no such allowance.
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
    /// to the surface then. The distance of any point of this substep's motion is at least that
    /// bound minus how far the point is from the last query, minus how far the body moved
    /// since, so particles whose whole motion is provably out of reach skip the BVH query and
    /// the sweep.
    #[allow(clippy::too_many_arguments)]
    pub fn contacts(
        &self,
        x_prev: &[Vec3],
        x: &[Vec3],
        inv_mass: &[Real],
        thickness_m: Real,
        margin_m: Real,
        motion_m: &[Real],
        cache: &mut ProximityCache,
        out: &mut Vec<Contact>,
    ) {
        cache.resize(x.len());
        let ProximityCache {
            queried_at,
            distance_m,
            pose_at,
            candidates,
            chunks,
            parallel,
        } = cache;
        let chunk_count = x.len().div_ceil(CONTACT_CHUNK);
        chunks.resize_with(chunk_count, Vec::new);
        // Fixed chunks of particles, each with its own contact list, joined in chunk order: the
        // contacts come out in particle order whatever the thread count.
        let search = |(k, ((((queried, distance), pose), near), found)): ChunkTask<'_>| {
            found.clear();
            let first = k * CONTACT_CHUNK;
            for j in 0..queried.len() {
                let i = first + j;
                // Fixed particles, and any beyond `inv_mass` (as the serial zip skipped), get
                // no contact.
                if inv_mass.get(i).is_none_or(|&w| w <= 0.0) {
                    continue;
                }
                let slot = CacheSlot {
                    queried_at: &mut queried[j],
                    distance_m: &mut distance[j],
                    pose_at: &mut pose[j],
                    candidates: &mut near[j],
                };
                let start = x_prev.get(i).copied().unwrap_or(x[i]);
                let reach = thickness_m + margin_m + motion_m.get(i).copied().unwrap_or(0.0);
                // Look this much farther than needed, so the bound stays useful for a few
                // substeps.
                let radius = reach + PROXIMITY_LOOKAHEAD_M;
                self.particle_contacts(i, start, x[i], thickness_m, reach, radius, slot, found);
            }
        };
        if *parallel && chunk_count > 1 {
            (queried_at.par_chunks_mut(CONTACT_CHUNK))
                .zip(distance_m.par_chunks_mut(CONTACT_CHUNK))
                .zip(pose_at.par_chunks_mut(CONTACT_CHUNK))
                .zip(candidates.par_chunks_mut(CONTACT_CHUNK))
                .zip(chunks.par_iter_mut())
                .enumerate()
                .for_each(search);
        } else {
            (queried_at.chunks_mut(CONTACT_CHUNK))
                .zip(distance_m.chunks_mut(CONTACT_CHUNK))
                .zip(pose_at.chunks_mut(CONTACT_CHUNK))
                .zip(candidates.chunks_mut(CONTACT_CHUNK))
                .zip(chunks.iter_mut())
                .enumerate()
                .for_each(search);
        }
        for found in chunks.iter() {
            out.extend_from_slice(found);
        }
    }

    /// The contacts of particle `i` (moving from `start` to `p` in this substep), appended to
    /// `out`; `slot` is its entry in the [`ProximityCache`].
    #[allow(clippy::too_many_arguments)]
    fn particle_contacts(
        &self,
        i: usize,
        start: Vec3,
        p: Vec3,
        thickness_m: Real,
        reach: Real,
        radius: Real,
        slot: CacheSlot<'_>,
        out: &mut Vec<Contact>,
    ) {
        // Every point of the segment start → p is within `moved` of where the particle was
        // last queried, so the whole sweep is provably out of reach when this bound is.
        let q = *slot.queried_at;
        let moved = (p - q).length().max((start - q).length());
        let free = *slot.distance_m - moved;
        // With the whole body's travel, then (when that is too much and it can matter) with the
        // travel of the body's regions within reach of the segment: only they can have come
        // into reach.
        let pose_at = *slot.pose_at;
        let out_of_reach = free > reach
            && (free - self.travel.total_since(pose_at) > reach
                || free - self.travel.since(pose_at, p, reach + (p - start).length()) > reach);
        if out_of_reach {
            return;
        }
        *slot.queried_at = p;
        *slot.pose_at = self.travel.pose();
        // The candidate triangles when they prove the closest point; otherwise the BVH, and
        // a new list for a particle that is close to the surface (in contact or nearly).
        let near_tris = slot.candidates;
        let mut list_moved = self.list_travel(near_tris, p, reach);
        let near = match self.nearest_candidate(p, reach, &Listed::new(near_tris, list_moved)) {
            Some((s, winner)) => {
                near_tris.winner = winner;
                Some(s)
            }
            None => {
                let near = self.query_from(p, radius, near_tris.closest);
                near_tris.closest = near.map(|s| s.triangle);
                if near.is_some_and(|s| s.signed_distance_m <= reach)
                    && Listed::new(near_tris, list_moved).may_gather(p)
                {
                    self.gather(p, reach, near_tris);
                    list_moved = 0.0;
                }
                near
            }
        };
        let near_tris = Listed::new(near_tris, list_moved);
        let surface_motion = near
            .map(|s| self.surface_motion(s.triangle, s.point_m))
            .unwrap_or(Vec3::ZERO);
        let from = start + surface_motion;
        if let Some(c) = self.sweep(i as u32, from, p, thickness_m, &near_tris) {
            *slot.distance_m = 0.0;
            // The entry face alone: adding a pinch contact here too was tried and made
            // CesiumMan's bake diverge.
            out.push(c);
            return;
        }
        match near {
            Some(s) => {
                *slot.distance_m = s.signed_distance_m.max(0.0);
                if s.signed_distance_m <= reach {
                    out.push(Contact {
                        particle: i as u32,
                        point_m: s.point_m,
                        normal: s.normal,
                        body_motion_m: surface_motion,
                        thickness_m,
                        pinched: false,
                    });
                    self.push_opposing(i as u32, p, &s, reach, thickness_m, &near_tris, out);
                }
            }
            None => {
                // Far from the surface, or deep inside a closed body (then it needs a
                // contact that pushes it out). The unbounded query also gives a longer bound.
                let s = self.closest(p);
                if s.signed_distance_m < 0.0 {
                    *slot.distance_m = 0.0;
                    out.push(Contact {
                        particle: i as u32,
                        point_m: s.point_m,
                        normal: s.normal,
                        body_motion_m: self.surface_motion(s.triangle, s.point_m),
                        thickness_m,
                        pinched: false,
                    });
                } else {
                    *slot.distance_m = s.signed_distance_m.max(radius);
                }
            }
        }
    }

    /// Adds the [`Self::opposing_contact`] of the last contact in `out`, if any, and makes both
    /// share the gap between the two surfaces.
    #[allow(clippy::too_many_arguments)]
    fn push_opposing(
        &self,
        particle: u32,
        p: Vec3,
        first: &SurfacePoint,
        reach: Real,
        thickness_m: Real,
        near: &Listed<'_>,
        out: &mut Vec<Contact>,
    ) {
        match self.opposing_contact(particle, p, first, reach, thickness_m, near) {
            Opposing::None => {}
            Opposing::NoRoom => {
                // Pushed out of the first surface only as far as it, not by the thickness
                // too, which would drive it deeper into the part that overlaps it.
                if let Some(last) = out.last_mut() {
                    last.pinched = true;
                    last.thickness_m = 0.0;
                }
            }
            Opposing::Contact(c) => {
                if let Some(last) = out.last_mut() {
                    last.thickness_m = c.thickness_m;
                    last.pinched = c.pinched;
                }
                out.push(c);
            }
        }
    }

    /// A second contact for a particle pinched between two parts of the body (an arm against
    /// the torso, one thigh against the other): the closest point within `reach` on a triangle
    /// that faces the other way from the particle's first contact `first`. With both contacts
    /// the particle is pushed out of both surfaces, instead of out of the nearer one and into
    /// the other.
    fn opposing_contact(
        &self,
        particle: u32,
        p: Vec3,
        first: &SurfacePoint,
        reach: Real,
        thickness_m: Real,
        near: &Listed<'_>,
    ) -> Opposing {
        let mut best: Option<(Real, u32, Vec3)> = None;
        let mut visit = |tri: u32| {
            let Some(face) = self.face_normal(tri) else {
                return;
            };
            if face.dot(first.normal) > OPPOSING_COS || self.distance_at_least(p, tri) > reach {
                return;
            }
            let d = self.distance_to(p, tri);
            if d <= reach && best.is_none_or(|b| d < b.0) {
                best = Some((d, tri, face));
            }
        };
        // Every triangle within `reach` of `p` is among the candidates when they cover that
        // ball; otherwise ask the BVH.
        if near.covers_ball(p, reach) {
            if near.faces_all_within(first.normal, OPPOSING_COS) {
                return Opposing::None;
            }
            let slack = near.slack(p);
            (near.triangles().iter().zip(near.distances()))
                .take_while(|&(_, &was)| was - slack <= reach)
                .for_each(|(&t, _)| visit(t));
        } else {
            let r = Vec3::splat(reach);
            let aabb = parry3d::bounding_volume::Aabb::new(p - r, p + r);
            self.shape.bvh().intersect_aabb(&aabb).for_each(visit);
        }
        let Some((_, tri, face)) = best else {
            return Opposing::None;
        };
        let q = self.shape.triangle(tri).project_local_point(p, false).point;
        let d = p.distance(q);
        // Outside that surface: push away from it; behind it (the particle went through):
        // push back out through its face.
        let normal = if d > 1.0e-7 && (p - q).dot(face) > 0.0 {
            (p - q) / d
        } else {
            face
        };
        // The room between the two surfaces along the first contact's normal. Where the body
        // overlaps itself there is none, and only the first contact is kept. (Skipping such
        // surfaces to look for a farther one was tried: on CesiumMan it pinched more cloth.)
        let gap = (q - first.point_m).dot(first.normal);
        if gap <= 0.0 {
            return Opposing::NoRoom;
        }
        Opposing::Contact(Contact {
            particle,
            point_m: q,
            normal,
            body_motion_m: self.surface_motion(tri, q),
            thickness_m: thickness_m.min(0.5 * gap),
            pinched: true,
        })
    }

    /// The continuous test of [`Self::contacts`]: casts the segment `from → to` against the
    /// body and returns a contact on the first face it enters, if any.
    fn sweep(
        &self,
        particle: u32,
        from: Vec3,
        to: Vec3,
        thickness_m: Real,
        near: &Listed<'_>,
    ) -> Option<Contact> {
        let d = to - from;
        let len2 = d.length_squared();
        if len2 <= thickness_m * thickness_m {
            return None;
        }
        let ray = Ray::new(from, d);
        // Every point of the segment is within the larger of its ends' distances from the
        // candidates' centre, so they hold every triangle it can hit when they cover both ends.
        let hit = if near.covers_ball(from, 0.0) && near.covers_ball(to, 0.0) {
            near.triangles()
                .iter()
                .filter_map(|&t| {
                    let toi = self.shape.triangle(t).cast_local_ray(&ray, 1.0, false)?;
                    Some((toi, t))
                })
                .min_by(|a, b| a.0.total_cmp(&b.0))
        } else {
            self.shape
                .cast_local_ray_and_get_normal(&ray, 1.0, false)
                .map(|h| (h.time_of_impact, h.subshape))
        };
        let (time_of_impact, subshape) = hit?;
        let tri = self.shape.triangle(subshape);
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
        let point = from + d * time_of_impact;
        Some(Contact {
            particle,
            point_m: point,
            normal,
            body_motion_m: self.surface_motion(subshape, point),
            thickness_m,
            pinched: false,
        })
    }
}

/// What [`BodyCollider::opposing_contact`] found on the other side of a particle.
enum Opposing {
    /// No surface facing the first contact's within reach.
    None,
    /// One, but the body overlaps itself there: no room between the two surfaces.
    NoRoom,
    /// The opposing contact.
    Contact(Contact),
}

/// [`BodyCollider::refresh_surface`] on the collider's parts: the vertices `v`, its triangles
/// `indices`, and what is derived from them (the bounding spheres, the area-weighted unit vertex
/// normals, the pseudo-normals of a closed body).
fn refresh_surface(
    v: &[Vec3],
    indices: &[[u32; 3]],
    spheres: &mut Vec<(Vec3, Real)>,
    normals: &mut Vec<Vec3>,
    mut pseudo: Option<&mut PseudoNormals>,
) {
    spheres.clear();
    normals.clear();
    normals.resize(v.len(), Vec3::ZERO);
    if let Some(pn) = pseudo.as_deref_mut() {
        pn.face.clear();
        pn.vertex.clear();
        pn.vertex.resize(v.len(), Vec3::ZERO);
    }
    for (t, idx) in indices.iter().enumerate() {
        let [a, b, c] = idx.map(|i| v[i as usize]);
        let centre = (a + b + c) / 3.0;
        let r2 = centre
            .distance_squared(a)
            .max(centre.distance_squared(b))
            .max(centre.distance_squared(c));
        spheres.push((centre, r2.sqrt()));
        let n = (b - a).cross(c - a);
        for &i in idx {
            normals[i as usize] += n;
        }
        if let Some(pn) = pseudo.as_deref_mut() {
            let unit = n.normalize_or_zero();
            pn.face.push(unit);
            for (&i, &w) in idx.iter().zip(&pn.angles[t]) {
                pn.vertex[i as usize] += unit * w;
            }
        }
    }
    for n in normals.iter_mut() {
        *n = n.normalize_or_zero();
    }
}

/// Angle-weighted pseudo-normals of a closed triangle mesh (Bærentzen & Aanæs 2005): per
/// vertex, the sum of its triangles' unit normals weighted by the corner angles; per edge, the
/// sum of its two triangles' unit normals; per face, the face normal. The sign of
/// `(p − q)·n` at the closest point `q` says whether `p` is inside.
///
/// The corner angles are those of the rest pose: skinning bends a body far more than it
/// shears its triangles, and keeping them saves three arc cosines per triangle per pose.
#[derive(Clone, Debug)]
struct PseudoNormals {
    /// Corner angles of each triangle at the rest pose (rad).
    angles: Vec<[Real; 3]>,
    /// For each triangle and edge (AB, BC, AC, parry3d's order), the triangle across it.
    across: Vec<[u32; 3]>,
    /// Unit face normals.
    face: Vec<Vec3>,
    /// Vertex pseudo-normals (not normalised: only their direction is used).
    vertex: Vec<Vec3>,
}

impl PseudoNormals {
    fn new(vertices: &[Vec3], indices: &[[u32; 3]]) -> Self {
        let mut edges: HashMap<(u32, u32), (u32, usize)> =
            HashMap::with_capacity(indices.len() * 2);
        let mut across = vec![[u32::MAX; 3]; indices.len()];
        for (t, idx) in indices.iter().enumerate() {
            for (k, (a, b)) in [(0, 1), (1, 2), (0, 2)].into_iter().enumerate() {
                let key = (idx[a].min(idx[b]), idx[a].max(idx[b]));
                if let Some((u, j)) = edges.remove(&key) {
                    across[t][k] = u;
                    across[u as usize][j] = t as u32;
                } else {
                    edges.insert(key, (t as u32, k));
                }
            }
        }
        let angle = |p: Vec3, q: Vec3, r: Vec3| {
            let a = (q - p).angle_between(r - p);
            if a.is_finite() {
                a
            } else {
                0.0
            }
        };
        let angles = (indices.iter())
            .map(|idx| {
                let [a, b, c] = idx.map(|i| vertices[i as usize]);
                [angle(a, b, c), angle(b, c, a), angle(c, a, b)]
            })
            .collect();
        // The normals themselves are filled by `BodyCollider::refresh_surface`.
        Self {
            angles,
            across,
            face: Vec::new(),
            vertex: Vec::new(),
        }
    }

    /// The pseudo-normal at a closest-point location.
    fn at(&self, tri: u32, location: TrianglePointLocation, indices: &[[u32; 3]]) -> Vec3 {
        let t = tri as usize;
        match location {
            TrianglePointLocation::OnVertex(i) => self.vertex[indices[t][i as usize] as usize],
            TrianglePointLocation::OnEdge(i, _) => {
                let other = self.across[t][i as usize];
                self.face[t] + self.face.get(other as usize).copied().unwrap_or(Vec3::ZERO)
            }
            TrianglePointLocation::OnFace(..) | TrianglePointLocation::OnSolid => self.face[t],
        }
    }
}

/// A point attached to the body surface: the closest point of a body triangle (barycentric
/// coordinates) plus an offset in a local frame there. It follows the body as it is skinned
/// (in the words, "barycentric coordinates plus a normal offset").
///
/// The frame's normal is the interpolation of the body's vertex normals, not the flat
/// triangle's: two neighbouring anchors on different triangles then turn together where
/// skinning folds the surface, instead of each following its own facet (on CesiumMan's waist,
/// flat facets moved neighbouring waistband pins 2.2 times farther apart).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SurfaceAnchor {
    /// Collider vertices of the triangle.
    pub vertices: [u32; 3],
    /// Barycentric coordinates of the closest point, in `[0, 1]`, summing to 1.
    pub barycentric: [Real; 3],
    /// Offset from the closest point (m), in the local frame: along the triangle's first edge
    /// (made tangent), along the tangent perpendicular to it, and along the interpolated
    /// normal.
    pub offset_m: [Real; 3],
}

impl SurfaceAnchor {
    /// The foot point and local frame at the collider's current pose.
    fn frame(&self, body: &BodyCollider) -> (Vec3, [Vec3; 3]) {
        let v = body.shape.vertices();
        let [a, b, c] = self.vertices.map(|i| v[i as usize]);
        let [u, w1, w2] = self.barycentric;
        let [na, nb, nc] = self.vertices.map(|i| body.normals[i as usize]);
        let face = (b - a).cross(c - a).normalize_or_zero();
        let n = (na * u + nb * w1 + nc * w2).try_normalize().unwrap_or(face);
        let tangent = |e: Vec3| (e - n * n.dot(e)).try_normalize();
        let t1 = tangent(b - a)
            .or_else(|| tangent(c - a))
            .unwrap_or_else(|| n.any_orthonormal_vector());
        (a * u + b * w1 + c * w2, [t1, n.cross(t1), n])
    }

    /// The anchored point on `body` at its current pose (m).
    pub fn evaluate(&self, body: &BodyCollider) -> Vec3 {
        let (foot, [t1, t2, n]) = self.frame(body);
        let [d1, d2, dn] = self.offset_m;
        foot + t1 * d1 + t2 * d2 + n * dn
    }
}

impl BodyCollider {
    /// Binds `point` to the body surface at the current pose: the closest triangle, the
    /// barycentric coordinates of the closest point and the offset to `point` in the local
    /// frame there. [`SurfaceAnchor::evaluate`] at this pose gives `point` back (to rounding).
    pub fn anchor(&self, point: Vec3) -> SurfaceAnchor {
        let s = self.closest(point);
        let idx = self.shape.indices()[s.triangle as usize];
        let v = self.shape.vertices();
        let [a, b, c] = idx.map(|i| v[i as usize]);
        let bary = barycentric(s.point_m, a, b, c).map(|x| x.clamp(0.0, 1.0));
        let sum: Real = bary.iter().sum();
        let bary = if sum > 0.0 {
            bary.map(|x| x / sum)
        } else {
            [1.0 / 3.0; 3]
        };
        let mut anchor = SurfaceAnchor {
            vertices: idx,
            barycentric: bary,
            offset_m: [0.0; 3],
        };
        let (foot, frame) = anchor.frame(self);
        anchor.offset_m = frame.map(|e| e.dot(point - foot));
        anchor
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

/// The distance (m) from `p` to triangle `abc`, by the Voronoi regions of Ericson's
/// *Real-Time Collision Detection* (§5.1.5): about thirty flops and no square root but the
/// last, against parry's projection, which also classifies the point's location and guards
/// degenerate shapes. The candidate loops rank triangles with it and ask parry only for the
/// winner's point and location. A degenerate triangle (zero area: the face region's
/// denominator is not positive) falls back to parry.
#[inline]
pub(crate) fn triangle_distance(p: Vec3, a: Vec3, b: Vec3, c: Vec3) -> Real {
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(ap), ac.dot(ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return ap.length();
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(bp), ac.dot(bp));
    if d3 >= 0.0 && d4 <= d3 {
        return bp.length();
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let v = d1 / (d1 - d3);
        return (ap - ab * v).length();
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    if d6 >= 0.0 && d5 <= d6 {
        return cp.length();
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let w = d2 / (d2 - d6);
        return (ap - ac * w).length();
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return (bp - (c - b) * w).length();
    }
    let denom = va + vb + vc;
    if !(denom > 0.0 && denom.is_finite()) {
        let t = parry3d::shape::Triangle::new(a, b, c);
        return p.distance(t.project_local_point(p, false).point);
    }
    let (v, w) = (vb / denom, vc / denom);
    (ap - ab * v - ac * w).length()
}

/// A triangle faces "the other way" from a contact when its normal makes more than this cosine
/// with the contact normal (−0.5: more than 120° apart).
const OPPOSING_COS: Real = -0.5;

/// How much farther than the contact reach a proximity query looks (m).
pub const PROXIMITY_LOOKAHEAD_M: Real = 0.05;

/// Per-particle lower bounds of the distance to the body, for [`BodyCollider::contacts`].
#[derive(Clone, Debug, Default)]
pub struct ProximityCache {
    queried_at: Vec<Vec3>,
    distance_m: Vec<Real>,
    /// The body's pose ([`RegionTravel::pose`]) at the particle's last query.
    pose_at: Vec<u32>,
    /// Per particle, the body triangles near where it was last gathered.
    candidates: Vec<Candidates>,
    /// Contacts found per chunk of [`CONTACT_CHUNK`] particles (scratch, reused).
    chunks: Vec<Vec<Contact>>,
    /// Search the chunks on rayon's thread pool.
    parallel: bool,
}

/// One task of the contact search: the chunk's index, its cache entries and its contact list.
type ChunkTask<'a> = (
    usize,
    (
        (
            ((&'a mut [Vec3], &'a mut [Real]), &'a mut [u32]),
            &'a mut [Candidates],
        ),
        &'a mut Vec<Contact>,
    ),
);

/// Most body triangles a particle's [`Candidates`] hold.
pub const CANDIDATES: usize = 32;

/// How much farther than the contact reach a particle's candidate triangles are gathered (m):
/// the list stays valid while the particle and the body together move less than this.
pub const CANDIDATE_LOOKAHEAD_M: Real = 0.01;

/// The body triangles near one particle: every collider triangle within `radius_m` of
/// `centre_m` at the body's pose `pose_at` (at most [`CANDIDATES`]). While the particle stays
/// near `centre_m` and the body near it moves little, its closest point, its sweep and its
/// opposing contact are found among these few triangles instead of by a BVH descent, with the
/// same result: a triangle left out was farther than `radius_m` from the centre and has moved
/// at most its region's travel since ([`Listed`]).
#[derive(Clone, Copy, Debug, Default)]
struct Candidates {
    triangles: [u32; CANDIDATES],
    /// Each triangle's distance from `centre_m` at the gather (m), ascending.
    distances_m: [Real; CANDIDATES],
    count: u8,
    centre_m: Vec3,
    /// 0 (the default): no list.
    radius_m: Real,
    pose_at: u32,
    /// The listed faces' normals at the gather: the nearest face's, and the cosine of the
    /// largest angle between it and any other's (zero axis: none).
    cone_axis: Vec3,
    cone_cos: Real,
    /// Whether a gather was tried (an empty list with `radius_m` 0 can be a new slot or a body
    /// too finely meshed for the list).
    gathered: bool,
    /// The last closest triangle found by going through the list, and by how much it won.
    winner: Option<Winner>,
    /// The closest triangle at the particle's last BVH query, if one was within its radius.
    closest: Option<u32>,
}

/// A closest triangle found by going through a particle's [`Candidates`], kept so that the
/// next substeps can check it alone while the particle and the body near it have not moved
/// enough for any other triangle to overtake it.
#[derive(Clone, Copy, Debug)]
struct Winner {
    triangle: u32,
    /// Where the particle was (m) and the body's pose.
    at_m: Vec3,
    pose_at: u32,
    /// A lower bound of every other triangle's distance from `at_m` then (m): listed or not.
    rival_m: Real,
}

/// A particle's [`Candidates`] with how far the body near them has moved since the gather.
struct Listed<'a> {
    list: &'a Candidates,
    /// How far any triangle now within the list's radius of its centre can have moved since
    /// the gather (m; [`RegionTravel::since`]).
    body_moved_m: Real,
}

impl<'a> Listed<'a> {
    fn new(list: &'a Candidates, body_moved_m: Real) -> Self {
        Self { list, body_moved_m }
    }

    fn triangles(&self) -> &[u32] {
        &self.list.triangles[..self.list.count as usize]
    }

    /// The listed triangles' distances from the centre when gathered (m), ascending.
    fn distances(&self) -> &[Real] {
        &self.list.distances_m[..self.list.count as usize]
    }

    /// The list's radius (m; 0 for none).
    fn radius_m(&self) -> Real {
        self.list.radius_m
    }

    /// How much nearer to `p` than to the centre at the gather a triangle can be now (m): the
    /// distance from the centre plus the body's travel since.
    fn slack(&self, p: Vec3) -> Real {
        self.list.centre_m.distance(p) + self.body_moved_m
    }

    /// Whether every listed face's normal `f` has `f · n > cos` for the unit vector `n`: when
    /// the body near the list has not moved since the gather (so its faces have not turned),
    /// from the cone of their normals (half-angle `θ` about the axis, `n` at `φ` from the axis:
    /// `f · n ≥ cos(θ + φ)`, both angles under 90°), with a margin for rounding.
    fn faces_all_within(&self, n: Vec3, cos: Real) -> bool {
        let (axis, cos_theta) = (self.list.cone_axis, self.list.cone_cos);
        let cos_phi = axis.dot(n);
        if self.body_moved_m != 0.0 || axis == Vec3::ZERO || cos_theta <= 0.0 || cos_phi <= 0.0 {
            return false;
        }
        let sin = |c: Real| (1.0 - c * c).max(0.0).sqrt();
        cos_theta * cos_phi - sin(cos_theta) * sin(cos_phi) > cos + 1.0e-3
    }

    /// Whether every triangle within `r` of `p` is listed.
    fn covers_ball(&self, p: Vec3, r: Real) -> bool {
        self.list.radius_m > 0.0 && self.slack(p) + r < self.list.radius_m
    }

    /// Whether a particle at `p` that its list did not serve may gather a new one: always,
    /// unless the last gather found the body too finely meshed there and neither the
    /// particle nor the body has moved by the lookahead since.
    fn may_gather(&self, p: Vec3) -> bool {
        self.list.radius_m > 0.0 || !self.list.gathered || self.slack(p) > CANDIDATE_LOOKAHEAD_M
    }
}

/// Particles per task of the contact search.
const CONTACT_CHUNK: usize = 512;

/// One particle's entry in a [`ProximityCache`].
struct CacheSlot<'a> {
    queried_at: &'a mut Vec3,
    distance_m: &'a mut Real,
    pose_at: &'a mut u32,
    candidates: &'a mut Candidates,
}

impl ProximityCache {
    /// An empty cache; `parallel` searches chunks of particles on rayon's thread pool (the
    /// contacts come out in the same order either way).
    pub fn new(parallel: bool) -> Self {
        Self {
            parallel,
            ..Self::default()
        }
    }

    fn resize(&mut self, n: usize) {
        if self.queried_at.len() != n {
            // Unknown: a bound of 0 forces a query.
            self.queried_at = vec![Vec3::ZERO; n];
            self.distance_m = vec![0.0; n];
            self.pose_at = vec![0; n];
            self.candidates = vec![Candidates::default(); n];
        }
    }
}

/// How far [`BodyCollider::room_at`]'s ray starts off the surface (m).
const ROOM_RAY_OFFSET_M: Real = 1.0e-5;

/// Penetration and pinch counts over a set of points (DESIGN §3 `body_penetrations`, and
/// `pinched_vertices`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Penetrations {
    /// Points strictly inside the body where it leaves room (not pinched).
    pub count: usize,
    /// Deepest of those penetrations (m).
    pub max_depth_m: Real,
    /// Points pinched between two parts of the body: inside it, or within `pinch_gap_m` of
    /// it, where the body leaves less than `pinch_gap_m` of room ([`BodyCollider::room_at`]).
    pub pinched: usize,
}

/// Counts the points strictly inside the closed body (the pseudo-normal test at the closest
/// point found by parry3d) and the points pinched between two parts of it: a point inside the
/// body, or outside within `pinch_gap_m` (m; the bake passes twice the collision thickness)
/// of it, whose closest surface point has less than `pinch_gap_m` of room
/// ([`BodyCollider::room_at`]) is pinched, and is not counted as a penetration. Where the body
/// leaves room, a point inside it is a penetration. An open body has no inside: nothing
/// penetrates it, and only points outside it within `pinch_gap_m` can be pinched.
pub fn measure_penetrations(
    body: &BodyCollider,
    points: &[Vec3],
    pinch_gap_m: Real,
) -> Penetrations {
    points.iter().fold(Penetrations::default(), |acc, &p| {
        let s = body.closest(p);
        let inside = body.closed && s.signed_distance_m < 0.0;
        let near = inside || s.signed_distance_m <= pinch_gap_m;
        if near && pinch_gap_m > 0.0 && body.room_at(&s, pinch_gap_m).is_some() {
            Penetrations {
                pinched: acc.pinched + 1,
                ..acc
            }
        } else if inside {
            Penetrations {
                count: acc.count + 1,
                max_depth_m: acc.max_depth_m.max(-s.signed_distance_m),
                ..acc
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
        crate::mesh::shapes::cuboid("cube", Vec3::splat(-0.5), Vec3::splat(0.5))
    }

    /// The candidate loops' own point–triangle distance is parry's: points scattered round
    /// triangles of every shape (thin slivers, right angles, near-collinear and exactly
    /// degenerate ones, where it falls back to parry), so that every Voronoi region (three
    /// vertices, three edges, the face, both sides) is hit many times.
    #[test]
    fn own_triangle_distance_is_parrys() {
        let mut seed = 0x2545_f491_u32;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed as Real / u32::MAX as Real * 2.0 - 1.0
        };
        let mut shapes: Vec<[Vec3; 3]> = vec![
            [Vec3::ZERO, Vec3::X, Vec3::Y],
            [
                Vec3::ZERO,
                Vec3::new(1.0, 0.001, 0.0),
                Vec3::new(2.0, 0.0, 0.0),
            ],
            [Vec3::ZERO, Vec3::X, Vec3::new(0.5, 0.0, 0.0)],
            [Vec3::ONE, Vec3::ONE, Vec3::ONE],
            [
                Vec3::ZERO,
                Vec3::new(0.01, 1.0, 0.0),
                Vec3::new(-0.01, 1.0, 0.0),
            ],
        ];
        for _ in 0..200 {
            shapes.push([(); 3].map(|_| Vec3::new(next(), next(), next())));
        }
        let mut regions = [0usize; 7];
        for [a, b, c] in shapes {
            let t = parry3d::shape::Triangle::new(a, b, c);
            for _ in 0..200 {
                let p = Vec3::new(next(), next(), next()) * 2.0;
                let (proj, location) = t.project_local_point_and_get_location(p, false);
                let want = p.distance(proj.point);
                let got = triangle_distance(p, a, b, c);
                let scale = 1.0 + p.abs().max_element() + a.abs().max_element();
                assert!(
                    (got - want).abs() <= 2.0e-5 * scale,
                    "{p} to {a} {b} {c}: {got} against parry's {want}"
                );
                regions[match location {
                    TrianglePointLocation::OnVertex(i) => i as usize,
                    TrianglePointLocation::OnEdge(i, _) => 3 + i as usize,
                    _ => 6,
                }] += 1;
            }
        }
        assert!(regions.iter().all(|&n| n > 100), "regions hit: {regions:?}");
    }

    /// The candidate triangles kept per particle give the contacts the BVH gives: particles
    /// wandering near a sphere and a cube (a closed body; pole vertices where many triangles
    /// meet, flat faces, edges and corners), the body moving a little every step. Run once with
    /// a cache kept across the steps (lists served from the candidates) and once with a fresh
    /// cache every step (every query by the BVH): the same particles in contact, the same
    /// points and normals up to rounding (two triangles sharing the closest edge may both
    /// report it), with the lists' last winners kept across many steps.
    #[test]
    fn candidate_lists_find_the_contacts_the_bvh_finds() {
        // A still sphere with a small one closing in on it from +x: its triangles overtake
        // the big sphere's as the nearest for the particles there, while the lists near the
        // still part are charged only their regions' travel (none).
        let mut pair = crate::mesh::shapes::uv_sphere(0.3, 32, 16);
        let small = crate::mesh::shapes::uv_sphere(0.06, 16, 8);
        let split = pair.positions.len();
        pair.indices
            .extend(small.indices.iter().map(|t| t.map(|i| i + split as u32)));
        (pair.positions).extend(small.positions.iter().map(|p| *p + Vec3::X * 0.42));
        pair.normals = None;
        pair.uvs = None;
        for (name, body) in [
            ("sphere", crate::mesh::shapes::uv_sphere(0.3, 32, 16)),
            ("cube", cube()),
            ("pair", pair),
        ] {
            let mut kept = BodyCollider::new(&body).unwrap();
            let mut fresh = BodyCollider::new(&body).unwrap();
            let n = 400;
            let mut x: Vec<Vec3> = (0..n)
                .map(|i| {
                    // Points spread over directions, 0–20 mm outside and inside the surface.
                    let t = i as Real * 2.399_963;
                    let y = 1.0 - 2.0 * (i as Real + 0.5) / n as Real;
                    let r = (1.0 - y * y).sqrt();
                    let dir = Vec3::new(r * t.cos(), y, r * t.sin());
                    let surface = if name != "cube" {
                        0.3
                    } else {
                        0.5 / dir.abs().max_element()
                    };
                    dir * (surface + 0.02 * ((i % 7) as Real / 3.0 - 1.0))
                })
                .collect();
            let w = vec![1.0; n];
            let mut cache = ProximityCache::new(false);
            let (mut served, mut contacts) = (0, 0);
            let mut reused = 0;
            for step in 0..40 {
                // The body moves for 20 steps, then stands (where the lists' last winners
                // serve most).
                let offset = Vec3::new(0.0004 * step.min(20) as Real, 0.0, 0.0);
                let pose: Vec<Vec3> = (body.positions.iter().enumerate())
                    .map(|(i, p)| match (name, i >= split) {
                        ("pair", false) => *p,
                        ("pair", true) => *p - Vec3::X * (0.001 * step as Real),
                        _ => *p + offset,
                    })
                    .collect();
                kept.set_pose(&pose).unwrap();
                fresh.set_pose(&pose).unwrap();
                let prev = x.clone();
                for (i, p) in x.iter_mut().enumerate() {
                    let a = (i as Real * 0.7 + step as Real * 0.3).sin();
                    *p += Vec3::new(a, -a * 0.5, 0.3) * 0.0007;
                }
                let (mut a, mut b) = (Vec::new(), Vec::new());
                kept.contacts(&prev, &x, &w, 0.005, 0.005, &[], &mut cache, &mut a);
                let mut cold = ProximityCache::new(false);
                fresh.contacts(&prev, &x, &w, 0.005, 0.005, &[], &mut cold, &mut b);
                let ids = |c: &[Contact]| c.iter().map(|k| k.particle).collect::<Vec<_>>();
                assert_eq!(ids(&a), ids(&b), "{name}, step {step}");
                for (k, l) in a.iter().zip(&b) {
                    // The lists rank triangles with `triangle_distance`, the BVH with parry's
                    // projection: where two triangles are as near as rounding can tell, each
                    // may pick the other (seen: points 1.4 and 4.6 µm apart, 7 and 3 mm from
                    // the particle). Both are then equally near, and the normals, which point
                    // from the points to the particle, differ by about the points' distance
                    // over the particle's.
                    let p = x[k.particle as usize];
                    let (dk, dl) = (p.distance(k.point_m), p.distance(l.point_m));
                    let apart = k.point_m.distance(l.point_m);
                    assert!(
                        apart < 1e-5 && (dk - dl).abs() < 1e-6,
                        "{name} {step}: {k:?} {l:?} at {dk} and {dl}"
                    );
                    assert!(
                        k.normal.distance(l.normal) < 1e-4 + 2.0 * apart / dk.max(1e-3),
                        "{name} {step}: {k:?} {l:?}"
                    );
                    assert!(k.body_motion_m.distance(l.body_motion_m) < 1e-6);
                    assert_relative_eq!(k.thickness_m, l.thickness_m, epsilon = 1e-7);
                }
                contacts += a.len();
                served += cache.candidates.iter().filter(|c| c.radius_m > 0.0).count();
                // A winner found where the particle was in an earlier step, kept.
                reused += (cache.candidates.iter().zip(&x))
                    .filter(|(c, p)| c.winner.is_some_and(|w| w.at_m != **p))
                    .count();
            }
            assert!(reused > 1000, "{name}: winners kept {reused}");
            assert!(contacts > 1000, "{name}: {contacts} contacts");
            assert!(served > 1000, "{name}: lists in use {served}");
        }
    }

    /// Rebuilding leaves the collider exactly as refitting does: inside test, surface motion
    /// and anchors all follow the new pose.
    #[test]
    fn rebuild_and_refit_agree() {
        let m = cube();
        let moved: Vec<Vec3> = m.positions.iter().map(|p| *p + Vec3::X * 0.1).collect();
        let (mut refit, mut rebuilt) = (
            BodyCollider::new(&m).unwrap(),
            BodyCollider::new(&m).unwrap(),
        );
        let anchor = refit.anchor(Vec3::new(0.0, 0.51, 0.0));
        refit.set_pose(&moved).unwrap();
        rebuilt.rebuild_at_pose(&moved).unwrap();
        let p = Vec3::new(0.55, 0.2, 0.0);
        let (a, b) = (refit.closest(p), rebuilt.closest(p));
        assert_relative_eq!(a.signed_distance_m, -0.05, epsilon = 1e-6);
        assert_relative_eq!(b.signed_distance_m, a.signed_distance_m, epsilon = 1e-6);
        let q = Vec3::new(0.6, 0.5, 0.0);
        assert_relative_eq!(rebuilt.surface_motion(b.triangle, q).x, 0.1, epsilon = 1e-6);
        let (ea, eb) = (anchor.evaluate(&refit), anchor.evaluate(&rebuilt));
        assert!(ea.distance(eb) < 1e-6 && ea.distance(Vec3::new(0.1, 0.51, 0.0)) < 1e-6);
        assert_eq!(refit.travel.total_m(), rebuilt.travel.total_m());
    }

    /// The parallel pose update (the refit on one thread, the travel and the surface on
    /// another) leaves the collider exactly as the serial one does.
    #[test]
    fn parallel_and_serial_pose_updates_agree_bit_for_bit() {
        let m = crate::mesh::shapes::uv_sphere(0.3, 24, 12);
        let (mut serial, mut parallel) = (
            BodyCollider::new(&m).unwrap(),
            BodyCollider::new(&m).unwrap(),
        );
        parallel.set_parallel(true);
        type Bits = Vec<[u32; 3]>;
        let bits = |v: &[Vec3]| v.iter().map(|p| p.to_array().map(f32::to_bits)).collect();
        let state = |b: &BodyCollider| -> (Bits, Bits, Bits, f64) {
            (
                bits(b.vertices()),
                bits(b.vertex_normals()),
                bits(
                    &b.spheres
                        .iter()
                        .map(|s| s.0 + Vec3::splat(s.1))
                        .collect::<Vec<_>>(),
                ),
                b.travel.total_m(),
            )
        };
        for k in 1..=3 {
            // A wobble that moves every vertex differently.
            let posed: Vec<Vec3> = (m.positions.iter())
                .map(|p| *p * (1.0 + 0.05 * k as Real * p.y) + Vec3::X * 0.02 * k as Real)
                .collect();
            serial.set_pose(&posed).unwrap();
            parallel.set_pose(&posed).unwrap();
            assert_eq!(state(&serial), state(&parallel), "pose {k}");
            let p = Vec3::new(0.1, 0.45, 0.05);
            assert_eq!(serial.closest(p), parallel.closest(p));
        }
        assert!(serial.travel.total_m() > 0.05);
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
        let pen = measure_penetrations(&c, &[Vec3::ZERO, Vec3::X, Vec3::new(0.0, 0.0, 0.3)], 0.0);
        assert_eq!(pen.count, 2);
        assert_relative_eq!(pen.max_depth_m, 0.5, epsilon = 1e-6);
    }

    /// Two unit cubes side by side along x, `gap` apart (m), as one closed body.
    fn two_cubes(gap: Real) -> Mesh {
        let a =
            crate::mesh::shapes::cuboid("a", Vec3::new(-1.0, 0.0, 0.0), Vec3::new(0.0, 1.0, 1.0));
        let b = crate::mesh::shapes::cuboid(
            "b",
            Vec3::new(gap, 0.0, 0.0),
            Vec3::new(gap + 1.0, 1.0, 1.0),
        );
        let mut m = a;
        m.append(&b);
        m
    }

    /// The pinch test: between two surfaces closer than the pinch gap a point is pinched,
    /// inside or outside, and is not a penetration; with room it is a penetration; where the
    /// two parts overlap there is no room at all.
    #[test]
    fn points_between_close_surfaces_are_pinched_not_penetrating() {
        let gap_m = 0.01;
        let mid = Vec3::new(0.003, 0.5, 0.5);
        let inside_a = Vec3::new(-0.002, 0.5, 0.5);
        // 6 mm between the cubes: less than the 10 mm pinch gap.
        let tight = BodyCollider::new(&two_cubes(0.006)).unwrap();
        assert!(tight.is_closed());
        let s = tight.closest(mid);
        let room = tight.room_at(&s, 1.0).unwrap();
        assert_relative_eq!(room, 0.006, epsilon = 1e-5);
        let pen = measure_penetrations(&tight, &[mid, inside_a], gap_m);
        assert_eq!((pen.count, pen.pinched), (0, 2), "{pen:?}");
        // Without the pinch test the point inside is a penetration.
        assert_eq!(measure_penetrations(&tight, &[mid, inside_a], 0.0).count, 1);
        // 3 cm apart: room, so the point inside is a penetration and the one between is free.
        let wide = BodyCollider::new(&two_cubes(0.03)).unwrap();
        let pen = measure_penetrations(&wide, &[mid, inside_a], gap_m);
        assert_eq!((pen.count, pen.pinched), (1, 0), "{pen:?}");
        assert_relative_eq!(pen.max_depth_m, 0.002, epsilon = 1e-6);
        // The cubes overlap by 1 cm: a point in both has no room anywhere.
        let sunk = BodyCollider::new(&two_cubes(-0.01)).unwrap();
        let both = Vec3::new(-0.004, 0.5, 0.5);
        let s = sunk.closest(both);
        assert_eq!(sunk.room_at(&s, gap_m), Some(0.0));
        let pen = measure_penetrations(&sunk, &[both], gap_m);
        assert_eq!((pen.count, pen.pinched), (0, 1), "{pen:?}");
        // Far from both, nothing.
        let pen = measure_penetrations(&tight, &[Vec3::new(0.003, 2.0, 0.5)], gap_m);
        assert_eq!(pen, Penetrations::default());
    }

    /// Issue 35: a closed body with a region excluded is capped where the region was cut
    /// away, so the rest stays closed: a point just under the cut is inside, close to the cap,
    /// and the cap follows the rim when the body moves.
    #[test]
    fn excluded_regions_leave_capped_holes() {
        let m = cube();
        let top = |t: [u32; 3]| t.iter().all(|&v| m.positions[v as usize].y > 0.49);
        let c = BodyCollider::excluding(&m, top).unwrap();
        assert!(c.is_closed());
        assert_eq!(c.capped_holes(), 1);
        assert_eq!(c.vertices().len(), 9);
        assert!(crate::mesh::Topology::new(&Mesh {
            positions: c.vertices().to_vec(),
            indices: c.shape.indices().to_vec(),
            ..Mesh::default()
        })
        .is_closed());
        let under = Vec3::new(0.1, 0.45, -0.1);
        let s = c.closest(under);
        assert!(s.signed_distance_m < 0.0, "{s:?}");
        assert_relative_eq!(s.signed_distance_m, -0.05, epsilon = 1e-5);
        assert_relative_eq!(s.normal, Vec3::Y, epsilon = 1e-5);
        assert_eq!(measure_penetrations(&c, &[under], 0.0).count, 1);
        // Moved up by 1 m, the cap moves with the rim.
        let mut c = c;
        let lifted: Vec<Vec3> = m.positions.iter().map(|&p| p + Vec3::Y).collect();
        c.set_pose(&lifted).unwrap();
        assert_relative_eq!(c.vertices()[8], Vec3::new(0.0, 1.5, 0.0), epsilon = 1e-6);
        let s = c.closest(under + Vec3::Y);
        assert_relative_eq!(s.signed_distance_m, -0.05, epsilon = 1e-5);
        // An open body gets no caps; nor does a body with nothing excluded.
        assert_eq!(BodyCollider::new(&m).unwrap().capped_holes(), 0);
        let mut open = m.clone();
        open.indices.retain(|&t| !top(t));
        let c = BodyCollider::excluding(&open, |t| {
            t.iter().all(|&v| open.positions[v as usize].y < -0.49)
        })
        .unwrap();
        assert!(!c.is_closed());
        assert_eq!(c.capped_holes(), 0);
        // Posing a collider without caps leaves its vertices as they were.
        let mut c = c;
        c.set_pose(&lifted).unwrap();
        assert_eq!(c.vertices().len(), 8);
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
        let pen = measure_penetrations(&c, &[Vec3::ZERO, Vec3::new(0.0, 0.4, 0.0)], 0.0);
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
            &[],
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
            &[],
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
            &[],
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
            &[],
            &mut cache,
            &mut out,
        );
        let ids: Vec<u32> = out.iter().map(|k| k.particle).collect();
        assert_eq!(ids, vec![0, 1, 2]);
    }

    #[test]
    fn each_particle_reaches_as_far_as_its_own_motion() {
        // Two particles 15 mm above the cube's top face, beyond the 10 mm reach; the first may
        // move 10 mm in the substep, so its reach is 20 mm and it gets a contact.
        let c = BodyCollider::new(&cube()).unwrap();
        let x = [Vec3::new(0.0, 0.515, 0.0), Vec3::new(0.2, 0.515, 0.0)];
        let mut out = Vec::new();
        let mut cache = ProximityCache::default();
        c.contacts(
            &x,
            &x,
            &[1.0; 2],
            0.01,
            0.0,
            &[0.01, 0.0],
            &mut cache,
            &mut out,
        );
        let ids: Vec<u32> = out.iter().map(|k| k.particle).collect();
        assert_eq!(ids, vec![0]);
        assert!((out[0].point_m.y - 0.5).abs() < 1.0e-6);
    }

    #[test]
    fn a_particle_between_facing_surfaces_gets_both_contacts_every_substep() {
        // Two static boxes with a 20 mm gap between the lower one's top (y = 0.5) and the
        // upper one's bottom (y = 0.52). A particle in the middle of the gap is within the
        // 12 mm reach of both: it gets the nearer surface's contact and the opposing one, also
        // once its candidate list serves it (the static body's shortcut for lists whose faces
        // all face one way must not apply here). A particle above the upper box's top has one.
        let lower = cube();
        let upper = crate::mesh::shapes::cuboid(
            "upper",
            Vec3::new(-0.5, 0.52, -0.5),
            Vec3::new(0.5, 1.52, 0.5),
        );
        let mut both = lower.clone();
        let n = both.positions.len() as u32;
        both.positions.extend_from_slice(&upper.positions);
        both.indices
            .extend(upper.indices.iter().map(|t| t.map(|i| i + n)));
        let c = BodyCollider::new(&both).unwrap();
        let x = [Vec3::new(0.1, 0.509, 0.1), Vec3::new(0.1, 1.525, 0.1)];
        let mut cache = ProximityCache::default();
        for substep in 0..3 {
            let mut out = Vec::new();
            c.contacts(&x, &x, &[1.0; 2], 0.01, 0.002, &[], &mut cache, &mut out);
            let normals: Vec<(u32, i32)> = (out.iter())
                .map(|k| (k.particle, k.normal.y.round() as i32))
                .collect();
            assert_eq!(normals, vec![(0, 1), (0, -1), (1, 1)], "substep {substep}");
        }
    }
}
