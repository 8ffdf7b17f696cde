//! Self-collision and garment-to-garment collision: cloth triangles against cloth vertices and
//! cloth edges against cloth edges, as XPBD inequality constraints.
//!
//! Every garment of a scene is one range of particles in the solver, and all their triangles
//! go into one collision set, so a garment folding onto itself and two garments pressing on each
//! other are the same problem. Each substep, after the prediction (stage 3 of [`crate::solver`]):
//!
//! 1. **Broad phase.** Each triangle's bounding box over the substep's motion (`x_prev` and the
//!    predicted `x`), grown by the reach `r = thickness + margin`, goes into a [`SpatialHash`],
//!    and each vertex's swept box (`x_prev` to `x`) is looked up among them. Each edge's swept
//!    box, grown by `r/2`, goes into another, whose overlapping pairs are listed cell by cell
//!    ([`SpatialHash::group_pairs`]: each cell against itself and its 13 forward neighbours),
//!    which visits each pair once instead of twice and reads a few cells per cell rather than
//!    per edge.
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
//! The contacts above are linearised at `x_prev`, where the pair is known to be apart: a vertex
//! that crosses a triangle within one substep gets `C < 0` at its predicted position and is
//! pushed back to the side it came from. That is exact for translations; it misses a pair whose
//! closest feature at `x_prev` is not where it meets, e.g. a flap swinging about its edge
//! through a vertex beyond that edge (the closest point is on the hinge, which does not move,
//! so `C` stays positive). So every candidate pair also gets an exact time-of-impact test
//! (Provot, *Collision and self-collision handling in cloth model dedicated to design
//! garments*, 1997; Bridson, Fedkiw & Anderson, *Robust treatment of collisions, contact and
//! friction for cloth animation*, SIGGRAPH 2002), in `f64`:
//!
//! ```text
//! x_k(t) = x_prev,k + t·(x_k − x_prev,k),   t ∈ [0, 1]
//! g(t) = (u(t) × v(t)) · w(t) = c0 + c1·t + c2·t² + c3·t³
//! vertex–triangle: u = b − a, v = c − a, w = p − a
//! edge–edge:       u = b − a, v = d − c, w = a − c
//! ```
//!
//! - `g = 0` when the four points are coplanar; its sign says on which side of the triangle
//!   (of the other edge, along the common normal `u × v`) the first side is;
//! - the roots on `[0, 1]`: the cubic is split at its critical points (the roots of `g'`, a
//!   quadratic solved without cancellation, which also covers vanishing `c3`, `c2`) into
//!   monotone pieces, and each sign change is bisected to 1e-10 of the substep. A local
//!   extreme (or `t = 1`) where `|g| ≤ τ·L²` (`L` the longest of `u`, `v` over the substep, so
//!   `|u × v| ≤ L²`) is a graze and a candidate too. Before all this, when the four Bernstein
//!   coefficients of `g` are beyond `±τ·L²` on one side, `g` cannot reach 0 and the pair is
//!   skipped;
//! - at each candidate time, in order, the proximity check: the closest points of the pair at
//!   `t` (vertex and triangle, or the two segments) within `τ` (m); the first that passes is the
//!   impact. `τ` is [`CCD_TOLERANCE_FRACTION`] of the thickness;
//! - the contact then takes the coefficients `c_k` of the closest points at the impact, and as
//!   normal `n` the unit `u × v` at the impact, signed by `g` just before it (between the last
//!   sign change and the impact): **the side the vertex (first edge) was on just before they
//!   met**. Its thickness is the pair's as above;
//! - when `Σ|c_i| ≤ τ·L²` the four points stay coplanar over the substep (a flat cloth sliding
//!   in its plane): the test is done in 2-D instead, the first time at which the point is within
//!   `τ` of the triangle (segment) being `t = 0` or a time a point crosses the line of an edge,
//!   a quadratic in `t` in the plane's projection. Such an in-plane impact has no side across
//!   the plane, so its contact is the one linearised at `x_prev`.
//!
//! A pair is only tested when its distance at `x_prev` is within the reach plus the motion of
//! its particles, which any pair that meets within the substep is. A pair with an impact gets
//! the impact's contact instead of the linearised one; every other pair keeps the linearised
//! contact (edge–edge pairs only when their closest points at `x_prev` are inside both edges).
//! [`SelfCollision::set_continuous`] turns the test off.
//!
//! # Friction
//!
//! In stage 6, after the velocities `v = (x − x_prev)/h`, each contact whose `λ > 0` applies
//! Coulomb friction at the velocity level, the model of the body's contacts
//! ([`crate::constraints::friction_correction`]) between the two sides:
//!
//! ```text
//! v_rel = Σ_k c_k v_k,   v_t = v_rel − n (n · v_rel)
//! W = Σ_k w̃_k c_k²,     Δv_n = λ W / h
//! Δv_rel = −v_t                           if |v_t| < μ Δv_n  (stick)
//!        = −v_t · min(1, μ Δv_n / |v_t|)  otherwise          (slide)
//! v_k += w̃_k c_k Δv_rel / W
//! ```
//!
//! - `v_rel` is the velocity of the first side's contact point relative to the second's, `v_t`
//!   its tangential part; `Δv_n` the change of the relative normal velocity that the contact's
//!   push `λ` (kg·m) made in this substep of length `h` (s);
//! - the change is shared like the push, by `w̃_k c_k`, so `Σ_k c_k Δv_k = Δv_rel` and momentum
//!   is conserved (the impulse on particle `k` is `c_k Δv_rel / W`, `Σ c_k = 0`);
//! - `μ` is the mean of the two sides' fabric friction coefficients, each side's the
//!   `|c_k|`-weighted mean of its particles' (so per-particle maps blend across a triangle).
//!
//! As on the body, this friction removes velocity, not the tangential move that the prediction
//! already made in the substep: a layer resting on a slope of angle `θ` below its friction
//! angle creeps by `g·sin θ·h²` per substep (7 mm/s on 20° at h = 1/480 s).

//! # Broad phase: hash grid or BVH
//!
//! A spatial hash with cells of the mean rest edge length (at least twice the reach) was
//! measured against parry3d's BVH ([`parry3d::partitioning::Bvh`], binned build) over the same
//! boxes, in `benches/self_collision.rs`: on the standard scene (64 × 64 cloth on a sphere,
//! 7,938 triangles, 4,096 vertex queries) the hash grid takes 2.97 ms per substep and the BVH
//! (build + queries) 4.11 ms (`docs/benchmarks.md`). The hash grid is faster, has no tree to
//! rebuild or refit when a cloth folds over, and reuses its buffers, so it is the one used.
//!
//! Its cells have since grown to the largest box (so each item is entered once, in the cell of
//! its low corner, with its box beside it in memory), and the edge–edge pairs come from the
//! cell pairs rather than one query per edge; both phases' narrow tests run on rayon's pool in
//! fixed chunks joined in order, so the contacts are the same on any number of threads. On the
//! standard scene's state above, one substep's whole contact search (broad and narrow phases,
//! continuous tests included) went from 10.6 to 8.1 ms of CPU time on one thread.

use rayon::prelude::*;

use crate::constraints::{friction_correction, Outcome};
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

/// Within this fraction of the collision thickness, a vertex and a triangle (or two edges) at
/// their time of impact count as touching (the proximity check of the continuous test): 40 µm
/// at the default 4 mm thickness.
pub const CCD_TOLERANCE_FRACTION: Real = 0.01;

/// Roots in time closer than this (as a fraction of the substep) are not refined further.
const TOI_TIME_EPS: f64 = 1.0e-10;

/// A time of impact found by [`vertex_triangle_toi`] or [`edge_edge_toi`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Impact {
    /// Time of impact, as a fraction of the substep (0 at `x_prev`, 1 at the predicted `x`).
    pub t: Real,
    /// The contact's coefficients `c_k` at the impact (dimensionless, summing to 0), as in
    /// [`SelfContact::coeffs`]: `(1, −β_a, −β_b, −β_c)` or `(1−s, s, −(1−u), −u)`.
    pub coeffs: [Real; 4],
    /// Unit direction toward the side the first side (the vertex, the first edge) came from:
    /// the triangle's normal (the two edges' common normal) at the impact, oriented by the side
    /// the first side was on just before it. For coplanar motion, the direction between the
    /// closest points at `t = 0` instead.
    pub normal: Vec3,
    /// The four points stayed coplanar (within the tolerance) over the whole substep: the
    /// impact is an in-plane entry, found by the 2-D test.
    pub coplanar: bool,
}

/// Which four points a continuous test reads: `[p, a, b, c]` or `[a, b, c, d]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PairKind {
    VertexTriangle,
    EdgeEdge,
}

/// Earliest time of impact of a vertex and a triangle, `[p, a, b, c]`, each point moving
/// linearly from `x0` to `x1` (m) over the substep; `None` if they never come within `tol_m`
/// (m). See "Continuous motion" in the module docs.
pub fn vertex_triangle_toi(x0: [Vec3; 4], x1: [Vec3; 4], tol_m: Real) -> Option<Impact> {
    toi(PairKind::VertexTriangle, x0, x1, tol_m)
}

/// Earliest time of impact of the edges `(a, b)` and `(c, d)`, `[a, b, c, d]`, each point
/// moving linearly from `x0` to `x1` (m) over the substep; `None` if they never come within
/// `tol_m` (m). Parallel edges have no common normal and give `None` (the vertex–triangle tests
/// of their ends cover them).
pub fn edge_edge_toi(x0: [Vec3; 4], x1: [Vec3; 4], tol_m: Real) -> Option<Impact> {
    toi(PairKind::EdgeEdge, x0, x1, tol_m)
}

/// A vector in double precision, for the continuous tests (the glam build parry3d uses has no
/// `DVec3`): the products of the cubic's coefficients keep their digits.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct DVec3([f64; 3]);

impl DVec3 {
    #[inline]
    fn from_vec3(v: Vec3) -> Self {
        Self([v.x as f64, v.y as f64, v.z as f64])
    }
    #[inline]
    fn as_vec3(self) -> Vec3 {
        Vec3::new(self.0[0] as Real, self.0[1] as Real, self.0[2] as Real)
    }
    #[inline]
    fn dot(self, o: Self) -> f64 {
        self.0[0] * o.0[0] + self.0[1] * o.0[1] + self.0[2] * o.0[2]
    }
    #[inline]
    fn cross(self, o: Self) -> Self {
        let (a, b) = (self.0, o.0);
        Self([
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ])
    }
    #[inline]
    fn length_squared(self) -> f64 {
        self.dot(self)
    }
    #[inline]
    fn length(self) -> f64 {
        self.length_squared().sqrt()
    }
    #[inline]
    fn is_finite(self) -> bool {
        self.0.iter().all(|c| c.is_finite())
    }
}

impl std::ops::Add for DVec3 {
    type Output = Self;
    #[inline]
    fn add(self, o: Self) -> Self {
        Self(std::array::from_fn(|k| self.0[k] + o.0[k]))
    }
}

impl std::ops::Sub for DVec3 {
    type Output = Self;
    #[inline]
    fn sub(self, o: Self) -> Self {
        Self(std::array::from_fn(|k| self.0[k] - o.0[k]))
    }
}

impl std::ops::Mul<f64> for DVec3 {
    type Output = Self;
    #[inline]
    fn mul(self, s: f64) -> Self {
        Self(self.0.map(|c| c * s))
    }
}

/// `Σ c_i t^i`, Horner.
#[inline]
fn poly(c: &[f64; 4], t: f64) -> f64 {
    ((c[3] * t + c[2]) * t + c[1]) * t + c[0]
}

/// Real roots of `a0 + a1·t + a2·t²`, ascending, without cancellation (Press et al.,
/// *Numerical Recipes*, §5.6). A vanishing `a2` leaves the linear root; near-vanishing `a2`
/// gives one huge root, which the callers' `[0, 1]` test drops.
fn quadratic_roots(a0: f64, a1: f64, a2: f64) -> ([f64; 2], usize) {
    if a2 == 0.0 {
        return if a1 == 0.0 {
            ([0.0; 2], 0)
        } else {
            ([-a0 / a1, 0.0], 1)
        };
    }
    let disc = a1 * a1 - 4.0 * a2 * a0;
    if disc < 0.0 || !disc.is_finite() {
        return ([0.0; 2], 0);
    }
    let q = -0.5 * (a1 + a1.signum() * disc.sqrt());
    if q == 0.0 {
        // a1 = 0 and a0 = 0: a double root at 0.
        return ([0.0; 2], 1);
    }
    let (r1, r2) = (q / a2, a0 / q);
    (if r1 <= r2 { [r1, r2] } else { [r2, r1] }, 2)
}

/// The cubic `g(t) = (u(t) × v(t)) · w(t)` of three linearly moving vectors `u0 + t·du`, …:
/// its power-basis coefficients `[c0, c1, c2, c3]`.
fn triple_cubic(u: (DVec3, DVec3), v: (DVec3, DVec3), w: (DVec3, DVec3)) -> [f64; 4] {
    let ((u0, du), (v0, dv), (w0, dw)) = (u, v, w);
    [
        u0.cross(v0).dot(w0),
        du.cross(v0).dot(w0) + u0.cross(dv).dot(w0) + u0.cross(v0).dot(dw),
        du.cross(dv).dot(w0) + du.cross(v0).dot(dw) + u0.cross(dv).dot(dw),
        du.cross(dv).dot(dw),
    ]
}

/// Events of the cubic `c` on `(0, 1]`, ascending: `(t, true)` where it changes sign (found by
/// bisection to [`TOI_TIME_EPS`] on the monotone piece that holds it), `(t, false)` at a local
/// extremum or at `t = 1` where `|g| ≤ graze` (a graze, or a touch at the end of the substep).
/// Returns how many of `out` were written.
fn cubic_events(c: &[f64; 4], graze: f64, out: &mut [(f64, bool); 6]) -> usize {
    // Break points: 0, the critical points in (0, 1), 1. The roots come sorted.
    let mut breaks = [0.0; 4];
    let mut nb = 1;
    let (crit, n) = quadratic_roots(c[1], 2.0 * c[2], 3.0 * c[3]);
    for &t in &crit[..n] {
        if t > breaks[nb - 1] && t < 1.0 {
            breaks[nb] = t;
            nb += 1;
        }
    }
    breaks[nb] = 1.0;
    nb += 1;
    let mut count = 0;
    let mut g_lo = c[0];
    for i in 1..nb {
        let (mut lo, mut hi) = (breaks[i - 1], breaks[i]);
        let g_hi = poly(c, hi);
        if (g_lo < 0.0 && g_hi > 0.0) || (g_lo > 0.0 && g_hi < 0.0) {
            let s = g_lo.signum();
            while hi - lo > TOI_TIME_EPS {
                let mid = 0.5 * (lo + hi);
                if poly(c, mid) * s > 0.0 {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            out[count] = (0.5 * (lo + hi), true);
            count += 1;
        }
        if g_hi.abs() <= graze {
            out[count] = (breaks[i], false);
            count += 1;
        }
        g_lo = g_hi;
    }
    count
}

/// The four points at time `t` of the substep.
#[inline]
fn points_at(x0: &[DVec3; 4], dx: &[DVec3; 4], t: f64) -> [Vec3; 4] {
    std::array::from_fn(|k| (x0[k] + dx[k] * t).as_vec3())
}

/// The closest points of the pair at `x`: the coefficients `c_k` and the vector between them
/// (first side minus second side, m).
fn closest(kind: PairKind, x: [Vec3; 4]) -> ([Real; 4], Vec3) {
    match kind {
        PairKind::VertexTriangle => {
            let beta = closest_on_triangle(x[0], x[1], x[2], x[3]);
            let q = x[1] * beta[0] + x[2] * beta[1] + x[3] * beta[2];
            ([1.0, -beta[0], -beta[1], -beta[2]], x[0] - q)
        }
        PairKind::EdgeEdge => {
            let (s, u) = closest_on_segments(x[0], x[1], x[2], x[3]);
            (
                [1.0 - s, s, u - 1.0, -u],
                x[0].lerp(x[1], s) - x[2].lerp(x[3], u),
            )
        }
    }
}

/// The continuous test (see "Continuous motion" in the module docs).
fn toi(kind: PairKind, x0: [Vec3; 4], x1: [Vec3; 4], tol_m: Real) -> Option<Impact> {
    let q0 = x0.map(DVec3::from_vec3);
    let dq: [DVec3; 4] = std::array::from_fn(|k| DVec3::from_vec3(x1[k]) - q0[k]);
    if !q0.iter().chain(&dq).all(|v| v.is_finite()) {
        return None;
    }
    // g(t) = (u × v) · w: the triangle's normal (the edges' common normal) dotted with the
    // vector from the second side to the first.
    let lin = |i: usize, j: usize| (q0[i] - q0[j], dq[i] - dq[j]);
    let (u, v, w) = match kind {
        PairKind::VertexTriangle => (lin(2, 1), lin(3, 1), lin(0, 1)),
        PairKind::EdgeEdge => (lin(1, 0), lin(3, 2), lin(0, 2)),
    };
    let c = triple_cubic(u, v, w);
    // |u × v| ≤ l2 over the substep (a norm of a linear motion peaks at an end), so a pair
    // within `tol` of the plane has |g| ≤ tol·l2.
    let l2 = [u.0, u.0 + u.1, v.0, v.0 + v.1]
        .iter()
        .map(|e| e.length_squared())
        .fold(0.0, f64::max);
    let tol = tol_m as f64;
    let graze = tol * l2;
    // Bernstein coefficients: g(t) is their convex combination on [0, 1], so when all four are
    // beyond the graze band on one side, the pair never comes near the plane.
    let b = [
        c[0],
        c[0] + c[1] / 3.0,
        c[0] + (2.0 * c[1] + c[2]) / 3.0,
        c[0] + c[1] + c[2] + c[3],
    ];
    if b.iter().all(|&x| x > graze) || b.iter().all(|&x| x < -graze) {
        return None;
    }
    if c.iter().map(|x| x.abs()).sum::<f64>() <= graze {
        let n = u.0.cross(v.0) + (u.0 + u.1).cross(v.0 + v.1);
        return coplanar_toi(kind, &q0, &dq, tol_m, n);
    }
    let mut events = [(0.0, false); 6];
    let n = cubic_events(&c, graze, &mut events);
    let mut last_crossing = 0.0;
    for &(t, crossing) in &events[..n] {
        let (coeffs, gap) = closest(kind, points_at(&q0, &dq, t));
        if gap.length() <= tol_m {
            // No sign change between the last crossing and t: the side just before the impact.
            let side = poly(&c, 0.5 * (last_crossing + t));
            let m = (u.0 + u.1 * t).cross(v.0 + v.1 * t);
            let len = m.length();
            if side == 0.0 || len.is_nan() || len <= 0.0 {
                return None;
            }
            return Some(Impact {
                t: t as Real,
                coeffs,
                normal: (m * (side.signum() / len)).as_vec3(),
                coplanar: false,
            });
        }
        if crossing {
            last_crossing = t;
        }
    }
    None
}

/// The continuous test for four points that stay coplanar: in the plane, the first side enters
/// the second at `t = 0` or when a point crosses the line of an edge, `h(t) = ((x_b − x_a) ×
/// (x_i − x_a))_k = 0`, a quadratic (`k` the plane normal's largest axis, so `h` is the 2-D
/// cross product in the plane's projection).
fn coplanar_toi(
    kind: PairKind,
    q0: &[DVec3; 4],
    dq: &[DVec3; 4],
    tol_m: Real,
    n: DVec3,
) -> Option<Impact> {
    let na = n.0.map(f64::abs);
    if na.iter().all(|&c| c.is_nan() || c <= 0.0) {
        return None;
    }
    let k = if na[0] >= na[1] && na[0] >= na[2] {
        0
    } else if na[1] >= na[2] {
        1
    } else {
        2
    };
    // (point, line start, line end)
    let lines: &[(usize, usize, usize)] = match kind {
        PairKind::VertexTriangle => &[(0, 1, 2), (0, 2, 3), (0, 3, 1)],
        PairKind::EdgeEdge => &[(0, 2, 3), (1, 2, 3), (2, 0, 1), (3, 0, 1)],
    };
    let mut times = [0.0; 9];
    let mut nt = 1;
    for &(i, a, b) in lines {
        let (e0, de) = (q0[b] - q0[a], dq[b] - dq[a]);
        let (r0, dr) = (q0[i] - q0[a], dq[i] - dq[a]);
        let (roots, m) = quadratic_roots(
            e0.cross(r0).0[k],
            (de.cross(r0) + e0.cross(dr)).0[k],
            de.cross(dr).0[k],
        );
        for &t in &roots[..m] {
            if (0.0..=1.0).contains(&t) {
                times[nt] = t;
                nt += 1;
            }
        }
    }
    let times = &mut times[..nt];
    times.sort_unstable_by(f64::total_cmp);
    for &t in times.iter() {
        let (coeffs, gap) = closest(kind, points_at(q0, dq, t));
        if gap.length() <= tol_m {
            let (_, gap0) = closest(kind, points_at(q0, dq, 0.0));
            let len = gap0.length();
            if len < MIN_SEPARATION_M {
                return None;
            }
            return Some(Impact {
                t: t as Real,
                coeffs,
                normal: gap0 / len,
                coplanar: true,
            });
        }
    }
    None
}

/// An axis-aligned box `(min, max)` (m).
pub type Aabb = (Vec3, Vec3);

/// The hash's cells grow to the largest item, up to this many times the requested cell size;
/// larger items are kept in a list tested against every query.
const MAX_CELL_GROWTH: Real = 8.0;
/// Queries spanning more cells than this test every item's box instead.
const MAX_CELLS_PER_QUERY: i64 = 512;

/// One item of a [`SpatialHash`]: its box, the cell of the box's low corner, its index. 40
/// bytes, stored by bucket so that a query reads its buckets in order.
#[derive(Clone, Copy, Debug)]
struct Entry {
    lo: Vec3,
    hi: Vec3,
    cell: [i32; 3],
    item: u32,
}

/// A uniform spatial hash over boxes, rebuilt in place (no allocation once its buffers have
/// grown to the scene's size).
///
/// The cells are at least as large as every item (up to [`MAX_CELL_GROWTH`] times the size
/// asked for), so each item is entered once, in the cell of its box's low corner, and an item
/// that overlaps a query `[lo, hi]` has its low corner in a cell from `cell(lo − s)` to
/// `cell(hi)` (`s` the cell size). The cells are hashed into a table twice the number of items
/// and the items sorted into it by a counting sort, with their boxes, so a query scans a few
/// short runs of memory. Each overlapping item is reported exactly once, in the order of its
/// cell and then of its index.
#[derive(Clone, Debug, Default)]
pub struct SpatialHash {
    inv_cell: Real,
    cell_m: Real,
    mask: usize,
    starts: Vec<u32>,
    entries: Vec<Entry>,
    /// Each item's bucket, or `u32::MAX` when it is oversized (build scratch).
    bucket_of: Vec<u32>,
    oversized: Vec<Entry>,
    /// Where each cell's run of entries starts in `entries` (a cell's items are contiguous).
    groups: Vec<u32>,
}

/// The 13 neighbouring cells "after" a cell (lexicographically greater offsets): every pair of
/// neighbouring cells is one cell and one of its forward neighbours.
const FORWARD: [[i32; 3]; 13] = [
    [1, -1, -1],
    [1, -1, 0],
    [1, -1, 1],
    [1, 0, -1],
    [1, 0, 0],
    [1, 0, 1],
    [1, 1, -1],
    [1, 1, 0],
    [1, 1, 1],
    [0, 1, -1],
    [0, 1, 0],
    [0, 1, 1],
    [0, 0, 1],
];

/// The cell of `p` for cells of side `1 / inv_cell`.
#[inline]
fn cell_at(p: Vec3, inv_cell: Real) -> [i32; 3] {
    // `as` saturates (and maps NaN to 0), so a wild position cannot overflow.
    [
        (p.x * inv_cell).floor() as i32,
        (p.y * inv_cell).floor() as i32,
        (p.z * inv_cell).floor() as i32,
    ]
}

#[inline]
fn cell_count(lo: [i32; 3], hi: [i32; 3]) -> i64 {
    (0..3)
        .map(|a| (hi[a] as i64 - lo[a] as i64 + 1).max(0))
        .fold(1i64, i64::saturating_mul)
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
    /// Rebuilds the hash over `boxes` with cubic cells of side at least `cell_m` (m, > 0).
    pub fn build(&mut self, boxes: &[Aabb], cell_m: Real) {
        let cell_m = cell_m.max(1.0e-6);
        let largest = boxes
            .iter()
            .map(|b| (b.1 - b.0).max_element())
            .filter(|e| e.is_finite())
            .fold(0.0, Real::max);
        self.cell_m = largest.clamp(cell_m, MAX_CELL_GROWTH * cell_m);
        self.inv_cell = 1.0 / self.cell_m;
        let size = (2 * boxes.len()).next_power_of_two().max(16);
        self.mask = size - 1;
        self.starts.clear();
        self.starts.resize(size + 1, 0);
        self.bucket_of.clear();
        self.oversized.clear();
        for (k, b) in boxes.iter().enumerate() {
            let entry = Entry {
                lo: b.0,
                hi: b.1,
                cell: self.cell_of(b.0),
                item: k as u32,
            };
            let extent = (b.1 - b.0).max_element();
            if extent.is_nan() || extent > self.cell_m {
                self.oversized.push(entry);
                self.bucket_of.push(u32::MAX);
                continue;
            }
            let bucket = hash_cell(entry.cell) & self.mask;
            self.bucket_of.push(bucket as u32);
            self.starts[bucket + 1] += 1;
        }
        for i in 0..size {
            self.starts[i + 1] += self.starts[i];
        }
        let placed = self.starts[size] as usize;
        self.entries.clear();
        self.entries.resize(
            placed,
            Entry {
                lo: Vec3::ZERO,
                hi: Vec3::ZERO,
                cell: [0; 3],
                item: 0,
            },
        );
        // Fill each bucket from its end, items in reverse, so each run is in item order and
        // `starts[b + 1]` ends at the run's start.
        let inv_cell = self.inv_cell;
        for (k, &bucket) in self.bucket_of.iter().enumerate().rev() {
            if bucket == u32::MAX {
                continue;
            }
            let b = &boxes[k];
            let slot = &mut self.starts[bucket as usize + 1];
            *slot -= 1;
            self.entries[*slot as usize] = Entry {
                lo: b.0,
                hi: b.1,
                cell: cell_at(b.0, inv_cell),
                item: k as u32,
            };
        }
        // Each `starts[b + 1]` now holds the start of bucket b; shift back into place.
        for i in 0..size {
            self.starts[i] = self.starts[i + 1];
        }
        self.starts[size] = placed as u32;
        // Within a bucket, group each cell's items (cells that collide in the table are few;
        // a stable insertion sort by cell keeps each cell's items in index order).
        self.groups.clear();
        for b in 0..size {
            let run = &mut self.entries[self.starts[b] as usize..self.starts[b + 1] as usize];
            for i in 1..run.len() {
                let mut j = i;
                while j > 0 && run[j - 1].cell > run[j].cell {
                    run.swap(j - 1, j);
                    j -= 1;
                }
            }
            for i in 0..run.len() {
                if i == 0 || run[i].cell != run[i - 1].cell {
                    self.groups.push(self.starts[b] + i as u32);
                }
            }
        }
    }

    /// The items of the cell `c`, contiguous (empty when none).
    #[inline]
    fn cell_items(&self, c: [i32; 3]) -> &[Entry] {
        let bucket = hash_cell(c) & self.mask;
        let run = &self.entries[self.starts[bucket] as usize..self.starts[bucket + 1] as usize];
        match run.iter().position(|e| e.cell == c) {
            Some(first) => {
                let n = run[first..].iter().take_while(|e| e.cell == c).count();
                &run[first..first + n]
            }
            None => &[],
        }
    }

    /// How many cells hold items (the groups of [`Self::group_pairs`]).
    pub fn groups(&self) -> usize {
        self.groups.len()
    }

    /// Calls `f(a, b)` once for every pair of items `a < b` whose boxes overlap, with `a` or
    /// `b` in cell group `g` (`g < `[`Self::groups`]) and the other in the same cell or one of
    /// its forward neighbours: over all groups, every overlapping pair of items that are not
    /// oversized, exactly once. Items are no larger than a cell, so two that overlap have
    /// their low corners in the same or neighbouring cells.
    pub fn group_pairs(&self, g: usize, mut f: impl FnMut(u32, u32)) {
        let start = self.groups[g] as usize;
        let end = self
            .groups
            .get(g + 1)
            .map_or(self.entries.len(), |&e| e as usize);
        let own = &self.entries[start..end];
        let c = own[0].cell;
        let mut report = |a: &Entry, b: &Entry| {
            if overlaps(&(a.lo, a.hi), &(b.lo, b.hi)) {
                f(a.item.min(b.item), a.item.max(b.item));
            }
        };
        for (i, a) in own.iter().enumerate() {
            for b in &own[i + 1..] {
                report(a, b);
            }
        }
        for d in FORWARD {
            let n = [
                c[0].wrapping_add(d[0]),
                c[1].wrapping_add(d[1]),
                c[2].wrapping_add(d[2]),
            ];
            let other = self.cell_items(n);
            for a in own {
                for b in other {
                    report(a, b);
                }
            }
        }
    }

    /// Calls `f(a, b)` once for every overlapping pair `a < b` with at least one oversized item
    /// (the pairs [`Self::group_pairs`] leaves out).
    pub fn oversized_pairs(&self, mut f: impl FnMut(u32, u32)) {
        for (i, a) in self.oversized.iter().enumerate() {
            for b in self.entries.iter().chain(&self.oversized[i + 1..]) {
                if overlaps(&(a.lo, a.hi), &(b.lo, b.hi)) {
                    f(a.item.min(b.item), a.item.max(b.item));
                }
            }
        }
    }

    #[inline]
    fn cell_of(&self, p: Vec3) -> [i32; 3] {
        cell_at(p, self.inv_cell)
    }

    /// Calls `f` once with every item whose box overlaps `query`.
    pub fn query(&self, query: &Aabb, mut f: impl FnMut(u32)) {
        let mut test = |e: &Entry| {
            if overlaps(&(e.lo, e.hi), query) {
                f(e.item);
            }
        };
        let (qlo, qhi) = (
            self.cell_of(query.0 - Vec3::splat(self.cell_m)),
            self.cell_of(query.1),
        );
        if cell_count(qlo, qhi) > MAX_CELLS_PER_QUERY {
            self.entries.iter().for_each(&mut test);
        } else {
            for_cells(qlo, qhi, |c| {
                let bucket = hash_cell(c) & self.mask;
                let (start, end) = (self.starts[bucket], self.starts[bucket + 1]);
                for e in &self.entries[start as usize..end as usize] {
                    // Another cell may hash to the same bucket.
                    if e.cell == c {
                        test(e);
                    }
                }
            });
        }
        self.oversized.iter().for_each(test);
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

/// Vertices per task of the parallel vertex–triangle phase. The tasks' contacts are joined in
/// order, so the contact list is the same on any number of threads.
const CHUNK: usize = 256;
/// Cells per task of the parallel edge–edge phase.
const GROUP_CHUNK: usize = 64;

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
    /// Run the continuous (time of impact) test on every candidate pair.
    continuous: bool,
    tri_hash: SpatialHash,
    edge_hash: SpatialHash,
    boxes: Vec<Aabb>,
    /// How far each particle moves in this substep (m).
    motion_m: Vec<Real>,
    /// Each parallel task's contacts, joined into `contacts`.
    chunks: Vec<Vec<SelfContact>>,
    contacts: Vec<SelfContact>,
    lambdas: Vec<Real>,
}

/// What the narrow phase reads for one substep.
struct NarrowPhase<'a> {
    x_prev: &'a [Vec3],
    x: &'a [Vec3],
    inv_mass: &'a [Real],
    rest: &'a [Vec3],
    layer: &'a [i32],
    motion_m: &'a [Real],
    thickness_m: Real,
    reach_m: Real,
    tolerance_m: Real,
    continuous: bool,
}

impl NarrowPhase<'_> {
    /// Yield factors of the two sides of a contact between layers `la` and `lb`.
    #[inline]
    fn yields(la: i32, lb: i32) -> (Real, Real) {
        match la.cmp(&lb) {
            std::cmp::Ordering::Less => (INNER_LAYER_YIELD, 1.0),
            std::cmp::Ordering::Greater => (1.0, INNER_LAYER_YIELD),
            std::cmp::Ordering::Equal => (1.0, 1.0),
        }
    }

    /// The thickness of a pair: at most [`REST_DISTANCE_FRACTION`] of its rest distance.
    #[inline]
    fn thickness(&self, kind: PairKind, idx: [usize; 4]) -> Real {
        let (_, gap) = closest(kind, idx.map(|i| self.rest[i]));
        self.thickness_m.min(REST_DISTANCE_FRACTION * gap.length())
    }

    /// The contact of the pair `idx` (kind `kind`), if any: from the time of impact when the
    /// pair meets within the substep (not coplanar), otherwise from the closest points at
    /// `x_prev` when they are within the reach plus the motion. `yield_factor` as in
    /// [`SelfContact`].
    fn pair(
        &self,
        kind: PairKind,
        particles: [u32; 4],
        yield_factor: [Real; 4],
        out: &mut Vec<SelfContact>,
    ) {
        let idx = particles.map(|i| i as usize);
        let (coeffs, gap) = closest(kind, idx.map(|i| self.x_prev[i]));
        let dist = gap.length();
        let m = self.motion_m;
        let moving = match kind {
            PairKind::VertexTriangle => m[idx[0]] + m[idx[1]].max(m[idx[2]]).max(m[idx[3]]),
            PairKind::EdgeEdge => m[idx[0]].max(m[idx[1]]) + m[idx[2]].max(m[idx[3]]),
        };
        // A pair that meets within the substep is within the motion of its particles at
        // `x_prev`, so this bound holds for the continuous test too.
        if dist > self.reach_m + moving || dist < MIN_SEPARATION_M {
            return;
        }
        if self.continuous && moving > 0.0 {
            let x0 = idx.map(|i| self.x_prev[i]);
            let x1 = idx.map(|i| self.x[i]);
            let hit = match kind {
                PairKind::VertexTriangle => vertex_triangle_toi(x0, x1, self.tolerance_m),
                PairKind::EdgeEdge => edge_edge_toi(x0, x1, self.tolerance_m),
            };
            if let Some(hit) = hit.filter(|h| !h.coplanar) {
                out.push(SelfContact {
                    particles,
                    coeffs: hit.coeffs,
                    yield_factor,
                    normal: hit.normal,
                    thickness_m: self.thickness(kind, idx),
                });
                return;
            }
        }
        if kind == PairKind::EdgeEdge {
            // An end of an edge is a vertex, which the vertex–triangle tests cover.
            let inside = |u: Real| u > EDGE_END_EPS && u < 1.0 - EDGE_END_EPS;
            if !inside(coeffs[1]) || !inside(-coeffs[3]) {
                return;
            }
        }
        out.push(SelfContact {
            particles,
            coeffs,
            yield_factor,
            normal: gap / dist,
            thickness_m: self.thickness(kind, idx),
        });
    }

    fn vertex_triangle(&self, i: u32, t: [u32; 3], out: &mut Vec<SelfContact>) {
        if t.contains(&i) {
            return;
        }
        let (iu, [a, b, c]) = (i as usize, t.map(|v| v as usize));
        let w = self.inv_mass;
        let (ly, ty) = Self::yields(self.layer[iu], self.layer[a]);
        if w[iu] * ly == 0.0 && (w[a] + w[b] + w[c]) * ty == 0.0 {
            return;
        }
        self.pair(
            PairKind::VertexTriangle,
            [i, t[0], t[1], t[2]],
            [ly, ty, ty, ty],
            out,
        );
    }

    fn edge_edge(&self, e: [u32; 2], f: [u32; 2], out: &mut Vec<SelfContact>) {
        if f.contains(&e[0]) || f.contains(&e[1]) {
            return;
        }
        let ([a, b], [c, d]) = (e.map(|v| v as usize), f.map(|v| v as usize));
        let w = self.inv_mass;
        let (ey, fy) = Self::yields(self.layer[a], self.layer[c]);
        if (w[a] + w[b]) * ey == 0.0 && (w[c] + w[d]) * fy == 0.0 {
            return;
        }
        self.pair(
            PairKind::EdgeEdge,
            [e[0], e[1], f[0], f[1]],
            [ey, ey, fy, fy],
            out,
        );
    }
}

impl SelfCollision {
    /// A self-collision stage for `triangles` (particle indices, all garments), with each
    /// particle's `layer` (empty: all 0), the rest positions `rest` (m), the thickness kept
    /// between cloth layers (m) and the extra search margin (m).
    ///
    /// The caller has checked the indices (the solver does, in [`crate::solver::Solver::new`]).
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
            continuous: true,
            ..Default::default()
        }
    }

    /// Turns the continuous (time of impact) test on or off (on by default). Off, every contact
    /// is linearised at `x_prev`, which is exact for translations only (see "Continuous
    /// motion" in the module docs).
    pub fn set_continuous(&mut self, on: bool) {
        self.continuous = on;
    }

    /// The contacts found for this substep.
    pub fn contacts(&self) -> &[SelfContact] {
        &self.contacts
    }

    /// The accumulated multiplier `λ` of each contact (kg·m), in the order of
    /// [`Self::contacts`].
    pub fn lambdas(&self) -> &[Real] {
        &self.lambdas
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
            continuous,
            tri_hash,
            edge_hash,
            boxes,
            motion_m,
            chunks,
            contacts,
            lambdas,
        } = self;
        let reach = *thickness_m + *margin_m;
        contacts.clear();
        motion_m.clear();
        motion_m.extend(x_prev.iter().zip(x).map(|(a, b)| a.distance(*b)));
        let narrow = NarrowPhase {
            x_prev,
            x,
            inv_mass,
            rest,
            layer,
            motion_m,
            thickness_m: *thickness_m,
            reach_m: reach,
            tolerance_m: CCD_TOLERANCE_FRACTION * *thickness_m,
            continuous: *continuous,
        };
        let swept = |i: u32| {
            let i = i as usize;
            (x_prev[i].min(x[i]), x_prev[i].max(x[i]))
        };
        let grow = |(lo, hi): Aabb, r: Real| (lo - Vec3::splat(r), hi + Vec3::splat(r));
        let union = |a: Aabb, b: Aabb| (a.0.min(b.0), a.1.max(b.1));
        let n_chunks = vertices.len().div_ceil(CHUNK);
        if chunks.len() < n_chunks {
            chunks.resize_with(n_chunks, Vec::new);
        }
        let mut join = |chunks: &mut Vec<Vec<SelfContact>>, n: usize| {
            for c in &chunks[..n] {
                contacts.extend_from_slice(c);
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
        let (tri_hash, triangles) = (&*tri_hash, &*triangles);
        vertices
            .par_chunks(CHUNK)
            .zip(chunks.par_iter_mut())
            .for_each(|(vs, out)| {
                out.clear();
                for &i in vs {
                    tri_hash.query(&swept(i), |k| {
                        narrow.vertex_triangle(i, triangles[k as usize], out);
                    });
                }
            });
        join(chunks, n_chunks);

        // Edge–edge: each pair once, from the hash's cell pairs. Both boxes grown by half the
        // reach overlap exactly when one grown by the reach overlaps the other.
        boxes.clear();
        boxes.extend(
            edges
                .iter()
                .map(|e| grow(union(swept(e[0]), swept(e[1])), 0.5 * reach)),
        );
        edge_hash.build(boxes, *cell_m);
        let (edge_hash, edges) = (&*edge_hash, &*edges);
        let n_groups = edge_hash.groups();
        let n_tasks = n_groups.div_ceil(GROUP_CHUNK);
        if chunks.len() < n_tasks {
            chunks.resize_with(n_tasks, Vec::new);
        }
        chunks[..n_tasks]
            .par_iter_mut()
            .enumerate()
            .for_each(|(task, out)| {
                out.clear();
                let end = ((task + 1) * GROUP_CHUNK).min(n_groups);
                for g in task * GROUP_CHUNK..end {
                    edge_hash.group_pairs(g, |ke, kf| {
                        narrow.edge_edge(edges[ke as usize], edges[kf as usize], out);
                    });
                }
            });
        join(chunks, n_tasks);
        edge_hash.oversized_pairs(|ke, kf| {
            narrow.edge_edge(edges[ke as usize], edges[kf as usize], contacts);
        });
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

    /// Coulomb friction between the two sides of every contact that pushed in this substep, at
    /// the velocity level, after `v = (x − x_prev)/h` (stage 6 of [`crate::solver`]); see
    /// "Friction" in the module docs. `v` (m/s) is changed in place; `inv_mass` (1/kg) and
    /// `friction` (the fabric's dimensionless coefficient) are per particle; `h` is the substep
    /// (s).
    pub fn apply_friction(&self, v: &mut [Vec3], inv_mass: &[Real], friction: &[Real], h: Real) {
        if h.is_nan() || h <= 0.0 {
            return;
        }
        let inv_h = 1.0 / h;
        for (c, &l) in self.contacts.iter().zip(&self.lambdas) {
            if l <= 0.0 {
                continue;
            }
            let idx = c.particles.map(|i| i as usize);
            let mut wy = [0.0; 4];
            let mut denom = 0.0;
            let mut v_rel = Vec3::ZERO;
            let (mut mu_first, mut mu_second) = (0.0, 0.0);
            for k in 0..4 {
                let (i, ck) = (idx[k], c.coeffs[k]);
                wy[k] = inv_mass[i] * c.yield_factor[k];
                denom += wy[k] * ck * ck;
                v_rel += v[i] * ck;
                // The positive coefficients (the first side) sum to 1, the negative to −1.
                if ck > 0.0 {
                    mu_first += ck * friction[i];
                } else {
                    mu_second -= ck * friction[i];
                }
            }
            if denom <= 0.0 || !denom.is_finite() {
                continue;
            }
            let mu = 0.5 * (mu_first + mu_second);
            let v_t = v_rel - c.normal * c.normal.dot(v_rel);
            let dv = friction_correction(v_t, l * denom * inv_h, mu, mu);
            for k in 0..4 {
                v[idx[k]] += dv * (wy[k] * c.coeffs[k] / denom);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::Mat3;
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

    fn v(x: Real, y: Real, z: Real) -> Vec3 {
        Vec3::new(x, y, z)
    }

    /// The triangle of the continuous tests: in y = 0, right angle at the origin.
    const TRI: [[Real; 3]; 3] = [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]];

    fn tri() -> [Vec3; 3] {
        TRI.map(Vec3::from)
    }

    #[test]
    fn toi_vertex_falling_onto_static_triangle() {
        let [a, b, c] = tri();
        // y = 0.3 − 0.4·t: through the plane at t = 0.75, at (0.2, 0, 0.2).
        let hit = vertex_triangle_toi(
            [v(0.2, 0.3, 0.2), a, b, c],
            [v(0.2, -0.1, 0.2), a, b, c],
            1e-5,
        )
        .expect("hits");
        assert_relative_eq!(hit.t, 0.75, epsilon = 1e-6);
        assert!(!hit.coplanar);
        assert_relative_eq!(hit.normal, Vec3::Y, epsilon = 1e-6);
        for (got, want) in hit.coeffs.iter().zip([1.0, -0.6, -0.2, -0.2]) {
            assert_relative_eq!(*got, want, epsilon = 1e-5);
        }
        // From below: the normal points down, the side it came from.
        let hit = vertex_triangle_toi(
            [v(0.2, -0.1, 0.2), a, b, c],
            [v(0.2, 0.3, 0.2), a, b, c],
            1e-5,
        )
        .expect("hits");
        assert_relative_eq!(hit.t, 0.25, epsilon = 1e-6);
        assert_relative_eq!(hit.normal, -Vec3::Y, epsilon = 1e-6);
        // Both moving: the triangle rises 0.2 while the vertex falls 0.4, they meet at t = 0.5.
        let up = Vec3::Y * 0.2;
        let hit = vertex_triangle_toi(
            [v(0.2, 0.3, 0.2), a, b, c],
            [v(0.2, -0.1, 0.2), a + up, b + up, c + up],
            1e-5,
        )
        .expect("hits");
        assert_relative_eq!(hit.t, 0.5, epsilon = 1e-6);
        // The same at a millimetre scale: the coefficients are 1e-9 of the above.
        let s = 1e-3;
        let hit = vertex_triangle_toi(
            [v(0.2, 0.3, 0.2) * s, a * s, b * s, c * s],
            [v(0.2, -0.1, 0.2) * s, a * s, b * s, c * s],
            1e-8,
        )
        .expect("hits");
        assert_relative_eq!(hit.t, 0.75, epsilon = 1e-5);
        // Ending exactly in the plane is a touch at t = 1.
        let hit = vertex_triangle_toi(
            [v(0.2, 0.3, 0.2), a, b, c],
            [v(0.2, 0.0, 0.2), a, b, c],
            1e-5,
        )
        .expect("touches");
        assert_relative_eq!(hit.t, 1.0, epsilon = 1e-6);
        assert_relative_eq!(hit.normal, Vec3::Y, epsilon = 1e-6);
    }

    #[test]
    fn toi_misses() {
        let [a, b, c] = tri();
        // Through the plane beside the triangle (x + z = 1.2 > 1).
        assert_eq!(
            vertex_triangle_toi(
                [v(0.6, 0.3, 0.6), a, b, c],
                [v(0.6, -0.1, 0.6), a, b, c],
                1e-5
            ),
            None
        );
        // Parallel to the plane, 1 cm above it, across the whole triangle.
        assert_eq!(
            vertex_triangle_toi(
                [v(-0.5, 0.01, 0.2), a, b, c],
                [v(1.5, 0.01, 0.2), a, b, c],
                1e-5
            ),
            None
        );
        // Towards the plane but stopping short of it.
        assert_eq!(
            vertex_triangle_toi(
                [v(0.2, 0.3, 0.2), a, b, c],
                [v(0.2, 0.001, 0.2), a, b, c],
                1e-5
            ),
            None
        );
        // Two parallel edges closing in: no common normal, no impact.
        assert_eq!(
            edge_edge_toi(
                [
                    v(0.0, 1.0, 0.0),
                    v(1.0, 1.0, 0.0),
                    v(0.0, 0.0, 0.0),
                    v(1.0, 0.0, 0.0)
                ],
                [
                    v(0.0, -1.0, 0.0),
                    v(1.0, -1.0, 0.0),
                    v(0.0, 0.0, 0.0),
                    v(1.0, 0.0, 0.0)
                ],
                1e-5
            ),
            None
        );
        // Skew edges whose lines cross but whose segments pass each other (u = 1.5 > 1).
        assert_eq!(
            edge_edge_toi(
                [
                    v(-1.0, 0.5, 0.0),
                    v(1.0, 0.5, 0.0),
                    v(0.0, 0.0, -2.0),
                    v(0.0, 0.0, -1.0)
                ],
                [
                    v(-1.0, -0.5, 0.0),
                    v(1.0, -0.5, 0.0),
                    v(0.0, 0.0, -2.0),
                    v(0.0, 0.0, -1.0)
                ],
                1e-5
            )
            .map(|h| h.t),
            None
        );
    }

    /// A triangle hinged on the z axis swings 120° in one substep (each vertex on its chord)
    /// through a vertex that lies beyond the hinge, at 100° and 0.3 m. The linearised contact
    /// (closest point at `x_prev`: the hinge, which does not move) is satisfied at the end, so
    /// it misses the pass; the cubic finds it.
    #[test]
    fn toi_rotating_triangle_that_the_linearised_test_misses() {
        let (a, b) = (v(0.0, 0.0, -0.5), v(0.0, 0.0, 0.5));
        let (c0, c1) = (v(1.0, 0.0, 0.0), v(-0.5, 0.75_f32.sqrt(), 0.0));
        let ang = 100.0_f32.to_radians();
        let p = v(0.3 * ang.cos(), 0.3 * ang.sin(), 0.0);
        let (x0, x1) = ([p, a, b, c0], [p, a, b, c1]);
        // p is in the plane when c(t) = c0 + t·(c1 − c0) points at 100°.
        let t_exact = ang.sin() / (1.5 * ang.sin() + 0.75_f32.sqrt() * ang.cos());
        let hit = vertex_triangle_toi(x0, x1, 1e-5).expect("the cubic finds the pass");
        assert_relative_eq!(hit.t, t_exact, epsilon = 1e-5);
        assert_relative_eq!(t_exact, 0.7422, epsilon = 1e-3);
        // The normal is the flap's at the impact, on the side p was on: ahead of the swing.
        assert_relative_eq!(hit.normal, v(-ang.sin(), ang.cos(), 0.0), epsilon = 1e-4);
        // The linearised contact (closest point at x_prev) is satisfied at the end: a miss.
        // p needs a triangle of its own to be a collision vertex: a tiny fixed one.
        let q = [p + v(0.001, 0.0, 0.0), p + v(0.0, 0.001, 0.0)];
        let (x0, x1) = ([p, a, b, c0, q[0], q[1]], [p, a, b, c1, q[0], q[1]]);
        let triangles = [[1, 2, 3], [0, 4, 5]];
        let mut sc = SelfCollision::new(&triangles, &[], &x0, 0.004, 0.002);
        let w = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let contact = |sc: &SelfCollision| -> SelfContact {
            let found = sc.contacts().iter().find(|c| c.particles == [0, 1, 2, 3]);
            *found.expect("a vertex–triangle contact")
        };
        let gap_end = |c: &SelfContact| -> Real {
            let gap: Vec3 = (0..4)
                .map(|k| x1[c.particles[k] as usize] * c.coeffs[k])
                .sum();
            c.normal.dot(gap) - c.thickness_m
        };
        sc.set_continuous(false);
        sc.find_contacts(&x0, &x1, &w, &x0);
        assert!(
            gap_end(&contact(&sc)) > 0.2,
            "the linearised contact is satisfied"
        );
        // With the continuous test the contact is violated at the end, and projecting it puts
        // p back ahead of the flap, a thickness away.
        sc.set_continuous(true);
        sc.find_contacts(&x0, &x1, &w, &x0);
        let c = contact(&sc);
        assert!(gap_end(&c) < -0.01);
        let mut x = x1;
        for _ in 0..2 {
            sc.project(&mut x, &w, false);
        }
        assert_relative_eq!(c.normal, hit.normal, epsilon = 1e-6);
        let gap: Vec3 = (0..4)
            .map(|k| x[c.particles[k] as usize] * c.coeffs[k])
            .sum();
        assert_relative_eq!(c.normal.dot(gap), 0.004, epsilon = 1e-5);
        // Ahead of the flap in its final position too.
        let ahead = v(-c1.y, c1.x, 0.0).normalize();
        assert!(
            (x[0] - x[1]).dot(ahead) > 0.004,
            "p is {} m ahead of the flap",
            (x[0] - x[1]).dot(ahead)
        );
    }

    #[test]
    fn toi_edges_crossing_at_known_time() {
        // Edge e along x at y = 0.3 − 0.4·t, edge f along z at x = −0.5, y = 0: they cross at
        // t = 0.75, a quarter along e and half along f.
        let f = [v(-0.5, 0.0, -1.0), v(-0.5, 0.0, 1.0)];
        let hit = edge_edge_toi(
            [v(-1.0, 0.3, 0.0), v(1.0, 0.3, 0.0), f[0], f[1]],
            [v(-1.0, -0.1, 0.0), v(1.0, -0.1, 0.0), f[0], f[1]],
            1e-5,
        )
        .expect("hits");
        assert_relative_eq!(hit.t, 0.75, epsilon = 1e-6);
        assert_relative_eq!(hit.normal, Vec3::Y, epsilon = 1e-6);
        for (got, want) in hit.coeffs.iter().zip([0.75, 0.25, -0.5, -0.5]) {
            assert_relative_eq!(*got, want, epsilon = 1e-5);
        }
        // f spinning about y by 90° while e falls: the chord keeps f's middle at the origin
        // and the crossing happens where e meets it.
        let hit = edge_edge_toi(
            [
                v(-1.0, 0.3, 0.1),
                v(1.0, 0.3, 0.1),
                v(-1.0, 0.0, 0.0),
                v(1.0, 0.0, 0.0),
            ],
            [
                v(-1.0, -0.1, 0.1),
                v(1.0, -0.1, 0.1),
                v(0.0, 0.0, -1.0),
                v(0.0, 0.0, 1.0),
            ],
            1e-5,
        )
        .expect("hits");
        assert_relative_eq!(hit.t, 0.75, epsilon = 1e-6);
        assert_relative_eq!(hit.normal.y.abs(), 1.0, epsilon = 1e-6);
        assert!(hit.normal.y > 0.0, "e came from above");
    }

    #[test]
    fn toi_coplanar_motion() {
        let [a, b, c] = tri();
        // Sliding in the triangle's plane into it through the edge x = 0 at t = 0.5.
        let hit = vertex_triangle_toi(
            [v(-0.5, 0.0, 0.2), a, b, c],
            [v(0.5, 0.0, 0.2), a, b, c],
            1e-5,
        )
        .expect("enters");
        assert!(hit.coplanar);
        assert_relative_eq!(hit.t, 0.5, epsilon = 1e-6);
        assert_relative_eq!(hit.normal, -Vec3::X, epsilon = 1e-6);
        // Sliding in the plane away from it.
        assert_eq!(
            vertex_triangle_toi(
                [v(-0.5, 0.0, 0.2), a, b, c],
                [v(-1.5, 0.0, 0.2), a, b, c],
                1e-5
            ),
            None
        );
        // A tilted plane (not axis-aligned, so f32 rounding leaves it only nearly coplanar):
        // the vertex enters through the edge a–c at t = 0.25.
        let r = Mat3::from_rotation_x(0.3) * Mat3::from_rotation_z(0.7);
        let [a, b, c] = [a, b, c].map(|q| r * q + v(0.1, 0.2, 0.3));
        let (p0, p1) = (
            r * v(-0.1, 0.0, 0.5) + v(0.1, 0.2, 0.3),
            r * v(0.3, 0.0, 0.5) + v(0.1, 0.2, 0.3),
        );
        let hit = vertex_triangle_toi([p0, a, b, c], [p1, a, b, c], 1e-5).expect("enters");
        assert!(hit.coplanar);
        assert_relative_eq!(hit.t, 0.25, epsilon = 1e-4);
        // Two edges of one plane: e slides along x into f (from x = 0.5 to −0.5), crossing at
        // t = 0.5.
        let f = [v(0.0, 0.0, -1.0), v(0.0, 0.0, 1.0)];
        let hit = edge_edge_toi(
            [v(0.5, 0.0, 0.0), v(1.5, 0.0, 0.0), f[0], f[1]],
            [v(-0.5, 0.0, 0.0), v(0.5, 0.0, 0.0), f[0], f[1]],
            1e-5,
        )
        .expect("meets");
        assert!(hit.coplanar);
        assert_relative_eq!(hit.t, 0.5, epsilon = 1e-6);
    }

    #[test]
    fn quadratic_and_cubic_roots() {
        let (r, n) = quadratic_roots(2.0, -3.0, 1.0);
        assert_eq!((n, r), (2, [1.0, 2.0]));
        let (r, n) = quadratic_roots(-1.0, 2.0, 0.0);
        assert_eq!((n, r[0]), (1, 0.5));
        assert_eq!(quadratic_roots(1.0, 0.0, 1.0).1, 0);
        assert_eq!(quadratic_roots(1.0, 0.0, 0.0).1, 0);
        // A tiny leading coefficient keeps the root near the linear one.
        let (r, n) = quadratic_roots(-1.0, 2.0, 1e-14);
        assert_eq!(n, 2);
        assert!(r.iter().any(|&t| (t - 0.5).abs() < 1e-12));
        // (t − 0.2)(t − 0.5)(t − 0.9): three crossings, in order.
        let c = [-0.09, 0.73, -1.6, 1.0];
        let mut out = [(0.0, false); 6];
        let n = cubic_events(&c, 0.0, &mut out);
        let crossings: Vec<f64> = out[..n].iter().filter(|e| e.1).map(|e| e.0).collect();
        assert_eq!(crossings.len(), 3);
        for (got, want) in crossings.iter().zip([0.2, 0.5, 0.9]) {
            assert!((got - want).abs() < 1e-9, "{got} vs {want}");
        }
        // (t − 0.5)²: no sign change, a graze at the extremum.
        let n = cubic_events(&[0.25, -1.0, 1.0, 0.0], 1e-12, &mut out);
        assert_eq!(n, 1);
        assert!((out[0].0 - 0.5).abs() < 1e-12 && !out[0].1);
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
        // Every overlapping pair exactly once from the cell pairs and the oversized items.
        let mut pairs = Vec::new();
        for g in 0..hash.groups() {
            hash.group_pairs(g, |a, b| pairs.push((a, b)));
        }
        hash.oversized_pairs(|a, b| pairs.push((a, b)));
        let n = pairs.len();
        pairs.sort_unstable();
        pairs.dedup();
        assert_eq!(pairs.len(), n, "each pair reported once");
        let mut expected = Vec::new();
        for a in 0..boxes.len() {
            for b in a + 1..boxes.len() {
                if overlaps(&boxes[a], &boxes[b]) {
                    expected.push((a as u32, b as u32));
                }
            }
        }
        assert_eq!(pairs, expected);
    }
}
