//! Self-collision and garment-to-garment collision: cloth triangles against cloth vertices and
//! cloth edges against cloth edges, as XPBD inequality constraints.
//!
//! Every garment of a scene is one range of particles in the solver, and all their triangles
//! go into one collision set, so a garment folding onto itself and two garments pressing on each
//! other are the same problem. Each substep, after the prediction (stage 3 of [`crate::sim`]):
//!
//! 1. **Broad phase.** Each triangle's (and each edge's) bounding box over the substep's motion
//!    (`x_prev` and the predicted `x`), grown by the reach `r = thickness + margin`, goes into a
//!    [`SpatialHash`]. Each vertex's swept box (`x_prev` to `x`) is looked up among the
//!    triangles, each edge's among the edges.
//! 2. **Narrow phase**, on the previous, valid state `x_prev`: for a vertex `p` and a triangle
//!    `(a, b, c)` the closest point `q = β_a·a + β_b·b + β_c·c`; for two edges `(a, b)` and
//!    `(c, d)` the closest points `(1−s)·a + s·b` and `(1−t)·c + t·d`, kept only when both are
//!    inside their edges (`0 < s, t < 1`: an endpoint is a vertex, which the vertex–triangle
//!    test covers). A pair becomes a contact when its distance at `x_prev` is within the reach
//!    plus how far its particles move in the substep, so a fast fold that would pass through
//!    within one substep is caught (a swept, conservative test; see "Continuous motion").
//! 3. **Projection**, in every Gauss–Seidel sweep after the body contacts, of
//!
//! ```text
//! C = n · (Σ_k c_k · x_k) − d  ≥ 0
//! ∇_k C = c_k · n
//! Δλ = −C / Σ_k w̃_k · c_k²,   λ ← max(0, λ + Δλ),   x_k += w̃_k · c_k · n · Δλ
//! ```
//!
//! - `x_k` are the four particles: the vertex and the triangle's three, with `c = (1, −β_a,
//!   −β_b, −β_c)`, or the four ends of two edges, with `c = (1−s, s, −(1−t), −t)`; `Σ c_k = 0`,
//!   so `Σ c_k x_k` is the vector between the two closest points;
//! - `n` is the unit vector between the closest points at `x_prev`, from the triangle (second
//!   edge) to the vertex (first edge): **the side the contact pushes toward is the side the
//!   vertex came from**, decided on the last valid state, never from the triangle's normal,
//!   which flips freely on two-sided cloth. `n`, `c_k` are fixed for the substep, so `C` is
//!   linear in the positions and the projection is exact;
//! - `d` is the collision thickness (m), reduced to half the pair's distance in the rest shape
//!   when that is smaller (see "Neighbours");
//! - `w̃_k = w_k · y_k` is the inverse mass (1/kg) times the yield factor of the particle's
//!   garment (see "Layers"); the contact is rigid (compliance 0) and `λ` (kg·m) is accumulated
//!   over the substep's sweeps and clamped at 0, so a contact only pushes, never pulls.
//!
//! # Neighbours
//!
//! A triangle is never tested against its own vertices, nor an edge against an edge sharing a
//! vertex. That alone is not enough on a fine mesh: a vertex of a flat cloth is `L/√2` from the
//! diagonal of a triangle one ring away (`L` the edge length), inside a thickness comparable to
//! `L`, and a contact there would push the cloth along itself. So the thickness of each pair is
//! at most half the distance the pair has in the rest shape: pairs that are near in the rest
//! shape are only kept from collapsing, and a flat cloth at rest has no active contact at all.
//! Pairs far apart in the rest shape (the two sides of a fold, however tight) keep the full
//! thickness, so the exclusion does not hide real contacts.
//!
//! # Layers
//!
//! Each particle carries its garment's layer (0 when the scene gives none). In a contact
//! between two garments of different layers the inner one (lower layer) does not yield: its
//! particles' yield factor is 0, and the outer garment takes the whole correction, as a jacket
//! drapes over a shirt. Within a layer both sides yield by their inverse masses.
//!
//! # Continuous motion
//!
//! The contacts are found on the swept boxes of the substep's motion and linearised at `x_prev`,
//! where the pair is known to be apart: a vertex that crosses a triangle within one substep
//! gets `C < 0` at its predicted position and is pushed back to the side it came from. This is
//! exact for translations within the substep; it is not an exact time-of-impact test (the
//! cubic of a rotating triangle), which the stats' independent intersection count would reveal.
//!
//! # Broad phase: hash grid or BVH
//!
//! A spatial hash with cells of the mean rest edge length (at least twice the reach) was
//! measured against parry3d's BVH ([`parry3d::partitioning::Bvh`], binned build) over the same
//! boxes, in `benches/self_collision.rs`: on the standard scene (64 × 64 cloth on a sphere,
//! 7,938 triangles, 4,096 vertex queries) the hash grid takes 2.97 ms per substep and the BVH
//! (build + queries) 4.11 ms (`docs/benchmarks.md`). The hash grid is faster, has no tree to
//! rebuild or refit when a cloth folds over, and reuses its buffers, so it is the one used.

use crate::constraints::Outcome;
use crate::math::{Real, Vec3};

/// Each pair's thickness is at most this fraction of the pair's distance in the rest shape.
pub const REST_DISTANCE_FRACTION: Real = 0.5;

/// Edge parameters closer than this to an endpoint leave the edge–edge pair to the
/// vertex–triangle tests.
const EDGE_END_EPS: Real = 1.0e-3;

/// Distance at `x_prev` below which a pair's direction is undefined and the pair is skipped
/// (m): the two were already touching, there is no valid side to restore.
const MIN_SEPARATION_M: Real = 1.0e-7;

/// Yield factor of the inner garment in a contact between two layers.
pub const INNER_LAYER_YIELD: Real = 0.0;

/// One self-contact: `C = n · Σ_k coeffs[k]·x[particles[k]] − thickness_m ≥ 0`. 60 bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SelfContact {
    /// The four particles: a vertex and a triangle's three, or two edges' ends.
    pub particles: [u32; 4],
    /// Barycentric coefficients `c_k` (dimensionless, summing to 0).
    pub coeffs: [Real; 4],
    /// Yield factor of each particle (multiplies its inverse mass; 0 = does not yield).
    pub yield_factor: [Real; 4],
    /// Unit direction the contact pushes the first side toward, from the last valid state.
    pub normal: Vec3,
    /// Distance kept between the two sides (m).
    pub thickness_m: Real,
}

/// Projects one self-contact (see the module docs); `w` are the particles' inverse masses
/// (1/kg) and `lambda` the accumulated multiplier (kg·m), kept ≥ 0.
#[inline]
pub fn solve_self_contact(
    x: [Vec3; 4],
    w: [Real; 4],
    contact: &SelfContact,
    lambda: &mut Real,
) -> Outcome<4> {
    let mut gap = Vec3::ZERO;
    let mut denom = 0.0;
    let mut wy = [0.0; 4];
    for k in 0..4 {
        gap += x[k] * contact.coeffs[k];
        wy[k] = w[k] * contact.yield_factor[k];
        denom += wy[k] * contact.coeffs[k] * contact.coeffs[k];
    }
    if denom <= 0.0 || !denom.is_finite() {
        return Outcome::Rigid;
    }
    let c = contact.normal.dot(gap) - contact.thickness_m;
    let new_lambda = (*lambda - c / denom).max(0.0);
    let dl = new_lambda - *lambda;
    *lambda = new_lambda;
    Outcome::Move(std::array::from_fn(|k| {
        contact.normal * (wy[k] * contact.coeffs[k] * dl)
    }))
}

/// Barycentric coordinates of the point of triangle `a b c` closest to `p` (Ericson,
/// *Real-Time Collision Detection*, 2005, §5.1.5). A degenerate triangle gives its closest
/// vertex or edge point.
pub fn closest_on_triangle(p: Vec3, a: Vec3, b: Vec3, c: Vec3) -> [Real; 3] {
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(ap), ac.dot(ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return [1.0, 0.0, 0.0];
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(bp), ac.dot(bp));
    if d3 >= 0.0 && d4 <= d3 {
        return [0.0, 1.0, 0.0];
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let v = d1 / (d1 - d3);
        return [1.0 - v, v, 0.0];
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    if d6 >= 0.0 && d5 <= d6 {
        return [0.0, 0.0, 1.0];
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let w = d2 / (d2 - d6);
        return [1.0 - w, 0.0, w];
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return [0.0, 1.0 - w, w];
    }
    let sum = va + vb + vc;
    if sum.is_nan() || sum <= 0.0 {
        return [1.0, 0.0, 0.0];
    }
    let (v, w) = (vb / sum, vc / sum);
    [1.0 - v - w, v, w]
}

/// Parameters `(s, t)` of the closest points `p1 + s·(q1 − p1)` and `p2 + t·(q2 − p2)` of two
/// segments (Ericson, §5.1.9); parallel segments give `s = 0`.
pub fn closest_on_segments(p1: Vec3, q1: Vec3, p2: Vec3, q2: Vec3) -> (Real, Real) {
    const EPS: Real = 1.0e-12;
    let (d1, d2, r) = (q1 - p1, q2 - p2, p1 - p2);
    let (a, e, f) = (d1.dot(d1), d2.dot(d2), d2.dot(r));
    if a <= EPS && e <= EPS {
        return (0.0, 0.0);
    }
    if a <= EPS {
        return (0.0, (f / e).clamp(0.0, 1.0));
    }
    let c = d1.dot(r);
    if e <= EPS {
        return ((-c / a).clamp(0.0, 1.0), 0.0);
    }
    let b = d1.dot(d2);
    let denom = a * e - b * b;
    let mut s = if denom > EPS * a * e {
        ((b * f - c * e) / denom).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let mut t = (b * s + f) / e;
    if t < 0.0 {
        t = 0.0;
        s = (-c / a).clamp(0.0, 1.0);
    } else if t > 1.0 {
        t = 1.0;
        s = ((b - c) / a).clamp(0.0, 1.0);
    }
    (s, t)
}

/// An axis-aligned box `(min, max)` (m).
pub type Aabb = (Vec3, Vec3);

/// Items spanning more cells than this are kept in a list tested against every query.
const MAX_CELLS_PER_ITEM: i64 = 64;
/// Queries spanning more cells than this test every item's box instead.
const MAX_CELLS_PER_QUERY: i64 = 512;

/// A uniform spatial hash over boxes, rebuilt in place (no allocation once its buffers have
/// grown to the scene's size).
///
/// Each box is entered in every cell it overlaps; the cells are hashed into a table twice the
/// number of entries, sorted by a counting sort. A query visits the cells its own box overlaps
/// and reports each item whose box overlaps it exactly once (the pair is reported in the first
/// cell the two share).
#[derive(Clone, Debug, Default)]
pub struct SpatialHash {
    inv_cell: Real,
    mask: usize,
    starts: Vec<u32>,
    cursor: Vec<u32>,
    entries: Vec<u32>,
    ranges: Vec<([i32; 3], [i32; 3])>,
    oversized: Vec<u32>,
    boxes: Vec<Aabb>,
}

#[inline]
fn cell_count(lo: [i32; 3], hi: [i32; 3]) -> i64 {
    (0..3).map(|a| hi[a] as i64 - lo[a] as i64 + 1).product()
}

#[inline]
fn hash_cell(c: [i32; 3]) -> usize {
    (c[0].wrapping_mul(73_856_093) ^ c[1].wrapping_mul(19_349_663) ^ c[2].wrapping_mul(83_492_791))
        as u32 as usize
}

#[inline]
fn overlaps(a: &Aabb, b: &Aabb) -> bool {
    a.0.cmple(b.1).all() && b.0.cmple(a.1).all()
}

impl SpatialHash {
    /// Rebuilds the hash over `boxes` with cubic cells of side `cell_m` (m, > 0).
    pub fn build(&mut self, boxes: &[Aabb], cell_m: Real) {
        self.boxes.clear();
        self.boxes.extend_from_slice(boxes);
        self.inv_cell = 1.0 / cell_m.max(1.0e-6);
        self.ranges.clear();
        self.oversized.clear();
        let mut total = 0usize;
        for (k, b) in boxes.iter().enumerate() {
            let range = (self.cell_of(b.0), self.cell_of(b.1));
            let n = cell_count(range.0, range.1);
            if n > MAX_CELLS_PER_ITEM {
                self.oversized.push(k as u32);
            } else {
                total += n as usize;
            }
            self.ranges.push(range);
        }
        let size = (2 * total).next_power_of_two().max(16);
        self.mask = size - 1;
        self.starts.clear();
        self.starts.resize(size + 1, 0);
        for &(lo, hi) in &self.ranges {
            if cell_count(lo, hi) > MAX_CELLS_PER_ITEM {
                continue;
            }
            for_cells(lo, hi, |c| self.starts[(hash_cell(c) & self.mask) + 1] += 1);
        }
        for i in 0..size {
            self.starts[i + 1] += self.starts[i];
        }
        self.cursor.clear();
        self.cursor.extend_from_slice(&self.starts[..size]);
        self.entries.clear();
        self.entries.resize(total, 0);
        for (k, &(lo, hi)) in self.ranges.iter().enumerate() {
            if cell_count(lo, hi) > MAX_CELLS_PER_ITEM {
                continue;
            }
            for_cells(lo, hi, |c| {
                let slot = &mut self.cursor[hash_cell(c) & self.mask];
                self.entries[*slot as usize] = k as u32;
                *slot += 1;
            });
        }
    }

    #[inline]
    fn cell_of(&self, p: Vec3) -> [i32; 3] {
        // `as` saturates (and maps NaN to 0), so a wild position cannot overflow.
        [
            (p.x * self.inv_cell).floor() as i32,
            (p.y * self.inv_cell).floor() as i32,
            (p.z * self.inv_cell).floor() as i32,
        ]
    }

    /// Calls `f` once with every item whose box overlaps `query`.
    pub fn query(&self, query: &Aabb, mut f: impl FnMut(u32)) {
        let (qlo, qhi) = (self.cell_of(query.0), self.cell_of(query.1));
        if cell_count(qlo, qhi) > MAX_CELLS_PER_QUERY {
            for (k, b) in self.boxes.iter().enumerate() {
                if overlaps(b, query) {
                    f(k as u32);
                }
            }
            return;
        }
        for_cells(qlo, qhi, |c| {
            let bucket = hash_cell(c) & self.mask;
            let (start, end) = (self.starts[bucket], self.starts[bucket + 1]);
            for &k in &self.entries[start as usize..end as usize] {
                let (lo, hi) = self.ranges[k as usize];
                // Another cell hashed here, or a pair already reported in an earlier cell.
                let first = [lo[0].max(qlo[0]), lo[1].max(qlo[1]), lo[2].max(qlo[2])];
                if first != c || (0..3).any(|a| c[a] > hi[a]) {
                    continue;
                }
                if overlaps(&self.boxes[k as usize], query) {
                    f(k);
                }
            }
        });
        for &k in &self.oversized {
            if overlaps(&self.boxes[k as usize], query) {
                f(k);
            }
        }
    }
}

#[inline]
fn for_cells(lo: [i32; 3], hi: [i32; 3], mut f: impl FnMut([i32; 3])) {
    for i in lo[0]..=hi[0] {
        for j in lo[1]..=hi[1] {
            for k in lo[2]..=hi[2] {
                f([i, j, k]);
            }
        }
    }
}

/// The self-collision stage of the solver: the collision mesh, the broad phase and this
/// substep's contacts with their multipliers. Built once per model; every buffer is reused.
#[derive(Clone, Debug, Default)]
pub struct SelfCollision {
    triangles: Vec<[u32; 3]>,
    edges: Vec<[u32; 2]>,
    /// Particles that belong to at least one triangle.
    vertices: Vec<u32>,
    /// Yield layer of each particle.
    layer: Vec<i32>,
    thickness_m: Real,
    margin_m: Real,
    cell_m: Real,
    tri_hash: SpatialHash,
    edge_hash: SpatialHash,
    boxes: Vec<Aabb>,
    /// How far each particle moves in this substep (m).
    motion_m: Vec<Real>,
    contacts: Vec<SelfContact>,
    lambdas: Vec<Real>,
}

impl SelfCollision {
    /// A self-collision stage for `triangles` (particle indices, all garments), with each
    /// particle's `layer` (empty: all 0), the rest positions `rest` (m), the thickness kept
    /// between cloth layers (m) and the extra search margin (m).
    ///
    /// The caller has checked the indices (the solver does, in [`crate::sim::Solver::new`]).
    pub fn new(
        triangles: &[[u32; 3]],
        layer: &[i32],
        rest: &[Vec3],
        thickness_m: Real,
        margin_m: Real,
    ) -> Self {
        let n = rest.len();
        let mut edges: Vec<[u32; 2]> = triangles
            .iter()
            .flat_map(|t| [[t[0], t[1]], [t[1], t[2]], [t[2], t[0]]])
            .map(|[a, b]| [a.min(b), a.max(b)])
            .filter(|[a, b]| a != b)
            .collect();
        edges.sort_unstable();
        edges.dedup();
        let mut used = vec![false; n];
        for t in triangles {
            for &i in t {
                used[i as usize] = true;
            }
        }
        let vertices = (0..n as u32).filter(|&i| used[i as usize]).collect();
        let mean_edge = if edges.is_empty() {
            0.0
        } else {
            edges
                .iter()
                .map(|&[a, b]| rest[a as usize].distance(rest[b as usize]))
                .sum::<Real>()
                / edges.len() as Real
        };
        let reach = thickness_m + margin_m;
        Self {
            triangles: triangles.to_vec(),
            edges,
            vertices,
            layer: if layer.len() == n {
                layer.to_vec()
            } else {
                vec![0; n]
            },
            thickness_m,
            margin_m,
            cell_m: mean_edge.max(2.0 * reach).max(1.0e-4),
            ..Default::default()
        }
    }

    /// The contacts found for this substep.
    pub fn contacts(&self) -> &[SelfContact] {
        &self.contacts
    }

    /// Contacts that pushed in the last projection (`λ > 0`).
    pub fn active_contacts(&self) -> usize {
        self.lambdas.iter().filter(|&&l| l > 0.0).count()
    }

    /// The edges tested edge against edge.
    pub fn edges(&self) -> &[[u32; 2]] {
        &self.edges
    }

    /// Finds this substep's contacts from the last valid positions `x_prev` and the predicted
    /// `x` (m), and resets their multipliers. `inv_mass` (1/kg) skips pairs that cannot move;
    /// `rest` (m) bounds each pair's thickness (see "Neighbours").
    pub fn find_contacts(&mut self, x_prev: &[Vec3], x: &[Vec3], inv_mass: &[Real], rest: &[Vec3]) {
        let Self {
            triangles,
            edges,
            vertices,
            layer,
            thickness_m,
            margin_m,
            cell_m,
            tri_hash,
            edge_hash,
            boxes,
            motion_m,
            contacts,
            lambdas,
        } = self;
        let (thickness, reach) = (*thickness_m, *thickness_m + *margin_m);
        contacts.clear();
        motion_m.clear();
        motion_m.extend(x_prev.iter().zip(x).map(|(a, b)| a.distance(*b)));
        let swept = |i: u32| {
            let i = i as usize;
            (x_prev[i].min(x[i]), x_prev[i].max(x[i]))
        };
        let grow = |(lo, hi): Aabb, r: Real| (lo - Vec3::splat(r), hi + Vec3::splat(r));
        let union = |a: Aabb, b: Aabb| (a.0.min(b.0), a.1.max(b.1));
        let yields = |la: i32, lb: i32| -> (Real, Real) {
            match la.cmp(&lb) {
                std::cmp::Ordering::Less => (INNER_LAYER_YIELD, 1.0),
                std::cmp::Ordering::Greater => (1.0, INNER_LAYER_YIELD),
                std::cmp::Ordering::Equal => (1.0, 1.0),
            }
        };

        // Vertex–triangle.
        boxes.clear();
        boxes.extend(
            triangles
                .iter()
                .map(|t| grow(union(union(swept(t[0]), swept(t[1])), swept(t[2])), reach)),
        );
        tri_hash.build(boxes, *cell_m);
        for &i in vertices.iter() {
            let iu = i as usize;
            tri_hash.query(&swept(i), |k| {
                let t = triangles[k as usize];
                if t.contains(&i) {
                    return;
                }
                let [a, b, c] = t.map(|v| v as usize);
                let (ly, ty) = yields(layer[iu], layer[a]);
                if inv_mass[iu] * ly == 0.0 && (inv_mass[a] + inv_mass[b] + inv_mass[c]) * ty == 0.0
                {
                    return;
                }
                let beta = closest_on_triangle(x_prev[iu], x_prev[a], x_prev[b], x_prev[c]);
                let q = x_prev[a] * beta[0] + x_prev[b] * beta[1] + x_prev[c] * beta[2];
                let d = x_prev[iu] - q;
                let dist = d.length();
                let moving = motion_m[iu] + motion_m[a].max(motion_m[b]).max(motion_m[c]);
                if dist > reach + moving || dist < MIN_SEPARATION_M {
                    return;
                }
                let rb = closest_on_triangle(rest[iu], rest[a], rest[b], rest[c]);
                let rest_dist =
                    rest[iu].distance(rest[a] * rb[0] + rest[b] * rb[1] + rest[c] * rb[2]);
                contacts.push(SelfContact {
                    particles: [i, t[0], t[1], t[2]],
                    coeffs: [1.0, -beta[0], -beta[1], -beta[2]],
                    yield_factor: [ly, ty, ty, ty],
                    normal: d / dist,
                    thickness_m: thickness.min(REST_DISTANCE_FRACTION * rest_dist),
                });
            });
        }

        // Edge–edge.
        boxes.clear();
        boxes.extend(
            edges
                .iter()
                .map(|e| grow(union(swept(e[0]), swept(e[1])), reach)),
        );
        edge_hash.build(boxes, *cell_m);
        for (ke, e) in edges.iter().enumerate() {
            let query = union(swept(e[0]), swept(e[1]));
            edge_hash.query(&query, |kf| {
                if (kf as usize) <= ke {
                    return;
                }
                let f = edges[kf as usize];
                if f.contains(&e[0]) || f.contains(&e[1]) {
                    return;
                }
                let [a, b] = e.map(|v| v as usize);
                let [c, d] = f.map(|v| v as usize);
                let (ey, fy) = yields(layer[a], layer[c]);
                if (inv_mass[a] + inv_mass[b]) * ey == 0.0
                    && (inv_mass[c] + inv_mass[d]) * fy == 0.0
                {
                    return;
                }
                let (s, t) = closest_on_segments(x_prev[a], x_prev[b], x_prev[c], x_prev[d]);
                let inside = |u: Real| u > EDGE_END_EPS && u < 1.0 - EDGE_END_EPS;
                if !inside(s) || !inside(t) {
                    return;
                }
                let pe = x_prev[a].lerp(x_prev[b], s);
                let pf = x_prev[c].lerp(x_prev[d], t);
                let dv = pe - pf;
                let dist = dv.length();
                let moving = motion_m[a].max(motion_m[b]) + motion_m[c].max(motion_m[d]);
                if dist > reach + moving || dist < MIN_SEPARATION_M {
                    return;
                }
                let (rs, rt) = closest_on_segments(rest[a], rest[b], rest[c], rest[d]);
                let rest_dist = rest[a]
                    .lerp(rest[b], rs)
                    .distance(rest[c].lerp(rest[d], rt));
                contacts.push(SelfContact {
                    particles: [e[0], e[1], f[0], f[1]],
                    coeffs: [1.0 - s, s, t - 1.0, -t],
                    yield_factor: [ey, ey, fy, fy],
                    normal: dv / dist,
                    thickness_m: thickness.min(REST_DISTANCE_FRACTION * rest_dist),
                });
            });
        }
        lambdas.clear();
        lambdas.resize(contacts.len(), 0.0);
    }

    /// One Gauss–Seidel sweep over the contacts, forward or backward, moving `x` (m); `inv_mass`
    /// are the particles' inverse masses (1/kg). A contact whose particles are all fixed or
    /// not yielding is left alone.
    pub fn project(&mut self, x: &mut [Vec3], inv_mass: &[Real], reverse: bool) {
        let mut solve = |(c, l): (&SelfContact, &mut Real)| {
            let idx = c.particles.map(|i| i as usize);
            if let Outcome::Move(d) =
                solve_self_contact(idx.map(|i| x[i]), idx.map(|i| inv_mass[i]), c, l)
            {
                for k in 0..4 {
                    x[idx[k]] += d[k];
                }
            }
        };
        let pairs = self.contacts.iter().zip(self.lambdas.iter_mut());
        if reverse {
            pairs.rev().for_each(&mut solve);
        } else {
            pairs.for_each(&mut solve);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    #[test]
    fn vertex_pushed_out_of_triangle_to_the_side_it_came_from() {
        // A triangle in y = 0; the vertex came from above (n = +y) and is predicted 1 cm below.
        let contact = SelfContact {
            particles: [0, 1, 2, 3],
            coeffs: [1.0, -1.0 / 3.0, -1.0 / 3.0, -1.0 / 3.0],
            yield_factor: [1.0; 4],
            normal: Vec3::Y,
            thickness_m: 0.002,
        };
        let x = [
            Vec3::new(0.0, -0.01, 0.0),
            Vec3::new(-1.0, 0.0, -1.0),
            Vec3::new(1.0, 0.0, -1.0),
            Vec3::new(0.0, 0.0, 1.0),
        ];
        // Vertex fixed: the triangle alone moves down by 12 mm.
        let mut l = 0.0;
        let Outcome::Move(d) = solve_self_contact(x, [0.0, 1.0, 1.0, 1.0], &contact, &mut l) else {
            panic!("moves");
        };
        for dk in &d[1..] {
            assert_relative_eq!(dk.y, -0.012, epsilon = 1e-6);
        }
        // Equal masses: C goes to 0 exactly, split by the weights.
        let mut l = 0.0;
        let Outcome::Move(d) = solve_self_contact(x, [1.0; 4], &contact, &mut l) else {
            panic!("moves");
        };
        let y: Vec<Real> = (0..4).map(|k| x[k].y + d[k].y).collect();
        let gap = y[0] - (y[1] + y[2] + y[3]) / 3.0;
        assert_relative_eq!(gap, 0.002, epsilon = 1e-6);
        assert!(d[0].y > 0.0 && d[1].y < 0.0);
        assert!(l > 0.0);
        // Separated: no push, and λ never goes negative.
        let apart = [x[0] + Vec3::Y * 0.05, x[1], x[2], x[3]];
        let mut l = 0.0;
        assert_eq!(
            solve_self_contact(apart, [1.0; 4], &contact, &mut l),
            Outcome::Move([Vec3::ZERO; 4])
        );
        assert_eq!(l, 0.0);
        // Nothing can move.
        assert_eq!(
            solve_self_contact(x, [0.0; 4], &contact, &mut l),
            Outcome::Rigid
        );
    }

    #[test]
    fn closest_points() {
        let (a, b, c) = (Vec3::ZERO, Vec3::X, Vec3::Z);
        let beta = closest_on_triangle(Vec3::new(0.25, 1.0, 0.25), a, b, c);
        assert_relative_eq!(beta[1], 0.25, epsilon = 1e-6);
        assert_relative_eq!(beta[2], 0.25, epsilon = 1e-6);
        assert_eq!(
            closest_on_triangle(Vec3::new(-1.0, 0.0, -1.0), a, b, c),
            [1.0, 0.0, 0.0]
        );
        let beta = closest_on_triangle(Vec3::new(1.0, 0.0, 1.0), a, b, c);
        assert_relative_eq!(beta[1], 0.5, epsilon = 1e-6);
        let (s, t) = closest_on_segments(
            Vec3::new(-1.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.5, 1.0, -1.0),
            Vec3::new(0.5, 1.0, 1.0),
        );
        assert_relative_eq!(s, 0.75, epsilon = 1e-6);
        assert_relative_eq!(t, 0.5, epsilon = 1e-6);
    }

    #[test]
    fn hash_finds_exactly_the_overlapping_boxes_once() {
        // Pseudo-random boxes of mixed sizes (a few huge), checked against brute force.
        let mut seed = 12345u32;
        let mut rnd = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as Real / (1u32 << 24) as Real
        };
        let mut boxes = Vec::new();
        for k in 0..400 {
            let p = Vec3::new(rnd(), rnd(), rnd());
            let s = if k % 50 == 0 { 0.8 } else { 0.05 * rnd() };
            boxes.push((p, p + Vec3::new(s, s * rnd(), s)));
        }
        let mut hash = SpatialHash::default();
        hash.build(&boxes, 0.03);
        for q in boxes.iter().take(100) {
            let mut found = Vec::new();
            hash.query(q, |k| found.push(k));
            let n = found.len();
            found.sort_unstable();
            found.dedup();
            assert_eq!(found.len(), n, "reported once");
            let expected: Vec<u32> = (0..boxes.len() as u32)
                .filter(|&k| overlaps(&boxes[k as usize], q))
                .collect();
            assert_eq!(found, expected);
        }
    }
}
