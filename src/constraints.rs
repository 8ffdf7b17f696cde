//! Constraint kinds as plain data, and the pure XPBD `solve_*` functions.
//!
//! # XPBD update
//!
//! For one scalar constraint `C(x) = 0` (or `C(x) ≥ 0` for contacts) with compliance `α`
//! (Macklin, Müller & Chentanez, *XPBD*, MIG 2016; Macklin et al., *Small Steps in Physics
//! Simulation*, SCA 2019):
//!
//! ```text
//! α̃  = α / h²
//! Δλ = (−C − α̃·λ) / (Σ_i w_i·|∇C_i|² + α̃)
//! λ  += Δλ
//! x_i += w_i·∇C_i·Δλ
//! ```
//!
//! - `h` is the substep length (s), `w_i` the inverse mass of particle `i` (1/kg; 0 = fixed),
//! - `∇C_i` the gradient of `C` with respect to particle `i`'s position,
//! - `λ` the constraint's Lagrange multiplier, reset to 0 at the start of every substep and
//!   accumulated over that substep's iterations.
//!
//! `α` has the units of `C² / energy`: m/N for a distance constraint (C in m), 1/(N·m) for
//! the dimensionless strain and angle constraints. [`crate::garment::material`] turns fabric properties in
//! real units into these compliances.
//!
//! # Degenerate cases
//!
//! - A direction that is undefined (two coincident particles, a zero-area triangle) makes the
//!   solve return [`Outcome::Degenerate`] with no change; the solver counts these.
//! - A zero denominator (all particles fixed and `α = 0`) returns [`Outcome::Rigid`] with no
//!   change.
//!
//! The `solve_*` functions are pure: they take positions and inverse masses by value and return
//! the position corrections, so the worked examples test them directly.

use crate::math::{Real, Vec3, DEGENERATE_AREA2_SQ, DEGENERATE_LENGTH_SQ};

/// What one constraint projection did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Outcome<const N: usize> {
    /// Add these corrections (m) to the particles' positions.
    Move([Vec3; N]),
    /// The constraint's direction is undefined (coincident particles, zero area): skipped.
    Degenerate,
    /// The denominator is zero (every particle fixed and no compliance): nothing can move.
    Rigid,
}

/// The multiplier update `Δλ` of one XPBD step, or `None` for a zero denominator.
///
/// `c` is the constraint value, `grad_w` = `Σ w_i |∇C_i|²`, `alpha_tilde` = `α/h²`.
#[inline]
pub fn delta_lambda(c: Real, grad_w: Real, alpha_tilde: Real, lambda: Real) -> Option<Real> {
    let denom = grad_w + alpha_tilde;
    if denom <= 0.0 || !denom.is_finite() {
        return None;
    }
    Some((-c - alpha_tilde * lambda) / denom)
}

/// Distance between two particles; the stretch constraint on a mesh edge.
///
/// `C = |x_a − x_b| − rest_length_m`. 12 bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Distance {
    /// Particle indices.
    pub particles: [u32; 2],
    /// Rest length (m).
    pub rest_length_m: Real,
    /// Compliance, the inverse of the spring stiffness (m/N).
    pub compliance_m_per_n: Real,
}

/// Projects a distance constraint: `C = |p₀ − p₁| − rest`.
///
/// `alpha` is the compliance (m/N) and `h` the substep (s).
#[inline]
pub fn solve_distance(
    p: [Vec3; 2],
    w: [Real; 2],
    rest_length_m: Real,
    alpha: Real,
    h: Real,
    lambda: &mut Real,
) -> Outcome<2> {
    let Some((c, [n, _])) = distance_and_gradient(p, rest_length_m) else {
        return Outcome::Degenerate;
    };
    let Some(dl) = delta_lambda(c, w[0] + w[1], alpha / (h * h), *lambda) else {
        return Outcome::Rigid;
    };
    *lambda += dl;
    Outcome::Move([n * (w[0] * dl), n * (-w[1] * dl)])
}

/// In-plane shear of one triangle, strain-based (Müller et al., *Strain Based Dynamics*, 2014).
///
/// The deformation gradient maps the triangle's rest coordinates in its material frame
/// (warp `u`, weft `v`) to world space:
///
/// ```text
/// F  = [x₁ − x₀, x₂ − x₀] · D⁻¹          (3×2; D = rest edge vectors in the material frame)
/// f_u, f_v = columns of F                 (unit length and orthogonal at rest)
/// C  = f_u · f_v                           (the engineering shear strain γ for small strains)
/// ```
///
/// The same machinery measures the triangle's stretch along the yarns when the membrane is
/// built per triangle ([`crate::garment::material::Membrane::Triangles`]): `C = |f_u| − 1` (warp) and
/// `C = |f_v| − 1` (weft); see [`Strain`].
///
/// Works on any triangle mesh: no grid structure is assumed. 36 bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shear {
    /// Particle indices `[x₀, x₁, x₂]`.
    pub particles: [u32; 3],
    /// Inverse of the rest matrix `D` (columns: rest edges `x₁−x₀`, `x₂−x₀` in the material
    /// frame, m), row-major `[d00, d01, d10, d11]` (1/m).
    pub rest_inverse: [Real; 4],
    /// Compliance `1 / (k · A_rest)`, (N·m)⁻¹, with `k` the fabric's shear stiffness (or its
    /// warp or weft stretch stiffness for those strains), N/m.
    pub compliance_per_n_m: Real,
    /// Which strain of the triangle this constraint holds.
    pub strain: Strain,
}

/// Which in-plane strain of a triangle a [`Shear`] constraint holds at zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Strain {
    /// The shear strain `f_u · f_v`.
    #[default]
    Shear,
    /// The stretch along the warp, `|f_u| − 1`.
    Warp,
    /// The stretch along the weft, `|f_v| − 1`.
    Weft,
}

/// Computes `D⁻¹` for a triangle given its rest positions and the material's warp direction.
///
/// `warp` is projected into the triangle's plane; when it is (nearly) normal to the plane, the
/// first edge is used. Returns `None` for a zero-area triangle.
pub fn shear_rest_inverse(rest: [Vec3; 3], warp: Vec3) -> Option<[Real; 4]> {
    let e1 = rest[1] - rest[0];
    let e2 = rest[2] - rest[0];
    let n = e1.cross(e2);
    if n.length_squared() < DEGENERATE_AREA2_SQ {
        return None;
    }
    let n = n.normalize();
    let u = (warp - n * warp.dot(n))
        .try_normalize()
        .or_else(|| e1.try_normalize())?;
    let v = n.cross(u);
    // D = [[e1·u, e2·u], [e1·v, e2·v]]
    let (a, b, c, d) = (e1.dot(u), e2.dot(u), e1.dot(v), e2.dot(v));
    let det = a * d - b * c;
    if det.abs() < 1.0e-12 {
        return None;
    }
    Some([d / det, -b / det, -c / det, a / det])
}

/// A triangle's shear strain `C = f_u · f_v` (see [`Shear`]) and its gradients, or `None` for
/// a (near) zero-area triangle.
#[inline]
pub fn shear_strain_and_gradient(
    p: [Vec3; 3],
    rest_inverse: [Real; 4],
) -> Option<(Real, [Vec3; 3])> {
    triangle_strain_and_gradient(p, rest_inverse, Strain::Shear)
}

/// A triangle's strain `strain` (see [`Shear`] and [`Strain`]) and its gradients, or `None` for
/// a (near) zero-area triangle, or a yarn direction crushed to (near) zero length.
#[inline]
pub fn triangle_strain_and_gradient(
    p: [Vec3; 3],
    rest_inverse: [Real; 4],
    strain: Strain,
) -> Option<(Real, [Vec3; 3])> {
    let [d00, d01, d10, d11] = rest_inverse;
    let e1 = p[1] - p[0];
    let e2 = p[2] - p[0];
    if e1.cross(e2).length_squared() < DEGENERATE_AREA2_SQ {
        return None;
    }
    let fu = e1 * d00 + e2 * d10;
    let fv = e1 * d01 + e2 * d11;
    let (c, g1, g2) = match strain {
        // ∂C/∂x₁ = d00·f_v + d01·f_u ; ∂C/∂x₂ = d10·f_v + d11·f_u ; ∂C/∂x₀ = −(sum).
        Strain::Shear => (fu.dot(fv), fv * d00 + fu * d01, fv * d10 + fu * d11),
        // C = |f_u| − 1: ∂C/∂x₁ = d00·f̂_u ; ∂C/∂x₂ = d10·f̂_u.
        Strain::Warp => {
            let len = fu.length();
            let n = fu.try_normalize()?;
            (len - 1.0, n * d00, n * d10)
        }
        // C = |f_v| − 1: ∂C/∂x₁ = d01·f̂_v ; ∂C/∂x₂ = d11·f̂_v.
        Strain::Weft => {
            let len = fv.length();
            let n = fv.try_normalize()?;
            (len - 1.0, n * d01, n * d11)
        }
    };
    Some((c, [-(g1 + g2), g1, g2]))
}

/// Projects a triangle's strain constraint (see [`Shear`]): the shear `C = f_u · f_v`, or the
/// warp or weft stretch.
///
/// `alpha` is the compliance, (N·m)⁻¹.
#[inline]
pub fn solve_shear(
    p: [Vec3; 3],
    w: [Real; 3],
    rest_inverse: [Real; 4],
    strain: Strain,
    alpha: Real,
    h: Real,
    lambda: &mut Real,
) -> Outcome<3> {
    let Some((c, [g0, g1, g2])) = triangle_strain_and_gradient(p, rest_inverse, strain) else {
        return Outcome::Degenerate;
    };
    let grad_w =
        w[0] * g0.length_squared() + w[1] * g1.length_squared() + w[2] * g2.length_squared();
    let Some(dl) = delta_lambda(c, grad_w, alpha / (h * h), *lambda) else {
        return Outcome::Rigid;
    };
    *lambda += dl;
    Outcome::Move([g0 * (w[0] * dl), g1 * (w[1] * dl), g2 * (w[2] * dl)])
}

/// Dihedral bending across an interior edge (the stencil of [`crate::mesh::BendPair`]).
///
/// ```text
///        x₂
///       /  \
///     x₀ —— x₁        θ = signed angle between the two triangles' normals (0 when flat)
///       \  /          C = wrap(θ − θ_rest) in (−π, π]
///        x₃
/// ```
///
/// `θ = atan2((n₁ × n₂)·ê, n₁·n₂)` has no `acos`, so it and its gradient (Bridson, Marino &
/// Fedkiw, *Simulation of Clothing with Folds and Wrinkles*, SCA 2003) stay well defined near
/// ±π; a near-zero-area triangle makes the constraint [`Outcome::Degenerate`]. 28 bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bend {
    /// Particle indices `[x₀, x₁, x₂, x₃]`: shared edge, then the two opposite vertices.
    pub particles: [u32; 4],
    /// Rest dihedral angle (rad), from the rest shape.
    pub rest_angle_rad: Real,
    /// Compliance `(A₁ + A₂) / (3·B·|e|²)`, (N·m)⁻¹, with `B` the bending stiffness (N·m).
    pub compliance_per_n_m: Real,
}

/// The signed dihedral angle (rad) of a bend stencil and its gradients, or `None` when a
/// triangle has (near) zero area or the shared edge has zero length.
#[inline]
pub fn dihedral_angle_and_gradient(p: [Vec3; 4]) -> Option<(Real, [Vec3; 4])> {
    // Bridson et al. 2003 notation: x1, x2 opposite; x3, x4 the edge.
    let (x1, x2, x3, x4) = (p[2], p[3], p[0], p[1]);
    let e = x4 - x3;
    let e_len2 = e.length_squared();
    if e_len2 < DEGENERATE_LENGTH_SQ {
        return None;
    }
    let e_len = e_len2.sqrt();
    let n1 = (x1 - x3).cross(x1 - x4);
    let n2 = (x2 - x4).cross(x2 - x3);
    let n1_len2 = n1.length_squared();
    let n2_len2 = n2.length_squared();
    if n1_len2 < DEGENERATE_AREA2_SQ || n2_len2 < DEGENERATE_AREA2_SQ {
        return None;
    }
    let e_hat = e / e_len;
    let m1 = n1 / n1_len2;
    let m2 = n2 / n2_len2;
    // atan2((n̂₁ × n̂₂)·ê, n̂₁·n̂₂) with both arguments multiplied by |n₁||n₂||e| > 0, which
    // leaves the angle unchanged and saves normalising the normals.
    let theta = crate::math::atan2(n1.cross(n2).dot(e), n1.dot(n2) * e_len);
    let u1 = m1 * e_len;
    let u2 = m2 * e_len;
    let u3 = m1 * (x1 - x4).dot(e_hat) + m2 * (x2 - x4).dot(e_hat);
    let u4 = -(m1 * (x1 - x3).dot(e_hat)) - m2 * (x2 - x3).dot(e_hat);
    // Bridson's u_i are the gradients of −θ with this orientation; see the finite-difference test.
    Some((theta, [-u3, -u4, -u1, -u2]))
}

/// Wraps an angle into (−π, π].
#[inline]
pub fn wrap_angle(a: Real) -> Real {
    use std::f32::consts::{PI, TAU};
    // Already in range (a bend's angle minus its rest angle nearly always is): `a % TAU` would
    // return `a` unchanged, so skip the remainder, a call to the C library's `fmodf`.
    if a > -PI && a <= PI {
        return a;
    }
    let mut a = a % TAU;
    if a > PI {
        a -= TAU;
    } else if a <= -PI {
        a += TAU;
    }
    a
}

/// Projects a dihedral bending constraint `C = wrap(θ − θ_rest)` (see [`Bend`]).
///
/// `alpha` is the compliance, (N·m)⁻¹.
#[inline]
pub fn solve_bend(
    p: [Vec3; 4],
    w: [Real; 4],
    rest_angle_rad: Real,
    alpha: Real,
    h: Real,
    lambda: &mut Real,
) -> Outcome<4> {
    let Some((theta, g)) = dihedral_angle_and_gradient(p) else {
        return Outcome::Degenerate;
    };
    let c = wrap_angle(theta - rest_angle_rad);
    let grad_w: Real = (0..4).map(|i| w[i] * g[i].length_squared()).sum();
    let Some(dl) = delta_lambda(c, grad_w, alpha / (h * h), *lambda) else {
        return Outcome::Rigid;
    };
    *lambda += dl;
    Outcome::Move([
        g[0] * (w[0] * dl),
        g[1] * (w[1] * dl),
        g[2] * (w[2] * dl),
        g[3] * (w[3] * dl),
    ])
}

/// The position change `w_i·∇C_i·λ` that a multiplier `λ` stands for, evaluated at `p`: what
/// a warm start applies before a substep's sweeps ([`crate::solver::SolverSettings::warm_start`]).
///
/// `grad` is the constraint's gradient at `p` (`None`: undefined, nothing moves).
#[inline]
pub fn multiplier_move<const N: usize>(
    grad: Option<[Vec3; N]>,
    w: [Real; N],
    lambda: Real,
) -> Outcome<N> {
    match grad {
        Some(g) => Outcome::Move(std::array::from_fn(|i| g[i] * (w[i] * lambda))),
        None => Outcome::Degenerate,
    }
}

/// A distance constraint's value `C = |p₀ − p₁| − rest_length_m` (m) and its gradients
/// `[n, −n]` (`n` the unit direction from `p₁` to `p₀`), or `None` for coincident particles.
#[inline]
pub fn distance_and_gradient(p: [Vec3; 2], rest_length_m: Real) -> Option<(Real, [Vec3; 2])> {
    let d = p[0] - p[1];
    let len2 = d.length_squared();
    if len2 < DEGENERATE_LENGTH_SQ {
        return None;
    }
    let len = len2.sqrt();
    let n = d / len;
    Some((len - rest_length_m, [n, -n]))
}

/// A soft attachment of one particle to a target point: `C = |x − target|`.
///
/// Hard attachments do not use this: they set the particle's inverse mass to 0 and move it to
/// its target (see [`crate::solver::Pin`]). 20 bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Attachment {
    /// Particle index.
    pub particle: u32,
    /// Target position (m).
    pub target_m: Vec3,
    /// Compliance, the inverse of the attachment spring's stiffness (m/N).
    pub compliance_m_per_n: Real,
}

/// Projects a soft attachment `C = |p − target|`. A particle on its target needs nothing and
/// returns a zero move.
#[inline]
pub fn solve_attachment(
    p: Vec3,
    w: Real,
    target: Vec3,
    alpha: Real,
    h: Real,
    lambda: &mut Real,
) -> Outcome<1> {
    let d = p - target;
    let len2 = d.length_squared();
    if len2 < DEGENERATE_LENGTH_SQ {
        return Outcome::Move([Vec3::ZERO]);
    }
    let len = len2.sqrt();
    let Some(dl) = delta_lambda(len, w, alpha / (h * h), *lambda) else {
        return Outcome::Rigid;
    };
    *lambda += dl;
    Outcome::Move([d / len * (w * dl)])
}

/// A long-range attachment (tether): a particle may not move farther from its anchor, a pinned
/// particle, than the geodesic rest distance between them times `1 + slack`.
///
/// `C = |x − x_anchor| − max_length_m ≤ 0`, an inequality: it only pulls. Tethers stop the
/// stretch that Gauss–Seidel leaves in long hanging regions at any resolution (Kim, Chentanez &
/// Müller, *Long Range Attachments*, SCA 2012). 12 bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tether {
    /// The free particle.
    pub particle: u32,
    /// The pinned anchor particle.
    pub anchor: u32,
    /// Largest allowed distance (m).
    pub max_length_m: Real,
}

/// A long-range stretch limit between two free particles of one cloth: they may not move
/// farther apart than `max_length_m`, an upper bound of their geodesic rest distance times
/// `1 + slack`.
///
/// `C = |x_a − x_b| − max_length_m ≤ 0`, an inequality (it only pulls) with no compliance.
/// Because a surface that is not stretched keeps every geodesic distance and the straight
/// distance is never longer than the geodesic one, the limit never binds in a cloth whose
/// strain stays under `slack`: it does not change the physics of the fabric, only how fast a
/// Gauss–Seidel sweep carries a load across the mesh. Built in levels of doubling spacing over
/// the whole cloth ([`EdgeGraph::span_limits`]), after the hierarchical constraints of Müller,
/// *Hierarchical Position Based Dynamics* (VRIPHYS 2008) and the long-range attachments of
/// Kim, Chentanez & Müller (SCA 2012), which need a pinned vertex. 12 bytes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SpanLimit {
    /// Particle indices.
    pub particles: [u32; 2],
    /// Largest allowed distance (m).
    pub max_length_m: Real,
}

/// Projects a span limit `|p₀ − p₁| ≤ max_length_m` on both particles by their inverse masses,
/// with the accumulated multiplier clamped to `λ ≤ 0` (a limit only pulls).
#[inline]
pub fn solve_span_limit(
    p: [Vec3; 2],
    w: [Real; 2],
    max_length_m: Real,
    lambda: &mut Real,
) -> Outcome<2> {
    // Coincident particles are within any limit.
    let Some((c, [n, _])) = distance_and_gradient(p, max_length_m) else {
        return Outcome::Move([Vec3::ZERO; 2]);
    };
    if c <= 0.0 && *lambda == 0.0 {
        return Outcome::Move([Vec3::ZERO; 2]);
    }
    let Some(dl) = delta_lambda(c, w[0] + w[1], 0.0, *lambda) else {
        return Outcome::Rigid;
    };
    let new_lambda = (*lambda + dl).min(0.0);
    let dl = new_lambda - *lambda;
    *lambda = new_lambda;
    Outcome::Move([n * (w[0] * dl), n * (-w[1] * dl)])
}

/// How much longer than their straight rest distance the path along the edges between the two
/// particles of a span limit may be (a fraction) for the straight rest distance to bound their
/// geodesic distance where the surface is flat ([`EdgeGraph::span_limits`]): longer paths go
/// round a hole or a fold.
pub const SPAN_LIMIT_DETOUR: Real = 0.10;

/// The cloth's edges as a graph, for geodesic rest distances along the mesh (compressed rows).
#[derive(Clone, Debug, Default)]
pub struct EdgeGraph {
    offsets: Vec<u32>,
    targets: Vec<u32>,
    lengths_m: Vec<Real>,
    // Dijkstra scratch, reused between calls.
    dist: Vec<Real>,
    anchor: Vec<u32>,
    heap: std::collections::BinaryHeap<HeapItem>,
    // Bounded searches (`within`), apart from the tethers' scratch.
    reach: Vec<Real>,
    touched: Vec<u32>,
    path_cos: Vec<Real>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct HeapItem(Real, u32);

impl Eq for HeapItem {}

impl PartialOrd for HeapItem {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for HeapItem {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        // Reversed: a min-heap on the distance.
        other.0.total_cmp(&self.0)
    }
}

impl EdgeGraph {
    /// Builds the graph of `n` vertices from undirected edges with their rest lengths (m).
    pub fn new(n: usize, edges: impl Iterator<Item = ([u32; 2], Real)> + Clone) -> Self {
        let mut degree = vec![0u32; n + 1];
        for ([a, b], _) in edges.clone() {
            degree[a as usize] += 1;
            degree[b as usize] += 1;
        }
        let mut offsets = vec![0u32; n + 1];
        for i in 0..n {
            offsets[i + 1] = offsets[i] + degree[i];
        }
        let mut fill = offsets.clone();
        let m = offsets[n] as usize;
        let mut targets = vec![0u32; m];
        let mut lengths_m = vec![0.0; m];
        for ([a, b], len) in edges {
            for (from, to) in [(a, b), (b, a)] {
                let k = fill[from as usize] as usize;
                targets[k] = to;
                lengths_m[k] = len;
                fill[from as usize] += 1;
            }
        }
        Self {
            offsets,
            targets,
            lengths_m,
            ..Default::default()
        }
    }

    /// Visits every vertex within `radius_m` of `source` along the edges, nearest first, with
    /// its distance and, when `normals` are given, the least cosine between the source's
    /// normal and a normal on the shortest path to it (1 without normals).
    fn within(
        &mut self,
        source: u32,
        radius_m: Real,
        normals: Option<&[Vec3]>,
        mut visit: impl FnMut(u32, Real, Real),
    ) {
        let n = self.offsets.len().saturating_sub(1);
        if self.reach.len() != n {
            self.touched.clear();
            self.reach.clear();
            self.reach.resize(n, Real::INFINITY);
            self.path_cos.clear();
            self.path_cos.resize(n, 1.0);
        }
        for &v in &self.touched {
            self.reach[v as usize] = Real::INFINITY;
        }
        self.touched.clear();
        self.heap.clear();
        if source as usize >= n {
            return;
        }
        let normal = |i: usize| normals.and_then(|ns| ns.get(i)).copied();
        let source_normal = normal(source as usize);
        self.reach[source as usize] = 0.0;
        self.path_cos[source as usize] = 1.0;
        self.touched.push(source);
        self.heap.push(HeapItem(0.0, source));
        while let Some(HeapItem(d, v)) = self.heap.pop() {
            let vi = v as usize;
            if d > self.reach[vi] {
                continue;
            }
            visit(v, d, self.path_cos[vi]);
            for k in self.offsets[vi] as usize..self.offsets[vi + 1] as usize {
                let u = self.targets[k] as usize;
                let nd = d + self.lengths_m[k];
                if nd <= radius_m && nd < self.reach[u] {
                    if self.reach[u] == Real::INFINITY {
                        self.touched.push(u as u32);
                    }
                    self.reach[u] = nd;
                    let cos = match (source_normal, normal(u)) {
                        (Some(a), Some(b)) => a.dot(b),
                        _ => 1.0,
                    };
                    self.path_cos[u] = self.path_cos[vi].min(cos);
                    self.heap.push(HeapItem(nd, u as u32));
                }
            }
        }
    }

    /// Appends long-range stretch limits ([`SpanLimit`]) in levels of doubling spacing,
    /// starting at `1.5 × edge_m` (`edge_m`: the mean edge length), finest level first (a
    /// forward sweep then carries a correction from short spans to long ones, and the backward
    /// sweep back), until a level finds no pair or holds a single vertex. Each level picks
    /// vertices at least its spacing apart along the edges (greedily, in index order) and links
    /// pairs of them within twice the spacing.
    ///
    /// A pair's limit is an upper bound `b` of its geodesic rest distance, times `1 + slack`:
    /// the path length `g` along the edges, or, where the rest surface along that path is
    /// nearly flat, `d / cos²α` with `d` the straight rest distance (`rest`) and `α` the
    /// largest angle between the first vertex's normal and a normal on the path (`normals`,
    /// unit rest vertex normals): a section of the surface through the pair whose normals stay
    /// within `2α` of each other turns by at most that much, so its length is at most
    /// `d / cos α`, and the square adds room for the discrete normals. A pair is kept when
    /// `b ≤ (1 + tightness)·d` (the limit is then tight, as the geodesic is at least `d`) and
    /// `g ≤ (1 + `[`SPAN_LIMIT_DETOUR`]`)·d` (no hole or fold between them that the straight
    /// section would cross). Pairs across a curved rest shape or round a hole are left out.
    pub fn span_limits(
        &mut self,
        rest: &[Vec3],
        normals: &[Vec3],
        edge_m: Real,
        slack: Real,
        tightness: Real,
        out: &mut Vec<SpanLimit>,
    ) {
        let n = self.offsets.len().saturating_sub(1).min(rest.len());
        if n < 2 || edge_m <= 0.0 || !edge_m.is_finite() {
            return;
        }
        let normals = (normals.len() >= n).then_some(normals);
        let mut cover = vec![Real::INFINITY; n];
        let mut coarse = vec![false; n];
        let mut chosen = Vec::new();
        // 1.5 edges: on the standard scene (N = 64, 10 substeps), starting at 2 edges left twice
        // the last frame's mean stretch (1.04 % against 0.47 %, measured with an earlier
        // edge-path bound), and starting at 1 edge made twice the limits for the same.
        let mut r = 1.5 * edge_m;
        loop {
            cover.fill(Real::INFINITY);
            coarse.fill(false);
            chosen.clear();
            for v in 0..n {
                let has_edges = self.offsets[v + 1] > self.offsets[v];
                if !has_edges || cover[v] < r {
                    continue;
                }
                coarse[v] = true;
                chosen.push(v as u32);
                self.within(v as u32, r, None, |u, d, _| {
                    let c = &mut cover[u as usize];
                    *c = c.min(d);
                });
            }
            if chosen.len() < 2 {
                break;
            }
            let before = out.len();
            for &v in &chosen {
                self.within(v, 2.0 * r, normals, |u, g, cos| {
                    if u > v && coarse[u as usize] {
                        let d = rest[v as usize].distance(rest[u as usize]);
                        let flat = if cos > 0.0 { d / (cos * cos) } else { g };
                        let bound = g.min(flat);
                        if g <= (1.0 + SPAN_LIMIT_DETOUR) * d && bound <= (1.0 + tightness) * d {
                            out.push(SpanLimit {
                                particles: [v, u],
                                max_length_m: bound * (1.0 + slack),
                            });
                        }
                    }
                });
            }
            // A level without a pair ends it (the pieces are narrower than the spacing).
            if out.len() == before || r > 1e6 * edge_m {
                break;
            }
            r *= 2.0;
        }
    }

    /// Replaces `out` with one tether per vertex reachable from `anchors`: to its nearest anchor
    /// along the edges (multi-source Dijkstra), limited to that distance times `1 + slack`.
    pub fn nearest_anchor_tethers(&mut self, anchors: &[u32], slack: Real, out: &mut Vec<Tether>) {
        let n = self.offsets.len().saturating_sub(1);
        out.clear();
        self.dist.clear();
        self.dist.resize(n, Real::INFINITY);
        self.anchor.clear();
        self.anchor.resize(n, u32::MAX);
        self.heap.clear();
        for &a in anchors {
            if (a as usize) < n && self.dist[a as usize] > 0.0 {
                self.dist[a as usize] = 0.0;
                self.anchor[a as usize] = a;
                self.heap.push(HeapItem(0.0, a));
            }
        }
        while let Some(HeapItem(d, v)) = self.heap.pop() {
            let v = v as usize;
            if d > self.dist[v] {
                continue;
            }
            for k in self.offsets[v] as usize..self.offsets[v + 1] as usize {
                let u = self.targets[k] as usize;
                let nd = d + self.lengths_m[k];
                if nd < self.dist[u] {
                    self.dist[u] = nd;
                    self.anchor[u] = self.anchor[v];
                    self.heap.push(HeapItem(nd, u as u32));
                }
            }
        }
        out.extend(
            (0..n)
                .filter(|&i| self.dist[i] > 0.0 && self.dist[i].is_finite())
                .map(|i| Tether {
                    particle: i as u32,
                    anchor: self.anchor[i],
                    max_length_m: self.dist[i] * (1.0 + slack),
                }),
        );
    }
}

/// Projects a tether `|p − anchor| ≤ max_length` on the free particle only (the anchor is
/// pinned), with the accumulated multiplier clamped to `λ ≤ 0` (a tether only pulls): a
/// [`solve_span_limit`] whose second end has no inverse mass.
#[inline]
pub fn solve_tether(
    p: Vec3,
    w: Real,
    anchor: Vec3,
    max_length_m: Real,
    lambda: &mut Real,
) -> Outcome<1> {
    match solve_span_limit([p, anchor], [w, 0.0], max_length_m, lambda) {
        Outcome::Move([d, _]) => Outcome::Move([d]),
        Outcome::Degenerate => Outcome::Degenerate,
        Outcome::Rigid => Outcome::Rigid,
    }
}

/// Projects a contact `C = n·(p − q) − thickness ≥ 0` against a fixed plane through `q` with
/// unit normal `n`, clamping the accumulated multiplier to `λ ≥ 0` (a contact only pushes).
///
/// Returns the move of the particle (m) along `n`.
#[inline]
pub fn solve_contact(
    p: Vec3,
    w: Real,
    q: Vec3,
    n: Vec3,
    thickness_m: Real,
    lambda: &mut Real,
) -> Outcome<1> {
    let c = n.dot(p - q) - thickness_m;
    // Rigid contact (α = 0): the denominator is w.
    let Some(dl) = delta_lambda(c, w, 0.0, *lambda) else {
        return Outcome::Rigid;
    };
    let new_lambda = (*lambda + dl).max(0.0);
    let dl = new_lambda - *lambda;
    *lambda = new_lambda;
    Outcome::Move([n * (w * dl)])
}

/// Coulomb friction on a tangential motion (Macklin et al., *Unified Particle Physics*, 2014,
/// §6.1; the same rule at the velocity level, Macklin et al., *Small Steps*, 2019).
///
/// `dx_t` is the particle's tangential motion relative to the surface and `dn` the normal
/// change the contact made, in the same units: displacements over a substep (m), or, as the
/// solver uses it, velocities (m/s). Sticks when `|dx_t| < μ_s·dn`, otherwise slides with the
/// kinetic coefficient. Returns the correction to add.
#[inline]
pub fn friction_correction(dx_t: Vec3, dn: Real, mu_static: Real, mu_kinetic: Real) -> Vec3 {
    let len = dx_t.length();
    if len < mu_static * dn {
        -dx_t
    } else if len > 0.0 {
        -dx_t * (mu_kinetic * dn / len).min(1.0)
    } else {
        Vec3::ZERO
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;

    fn moved<const N: usize>(o: Outcome<N>) -> [Vec3; N] {
        match o {
            Outcome::Move(d) => d,
            other => panic!("expected a move, got {other:?}"),
        }
    }

    /// The in-range fast path of `wrap_angle` returns what the remainder would, bit for bit,
    /// and angles out of range land in (−π, π] a whole number of turns away.
    #[test]
    fn wrap_angle_keeps_angles_in_range_and_wraps_the_rest() {
        use std::f32::consts::{PI, TAU};
        for k in -2000..=2000 {
            let a = k as Real * (7.0 * PI / 2000.0);
            let w = wrap_angle(a);
            assert!(w > -PI && w <= PI, "{a} wrapped to {w}");
            let turns = (a - w) / TAU;
            assert!(
                (turns - turns.round()).abs() < 1e-4,
                "{a} → {w}: {turns} turns"
            );
            if a > -PI && a <= PI {
                assert_eq!(w.to_bits(), (a % TAU).to_bits(), "{a}");
            }
        }
        assert_eq!(wrap_angle(PI), PI);
        assert_eq!(wrap_angle(-PI), PI);
        assert!(wrap_angle(Real::NAN).is_nan());
    }

    /// DESIGN §2 worked check, α = 0.
    #[test]
    fn worked_example_rigid() {
        let mut lambda = 0.0;
        let p = [Vec3::ZERO, Vec3::new(2.0, 0.0, 0.0)];
        let d = moved(solve_distance(p, [0.0, 1.0], 1.0, 0.0, 0.1, &mut lambda));
        assert_relative_eq!(lambda, -1.0, epsilon = 1e-6);
        assert_eq!(d[0], Vec3::ZERO);
        assert_relative_eq!((p[1] + d[1]).x, 1.0, epsilon = 1e-6);
    }

    /// DESIGN §2 worked check, α = 0.01 m/N, h = 0.1 s: 1.5 m, and it stays there.
    #[test]
    fn worked_example_compliant_is_stationary() {
        let mut lambda = 0.0;
        let mut p = [Vec3::ZERO, Vec3::new(2.0, 0.0, 0.0)];
        for it in 0..5 {
            let d = moved(solve_distance(p, [0.0, 1.0], 1.0, 0.01, 0.1, &mut lambda));
            p[1] += d[1];
            assert_relative_eq!(p[1].x, 1.5, epsilon = 1e-6);
            assert_relative_eq!(lambda, -0.5, epsilon = 1e-6);
            if it == 0 {
                assert_relative_eq!(d[1].x, -0.5, epsilon = 1e-6);
            }
        }
    }

    #[test]
    fn coincident_particles_are_degenerate() {
        let mut lambda = 0.0;
        let p = [Vec3::ONE, Vec3::ONE];
        assert_eq!(
            solve_distance(p, [1.0, 1.0], 1.0, 0.0, 0.1, &mut lambda),
            Outcome::Degenerate
        );
        assert_eq!(lambda, 0.0);
    }

    #[test]
    fn both_fixed_rigid_returns() {
        let mut lambda = 0.0;
        let p = [Vec3::ZERO, Vec3::new(2.0, 0.0, 0.0)];
        assert_eq!(
            solve_distance(p, [0.0, 0.0], 1.0, 0.0, 0.1, &mut lambda),
            Outcome::Rigid
        );
        assert_eq!(lambda, 0.0);
        assert!(lambda.is_finite());
    }

    fn bend_stencil(fold: Real) -> [Vec3; 4] {
        // Edge along X; x2 on +Z side, x3 folded about the edge by `fold` radians.
        [
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(0.4, 0.0, 0.8),
            Vec3::new(0.6, -0.9 * fold.sin(), -0.9 * fold.cos()),
        ]
    }

    #[test]
    fn dihedral_gradient_matches_finite_differences() {
        for &fold in &[0.0, 0.3, -0.7, 1.5, 2.9, 3.1, -3.1] {
            let p = bend_stencil(fold);
            let (theta, g) = dihedral_angle_and_gradient(p).unwrap();
            assert_relative_eq!(theta.abs(), (fold as Real).abs(), epsilon = 1e-4);
            let eps = 1e-3;
            for i in 0..4 {
                for axis in 0..3 {
                    let mut pp = p;
                    let mut pm = p;
                    pp[i][axis] += eps;
                    pm[i][axis] -= eps;
                    let tp = dihedral_angle_and_gradient(pp).unwrap().0;
                    let tm = dihedral_angle_and_gradient(pm).unwrap().0;
                    let fd = wrap_angle(tp - tm) / (2.0 * eps);
                    assert_relative_eq!(g[i][axis], fd, epsilon = 2e-2, max_relative = 2e-2);
                }
            }
        }
    }

    #[test]
    fn bend_restores_rest_angle_and_handles_degenerate() {
        let mut p = bend_stencil(0.8);
        let w = [1.0; 4];
        for _ in 0..50 {
            let mut lambda = 0.0;
            let d = moved(solve_bend(p, w, 0.0, 0.0, 0.01, &mut lambda));
            for i in 0..4 {
                p[i] += d[i];
            }
        }
        let (theta, _) = dihedral_angle_and_gradient(p).unwrap();
        assert!(theta.abs() < 1e-3, "θ = {theta}");
        // Collapse one triangle to zero area.
        let mut q = bend_stencil(0.5);
        q[2] = Vec3::new(0.5, 0.0, 0.0);
        let mut lambda = 0.0;
        assert_eq!(
            solve_bend(q, w, 0.0, 0.0, 0.01, &mut lambda),
            Outcome::Degenerate
        );
    }

    #[test]
    fn bend_near_pi_does_not_flip() {
        // Rest almost folded shut; a small perturbation across ±π wraps instead of jumping 2π.
        let rest = dihedral_angle_and_gradient(bend_stencil(3.13)).unwrap().0;
        let p = bend_stencil(-3.13);
        let mut lambda = 0.0;
        let d = moved(solve_bend(p, [1.0; 4], rest, 0.0, 0.01, &mut lambda));
        let step: Real = d.iter().map(|v| v.length()).sum();
        assert!(
            step < 0.1,
            "a wrap-around must be a small correction, moved {step} m"
        );
        assert!(d.iter().all(|v| v.is_finite()));
    }

    #[test]
    fn yarn_strains_measure_the_stretch_along_warp_and_weft() {
        // A right triangle with the warp along X (the first leg, 0.3 m) and the weft along Z.
        let rest = [Vec3::ZERO, Vec3::X * 0.3, Vec3::Z * 0.2];
        let dinv = shear_rest_inverse(rest, Vec3::X).unwrap();
        for strain in [Strain::Warp, Strain::Weft] {
            let (c, _) = triangle_strain_and_gradient(rest, dinv, strain).unwrap();
            assert!(c.abs() < 1e-6, "{strain:?} at rest: {c}");
        }
        // Stretch 10 % along X and 5 % along Z, and shear: the warp and weft strains read the
        // yarn stretches, |F·û| − 1 and |F·v̂| − 1.
        let p = [Vec3::ZERO, Vec3::X * 0.33, Vec3::new(0.03, 0.0, 0.21)];
        let fu = Vec3::X * 1.1;
        let fv = Vec3::new(0.15, 0.0, 1.05);
        let (cu, gu) = triangle_strain_and_gradient(p, dinv, Strain::Warp).unwrap();
        let (cv, gv) = triangle_strain_and_gradient(p, dinv, Strain::Weft).unwrap();
        assert!((cu - (fu.length() - 1.0)).abs() < 1e-5, "{cu}");
        assert!((cv - (fv.length() - 1.0)).abs() < 1e-5, "{cv}");
        // The gradients are those of C by central differences.
        for (strain, g) in [(Strain::Warp, gu), (Strain::Weft, gv)] {
            for k in 0..3 {
                for axis in [Vec3::X, Vec3::Y, Vec3::Z] {
                    let eps = 1e-3;
                    let (mut a, mut b) = (p, p);
                    a[k] += axis * eps;
                    b[k] -= axis * eps;
                    let ca = triangle_strain_and_gradient(a, dinv, strain).unwrap().0;
                    let cb = triangle_strain_and_gradient(b, dinv, strain).unwrap().0;
                    let fd = (ca - cb) / (2.0 * eps);
                    assert!(
                        (fd - g[k].dot(axis)).abs() < 2e-3,
                        "{strain:?} ∂C/∂x{k}·{axis:?}: {fd} vs {}",
                        g[k].dot(axis)
                    );
                }
            }
        }
        // Projecting the warp strain (stiff) restores the warp length and leaves the weft.
        let mut q = p;
        for _ in 0..20 {
            let mut lambda = 0.0;
            let d = moved(solve_shear(
                q,
                [1.0; 3],
                dinv,
                Strain::Warp,
                0.0,
                0.01,
                &mut lambda,
            ));
            for k in 0..3 {
                q[k] += d[k];
            }
        }
        let (cu, _) = triangle_strain_and_gradient(q, dinv, Strain::Warp).unwrap();
        assert!(cu.abs() < 1e-5, "warp strain after projection {cu}");
        // A shear-only deformation (a 45° stretch of the bias) has no warp or weft strain to
        // first order: the yarns keep their length.
        let sheared = [Vec3::ZERO, Vec3::X * 0.3, Vec3::new(0.2 * 0.01, 0.0, 0.2)];
        let (cu, _) = triangle_strain_and_gradient(sheared, dinv, Strain::Warp).unwrap();
        let (cv, _) = triangle_strain_and_gradient(sheared, dinv, Strain::Weft).unwrap();
        assert!(cu.abs() < 1e-6 && cv.abs() < 1e-4, "{cu} {cv}");
    }

    #[test]
    fn shear_is_zero_at_rest_and_restores() {
        let rest = [Vec3::ZERO, Vec3::X, Vec3::Z];
        let dinv = shear_rest_inverse(rest, Vec3::X).unwrap();
        let mut lambda = 0.0;
        let d = moved(solve_shear(
            rest,
            [1.0; 3],
            dinv,
            Strain::Shear,
            0.0,
            0.01,
            &mut lambda,
        ));
        assert!(d.iter().all(|v| v.length() < 1e-7));
        let mut p = [Vec3::ZERO, Vec3::X, Vec3::new(0.4, 0.0, 1.0)];
        for _ in 0..20 {
            let mut lambda = 0.0;
            let d = moved(solve_shear(
                p,
                [0.0, 0.0, 1.0],
                dinv,
                Strain::Shear,
                0.0,
                0.01,
                &mut lambda,
            ));
            p[2] += d[2];
        }
        let fu = (p[1] - p[0]) * dinv[0] + (p[2] - p[0]) * dinv[2];
        let fv = (p[1] - p[0]) * dinv[1] + (p[2] - p[0]) * dinv[3];
        assert!(fu.dot(fv).abs() < 1e-5);
        assert!(shear_rest_inverse([Vec3::ZERO, Vec3::X, Vec3::X * 2.0], Vec3::X).is_none());
    }

    #[test]
    fn contact_only_pushes() {
        let mut lambda = 0.0;
        // Inside by 1 cm with 5 mm thickness: pushed out to the thickness.
        let d = moved(solve_contact(
            Vec3::new(0.0, -0.01, 0.0),
            1.0,
            Vec3::ZERO,
            Vec3::Y,
            0.005,
            &mut lambda,
        ));
        assert_relative_eq!(d[0].y, 0.015, epsilon = 1e-7);
        // Separated: the accumulated λ goes back to 0, never negative (no pull).
        let mut lambda = 0.0;
        let d = moved(solve_contact(
            Vec3::new(0.0, 0.1, 0.0),
            1.0,
            Vec3::ZERO,
            Vec3::Y,
            0.005,
            &mut lambda,
        ));
        assert_eq!(d[0], Vec3::ZERO);
        assert_eq!(lambda, 0.0);
    }

    #[test]
    fn span_limit_pulls_both_ends_by_inverse_mass_and_never_pushes() {
        // 1.2 m apart with a 1 m limit, masses 1 kg and 3 kg: the 0.2 m close in the ratio 3:1.
        let mut lambda = 0.0;
        let d = moved(solve_span_limit(
            [Vec3::new(1.2, 0.0, 0.0), Vec3::ZERO],
            [1.0, 1.0 / 3.0],
            1.0,
            &mut lambda,
        ));
        assert_relative_eq!(d[0].x, -0.15, epsilon = 1e-6);
        assert_relative_eq!(d[1].x, 0.05, epsilon = 1e-6);
        assert!(lambda < 0.0);
        // Within the limit: nothing, and a pull already given is taken back only down to zero.
        let mut lambda = 0.0;
        let d = moved(solve_span_limit(
            [Vec3::new(0.5, 0.0, 0.0), Vec3::ZERO],
            [1.0, 1.0],
            1.0,
            &mut lambda,
        ));
        assert_eq!(d, [Vec3::ZERO; 2]);
        assert_eq!(lambda, 0.0);
        let mut lambda = -0.1;
        let d = moved(solve_span_limit(
            [Vec3::new(0.5, 0.0, 0.0), Vec3::ZERO],
            [1.0, 1.0],
            1.0,
            &mut lambda,
        ));
        assert_eq!(lambda, 0.0);
        assert_relative_eq!(d[0].x, 0.1, epsilon = 1e-6);
        // Coincident particles are within any limit.
        let mut lambda = 0.0;
        let d = moved(solve_span_limit(
            [Vec3::ONE; 2],
            [1.0, 1.0],
            1.0,
            &mut lambda,
        ));
        assert_eq!(d, [Vec3::ZERO; 2]);
    }

    #[test]
    fn span_limits_do_not_depend_on_an_earlier_tether_search_on_the_same_graph() {
        // A straight chain of 17 vertices 0.1 m apart.
        let rest: Vec<Vec3> = (0..17)
            .map(|i| Vec3::new(i as Real * 0.1, 0.0, 0.0))
            .collect();
        let edges = (0..16u32).map(|i| ([i, i + 1], 0.1));
        let normals = vec![Vec3::Y; rest.len()];
        let mut fresh = Vec::new();
        EdgeGraph::new(17, edges.clone()).span_limits(&rest, &normals, 0.1, 0.0, 0.02, &mut fresh);
        let mut graph = EdgeGraph::new(17, edges);
        graph.nearest_anchor_tethers(&[0], 0.0, &mut Vec::new());
        let mut after = Vec::new();
        graph.span_limits(&rest, &normals, 0.1, 0.0, 0.02, &mut after);
        assert_eq!(fresh, after);
        // Levels of doubling spacing reach 12 of the 16 edges (vertices 0, 12 at 1.2 m), each
        // limit exact on a straight chain.
        let longest = fresh.iter().map(|l| l.max_length_m).fold(0.0, Real::max);
        assert_relative_eq!(longest, 1.2, max_relative = 1e-5);
        for l in &fresh {
            let [a, b] = l.particles.map(|i| rest[i as usize]);
            assert_relative_eq!(l.max_length_m, a.distance(b), max_relative = 1e-5);
        }
    }

    #[test]
    fn tether_only_pulls() {
        let mut lambda = 0.0;
        let d = moved(solve_tether(
            Vec3::new(2.0, 0.0, 0.0),
            1.0,
            Vec3::ZERO,
            1.5,
            &mut lambda,
        ));
        assert_relative_eq!(d[0].x, -0.5, epsilon = 1e-6);
        let mut lambda = 0.0;
        let d = moved(solve_tether(
            Vec3::new(1.0, 0.0, 0.0),
            1.0,
            Vec3::ZERO,
            1.5,
            &mut lambda,
        ));
        assert_eq!(d[0], Vec3::ZERO);
        assert_eq!(lambda, 0.0);
    }

    #[test]
    fn friction_sticks_then_slides() {
        let stick = friction_correction(Vec3::new(0.001, 0.0, 0.0), 0.01, 0.5, 0.4);
        assert_relative_eq!(stick.x, -0.001);
        let slide = friction_correction(Vec3::new(0.1, 0.0, 0.0), 0.01, 0.5, 0.4);
        assert_relative_eq!(slide.x, -0.004, epsilon = 1e-7);
    }

    #[test]
    fn soft_attachment_compliance() {
        // 1 kg particle 1 m from its target, α = 0.01 m/N, h = 0.1 s: moves half way.
        let mut lambda = 0.0;
        let d = moved(solve_attachment(
            Vec3::X,
            1.0,
            Vec3::ZERO,
            0.01,
            0.1,
            &mut lambda,
        ));
        assert_relative_eq!(d[0].x, -0.5, epsilon = 1e-6);
    }
}
