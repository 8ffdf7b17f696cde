//! Batches of constraints that share no particle, and the shared view of the particle
//! positions that lets the constraints of one batch be projected in parallel.
//!
//! # Parts and a coloured cut
//!
//! Gauss–Seidel projects one constraint after another, each seeing the corrections of those
//! before it. Two constraints that share no particle commute: projecting them in either order,
//! or at the same time, gives the same positions. The solver's batches ([`Batching`]):
//!
//! 1. **Parts.** The particles are split into [`PARTS`] slabs of equal count along the longest
//!    axis of the rest shape. A constraint whose particles all lie in one slab belongs to that
//!    slab's part; the parts share no particle, so they run in parallel, and each runs its
//!    constraints serially in the mesh's own order.
//! 2. **The cut.** The constraints that span two slabs (a few rows of them per slab boundary)
//!    are coloured: no two constraints of one colour share a particle. They run after the parts,
//!    colour by colour, each colour in parallel when it is large enough to pay.
//!
//! A backward sweep runs the cut's colours in reverse, then the parts, each part backward, so a
//! forward and a backward sweep still make a symmetric Gauss–Seidel pass.
//!
//! # What it costs: the order
//!
//! Batches are Gauss–Seidel in another order, and with one or two sweeps per substep the order
//! decides how far a load travels through the cloth in one sweep. The mesh's own order (the rows
//! of a grid) carries a correction along a whole chain of edges in one sweep; a colouring
//! carries it one edge per colour, and the parts cut the chains at every slab boundary. On the
//! standard scene (N = 32, 10 substeps, 24 frames) the serial sweep leaves 7.6 % stretch, a full
//! colouring 17.7 %, these parts 29 % (two parts split by index: 27 %; projecting the cut four
//! times per sweep: 24–29 %); at 20 substeps 3.8 % against 11.3 %, at 40 substeps 1.7 % against
//! 3.4 %. So the batched projection is off by default
//! ([`crate::solver::SolverSettings::parallel_projection`]): on two cores it cannot buy back with
//! speed the substeps its order costs. docs/solver.md has the figures and what to try next.
//!
//! The result does not depend on how many threads run it or how rayon schedules them: every
//! position and multiplier is written by one constraint at a time within a batch, the batches
//! are fixed by the rest shape alone, and the reductions (counts, a maximum) are exact.
//!
//! # The greedy colouring
//!
//! ```text
//! for c = 0, 1, …  while constraints remain:
//!     for each remaining constraint k, in the mesh's order:
//!         if none of k's particles is marked with c: give k colour c, mark its particles with c
//! ```
//!
//! Each pass over the remaining constraints takes a maximal independent set, so the first
//! colours are large and the count stays near the largest number of constraints on one particle
//! (plus a few): on a regular triangle grid, where a vertex is on 6 edges, 6 triangles and 12
//! hinges, greedy needs 8 colours for the edges, 8 for the triangles and 18 for the hinges.
//! Batches are built once per solver, never in the substep loop.

use std::marker::PhantomData;

use crate::math::{Real, Vec3};

/// A colouring: the constraint order that groups each colour together, and where each colour
/// starts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coloring {
    /// Constraint indices (into the original list), colour by colour, each colour in the
    /// original order.
    pub order: Vec<u32>,
    /// `offsets[c]..offsets[c + 1]` is colour `c`'s range in `order`; `offsets[0] = 0` and the
    /// last entry is the constraint count.
    pub offsets: Vec<usize>,
}

impl Coloring {
    /// Colours constraints given by their particle indices (each `< particle_count`).
    ///
    /// A constraint whose particles repeat (a degenerate stencil) is still coloured; it only
    /// needs its own particles to be free of other constraints of its colour.
    pub fn greedy<const K: usize>(constraints: &[[u32; K]], particle_count: usize) -> Self {
        let mut remaining: Vec<u32> = (0..constraints.len() as u32).collect();
        let mut mark = vec![u32::MAX; particle_count];
        let mut order = Vec::with_capacity(constraints.len());
        let mut offsets = vec![0];
        let mut colour = 0u32;
        while !remaining.is_empty() {
            let mut next = Vec::new();
            for &k in &remaining {
                let stencil = &constraints[k as usize];
                if stencil.iter().any(|&p| mark[p as usize] == colour) {
                    next.push(k);
                } else {
                    for &p in stencil {
                        mark[p as usize] = colour;
                    }
                    order.push(k);
                }
            }
            offsets.push(order.len());
            remaining = next;
            colour += 1;
        }
        Self { order, offsets }
    }

    /// Number of colours.
    pub fn colours(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Reorders `items` (indexed like the coloured constraints) into the coloured order.
    pub fn apply<T: Copy>(&self, items: &[T]) -> Vec<T> {
        permute(&self.order, items)
    }

    /// Whether no two constraints of one colour share a particle (for tests and debug checks).
    pub fn is_valid<const K: usize>(
        &self,
        constraints: &[[u32; K]],
        particle_count: usize,
    ) -> bool {
        let mut mark = vec![usize::MAX; particle_count];
        for c in 0..self.colours() {
            for &k in &self.order[self.offsets[c]..self.offsets[c + 1]] {
                let stencil = &constraints[k as usize];
                for (j, &p) in stencil.iter().enumerate() {
                    // A particle repeated inside one stencil is the same constraint's business.
                    if mark[p as usize] == c && !stencil[..j].contains(&p) {
                        return false;
                    }
                    mark[p as usize] = c;
                }
            }
        }
        is_permutation(&self.order, constraints.len())
    }
}

/// `items` in the order of the indices `order`.
fn permute<T: Copy>(order: &[u32], items: &[T]) -> Vec<T> {
    order.iter().map(|&k| items[k as usize]).collect()
}

/// Whether `order` holds each of `0..n` exactly once.
fn is_permutation(order: &[u32], n: usize) -> bool {
    let mut seen = vec![false; n];
    order.len() == n
        && order.iter().all(|&k| {
            seen.get_mut(k as usize)
                .is_some_and(|s| !std::mem::replace(s, true))
        })
}

/// Number of slabs the particles are split into (fixed, so the batches, and with them the
/// result, do not depend on the thread count). Eight keep two to eight cores busy while the cut
/// between them stays a small share of the constraints.
pub const PARTS: usize = 8;

/// The part (slab) of each particle: [`PARTS`] slabs of equal particle count along the longest
/// axis of `rest`'s bounding box (ties broken by index, so the split is deterministic).
pub fn slabs(rest: &[Vec3]) -> Vec<u8> {
    slabs_of(rest, PARTS)
}

/// As [`slabs`], with `parts` slabs (1 to 256).
pub(crate) fn slabs_of(rest: &[Vec3], parts: usize) -> Vec<u8> {
    let n = rest.len();
    if n == 0 {
        return Vec::new();
    }
    let (lo, hi) = rest.iter().fold(
        (Vec3::splat(Real::INFINITY), Vec3::splat(Real::NEG_INFINITY)),
        |(lo, hi), p| (lo.min(*p), hi.max(*p)),
    );
    let extent = hi - lo;
    let axis = if extent.x >= extent.y && extent.x >= extent.z {
        0
    } else if extent.y >= extent.z {
        1
    } else {
        2
    };
    let mut by_axis: Vec<u32> = (0..n as u32).collect();
    by_axis.sort_by(|&a, &b| {
        let (pa, pb) = (rest[a as usize][axis], rest[b as usize][axis]);
        pa.total_cmp(&pb).then(a.cmp(&b))
    });
    let mut part = vec![0u8; n];
    for (rank, &i) in by_axis.iter().enumerate() {
        part[i as usize] = (rank * parts / n) as u8;
    }
    part
}

/// One constraint kind's batches: [`PARTS`] parts, then the coloured cut (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Batching {
    /// Constraint indices (into the original list) in batch order: part 0, …, the last part,
    /// then the cut colour by colour; within each batch, the original order.
    pub order: Vec<u32>,
    /// `parts[k]..parts[k + 1]` is part `k`'s range in `order` (`PARTS + 1` entries).
    pub parts: Vec<usize>,
    /// `cut[c]..cut[c + 1]` is the cut's colour `c` in `order`; `cut[0]` = `parts[PARTS]`, the
    /// last entry the constraint count.
    pub cut: Vec<usize>,
}

impl Batching {
    /// Batches constraints given by their particles (each `< part.len()`), with each
    /// particle's part from [`slabs`].
    pub fn new<const K: usize>(constraints: &[[u32; K]], part: &[u8]) -> Self {
        let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); PARTS];
        let mut cut = Vec::new();
        for (k, stencil) in constraints.iter().enumerate() {
            let first = part[stencil[0] as usize];
            if stencil.iter().all(|&p| part[p as usize] == first) {
                buckets[first as usize].push(k as u32);
            } else {
                cut.push(k as u32);
            }
        }
        let mut order = Vec::with_capacity(constraints.len());
        let mut parts = vec![0];
        for bucket in buckets {
            order.extend(bucket);
            parts.push(order.len());
        }
        let cut_stencils: Vec<[u32; K]> = cut.iter().map(|&k| constraints[k as usize]).collect();
        let colouring = Coloring::greedy(&cut_stencils, part.len());
        let start = order.len();
        order.extend(colouring.order.iter().map(|&c| cut[c as usize]));
        let cut = colouring.offsets.iter().map(|o| start + o).collect();
        Self { order, parts, cut }
    }

    /// Reorders `items` (indexed like the batched constraints) into batch order.
    pub fn apply<T: Copy>(&self, items: &[T]) -> Vec<T> {
        permute(&self.order, items)
    }

    /// Whether the batches are valid: `order` is a permutation, no two parts share a particle,
    /// and no two constraints of one cut colour share a particle (for tests).
    pub fn is_valid<const K: usize>(
        &self,
        constraints: &[[u32; K]],
        particle_count: usize,
    ) -> bool {
        let mut owner = vec![usize::MAX; particle_count];
        for k in 0..self.parts.len() - 1 {
            for &c in &self.order[self.parts[k]..self.parts[k + 1]] {
                for &p in &constraints[c as usize] {
                    if owner[p as usize] != usize::MAX && owner[p as usize] != k {
                        return false;
                    }
                    owner[p as usize] = k;
                }
            }
        }
        // The cut as a colouring of its own constraints, indexed 0.. for `Coloring::is_valid`.
        let start = self.cut[0];
        let stencils: Vec<[u32; K]> = (self.order[start..].iter())
            .map(|&c| constraints[c as usize])
            .collect();
        let cut = Coloring {
            order: (0..stencils.len() as u32).collect(),
            offsets: self.cut.iter().map(|o| o - start).collect(),
        };
        let cut_valid = cut.is_valid(&stencils, particle_count);
        cut_valid && is_permutation(&self.order, constraints.len())
    }
}

/// A slice shared by the threads that project one batch: the particle positions, or the
/// multipliers of one constraint kind.
///
/// Reads and writes go through a raw pointer so that several threads can update different
/// elements of one slice at once. That is sound only under the batches' guarantee, which the
/// solver upholds: while threads project one batch (the parts, or one colour of the cut), each
/// particle and each multiplier is read and written by one constraint only, so no two threads
/// ever touch the same element; and every particle index has been checked against the particle
/// count when the solver was built.
pub(crate) struct SharedSlice<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

impl<T> Clone for SharedSlice<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for SharedSlice<'_, T> {}

// SAFETY: see the type's documentation: concurrent accesses are to distinct elements.
unsafe impl<T: Send> Send for SharedSlice<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Send> Sync for SharedSlice<'_, T> {}

impl<'a, T> SharedSlice<'a, T> {
    /// Borrows `x` mutably for the lifetime of the view.
    pub(crate) fn new(x: &'a mut [T]) -> Self {
        Self {
            ptr: x.as_mut_ptr(),
            len: x.len(),
            _borrow: PhantomData,
        }
    }

    /// Element `i`, mutably.
    ///
    /// # Safety
    /// `i < len`, and no other thread or live reference uses element `i` while the returned
    /// reference lives.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn get_mut(&self, i: usize) -> &'a mut T {
        debug_assert!(i < self.len);
        // SAFETY: in bounds and used by this caller alone, by the caller's contract.
        unsafe { &mut *self.ptr.add(i) }
    }

    /// Elements `range`, mutably.
    ///
    /// # Safety
    /// `range` lies within `0..len`, and no other thread or live reference uses those elements
    /// while the returned slice lives.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn range_mut(&self, range: std::ops::Range<usize>) -> &'a mut [T] {
        assert!(range.start <= range.end && range.end <= self.len);
        // SAFETY: in bounds (checked) and used by this caller alone, by the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(range.start), range.len()) }
    }
}

impl SharedSlice<'_, Vec3> {
    /// The position of particle `i`.
    ///
    /// # Safety
    /// `i < len`, and no other thread writes particle `i` during this call.
    #[inline]
    pub(crate) unsafe fn get(self, i: usize) -> Vec3 {
        debug_assert!(i < self.len);
        // SAFETY: in bounds and not written concurrently, by the caller's contract.
        unsafe { *self.ptr.add(i) }
    }

    /// Adds `d` to the position of particle `i`.
    ///
    /// # Safety
    /// `i < len`, and no other thread reads or writes particle `i` during this call.
    #[inline]
    pub(crate) unsafe fn add(self, i: usize, d: Vec3) {
        debug_assert!(i < self.len);
        // SAFETY: in bounds and accessed by this thread alone, by the caller's contract.
        unsafe { *self.ptr.add(i) += d }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::shapes::grid_cloth;
    use crate::mesh::Topology;

    #[test]
    fn grid_edges_triangles_and_hinges_colour_validly_and_few() {
        let mesh = grid_cloth(1.0, 32, 0.5);
        let topology = Topology::new(&mesh);
        let n = mesh.positions.len();
        let edges = topology.edges.clone();
        let tris = mesh.indices.clone();
        let hinges: Vec<[u32; 4]> = (topology.bend_pairs.iter())
            .map(|b| [b.edge[0], b.edge[1], b.opposite[0], b.opposite[1]])
            .collect();
        let e = Coloring::greedy(&edges, n);
        let t = Coloring::greedy(&tris, n);
        let h = Coloring::greedy(&hinges, n);
        assert!(e.is_valid(&edges, n) && t.is_valid(&tris, n) && h.is_valid(&hinges, n));
        // An interior vertex of this grid is on 6 edges, 6 triangles and 12 hinges; a constraint
        // conflicts with those of all its particles, so greedy needs somewhat more colours than
        // that, but no more than the conflicts of one constraint allow.
        let counts = [e.colours(), t.colours(), h.colours()];
        eprintln!("colours: edges, triangles, hinges = {counts:?}");
        assert!(
            counts[0] <= 11 && counts[1] <= 13 && counts[2] <= 24,
            "{counts:?}"
        );
        assert!(
            counts[0] >= 6 && counts[1] >= 6 && counts[2] >= 12,
            "{counts:?}"
        );
    }

    #[test]
    fn a_shared_particle_splits_colours_and_order_is_a_permutation() {
        // A fan: every constraint shares particle 0, so each needs its own colour.
        let fan = [[0, 1], [0, 2], [0, 3], [4, 5]];
        let c = Coloring::greedy(&fan, 6);
        assert_eq!(c.colours(), 3);
        assert_eq!(c.offsets, vec![0, 2, 3, 4]);
        assert_eq!(c.order, vec![0, 3, 1, 2]);
        assert!(c.is_valid(&fan, 6));
        // A colouring that puts two fan edges together is caught.
        let bad = Coloring {
            order: vec![0, 1, 2, 3],
            offsets: vec![0, 2, 4],
        };
        assert!(!bad.is_valid(&fan, 6));
        assert_eq!(c.apply(&['a', 'b', 'c', 'd']), vec!['a', 'd', 'b', 'c']);
    }

    #[test]
    fn grid_batches_are_valid_and_the_cut_is_small() {
        let mesh = grid_cloth(1.0, 64, 0.5);
        let topology = Topology::new(&mesh);
        let n = mesh.positions.len();
        let part = slabs(&mesh.positions);
        // Equal slabs.
        for k in 0..PARTS as u8 {
            assert_eq!(part.iter().filter(|&&p| p == k).count(), n / PARTS);
        }
        let edges = topology.edges.clone();
        let hinges: Vec<[u32; 4]> = (topology.bend_pairs.iter())
            .map(|b| [b.edge[0], b.edge[1], b.opposite[0], b.opposite[1]])
            .collect();
        let e = Batching::new(&edges, &part);
        let h = Batching::new(&hinges, &part);
        assert!(e.is_valid(&edges, n) && h.is_valid(&hinges, n));
        // 7 slab boundaries of 64 vertices: a few constraints per boundary vertex, so the cut
        // is a small share (about 5 % of the edges, 10 % of the hinges).
        let cut_share = |b: &Batching, total: usize| (total - b.cut[0]) as f64 / total as f64;
        let (ce, ch) = (cut_share(&e, edges.len()), cut_share(&h, hinges.len()));
        eprintln!(
            "cut: {:.1} % of edges, {:.1} % of hinges",
            ce * 100.0,
            ch * 100.0
        );
        assert!(ce > 0.0 && ce < 0.08 && ch > 0.0 && ch < 0.15, "{ce} {ch}");
        // Within a part, the mesh's own order.
        let part0 = &e.order[e.parts[0]..e.parts[1]];
        assert!(part0.windows(2).all(|w| w[0] < w[1]));
        // A broken batching is caught: move a cut edge into part 0.
        let mut bad = e.clone();
        let last = bad.order.len() - 1;
        bad.order.swap(0, last);
        assert!(!bad.is_valid(&edges, n));
    }

    #[test]
    fn empty_and_repeated_particle_stencils() {
        let none: [[u32; 2]; 0] = [];
        let c = Coloring::greedy(&none, 3);
        assert_eq!(c.colours(), 0);
        assert!(c.is_valid(&none, 3));
        let repeated = [[1, 1], [1, 2]];
        let c = Coloring::greedy(&repeated, 3);
        assert_eq!(c.colours(), 2);
        assert!(c.is_valid(&repeated, 3));
    }
}
