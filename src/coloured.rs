//! Coloured, vectorised sweeps over the shear and bending constraints.
//!
//! # Why colour these two kinds
//!
//! A Gauss–Seidel sweep projects one constraint after another, each reading the positions the
//! previous one wrote. For the stretch that order is what carries a load along a row of edges
//! in one sweep, so the stretch keeps the mesh's order (docs/solver.md, "Parallel projection").
//! Shear and bending carry no load along the cloth: measured on the standard scene (N = 64,
//! 10 substeps, span limits on, last frame), projecting them in colour order instead of the
//! mesh's left the largest stretch at 9.3 % against 10.2 % and the 90th percentile at 3.06 %
//! against 3.07 % (without span limits, 20 substeps: 8.2 % against 9.1 %).
//!
//! Colour order is what lets a sweep use the machine: within a colour no two constraints share
//! a particle, so [`LANES`] of them are projected at once, one per lane of a `wide::f32x4`
//! (the positions gathered, the arithmetic in vector registers, the corrections scattered),
//! and a large colour is split among rayon's threads. Bending, the costliest projection
//! (an `atan2`, three cross products and a dozen divisions per hinge), is compute-bound, which
//! is what vectors help.
//!
//! # The same numbers as one at a time
//!
//! Each lane performs the scalar projection's operations ([`solve_shear`], [`solve_bend`]) in
//! the same order, without fused multiply-adds, and IEEE 754 rounds each of them the same in a
//! vector lane as in a scalar register: a vectorised colour moves every particle exactly as
//! the scalar projection of the same constraints in the same order would (tested bit for
//! bit). The constraints of a colour commute, so how a colour is split among threads does not
//! matter either: the result is the same on any thread count.
//!
//! Four lanes (`f32x4`, one SSE2 register), not eight: with two registers per `f32x8` the
//! bending's arithmetic spilled to the stack, and the projection stage of the standard scene
//! took 15.3 ms per frame against 14.5 (N = 64, 10 substeps).
//!
//! The colours are built once per solver (`batch::Coloring::greedy`), never in the substep
//! loop; a sweep allocates nothing.

use std::array::from_fn;
use std::ops::{Add, Div, Mul, Neg, Sub};

use rayon::prelude::*;
use wide::f32x4;

/// The vector type: one lane per constraint.
type Lanes = f32x4;

use crate::batch::{Coloring, SharedSlice};
use crate::constraints::{solve_bend, solve_shear, wrap_angle, Bend, Outcome, Shear, Strain};
use crate::math::{Real, Vec3, DEGENERATE_AREA2_SQ, DEGENERATE_LENGTH_SQ};

/// Constraints projected together, one per lane.
pub const LANES: usize = 4;

/// Constraints one rayon task projects in a colour split among threads (a multiple of
/// [`LANES`]); a colour under twice this runs on the calling thread.
const PARALLEL_CHUNK: usize = 1024;

/// A constraint list sorted into colours: colour `c` is `offsets[c]..offsets[c + 1]`, and no
/// two constraints of one colour share a particle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Colours {
    /// Where each colour starts in the sorted list; the last entry is its length.
    pub offsets: Vec<usize>,
}

impl Colours {
    /// Colours `items` greedily by their particles (each index `< particle_count`) and sorts
    /// them into colour order, each colour in the original order.
    pub fn sort<T: Copy, const K: usize>(
        items: &mut Vec<T>,
        particles: impl Fn(&T) -> [u32; K],
        particle_count: usize,
    ) -> Self {
        let stencils: Vec<[u32; K]> = items.iter().map(particles).collect();
        let colouring = Coloring::greedy(&stencils, particle_count);
        *items = colouring.apply(items);
        Self {
            offsets: colouring.offsets,
        }
    }

    /// Number of colours.
    pub fn count(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
}

/// How one sweep runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pass {
    /// The substep (s).
    pub h: Real,
    /// Run the colours backward (the second half of a symmetric pass).
    pub reverse: bool,
    /// Split large colours among rayon's threads.
    pub parallel: bool,
}

/// Projects the shear constraints once, colour by colour, and returns how many were skipped as
/// degenerate.
///
/// `shear` is sorted by `colours`; `w` are the inverse masses (1/kg).
/// Rows of the membrane per triangle (a warp or weft [`Strain`]) are projected one at a time.
///
/// Every particle index must be in `x` (the solver checks them when it is built), and no other
/// thread may use `x` meanwhile.
pub(crate) fn project_shear(
    x: SharedSlice<'_, Vec3>,
    w: &[Real],
    shear: &[Shear],
    lambdas: &mut [Real],
    colours: &Colours,
    pass: Pass,
) -> u64 {
    sweep(shear, lambdas, colours, pass, |c, l| {
        shear_run(x, w, c, l, pass.h)
    })
}

/// Projects the bending constraints once, colour by colour, and returns how many were skipped as degenerate. As [`project_shear`], for [`Bend`].
pub(crate) fn project_bend(
    x: SharedSlice<'_, Vec3>,
    w: &[Real],
    bend: &[Bend],
    lambdas: &mut [Real],
    colours: &Colours,
    pass: Pass,
) -> u64 {
    sweep(bend, lambdas, colours, pass, |c, l| {
        bend_run(x, w, c, l, pass.h)
    })
}

/// Runs `run` over each colour of `items`, in order or backward; a large colour in chunks on
/// rayon's threads when `parallel`.
fn sweep<C: Sync>(
    items: &[C],
    lambdas: &mut [Real],
    colours: &Colours,
    pass: Pass,
    run: impl Fn(&[C], &mut [Real]) -> u64 + Sync,
) -> u64 {
    let n = colours.count();
    let mut degenerate = 0;
    for k in 0..n {
        let k = if pass.reverse { n - 1 - k } else { k };
        let range = colours.offsets[k]..colours.offsets[k + 1];
        let (c, l) = (&items[range.clone()], &mut lambdas[range]);
        degenerate += if pass.parallel && c.len() >= 2 * PARALLEL_CHUNK {
            (c.par_chunks(PARALLEL_CHUNK))
                .zip(l.par_chunks_mut(PARALLEL_CHUNK))
                .map(|(c, l)| run(c, l))
                .sum()
        } else {
            run(c, l)
        };
    }
    degenerate
}

/// Three vectors of [`LANES`] lanes: one 3-vector per lane.
#[derive(Clone, Copy)]
struct V3 {
    x: Lanes,
    y: Lanes,
    z: Lanes,
}

impl V3 {
    /// Gathers `p[j]` into lane `j`.
    #[inline(always)]
    fn gather(p: [Vec3; LANES]) -> Self {
        Self {
            x: Lanes::new(p.map(|v| v.x)),
            y: Lanes::new(p.map(|v| v.y)),
            z: Lanes::new(p.map(|v| v.z)),
        }
    }

    /// glam's `Vec3::dot`, operation for operation.
    #[inline(always)]
    fn dot(self, o: Self) -> Lanes {
        (self.x * o.x) + (self.y * o.y) + (self.z * o.z)
    }

    /// glam's `Vec3::cross`, operation for operation.
    #[inline(always)]
    fn cross(self, o: Self) -> Self {
        Self {
            x: self.y * o.z - o.y * self.z,
            y: self.z * o.x - o.z * self.x,
            z: self.x * o.y - o.x * self.y,
        }
    }
}

impl Add for V3 {
    type Output = Self;
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        Self {
            x: self.x + o.x,
            y: self.y + o.y,
            z: self.z + o.z,
        }
    }
}

impl Sub for V3 {
    type Output = Self;
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        Self {
            x: self.x - o.x,
            y: self.y - o.y,
            z: self.z - o.z,
        }
    }
}

impl Neg for V3 {
    type Output = Self;
    #[inline(always)]
    fn neg(self) -> Self {
        Self {
            x: -self.x,
            y: -self.y,
            z: -self.z,
        }
    }
}

impl Mul<Lanes> for V3 {
    type Output = Self;
    #[inline(always)]
    fn mul(self, s: Lanes) -> Self {
        Self {
            x: self.x * s,
            y: self.y * s,
            z: self.z * s,
        }
    }
}

impl Div<Lanes> for V3 {
    type Output = Self;
    #[inline(always)]
    fn div(self, s: Lanes) -> Self {
        Self {
            x: self.x / s,
            y: self.y / s,
            z: self.z / s,
        }
    }
}

/// [`crate::math::atan2`] in every lane, operation for operation.
#[inline(always)]
fn atan2(y: Lanes, x: Lanes) -> Lanes {
    use std::f32::consts::{FRAC_PI_2, FRAC_PI_4, PI};
    let s = Lanes::splat;
    let (ax, ay) = (x.abs(), y.abs());
    let swap = ay.simd_gt(ax);
    let num = swap.select(ax, ay);
    let den = swap.select(ay, ax);
    // The scalar function returns `f32::atan2` for a zero denominator (both arguments zero):
    // ±0 or ±π by the signs, which `t = 0` and the sign steps below give as well.
    let zero = den.simd_eq(s(0.0));
    let t = zero.select(s(0.0), num / den);
    let big = t.simd_gt(s(0.414_213_57));
    let t = big.select((t - s(1.0)) / (t + s(1.0)), t);
    let base = big.select(s(FRAC_PI_4), s(0.0));
    let z = t * t;
    let poly = (((s(8.053_744_5e-2) * z - s(1.387_768_6e-1)) * z + s(1.997_771_1e-1)) * z
        - s(3.333_295e-1))
        * z;
    let a = base + (poly * t + t);
    let a = swap.select(s(FRAC_PI_2) - a, a);
    let a = x.is_sign_negative().select(s(PI) - a, a);
    y.is_sign_negative().select(-a, a)
}

/// [`wrap_angle`] in every lane.
#[inline(always)]
fn wrap(a: Lanes) -> Lanes {
    use std::f32::consts::{PI, TAU};
    let s = Lanes::splat;
    // Within (−2π, 2π], the range of a difference of two angles in [−π, π] (both the dihedral
    // angle and a rest angle from `atan2`), `a % TAU` is `a` (or 0 at ±2π, which one step of
    // ±2π gives as well); further out, the scalar function in each lane.
    if a.abs().simd_gt(s(TAU)).any() {
        return Lanes::new(a.to_array().map(wrap_angle));
    }
    let above = a.simd_gt(s(PI));
    let below = a.simd_le(s(-PI));
    above.select(a - s(TAU), below.select(a + s(TAU), a))
}

/// Adds lane `j` of `d[k]` to particle `idx[j][k]` for every lane `j` set in `moves`, and
/// sets those lanes' multipliers to `lambda + dl`.
///
/// # Safety
/// Every index is in `x`, and no other thread uses these particles meanwhile.
#[inline(always)]
unsafe fn scatter<const K: usize>(
    x: SharedSlice<'_, Vec3>,
    idx: &[[usize; K]; LANES],
    d: [V3; K],
    moves: Lanes,
    lambda: Lanes,
    dl: Lanes,
    l: &mut [Real],
) {
    // Out of the vector registers once, into plain arrays indexed by lane (indexing the
    // vectors lane by lane spilled them again for every lane).
    let dx: [[Real; LANES]; K] = from_fn(|k| d[k].x.to_array());
    let dy: [[Real; LANES]; K] = from_fn(|k| d[k].y.to_array());
    let dz: [[Real; LANES]; K] = from_fn(|k| d[k].z.to_array());
    let lambda = (lambda + dl).to_array();
    let bits = moves.to_bitmask();
    for j in 0..LANES {
        if bits & (1 << j) == 0 {
            continue;
        }
        l[j] = lambda[j];
        for k in 0..K {
            // SAFETY: the caller's contract.
            unsafe { x.add(idx[j][k], Vec3::new(dx[k][j], dy[k][j], dz[k][j])) };
        }
    }
}

/// The XPBD step shared by both kinds: the multiplier update `Δλ` of
/// [`crate::constraints::delta_lambda`] in every lane, and the lanes that move (not
/// `degenerate`, with a positive, finite denominator).
#[inline(always)]
fn step(
    c: Lanes,
    grad_w: Lanes,
    alpha: Lanes,
    h: Real,
    lambda: Lanes,
    degenerate: Lanes,
) -> (Lanes, Lanes) {
    let alpha_tilde = alpha / Lanes::splat(h * h);
    let denom = grad_w + alpha_tilde;
    let rigid = denom.simd_le(Lanes::splat(0.0)) | !denom.is_finite();
    let moves = !(degenerate | rigid);
    let dl = (-c - alpha_tilde * lambda) / denom;
    (moves.select(dl, Lanes::splat(0.0)), moves)
}

/// Projects `c` (one colour's constraints, or a chunk of one) with its multipliers `l`.
fn shear_run(x: SharedSlice<'_, Vec3>, w: &[Real], c: &[Shear], l: &mut [Real], h: Real) -> u64 {
    let mut degenerate = 0;
    let mut chunks = c.chunks_exact(LANES).zip(l.chunks_exact_mut(LANES));
    for (c, l) in &mut chunks {
        if c.iter().all(|c| c.strain == Strain::Shear) {
            degenerate += shear_lanes(x, w, c, l, h);
        } else {
            degenerate += c
                .iter()
                .zip(l)
                .map(|(c, l)| shear_one(x, w, c, l, h))
                .sum::<u64>();
        }
    }
    let done = c.len() - c.len() % LANES;
    let tail = c[done..].iter().zip(&mut l[done..]);
    degenerate + tail.map(|(c, l)| shear_one(x, w, c, l, h)).sum::<u64>()
}

/// One shear constraint by the scalar projection.
#[inline]
fn shear_one(x: SharedSlice<'_, Vec3>, w: &[Real], c: &Shear, l: &mut Real, h: Real) -> u64 {
    let idx = c.particles.map(|i| i as usize);
    // SAFETY: the indices are in bounds (checked when the solver was built) and, within a
    // colour, no other constraint touches these particles.
    let p = idx.map(|i| unsafe { x.get(i) });
    let ws = idx.map(|i| w[i]);
    match solve_shear(p, ws, c.rest_inverse, c.strain, c.compliance_per_n_m, h, l) {
        Outcome::Move(d) => {
            for k in 0..3 {
                // SAFETY: as above.
                unsafe { x.add(idx[k], d[k]) };
            }
            0
        }
        Outcome::Degenerate => 1,
        Outcome::Rigid => 0,
    }
}

/// [`LANES`] shear constraints (strain [`Strain::Shear`]) at once: [`solve_shear`] in every
/// lane.
#[inline(always)]
fn shear_lanes(x: SharedSlice<'_, Vec3>, w: &[Real], c: &[Shear], l: &mut [Real], h: Real) -> u64 {
    let idx: [[usize; 3]; LANES] = from_fn(|j| c[j].particles.map(|i| i as usize));
    // SAFETY (gathers and scatters): the indices are in bounds (checked when the solver was
    // built) and no two constraints of a colour share a particle.
    let p: [V3; 3] = from_fn(|k| V3::gather(from_fn(|j| unsafe { x.get(idx[j][k]) })));
    let ws: [Lanes; 3] = from_fn(|k| Lanes::new(from_fn(|j| w[idx[j][k]])));
    let d: [Lanes; 4] = from_fn(|m| Lanes::new(from_fn(|j| c[j].rest_inverse[m])));
    let [d00, d01, d10, d11] = d;
    let e1 = p[1] - p[0];
    let e2 = p[2] - p[0];
    let area2 = e1.cross(e2);
    let degenerate = area2.dot(area2).simd_lt(Lanes::splat(DEGENERATE_AREA2_SQ));
    let fu = e1 * d00 + e2 * d10;
    let fv = e1 * d01 + e2 * d11;
    let strain = fu.dot(fv);
    let g1 = fv * d00 + fu * d01;
    let g2 = fv * d10 + fu * d11;
    let g = [-(g1 + g2), g1, g2];
    let grad_w = ws[0] * g[0].dot(g[0]) + ws[1] * g[1].dot(g[1]) + ws[2] * g[2].dot(g[2]);
    let alpha = Lanes::new(from_fn(|j| c[j].compliance_per_n_m));
    let lambda = Lanes::new(from_fn(|j| l[j]));
    let (dl, moves) = step(strain, grad_w, alpha, h, lambda, degenerate);
    let d: [V3; 3] = from_fn(|k| g[k] * (ws[k] * dl));
    // SAFETY: as above.
    unsafe { scatter(x, &idx, d, moves, lambda, dl, l) };
    degenerate.to_bitmask().count_ones() as u64
}

/// As [`shear_run`], for bending.
fn bend_run(x: SharedSlice<'_, Vec3>, w: &[Real], c: &[Bend], l: &mut [Real], h: Real) -> u64 {
    let mut degenerate = 0;
    let mut chunks = c.chunks_exact(LANES).zip(l.chunks_exact_mut(LANES));
    for (c, l) in &mut chunks {
        degenerate += bend_lanes(x, w, c, l, h);
    }
    let done = c.len() - c.len() % LANES;
    let tail = c[done..].iter().zip(&mut l[done..]);
    degenerate + tail.map(|(c, l)| bend_one(x, w, c, l, h)).sum::<u64>()
}

/// One hinge by the scalar projection.
#[inline]
fn bend_one(x: SharedSlice<'_, Vec3>, w: &[Real], c: &Bend, l: &mut Real, h: Real) -> u64 {
    let idx = c.particles.map(|i| i as usize);
    // SAFETY: as in `shear_one`.
    let p = idx.map(|i| unsafe { x.get(i) });
    let ws = idx.map(|i| w[i]);
    match solve_bend(p, ws, c.rest_angle_rad, c.compliance_per_n_m, h, l) {
        Outcome::Move(d) => {
            for k in 0..4 {
                // SAFETY: as above.
                unsafe { x.add(idx[k], d[k]) };
            }
            0
        }
        Outcome::Degenerate => 1,
        Outcome::Rigid => 0,
    }
}

/// [`LANES`] hinges at once: [`solve_bend`] (with
/// [`crate::constraints::dihedral_angle_and_gradient`]) in every lane.
#[inline(always)]
fn bend_lanes(x: SharedSlice<'_, Vec3>, w: &[Real], c: &[Bend], l: &mut [Real], h: Real) -> u64 {
    let s = Lanes::splat;
    let idx: [[usize; 4]; LANES] = from_fn(|j| c[j].particles.map(|i| i as usize));
    // SAFETY (gathers and scatters): as in `shear_lanes`.
    let p: [V3; 4] = from_fn(|k| V3::gather(from_fn(|j| unsafe { x.get(idx[j][k]) })));
    let ws: [Lanes; 4] = from_fn(|k| Lanes::new(from_fn(|j| w[idx[j][k]])));
    // Bridson et al.'s names: x₁, x₂ the opposite vertices, x₃ x₄ the shared edge.
    let (x1, x2, x3, x4) = (p[2], p[3], p[0], p[1]);
    let e = x4 - x3;
    let e_len2 = e.dot(e);
    let e_len = e_len2.sqrt();
    let n1 = (x1 - x3).cross(x1 - x4);
    let n2 = (x2 - x4).cross(x2 - x3);
    let n1_len2 = n1.dot(n1);
    let n2_len2 = n2.dot(n2);
    let degenerate = e_len2.simd_lt(s(DEGENERATE_LENGTH_SQ))
        | n1_len2.simd_lt(s(DEGENERATE_AREA2_SQ))
        | n2_len2.simd_lt(s(DEGENERATE_AREA2_SQ));
    let e_hat = e / e_len;
    let m1 = n1 / n1_len2;
    let m2 = n2 / n2_len2;
    let theta = atan2(n1.cross(n2).dot(e), n1.dot(n2) * e_len);
    let u1 = m1 * e_len;
    let u2 = m2 * e_len;
    let u3 = m1 * (x1 - x4).dot(e_hat) + m2 * (x2 - x4).dot(e_hat);
    let u4 = -(m1 * (x1 - x3).dot(e_hat)) - m2 * (x2 - x3).dot(e_hat);
    let g = [-u3, -u4, -u1, -u2];
    let rest = Lanes::new(from_fn(|j| c[j].rest_angle_rad));
    let angle = wrap(theta - rest);
    let grad_w = ws[0] * g[0].dot(g[0])
        + ws[1] * g[1].dot(g[1])
        + ws[2] * g[2].dot(g[2])
        + ws[3] * g[3].dot(g[3]);
    let alpha = Lanes::new(from_fn(|j| c[j].compliance_per_n_m));
    let lambda = Lanes::new(from_fn(|j| l[j]));
    let (dl, moves) = step(angle, grad_w, alpha, h, lambda, degenerate);
    let d: [V3; 4] = from_fn(|k| g[k] * (ws[k] * dl));
    // SAFETY: as above.
    unsafe { scatter(x, &idx, d, moves, lambda, dl, l) };
    degenerate.to_bitmask().count_ones() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constraints::dihedral_angle_and_gradient;

    /// A crumpled 12 × 12 grid: rest angles from a bumpy sheet, positions moved off it.
    fn crumpled(n: usize) -> (Vec<Vec3>, Vec<Vec3>, Vec<Real>) {
        let at = |i: usize, j: usize, amp: Real, phase: Real| {
            let (u, v) = (i as Real * 0.02, j as Real * 0.02);
            Vec3::new(u, amp * (7.0 * u + phase).sin() * (5.0 * v).cos(), v)
        };
        let rest = (0..n * n).map(|k| at(k % n, k / n, 0.01, 0.0)).collect();
        let x = (0..n * n)
            .map(|k| {
                at(k % n, k / n, 0.03, 1.0) + Vec3::new(0.0, 0.0, 0.002 * ((k * 7) % 5) as Real)
            })
            .collect();
        let w = (0..n * n)
            .map(|k| if k < n { 0.0 } else { 1.0 + (k % 3) as Real })
            .collect();
        (rest, x, w)
    }

    fn grid_triangles(n: usize) -> Vec<[u32; 3]> {
        let mut t = Vec::new();
        for j in 0..n - 1 {
            for i in 0..n - 1 {
                let k = (j * n + i) as u32;
                let n = n as u32;
                t.push([k, k + 1, k + n + 1]);
                t.push([k, k + n + 1, k + n]);
            }
        }
        t
    }

    fn hinges(tris: &[[u32; 3]], rest: &[Vec3]) -> Vec<Bend> {
        // Each interior edge's two triangles, by the edge's sorted vertex pair.
        let mut by_edge: std::collections::HashMap<[u32; 2], Vec<usize>> = Default::default();
        for (t, tri) in tris.iter().enumerate() {
            for k in 0..3 {
                let (a, b) = (tri[k], tri[(k + 1) % 3]);
                by_edge.entry([a.min(b), a.max(b)]).or_default().push(t);
            }
        }
        let mut pairs: Vec<([u32; 2], usize, usize)> = by_edge
            .into_iter()
            .filter(|(_, t)| t.len() == 2)
            .map(|(e, t)| (e, t[0], t[1]))
            .collect();
        pairs.sort_unstable();
        let opposite = |t: usize, e: [u32; 2]| *tris[t].iter().find(|v| !e.contains(v)).unwrap();
        (pairs.iter().enumerate())
            .map(|(k, &(e, ta, tb))| {
                let particles = [e[0], e[1], opposite(ta, e), opposite(tb, e)];
                let (theta, _) =
                    dihedral_angle_and_gradient(particles.map(|i| rest[i as usize])).unwrap();
                Bend {
                    particles,
                    rest_angle_rad: theta,
                    compliance_per_n_m: 1.0e-3 * (1 + k % 4) as Real,
                }
            })
            .collect()
    }

    /// The scalar sweep in the list's order, for reference.
    fn scalar_bend(x: &mut [Vec3], w: &[Real], bend: &[Bend], l: &mut [Real], h: Real) {
        for (c, l) in bend.iter().zip(l) {
            let idx = c.particles.map(|i| i as usize);
            let p = idx.map(|i| x[i]);
            if let Outcome::Move(d) = solve_bend(
                p,
                idx.map(|i| w[i]),
                c.rest_angle_rad,
                c.compliance_per_n_m,
                h,
                l,
            ) {
                for k in 0..4 {
                    x[idx[k]] += d[k];
                }
            }
        }
    }

    #[test]
    fn vectorised_bending_moves_the_particles_exactly_as_the_scalar_sweep() {
        let n = 12;
        let (rest, x0, w) = crumpled(n);
        let tris = grid_triangles(n);
        let mut bend = hinges(&tris, &rest);
        let colours = Colours::sort(&mut bend, |c| c.particles, x0.len());
        assert!(colours.count() > 1 && bend.len() > 8 * LANES);
        let h = 1.0 / 240.0;
        let (mut xs, mut ls) = (x0.clone(), vec![0.01; bend.len()]);
        let (mut xv, mut lv) = (x0.clone(), ls.clone());
        for reverse in [false, true, false] {
            scalar_bend_colours(&mut xs, &w, &bend, &mut ls, &colours, h, reverse);
            let skipped = project_bend(
                SharedSlice::new(&mut xv),
                &w,
                &bend,
                &mut lv,
                &colours,
                Pass {
                    h,
                    reverse,
                    parallel: false,
                },
            );
            assert_eq!(skipped, 0);
        }
        assert!(xs != x0, "the sweep moved nothing");
        assert_eq!(xs, xv);
        assert_eq!(ls, lv);
    }

    #[test]
    fn a_colour_split_among_threads_gives_the_serial_result() {
        // Large enough for colours of more than two parallel chunks.
        let n = 128;
        let (rest, x0, w) = crumpled(n);
        let mut bend = hinges(&grid_triangles(n), &rest);
        let colours = Colours::sort(&mut bend, |c| c.particles, x0.len());
        let largest = (colours.offsets.windows(2).map(|o| o[1] - o[0]).max()).unwrap();
        assert!(largest >= 2 * PARALLEL_CHUNK, "largest colour {largest}");
        let h = 1.0 / 240.0;
        let (mut xs, mut ls) = (x0.clone(), vec![0.01; bend.len()]);
        let (mut xp, mut lp) = (x0.clone(), vec![0.01; bend.len()]);
        for reverse in [false, true, false] {
            let serial = Pass {
                h,
                reverse,
                parallel: false,
            };
            project_bend(
                SharedSlice::new(&mut xs),
                &w,
                &bend,
                &mut ls,
                &colours,
                serial,
            );
            project_bend(
                SharedSlice::new(&mut xp),
                &w,
                &bend,
                &mut lp,
                &colours,
                Pass {
                    h,
                    reverse,
                    parallel: true,
                },
            );
        }
        assert!(xs != x0, "the sweep moved nothing");
        assert_eq!(xs, xp);
        assert_eq!(ls, lp);
    }

    /// The scalar sweep colour by colour, backward when `reverse`.
    fn scalar_bend_colours(
        x: &mut [Vec3],
        w: &[Real],
        bend: &[Bend],
        l: &mut [Real],
        colours: &Colours,
        h: Real,
        reverse: bool,
    ) {
        let n = colours.count();
        for k in 0..n {
            let k = if reverse { n - 1 - k } else { k };
            let r = colours.offsets[k]..colours.offsets[k + 1];
            scalar_bend(x, w, &bend[r.clone()], &mut l[r], h);
        }
    }

    #[test]
    fn vectorised_shear_moves_the_particles_exactly_as_the_scalar_sweep() {
        let n = 12;
        let (rest, x0, w) = crumpled(n);
        let mut shear: Vec<Shear> = grid_triangles(n)
            .iter()
            .enumerate()
            .map(|(k, t)| Shear {
                particles: *t,
                rest_inverse: crate::constraints::shear_rest_inverse(
                    t.map(|i| rest[i as usize]),
                    Vec3::X,
                )
                .unwrap(),
                compliance_per_n_m: 1.0e-4 * (1 + k % 3) as Real,
                strain: Strain::Shear,
            })
            .collect();
        let colours = Colours::sort(&mut shear, |c| c.particles, x0.len());
        let h = 1.0 / 240.0;
        let (mut xs, mut ls) = (x0.clone(), vec![0.0; shear.len()]);
        let (mut xv, mut lv) = (x0.clone(), ls.clone());
        for reverse in [false, true] {
            let nc = colours.count();
            for k in 0..nc {
                let k = if reverse { nc - 1 - k } else { k };
                for i in colours.offsets[k]..colours.offsets[k + 1] {
                    let c = &shear[i];
                    let idx = c.particles.map(|i| i as usize);
                    let p = idx.map(|i| xs[i]);
                    let ws = idx.map(|i| w[i]);
                    let (ri, st, a) = (c.rest_inverse, c.strain, c.compliance_per_n_m);
                    if let Outcome::Move(d) = solve_shear(p, ws, ri, st, a, h, &mut ls[i]) {
                        for k in 0..3 {
                            xs[idx[k]] += d[k];
                        }
                    }
                }
            }
            project_shear(
                SharedSlice::new(&mut xv),
                &w,
                &shear,
                &mut lv,
                &colours,
                Pass {
                    h,
                    reverse,
                    parallel: false,
                },
            );
        }
        assert!(xs != x0, "the sweep moved nothing");
        assert_eq!(xs, xv);
        assert_eq!(ls, lv);
    }

    #[test]
    fn degenerate_lanes_are_counted_and_left_alone() {
        let n = 12;
        let (rest, mut x, mut w) = crumpled(n);
        let tris = grid_triangles(n);
        let mut bend = hinges(&tris, &rest);
        let colours = Colours::sort(&mut bend, |c| c.particles, x.len());
        // Collapse one interior vertex onto its neighbour: the hinges around the zero-length
        // edge and the zero-area triangles are skipped, in lanes and in the scalar tail alike.
        // Both pinned, so that no projection separates them before their hinges come.
        x[5 * n + 5] = x[5 * n + 6];
        w[5 * n + 5] = 0.0;
        w[5 * n + 6] = 0.0;
        let mut xs = x.clone();
        let mut ls = vec![0.0; bend.len()];
        let mut lv = ls.clone();
        let expected: u64 = bend
            .iter()
            .filter(|c| dihedral_angle_and_gradient(c.particles.map(|i| x[i as usize])).is_none())
            .count() as u64;
        assert!(expected > 0);
        scalar_bend_colours(&mut xs, &w, &bend, &mut ls, &colours, 1.0 / 240.0, false);
        let skipped = project_bend(
            SharedSlice::new(&mut x),
            &w,
            &bend,
            &mut lv,
            &colours,
            Pass {
                h: 1.0 / 240.0,
                reverse: false,
                parallel: false,
            },
        );
        assert_eq!(skipped, expected);
        assert_eq!(x, xs);
        assert_eq!(lv, ls);
        assert!(x.iter().all(|p| p.is_finite()));
    }

    #[test]
    fn lane_atan2_and_wrap_match_the_scalar_functions() {
        let vals = [
            0.0, -0.0, 1.0, -1.0, 0.3, -0.7, 2.5, -3.0, 1e-8, -1e-8, 100.0, 0.414, 0.4143,
        ];
        for &y in &vals {
            for &x in &vals {
                let v = atan2(Lanes::splat(y), Lanes::splat(x)).as_array()[0];
                let r = crate::math::atan2(y, x);
                assert_eq!(v.to_bits(), r.to_bits(), "atan2({y}, {x})");
            }
        }
        for a in [
            0.0,
            3.0,
            3.2,
            -3.2,
            6.0,
            -6.0,
            std::f32::consts::TAU,
            7.0,
            -20.0,
        ] {
            assert_eq!(
                wrap(Lanes::splat(a)).as_array()[0],
                wrap_angle(a),
                "wrap({a})"
            );
        }
    }
}
