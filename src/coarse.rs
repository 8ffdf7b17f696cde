//! Coarse-grid correction of the stretch ([`crate::sim::SolverSettings::coarse_correction`]).
//!
//! One Gauss–Seidel sweep carries a load about one edge, so a cloth that hangs off a body by
//! contact keeps a stretch that grows with its size in edges (docs/solver.md, "Where the stretch
//! is without them"). This module adds the coarse level of a two-level multigrid cycle on the
//! XPBD Newton system of the stretch constraints, with the sweeps as the smoother: after each
//! sweep's membrane, the whole cloth moves by a smooth field that removes what the sweep left
//! at scales larger than a few edges.
//!
//! **Aggregates.** The particles are grouped, breadth first over the stretch edges, into
//! aggregates of [`RADIUS`] edges (more when there would be over [`MAX_AGGREGATES`]). Each
//! aggregate `A` has a translation `t_A` (m), and a particle moves by `Σ_A φ_iA t_A`, with `φ`
//! the aggregates' indicators smoothed [`RADIUS`] times over the edges (`φ ← ⅓ φ + ⅔ · mean of
//! the neighbours' φ`), cut to the [`SUPPORT`] largest and renormalised: a partition of unity
//! whose basis functions ramp across the aggregates' borders, as smoothed aggregation's do.
//!
//! **The correction** is the XPBD Newton step restricted to that space (primal form, with
//! `α̃ = α/h²`, `r = C(x) + α̃ λ` and `P` the interpolation):
//!
//! ```text
//! B t = −Pᵀ Jᵀ α̃⁻¹ r,     B = Pᵀ (M + Σ_edges α̃⁻¹ g gᵀ ⊗ I + Σ_contacts k_c φ φᵀ ⊗ I) P
//! ```
//!
//! The edges' stiffness is taken in every direction (`I` for the exact `n nᵀ`), so `B` does
//! not depend on the positions, only on the masses, compliances, substep and contacts: it is
//! factored once per frame (envelope Cholesky, one scalar system for the three axes), and each
//! correction costs a pass over the edges and two triangular solves. Since `I ⪰ n nᵀ`, `B`
//! bounds the exact coarse operator from above: the correction never overshoots the exact
//! coarse Newton step in its energy, whatever the cloth's shape. Without contacts and pins the
//! right-hand side sums to zero over the aggregates and `B`'s edge part vanishes on a uniform
//! translation, so the correction moves no momentum: `Σ m_i Δx_i = 0`.
//!
//! **Contacts** make their particle [`CONTACT_STIFFNESS`] times the stiffest edge heavier in the
//! coarse level only: a cap resting on the body then moves less than the cloth hanging off it.
//! The contacts project after the correction, as before.

use crate::collide::Contact;
use crate::constraints::Distance;
use crate::math::{Real, Vec3};

/// Most aggregates a particle's interpolation reaches.
pub const SUPPORT: usize = 4;
/// Radius of an aggregate, in edges, and the smoothing steps of the interpolation.
pub const RADIUS: usize = 4;
/// Most aggregates: the radius grows until there are no more (the coarse factor's cost grows
/// with the aggregates times the square of its envelope).
pub const MAX_AGGREGATES: usize = 1024;
/// A particle in contact weighs this times the stiffest edge's `h²/α` (kg) in the coarse
/// level (measured on the standard scene, where that is 0.035 kg, 4,000 times a particle's
/// mass: 0.03 gave the lowest 90th and 99th percentiles of the stretch at N = 48–72, 0.1 and 0.3
/// a little more; 3 holds it so fast that the hanging cloth is hardly
/// lifted; without it the cap is pulled into the body, and the contacts' push-back stretches
/// the cloth where it leaves the body).
pub const CONTACT_STIFFNESS: f64 = 0.03;

/// The coarse level: aggregates, the coarse multipliers' basis and the factored operator.
#[derive(Clone, Debug)]
pub struct CoarseCorrection {
    /// Per stretch edge `j`, `basis[basis_start[j]..basis_start[j + 1]]`: the coarse unknowns
    /// (column, weight) its multiplier takes a share of (`R` in the module docs).
    basis_start: Vec<u32>,
    basis: Vec<(u32, f64)>,
    /// The edges at each particle (compressed rows; the edge index, and +1 when the particle
    /// is the edge's first, −1 when its second).
    incident_start: Vec<u32>,
    incident: Vec<(u32, f32)>,
    aggregates: usize,
    /// Coarse unknowns: `CLASSES` per aggregate.
    unknowns: usize,
    /// Envelope storage of the lower triangle: row `i` holds columns `first[i]..=i` from
    /// `row_start[i]`.
    first: Vec<usize>,
    row_start: Vec<usize>,
    matrix: Vec<f64>,
    factored: bool,
    /// The substep (s) the factor is for; 0 until the first one.
    factored_h: Real,
    /// Set at each frame's start: the factor is rebuilt with the positions and contacts of the
    /// next sweep.
    stale: bool,
    /// The inverse masses the factor was built with (contact particles made heavier).
    w_coarse: Vec<Real>,
    rhs: Vec<f64>,
    /// Scratch: one particle's columns and their displacement fields while assembling.
    local: Vec<(u32, Vec3)>,
}

/// Coarse unknowns per aggregate: the three components of a membrane stress in the
/// aggregate's tangent plane (edges along its first axis, its second, and the shear between).
pub const CLASSES: usize = 3;

impl CoarseCorrection {
    /// The coarse level of the particles at rest `positions` (m) joined by the stretch `edges`;
    /// `None` when the cloth is too small to have two aggregates.
    pub fn new(positions: &[Vec3], edges: &[Distance]) -> Option<Self> {
        let n = positions.len();
        if n == 0 || edges.is_empty() {
            return None;
        }
        let (start, adj) = adjacency(n, edges);
        let mut radius: usize = std::env::var("DRAPE_RADIUS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(RADIUS);
        let (agg, aggregates) = loop {
            let (agg, count) = aggregate(n, &start, &adj, radius);
            if count <= MAX_AGGREGATES || radius >= n {
                break (agg, count);
            }
            radius *= 2;
        };
        if aggregates < 2 {
            return None;
        }
        let weights = smooth(&agg, &start, &adj, radius);
        let classes: usize = std::env::var("DRAPE_CLASSES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(CLASSES);
        let frames = tangent_frames(positions, &agg, aggregates);
        // The basis: ψ_jA = (φ_aA + φ_bA)/2, split by the edge's direction in A's frame.
        let mut basis_start = Vec::with_capacity(edges.len() + 1);
        let mut basis = Vec::with_capacity(edges.len() * 2 * SUPPORT * classes);
        basis_start.push(0u32);
        let mut psi: Vec<(u32, f64)> = Vec::with_capacity(2 * SUPPORT);
        for e in edges {
            let [a, b] = e.particles.map(|p| p as usize);
            psi.clear();
            for &(agg, v) in weights[a].iter().chain(&weights[b]).filter(|s| s.1 != 0.0) {
                match psi.iter_mut().find(|s| s.0 == agg) {
                    Some(slot) => slot.1 += 0.5 * v,
                    None => psi.push((agg, 0.5 * v)),
                }
            }
            psi.sort_by_key(|s| s.0);
            let d = (positions[a] - positions[b]).normalize_or_zero();
            for &(agg, v) in &psi {
                let [e1, e2] = frames[agg as usize];
                let (p, q) = (f64::from(d.dot(e1)), f64::from(d.dot(e2)));
                let norm = p * p + q * q;
                let c = if norm > 1e-12 {
                    [p * p / norm, q * q / norm, 2.0 * p * q / norm]
                } else {
                    [0.5, 0.5, 0.0]
                };
                if classes == 1 {
                    basis.push((agg, v));
                } else {
                    for (k, ck) in c.iter().enumerate() {
                        basis.push((agg * CLASSES as u32 + k as u32, v * ck));
                    }
                }
            }
            basis_start.push(basis.len() as u32);
        }
        let unknowns = if classes == 1 {
            aggregates
        } else {
            aggregates * CLASSES
        };
        // Incident edges per particle.
        let mut incident_start = vec![0u32; n + 1];
        for e in edges {
            for &p in &e.particles {
                incident_start[p as usize + 1] += 1;
            }
        }
        for i in 0..n {
            incident_start[i + 1] += incident_start[i];
        }
        let mut fill: Vec<u32> = incident_start.clone();
        let mut incident = vec![(0u32, 0.0f32); incident_start[n] as usize];
        for (j, e) in edges.iter().enumerate() {
            for (p, sign) in e.particles.iter().zip([1.0f32, -1.0]) {
                incident[fill[*p as usize] as usize] = (j as u32, sign);
                fill[*p as usize] += 1;
            }
        }
        // The envelope: columns coupled through a particle (the union of its edges' columns).
        let mut first: Vec<usize> = (0..unknowns).collect();
        let mut cols: Vec<u32> = Vec::new();
        for i in 0..n {
            cols.clear();
            for &(j, _) in &incident[incident_start[i] as usize..incident_start[i + 1] as usize] {
                let j = j as usize;
                cols.extend(
                    basis[basis_start[j] as usize..basis_start[j + 1] as usize]
                        .iter()
                        .map(|s| s.0),
                );
            }
            if let Some(&low) = cols.iter().min() {
                for &c in &cols {
                    first[c as usize] = first[c as usize].min(low as usize);
                }
            }
        }
        let mut row_start = Vec::with_capacity(unknowns + 1);
        let mut size = 0;
        for (i, &f) in first.iter().enumerate() {
            row_start.push(size);
            size += i - f + 1;
        }
        row_start.push(size);
        Some(Self {
            basis_start,
            basis,
            incident_start,
            incident,
            aggregates,
            unknowns,
            first,
            row_start,
            matrix: vec![0.0; size],
            factored: false,
            factored_h: 0.0,
            stale: true,
            w_coarse: Vec::new(),
            rhs: vec![0.0; unknowns],
            local: Vec::new(),
        })
    }

    /// Number of aggregates.
    pub fn aggregates(&self) -> usize {
        self.aggregates
    }

    /// Marks the factor for rebuilding at the next correction (a new frame's contacts).
    pub fn invalidate(&mut self) {
        self.stale = true;
    }

    fn at(&mut self, i: usize, j: usize) -> &mut f64 {
        let (i, j) = if i >= j { (i, j) } else { (j, i) };
        &mut self.matrix[self.row_start[i] + j - self.first[i]]
    }

    fn edge_basis(&self, j: usize) -> &[(u32, f64)] {
        &self.basis[self.basis_start[j] as usize..self.basis_start[j + 1] as usize]
    }

    /// Builds and factors `Rᵀ (J W Jᵀ + α̃) R` at positions `x` (m) with inverse masses `w`
    /// (1/kg; contact particles made heavier), the stretch `edges` and the substep `h` (s).
    fn assemble(
        &mut self,
        x: &[Vec3],
        w: &[Real],
        edges: &[Distance],
        contacts: &[Contact],
        h: Real,
    ) {
        self.matrix.fill(0.0);
        let inv_h2 = 1.0 / (f64::from(h) * f64::from(h));
        self.w_coarse.clear();
        self.w_coarse.extend_from_slice(w);
        let heavy: Real = std::env::var("DRAPE_HEAVY")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(CONTACT_STIFFNESS as Real);
        for c in contacts {
            self.w_coarse[c.particle as usize] /= 1.0 + heavy;
        }
        // α̃ R_j R_jᵀ per edge.
        for (j, e) in edges.iter().enumerate() {
            let at = f64::from(e.compliance_m_per_n) * inv_h2;
            let (s, t) = (
                self.basis_start[j] as usize,
                self.basis_start[j + 1] as usize,
            );
            for p in s..t {
                for q in s..t {
                    let (cp, vp) = self.basis[p];
                    let (cq, vq) = self.basis[q];
                    if cq <= cp {
                        *self.at(cp as usize, cq as usize) += at * vp * vq;
                    }
                }
            }
        }
        // J W Jᵀ: per particle, m_i U_c · U_d with U_c = w_i Σ_j ∇_i C_j R_jc.
        let mut local = std::mem::take(&mut self.local);
        for i in 0..x.len() {
            let wi = self.w_coarse[i];
            if wi <= 0.0 {
                continue;
            }
            local.clear();
            for &(j, sign) in
                &self.incident[self.incident_start[i] as usize..self.incident_start[i + 1] as usize]
            {
                let e = &edges[j as usize];
                let [a, b] = e.particles.map(|p| p as usize);
                let g = (x[a] - x[b]).normalize_or_zero() * sign;
                for &(c, v) in self.edge_basis(j as usize) {
                    let u = g * (v as Real);
                    match local.iter_mut().find(|s| s.0 == c) {
                        Some(slot) => slot.1 += u,
                        None => local.push((c, u)),
                    }
                }
            }
            for p in 0..local.len() {
                for q in 0..=p {
                    let (cp, up) = local[p];
                    let (cq, uq) = local[q];
                    let v = f64::from(wi) * f64::from(up.dot(uq));
                    *self.at(cp as usize, cq as usize) += v;
                }
            }
        }
        self.local = local;
        self.factored = self.factor();
        self.factored_h = h;
        self.stale = false;
    }

    /// Envelope Cholesky in place; false when the operator is not positive definite.
    fn factor(&mut self) -> bool {
        let m = self.unknowns;
        for j in 0..m {
            let (fj, rj) = (self.first[j], self.row_start[j]);
            let mut d = self.matrix[rj + j - fj];
            for k in fj..j {
                let l = self.matrix[rj + k - fj];
                d -= l * l;
            }
            if d <= 0.0 || !d.is_finite() {
                // A column no edge reaches (or a singular one): leave it out.
                if d.abs() < 1e-300 || d <= 0.0 {
                    self.matrix[rj + j - fj] = f64::INFINITY;
                    for i in j + 1..m {
                        let (fi, ri) = (self.first[i], self.row_start[i]);
                        if fi <= j {
                            self.matrix[ri + j - fi] = 0.0;
                        }
                    }
                    continue;
                }
                return false;
            }
            let d = d.sqrt();
            self.matrix[rj + j - fj] = d;
            for i in j + 1..m {
                let (fi, ri) = (self.first[i], self.row_start[i]);
                if fi > j {
                    continue;
                }
                let mut s = self.matrix[ri + j - fi];
                for k in fi.max(fj)..j {
                    s -= self.matrix[ri + k - fi] * self.matrix[rj + k - fj];
                }
                self.matrix[ri + j - fi] = s / d;
            }
        }
        true
    }

    /// Solves `L Lᵀ y = rhs` in place.
    fn solve(&mut self) {
        let m = self.unknowns;
        for i in 0..m {
            let (fi, ri) = (self.first[i], self.row_start[i]);
            let mut s = self.rhs[i];
            for k in fi..i {
                s -= self.matrix[ri + k - fi] * self.rhs[k];
            }
            self.rhs[i] = s / self.matrix[ri + i - fi];
        }
        for i in (0..m).rev() {
            let (fi, ri) = (self.first[i], self.row_start[i]);
            let y = self.rhs[i] / self.matrix[ri + i - fi];
            self.rhs[i] = y;
            for k in fi..i {
                self.rhs[k] -= self.matrix[ri + k - fi] * y;
            }
        }
    }

    /// One coarse correction of the stretch `edges` with multipliers `lambda` (N·s², updated)
    /// at substep `h` (s): `x` (m) moves by the impulses of the coarse multipliers, with the
    /// inverse masses `w` (1/kg; contact particles heavier, as `contacts` were when the
    /// factor was built, once per frame). Returns the largest move (m).
    pub fn correct(
        &mut self,
        x: &mut [Vec3],
        w: &[Real],
        edges: &[Distance],
        lambda: &mut [Real],
        contacts: &[Contact],
        h: Real,
    ) -> Real {
        if self.stale || self.factored_h != h || std::env::var("DRAPE_ALWAYS").is_ok() {
            self.assemble(x, w, edges, contacts, h);
        }
        if !self.factored {
            return 0.0;
        }
        self.rhs.fill(0.0);
        let inv_h2 = 1.0 / (f64::from(h) * f64::from(h));
        for (j, (e, &l)) in edges.iter().zip(lambda.iter()).enumerate() {
            let [a, b] = e.particles.map(|p| p as usize);
            let len = (x[a] - x[b]).length();
            if !(len > 1e-9) {
                continue;
            }
            let at = f64::from(e.compliance_m_per_n) * inv_h2;
            let r = f64::from(len - e.rest_length_m) + at * f64::from(l);
            for &(c, v) in
                &self.basis[self.basis_start[j] as usize..self.basis_start[j + 1] as usize]
            {
                self.rhs[c as usize] -= v * r;
            }
        }
        self.solve();
        if self.rhs.iter().any(|v| !v.is_finite()) {
            return 0.0;
        }
        let mut largest: Real = 0.0;
        for (j, (e, l)) in edges.iter().zip(lambda.iter_mut()).enumerate() {
            let dl: f64 = self
                .edge_basis(j)
                .iter()
                .map(|&(c, v)| v * self.rhs[c as usize])
                .sum();
            if dl == 0.0 {
                continue;
            }
            let [a, b] = e.particles.map(|p| p as usize);
            let n = (x[a] - x[b]).normalize_or_zero();
            let dl = dl as Real;
            x[a] += n * (self.w_coarse[a] * dl);
            x[b] -= n * (self.w_coarse[b] * dl);
            *l += dl;
            largest = largest.max(self.w_coarse[a].max(self.w_coarse[b]) * dl.abs());
        }
        largest
    }
}

/// Two unit tangent axes per aggregate: the principal axes of its particles' rest positions.
fn tangent_frames(positions: &[Vec3], agg: &[u32], aggregates: usize) -> Vec<[Vec3; 2]> {
    let mut sum = vec![(Vec3::ZERO, 0usize); aggregates];
    for (p, &a) in positions.iter().zip(agg) {
        sum[a as usize].0 += *p;
        sum[a as usize].1 += 1;
    }
    let mut cov = vec![[[0.0f64; 3]; 3]; aggregates];
    for (p, &a) in positions.iter().zip(agg) {
        let (s, k) = sum[a as usize];
        let d = *p - s / k as Real;
        let d = [f64::from(d.x), f64::from(d.y), f64::from(d.z)];
        for r in 0..3 {
            for c in 0..3 {
                cov[a as usize][r][c] += d[r] * d[c];
            }
        }
    }
    let mul = |m: &[[f64; 3]; 3], v: [f64; 3]| -> [f64; 3] {
        [0, 1, 2].map(|r| m[r][0] * v[0] + m[r][1] * v[1] + m[r][2] * v[2])
    };
    let unit = |v: [f64; 3]| -> [f64; 3] {
        let n = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
        if n > 0.0 {
            v.map(|x| x / n)
        } else {
            [1.0, 0.0, 0.0]
        }
    };
    cov.iter()
        .map(|m| {
            let mut e1 = unit([1.0, 0.7, 0.3]);
            for _ in 0..30 {
                e1 = unit(mul(m, e1));
            }
            let mut e2 = unit([0.3, 1.0, 0.7]);
            for _ in 0..30 {
                let v = mul(m, e2);
                let d = v[0] * e1[0] + v[1] * e1[1] + v[2] * e1[2];
                e2 = unit([v[0] - d * e1[0], v[1] - d * e1[1], v[2] - d * e1[2]]);
            }
            let to = |v: [f64; 3]| Vec3::new(v[0] as Real, v[1] as Real, v[2] as Real);
            [to(e1), to(e2)]
        })
        .collect()
}

/// Each particle's neighbours over the edges (compressed rows).
fn adjacency(n: usize, edges: &[Distance]) -> (Vec<usize>, Vec<u32>) {
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
    (start, adj)
}

/// Aggregates of the given radius (edges), breadth first from each unassigned particle in
/// index order, so that aggregates near in index are near in the cloth (a narrow envelope).
fn aggregate(n: usize, start: &[usize], adj: &[u32], radius: usize) -> (Vec<u32>, usize) {
    let mut agg = vec![u32::MAX; n];
    let mut depth = vec![0usize; n];
    let mut queue = std::collections::VecDeque::new();
    let mut count = 0u32;
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
    (agg, count as usize)
}

/// The aggregates' indicators smoothed `steps` times over the edges, each particle's cut to its
/// [`SUPPORT`] largest and renormalised.
fn smooth(agg: &[u32], start: &[usize], adj: &[u32], steps: usize) -> Vec<[(u32, f64); SUPPORT]> {
    const OMEGA: f64 = 2.0 / 3.0;
    let n = agg.len();
    let mut phi: Vec<Vec<(u32, f64)>> = agg.iter().map(|&a| vec![(a, 1.0)]).collect();
    for _ in 0..steps {
        let next = (0..n)
            .map(|i| {
                let nb = &adj[start[i]..start[i + 1]];
                if nb.is_empty() {
                    return phi[i].clone();
                }
                let mut acc: Vec<(u32, f64)> = phi[i]
                    .iter()
                    .map(|&(a, v)| (a, (1.0 - OMEGA) * v))
                    .collect();
                let share = OMEGA / nb.len() as f64;
                for &j in nb {
                    for &(a, v) in &phi[j as usize] {
                        match acc.iter_mut().find(|s| s.0 == a) {
                            Some(slot) => slot.1 += share * v,
                            None => acc.push((a, share * v)),
                        }
                    }
                }
                acc
            })
            .collect();
        phi = next;
    }
    phi.into_iter()
        .map(|mut p| {
            p.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            p.truncate(SUPPORT);
            let sum: f64 = p.iter().map(|s| s.1).sum();
            let mut w = [(0u32, 0.0f64); SUPPORT];
            for (slot, (a, v)) in w.iter_mut().zip(p) {
                *slot = (a, v / sum);
            }
            w
        })
        .collect()
}

/// Appends `φ_a − φ_b` (the aggregates an edge's length depends on) to `out`.
fn difference(a: &[(u32, f64); SUPPORT], b: &[(u32, f64); SUPPORT], out: &mut Vec<(u32, f64)>) {
    let from = out.len();
    out.extend(a.iter().copied().filter(|s| s.1 != 0.0));
    for &(agg, v) in b.iter().filter(|s| s.1 != 0.0) {
        match out[from..].iter_mut().find(|s| s.0 == agg) {
            Some(slot) => slot.1 -= v,
            None => out.push((agg, -v)),
        }
    }
    let mut k = from;
    for i in from..out.len() {
        if out[i].1.abs() > 1e-12 {
            out[k] = out[i];
            k += 1;
        }
    }
    out.truncate(k);
}
