//! Line solves of the stretch: the edges cut into lines (paths of edges that run on as
//! straight as the rest shape allows), and each line's constraints solved together, exactly,
//! in one Newton step of XPBD, instead of edge by edge.
//!
//! One Gauss–Seidel pass moves a load about one edge, so a cloth hanging a few dozen edges
//! stretches by per cents where the fabric stretches by thousandths (docs/solver.md, "Global
//! stretch solve"). Along a line the XPBD system of its edges
//!
//! ```text
//! (J M⁻¹ Jᵀ + α̃) Δλ = −C(x) − α̃ λ,      x ← x + M⁻¹ Jᵀ Δλ,      λ ← λ + Δλ
//! ```
//!
//! is tridiagonal (two edges of a line share a particle only when they follow each other), so
//! it is solved exactly in time linear in the line's length (the Thomas algorithm): a load
//! crosses the whole line in one solve. The lines are the blocks of a block Gauss–Seidel over
//! the edges; every edge is in exactly one line. The moves are the constraints' own impulses
//! `M⁻¹ Jᵀ Δλ`, as in the edge-by-edge sweep: no momentum is made or lost.
//!
//! Lines that share no particle are independent and form a *family*; the families are solved
//! one after another (in reverse order on the backward sweep), the lines of a family in
//! parallel. On a grid the families are the rows, the columns and the diagonals.
//!
//! - `C_j = |x_p − x_q| − L_j` (m) for the line's `j`-th edge from `p` to `q`, gradient `n_j` at
//!   `p` and `−n_j` at `q`, `n_j = (x_p − x_q)/|x_p − x_q|`;
//! - `A_jj = w_p + w_q + α̃_j`, `A_j,j+1 = −w_q·(n_j · n_{j+1})` where `q` is the particle the
//!   two edges share; `w` are the inverse masses (1/kg), `α̃_j = α_j/h²` (kg⁻¹).

use crate::constraints::{distance_and_gradient, Distance};
use crate::math::{Real, Vec3};
use crate::solver::batch::SharedSlice;
use crate::solver::levels::Pass;
use rayon::prelude::*;

/// A line continues through a vertex only along an edge whose rest direction is within this
/// cosine of the incoming one (about 37°): straight on a grid, never round a corner.
pub const MIN_CONTINUATION_COS: Real = 0.8;

/// Families with fewer lines than this are solved on one thread.
const PARALLEL_LINES: usize = 16;

/// Groups of [`LANES`] lines per rayon task.
const GROUPS_PER_TASK: usize = 1;

/// One line: `edges` consecutive edges of the (sorted) edge list from `first_edge`, through
/// `edges + 1` particles listed in [`LineStretch`]'s vertex list from `first_vertex`. A
/// `cyclic` line is a closed loop (a skirt's ring, a sleeve's cuff): its last particle is its
/// first, so its last edge and its first share a particle and its system is cyclic
/// tridiagonal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Line {
    first_vertex: u32,
    first_edge: u32,
    edges: u32,
    cyclic: bool,
}

/// The lines of an edge list.
#[derive(Clone, Debug, Default)]
pub struct LineStretch {
    /// The lines, family after family.
    lines: Vec<Line>,
    /// The particles of all lines, line after line (`k + 1` for a line of `k` edges).
    vertices: Vec<u32>,
    /// The families: ranges of `lines`.
    families: Vec<(usize, usize)>,
}

/// What one solve found.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LineReport {
    /// Largest `|C|` before the solve (m).
    pub max_violation: Real,
    /// Edges too short to have a direction, left out of their line's system.
    pub degenerate: u64,
}

impl LineStretch {
    /// Cuts `edges` into lines over the rest positions `rest` (m), groups them in families,
    /// and sorts `edges` to match: each line's edges consecutive, in the line's order, the
    /// lines family after family.
    ///
    /// Every particle index of `edges` must be below `rest.len()` (`Solver::new` checks them
    /// before it builds the lines); an index beyond panics.
    pub fn new(rest: &[Vec3], edges: &mut Vec<Distance>) -> Self {
        let n = rest.len();
        // Incident edges per particle (compressed rows).
        let mut start = vec![0u32; n + 1];
        for e in edges.iter() {
            for &i in &e.particles {
                start[i as usize + 1] += 1;
            }
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut incident = vec![0u32; 2 * edges.len()];
        for (j, e) in edges.iter().enumerate() {
            for &i in &e.particles {
                incident[fill[i as usize] as usize] = j as u32;
                fill[i as usize] += 1;
            }
        }
        let other = |j: u32, i: u32| {
            let [a, b] = edges[j as usize].particles;
            if a == i {
                b
            } else {
                a
            }
        };
        let mut used = vec![false; edges.len()];
        // The line being grown holds particle i when `stamp[i] == line number + 1`.
        let mut stamp = vec![0u32; n];
        // The cosine of the turn at `via` from the rest edge `from → via` into `via → to`
        // (`None` where either has no length).
        let turn_cos = |from: u32, via: u32, to: u32| {
            let d = rest[via as usize] - rest[from as usize];
            let e = rest[to as usize] - rest[via as usize];
            let (dl, el) = (d.length(), e.length());
            (dl > 0.0 && el > 0.0).then(|| d.dot(e) / (dl * el))
        };
        // Grows a line from `tip`, reached from `from`, while a straight unused edge goes on.
        let grow = |tip: u32,
                    from: u32,
                    used: &mut [bool],
                    stamp: &mut [u32],
                    mark: u32,
                    out: &mut Vec<(u32, u32)>| {
            let (mut tip, mut from) = (tip, from);
            loop {
                let mut best: Option<(Real, u32)> = None;
                for &j in &incident[start[tip as usize] as usize..start[tip as usize + 1] as usize]
                {
                    if used[j as usize] {
                        continue;
                    }
                    let c = other(j, tip);
                    if stamp[c as usize] == mark {
                        continue;
                    }
                    let Some(cos) = turn_cos(from, tip, c) else {
                        continue;
                    };
                    if cos >= MIN_CONTINUATION_COS && best.is_none_or(|(b, _)| cos > b) {
                        best = Some((cos, j));
                    }
                }
                let Some((_, j)) = best else { break };
                used[j as usize] = true;
                let c = other(j, tip);
                stamp[c as usize] = mark;
                out.push((c, j));
                from = tip;
                tip = c;
            }
        };
        let mut lines = Vec::new();
        let mut vertices = Vec::with_capacity(edges.len() * 2);
        let mut line_edges = Vec::with_capacity(edges.len() * 2);
        let (mut ahead, mut behind) = (Vec::new(), Vec::new());
        for (j, e) in edges.iter().enumerate() {
            if used[j] {
                continue;
            }
            used[j] = true;
            let mark = lines.len() as u32 + 1;
            let [a, b] = e.particles;
            stamp[a as usize] = mark;
            stamp[b as usize] = mark;
            ahead.clear();
            behind.clear();
            grow(b, a, &mut used, &mut stamp, mark, &mut ahead);
            // A loop closes where the line comes back to `a` straight on, and runs straight on
            // into its first edge there.
            let cyclic = match ahead.last() {
                Some(&(tip, _)) => {
                    let before = if ahead.len() >= 2 {
                        ahead[ahead.len() - 2].0
                    } else {
                        b
                    };
                    let straight = |from, via, to| {
                        turn_cos(from, via, to).is_some_and(|c| c >= MIN_CONTINUATION_COS)
                    };
                    let around =
                        &incident[start[tip as usize] as usize..start[tip as usize + 1] as usize];
                    let closing =
                        (around.iter().copied()).find(|&j| !used[j as usize] && other(j, tip) == a);
                    match closing {
                        Some(j) if straight(before, tip, a) && straight(tip, a, b) => {
                            used[j as usize] = true;
                            ahead.push((a, j));
                            true
                        }
                        _ => false,
                    }
                }
                None => false,
            };
            if !cyclic {
                grow(a, b, &mut used, &mut stamp, mark, &mut behind);
            }
            // behind reversed, a, b, ahead; edges between them.
            let first = vertices.len() as u32;
            for &(v, _) in behind.iter().rev() {
                vertices.push(v);
            }
            vertices.push(a);
            vertices.push(b);
            for &(v, _) in &ahead {
                vertices.push(v);
            }
            for &(_, je) in behind.iter().rev() {
                line_edges.push(je);
            }
            line_edges.push(j as u32);
            for &(_, je) in &ahead {
                line_edges.push(je);
            }
            // Keep `edges` aligned with `vertices`: one filler per line.
            line_edges.push(u32::MAX);
            lines.push((first, (behind.len() + 1 + ahead.len()) as u32, cyclic));
        }
        // Families: greedy, the first family whose lines touch none of this line's particles.
        let mut owner: Vec<u64> = vec![0; n];
        let mut family_of = Vec::with_capacity(lines.len());
        let mut extra: Vec<Vec<bool>> = Vec::new();
        for &(first, k, _) in &lines {
            let vs = &vertices[first as usize..(first + k + 1) as usize];
            let taken = vs.iter().fold(0u64, |m, &v| m | owner[v as usize]);
            let mut f = (!taken).trailing_zeros() as usize;
            if f >= 64 {
                // More than 64 families: look further, in flags per family.
                f = 64;
                loop {
                    if extra.len() <= f - 64 {
                        extra.push(vec![false; n]);
                    }
                    let flags = &extra[f - 64];
                    if vs.iter().all(|&v| !flags[v as usize]) {
                        break;
                    }
                    f += 1;
                }
                for &v in vs {
                    extra[f - 64][v as usize] = true;
                }
            } else {
                for &v in vs {
                    owner[v as usize] |= 1 << f;
                }
            }
            family_of.push(f);
        }
        let count = family_of.iter().max().map_or(0, |&f| f + 1);
        let mut order: Vec<usize> = (0..lines.len()).collect();
        // Family after family, longest lines first (lines solved side by side should be alike).
        order.sort_by_key(|&l| (family_of[l], std::cmp::Reverse(lines[l].1)));
        let mut families = vec![(0, 0); count];
        let mut sorted_lines = Vec::with_capacity(lines.len());
        let mut sorted_edges = Vec::with_capacity(edges.len());
        for (slot, &l) in order.iter().enumerate() {
            let (first, k, cyclic) = lines[l];
            let f = family_of[l];
            if slot == 0 || family_of[order[slot - 1]] != f {
                families[f].0 = slot;
            }
            families[f].1 = slot + 1;
            sorted_lines.push(Line {
                first_vertex: first,
                first_edge: sorted_edges.len() as u32,
                edges: k,
                cyclic,
            });
            let from = first as usize;
            sorted_edges.extend(
                line_edges[from..from + k as usize]
                    .iter()
                    .map(|&j| edges[j as usize]),
            );
        }
        *edges = sorted_edges;
        Self {
            lines: sorted_lines,
            vertices,
            families,
        }
    }

    /// The number of lines.
    pub fn line_count(&self) -> usize {
        self.lines.len()
    }

    /// The number of families.
    pub fn family_count(&self) -> usize {
        self.families.len()
    }

    /// The lines as the GPU backend takes them: per line `[first_vertex, first_edge, edges,
    /// cyclic]` (indices into [`Self::vertices`] and the sorted edge list), family after
    /// family.
    pub fn line_table(&self) -> Vec<[u32; 4]> {
        (self.lines.iter())
            .map(|l| [l.first_vertex, l.first_edge, l.edges, u32::from(l.cyclic)])
            .collect()
    }

    /// The particles of all lines, line after line (`k + 1` for a line of `k` edges).
    pub fn vertices(&self) -> &[u32] {
        &self.vertices
    }

    /// The families: ranges of the lines that share no particle.
    pub fn families(&self) -> &[(usize, usize)] {
        &self.families
    }

    /// One exact XPBD Newton step per line, family after family (in reverse order when
    /// `reverse`): moves `x` (m) and accumulates `lambda` (one per edge); `w` are the inverse
    /// masses (1/kg); `pass` gives the substep `h` (s).
    pub(crate) fn solve(
        &self,
        x: &mut [Vec3],
        w: &[Real],
        edges: &[Distance],
        lambda: &mut [Real],
        Pass {
            h,
            reverse,
            parallel,
        }: Pass,
    ) -> LineReport {
        let inv_h2 = 1.0 / (h * h);
        let xs = SharedSlice::new(x);
        let ls = SharedSlice::new(lambda);
        let mut report = LineReport::default();
        let count = self.families.len();
        for f in 0..count {
            let (begin, end) = self.families[if reverse { count - 1 - f } else { f }];
            let lines = &self.lines[begin..end];
            let one = |group: &[Line]| {
                let longest = group.iter().map(|l| l.edges as usize).max().unwrap_or(0);
                // SAFETY: the lines of a family share no particle, and each edge is in one line.
                // Short lines take the small buffers: clearing the long ones costs about 8 %
                // of a frame of the default skirt.
                unsafe {
                    if longest <= SHORT_PIECE {
                        solve_group::<SHORT_PIECE>(&self.vertices, xs, ls, w, edges, group, inv_h2)
                    } else {
                        solve_group::<PIECE>(&self.vertices, xs, ls, w, edges, group, inv_h2)
                    }
                }
            };
            let r = if parallel && lines.len() >= PARALLEL_LINES {
                lines
                    .par_chunks(LANES)
                    .with_min_len(GROUPS_PER_TASK)
                    .map(one)
                    .reduce(LineReport::default, merge)
            } else {
                lines
                    .chunks(LANES)
                    .map(one)
                    .fold(LineReport::default(), merge)
            };
            report = merge(report, r);
        }
        report
    }
}

/// Lines solved together, one per lane: their tridiagonal systems are eliminated side by side,
/// so that the divisions of one line's recurrence overlap those of the others (and vectorise).
const LANES: usize = 8;

/// Edges per piece: a longer line is solved as consecutive pieces, each exactly, one after the
/// other (buffers on the stack, no allocation). A closed loop is solved whole only when it fits
/// one piece: 256 takes the 10k walking skirt's 160-edge rings (at 128 they were solved in two
/// open pieces, and the ring's worst edge was 13.6 % against 4.1 % whole).
const PIECE: usize = 256;

/// The piece of groups whose lines all have at most this many edges (their buffers are half
/// the size, and clearing them half the work).
const SHORT_PIECE: usize = 128;

/// Solves a group of at most [`LANES`] lines of one family.
///
/// # Safety
/// No other thread may touch these lines' particles or their edges' multipliers meanwhile, and
/// every particle index is below the length of `xs` and `w`.
unsafe fn solve_group<const P: usize>(
    vertices: &[u32],
    xs: SharedSlice<Vec3>,
    ls: SharedSlice<Real>,
    w: &[Real],
    edges: &[Distance],
    group: &[Line],
    inv_h2: Real,
) -> LineReport {
    let mut report = LineReport::default();
    // Per edge slot j and lane l: the direction n, the diagonal, the right-hand side (then Δλ)
    // and the coupling to edge j + 1.
    let mut n = [[Vec3::ZERO; LANES]; P];
    let mut diag = [[1.0 as Real; LANES]; P];
    let mut rhs = [[0.0 as Real; LANES]; P];
    let mut upper = [[0.0 as Real; LANES]; P];
    // Per lane of a closed loop solved whole: the coupling of its last edge to its first
    // (`corner`), the Sherman–Morrison shift `gamma`, and the second solve's right-hand side.
    let mut corner = [0.0 as Real; LANES];
    let mut gamma = [0.0 as Real; LANES];
    let mut z = [[0.0 as Real; LANES]; P];
    // The elimination's factors, kept for the second solve.
    let mut fac = [[0.0 as Real; LANES]; P];
    let longest = group.iter().map(|l| l.edges as usize).max().unwrap_or(0);
    let mut s = 0;
    while s < longest {
        let m = (longest - s).min(P);
        for (lane, line) in group.iter().enumerate() {
            let k = (line.edges as usize).saturating_sub(s).min(m);
            let vs = &vertices[line.first_vertex as usize + s..];
            let e0 = line.first_edge as usize + s;
            for j in 0..m {
                n[j][lane] = Vec3::ZERO;
                diag[j][lane] = 1.0;
                rhs[j][lane] = 0.0;
                upper[j][lane] = 0.0;
                if j >= k {
                    continue;
                }
                let (p, q) = (vs[j] as usize, vs[j + 1] as usize);
                let e = &edges[e0 + j];
                // SAFETY: the caller's contract.
                let ends = unsafe { [*xs.get_mut(p), *xs.get_mut(q)] };
                let Some((c, [nj, _])) = distance_and_gradient(ends, e.rest_length_m) else {
                    report.degenerate += 1;
                    continue;
                };
                let at = e.compliance_m_per_n * inv_h2;
                let a = w[p] + w[q] + at;
                if a <= 0.0 {
                    continue;
                }
                report.max_violation = report.max_violation.max(c.abs());
                n[j][lane] = nj;
                diag[j][lane] = a;
                // SAFETY: the caller's contract.
                rhs[j][lane] = -c - at * unsafe { *ls.get_mut(e0 + j) };
            }
            for j in 1..k {
                let q = vs[j] as usize;
                upper[j - 1][lane] = -w[q] * n[j - 1][lane].dot(n[j][lane]);
            }
            // A loop that fits one piece: its first particle is its last, shared by its last
            // edge and its first. Solved as `T + u vᵀ` (Sherman–Morrison): `T` the tridiagonal
            // part with its corners folded onto the diagonal, `u = (γ, 0, …, 0, c)`,
            // `v = (1, 0, …, 0, c/γ)`.
            corner[lane] = 0.0;
            gamma[lane] = 0.0;
            if line.cyclic && s == 0 && k == line.edges as usize && k >= 3 && k <= m {
                let (first, last) = (n[0][lane], n[k - 1][lane]);
                if first != Vec3::ZERO && last != Vec3::ZERO {
                    let c = -w[vs[0] as usize] * last.dot(first);
                    let g = -diag[0][lane];
                    diag[0][lane] -= g;
                    diag[k - 1][lane] -= c * c / g;
                    corner[lane] = c;
                    gamma[lane] = g;
                }
            }
        }
        let loops = gamma.iter().any(|&g| g != 0.0);
        // Thomas, all lanes at once: forward elimination, then the substitutions (rhs
        // becomes Δλ). Padding slots have diagonal 1, right-hand side 0 and no coupling.
        for j in 1..m {
            for l in 0..LANES {
                let f = upper[j - 1][l] / diag[j - 1][l];
                fac[j][l] = f;
                diag[j][l] -= f * upper[j - 1][l];
            }
        }
        substitute(&fac, &diag, &upper, &mut rhs, m);
        if loops {
            // T z = u with the factors just found, then Δλ = y − (v·y)/(1 + v·z) z.
            for (lane, line) in group.iter().enumerate() {
                let k = line.edges as usize;
                for zj in z.iter_mut().take(m) {
                    zj[lane] = 0.0;
                }
                if gamma[lane] != 0.0 {
                    z[0][lane] = gamma[lane];
                    z[k - 1][lane] = corner[lane];
                }
            }
            substitute(&fac, &diag, &upper, &mut z, m);
            for (lane, line) in group.iter().enumerate() {
                let (g, c) = (gamma[lane], corner[lane]);
                if g == 0.0 {
                    continue;
                }
                let k = line.edges as usize;
                let vy = rhs[0][lane] + c / g * rhs[k - 1][lane];
                let vz = z[0][lane] + c / g * z[k - 1][lane];
                let fact = vy / (1.0 + vz);
                for j in 0..k {
                    rhs[j][lane] -= fact * z[j][lane];
                }
            }
        }
        for (lane, line) in group.iter().enumerate() {
            let k = (line.edges as usize).saturating_sub(s).min(m);
            let vs = &vertices[line.first_vertex as usize + s..];
            let e0 = line.first_edge as usize + s;
            for j in 0..k {
                let dl = rhs[j][lane];
                let nj = n[j][lane];
                if nj == Vec3::ZERO || dl == 0.0 {
                    continue;
                }
                let (p, q) = (vs[j] as usize, vs[j + 1] as usize);
                // SAFETY: the caller's contract.
                unsafe {
                    *xs.get_mut(p) += nj * (w[p] * dl);
                    *xs.get_mut(q) -= nj * (w[q] * dl);
                    *ls.get_mut(e0 + j) += dl;
                }
            }
        }
        s += m;
    }
    report
}

/// Per edge slot and lane, as [`solve_group`] keeps them.
type Slots<const P: usize> = [[Real; LANES]; P];

/// `v ← T⁻¹ v` in the first `m` slots of every lane, `T` a tridiagonal system already
/// eliminated: `fac` the elimination's factors, `diag` its pivots, `upper` the couplings.
fn substitute<const P: usize>(
    fac: &Slots<P>,
    diag: &Slots<P>,
    upper: &Slots<P>,
    v: &mut Slots<P>,
    m: usize,
) {
    for j in 1..m {
        for l in 0..LANES {
            v[j][l] -= fac[j][l] * v[j - 1][l];
        }
    }
    for l in 0..LANES {
        v[m - 1][l] /= diag[m - 1][l];
    }
    for j in (0..m - 1).rev() {
        for l in 0..LANES {
            v[j][l] = (v[j][l] - upper[j][l] * v[j + 1][l]) / diag[j][l];
        }
    }
}

fn merge(a: LineReport, b: LineReport) -> LineReport {
    LineReport {
        max_violation: a.max_violation.max(b.max_violation),
        degenerate: a.degenerate + b.degenerate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constraints::solve_distance;

    fn pass(reverse: bool, parallel: bool) -> Pass {
        Pass {
            h: 1.0 / 240.0,
            reverse,
            parallel,
        }
    }

    /// An `n × n` grid of edge `cell` (m) in the xz plane, one diagonal per quad.
    fn grid(n: u32, cell: Real) -> (Vec<Vec3>, Vec<Distance>) {
        let mut x = Vec::new();
        for j in 0..n {
            for i in 0..n {
                x.push(Vec3::new(i as Real * cell, 0.0, j as Real * cell));
            }
        }
        let mut edges = Vec::new();
        let mut edge = |a: u32, b: u32| {
            edges.push(Distance {
                particles: [a, b],
                rest_length_m: (x[a as usize] - x[b as usize]).length(),
                compliance_m_per_n: 0.0,
            })
        };
        for j in 0..n {
            for i in 0..n {
                let a = j * n + i;
                if i + 1 < n {
                    edge(a, a + 1);
                }
                if j + 1 < n {
                    edge(a, a + n);
                }
                if i + 1 < n && j + 1 < n {
                    edge(a, a + n + 1);
                }
            }
        }
        (x, edges)
    }

    fn lines_of(l: &LineStretch) -> Vec<(Vec<u32>, Vec<u32>)> {
        l.lines
            .iter()
            .map(|line| {
                let (f, k) = (line.first_vertex as usize, line.edges);
                let e = line.first_edge;
                (
                    l.vertices[f..f + k as usize + 1].to_vec(),
                    (e..e + k).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn a_grid_is_cut_into_its_rows_columns_and_diagonals() {
        let n = 8;
        let (x, original) = grid(n, 0.1);
        let mut edges = original.clone();
        let l = LineStretch::new(&x, &mut edges);
        let lines = lines_of(&l);
        // The same edges, sorted.
        let key = |e: &Distance| {
            let mut p = e.particles;
            p.sort();
            p
        };
        let mut a: Vec<_> = original.iter().map(key).collect();
        let mut b: Vec<_> = edges.iter().map(key).collect();
        a.sort();
        b.sort();
        assert_eq!(a, b);
        // Every edge in exactly one line, between the line's consecutive particles.
        let mut seen = vec![0; edges.len()];
        for (vs, es) in &lines {
            for (k, &e) in es.iter().enumerate() {
                seen[e as usize] += 1;
                let mut pair = [vs[k], vs[k + 1]];
                pair.sort();
                let mut p = edges[e as usize].particles;
                p.sort();
                assert_eq!(pair, p);
            }
        }
        assert!(seen.iter().all(|&c| c == 1), "{seen:?}");
        // n rows, n columns and 2n − 3 diagonals (the corner ones have no edge), all straight.
        assert_eq!(lines.len() as u32, n + n + 2 * n - 3);
        let full = lines
            .iter()
            .filter(|(_, es)| es.len() as u32 == n - 1)
            .count() as u32;
        assert_eq!(full, 2 * n + 1);
        for (vs, _) in &lines {
            let d = x[vs[1] as usize] - x[vs[0] as usize];
            for p in vs.windows(2) {
                let e = x[p[1] as usize] - x[p[0] as usize];
                assert!((e - d).length() < 1e-6, "a line turns: {vs:?}");
            }
        }
        // The lines of a family share no particle.
        assert!(l.family_count() <= 4, "{}", l.family_count());
        for &(begin, end) in &l.families {
            let mut owner = vec![false; x.len()];
            for line in &l.lines[begin..end] {
                let f = line.first_vertex as usize;
                for &v in &l.vertices[f..f + line.edges as usize + 1] {
                    assert!(!owner[v as usize], "particle {v} twice in a family");
                    owner[v as usize] = true;
                }
            }
        }
    }

    /// DESIGN's worked check on a line of one edge: one particle fixed, the other of 1 kg, rest
    /// length 1 m, current length 2 m, h = 0.1 s. With α = 0 the first Δλ is −1 and the free
    /// end returns to 1 m; with α = 0.01 m/N it moves to 1.5 m and further solves in the same
    /// step keep it there.
    #[test]
    fn the_worked_check_holds_for_a_line_of_one_edge() {
        let rest = [Vec3::ZERO, Vec3::X];
        let w = [0.0, 1.0];
        let h = Pass {
            h: 0.1,
            reverse: false,
            parallel: false,
        };
        for (alpha, end) in [(0.0, 1.0), (0.01, 1.5)] {
            let mut edges = vec![Distance {
                particles: [0, 1],
                rest_length_m: 1.0,
                compliance_m_per_n: alpha,
            }];
            let lines = LineStretch::new(&rest, &mut edges);
            let mut x = [Vec3::ZERO, Vec3::new(2.0, 0.0, 0.0)];
            let mut lambda = [0.0];
            lines.solve(&mut x, &w, &edges, &mut lambda, h);
            if alpha == 0.0 {
                assert!((lambda[0] + 1.0).abs() < 1e-6, "{lambda:?}");
            }
            for _ in 0..3 {
                assert!((x[1].x - end).abs() < 1e-5, "α {alpha}: {:?}", x[1]);
                lines.solve(&mut x, &w, &edges, &mut lambda, h);
            }
            assert_eq!(x[0], Vec3::ZERO);
        }
    }

    /// A vertical chain pinned at the top, every free particle moved down by the same amount
    /// (a substep's gravity): one line solve puts it back exactly, where one edge-by-edge pass
    /// leaves most of the error at the top.
    #[test]
    fn one_solve_holds_a_hanging_chain_exactly() {
        let k = 40;
        let rest: Vec<Vec3> = (0..=k)
            .map(|i| Vec3::new(0.0, -0.01 * i as Real, 0.0))
            .collect();
        let mut edges: Vec<Distance> = (0..k)
            .map(|i| Distance {
                particles: [i as u32, i as u32 + 1],
                rest_length_m: 0.01,
                compliance_m_per_n: 0.0,
            })
            .collect();
        let mut w = vec![1.0 / 0.002; k + 1];
        w[0] = 0.0;
        let drop = 1e-4;
        let predicted: Vec<Vec3> = rest
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if i == 0 {
                    *p
                } else {
                    *p - Vec3::new(0.0, drop, 0.0)
                }
            })
            .collect();
        let lines = LineStretch::new(&rest, &mut edges);
        assert_eq!(lines.line_count(), 1);
        let mut x = predicted.clone();
        let mut lambda = vec![0.0; k];
        let r = lines.solve(&mut x, &w, &edges, &mut lambda, pass(false, false));
        assert!((r.max_violation - drop).abs() < 1e-7, "{r:?}");
        for (a, b) in x.iter().zip(&rest) {
            assert!((*a - *b).length() < 0.01 * drop, "{a:?} vs {b:?}");
        }
        // Edge by edge from the top: the top edge keeps most of the error.
        let mut y = predicted;
        let mut l2 = vec![0.0; k];
        for (e, l) in edges.iter().zip(&mut l2) {
            let [a, b] = e.particles.map(|i| i as usize);
            if let crate::constraints::Outcome::Move([da, db]) =
                solve_distance([y[a], y[b]], [w[a], w[b]], 0.01, 0.0, 1.0 / 240.0, l)
            {
                y[a] += da;
                y[b] += db;
            }
        }
        let worst = y
            .windows(2)
            .map(|p| ((p[0] - p[1]).length() - 0.01).abs())
            .fold(0.0, Real::max);
        assert!(worst > 0.3 * drop, "{worst}");
    }

    /// A ring of `k` particles of mass 2 g on a circle of radius `radius` (m), and its edges.
    fn ring(k: usize, radius: Real) -> (Vec<Vec3>, Vec<Distance>) {
        let x: Vec<Vec3> = (0..k)
            .map(|i| {
                let t = std::f32::consts::TAU * i as Real / k as Real;
                Vec3::new(radius * t.cos(), 0.0, radius * t.sin())
            })
            .collect();
        let edges = (0..k)
            .map(|i| {
                let j = (i + 1) % k;
                Distance {
                    particles: [i as u32, j as u32],
                    rest_length_m: (x[i] - x[j]).length(),
                    compliance_m_per_n: 0.0,
                }
            })
            .collect();
        (x, edges)
    }

    /// A closed loop (a skirt's ring) is one cyclic line, and one solve restores a ring
    /// stretched evenly to its rest length exactly, edge for edge: the edge where an open line
    /// would end (and a second line would hold on its own) takes no more than the others.
    #[test]
    fn a_ring_is_one_closed_line_and_one_solve_restores_it_evenly() {
        // 48 edges in the short buffers; 160, the 10k walking skirt's rings, in the long ones.
        for k in [48, 160] {
            ring_is_restored(k);
        }
    }

    fn ring_is_restored(k: usize) {
        let (rest, mut edges) = ring(k, 0.15);
        let lines = LineStretch::new(&rest, &mut edges);
        assert_eq!(lines.line_count(), 1);
        assert_eq!(lines.family_count(), 1);
        let line = lines.lines[0];
        assert!(line.cyclic);
        assert_eq!(line.edges as usize, k);
        let vs = &lines.vertices[line.first_vertex as usize..][..k + 1];
        assert_eq!(vs[0], vs[k]);
        // Stretched by 1 % and turned a little, so that no edge is at rest.
        let turn = crate::math::Mat3::from_rotation_y(0.1);
        let stretched: Vec<Vec3> = rest.iter().map(|p| turn * (*p * 1.01)).collect();
        let w = vec![1.0 / 0.002; k];
        let mut x = stretched.clone();
        let mut lambda = vec![0.0; k];
        lines.solve(&mut x, &w, &edges, &mut lambda, pass(false, false));
        let error = |x: &[Vec3]| -> Vec<Real> {
            edges
                .iter()
                .map(|e| {
                    let [a, b] = e.particles.map(|i| i as usize);
                    (x[a] - x[b]).length() / e.rest_length_m - 1.0
                })
                .collect()
        };
        // Exact up to the linearisation: the stretch was 1 %, what is left is of its square.
        for (j, s) in error(&x).iter().enumerate() {
            assert!(s.abs() < 2e-4, "edge {j}: {s}");
        }
        // The same edges solved as an open line leave the loop's closing edge more stretched
        // than before the solve (measured: 7.1 %).
        let mut open = lines.clone();
        open.lines[0].cyclic = false;
        let mut y = stretched;
        let mut lambda = vec![0.0; k];
        open.solve(&mut y, &w, &edges, &mut lambda, pass(false, false));
        let worst = error(&y).iter().fold(0.0, |m: Real, s| m.max(s.abs()));
        assert!(worst > 0.05, "{worst}");
        // No momentum moved: the centre stays.
        let centre = |x: &[Vec3]| x.iter().copied().sum::<Vec3>() / k as Real;
        assert!(centre(&x).length() < 1e-6, "{:?}", centre(&x));
    }

    /// The moves are the constraints' impulses: a free, jumbled grid keeps its centre of mass
    /// in one solve (parallel or not, with the same numbers), and the stretch falls.
    #[test]
    fn a_solve_moves_no_momentum_and_is_the_same_on_one_thread_or_many() {
        let n = 24;
        let (rest, mut edges) = grid(n, 0.02);
        let mass: Vec<Real> = (0..rest.len())
            .map(|i| 0.001 * (1.0 + (i % 3) as Real))
            .collect();
        let w: Vec<Real> = mass.iter().map(|m| 1.0 / m).collect();
        let jumbled: Vec<Vec3> = rest
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let t = i as Real;
                *p + Vec3::new((t * 0.7).sin(), (t * 1.3).cos(), (t * 2.1).sin()) * 0.003
            })
            .collect();
        let lines = LineStretch::new(&rest, &mut edges);
        let centre = |x: &[Vec3]| {
            x.iter()
                .zip(&mass)
                .fold(Vec3::ZERO, |s, (p, m)| s + *p * *m)
        };
        let worst = |x: &[Vec3]| {
            edges.iter().fold(0.0, |m: Real, e| {
                let [a, b] = e.particles.map(|i| i as usize);
                m.max(((x[a] - x[b]).length() - e.rest_length_m).abs())
            })
        };
        let mut one = jumbled.clone();
        let mut many = jumbled.clone();
        let (mut l1, mut l2) = (vec![0.0; edges.len()], vec![0.0; edges.len()]);
        for k in 0..4 {
            lines.solve(&mut one, &w, &edges, &mut l1, pass(k % 2 == 1, false));
            lines.solve(&mut many, &w, &edges, &mut l2, pass(k % 2 == 1, true));
        }
        assert_eq!(one, many);
        let moved = (centre(&one) - centre(&jumbled)).length();
        assert!(moved < 1e-7, "{moved}");
        assert!(
            worst(&one) < 0.2 * worst(&jumbled),
            "{} {}",
            worst(&one),
            worst(&jumbled)
        );
    }
}
