//! Finding the hybrid network's world edges (see [`super::WorldEdges`]): pairs of particles
//! close in space but far apart on the mesh, found anew every substep from the predicted
//! positions with a sorted cell grid, allocation-free once warm.

use crate::math::Vec3;

/// How world edges are found ([`super::WorldEdges::params`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorldParams {
    /// Two particles closer than this are joined, in mean rest edge lengths `ℓ`.
    pub radius: f32,
    /// ... unless they are fewer than this many mesh edges apart.
    pub min_hops: u32,
    /// Most world edges into one particle (its nearest are kept).
    pub max_per_node: u32,
}

/// Largest [`WorldParams::max_per_node`] (the finder keeps a particle's nearest on the stack).
pub const MAX_PER_NODE: u32 = 32;

impl Default for WorldParams {
    fn default() -> Self {
        Self {
            radius: super::WorldEdges::RADIUS,
            min_hops: super::WorldEdges::MIN_HOPS,
            max_per_node: super::WorldEdges::MAX_PER_NODE,
        }
    }
}

impl WorldParams {
    /// Whether the numbers can be used; the error says which is not.
    pub fn check(&self) -> Result<(), String> {
        if !(self.radius.is_finite() && self.radius > 0.0 && self.radius <= 8.0) {
            return Err(format!(
                "radius {}: must be more than 0 and at most 8 edge lengths",
                self.radius
            ));
        }
        if !(2..=8).contains(&self.min_hops) {
            return Err(format!("min_hops {}: must be 2 to 8", self.min_hops));
        }
        if !(1..=MAX_PER_NODE).contains(&self.max_per_node) {
            return Err(format!(
                "max_per_node {}: must be 1 to {MAX_PER_NODE}",
                self.max_per_node
            ));
        }
        Ok(())
    }
}

/// The world-edge search of one cloth: its mesh neighbourhoods, fixed, and the cell grid's
/// buffers, reused every substep.
#[derive(Clone, Debug)]
pub struct WorldFinder {
    params: WorldParams,
    /// Per particle, the particles fewer than `min_hops` mesh edges away, sorted: the range
    /// `near[near_start[i]..near_start[i + 1]]`.
    near_start: Vec<u32>,
    near: Vec<u32>,
    /// `(cell key, particle)`, sorted.
    cells: Vec<(u64, u32)>,
}

/// Bits of each cell coordinate in a key.
const KEY_BITS: u32 = 21;
const KEY_MASK: i64 = (1 << KEY_BITS) - 1;

fn key(c: [i64; 3]) -> u64 {
    (((c[0] & KEY_MASK) as u64) << (2 * KEY_BITS))
        | (((c[1] & KEY_MASK) as u64) << KEY_BITS)
        | ((c[2] & KEY_MASK) as u64)
}

impl WorldFinder {
    /// The search for a cloth of `n` particles whose mesh edges are `edges` (either direction,
    /// repeats allowed), with `params` (checked by the caller).
    pub fn new(n: usize, edges: &[[u32; 2]], params: WorldParams) -> Self {
        // Adjacency (CSR).
        let mut degree = vec![0u32; n + 1];
        for &[a, b] in edges {
            degree[a as usize] += 1;
            degree[b as usize] += 1;
        }
        let mut start = vec![0u32; n + 1];
        for i in 0..n {
            start[i + 1] = start[i] + degree[i];
        }
        let mut fill = start.clone();
        let mut adjacent = vec![0u32; start[n] as usize];
        for &[a, b] in edges {
            for (p, q) in [(a, b), (b, a)] {
                adjacent[fill[p as usize] as usize] = q;
                fill[p as usize] += 1;
            }
        }
        // Each particle's neighbourhood within `min_hops − 1` edges (breadth first).
        let depth = params.min_hops.saturating_sub(1);
        let mut stamp = vec![u32::MAX; n];
        let (mut near_start, mut near) = (Vec::with_capacity(n + 1), Vec::new());
        let (mut frontier, mut next) = (Vec::new(), Vec::new());
        near_start.push(0);
        for i in 0..n {
            let first = near.len();
            stamp[i] = i as u32;
            frontier.clear();
            frontier.push(i as u32);
            for _ in 0..depth {
                next.clear();
                for &p in &frontier {
                    let p = p as usize;
                    for &q in &adjacent[start[p] as usize..start[p + 1] as usize] {
                        if stamp[q as usize] != i as u32 {
                            stamp[q as usize] = i as u32;
                            near.push(q);
                            next.push(q);
                        }
                    }
                }
                std::mem::swap(&mut frontier, &mut next);
            }
            near[first..].sort_unstable();
            near_start.push(near.len() as u32);
        }
        Self {
            params,
            near_start,
            near,
            cells: Vec::with_capacity(n),
        }
    }

    /// The parameters it searches with.
    pub fn params(&self) -> WorldParams {
        self.params
    }

    /// Whether `j` is fewer than `min_hops` mesh edges from `i`.
    pub fn is_near(&self, i: u32, j: u32) -> bool {
        let r = self.near_start[i as usize] as usize..self.near_start[i as usize + 1] as usize;
        self.near[r].binary_search(&j).is_ok()
    }

    /// The world edges at positions `x` (m), `ell_m` the mean rest edge length: into `edges`
    /// (cleared first), `[from, to]` for each `from` among the `max_per_node` nearest
    /// particles to `to` within the radius that are not near it on the mesh, by particle
    /// then by distance. Deterministic; allocation-free once `edges` and the grid have held
    /// this many.
    pub fn find(&mut self, x: &[Vec3], ell_m: f32, edges: &mut Vec<[u32; 2]>) {
        edges.clear();
        let r = self.params.radius * ell_m;
        if !(r.is_finite() && r > 0.0) || x.len() != self.near_start.len() - 1 {
            return;
        }
        let cell = |p: Vec3| -> [i64; 3] {
            let q = p / r;
            [q.x.floor() as i64, q.y.floor() as i64, q.z.floor() as i64]
        };
        self.cells.clear();
        for (i, &p) in x.iter().enumerate() {
            if p.is_finite() {
                self.cells.push((key(cell(p)), i as u32));
            }
        }
        self.cells.sort_unstable();
        let r2 = r * r;
        let keep = self.params.max_per_node as usize;
        let mut best = [(0.0f32, 0u32); MAX_PER_NODE as usize];
        for (to, &p) in x.iter().enumerate() {
            if !p.is_finite() {
                continue;
            }
            let c = cell(p);
            let mut kept = 0usize;
            for dx in -1..=1 {
                for dy in -1..=1 {
                    for dz in -1..=1 {
                        let k = key([c[0] + dx, c[1] + dy, c[2] + dz]);
                        let first = self.cells.partition_point(|&(ck, _)| ck < k);
                        for &(ck, from) in &self.cells[first..] {
                            if ck != k {
                                break;
                            }
                            if from as usize == to {
                                continue;
                            }
                            let d2 = (x[from as usize] - p).length_squared();
                            if d2 >= r2 || self.is_near(to as u32, from) {
                                continue;
                            }
                            // Insert into the nearest `keep`, ordered by (distance, index).
                            let item = (d2, from);
                            let less = |a: &(f32, u32), b: &(f32, u32)| {
                                a.0 < b.0 || (a.0 == b.0 && a.1 < b.1)
                            };
                            if kept == keep && !less(&item, &best[kept - 1]) {
                                continue;
                            }
                            let mut at = kept.min(keep - 1);
                            if kept < keep {
                                kept += 1;
                            }
                            while at > 0 && less(&item, &best[at - 1]) {
                                best[at] = best[at - 1];
                                at -= 1;
                            }
                            best[at] = item;
                        }
                    }
                }
            }
            edges.extend(best[..kept].iter().map(|&(_, from)| [from, to as u32]));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A strip of `n` particles 1 m apart along x, joined in a chain.
    fn chain(n: u32) -> (Vec<Vec3>, Vec<[u32; 2]>) {
        let x = (0..n).map(|i| Vec3::new(i as f32, 0.0, 0.0)).collect();
        let e = (1..n).map(|i| [i - 1, i]).collect();
        (x, e)
    }

    #[test]
    fn a_flat_chain_has_no_world_edges_and_a_folded_one_joins_its_layers() {
        let (mut x, e) = chain(10);
        let params = WorldParams {
            radius: 1.5,
            min_hops: 3,
            max_per_node: 4,
        };
        let mut f = WorldFinder::new(10, &e, params);
        assert!(f.is_near(4, 5) && f.is_near(4, 6) && !f.is_near(4, 7));
        let mut edges = Vec::new();
        f.find(&x, 1.0, &mut edges);
        assert!(edges.is_empty(), "{edges:?}");
        // Fold particles 5..10 back over 0..5, 0.5 m above: 9 lies over 0, 5 over 4.
        for (i, p) in x.iter_mut().enumerate().skip(5) {
            *p = Vec3::new((9 - i) as f32, 0.5, 0.0);
        }
        f.find(&x, 1.0, &mut edges);
        assert!(edges.contains(&[9, 0]) && edges.contains(&[0, 9]));
        // 4 and 5 are mesh neighbours: never a world edge, however close.
        assert!(!edges.contains(&[5, 4]) && !edges.contains(&[4, 5]));
        for &[a, b] in &edges {
            assert!((x[a as usize] - x[b as usize]).length() < 1.5);
            assert!(!f.is_near(a, b));
        }
        // The cap keeps the nearest: with one per node, 0's is 9 (0.5 m), not 8 (1.12 m).
        let mut f1 = WorldFinder::new(
            10,
            &e,
            WorldParams {
                max_per_node: 1,
                ..params
            },
        );
        f1.find(&x, 1.0, &mut edges);
        let into_0: Vec<_> = edges.iter().filter(|e| e[1] == 0).collect();
        assert_eq!(into_0, [&[9, 0]]);
        // The same search gives the same edges, and the scale is the edge length.
        let mut again = Vec::new();
        f1.find(&x, 1.0, &mut again);
        assert_eq!(edges, again);
        f1.find(&x, 0.1, &mut again);
        assert!(again.is_empty());
    }

    #[test]
    fn bad_parameters_are_named() {
        let ok = WorldParams::default();
        ok.check().unwrap();
        let bad = WorldParams {
            radius: f32::NAN,
            ..ok
        };
        assert!(bad.check().unwrap_err().contains("radius"));
        let bad = WorldParams { min_hops: 1, ..ok };
        assert!(bad.check().unwrap_err().contains("min_hops"));
        let bad = WorldParams {
            max_per_node: 0,
            ..ok
        };
        assert!(bad.check().unwrap_err().contains("max_per_node"));
    }
}
