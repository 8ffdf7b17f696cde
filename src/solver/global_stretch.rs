//! A global solve of the stretch constraints: every edge of the cloth at once, by conjugate
//! gradients, instead of one Gauss–Seidel pass over them.
//!
//! One Gauss–Seidel pass carries a load only about one edge through the mesh, so with a few
//! passes per substep the stiff stretch constraints of real fabrics (cotton: 2000 N/m) are far
//! from satisfied: the cloth stretches by per cents where the fabric would stretch by
//! thousandths, and how much depends on the substep count and the mesh resolution
//! (docs/solver.md, "Global stretch solve"; docs/cusick.md, "Why it spreads"). This module
//! takes, in place of that pass, one Newton step of XPBD on all stretch constraints together
//! (Macklin, Müller & Chentanez 2016, *XPBD*, eq. 8–9, with the same simplification as the
//! per-constraint projection):
//!
//! ```text
//! (J M⁻¹ Jᵀ + α̃) Δλ = −C(x) − α̃ λ,      x ← x + M⁻¹ Jᵀ Δλ,      λ ← λ + Δλ
//! ```
//!
//! - `C_j = |x_a − x_b| − L_j` for each edge `j = (a, b)` (m), `J` its gradient (rows
//!   `n_j = (x_a − x_b)/|x_a − x_b|` at `a`, `−n_j` at `b`), evaluated at the current positions;
//! - `M⁻¹` the inverse masses (1/kg; 0 for pinned particles), `α̃_j = α_j/h²` the edge's
//!   compliance over the squared substep (kg⁻¹);
//! - the matrix `A = J M⁻¹ Jᵀ + α̃` is symmetric positive definite wherever `α̃ > 0` or the
//!   edge has a free end, so conjugate gradients apply. It is never assembled: `A·v` is one
//!   scatter over the edges (`u = M⁻¹ Jᵀ v`), one gather (`J u`) and a diagonal term, all in
//!   place in buffers kept between calls (no allocation once warm). The preconditioner is `A`'s
//!   diagonal, `w_a + w_b + α̃_j`.
//!
//! The iteration stops when the residual's norm falls below [`GlobalSolve::tolerance`] times
//! the right-hand side's, or after [`GlobalSolve::max_iterations`]. Edges shorter than
//! [`DEGENERATE_LENGTH_SQ`](crate::math::DEGENERATE_LENGTH_SQ)'s root, or with both ends pinned and no compliance, take no part
//! (their `Δλ` is 0), as the per-edge projection leaves them.
//!
//! The arithmetic is serial and in a fixed order, so the result is deterministic.
//!
//! The same step applies to any constraint whose `C` and gradient can be evaluated at the
//! current positions ([`GlobalRow`]): [`GlobalSolve<2>`] over the stretch edges
//! ([`GlobalStretch`]) and [`GlobalSolve<4>`] over the dihedral bending hinges
//! ([`GlobalBend`]), and [`GlobalSolve<3>`] over the triangles' shear ([`GlobalShear`]).
//! Bending needs it as much as stretch on fine meshes: its operator is fourth
//! order, so one Gauss–Seidel pass carries a bending load about one hinge, and the substeps a
//! sweep needs grow with the vertex count instead of its square root (tests/cantilever.rs).

use crate::constraints::{
    dihedral_angle_and_gradient, distance_and_gradient, triangle_strain_and_gradient, wrap_angle,
    Bend, Distance, Shear,
};
use crate::math::{Real, Vec3};

/// A constraint the global solve can take: `K` particles, a compliance, and its value and
/// gradient at given positions.
pub trait GlobalRow<const K: usize> {
    /// The particle indices.
    fn particles(&self) -> [usize; K];
    /// Compliance (units of `C²` per J).
    fn compliance(&self) -> Real;
    /// `C(x)` and `∇C` at each particle, or `None` where the constraint is degenerate.
    fn linearise(&self, x: &[Vec3]) -> Option<(Real, [Vec3; K])>;
}

impl GlobalRow<2> for Distance {
    fn particles(&self) -> [usize; 2] {
        self.particles.map(|i| i as usize)
    }
    fn compliance(&self) -> Real {
        self.compliance_m_per_n
    }
    fn linearise(&self, x: &[Vec3]) -> Option<(Real, [Vec3; 2])> {
        let [a, b] = GlobalRow::particles(self);
        distance_and_gradient([x[a], x[b]], self.rest_length_m)
    }
}

impl GlobalRow<4> for Bend {
    fn particles(&self) -> [usize; 4] {
        self.particles.map(|i| i as usize)
    }
    fn compliance(&self) -> Real {
        self.compliance_per_n_m
    }
    fn linearise(&self, x: &[Vec3]) -> Option<(Real, [Vec3; 4])> {
        let p = GlobalRow::particles(self).map(|i| x[i]);
        let (theta, g) = dihedral_angle_and_gradient(p)?;
        Some((wrap_angle(theta - self.rest_angle_rad), g))
    }
}

impl GlobalRow<3> for Shear {
    fn particles(&self) -> [usize; 3] {
        self.particles.map(|i| i as usize)
    }
    fn compliance(&self) -> Real {
        self.compliance_per_n_m
    }
    fn linearise(&self, x: &[Vec3]) -> Option<(Real, [Vec3; 3])> {
        let p = GlobalRow::particles(self).map(|i| x[i]);
        triangle_strain_and_gradient(p, self.rest_inverse, self.strain)
    }
}

/// The global solve over the stretch edges.
pub type GlobalStretch = GlobalSolve<2>;
/// The global solve over the bending hinges.
pub type GlobalBend = GlobalSolve<4>;
/// The global solve over the triangles' shear.
pub type GlobalShear = GlobalSolve<3>;

/// Default relative residual at which the conjugate gradients stop.
pub const DEFAULT_TOLERANCE: Real = 1.0e-3;
/// Default cap on the conjugate-gradient iterations of one solve.
pub const DEFAULT_MAX_ITERATIONS: usize = 100;

/// What one [`GlobalSolve::solve`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GlobalReport {
    /// Conjugate-gradient iterations run.
    pub iterations: usize,
    /// Largest `|C_j + α̃_j λ_j|` before the step (m for stretch, rad for bending): how far
    /// the constraints were from satisfied.
    pub max_violation: Real,
    /// Constraints left out because they were degenerate (an edge of (almost) no length, a
    /// hinge with a (near) zero-area triangle).
    pub degenerate: usize,
}

/// The buffers of the global solve over constraints of `K` particles, reused between calls.
#[derive(Clone, Debug)]
pub struct GlobalSolve<const K: usize> {
    /// Relative residual at which the iteration stops.
    pub tolerance: Real,
    /// Most conjugate-gradient iterations per solve.
    pub max_iterations: usize,
    grad: Vec<[Vec3; K]>,
    alpha_tilde: Vec<Real>,
    inv_diag: Vec<Real>,
    delta_lambda: Vec<Real>,
    r: Vec<Real>,
    z: Vec<Real>,
    p: Vec<Real>,
    ap: Vec<Real>,
    u: Vec<Vec3>,
    /// The last `Δλ` of each sweep slot: the next solve's first guess in that slot (see
    /// [`GlobalSolve::solve`]).
    previous: Vec<Vec<Real>>,
}

impl<const K: usize> Default for GlobalSolve<K> {
    fn default() -> Self {
        Self {
            tolerance: DEFAULT_TOLERANCE,
            max_iterations: DEFAULT_MAX_ITERATIONS,
            grad: Vec::new(),
            alpha_tilde: Vec::new(),
            inv_diag: Vec::new(),
            delta_lambda: Vec::new(),
            r: Vec::new(),
            z: Vec::new(),
            p: Vec::new(),
            ap: Vec::new(),
            u: Vec::new(),
            previous: Vec::new(),
        }
    }
}

impl<const K: usize> GlobalSolve<K> {
    /// One Newton step of XPBD on all `edges` (see the module docs; any [`GlobalRow`]): moves
    /// `x` (m) and accumulates the multipliers `lambda` (one per constraint); `w` are the
    /// inverse masses (1/kg) and `h` the substep (s).
    ///
    /// `slot` is the sweep's number within the substep: the solve starts from the `Δλ` that the
    /// same slot found one substep earlier (the first sweep of a substep does most of the work
    /// and the later ones polish, so each is warm-started from its own kind).
    pub fn solve<T: GlobalRow<K>>(
        &mut self,
        x: &mut [Vec3],
        w: &[Real],
        edges: &[T],
        lambda: &mut [Real],
        h: Real,
        slot: usize,
    ) -> GlobalReport {
        let m = edges.len();
        let mut report = GlobalReport::default();
        for buffer in [
            &mut self.alpha_tilde,
            &mut self.inv_diag,
            &mut self.delta_lambda,
            &mut self.r,
            &mut self.z,
            &mut self.p,
            &mut self.ap,
        ] {
            buffer.clear();
            buffer.resize(m, 0.0);
        }
        self.grad.clear();
        self.grad.resize(m, [Vec3::ZERO; K]);
        self.u.clear();
        self.u.resize(x.len(), Vec3::ZERO);
        let inv_h2 = 1.0 / (h * h);

        // Linearise at the current positions; b = −C − α̃λ goes into r (Δλ starts at 0, so the
        // residual is b).
        let mut b_norm2: Real = 0.0;
        for (j, e) in edges.iter().enumerate() {
            let Some((c, g)) = e.linearise(x) else {
                report.degenerate += 1;
                continue;
            };
            let at = e.compliance() * inv_h2;
            let ps = e.particles();
            let diag = (0..K)
                .map(|k| w[ps[k]] * g[k].length_squared())
                .sum::<Real>()
                + at;
            if diag <= 0.0 || !diag.is_finite() || !c.is_finite() {
                continue;
            }
            self.grad[j] = g;
            self.alpha_tilde[j] = at;
            self.inv_diag[j] = 1.0 / diag;
            let rhs = -c - at * lambda[j];
            report.max_violation = report.max_violation.max(rhs.abs());
            self.r[j] = rhs;
            b_norm2 += rhs * rhs;
        }
        if b_norm2 == 0.0 || !b_norm2.is_finite() {
            return report;
        }
        let stop2 = b_norm2 * self.tolerance * self.tolerance;

        // Warm start: the previous solve's Δλ (the same edges, one sweep or substep earlier,
        // under nearly the same load) is a far better first guess than 0 for a cloth at or near
        // rest; r = b − A·Δλ₀. It changes how many iterations it takes, not what they converge to.
        if self.previous.len() <= slot {
            self.previous.resize(slot + 1, Vec::new());
        }
        if self.previous[slot].len() == m {
            for j in 0..m {
                let guess = self.previous[slot][j];
                let keep = self.inv_diag[j] > 0.0 && guess.is_finite();
                self.p[j] = if keep { guess } else { 0.0 };
            }
            self.apply(w, edges);
            for j in 0..m {
                self.delta_lambda[j] = self.p[j];
                self.r[j] -= self.ap[j];
            }
        }

        // Preconditioned conjugate gradients on A Δλ = b.
        for j in 0..m {
            self.z[j] = self.r[j] * self.inv_diag[j];
            self.p[j] = self.z[j];
        }
        let mut rz: Real = dot(&self.r, &self.z);
        for _ in 0..self.max_iterations {
            report.iterations += 1;
            self.apply(w, edges);
            let pap = dot(&self.p, &self.ap);
            if pap <= 0.0 || !pap.is_finite() {
                break;
            }
            let alpha = rz / pap;
            let mut r2: Real = 0.0;
            for j in 0..m {
                self.delta_lambda[j] += alpha * self.p[j];
                self.r[j] -= alpha * self.ap[j];
                r2 += self.r[j] * self.r[j];
            }
            if r2 <= stop2 {
                break;
            }
            for j in 0..m {
                self.z[j] = self.r[j] * self.inv_diag[j];
            }
            let rz_next = dot(&self.r, &self.z);
            let beta = rz_next / rz;
            rz = rz_next;
            for j in 0..m {
                self.p[j] = self.z[j] + beta * self.p[j];
            }
        }

        self.previous[slot].clone_from(&self.delta_lambda);

        // x += M⁻¹ Jᵀ Δλ, λ += Δλ.
        scatter(&mut self.u, &self.grad, &self.delta_lambda, w, edges);
        for (xi, ui) in x.iter_mut().zip(&self.u) {
            *xi += *ui;
        }
        for (l, d) in lambda.iter_mut().zip(&self.delta_lambda) {
            *l += d;
        }
        report
    }

    /// `ap = A p = J M⁻¹ Jᵀ p + α̃ p`.
    fn apply<T: GlobalRow<K>>(&mut self, w: &[Real], edges: &[T]) {
        scatter(&mut self.u, &self.grad, &self.p, w, edges);
        for (j, e) in edges.iter().enumerate() {
            let ps = e.particles();
            let g = &self.grad[j];
            self.ap[j] = (0..K).map(|k| g[k].dot(self.u[ps[k]])).sum::<Real>()
                + self.alpha_tilde[j] * self.p[j];
        }
    }
}

/// `u = M⁻¹ Jᵀ v`: each constraint's `v_j ∇_k C_j` added at its particles, times the inverse
/// masses `w` (1/kg); a displacement (m) when `v` is a `Δλ`.
fn scatter<const K: usize, T: GlobalRow<K>>(
    u: &mut [Vec3],
    grad: &[[Vec3; K]],
    v: &[Real],
    w: &[Real],
    rows: &[T],
) {
    u.fill(Vec3::ZERO);
    for ((e, g), &vj) in rows.iter().zip(grad).zip(v) {
        let ps = e.particles();
        for k in 0..K {
            u[ps[k]] += g[k] * vj;
        }
    }
    for (ui, &wi) in u.iter_mut().zip(w) {
        *ui *= wi;
    }
}

/// `Σ a_j b_j`.
fn dot(a: &[Real], b: &[Real]) -> Real {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::constraints::solve_distance;

    fn chain(n: usize, rest: Real, stretch: Real) -> (Vec<Vec3>, Vec<Real>, Vec<Distance>) {
        let x: Vec<Vec3> = (0..n)
            .map(|i| Vec3::new(0.0, -(i as Real) * rest * (1.0 + stretch), 0.0))
            .collect();
        let mut w = vec![100.0; n];
        w[0] = 0.0;
        let edges = (0..n - 1)
            .map(|i| Distance {
                particles: [i as u32, i as u32 + 1],
                rest_length_m: rest,
                compliance_m_per_n: 0.0,
            })
            .collect();
        (x, w, edges)
    }

    /// A rigid chain stretched by 10 % is put back to its rest lengths in one solve (up to the
    /// linearisation, which is exact along a straight chain), where one Gauss–Seidel pass
    /// leaves most of the error.
    #[test]
    fn a_stretched_chain_is_restored_in_one_solve() {
        let (x0, w, edges) = chain(64, 0.01, 0.1);
        let mut x = x0.clone();
        let mut lambda = vec![0.0; edges.len()];
        let mut g = GlobalStretch {
            tolerance: 1.0e-8,
            max_iterations: 500,
            ..Default::default()
        };
        let report = g.solve(&mut x, &w, &edges, &mut lambda, 1.0 / 600.0, 0);
        assert!(report.iterations > 1);
        assert!((report.max_violation - 0.001).abs() < 1e-6);
        for e in &edges {
            let [a, b] = e.particles.map(|i| i as usize);
            let len = x[a].distance(x[b]);
            assert!((len - 0.01).abs() < 1e-5, "{len}");
        }
        // One Gauss–Seidel pass leaves the far end stretched.
        let mut y = x0;
        let mut l2 = vec![0.0; edges.len()];
        for (e, l) in edges.iter().zip(&mut l2) {
            let [a, b] = e.particles.map(|i| i as usize);
            if let crate::constraints::Outcome::Move([da, db]) =
                solve_distance([y[a], y[b]], [w[a], w[b]], 0.01, 0.0, 1.0 / 600.0, l)
            {
                y[a] += da;
                y[b] += db;
            }
        }
        let worst = (edges.iter())
            .map(|e| y[e.particles[0] as usize].distance(y[e.particles[1] as usize]) - 0.01)
            .fold(0.0, Real::max);
        assert!(worst > 1.0e-4, "{worst}");
    }

    /// With compliance, the step is XPBD's: a single free particle hanging from a pinned one by a
    /// compliant spring moves by exactly what the per-constraint projection gives.
    #[test]
    fn one_hinge_matches_the_per_constraint_projection() {
        // A hinge folded by 0.3 rad out of its flat rest shape, one wing's tip free.
        let x0 = vec![
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(0.0, 0.0, 0.01),
            Vec3::new(-0.01, 0.0, 0.005),
            Vec3::new(0.01 * 0.3f32.cos(), -0.01 * 0.3f32.sin(), 0.005),
        ];
        let w = [0.0, 0.0, 0.0, 80.0];
        let b = Bend {
            particles: [0, 1, 2, 3],
            rest_angle_rad: 0.0,
            compliance_per_n_m: 2.0e3,
        };
        let h = 1.0 / 240.0;
        let mut x = x0.clone();
        let mut lambda = [0.0];
        let report = GlobalBend::default().solve(&mut x, &w, &[b], &mut lambda, h, 0);
        assert!(report.iterations >= 1 && report.max_violation > 0.2);
        let mut l = 0.0;
        let p = [x0[0], x0[1], x0[2], x0[3]];
        let crate::constraints::Outcome::Move(d) =
            crate::constraints::solve_bend(p, w, 0.0, 2.0e3, h, &mut l)
        else {
            panic!("no move");
        };
        for k in 0..4 {
            assert!((x[k] - (x0[k] + d[k])).length() < 1e-7, "particle {k}");
        }
        assert!((lambda[0] - l).abs() < 1e-6 * l.abs().max(1.0));
        assert!(l != 0.0);
    }

    #[test]
    fn one_triangle_matches_the_per_constraint_shear_projection() {
        // A right triangle sheared by 0.2 (its third vertex moved along the warp).
        let rest = [
            Vec3::ZERO,
            Vec3::new(0.01, 0.0, 0.0),
            Vec3::new(0.0, 0.0, 0.01),
        ];
        let inv = crate::constraints::shear_rest_inverse(rest, Vec3::X).unwrap();
        let x0 = vec![rest[0], rest[1], rest[2] + Vec3::new(0.002, 0.0, 0.0)];
        let w = [0.0, 60.0, 60.0];
        let t = Shear {
            particles: [0, 1, 2],
            rest_inverse: inv,
            compliance_per_n_m: 5.0e2,
            strain: crate::constraints::Strain::Shear,
        };
        let h = 1.0 / 240.0;
        let mut x = x0.clone();
        let mut lambda = [0.0];
        let report = GlobalShear::default().solve(&mut x, &w, &[t], &mut lambda, h, 0);
        assert!(report.iterations >= 1 && (report.max_violation - 0.2).abs() < 1e-4);
        let mut l = 0.0;
        let crate::constraints::Outcome::Move(d) = crate::constraints::solve_shear(
            [x0[0], x0[1], x0[2]],
            w,
            inv,
            crate::constraints::Strain::Shear,
            5.0e2,
            h,
            &mut l,
        ) else {
            panic!("no move");
        };
        for k in 0..3 {
            assert!((x[k] - (x0[k] + d[k])).length() < 1e-7, "particle {k}");
        }
        assert!((lambda[0] - l).abs() < 1e-6 * l.abs().max(1.0) && l != 0.0);
    }

    #[test]
    fn one_edge_matches_the_per_constraint_projection() {
        let x0 = vec![Vec3::ZERO, Vec3::new(0.0, -0.012, 0.0)];
        let w = [0.0, 50.0];
        let e = Distance {
            particles: [0, 1],
            rest_length_m: 0.01,
            compliance_m_per_n: 1.0e-4,
        };
        let h = 1.0 / 240.0;
        let mut x = x0.clone();
        let mut lambda = [0.0];
        let mut g = GlobalStretch::default();
        g.solve(&mut x, &w, &[e], &mut lambda, h, 0);
        let mut l = 0.0;
        let crate::constraints::Outcome::Move([_, d]) =
            solve_distance([x0[0], x0[1]], [w[0], w[1]], 0.01, 1.0e-4, h, &mut l)
        else {
            panic!("no move");
        };
        assert!((x[1] - (x0[1] + d)).length() < 1e-7);
        assert!((lambda[0] - l).abs() < 1e-7 * l.abs().max(1.0));
    }

    /// Degenerate edges and fully pinned ones are left alone; nothing turns non-finite.
    #[test]
    fn degenerate_and_pinned_edges_are_skipped() {
        let mut x = vec![Vec3::ZERO, Vec3::ZERO, Vec3::X];
        let w = [1.0, 1.0, 0.0];
        let edges = [
            Distance {
                particles: [0, 1],
                rest_length_m: 0.1,
                compliance_m_per_n: 0.0,
            },
            Distance {
                particles: [2, 2],
                rest_length_m: 0.1,
                compliance_m_per_n: 0.0,
            },
        ];
        let mut lambda = [0.0; 2];
        let report = GlobalStretch::default().solve(&mut x, &w, &edges, &mut lambda, 0.01, 0);
        assert_eq!(report.degenerate, 2);
        assert!(x.iter().all(|p| p.is_finite()));
        assert_eq!(lambda, [0.0, 0.0]);
    }
}
