//! Greedy colourings of constraints that share no particle, slabs of the particles, and the
//! shared view of the particle positions that lets constraints that share no particle be
//! projected in parallel.
//!
//! The colourings order the shear and bending where a kind's own order has no room for levels
//! ([`crate::solver::levels`]); the slabs cut the cloth in two halves for the pipelined sweeps
//! ([`crate::solver::pipeline`]).
//!
//! (A batched parallel projection, parts of slabs plus a coloured cut, was built here and
//! removed: its order left 2–4× the stretch at the same substeps; docs/solver.md, "Parallel
//! projection".)
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

/// The slab of each particle: `parts` slabs (1 to 256) of equal particle count along the
/// longest axis of `rest`'s bounding box (ties broken by index, so the split is deterministic).
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
