//! Coarse-grid correction of the stretch (experiment, stop 31).
//!
//! One Gauss–Seidel sweep carries a load about one edge, so a cloth that hangs off a body by
//! contact keeps a stretch that grows with its size in edges (docs/solver.md, "Where the stretch
//! is without them"). This module adds the coarse level of a two-level multigrid cycle on the
//! XPBD Newton system of the stretch constraints, with the sweeps as the smoother.
//!
//! The particles are grouped into aggregates (breadth first over the rest edges, up to a radius
//! in edges). Each aggregate `A` has a translation `t_A` (m); a particle moves by
//! `Σ_A φ_iA t_A`, where `φ` is the aggregates' indicator smoothed over the rest edges (a
//! partition of unity, at most [`SUPPORT`] aggregates per particle). The correction is the XPBD
//! Newton step restricted to that subspace (primal form, `α̃ = α/h²`):
//!
//! ```text
//! Pᵀ (M + Jᵀ α̃⁻¹ J + Σ_contacts k_c n nᵀ) P t = −Pᵀ Jᵀ α̃⁻¹ (C(x) + α̃ λ)
//! ```
//!
//! with `J` the stretch edges' gradients, `M` the masses (kg) and the contacts held along their
//! normals. The coarse matrix is dense (3 unknowns per aggregate) and factored once per
//! substep.

use crate::collide::Contact;
use crate::constraints::Distance;
use crate::math::{Real, Vec3};

/// Most aggregates a particle's interpolation reaches.
pub const SUPPORT: usize = 4;

/// The coarse level: aggregates, interpolation weights and the factored coarse matrix.
#[derive(Clone, Debug)]
pub struct Coarse {
    /// Per particle: up to [`SUPPORT`] (aggregate, weight) pairs; unused slots have weight 0.
    weights: Vec<[(u32, f64); SUPPORT]>,
    /// Number of aggregates.
    aggregates: usize,
    /// The coarse matrix (3·aggregates square, row major), Cholesky-factored in place.
    matrix: Vec<f64>,
    factored: bool,
    first: Vec<usize>,
    rhs: Vec<f64>,
    /// Substeps since the matrix was factored.
    pub age: usize,
}

impl Coarse {
    /// Groups the `n` particles into aggregates of the given `radius` (edges) over the rest
    /// `edges`, and smooths their indicators `smooth` times.
    pub fn new(n: usize, edges: &[Distance], radius: usize, smooth: usize) -> Option<Self> {
        if n == 0 || edges.is_empty() || radius == 0 {
            return None;
        }
        // Adjacency.
        let mut start = vec![0usize; n + 1];
        for e in edges {
            for &p in &e.particles {
                start[p as usize + 1] += 1;
            }
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut adj = vec![0u32; start[n]];
        for e in edges {
            let [a, b] = e.particles;
            adj[fill[a as usize]] = b;
            fill[a as usize] += 1;
            adj[fill[b as usize]] = a;
            fill[b as usize] += 1;
        }
        // Aggregates, breadth first from each unassigned particle in index order.
        let mut agg = vec![u32::MAX; n];
        let mut count = 0u32;
        let mut queue = std::collections::VecDeque::new();
        let mut depth = vec![0usize; n];
        for seed in 0..n {
            if agg[seed] != u32::MAX {
                continue;
            }
            agg[seed] = count;
            depth[seed] = 0;
            queue.push_back(seed);
            while let Some(i) = queue.pop_front() {
                if depth[i] >= radius {
                    continue;
                }
                for &j in &adj[start[i]..start[i + 1]] {
                    let j = j as usize;
                    if agg[j] == u32::MAX {
                        agg[j] = count;
                        depth[j] = depth[i] + 1;
                        queue.push_back(j);
                    }
                }
            }
            count += 1;
        }
        let aggregates = count as usize;
        if aggregates < 2 {
            return None;
        }
        // Smoothed indicators: φ ← (1 − ω) φ + ω · mean of the neighbours' φ.
        let omega = 2.0 / 3.0;
        let mut phi: Vec<Vec<(u32, f64)>> = agg.iter().map(|&a| vec![(a, 1.0)]).collect();
        for _ in 0..smooth {
            let mut next = Vec::with_capacity(n);
            for i in 0..n {
                let mut acc: Vec<(u32, f64)> = phi[i]
                    .iter()
                    .map(|&(a, v)| (a, (1.0 - omega) * v))
                    .collect();
                let nb = &adj[start[i]..start[i + 1]];
                if nb.is_empty() {
                    next.push(phi[i].clone());
                    continue;
                }
                let share = omega / nb.len() as f64;
                for &j in nb {
                    for &(a, v) in &phi[j as usize] {
                        match acc.iter_mut().find(|(b, _)| *b == a) {
                            Some(slot) => slot.1 += share * v,
                            None => acc.push((a, share * v)),
                        }
                    }
                }
                next.push(acc);
            }
            phi = next;
        }
        let weights = phi
            .into_iter()
            .map(|mut p| {
                p.sort_by(|a, b| b.1.total_cmp(&a.1));
                p.truncate(SUPPORT);
                let sum: f64 = p.iter().map(|x| x.1).sum();
                let mut w = [(0u32, 0.0f64); SUPPORT];
                for (slot, (a, v)) in w.iter_mut().zip(p) {
                    *slot = (a, v / sum);
                }
                w
            })
            .collect();
        let m = 3 * aggregates;
        Some(Self {
            weights,
            aggregates,
            matrix: vec![0.0; m * m],
            factored: false,
            first: Vec::new(),
            age: 0,
            rhs: vec![0.0; m],
        })
    }

    /// Number of aggregates.
    pub fn aggregates(&self) -> usize {
        self.aggregates
    }

    /// Builds and factors the coarse matrix at positions `x` (m) with inverse masses `w`
    /// (1/kg), the stretch `edges`, the body `contacts` and the substep `h` (s).
    pub fn assemble(
        &mut self,
        x: &[Vec3],
        w: &[Real],
        edges: &[Distance],
        contacts: &[Contact],
        h: Real,
    ) {
        let m = 3 * self.aggregates;
        self.matrix.fill(0.0);
        let h2 = (h as f64) * (h as f64);
        let mut k_max: f64 = 0.0;
        // Edges: k g_A g_B n nᵀ, g = φ_a − φ_b.
        for e in edges {
            let [a, b] = e.particles.map(|p| p as usize);
            let d = x[a] - x[b];
            let len = d.length();
            if len < 1e-9 {
                continue;
            }
            let nrm = d / len;
            let n = [nrm.x as f64, nrm.y as f64, nrm.z as f64];
            let k = h2 / (e.compliance_m_per_n as f64).max(1e-12);
            k_max = k_max.max(k);
            let g = self.difference(a, b);
            self.add_outer(&g, k, Some(n));
        }
        let k_contact = 10.0 * k_max.max(1.0);
        for (i, &wi) in w.iter().enumerate() {
            let mass = if wi > 0.0 { 1.0 / wi as f64 } else { k_contact };
            let g: Vec<(u32, f64)> = self.weights[i]
                .iter()
                .copied()
                .filter(|s| s.1 != 0.0)
                .collect();
            self.add_outer(&g, mass, None);
        }
        let touch: Option<f32> = std::env::var("DRAPE_COARSE_TOUCH")
            .ok()
            .and_then(|v| v.parse().ok());
        for c in contacts
            .iter()
            .filter(|_| std::env::var("DRAPE_COARSE_NOCONTACT").is_err())
        {
            let i = c.particle as usize;
            if let Some(tol) = touch {
                if (x[i] - c.point_m).dot(c.normal) > c.thickness_m + tol {
                    continue;
                }
            }
            let n = [c.normal.x as f64, c.normal.y as f64, c.normal.z as f64];
            let g: Vec<(u32, f64)> = self.weights[i]
                .iter()
                .copied()
                .filter(|s| s.1 != 0.0)
                .collect();
            self.add_outer(&g, k_contact, Some(n));
        }
        self.factored = cholesky(&mut self.matrix, m, &mut self.first);
    }

    fn difference(&self, a: usize, b: usize) -> Vec<(u32, f64)> {
        let mut g: Vec<(u32, f64)> = Vec::with_capacity(2 * SUPPORT);
        for &(agg, v) in self.weights[a].iter().filter(|s| s.1 != 0.0) {
            g.push((agg, v));
        }
        for &(agg, v) in self.weights[b].iter().filter(|s| s.1 != 0.0) {
            match g.iter_mut().find(|s| s.0 == agg) {
                Some(slot) => slot.1 -= v,
                None => g.push((agg, -v)),
            }
        }
        g.retain(|s| s.1.abs() > 1e-12);
        g
    }

    /// Adds `k g gᵀ ⊗ (n nᵀ or I)` to the lower triangle of the matrix.
    fn add_outer(&mut self, g: &[(u32, f64)], k: f64, n: Option<[f64; 3]>) {
        let m = 3 * self.aggregates;
        for &(a, va) in g {
            for &(b, vb) in g {
                if b > a {
                    continue;
                }
                let s = k * va * vb;
                let (ra, cb) = (3 * a as usize, 3 * b as usize);
                match n {
                    Some(n) => {
                        for r in 0..3 {
                            for c in 0..3 {
                                if ra + r >= cb + c {
                                    self.matrix[(ra + r) * m + cb + c] += s * n[r] * n[c];
                                }
                            }
                        }
                    }
                    None => {
                        for r in 0..3 {
                            self.matrix[(ra + r) * m + cb + r] += s;
                        }
                    }
                }
            }
        }
    }

    /// Applies the coarse correction to `x` (m): the restricted Newton step of the stretch
    /// `edges` with multipliers `lambda` at substep `h` (s). Returns the largest move (m).
    pub fn correct(
        &mut self,
        x: &mut [Vec3],
        w: &[Real],
        edges: &[Distance],
        lambda: &[Real],
        h: Real,
    ) -> Real {
        if !self.factored {
            return 0.0;
        }
        let m = 3 * self.aggregates;
        self.rhs.fill(0.0);
        let h2 = (h as f64) * (h as f64);
        for (e, &l) in edges.iter().zip(lambda) {
            let [a, b] = e.particles.map(|p| p as usize);
            let d = x[a] - x[b];
            let len = d.length();
            if len < 1e-9 {
                continue;
            }
            let nrm = d / len;
            let alpha_t = (e.compliance_m_per_n as f64).max(1e-12) / h2;
            let r = (len - e.rest_length_m) as f64 + alpha_t * l as f64;
            let f = -r / alpha_t;
            for (agg, v) in self.difference(a, b) {
                let o = 3 * agg as usize;
                self.rhs[o] += f * v * nrm.x as f64;
                self.rhs[o + 1] += f * v * nrm.y as f64;
                self.rhs[o + 2] += f * v * nrm.z as f64;
            }
        }
        solve_cholesky(&self.matrix, m, &self.first, &mut self.rhs);
        let mut largest: Real = 0.0;
        for (i, xi) in x.iter_mut().enumerate() {
            if w[i] <= 0.0 {
                continue;
            }
            let mut d = Vec3::ZERO;
            for &(agg, v) in &self.weights[i] {
                if v == 0.0 {
                    continue;
                }
                let o = 3 * agg as usize;
                d += Vec3::new(
                    (v * self.rhs[o]) as Real,
                    (v * self.rhs[o + 1]) as Real,
                    (v * self.rhs[o + 2]) as Real,
                );
            }
            largest = largest.max(d.length());
            *xi += d;
        }
        largest
    }
}

/// In-place Cholesky of the lower triangle of an `m × m` row-major matrix within its envelope
/// (`first[i]`: the first nonzero column of row `i`, which the factor keeps); false when it is
/// not positive definite.
fn cholesky(a: &mut [f64], m: usize, first: &mut Vec<usize>) -> bool {
    first.clear();
    first.extend((0..m).map(|i| (0..=i).find(|&k| a[i * m + k] != 0.0).unwrap_or(i)));
    for j in 0..m {
        let fj = first[j];
        let mut d = a[j * m + j];
        for k in fj..j {
            d -= a[j * m + k] * a[j * m + k];
        }
        if d <= 0.0 || !d.is_finite() {
            return false;
        }
        let d = d.sqrt();
        a[j * m + j] = d;
        for i in j + 1..m {
            let fi = first[i];
            if fi > j {
                continue;
            }
            let mut s = a[i * m + j];
            for k in fi.max(fj)..j {
                s -= a[i * m + k] * a[j * m + k];
            }
            a[i * m + j] = s / d;
        }
    }
    true
}

/// Solves `L Lᵀ y = b` in place (`first` as [`cholesky`] left it).
fn solve_cholesky(l: &[f64], m: usize, first: &[usize], b: &mut [f64]) {
    for i in 0..m {
        let mut s = b[i];
        for k in first[i]..i {
            s -= l[i * m + k] * b[k];
        }
        b[i] = s / l[i * m + i];
    }
    for i in (0..m).rev() {
        let bi = b[i] / l[i * m + i];
        b[i] = bi;
        for k in first[i]..i {
            b[k] -= l[i * m + k] * bi;
        }
    }
}
