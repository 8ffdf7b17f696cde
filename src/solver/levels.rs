//! Vector sweeps: the constraints projected four at a time, in levels of their own order,
//! with the same numbers as one at a time.
//!
//! # Levels
//!
//! A Gauss–Seidel sweep projects one constraint after another, each reading the positions the
//! previous ones wrote, and its order matters: the mesh's order carries a load along a whole row
//! of edges in one sweep, which a colouring does not (docs/solver.md, "Parallel projection").
//! But the order has parallelism of its own. Give each constraint a level one above the highest
//! level among the earlier constraints that share a particle with it ([`Levels::new`]). Then a
//! constraint's earlier neighbours are all on lower levels and its later ones on higher levels,
//! and no two constraints of one level share a particle. Running the levels in turn, the
//! constraints of a level in any order, reads and writes every position and multiplier exactly
//! as the serial sweep does; a backward sweep runs the levels backward. A 64 × 64 grid's 12,033
//! edges fall into 500 levels, 24 edges each on average.
//!
//! The constraints of a level are independent, so [`LANES`] of them are projected at once, one
//! per lane of a `wide::f32x4` (the positions gathered, the arithmetic in vector registers, the
//! corrections scattered), and a very large level is split among rayon's threads. The serial
//! sweep was latency-bound (each edge waiting for the previous edge's write: about 23 ns per
//! edge on the development machine) and bending compute-bound (an `atan2`, three cross products
//! and a dozen divisions per hinge); both gain.
//!
//! # Orders without room for levels
//!
//! Levels are only as wide as the order allows: a strip of triangles round a skirt's rings,
//! each sharing a vertex with the one before, has one triangle per level. A kind whose levels
//! hold fewer than [`MIN_LEVEL_WIDTH`] constraints on average is not levelled
//! ([`Levels::if_wide`]): the solver levels its stretch in layers from the pinned particles
//! instead ([`Levels::layered`]: a sweep that still runs from where the load comes in to the far
//! end, coloured only along each layer), projects its span limits one at a time, and its shear
//! and bending in greedy colours ([`Levels::colours`]), groups that share no particle but come
//! in another order than the list's (these two kinds do not carry the load along the cloth, so
//! their order barely moves the result; docs/solver.md, "Vector sweeps").
//!
//! # The same numbers
//!
//! Each lane performs the scalar projection's operations ([`solve_distance`] with the
//! solver's over-relaxation, [`solve_shear`], [`solve_bend`], [`solve_span_limit`]) in the same
//! order, without fused multiply-adds, and IEEE 754 rounds each of them the same in a vector lane
//! as in a scalar register. So a vector sweep moves every particle and multiplier bit for bit as
//! the serial sweep in the list's order (tested), on any thread count.
//!
//! Four lanes (`f32x4`, one SSE2 register), not eight: with two registers per `f32x8` the
//! bending's arithmetic spilled to the stack, and the projection stage of the standard scene
//! took 15.3 ms per frame against 14.5 (N = 64, 10 substeps, an earlier colour-ordered build).
//!
//! # Padded positions
//!
//! The solver's positions are `Vec3`s, 12 bytes each: a lane's gather was three scalar loads
//! per particle and another for its inverse mass, and its scatter three read-modify-writes.
//! While the levelled kinds are swept the solver copies the positions into `Vec4`s with the
//! inverse mass as the fourth component ([`pad_positions`], and back after: [`unpad_positions`]),
//! and the lanes read four particles with four aligned loads and one 4 × 4 transpose, and update
//! each with one vector add ([`Positions`]). The numbers are the same, bit for bit (tested);
//! the projection stage of the standard scene at N = 128 took 18.9 ms per frame against
//! 20.9–21.9 on one thread (stretch and shear 20 % less, bending 10 %).
//!
//! The levels are built once per solver, never in the substep loop; a sweep allocates nothing.

use std::array::from_fn;
use std::ops::{Add, Div, Mul, Neg, Sub};

use rayon::prelude::*;
use wide::f32x4;

/// The vector type: one lane per constraint.
type Lanes = f32x4;

use crate::constraints::{
    solve_bend, solve_distance, solve_shear, solve_span_limit, wrap_angle, Bend, Distance, Outcome,
    Shear, SpanLimit, Strain,
};
use crate::math::{Real, Vec3, Vec4, DEGENERATE_AREA2_SQ, DEGENERATE_LENGTH_SQ};
use crate::solver::batch::SharedSlice;

/// Constraints projected together, one per lane.
pub const LANES: usize = 4;

/// The average constraints per level below which levels do not pay: a mesh whose order chains
/// every constraint to the one before (a strip of triangles round a skirt's rings: 1,440
/// triangles in 1,440 levels) has no parallelism in that order.
pub const MIN_LEVEL_WIDTH: usize = 2 * LANES;

/// The fewest constraints one rayon task projects in a level split among threads; a level
/// under twice this runs on the calling thread (a 64 × 160 skirt's stretch layers of about 120
/// edges ran slower split: the join costs more than half a layer).
const MIN_TASK: usize = 256;

/// Constraints per task when a level of `len` is split among `threads`: one task per thread,
/// the same size (rounded up to whole [`LANES`]), but at least [`MIN_TASK`]. Fixed tasks of
/// 1,024 left one of two threads idle for a third of a skirt's 2,500-hinge colours (bending
/// 9.4 → 7.3 ms per frame on the 10k walk). The split never changes the numbers: the
/// constraints of a level share no particle.
fn task_size(len: usize, threads: usize) -> usize {
    len.div_ceil(threads.max(1))
        .max(MIN_TASK)
        .next_multiple_of(LANES)
}

/// A constraint list sorted into levels of its own order: level `k` is
/// `offsets[k]..offsets[k + 1]`, and no two constraints of one level share a particle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Levels {
    /// Where each level starts in the sorted list; the last entry is its length.
    pub offsets: Vec<usize>,
}

impl Levels {
    /// Sorts `items` into the levels of their own order (each particle index `<
    /// particle_count`): a constraint's level is one more than the highest level among the
    /// constraints before it that share a particle with it.
    ///
    /// No two constraints of one level share a particle, and a constraint's neighbours before
    /// it in the list are all on lower levels, those after it on higher ones. So projecting the
    /// levels one after another (backward for a backward sweep), the constraints of a level in
    /// any order, reads and writes every position and multiplier exactly as the serial sweep in
    /// the list's order does: the same numbers, bit for bit, while the constraints of one level
    /// are independent and can share the vector lanes.
    pub fn new<T: Copy, const K: usize>(
        items: &mut Vec<T>,
        particles: impl Fn(&T) -> [u32; K],
        particle_count: usize,
    ) -> Self {
        let mut last = vec![0u32; particle_count];
        let level: Vec<u32> = (items.iter())
            .map(|c| {
                let stencil = particles(c);
                let l = 1 + stencil.iter().map(|&p| last[p as usize]).max().unwrap_or(0);
                for &p in &stencil {
                    last[p as usize] = l;
                }
                l
            })
            .collect();
        let levels = level.iter().copied().max().unwrap_or(0) as usize;
        let mut offsets = vec![0usize; levels + 1];
        for &l in &level {
            offsets[l as usize] += 1;
        }
        for k in 1..=levels {
            offsets[k] += offsets[k - 1];
        }
        // A stable counting sort: each level keeps the list's order.
        let mut next = offsets.clone();
        let mut sorted = items.clone();
        for (c, &l) in items.iter().zip(&level) {
            let slot = &mut next[l as usize - 1];
            sorted[*slot] = *c;
            *slot += 1;
        }
        *items = sorted;
        Self { offsets }
    }

    /// Sorts `items` by layer and, within a layer, into greedy colours, then into the levels
    /// of that order ([`Self::new`]): the serial sweep of the sorted list, bit for bit.
    /// `layer[p]` is particle `p`'s layer (its distance in edges from where the load comes in:
    /// [`particle_layers`]); a constraint's layer is its particles' lowest.
    ///
    /// An order for meshes whose own order leaves no room for levels (a ring mesh, whose every
    /// edge shares a vertex with the one before). A sweep in layer order still carries a
    /// correction from layer to layer, from where the load comes in to the far end and back,
    /// as the mesh's order does along its rows; only along a layer, across the direction the
    /// load travels, is the order a colouring's.
    pub fn layered<T: Copy, const K: usize>(
        items: &mut Vec<T>,
        particles: impl Fn(&T) -> [u32; K],
        particle_count: usize,
        layer: &[u32],
    ) -> Self {
        let layer_of = |c: &T| {
            (particles(c).iter())
                .map(|&p| layer.get(p as usize).copied().unwrap_or(u32::MAX))
                .min()
                .unwrap_or(u32::MAX)
        };
        items.sort_by_key(|c| layer_of(c));
        let mut sorted = Vec::with_capacity(items.len());
        for group in items.chunk_by(|a, b| layer_of(a) == layer_of(b)) {
            let stencils: Vec<[u32; K]> = group.iter().map(&particles).collect();
            let colouring = crate::solver::batch::Coloring::greedy(&stencils, particle_count);
            sorted.extend(colouring.apply(group));
        }
        *items = sorted;
        Self::new(items, particles, particle_count)
    }

    /// Sorts `items` into greedy colours (each particle index `< particle_count`): groups in
    /// which no two constraints share a particle, each group in the list's order, the first
    /// groups the largest (`batch::Coloring::greedy`). Projected like levels, but in another
    /// order than the list's, so not with the serial sweep's numbers.
    pub fn colours<T: Copy, const K: usize>(
        items: &mut Vec<T>,
        particles: impl Fn(&T) -> [u32; K],
        particle_count: usize,
    ) -> Self {
        let stencils: Vec<[u32; K]> = items.iter().map(particles).collect();
        let colouring = crate::solver::batch::Coloring::greedy(&stencils, particle_count);
        *items = colouring.apply(items);
        Self {
            offsets: colouring.offsets,
        }
    }

    /// The levels of `items` ([`Self::new`]), sorting `items` to match, when they hold at least
    /// [`MIN_LEVEL_WIDTH`] constraints on average; otherwise `None`, `items` untouched.
    pub fn if_wide<T: Copy, const K: usize>(
        items: &mut Vec<T>,
        particles: impl Fn(&T) -> [u32; K],
        particle_count: usize,
    ) -> Option<Self> {
        Self::kept_if_wide(items, |sorted| Self::new(sorted, particles, particle_count))
    }

    /// The layered levels of `items` ([`Self::layered`]), sorting `items` to match, when they
    /// hold at least [`MIN_LEVEL_WIDTH`] constraints on average; otherwise `None`, `items`
    /// untouched.
    pub fn layered_if_wide<T: Copy, const K: usize>(
        items: &mut Vec<T>,
        particles: impl Fn(&T) -> [u32; K],
        particle_count: usize,
        layer: &[u32],
    ) -> Option<Self> {
        Self::kept_if_wide(items, |sorted| {
            Self::layered(sorted, particles, particle_count, layer)
        })
    }

    /// Sorts a copy of `items` by `sort` and keeps it, with its levels, when they hold at least
    /// [`MIN_LEVEL_WIDTH`] constraints on average.
    fn kept_if_wide<T: Copy>(
        items: &mut Vec<T>,
        sort: impl FnOnce(&mut Vec<T>) -> Self,
    ) -> Option<Self> {
        let mut sorted = items.clone();
        let levels = sort(&mut sorted);
        (items.len() >= MIN_LEVEL_WIDTH * levels.count()).then(|| {
            *items = sorted;
            levels
        })
    }

    /// Number of levels.
    pub fn count(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
}

/// Each particle's layer: its distance in edges from the nearest of `seeds` (breadth first
/// over `edges`). A part of the mesh that no seed reaches is layered from its lowest-numbered
/// particle. Without seeds, the first particle seeds the first part.
pub fn particle_layers(edges: &[[u32; 2]], seeds: &[u32], particle_count: usize) -> Vec<u32> {
    let mut neighbours = vec![Vec::new(); particle_count];
    for &[a, b] in edges {
        if (a as usize) < particle_count && (b as usize) < particle_count && a != b {
            neighbours[a as usize].push(b);
            neighbours[b as usize].push(a);
        }
    }
    let mut layer = vec![u32::MAX; particle_count];
    let mut queue = std::collections::VecDeque::new();
    let mut visit = |starts: &mut dyn Iterator<Item = u32>, layer: &mut Vec<u32>| {
        for s in starts {
            if layer.get(s as usize) == Some(&u32::MAX) {
                layer[s as usize] = 0;
                queue.push_back(s);
            }
        }
        while let Some(p) = queue.pop_front() {
            let next = layer[p as usize] + 1;
            for &q in &neighbours[p as usize] {
                if layer[q as usize] == u32::MAX {
                    layer[q as usize] = next;
                    queue.push_back(q);
                }
            }
        }
    };
    visit(&mut seeds.iter().copied(), &mut layer);
    for p in 0..particle_count as u32 {
        if layer[p as usize] == u32::MAX {
            visit(&mut std::iter::once(p), &mut layer);
        }
    }
    layer
}

/// What one sweep over a kind counted.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Counts {
    /// Constraints skipped as degenerate.
    pub degenerate: u64,
    /// Largest stretch residual `|Δλ|·(w_a + w_b + α̃)` (m), when asked for.
    pub max_residual_m: Real,
}

impl Counts {
    pub(crate) fn merge(self, o: Self) -> Self {
        Self {
            degenerate: self.degenerate + o.degenerate,
            max_residual_m: self.max_residual_m.max(o.max_residual_m),
        }
    }

    pub(crate) fn skipped(degenerate: u64) -> Self {
        Self {
            degenerate,
            max_residual_m: 0.0,
        }
    }
}

/// How one sweep runs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pass {
    /// The substep (s).
    pub h: Real,
    /// Run the levels backward (the second half of a symmetric pass).
    pub reverse: bool,
    /// Split large levels among rayon's threads.
    pub parallel: bool,
}

/// Projects the shear constraints once, level by level: bit for bit the serial sweep in the
/// list's order. Returns how many were skipped as degenerate.
///
/// `shear` is sorted by `levels`; `w` are the inverse masses (1/kg).
/// Rows of the membrane per triangle (a warp or weft [`Strain`]) are projected one at a time.
///
/// Every particle index must be in `x` (the solver checks them when it is built), and no other
/// thread may use `x` meanwhile.
pub(crate) fn project_shear<P: Positions>(
    x: P,
    w: &[Real],
    shear: &[Shear],
    lambdas: &mut [Real],
    levels: &Levels,
    pass: Pass,
) -> Counts {
    sweep(shear, lambdas, levels, pass, |c, l| {
        Counts::skipped(shear_run(x, w, c, l, pass.h))
    })
}

/// Projects the bending constraints once, level by level. As [`project_shear`], for [`Bend`].
pub(crate) fn project_bend<P: Positions>(
    x: P,
    w: &[Real],
    bend: &[Bend],
    lambdas: &mut [Real],
    levels: &Levels,
    pass: Pass,
) -> Counts {
    sweep(bend, lambdas, levels, pass, |c, l| {
        Counts::skipped(bend_run(x, w, c, l, pass.h))
    })
}

/// How the stretch sweep relaxes and what it reports (see [`project_stretch`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct StretchPass {
    /// Over-relaxation factor `ω` of each correction and multiplier increment.
    pub omega: Real,
    /// `1/h²` (1/s²), for the residual.
    pub inv_h2: Real,
    /// Report the largest residual (the last sweep of a substep).
    pub residual: bool,
}

/// Projects the stretch edges once, level by level ([`Levels::new`]): bit for bit the
/// serial sweep in the list's order, over-relaxed by `stretch.omega` (the correction `ω·Δx`
/// and the multiplier `λ + ω·Δλ`), with the largest residual when `stretch.residual`.
pub(crate) fn project_stretch<P: Positions>(
    x: P,
    w: &[Real],
    edges: &[Distance],
    lambdas: &mut [Real],
    levels: &Levels,
    pass: Pass,
    stretch: StretchPass,
) -> Counts {
    sweep(edges, lambdas, levels, pass, |c, l| {
        stretch_run(x, w, c, l, pass.h, stretch)
    })
}

/// Projects the span limits once, level by level ([`Levels::new`]): bit for bit the serial
/// sweep in the list's order ([`solve_span_limit`]).
pub(crate) fn project_span_limits<P: Positions>(
    x: P,
    w: &[Real],
    limits: &[SpanLimit],
    lambdas: &mut [Real],
    levels: &Levels,
    pass: Pass,
) {
    sweep(limits, lambdas, levels, pass, |c, l| {
        span_run(x, w, c, l);
        Counts::default()
    });
}

/// Projects a run of span limits that share no particle: lanes, and the tail one at a time.
pub(crate) fn span_run<P: Positions>(x: P, w: &[Real], c: &[SpanLimit], l: &mut [Real]) {
    let mut chunks = c.chunks_exact(LANES).zip(l.chunks_exact_mut(LANES));
    for (c, l) in &mut chunks {
        span_lanes(x, w, c, l);
    }
    let done = c.len() - c.len() % LANES;
    for (c, l) in c[done..].iter().zip(&mut l[done..]) {
        let [a, b] = c.particles.map(|i| i as usize);
        // SAFETY: as in `shear_one`.
        let p = unsafe { [x.get(a), x.get(b)] };
        if let Outcome::Move([da, db]) = solve_span_limit(p, [w[a], w[b]], c.max_length_m, l) {
            // SAFETY: as above.
            unsafe {
                x.add(a, da);
                x.add(b, db);
            }
        }
    }
}

/// Runs `run` over each level of `items`, in order or backward; a large level in chunks on
/// rayon's threads when `parallel`.
fn sweep<C: Sync>(
    items: &[C],
    lambdas: &mut [Real],
    levels: &Levels,
    pass: Pass,
    run: impl Fn(&[C], &mut [Real]) -> Counts + Sync,
) -> Counts {
    let n = levels.count();
    let mut counts = Counts::default();
    for k in 0..n {
        let k = if pass.reverse { n - 1 - k } else { k };
        let range = levels.offsets[k]..levels.offsets[k + 1];
        let (c, l) = (&items[range.clone()], &mut lambdas[range]);
        counts = counts.merge(if pass.parallel && c.len() >= 2 * MIN_TASK {
            let chunk = task_size(c.len(), rayon::current_num_threads());
            (c.par_chunks(chunk))
                .zip(l.par_chunks_mut(chunk))
                .map(|(c, l)| run(c, l))
                .reduce(Counts::default, Counts::merge)
        } else {
            run(c, l)
        });
    }
    counts
}

/// Three vectors of [`LANES`] lanes: one 3-vector per lane.
#[derive(Clone, Copy)]
pub(crate) struct V3 {
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

/// Copies the positions `x` (m) and the inverse masses `w` (kg⁻¹) into `padded`, for the lane
/// kernels' aligned loads ([`Positions`]).
pub(crate) fn pad_positions(padded: &mut [Vec4], x: &[Vec3], w: &[Real]) {
    for ((p4, p), &w) in padded.iter_mut().zip(x).zip(w) {
        *p4 = p.extend(w);
    }
}

/// Copies the padded positions (m) back into `x`: the other half of [`pad_positions`].
pub(crate) fn unpad_positions(x: &mut [Vec3], padded: &[Vec4]) {
    for (p, p4) in x.iter_mut().zip(padded) {
        *p = p4.truncate();
    }
}

/// Particle `idx[j][k]` in lane `j` of the `k`-th vectors: the positions and the inverse masses
/// (kg⁻¹) of [`LANES`] constraints of `K` particles each ([`Positions::gather`]).
///
/// # Safety
/// Every index is in `x` and `w`, and no other thread writes these particles meanwhile.
#[inline(always)]
unsafe fn gather<P: Positions, const K: usize>(
    x: P,
    w: &[Real],
    idx: &[[usize; K]; LANES],
) -> ([V3; K], [Lanes; K]) {
    // SAFETY: the caller's contract.
    let pw: [(V3, Lanes); K] = from_fn(|k| unsafe { x.gather(from_fn(|j| idx[j][k]), w) });
    (from_fn(|k| pw[k].0), from_fn(|k| pw[k].1))
}

/// Adds lane `j` of `d[k]` to particle `idx[j][k]` for every lane `j` set in `moves`, and
/// sets those lanes' multipliers to `new_lambda`.
///
/// # Safety
/// Every index is in `x`, and no other thread uses these particles meanwhile.
#[inline(always)]
unsafe fn scatter<P: Positions, const K: usize>(
    x: P,
    idx: &[[usize; K]; LANES],
    d: [V3; K],
    moves: Lanes,
    new_lambda: Lanes,
    l: &mut [Real],
) {
    let lambda = new_lambda.to_array();
    let bits = moves.to_bitmask();
    for j in 0..LANES {
        if bits & (1 << j) != 0 {
            l[j] = lambda[j];
        }
    }
    // SAFETY: the caller's contract.
    unsafe { x.scatter(idx, d, bits) };
}

/// Where the lane kernels read and write the particles' positions: the solver's own `Vec3`s
/// (12 bytes each) with the inverse masses in a slice of their own, or a copy padded to 16
/// bytes (`Vec4`, the inverse mass in `w`) that [`LANES`] particles are read from with four
/// aligned loads and one 4 × 4 transpose instead of four scalar loads for every component and
/// the inverse mass, and updated with one read-modify-write each instead of three
/// ([`crate::solver::pipeline::project_pipelined`]). The arithmetic is the same, component by
/// component, so both give the same numbers, bit for bit.
pub(crate) trait Positions: Copy + Send + Sync {
    /// The position of particle `i`.
    ///
    /// # Safety
    /// `i` is in bounds, and no other thread writes particle `i` meanwhile.
    unsafe fn get(self, i: usize) -> Vec3;

    /// Adds `d` to the position of particle `i`.
    ///
    /// # Safety
    /// `i` is in bounds, and no other thread reads or writes particle `i` meanwhile.
    unsafe fn add(self, i: usize, d: Vec3);

    /// Particle `idx[j]` in lane `j`: its position, and its inverse mass (from `w`, the solver's
    /// inverse masses, kg⁻¹).
    ///
    /// # Safety
    /// As [`Self::get`], for every index.
    #[inline(always)]
    unsafe fn gather(self, idx: [usize; LANES], w: &[Real]) -> (V3, Lanes) {
        // SAFETY: the caller's contract.
        // (`from_fn`, not `map`: `map` was not inlined.)
        let p = V3::gather(from_fn(|j| unsafe { self.get(idx[j]) }));
        (p, Lanes::new(from_fn(|j| w[idx[j]])))
    }

    /// Adds lane `j` of `d[k]` to particle `idx[j][k]`, for every lane `j` set in `lanes`.
    ///
    /// # Safety
    /// As [`Self::add`], for every index of a lane set in `lanes`; those indices are distinct.
    #[inline(always)]
    unsafe fn scatter<const K: usize>(self, idx: &[[usize; K]; LANES], d: [V3; K], lanes: u32) {
        // Out of the vector registers once, into plain arrays indexed by lane (indexing the
        // vectors lane by lane spilled them again for every lane).
        let dx: [[Real; LANES]; K] = from_fn(|k| d[k].x.to_array());
        let dy: [[Real; LANES]; K] = from_fn(|k| d[k].y.to_array());
        let dz: [[Real; LANES]; K] = from_fn(|k| d[k].z.to_array());
        for j in 0..LANES {
            if lanes & (1 << j) == 0 {
                continue;
            }
            for k in 0..K {
                // SAFETY: the caller's contract.
                unsafe { self.add(idx[j][k], Vec3::new(dx[k][j], dy[k][j], dz[k][j])) };
            }
        }
    }
}

impl Positions for SharedSlice<'_, Vec3> {
    #[inline(always)]
    unsafe fn get(self, i: usize) -> Vec3 {
        // SAFETY: the caller's contract.
        unsafe { SharedSlice::get(self, i) }
    }

    #[inline(always)]
    unsafe fn add(self, i: usize, d: Vec3) {
        // SAFETY: the caller's contract.
        unsafe { SharedSlice::add(self, i, d) }
    }
}

// The padded positions are read and written as vectors of lanes.
const _: () = assert!(
    std::mem::size_of::<Vec4>() == std::mem::size_of::<f32x4>()
        && std::mem::align_of::<Vec4>() == std::mem::align_of::<f32x4>()
);

impl Positions for SharedSlice<'_, Vec4> {
    #[inline(always)]
    unsafe fn get(self, i: usize) -> Vec3 {
        // SAFETY: the caller's contract.
        unsafe { self.get_mut(i).truncate() }
    }

    #[inline(always)]
    unsafe fn add(self, i: usize, d: Vec3) {
        // SAFETY: the caller's contract.
        unsafe { *self.get_mut(i) += d.extend(0.0) }
    }

    /// The inverse mass is the fourth component of the padded position, not `w`'s.
    #[inline(always)]
    unsafe fn gather(self, idx: [usize; LANES], _w: &[Real]) -> (V3, Lanes) {
        // SAFETY: the caller's contract; a `Vec4` is four `f32`s, 16-byte aligned, as an
        // `f32x4` (checked above).
        let rows: [f32x4; LANES] =
            from_fn(|j| unsafe { *(self.get_mut(idx[j]) as *mut Vec4 as *const f32x4) });
        let [x, y, z, w] = f32x4::transpose(rows);
        (V3 { x, y, z }, w)
    }

    #[inline(always)]
    unsafe fn scatter<const K: usize>(self, idx: &[[usize; K]; LANES], d: [V3; K], lanes: u32) {
        let rows: [[f32x4; LANES]; K] =
            from_fn(|k| f32x4::transpose([d[k].x, d[k].y, d[k].z, f32x4::ZERO]));
        for j in 0..LANES {
            if lanes & (1 << j) == 0 {
                continue;
            }
            for k in 0..K {
                // SAFETY: as in `gather`.
                let p = unsafe { self.get_mut(idx[j][k]) } as *mut Vec4 as *mut f32x4;
                // SAFETY: as above.
                unsafe { *p += rows[k][j] };
            }
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

/// Projects `c` (one level's constraints, or a chunk of one) with its multipliers `l`.
pub(crate) fn shear_run<P: Positions>(
    x: P,
    w: &[Real],
    c: &[Shear],
    l: &mut [Real],
    h: Real,
) -> u64 {
    let mut degenerate = 0;
    let mut chunks = c.chunks_exact(LANES).zip(l.chunks_exact_mut(LANES));
    for (c, l) in &mut chunks {
        if c.iter().all(|c| c.strain == Strain::Shear) {
            degenerate += shear_lanes(x, w, c, l, h, ALL_LANES);
        } else {
            degenerate += c
                .iter()
                .zip(l)
                .map(|(c, l)| shear_one(x, w, c, l, h))
                .sum::<u64>();
        }
    }
    let done = c.len() - c.len() % LANES;
    let (c, l) = (&c[done..], &mut l[done..]);
    if c.iter().all(|c| c.strain == Strain::Shear) {
        return degenerate + padded(c, l, |c, l, live| shear_lanes(x, w, c, l, h, live));
    }
    let tail = c.iter().zip(l);
    degenerate + tail.map(|(c, l)| shear_one(x, w, c, l, h)).sum::<u64>()
}

/// A constraint of the kind that a lane kernel skips as degenerate: `c` with all its particles
/// made its first.
trait Pad: Copy {
    fn pad(self) -> Self;
}

impl Pad for Shear {
    fn pad(mut self) -> Self {
        self.particles = [self.particles[0]; 3];
        self
    }
}

impl Pad for Bend {
    fn pad(mut self) -> Self {
        self.particles = [self.particles[0]; 4];
        self
    }
}

impl Pad for Distance {
    fn pad(mut self) -> Self {
        self.particles = [self.particles[0]; 2];
        self
    }
}

/// Every lane live: the `live` mask of a full group of [`LANES`] constraints.
const ALL_LANES: u32 = (1 << LANES) - 1;

/// Runs the last `c.len() < LANES` constraints of a level through the lane kernel `lanes`,
/// the missing lanes filled with degenerate copies of the first ([`Pad`]): they read only its
/// particle and keep their multipliers out of `l`, and the kernel, told which lanes are live,
/// counts only those. A pad lane never moves: its stencil has no length or area (degenerate),
/// or, at a non-finite position, no finite denominator (rigid). A lane computes what the scalar
/// projection does (bit for bit), so this is the one-at-a-time tail, at the cost of one vector
/// step.
#[inline(always)]
fn padded<C: Pad, R: Default>(
    c: &[C],
    l: &mut [Real],
    lanes: impl FnOnce(&[C], &mut [Real], u32) -> R,
) -> R {
    let Some(&first) = c.first() else {
        return R::default();
    };
    let cs: [C; LANES] = from_fn(|j| c.get(j).copied().unwrap_or_else(|| first.pad()));
    let mut ls: [Real; LANES] = from_fn(|j| l.get(j).copied().unwrap_or(0.0));
    let counts = lanes(&cs, &mut ls, (1 << c.len()) - 1);
    l.copy_from_slice(&ls[..c.len()]);
    counts
}

/// One shear constraint by the scalar projection.
#[inline]
pub(crate) fn shear_one<P: Positions>(x: P, w: &[Real], c: &Shear, l: &mut Real, h: Real) -> u64 {
    let idx = c.particles.map(|i| i as usize);
    // SAFETY: the indices are in bounds (checked when the solver was built) and, within a
    // level, no other constraint touches these particles.
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
fn shear_lanes<P: Positions>(
    x: P,
    w: &[Real],
    c: &[Shear],
    l: &mut [Real],
    h: Real,
    live: u32,
) -> u64 {
    let idx: [[usize; 3]; LANES] = from_fn(|j| c[j].particles.map(|i| i as usize));
    // SAFETY (gathers and scatters): the indices are in bounds (checked when the solver was
    // built) and no two constraints of a level share a particle.
    let (p, ws) = unsafe { gather(x, w, &idx) };
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
    unsafe { scatter(x, &idx, d, moves, lambda + dl, l) };
    (degenerate.to_bitmask() & live).count_ones() as u64
}

/// As [`shear_run`], for bending.
pub(crate) fn bend_run<P: Positions>(x: P, w: &[Real], c: &[Bend], l: &mut [Real], h: Real) -> u64 {
    let mut degenerate = 0;
    let mut chunks = c.chunks_exact(LANES).zip(l.chunks_exact_mut(LANES));
    for (c, l) in &mut chunks {
        degenerate += bend_lanes(x, w, c, l, h, ALL_LANES);
    }
    let done = c.len() - c.len() % LANES;
    degenerate
        + padded(&c[done..], &mut l[done..], |c, l, live| {
            bend_lanes(x, w, c, l, h, live)
        })
}

/// One hinge by the scalar projection.
#[inline]
pub(crate) fn bend_one<P: Positions>(x: P, w: &[Real], c: &Bend, l: &mut Real, h: Real) -> u64 {
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
fn bend_lanes<P: Positions>(
    x: P,
    w: &[Real],
    c: &[Bend],
    l: &mut [Real],
    h: Real,
    live: u32,
) -> u64 {
    let s = Lanes::splat;
    let idx: [[usize; 4]; LANES] = from_fn(|j| c[j].particles.map(|i| i as usize));
    // SAFETY (gathers and scatters): as in `shear_lanes`.
    let (p, ws) = unsafe { gather(x, w, &idx) };
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
    unsafe { scatter(x, &idx, d, moves, lambda + dl, l) };
    (degenerate.to_bitmask() & live).count_ones() as u64
}

/// As [`shear_run`], for the stretch.
pub(crate) fn stretch_run<P: Positions>(
    x: P,
    w: &[Real],
    c: &[Distance],
    l: &mut [Real],
    h: Real,
    stretch: StretchPass,
) -> Counts {
    let mut counts = Counts::default();
    let mut chunks = c.chunks_exact(LANES).zip(l.chunks_exact_mut(LANES));
    for (c, l) in &mut chunks {
        counts = counts.merge(stretch_lanes(x, w, c, l, h, stretch, ALL_LANES));
    }
    let done = c.len() - c.len() % LANES;
    let tail = padded(&c[done..], &mut l[done..], |c, l, live| {
        stretch_lanes(x, w, c, l, h, stretch, live)
    });
    counts.merge(tail)
}

/// One edge by the scalar projection, as the solver's serial sweep does it.
#[inline]
pub(crate) fn stretch_one<P: Positions>(
    x: P,
    w: &[Real],
    c: &Distance,
    l: &mut Real,
    h: Real,
    stretch: StretchPass,
) -> Counts {
    let [a, b] = c.particles.map(|i| i as usize);
    let before = *l;
    // SAFETY: as in `shear_one`.
    let p = unsafe { [x.get(a), x.get(b)] };
    let mut counts = Counts::default();
    match solve_distance(p, [w[a], w[b]], c.rest_length_m, c.compliance_m_per_n, h, l) {
        Outcome::Move([da, db]) => {
            // SAFETY: as above.
            unsafe {
                x.add(a, da * stretch.omega);
                x.add(b, db * stretch.omega);
            }
            *l = before + (*l - before) * stretch.omega;
            if stretch.residual {
                let denom = w[a] + w[b] + c.compliance_m_per_n * stretch.inv_h2;
                counts.max_residual_m = (*l - before).abs() * denom;
            }
        }
        Outcome::Degenerate => counts.degenerate = 1,
        Outcome::Rigid => {}
    }
    counts
}

/// [`LANES`] edges at once: [`stretch_one`] in every lane.
#[inline(always)]
fn stretch_lanes<P: Positions>(
    x: P,
    w: &[Real],
    c: &[Distance],
    l: &mut [Real],
    h: Real,
    stretch: StretchPass,
    live: u32,
) -> Counts {
    let s = Lanes::splat;
    let idx: [[usize; 2]; LANES] = from_fn(|j| c[j].particles.map(|i| i as usize));
    // SAFETY (gathers and scatters): as in `shear_lanes`, within a level.
    let (p, ws) = unsafe { gather(x, w, &idx) };
    // `distance_and_gradient`.
    let d = p[0] - p[1];
    let len2 = d.dot(d);
    let degenerate = len2.simd_lt(s(DEGENERATE_LENGTH_SQ));
    let len = len2.sqrt();
    let n = d / len;
    let rest = Lanes::new(from_fn(|j| c[j].rest_length_m));
    let alpha = Lanes::new(from_fn(|j| c[j].compliance_m_per_n));
    let lambda = Lanes::new(from_fn(|j| l[j]));
    let (dl, moves) = step(len - rest, ws[0] + ws[1], alpha, h, lambda, degenerate);
    let omega = s(stretch.omega);
    let d = [n * (ws[0] * dl) * omega, n * (-ws[1] * dl) * omega];
    let new_lambda = lambda + ((lambda + dl) - lambda) * omega;
    // SAFETY: as above.
    unsafe { scatter(x, &idx, d, moves, new_lambda, l) };
    let mut counts = Counts::skipped((degenerate.to_bitmask() & live).count_ones() as u64);
    if stretch.residual {
        let denom = ws[0] + ws[1] + alpha * s(stretch.inv_h2);
        let r = ((new_lambda - lambda).abs() * denom).to_array();
        let bits = moves.to_bitmask();
        for (j, r) in r.into_iter().enumerate() {
            if bits & (1 << j) != 0 {
                counts.max_residual_m = counts.max_residual_m.max(r);
            }
        }
    }
    counts
}

/// [`LANES`] span limits at once: [`solve_span_limit`] in every lane.
#[inline(always)]
fn span_lanes<P: Positions>(x: P, w: &[Real], c: &[SpanLimit], l: &mut [Real]) {
    let s = Lanes::splat;
    let idx: [[usize; 2]; LANES] = from_fn(|j| c[j].particles.map(|i| i as usize));
    // SAFETY (gathers and scatters): as in `shear_lanes`, within a level.
    let (p, ws) = unsafe { gather(x, w, &idx) };
    let d = p[0] - p[1];
    let len2 = d.dot(d);
    // Coincident particles are within any limit (the scalar function moves them by zero).
    let coincident = len2.simd_lt(s(DEGENERATE_LENGTH_SQ));
    let len = len2.sqrt();
    let n = d / len;
    let c_value = len - Lanes::new(from_fn(|j| c[j].max_length_m));
    let lambda = Lanes::new(from_fn(|j| l[j]));
    // Slack and never pulled: moved by zero as well.
    let slack = c_value.simd_le(s(0.0)) & lambda.simd_eq(s(0.0));
    let denom = ws[0] + ws[1] + s(0.0);
    let rigid = denom.simd_le(s(0.0)) | !denom.is_finite();
    let dl = (-c_value - s(0.0) * lambda) / denom;
    let new_lambda = (lambda + dl).min(s(0.0));
    let dl = new_lambda - lambda;
    let still = coincident | slack;
    let active = !(still | rigid);
    let zero = s(0.0);
    let d = [n * (ws[0] * dl), n * (-ws[1] * dl)].map(|v| V3 {
        x: active.select(v.x, zero),
        y: active.select(v.y, zero),
        z: active.select(v.z, zero),
    });
    // The scalar function adds its zero moves too; only the rigid lanes move nothing.
    let moves = !rigid | still;
    // SAFETY: as above.
    unsafe { scatter(x, &idx, d, moves, active.select(new_lambda, lambda), l) };
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

    /// The scalar bending sweep in the list's order (backward when `reverse`), for reference.
    fn scalar_bend(
        x: &mut [Vec3],
        w: &[Real],
        bend: &[Bend],
        l: &mut [Real],
        h: f32,
        reverse: bool,
    ) {
        let order: Vec<usize> = if reverse {
            (0..bend.len()).rev().collect()
        } else {
            (0..bend.len()).collect()
        };
        for i in order {
            let c = &bend[i];
            let idx = c.particles.map(|i| i as usize);
            let p = idx.map(|i| x[i]);
            let ws = idx.map(|i| w[i]);
            if let Outcome::Move(d) =
                solve_bend(p, ws, c.rest_angle_rad, c.compliance_per_n_m, h, &mut l[i])
            {
                for k in 0..4 {
                    x[idx[k]] += d[k];
                }
            }
        }
    }

    /// `sorted`'s multipliers in `list`'s order (matched by particles).
    fn unsort<T>(list: &[T], sorted: &[T], l: &[Real], key: impl Fn(&T) -> Vec<u32>) -> Vec<Real> {
        let at: std::collections::HashMap<Vec<u32>, Real> =
            sorted.iter().zip(l).map(|(c, &l)| (key(c), l)).collect();
        list.iter().map(|c| at[&key(c)]).collect()
    }

    fn pass(reverse: bool, parallel: bool) -> Pass {
        Pass {
            h: 1.0 / 240.0,
            reverse,
            parallel,
        }
    }

    #[test]
    fn vector_bending_is_the_serial_sweep_bit_for_bit() {
        let n = 12;
        let (rest, x0, w) = crumpled(n);
        let bend = hinges(&grid_triangles(n), &rest);
        let (mut xs, mut ls) = (x0.clone(), vec![0.01; bend.len()]);
        let mut sorted = bend.clone();
        let levels = Levels::new(&mut sorted, |c| c.particles, x0.len());
        // Some levels fill the lanes; the rest go through the scalar tail.
        let widest = levels
            .offsets
            .windows(2)
            .map(|o| o[1] - o[0])
            .max()
            .unwrap();
        assert!(levels.count() > 1 && widest >= LANES, "{levels:?}");
        let (mut xv, mut lv) = (x0.clone(), vec![0.01; bend.len()]);
        for reverse in [false, true, false] {
            scalar_bend(&mut xs, &w, &bend, &mut ls, 1.0 / 240.0, reverse);
            let xvs = SharedSlice::new(&mut xv);
            let c = project_bend(xvs, &w, &sorted, &mut lv, &levels, pass(reverse, false));
            assert_eq!(c.degenerate, 0);
        }
        assert!(xs != x0, "the sweep moved nothing");
        assert_eq!(xs, xv);
        assert_eq!(ls, unsort(&bend, &sorted, &lv, |c| c.particles.to_vec()));
    }

    #[test]
    fn colours_are_the_serial_sweep_of_the_colour_sorted_list() {
        // A colour's constraints share no particle, so projecting the colours in turn is the
        // serial sweep over the list as the colours sorted it (not over the original order).
        let n = 12;
        let (rest, x0, w) = crumpled(n);
        let mut sorted = hinges(&grid_triangles(n), &rest);
        let colours = Levels::colours(&mut sorted, |c| c.particles, x0.len());
        assert!(colours.count() > 1 && colours.count() < sorted.len() / LANES);
        let (mut xs, mut ls) = (x0.clone(), vec![0.01; sorted.len()]);
        let (mut xv, mut lv) = (x0.clone(), ls.clone());
        for reverse in [false, true] {
            scalar_bend(&mut xs, &w, &sorted, &mut ls, 1.0 / 240.0, reverse);
            let xvs = SharedSlice::new(&mut xv);
            project_bend(xvs, &w, &sorted, &mut lv, &colours, pass(reverse, false));
        }
        assert!(xs != x0, "the sweep moved nothing");
        assert_eq!(xs, xv);
        assert_eq!(ls, lv);
    }

    #[test]
    fn vector_shear_is_the_serial_sweep_bit_for_bit() {
        let n = 12;
        let (rest, x0, w) = crumpled(n);
        // Shear rows, and on every third triangle its warp and weft rows too (the membrane per
        // triangle), which the lanes leave to the scalar projection.
        let mut shear = Vec::new();
        for (k, t) in grid_triangles(n).iter().enumerate() {
            let rest_inverse =
                crate::constraints::shear_rest_inverse(t.map(|i| rest[i as usize]), Vec3::X)
                    .unwrap();
            let strains: &[Strain] = if k % 3 == 0 {
                &[Strain::Shear, Strain::Warp, Strain::Weft]
            } else {
                &[Strain::Shear]
            };
            for &strain in strains {
                shear.push(Shear {
                    particles: *t,
                    rest_inverse,
                    compliance_per_n_m: 1.0e-4 * (1 + k % 3) as Real,
                    strain,
                });
            }
        }
        let h = 1.0 / 240.0;
        let (mut xs, mut ls) = (x0.clone(), vec![0.0; shear.len()]);
        let mut sorted = shear.clone();
        let levels = Levels::new(&mut sorted, |c| c.particles, x0.len());
        let (mut xv, mut lv) = (x0.clone(), ls.clone());
        for reverse in [false, true] {
            let order: Vec<usize> = if reverse {
                (0..shear.len()).rev().collect()
            } else {
                (0..shear.len()).collect()
            };
            for i in order {
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
            let xvs = SharedSlice::new(&mut xv);
            project_shear(xvs, &w, &sorted, &mut lv, &levels, pass(reverse, false));
        }
        assert!(xs != x0, "the sweep moved nothing");
        assert_eq!(xs, xv);
        let key = |c: &Shear| [c.particles.to_vec(), vec![c.strain as u32]].concat();
        assert_eq!(ls, unsort(&shear, &sorted, &lv, key));
    }

    #[test]
    fn degenerate_lanes_are_counted_and_left_alone() {
        let n = 12;
        let (rest, mut x, mut w) = crumpled(n);
        let bend = hinges(&grid_triangles(n), &rest);
        // Collapse one interior vertex onto its neighbour, both pinned so that no projection
        // separates them: the hinges around the zero-length edge and the zero-area triangles
        // are skipped, in lanes and in the scalar tail alike.
        x[5 * n + 5] = x[5 * n + 6];
        w[5 * n + 5] = 0.0;
        w[5 * n + 6] = 0.0;
        let expected = (bend.iter())
            .filter(|c| dihedral_angle_and_gradient(c.particles.map(|i| x[i as usize])).is_none())
            .count() as u64;
        assert!(expected > 0);
        let (mut xs, mut ls) = (x.clone(), vec![0.0; bend.len()]);
        scalar_bend(&mut xs, &w, &bend, &mut ls, 1.0 / 240.0, false);
        let mut sorted = bend.clone();
        let levels = Levels::new(&mut sorted, |c| c.particles, x.len());
        let mut lv = vec![0.0; bend.len()];
        let c = project_bend(
            SharedSlice::new(&mut x),
            &w,
            &sorted,
            &mut lv,
            &levels,
            pass(false, false),
        );
        assert_eq!(c.degenerate, expected);
        assert_eq!(x, xs);
        assert!(x.iter().all(|p| p.is_finite()));
    }

    #[test]
    fn a_split_level_gives_each_thread_one_even_task() {
        // 2,507 hinges on 2 threads: two tasks, 1,256 and 1,251.
        assert_eq!(task_size(2507, 2), 1256);
        assert_eq!(2507usize.div_ceil(task_size(2507, 2)), 2);
        // Never under MIN_TASK, always whole lanes.
        assert_eq!(task_size(600, 16), 256);
        assert_eq!(task_size(1030, 4) % LANES, 0);
        assert_eq!(task_size(1000, 0), 1000);
    }

    #[test]
    fn a_level_split_among_threads_gives_the_serial_result() {
        // 6,000 edges that share no particle: one level, split among the threads.
        let m = 6000;
        let x0: Vec<Vec3> = (0..2 * m)
            .map(|i| {
                Vec3::new(
                    i as Real * 0.01,
                    (i % 7) as Real * 0.003,
                    (i % 2) as Real * 0.02,
                )
            })
            .collect();
        let w = vec![1.0; 2 * m];
        let mut edges: Vec<Distance> = (0..m as u32)
            .map(|k| Distance {
                particles: [2 * k, 2 * k + 1],
                rest_length_m: 0.015,
                compliance_m_per_n: 1.0e-7,
            })
            .collect();
        let levels = Levels::new(&mut edges, |c| c.particles, x0.len());
        assert_eq!(levels.count(), 1);
        assert!(m >= 2 * MIN_TASK);
        let stretch = StretchPass {
            omega: 1.0,
            inv_h2: 240.0 * 240.0,
            residual: true,
        };
        let run = |parallel: bool| {
            let (mut x, mut l) = (x0.clone(), vec![0.0; m]);
            let xs = SharedSlice::new(&mut x);
            let c = project_stretch(
                xs,
                &w,
                &edges,
                &mut l,
                &levels,
                pass(false, parallel),
                stretch,
            );
            (x, l, c)
        };
        let serial = run(false);
        assert!(serial.0 != x0, "the sweep moved nothing");
        // In pools of 1, 2 and 3 threads (one, two and three tasks), whatever the machine has.
        for threads in 1..=3 {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("thread pool");
            assert_eq!(serial, pool.install(|| run(true)), "{threads} threads");
        }
    }

    /// The grid's edges in the mesh's order (each triangle's three, first seen first).
    #[test]
    fn short_runs_in_padded_lanes_are_the_scalar_projection_bit_for_bit() {
        // Runs of 1, 2 and 3 constraints (a level's tail) that share no particle, with one
        // degenerate edge (its particles coincide) among the stretch: the padded lanes give the
        // scalar projections' positions and multipliers, and count only the real degenerate one.
        let n = 12;
        let (rest, x, w) = crumpled(n);
        let tris = grid_triangles(n);
        let bend = hinges(&tris, &rest);
        let edges = grid_edges(&tris, &rest);
        let far = |all: &[[u32; 4]], count: usize| -> Vec<usize> {
            let mut picked: Vec<usize> = Vec::new();
            for (k, p) in all.iter().enumerate() {
                let shares = |q: usize| all[q].iter().any(|i| p.contains(i));
                if picked.len() < count && !picked.iter().any(|&q| shares(q)) {
                    picked.push(k);
                }
            }
            picked
        };
        let h = 1.0 / 240.0;
        let stencils: Vec<[u32; 4]> = bend.iter().map(|c| c.particles).collect();
        for count in 1..LANES {
            let run: Vec<Bend> = far(&stencils, count).iter().map(|&k| bend[k]).collect();
            assert_eq!(run.len(), count);
            let (mut xs, mut ls) = (x.clone(), vec![0.25; count]);
            for (c, l) in run.iter().zip(&mut ls) {
                bend_one(SharedSlice::new(&mut xs), &w, c, l, h);
            }
            let (mut xv, mut lv) = (x.clone(), vec![0.25; count]);
            let skipped = bend_run(SharedSlice::new(&mut xv), &w, &run, &mut lv, h);
            assert_eq!((skipped, &xv, &lv), (0, &xs, &ls), "{count} hinges");
            // With the first particle at NaN (a substep about to be rolled back) the pad lanes
            // are not degenerate but rigid: they still count nothing and move nothing.
            let mut xn = x.clone();
            xn[run[0].particles[0] as usize] = Vec3::NAN;
            let mut ln = vec![0.25; count];
            let skipped = bend_run(SharedSlice::new(&mut xn), &w, &run, &mut ln, h);
            assert_eq!(skipped, 0, "{count} hinges, one at NaN");
            let moved = (0..x.len()).filter(|&i| xn[i] != x[i] && xn[i].is_finite());
            assert!(
                moved.count() <= 4 * (count - 1),
                "{count} hinges, one at NaN"
            );
        }
        let stencils: Vec<[u32; 4]> = (edges.iter())
            .map(|c| {
                [
                    c.particles[0],
                    c.particles[1],
                    c.particles[1],
                    c.particles[1],
                ]
            })
            .collect();
        let relax = StretchPass {
            omega: 1.5,
            inv_h2: 1.0 / (h * h),
            residual: true,
        };
        for count in 1..LANES {
            let run: Vec<Distance> = far(&stencils, count).iter().map(|&k| edges[k]).collect();
            let last = run[count - 1].particles;
            let mut x = x.clone();
            x[last[1] as usize] = x[last[0] as usize];
            let (mut xs, mut ls) = (x.clone(), vec![0.0; count]);
            let mut expected = Counts::default();
            for (c, l) in run.iter().zip(&mut ls) {
                let one = stretch_one(SharedSlice::new(&mut xs), &w, c, l, h, relax);
                expected = expected.merge(one);
            }
            let (mut xv, mut lv) = (x.clone(), vec![0.0; count]);
            let got = stretch_run(SharedSlice::new(&mut xv), &w, &run, &mut lv, h, relax);
            assert_eq!(expected.degenerate, 1);
            assert_eq!((got, &xv, &lv), (expected, &xs, &ls), "{count} edges");
        }
    }

    fn grid_edges(tris: &[[u32; 3]], rest: &[Vec3]) -> Vec<Distance> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for t in tris {
            for k in 0..3 {
                let (a, b) = (t[k], t[(k + 1) % 3]);
                if seen.insert([a.min(b), a.max(b)]) {
                    out.push(Distance {
                        particles: [a, b],
                        rest_length_m: rest[a as usize].distance(rest[b as usize]),
                        compliance_m_per_n: 1.0e-6 * (out.len() % 3) as Real,
                    });
                }
            }
        }
        out
    }

    #[test]
    fn levels_keep_the_serial_order_of_each_particle() {
        let n = 12;
        let (rest, _, _) = crumpled(n);
        let edges = grid_edges(&grid_triangles(n), &rest);
        let mut sorted = edges.clone();
        let levels = Levels::new(&mut sorted, |c| c.particles, n * n);
        assert!(levels.count() > 1 && levels.count() < edges.len() / LANES);
        // Same constraints; each particle meets its constraints in the list's order; and no
        // two constraints of a level share a particle.
        let pos = |c: &Distance| {
            edges
                .iter()
                .position(|e| e.particles == c.particles)
                .unwrap()
        };
        let mut last_seen = vec![None; n * n];
        for k in 0..levels.count() {
            let mut used = std::collections::HashSet::new();
            for c in &sorted[levels.offsets[k]..levels.offsets[k + 1]] {
                let i = pos(c);
                for p in c.particles {
                    assert!(used.insert(p), "level {k} shares particle {p}");
                    let before = last_seen[p as usize].replace(i);
                    assert!(
                        before.is_none_or(|b| b < i),
                        "particle {p}: {before:?} after {i}"
                    );
                }
            }
        }
        assert_eq!(sorted.len(), edges.len());
    }

    /// A skirt's ring mesh chains its edges in the mesh's order (no room for levels); in layers
    /// from the waistband, coloured along each ring, the same edges fall into wide levels whose
    /// projection is the serial sweep of the layered list, bit for bit, and whose forward sweep
    /// meets the rings from the waistband down.
    #[test]
    fn layers_give_a_ring_mesh_wide_levels_that_sweep_from_the_load() {
        let skirt = crate::mesh::shapes::skirt(&crate::mesh::shapes::SkirtParams {
            rings: 16,
            segments: 48,
            ..Default::default()
        });
        let (rest, tris) = (&skirt.mesh.positions, &skirt.mesh.indices);
        let n = rest.len();
        let edges = grid_edges(tris, rest);
        let mut in_order = edges.clone();
        let narrow = Levels::new(&mut in_order, |c| c.particles, n);
        assert!(
            narrow.count() * MIN_LEVEL_WIDTH > edges.len(),
            "{}",
            narrow.count()
        );

        let pairs: Vec<[u32; 2]> = edges.iter().map(|c| c.particles).collect();
        let layer = particle_layers(&pairs, &skirt.pinned, n);
        assert!(skirt.pinned.iter().all(|&p| layer[p as usize] == 0));
        assert_eq!(layer.iter().max(), Some(&15), "one layer per ring");
        let mut sorted = edges.clone();
        let levels = Levels::layered(&mut sorted, |c| c.particles, n, &layer);
        assert!(
            levels.count() * MIN_LEVEL_WIDTH <= edges.len(),
            "{} levels for {} edges",
            levels.count(),
            edges.len()
        );
        let mut keys: Vec<[u32; 2]> = sorted.iter().map(|c| c.particles).collect();
        keys.sort_unstable();
        let mut want = pairs.clone();
        want.sort_unstable();
        assert_eq!(keys, want, "the same edges");
        // Levels share no particle, and the forward sweep's layers never go back up by more
        // than the colouring within a ring allows (one ring).
        let edge_layer = |c: &Distance| c.particles.map(|p| layer[p as usize]).into_iter().min();
        let mut deepest = 0;
        for k in 0..levels.count() {
            let mut used = std::collections::HashSet::new();
            for c in &sorted[levels.offsets[k]..levels.offsets[k + 1]] {
                assert!(c.particles.iter().all(|&p| used.insert(p)), "level {k}");
                let l = edge_layer(c).unwrap();
                assert!(l + 1 >= deepest, "level {k}: layer {l} after {deepest}");
                deepest = deepest.max(l);
            }
        }
        // The levelled projection is the serial sweep of the layered list.
        let x0: Vec<Vec3> = (rest.iter().enumerate())
            .map(|(i, p)| *p * (1.0 + 0.01 * (i % 7) as Real) + Vec3::Y * 0.001 * (i % 3) as Real)
            .collect();
        let w: Vec<Real> = (0..n)
            .map(|i| if layer[i] == 0 { 0.0 } else { 1.0 })
            .collect();
        let h = 1.0 / 240.0;
        let stretch = StretchPass {
            omega: 1.0,
            inv_h2: 1.0 / (h * h),
            residual: false,
        };
        let (mut xs, mut ls) = (x0.clone(), vec![0.0; sorted.len()]);
        let (mut xv, mut lv) = (x0.clone(), ls.clone());
        for reverse in [false, true] {
            let xss = SharedSlice::new(&mut xs);
            let order: Vec<usize> = if reverse {
                (0..sorted.len()).rev().collect()
            } else {
                (0..sorted.len()).collect()
            };
            for i in order {
                stretch_one(xss, &w, &sorted[i], &mut ls[i], h, stretch);
            }
            let pass = Pass {
                h,
                reverse,
                parallel: false,
            };
            let xvs = SharedSlice::new(&mut xv);
            project_stretch(xvs, &w, &sorted, &mut lv, &levels, pass, stretch);
        }
        assert!(xs != x0, "the sweep moved nothing");
        assert_eq!(xs, xv);
        assert_eq!(ls, lv);
    }

    #[test]
    fn levelled_stretch_and_span_limits_are_the_serial_sweep_bit_for_bit() {
        let n = 12;
        let (rest, x0, w) = crumpled(n);
        let edges = grid_edges(&grid_triangles(n), &rest);
        let h = 1.0 / 240.0;
        let stretch = StretchPass {
            omega: 1.5,
            inv_h2: 1.0 / (h * h),
            residual: true,
        };
        // The serial sweep in the list's order, forward then backward.
        let (mut xs, mut ls) = (x0.clone(), vec![0.0; edges.len()]);
        let mut serial_residual: Real = 0.0;
        let xss = SharedSlice::new(&mut xs);
        for reverse in [false, true] {
            let order: Vec<usize> = if reverse {
                (0..edges.len()).rev().collect()
            } else {
                (0..edges.len()).collect()
            };
            for i in order {
                let c = stretch_one(xss, &w, &edges[i], &mut ls[i], h, stretch);
                serial_residual = serial_residual.max(c.max_residual_m);
            }
        }
        let mut sorted = edges.clone();
        let levels = Levels::new(&mut sorted, |c| c.particles, x0.len());
        let (mut xv, mut lv) = (x0.clone(), vec![0.0; edges.len()]);
        let mut residual: Real = 0.0;
        for reverse in [false, true] {
            let pass = Pass {
                h,
                reverse,
                parallel: false,
            };
            let xvs = SharedSlice::new(&mut xv);
            let c = project_stretch(xvs, &w, &sorted, &mut lv, &levels, pass, stretch);
            residual = residual.max(c.max_residual_m);
        }
        assert!(xs != x0, "the sweep moved nothing");
        assert_eq!(xs, xv);
        assert!(serial_residual > 0.0);
        assert_eq!(serial_residual, residual);
        // The multipliers, matched by edge.
        for (c, l) in sorted.iter().zip(&lv) {
            let i = edges
                .iter()
                .position(|e| e.particles == c.particles)
                .unwrap();
            assert_eq!(ls[i], *l);
        }

        // Span limits: every vertex to the ones two and three columns on, shortened so most
        // of them pull.
        let limits: Vec<SpanLimit> = (0..x0.len())
            .flat_map(|i| [2usize, 3].map(move |k| (i, i + k)))
            .filter(|&(i, j)| j < x0.len() && i / n == j / n)
            .map(|(i, j)| SpanLimit {
                particles: [i as u32, j as u32],
                max_length_m: 0.97 * rest[i].distance(rest[j]),
            })
            .collect();
        let (mut xs, mut ls) = (x0.clone(), vec![0.0; limits.len()]);
        for reverse in [false, true] {
            let order: Vec<usize> = if reverse {
                (0..limits.len()).rev().collect()
            } else {
                (0..limits.len()).collect()
            };
            for i in order {
                let [a, b] = limits[i].particles.map(|p| p as usize);
                let m = limits[i].max_length_m;
                if let Outcome::Move([da, db]) =
                    solve_span_limit([xs[a], xs[b]], [w[a], w[b]], m, &mut ls[i])
                {
                    xs[a] += da;
                    xs[b] += db;
                }
            }
        }
        let mut sorted = limits.clone();
        let levels = Levels::new(&mut sorted, |c| c.particles, x0.len());
        let (mut xv, mut lv) = (x0.clone(), vec![0.0; limits.len()]);
        for reverse in [false, true] {
            let pass = Pass {
                h,
                reverse,
                parallel: false,
            };
            project_span_limits(
                SharedSlice::new(&mut xv),
                &w,
                &sorted,
                &mut lv,
                &levels,
                pass,
            );
        }
        assert!(ls.iter().any(|&l| l < 0.0), "no limit pulled");
        assert_eq!(xs, xv);
    }

    #[test]
    fn padded_positions_give_the_same_sweeps_bit_for_bit() {
        let n = 12;
        let (rest, x0, w) = crumpled(n);
        let h = 1.0 / 240.0;
        let tris = grid_triangles(n);
        let mut edges = grid_edges(&tris, &rest);
        let mut bend = hinges(&tris, &rest);
        let mut shear: Vec<Shear> = (tris.iter())
            .map(|t| Shear {
                particles: *t,
                rest_inverse: crate::constraints::shear_rest_inverse(
                    t.map(|i| rest[i as usize]),
                    Vec3::X,
                )
                .unwrap(),
                compliance_per_n_m: 1e-6,
                strain: Strain::Shear,
            })
            .collect();
        let mut limits: Vec<SpanLimit> = (0..x0.len() - 2)
            .filter(|&i| i / n == (i + 2) / n)
            .map(|i| SpanLimit {
                particles: [i as u32, i as u32 + 2],
                max_length_m: 0.97 * rest[i].distance(rest[i + 2]),
            })
            .collect();
        let se = Levels::new(&mut edges, |c| c.particles, x0.len());
        let ss = Levels::new(&mut shear, |c| c.particles, x0.len());
        let sb = Levels::new(&mut bend, |c| c.particles, x0.len());
        let sl = Levels::new(&mut limits, |c| c.particles, x0.len());
        let relax = StretchPass {
            omega: 1.5,
            inv_h2: 1.0 / (h * h),
            residual: true,
        };
        // The four kinds in turn, forward then backward, as the solver sweeps them.
        fn run<P: Positions>(
            x: P,
            w: &[Real],
            lists: (&[Distance], &[Shear], &[Bend], &[SpanLimit]),
            levels: [&Levels; 4],
            l: &mut [Vec<Real>; 4],
            h: Real,
            relax: StretchPass,
        ) -> Real {
            let mut residual: Real = 0.0;
            for reverse in [false, true] {
                let pass = Pass {
                    h,
                    reverse,
                    parallel: false,
                };
                project_span_limits(x, w, lists.3, &mut l[3], levels[3], pass);
                let c = project_stretch(x, w, lists.0, &mut l[0], levels[0], pass, relax);
                residual = residual.max(c.max_residual_m);
                project_shear(x, w, lists.1, &mut l[1], levels[1], pass);
                project_bend(x, w, lists.2, &mut l[2], levels[2], pass);
            }
            residual
        }
        let lists = (&edges[..], &shear[..], &bend[..], &limits[..]);
        let zeros = || [edges.len(), shear.len(), bend.len(), limits.len()].map(|k| vec![0.0; k]);
        let (mut x3, mut l3) = (x0.clone(), zeros());
        let levels = [&se, &ss, &sb, &sl];
        let r3 = run(
            SharedSlice::new(&mut x3),
            &w,
            lists,
            levels,
            &mut l3,
            h,
            relax,
        );
        let (mut x4, mut l4) = (vec![Vec4::ZERO; x0.len()], zeros());
        pad_positions(&mut x4, &x0, &w);
        let r4 = run(
            SharedSlice::new(&mut x4),
            &w,
            lists,
            levels,
            &mut l4,
            h,
            relax,
        );
        // The inverse masses ride along untouched.
        assert!(x4.iter().zip(&w).all(|(p, &w)| p.w == w));
        let mut xv = x0.clone();
        unpad_positions(&mut xv, &x4);
        assert!(x3 != x0, "the sweeps moved nothing");
        assert_eq!(x3, xv);
        assert!(
            l3.iter().all(|l| l.iter().any(|&l| l != 0.0)),
            "a kind did nothing"
        );
        assert_eq!(l3, l4);
        assert!(r3 > 0.0);
        assert_eq!(r3, r4);
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
