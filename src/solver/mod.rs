//! The XPBD cloth solver: particle state and the substep pipeline.
//!
//! A frame of length `Δt = 1/fps` runs `n` substeps of `h = Δt/n` (Macklin et al., *Small Steps
//! in Physics Simulation*, SCA 2019). Each substep runs these stages, each timed in
//! [`StageTimes`]:
//!
//! 1. **Kinematics**: an animated body ([`BodyMotion`]) is posed at the substep's end time, its
//!    collider refitted, and the targets of pins and attachments bound to it
//!    ([`BodyBinding`]) re-evaluated.
//! 2. **Predict**: `x_prev = x`; `v += h·g`, `x += h·v` for free particles; hard-pinned
//!    particles (inverse mass 0) go to their targets, so their velocity is the target's and they
//!    never lag a frame behind the body.
//! 3. **Contacts**: particles whose motion over the substep comes within `thickness + margin`
//!    of the body get a contact (closest point, outward normal, the body surface's own motion);
//!    fast ones are swept, pinched ones get a second contact on the facing surface (see
//!    [`BodyCollider::contacts`]).
//! 4. **Reset**: every multiplier `λ` is set to 0; it accumulates over this substep's iterations.
//! 5. **Project**, `iterations` times a symmetric Gauss–Seidel pass (a forward sweep, then a
//!    backward sweep): soft attachments → tethers → span limits → stretch → shear → bend →
//!    contacts (inequality, accumulated `λ ≥ 0`).
//! 6. **Velocities**: `v = (x − x_prev)/h`; then Coulomb friction against the body at the
//!    velocity level (the only friction model: none on positions); then damping
//!    `v ← v·exp(−c·h)`.
//! 7. **Check**: non-finite values, an edge stretched beyond
//!    [`SolverSettings::failure_stretch`], a particle deeper than
//!    [`SolverSettings::failure_penetration_m`] behind a contact (not while settling), or many
//!    triangles flipping at once roll the substep back to its checkpoint (particles and body
//!    pose) and retry it as two half steps with sanitised velocities, at most
//!    [`SolverSettings::max_retries`] levels deep; each retry is counted in
//!    [`FrameReport::rollbacks`]. A substep that still fails is an error, never silently kept.
//!
//! The constraint mathematics is in [`crate::constraints`].
//!
//! # Why symmetric sweeps
//!
//! Near equilibrium one Gauss–Seidel sweep acts on the position error as a linear map `M`, and
//! rebuilding velocities from positions couples consecutive substeps: `e_{n+1} = M(2·e_n −
//! e_{n−1})`. Its roots `z² − 2μz + μ = 0` stay inside the unit circle for eigenvalues `μ` of `M`
//! in `[0, 1)`, but not for negative or complex `μ` (for `μ = −a`, `|z| > 1` once `a > 1/3`).
//! A one-way sweep over a stiff triangle mesh has such eigenvalues: a hanging 32 × 32 cloth with
//! one forward sweep per substep blew up (edges stretched past 100 %) at 20, 40 and 80
//! substeps. A forward sweep followed by a backward one is symmetric Gauss–Seidel, whose
//! iteration matrix has real eigenvalues in `[0, 1)` for these symmetric positive definite
//! systems, and the same cloth is stable at every substep count we tried.
//!
//! # Layout
//!
//! This module holds the particles, the settings and the substep; its children hold the solves:
//! [`line_stretch`] (the stretch solved line by line), [`global_stretch`] (global solves of the
//! stretch, shear and bending), [`levels`] and [`pipeline`] (the level-ordered and pipelined
//! sweeps) and [`batch`] (greedy colourings, slabs and the shared slice the parallel sweeps use).
//!
//! May import: [`crate::math`], [`crate::mesh`], [`crate::constraints`], [`crate::collide`],
//! [`crate::garment`] (the cloth's constraints and membrane).

pub mod batch;
pub mod global_stretch;
#[cfg(feature = "gpu")]
pub mod gpu;
pub mod levels;
pub mod line_stretch;
pub mod neural;
pub mod pipeline;

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use rayon::prelude::*;

use crate::collide::body_points::BodyVertexContacts;
use crate::collide::self_collision::SelfCollision;
use crate::collide::{BodyCollider, ColliderError, Contact, ProximityCache, SurfaceAnchor};
use crate::constraints::{
    distance_and_gradient, friction_correction, multiplier_move, solve_attachment, solve_contact,
    solve_distance, solve_span_limit, solve_tether, triangle_strain_and_gradient, Attachment, Bend,
    Distance, Outcome, Shear, SpanLimit, Strain, Tether,
};
use crate::garment::material::ClothConstraints;
pub use crate::garment::material::Membrane;
use crate::math::{Real, Vec3, Vec4};
use crate::solver::global_stretch::{GlobalBend, GlobalShear, GlobalStretch};
use crate::solver::line_stretch::LineStretch;
use crate::solver::neural::{NeuralRun, NeuralSettings, Sample, Topology};
use batch::SharedSlice;
use levels::{Counts, Levels, Positions};
use pipeline::{Halves, Pipeline};

/// Most substeps per frame.
pub const MAX_SUBSTEPS: u32 = 1000;
/// Most iterations per substep.
pub const MAX_ITERATIONS: u32 = 100;
/// Most [`SolverSettings::line_passes`].
pub const MAX_LINE_PASSES: u32 = 8;
/// Most halvings of a failed substep.
pub const MAX_RETRIES: u32 = 10;

/// Settings that earlier versions had and this one no longer uses, with why: a scene or preset
/// that sets one still loads, with a warning that it is ignored (the findings are in
/// docs/solver.md).
pub const RETIRED_SETTINGS: &[(&str, &str)] = &[(
    "parallel_projection",
    "the batched parallel projection was removed: its order left 2–4× the stretch at the same \
     substeps, more than its speed bought on two cores (docs/solver.md, \"Parallel projection\")",
)];

/// Solver settings, as the artist sets them in a scene or solver preset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SolverSettings {
    /// Substeps per frame (≥ 1).
    pub substeps: u32,
    /// Constraint iterations per substep (≥ 1); each is a symmetric Gauss–Seidel pass, a forward
    /// and a backward sweep over all constraints.
    pub iterations: u32,
    /// Gravity (m/s²).
    pub gravity_m_per_s2: [Real; 3],
    /// Distance the cloth keeps from the body surface (m).
    pub collision_thickness_m: Real,
    /// Extra reach of the contact search beyond the thickness (m); per particle, the largest
    /// predicted move of the substep among the particle and its stretch neighbours is added to
    /// it.
    pub contact_margin_m: Real,
    /// Edge stretch (length / rest − 1) beyond which a substep counts as failed and is retried.
    pub failure_stretch: Real,
    /// How many times a failed substep may be halved.
    pub max_retries: u32,
    /// Slack of the long-range tethers from pinned vertices: a vertex may move up to
    /// `(1 + slack)` times its geodesic rest distance from its pin. Negative turns tethers off.
    pub tether_slack: Real,
    /// Slack of the long-range stretch limits over the whole cloth ([`SpanLimit`]): two
    /// vertices may move up to `(1 + slack)` times (an upper bound of) their geodesic rest
    /// distance apart, in levels of doubling spacing. They never bind in a cloth whose strain
    /// stays under the slack, so they leave the fabric's physics alone while they help each
    /// sweep carry a load across the mesh (docs/solver.md, "Span limits"). Negative turns them
    /// off.
    pub span_limit_slack: Real,
    /// A particle left deeper than this behind a body contact after the projection counts as a
    /// failed substep (m). Not checked while settling.
    pub failure_penetration_m: Real,
    /// On a retry after a failure, particle speeds are limited to this (m/s) and non-finite
    /// velocities are zeroed, so that one bad velocity cannot fail every retry.
    pub max_speed_m_per_s: Real,
    /// Cloth–cloth collision: each garment against itself and against the other garments
    /// (vertex–triangle and edge–edge contacts, see [`crate::collide::self_collision`]). Off by default.
    pub self_collision: bool,
    /// Body-vertex contacts: the body's vertices keep out of the cloth's triangles, so that a
    /// body feature narrower than the cloth's edges (fingers, a hand, a wrist) cannot pass
    /// between the particles and thread the cloth on itself ([`crate::collide::body_points`]). On by
    /// default.
    pub body_vertex_contacts: bool,
    /// Over-relaxation factor `ω` of the stretch projection edge by edge (1 ≤ ω < 2; 1 is plain
    /// Gauss–Seidel; only with [`StretchSolve::Sweep`]). Each edge's correction and multiplier
    /// increment are scaled by `ω`, which
    /// speeds up how far a sweep carries a load through the mesh: see docs/solver.md,
    /// "Over-relaxation of the stretch sweep".
    pub stretch_relaxation: Real,
    /// Distance kept between two layers of cloth when [`Self::self_collision`] is on (m).
    pub self_collision_thickness_m: Real,
    /// Search body contacts on all cores (rayon's pool). Exact: the contacts, and so the whole
    /// result, are the same as the serial search's, bit for bit, on any thread count.
    pub parallel: bool,
    /// Project the span limits, stretch, shear and bending four constraints at a time in vector
    /// lanes, in levels of the mesh's order (see [`crate::solver::levels`]): the same numbers, bit for
    /// bit, as projecting them one at a time in that order, in about 40 % of the time. Where a
    /// kind's order chains each constraint to the one before (fewer than
    /// [`crate::solver::levels::MIN_LEVEL_WIDTH`] per level on average), its stretch and span limits
    /// are projected one at a time and its shear and bending in colours, another order (docs/
    /// solver.md, "Vector sweeps"). On by default; off projects every kind one at a time.
    pub vector_sweeps: bool,
    /// Sweep the span limits, stretch, shear and bending on two threads at once, the cloth cut
    /// in two halves, each level of each kind split between them, each thread waiting only for
    /// the other half's constraints that share a particle with its next ones (see
    /// [`crate::solver::pipeline`]). The same numbers, bit for bit, as the vector sweeps. Applies when
    /// [`Self::vector_sweeps`] and [`Self::parallel`] are on, rayon's pool has at least two
    /// threads when the solver is built, the four kinds are swept (not solved globally) with the
    /// membrane per edge, [`Self::warm_start`] is 0, each kind's own order has room for levels
    /// ([`crate::solver::levels::MIN_LEVEL_WIDTH`]) and the stretch's levels are wide enough to split
    /// ([`crate::solver::pipeline::MIN_LEVEL_WIDTH`]: grids from about 44 × 44); otherwise ignored. On by
    /// default.
    pub pipelined_sweeps: bool,
    /// How the stretch constraints are projected in each sweep: line by line, each straight
    /// line of edges solved exactly ([`StretchSolve::Lines`], the default, see
    /// [`crate::solver::line_stretch`]); one Gauss–Seidel pass edge by edge ([`StretchSolve::Sweep`],
    /// which the warm start, [`Self::stretch_relaxation`] and the pipelined sweeps need); or all
    /// of them together by conjugate gradients ([`StretchSolve::Global`], see
    /// [`crate::solver::global_stretch`]), which holds stiff fabrics to their real stretch whatever the
    /// substeps and the resolution, at a higher cost per sweep.
    pub stretch_solve: StretchSolve,
    /// With the line solves ([`StretchSolve::Lines`]): how many more passes of them each sweep
    /// makes after the shear and the bending (0 to [`MAX_LINE_PASSES`]). Every sweep starts
    /// with one pass; these follow, so that the stiffest constraints, projected last, are not
    /// undone by the softer ones (which, at one iteration, act as if as stiff). Default 2: on
    /// the standard scene at N = 64 and 10 substeps the 90th percentile of the stretch falls
    /// from 0.82 % to 0.31 % for 30 % more time, and a 128 × 128 cloth's impact bakes without
    /// rollbacks (docs/solver.md, "Line passes after the shear and bending"). 0 is stop 32's
    /// order (lines, shear, bending). Ignored by the other stretch solves.
    pub line_passes: u32,
    /// How the bending constraints are projected in each sweep: one Gauss–Seidel pass
    /// ([`StretchSolve::Sweep`], the default) or all hinges together by conjugate gradients
    /// ([`StretchSolve::Global`], [`crate::solver::global_stretch::GlobalBend`]). On fine meshes the
    /// sweep needs substeps in proportion to the vertex count to converge the bending
    /// (tests/cantilever.rs); the global solve does not.
    pub bend_solve: StretchSolve,
    /// How the shear constraints are projected in each sweep: one Gauss–Seidel pass
    /// ([`StretchSolve::Sweep`], the default) or all triangles together by conjugate gradients
    /// ([`StretchSolve::Global`], [`crate::solver::global_stretch::GlobalShear`]).
    pub shear_solve: StretchSolve,
    /// Warm start: the fraction `β` (0 ≤ β < 0.5) of each membrane multiplier (stretch edges,
    /// shear rows) of the previous substep that the next substep starts from, its position
    /// change applied before the first sweep (scaled by the square of the substep ratio when
    /// the substep length changes). 0 starts every substep from zero, as plain XPBD does. The
    /// stretch that a few sweeps leave in a loaded cloth at rest falls by the factor `1 − β`
    /// at the cost of one pass over the membrane; at 0.5 and above the slowest modes grow
    /// (the velocity carries the previous substep's correction as well), so that is refused.
    /// Kinds solved globally ([`StretchSolve::Global`]) start from zero whatever this says.
    /// See docs/solver.md, "Warm start".
    pub warm_start: Real,
    /// Friction on the predicted move: a particle that touched the body in the previous
    /// substep has the tangential part of its predicted move (relative to the body surface)
    /// limited by Coulomb's law against the normal part, before the constraints run, so that
    /// cloth resting on a slope flatter than its friction angle stays where it is. Without it
    /// the friction acts on velocities only and the prediction's tangential move `g_t·h²` is
    /// kept in the position every substep: a creep of `g·sin θ·h` (about 3 cm/s at 45° and 240
    /// substeps per second). The velocity-level friction afterwards gets what is left of the
    /// same Coulomb budget. See docs/solver.md, "Friction on the prediction".
    pub predicted_friction: bool,
    /// Adaptive iterations: per frame, the iterations per substep are chosen from the previous
    /// frame's largest edge stretch and how much its body contacts changed, between the bounds
    /// given here, starting from [`Self::iterations`]. `None` (the default) runs
    /// [`Self::iterations`] on every frame. See [`AdaptiveIterations`] and docs/solver.md,
    /// "Adaptive iterations".
    pub adaptive_iterations: Option<AdaptiveIterations>,
    /// The hybrid solver's learned prior (issue 34; docs/solver.md, "The hybrid solver"): a
    /// graph network's correction of each substep's prediction before the projection. `None`
    /// (the default) is the classical solver, bit for bit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub neural: Option<NeuralSettings>,
    /// Where the substeps run (issue 37; docs/solver.md, "The GPU backend"): `Cpu` (the
    /// default, the reference) or `Gpu` (wgpu compute), which falls back to the CPU, saying
    /// why, when there is no adapter or the scene uses what the GPU path lacks.
    #[serde(skip_serializing_if = "Backend::is_cpu")]
    pub backend: Backend,
    /// `parallel_projection`, a setting of earlier versions ([`RETIRED_SETTINGS`]): read so
    /// that older scenes and presets still load, ignored (with a warning), never written.
    #[serde(
        default,
        rename = "parallel_projection",
        skip_serializing,
        deserialize_with = "retired_bool"
    )]
    #[doc(hidden)]
    pub retired_parallel_projection: Option<bool>,
}

/// How a constraint kind is projected ([`SolverSettings::stretch_solve`],
/// [`SolverSettings::bend_solve`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum StretchSolve {
    /// One Gauss–Seidel pass per sweep, edge by edge (over-relaxed by
    /// [`SolverSettings::stretch_relaxation`]).
    #[default]
    Sweep,
    /// One Newton step of XPBD on all edges at once per sweep, solved by preconditioned
    /// conjugate gradients ([`crate::solver::global_stretch`]); `stretch_relaxation` does not
    /// apply to it.
    Global,
    /// One exact Newton step of XPBD per line of edges per sweep ([`crate::solver::line_stretch`]):
    /// the edges cut into straight lines, each solved by the Thomas algorithm. Stretch only;
    /// `stretch_relaxation` does not apply to it.
    Lines,
}

impl Default for SolverSettings {
    fn default() -> Self {
        Self {
            substeps: 20,
            iterations: 1,
            gravity_m_per_s2: [0.0, -9.81, 0.0],
            collision_thickness_m: 0.005,
            contact_margin_m: 0.005,
            failure_stretch: 1.0,
            max_retries: 3,
            tether_slack: 0.0,
            span_limit_slack: -1.0,
            failure_penetration_m: 0.02,
            max_speed_m_per_s: 50.0,
            self_collision: false,
            body_vertex_contacts: true,
            stretch_relaxation: 1.0,
            self_collision_thickness_m: 0.004,
            parallel: true,
            retired_parallel_projection: None,
            vector_sweeps: true,
            pipelined_sweeps: true,
            stretch_solve: StretchSolve::Lines,
            line_passes: 2,
            bend_solve: StretchSolve::Sweep,
            shear_solve: StretchSolve::Sweep,
            warm_start: 0.0,
            predicted_friction: true,
            adaptive_iterations: None,
            neural: None,
            backend: Backend::Cpu,
        }
    }
}

/// Where a solver's substeps run ([`SolverSettings::backend`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Backend {
    /// On the CPU: the reference solver, with every constraint kind and check.
    #[default]
    Cpu,
    /// On the GPU, through wgpu compute ([`gpu`]); the CPU runs whatever the GPU path lacks.
    Gpu,
}

impl Backend {
    /// Whether this is the default, [`Backend::Cpu`] (it is then left out of a written scene).
    pub fn is_cpu(&self) -> bool {
        *self == Backend::Cpu
    }
}

/// Bounds and target of [`SolverSettings::adaptive_iterations`].
///
/// After each frame the solver compares the frame's largest edge stretch (`length / rest − 1`
/// at the frame's end, the bake's `max_stretch`) with `stretch_tolerance`:
///
/// - above it, the next frame runs more iterations: as many as would bring it to
///   [`ADAPTIVE_TARGET`] of the tolerance if the stretch left falls as `1/iterations` (what a
///   Gauss–Seidel pass does to the slow, load-carrying modes), at least one more and at most
///   twice as many;
/// - below half of it, and with the body contacts quiet (their count changed by at most
///   [`ADAPTIVE_CONTACT_CHANGE`] of the particles over the frame), fewer: by the same rule,
///   at most halving;
/// - with the contacts changing (an impact, a lift-off), never fewer, and more as soon as the
///   stretch passes half the tolerance;
/// - otherwise the same.
///
/// The count stays within `min_iterations..=max_iterations`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdaptiveIterations {
    /// Fewest iterations per substep, what a quiet frame runs (1 to 100).
    pub min_iterations: u32,
    /// Most iterations per substep, what an impact may get (`min_iterations` to 100).
    pub max_iterations: u32,
    /// The largest edge stretch aimed at, as a fraction (0.01 = 1 %); greater than 0.
    pub stretch_tolerance: Real,
}

impl Default for AdaptiveIterations {
    fn default() -> Self {
        Self {
            min_iterations: 1,
            max_iterations: 8,
            stretch_tolerance: 0.02,
        }
    }
}

/// The fraction of [`AdaptiveIterations::stretch_tolerance`] that a change of the iteration
/// count aims at: below 1, so that a count raised to meet the tolerance is not lowered again at
/// once (the band from half the tolerance to the whole is left alone).
pub const ADAPTIVE_TARGET: Real = 0.8;

/// The change in the number of body contacts over a frame, as a fraction of the particles,
/// above which [`AdaptiveIterations`] treats the contacts as active (an impact or a lift-off).
pub const ADAPTIVE_CONTACT_CHANGE: Real = 0.02;

impl AdaptiveIterations {
    /// The iterations per substep for the rest of a frame after a substep that left `stretch`
    /// (fraction): raised by [`Self::next`]'s rule when `stretch` is over the tolerance, else
    /// the same.
    pub fn raise(&self, iterations: u32, stretch: Real) -> u32 {
        if stretch > self.stretch_tolerance {
            self.next(iterations, stretch, 0.0).max(iterations)
        } else {
            iterations
        }
    }

    /// The iterations per substep for the next frame, from this frame's `iterations`, its
    /// largest edge stretch `stretch` (fraction) and its change in body contacts as a fraction
    /// of the particles (`contact_change`, ≥ 0). See the type's doc for the rule.
    pub fn next(&self, iterations: u32, stretch: Real, contact_change: Real) -> u32 {
        let (lo, hi) = (
            self.min_iterations,
            self.max_iterations.max(self.min_iterations),
        );
        let it = iterations.clamp(lo, hi);
        let tol = self.stretch_tolerance;
        let active = contact_change > ADAPTIVE_CONTACT_CHANGE;
        // The count that would leave ADAPTIVE_TARGET of the tolerance if the stretch fell as
        // 1/iterations (finite: `stretch` is a finite fraction or the count stays).
        let wanted = it as Real * stretch / (ADAPTIVE_TARGET * tol);
        let next = if !wanted.is_finite() {
            it
        } else if stretch > tol || (active && stretch > 0.5 * tol) {
            (wanted.ceil() as u32).clamp(it + 1, 2 * it)
        } else if stretch < 0.5 * tol && !active {
            (wanted.ceil() as u32).clamp(it.div_ceil(2), it)
        } else {
            it
        };
        next.clamp(lo, hi)
    }
}

/// Invalid solver settings or input; the message names the field.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum SimError {
    /// A setting is out of range.
    #[error("solver setting `{field}` = {value}: {problem}")]
    Setting {
        /// Field name.
        field: &'static str,
        /// Offending value, as text.
        value: String,
        /// What is wrong.
        problem: &'static str,
    },
    /// A constraint refers to a particle that does not exist (or a body binding to a pin,
    /// attachment or body vertex that does not exist).
    #[error("{kind} entry {index} refers to index {particle}, but there are {count}")]
    BadIndex {
        /// Constraint kind.
        kind: &'static str,
        /// Constraint number.
        index: usize,
        /// Particle index.
        particle: u32,
        /// Number of particles.
        count: usize,
    },
    /// The simulation failed even after the allowed retries.
    #[error("the simulation diverged at t = {time_s:.4} s ({reason}) after {retries} retries with smaller steps; {advice}")]
    Diverged {
        /// Simulation time (s).
        time_s: f64,
        /// What the check found.
        reason: String,
        /// Retries made.
        retries: u32,
        /// What to change.
        advice: &'static str,
    },
    /// The body could not be posed (a broken rig or animation).
    #[error("the body cannot be posed at t = {time_s:.4} s: {source}")]
    Body {
        /// Simulation time (s).
        time_s: f64,
        /// What went wrong.
        #[source]
        source: ColliderError,
    },
}

/// Reads a retired `bool` setting as it was written (`true`, not `Some(true)`).
fn retired_bool<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    bool::deserialize(d).map(Some)
}

impl SolverSettings {
    /// The retired settings ([`RETIRED_SETTINGS`]) these settings were read with, as warnings
    /// that name each one; then forgets them, so they are never written back.
    pub fn take_retired(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        if self.retired_parallel_projection.take().is_some() {
            let (name, why) = RETIRED_SETTINGS[0];
            out.push(format!("`{name}` is no longer used and is ignored: {why}"));
        }
        out
    }

    /// Checks every field; the error names it.
    pub fn validate(&self) -> Result<(), SimError> {
        let bad = |field, value: String, problem| {
            Err(SimError::Setting {
                field,
                value,
                problem,
            })
        };
        if !(1..=MAX_SUBSTEPS).contains(&self.substeps) {
            return bad(
                "substeps",
                self.substeps.to_string(),
                "must be from 1 to 1000 per frame",
            );
        }
        if !(1..=MAX_ITERATIONS).contains(&self.iterations) {
            return bad(
                "iterations",
                self.iterations.to_string(),
                "must be from 1 to 100 per substep",
            );
        }
        if let Some(n) = &self.neural {
            n.validate()?;
        }
        if let Some(a) = &self.adaptive_iterations {
            if !(1..=MAX_ITERATIONS).contains(&a.min_iterations) {
                return bad(
                    "adaptive_iterations.min_iterations",
                    a.min_iterations.to_string(),
                    "must be from 1 to 100 per substep",
                );
            }
            if !(a.min_iterations..=MAX_ITERATIONS).contains(&a.max_iterations) {
                return bad(
                    "adaptive_iterations.max_iterations",
                    a.max_iterations.to_string(),
                    "must be from min_iterations to 100 per substep",
                );
            }
            if !(a.stretch_tolerance.is_finite() && a.stretch_tolerance > 0.0) {
                return bad(
                    "adaptive_iterations.stretch_tolerance",
                    a.stretch_tolerance.to_string(),
                    "must be a stretch fraction greater than 0 (0.01 = 1 %)",
                );
            }
        }
        if self.max_retries > MAX_RETRIES {
            return bad(
                "max_retries",
                self.max_retries.to_string(),
                "must be at most 10 (each retry halves the step)",
            );
        }
        if !self.tether_slack.is_finite() {
            return bad(
                "tether_slack",
                self.tether_slack.to_string(),
                "must be a finite number (negative turns tethers off)",
            );
        }
        if !self.span_limit_slack.is_finite() {
            return bad(
                "span_limit_slack",
                self.span_limit_slack.to_string(),
                "must be a finite number (negative turns span limits off)",
            );
        }
        if self.gravity_m_per_s2.iter().any(|g| !g.is_finite()) {
            return bad(
                "gravity_m_per_s2",
                format!("{:?}", self.gravity_m_per_s2),
                "must be finite",
            );
        }
        for (field, v) in [
            ("collision_thickness_m", self.collision_thickness_m),
            ("contact_margin_m", self.contact_margin_m),
        ] {
            if !v.is_finite() || v < 0.0 {
                return bad(
                    field,
                    v.to_string(),
                    "must be a finite number of at least 0",
                );
            }
        }
        for (field, v) in [
            ("failure_penetration_m", self.failure_penetration_m),
            ("max_speed_m_per_s", self.max_speed_m_per_s),
            (
                "self_collision_thickness_m",
                self.self_collision_thickness_m,
            ),
        ] {
            if !v.is_finite() || v <= 0.0 {
                return bad(
                    field,
                    v.to_string(),
                    "must be a finite number greater than 0",
                );
            }
        }
        if !(1.0..2.0).contains(&self.stretch_relaxation) {
            return bad(
                "stretch_relaxation",
                self.stretch_relaxation.to_string(),
                "must be from 1 (plain Gauss–Seidel) to below 2",
            );
        }
        if self.line_passes > MAX_LINE_PASSES {
            return bad(
                "line_passes",
                self.line_passes.to_string(),
                "must be from 0 to 8 (passes of the line solves after the shear and bending)",
            );
        }
        if !(0.0..0.5).contains(&self.warm_start) {
            return bad(
                "warm_start",
                self.warm_start.to_string(),
                "must be from 0 (off) to below 0.5 (at 0.5 and above the solver is unstable)",
            );
        }
        if !self.failure_stretch.is_finite() || self.failure_stretch <= 0.0 {
            return bad(
                "failure_stretch",
                self.failure_stretch.to_string(),
                "must be a finite number greater than 0",
            );
        }
        Ok(())
    }
}

/// Checks a time step: finite and greater than zero.
pub fn check_time_step(dt_s: Real) -> Result<(), SimError> {
    if dt_s.is_finite() && dt_s > 0.0 {
        Ok(())
    } else {
        Err(SimError::Setting {
            field: "time step",
            value: dt_s.to_string(),
            problem: "must be a finite number of seconds greater than 0",
        })
    }
}

/// Particle state, as a structure of arrays.
#[derive(Debug, Default, PartialEq)]
pub struct Particles {
    /// Positions (m).
    pub x: Vec<Vec3>,
    /// Positions at the start of the current substep (m).
    pub x_prev: Vec<Vec3>,
    /// Velocities (m/s).
    pub v: Vec<Vec3>,
    /// Inverse masses (1/kg); 0 for a hard-pinned particle.
    pub inv_mass: Vec<Real>,
}

impl Clone for Particles {
    fn clone(&self) -> Self {
        Self {
            x: self.x.clone(),
            x_prev: self.x_prev.clone(),
            v: self.v.clone(),
            inv_mass: self.inv_mass.clone(),
        }
    }

    /// Copies into the existing buffers: the solver checkpoints the particles every substep,
    /// and the derived `clone_from` would allocate four new vectors each time.
    fn clone_from(&mut self, source: &Self) {
        self.x.clone_from(&source.x);
        self.x_prev.clone_from(&source.x_prev);
        self.v.clone_from(&source.v);
        self.inv_mass.clone_from(&source.inv_mass);
    }
}

impl Particles {
    /// Particles at rest at `x`, with the given masses (kg); a zero mass makes a fixed particle.
    pub fn new(x: Vec<Vec3>, mass_kg: &[Real]) -> Self {
        let n = x.len();
        Self {
            x_prev: x.clone(),
            x,
            v: vec![Vec3::ZERO; n],
            inv_mass: mass_kg
                .iter()
                .map(|&m| if m > 0.0 { 1.0 / m } else { 0.0 })
                .collect(),
        }
    }

    /// Number of particles.
    pub fn len(&self) -> usize {
        self.x.len()
    }

    /// Whether there are no particles.
    pub fn is_empty(&self) -> bool {
        self.x.is_empty()
    }
}

/// A hard attachment: the particle has inverse mass 0 and follows its target exactly.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pin {
    /// Particle index.
    pub particle: u32,
    /// Target position (m).
    pub target_m: Vec3,
}

/// Everything the solver simulates: particles, constraints and per-particle material values.
#[derive(Clone, Debug, Default)]
pub struct ClothModel {
    /// Rest positions (m); the simulation starts at rest here.
    pub positions: Vec<Vec3>,
    /// Masses (kg).
    pub mass_kg: Vec<Real>,
    /// Damping rate per particle (1/s).
    pub damping_per_s: Vec<Real>,
    /// Friction coefficient per particle against the body.
    pub friction: Vec<Real>,
    /// Edge stretch constraints (with [`Membrane::Triangles`], the edges to measure the stretch
    /// on, not projected).
    pub stretch: Vec<Distance>,
    /// Triangle strain constraints: the shear, and with [`Membrane::Triangles`] the warp and
    /// weft stretch.
    pub shear: Vec<Shear>,
    /// How the stretch is discretised: edge springs in `stretch`, or the triangles' warp and
    /// weft strains in `shear` ([`Membrane`]).
    pub membrane: Membrane,
    /// Dihedral bend constraints.
    pub bend: Vec<Bend>,
    /// Soft attachments.
    pub attach: Vec<Attachment>,
    /// Hard pins.
    pub pins: Vec<Pin>,
    /// Long-range tethers to pinned particles.
    pub tethers: Vec<Tether>,
    /// Long-range stretch limits between free particles
    /// ([`SolverSettings::span_limit_slack`]).
    pub span_limits: Vec<SpanLimit>,
    /// Seam constraints of a sewing phase ([`crate::garment::sew`]): distance constraints
    /// between the two sides of a seam, projected after the tethers. Their rest lengths shrink
    /// toward zero as [`Solver::set_seam_opening`] says; empty in an ordinary garment.
    pub seams: Vec<Distance>,
    /// Where the self-collision measures each pair's rest distance, which bounds its
    /// thickness (m, one per particle); empty: `positions`. A sewing phase puts the two sides
    /// of each seam together here, so that self-collision does not hold a closing seam open.
    /// A list of another length than `positions` is ignored.
    pub collision_rest: Vec<Vec3>,
    /// Pins and soft attachments whose targets are bound to the body surface; their targets
    /// follow the body at every substep.
    pub body_bindings: Vec<BodyBinding>,
    /// The cloth triangles (particle indices): every garment's simulation mesh. They collide
    /// with each other when [`SolverSettings::self_collision`] is on, and the body's vertices
    /// keep out of them when [`SolverSettings::body_vertex_contacts`] is.
    pub triangles: Vec<[u32; 3]>,
    /// Collision layer of each particle's garment (empty: all 0). In a contact between two
    /// garments the one with the lower layer (the inner one) does not yield.
    pub layer: Vec<i32>,
}

impl ClothModel {
    /// A model of one cloth at rest at `positions` (m) with the masses and constraints of
    /// `cloth` (its membrane included), a uniform damping rate (1/s) and friction coefficient,
    /// and nothing else: set pins, tethers, attachments and the rest on the result.
    pub fn from_cloth(
        positions: Vec<Vec3>,
        cloth: ClothConstraints,
        damping_per_s: Real,
        friction: Real,
    ) -> Self {
        let n = positions.len();
        Self {
            positions,
            mass_kg: cloth.mass_kg,
            damping_per_s: vec![damping_per_s; n],
            friction: vec![friction; n],
            stretch: cloth.stretch,
            shear: cloth.shear,
            membrane: cloth.membrane,
            bend: cloth.bend,
            ..Self::default()
        }
    }

    /// Where the self-collision measures rest distances: [`ClothModel::collision_rest`], or the
    /// rest positions.
    pub fn collision_rest(&self) -> &[Vec3] {
        if self.collision_rest.len() == self.positions.len() {
            &self.collision_rest
        } else {
            &self.positions
        }
    }

    /// Sets the targets of the pins and attachments bound to the body from `body`'s current
    /// pose.
    fn update_bound_targets(&mut self, body: &BodyCollider) {
        for b in &self.body_bindings {
            let target = b.anchor.evaluate(body);
            match b.target {
                Anchored::Pin(k) => self.pins[k as usize].target_m = target,
                Anchored::Attachment(k) => self.attach[k as usize].target_m = target,
            }
        }
    }
}

/// A boxed [`BodyMotion`], so that the solver can derive `Debug`.
struct MotionBox(Box<dyn BodyMotion>);

impl std::fmt::Debug for MotionBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BodyMotion")
    }
}

/// Which target a [`BodyBinding`] drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchored {
    /// A hard pin, by index into [`ClothModel::pins`].
    Pin(u32),
    /// A soft attachment, by index into [`ClothModel::attach`].
    Attachment(u32),
}

/// A pin or attachment target bound to a point of the body surface.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BodyBinding {
    /// The pin or attachment it drives.
    pub target: Anchored,
    /// The body surface point.
    pub anchor: SurfaceAnchor,
}

/// The body's animation, as the solver sees it: vertex positions at any simulated time.
///
/// Called once per substep with the substep's end time, so the body moves smoothly through
/// the frame instead of jumping to the frame's end pose.
pub trait BodyMotion: Send {
    /// Writes the body mesh's vertex positions (m) at simulated time `time_s` (s) into `out`
    /// (one per vertex of the mesh the [`BodyCollider`] was built from).
    fn pose_at(&mut self, time_s: f64, out: &mut Vec<Vec3>);
}

/// Time spent in each stage of the pipeline (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct StageTimes {
    /// Stage 1.
    pub kinematics: Duration,
    /// Stage 2.
    pub predict: Duration,
    /// Stage 3.
    pub contacts: Duration,
    /// Stages 4–5.
    pub project: Duration,
    /// Stage 6.
    pub velocities: Duration,
    /// Stage 7.
    pub check: Duration,
    /// The hybrid's network (graph and inference), within stage 2.
    pub neural: Duration,
    /// Frames on the GPU backend ([`SolverSettings::backend`]), every stage of every
    /// substep, from the upload to the read-back.
    pub gpu: Duration,
    /// Stage 5 by constraint kind (their sum is within [`Self::project`], which also holds the
    /// multiplier resets and the warm start).
    pub project_kinds: ProjectTimes,
}

/// Time spent projecting each kind of constraint, every sweep of every substep (a global solve
/// counted with its kind).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct ProjectTimes {
    /// Soft attachments, the GUI's drag and the tethers.
    pub attachments: Duration,
    /// Span limits.
    pub span_limits: Duration,
    /// Stretch: the edges (or nothing with the membrane per triangle).
    pub stretch: Duration,
    /// Shear: the triangle rows (their yarn rows too with the membrane per triangle).
    pub shear: Duration,
    /// Bending hinges.
    pub bend: Duration,
    /// Body-vertex contacts.
    pub body_vertices: Duration,
    /// Particle–body contacts.
    pub contacts: Duration,
    /// Cloth–cloth contacts.
    pub self_contacts: Duration,
    /// Span limits, stretch, shear and bending projected together on two threads
    /// ([`SolverSettings::pipelined_sweeps`]); their own fields then hold nothing.
    pub pipelined: Duration,
}

/// A stopwatch that charges the time since its last split to one of several totals.
struct Laps(Instant);

impl Laps {
    fn start() -> Self {
        Self(Instant::now())
    }

    /// Adds the time since the last split (or the start) to `total`.
    fn split(&mut self, total: &mut Duration) {
        let now = Instant::now();
        *total += now - self.0;
        self.0 = now;
    }
}

/// What happened during one frame.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameReport {
    /// Substeps run, retries included.
    pub substeps: u32,
    /// Substeps rolled back and retried with a smaller step.
    pub rollbacks: u32,
    /// Constraint projections skipped as degenerate (coincident particles, zero area).
    pub degenerate: u64,
    /// Constraint projections made (every constraint, contact and self-contact, once per sweep,
    /// retries included): the throughput figure of the benchmarks.
    pub projections: u64,
    /// Largest stretch-constraint residual `|C + α̃·λ|` in the last iteration of the last
    /// substep (m).
    pub max_residual_m: Real,
    /// Contacts with the body in the last substep.
    pub contacts: usize,
    /// Cloth–cloth contact candidates in the last substep (0 with self-collision off).
    pub self_contacts: usize,
    /// Of these, the contacts that pushed (accumulated `λ > 0`) in the last substep.
    pub self_contacts_active: usize,
    /// Why substeps were rolled back, one line per rollback.
    pub rollback_reasons: Vec<String>,
    /// Conjugate-gradient iterations of the global stretch solve over the frame (0 with
    /// [`StretchSolve::Sweep`]).
    pub stretch_cg_iterations: u64,
    /// Conjugate-gradient iterations of the global bending solve over the frame (0 with
    /// [`StretchSolve::Sweep`]).
    pub bend_cg_iterations: u64,
    /// Conjugate-gradient iterations of the global shear solve over the frame (0 with
    /// [`StretchSolve::Sweep`]).
    pub shear_cg_iterations: u64,
    /// Iterations per substep this frame ran: [`SolverSettings::iterations`], or with
    /// [`SolverSettings::adaptive_iterations`] the largest count of the frame's substeps (the
    /// count chosen at the frame's start, raised by any substep that left more stretch than the
    /// tolerance).
    pub iterations: u32,
    /// Largest edge stretch (`length / rest − 1`, fraction) at the end of the frame, as the
    /// last substep's check measured it.
    pub max_stretch: Real,
    /// Substeps whose prediction the hybrid's network corrected.
    pub neural_substeps: u32,
    /// Network predictions not applied: not finite, or a spike past
    /// [`NeuralSettings::max_correction`].
    pub neural_rejected: u32,
    /// Substeps that failed with the network's correction and were run again classically.
    pub neural_fallbacks: u32,
    /// Largest move the network gave a particle this frame (m).
    pub neural_max_correction_m: Real,
    /// Most directed world edges in one substep's graph this frame.
    pub neural_world_edges: u32,
    /// Substeps on which the network ran this frame (fewer than `neural_substeps` with
    /// [`NeuralSettings::reuse_substeps`] over 1).
    pub neural_inferences: u32,
    /// Substeps that ran on the GPU backend ([`SolverSettings::backend`]).
    pub gpu_substeps: u32,
    /// GPU frames that failed their check and ran again on the CPU.
    pub gpu_fallbacks: u32,
}

/// The XPBD solver.
#[derive(Debug)]
pub struct Solver {
    settings: SolverSettings,
    particles: Particles,
    model: ClothModel,
    body: Option<BodyCollider>,
    motion: Option<MotionBox>,
    /// Body mesh vertices at the current pose (m).
    body_positions: Vec<Vec3>,
    /// Body mesh vertices at the start of the current substep (m), for rollback.
    body_checkpoint: Vec<Vec3>,
    /// Largest correction applied by one contact per substep while settling (m/s × h).
    settle_push_m_per_s: Option<Real>,
    time_s: f64,
    // Scratch, reused every substep (no allocation in the loop once warm).
    lambda_stretch: Vec<Real>,
    lambda_shear: Vec<Real>,
    lambda_bend: Vec<Real>,
    lambda_attach: Vec<Real>,
    lambda_tether: Vec<Real>,
    lambda_span: Vec<Real>,
    lambda_seam: Vec<Real>,
    /// Each seam's rest length (m) as the model gave it, which [`Solver::set_seam_opening`]
    /// scales.
    seam_rest_m: Vec<Real>,
    contacts: Vec<Contact>,
    lambda_contact: Vec<Real>,
    /// The length (s) of the substep whose contacts `contacts` holds (0 before the first).
    contacts_h: Real,
    /// Per particle, the friction (m/s) the prediction applied this substep, taken off its
    /// velocity-level friction budget ([`SolverSettings::predicted_friction`]; scratch).
    friction_used: Vec<Real>,
    proximity: ProximityCache,
    /// Per particle, how far the projection may carry it in the current substep (m): the
    /// largest predicted move among the particle and its stretch neighbours (scratch).
    motion_m: Vec<Real>,
    /// Per particle, its squared predicted move in the current substep (m², scratch).
    move2: Vec<Real>,
    /// Each particle's stretch neighbours, for `motion_m`.
    neighbours: Neighbours,
    /// Per particle, the factor `exp(−damping·h)` its velocity keeps over a substep of
    /// `damping_h` s (kept while the substep length stays the same).
    damping_factor: Vec<Real>,
    damping_h: Real,
    /// Cloth–cloth collision, when [`SolverSettings::self_collision`] is on.
    self_collision: Option<SelfCollision>,
    /// The body's vertices against the cloth's triangles
    /// ([`SolverSettings::body_vertex_contacts`]).
    body_vertex: BodyVertexContacts,
    checkpoint: Particles,
    /// Twice the rest area of each shear triangle (m²), for the inversion check.
    rest_area2: Vec<Real>,
    /// A temporary soft attachment (the artist dragging a vertex), and its multiplier.
    drag: Option<Attachment>,
    /// Where the drag attachment pulls now (m): it follows the drag's target at most
    /// [`DRAG_SPEED_M_PER_S`], so a jump of the mouse cannot tear the cloth in one substep.
    drag_point: Vec3,
    lambda_drag: Real,
    times: StageTimes,
    /// Iterations per substep the next frame runs ([`SolverSettings::iterations`] unless
    /// [`SolverSettings::adaptive_iterations`] changes it after each frame).
    iterations: u32,
    /// Largest edge stretch the last substep's check measured (fraction).
    last_stretch: Real,
    /// Body contacts at the end of the previous frame, for the adaptive iterations.
    frame_contacts: usize,
    /// The levels of `model.stretch`, `shear`, `bend` and `span_limits` in their own order
    /// (sorted to match) for the vector sweeps ([`SolverSettings::vector_sweeps`]); `None` for a
    /// kind projected otherwise.
    shear_levels: Option<Levels>,
    bend_levels: Option<Levels>,
    stretch_levels: Option<Levels>,
    span_levels: Option<Levels>,
    /// The two threads' parts of the four levelled kinds ([`SolverSettings::pipelined_sweeps`]).
    pipeline: Option<Pipeline>,
    /// The positions padded to 16 bytes while the levelled kinds are swept (m, and the inverse
    /// mass in `w`, kg⁻¹; empty unless every levelled kind has levels): [`levels::Positions`].
    positions4: Vec<Vec4>,
    /// Whether the tethers can be projected in any order, or at once: each moves a particle of
    /// its own (no two tethers share one) and reads a pinned anchor, which no tether moves.
    tethers_apart: bool,
    /// The buffers of the global stretch solve ([`StretchSolve::Global`]).
    global_stretch: GlobalStretch,
    /// The lines of the stretch edges ([`StretchSolve::Lines`]; empty otherwise).
    line_stretch: LineStretch,
    global_bend: GlobalBend,
    global_shear: GlobalShear,
    /// The substep length (s) the stretch, shear and bend multipliers were found with, for the
    /// warm start; 0 when they are not to be reused (a new solver, a restore, a failed substep).
    warm_h: Real,
    /// The hybrid's network and its graph buffers ([`Solver::set_network`]), or the graph
    /// alone while recording ([`Solver::record_samples`]).
    neural: Option<NeuralRun>,
    /// Whether this substep built the network's graph (it ran at the trained length).
    neural_graph: bool,
    /// Whether this substep applied the network's correction.
    neural_applied: bool,
    /// Run the next attempt classically (the fallback's retry).
    neural_off: bool,
    /// Training samples recorded so far ([`Solver::record_samples`]).
    samples: Option<Vec<Sample>>,
    /// The GPU backend, while the substeps run there ([`SolverSettings::backend`]).
    #[cfg(feature = "gpu")]
    gpu: Option<Box<gpu::GpuStep>>,
    /// Why the solver does not run where the settings ask ([`Solver::take_backend_notes`]).
    backend_notes: Vec<String>,
}

/// Each particle's neighbours along the stretch edges, for [`moves_of_neighbours`]: particle
/// `i`'s are `list[offsets[i]..offsets[i + 1]]`.
#[derive(Clone, Debug, Default)]
struct Neighbours {
    offsets: Vec<u32>,
    list: Vec<u32>,
}

impl Neighbours {
    /// The neighbours of each of `n` particles along `edges` (indices checked `< n`).
    fn new(edges: &[Distance], n: usize) -> Self {
        let mut offsets = vec![0u32; n + 1];
        for e in edges {
            for &p in &e.particles {
                offsets[p as usize + 1] += 1;
            }
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut next = offsets.clone();
        let mut list = vec![0u32; offsets[n] as usize];
        for e in edges {
            let [a, b] = e.particles;
            for (p, q) in [(a, b), (b, a)] {
                list[next[p as usize] as usize] = q;
                next[p as usize] += 1;
            }
        }
        Self { offsets, list }
    }

    fn of(&self, i: usize) -> &[u32] {
        &self.list[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }
}

/// Each particle's largest predicted move among itself and its `neighbours` (m), from the
/// squared predicted moves `own2` (m²); in parallel chunks with `parallel`. A maximum of the same
/// numbers in any order, so the same result either way.
fn moves_of_neighbours(
    own2: &[Real],
    neighbours: &Neighbours,
    out: &mut Vec<Real>,
    parallel: bool,
) {
    out.clear();
    out.resize(own2.len(), 0.0);
    // Squared moves compare as the moves do: the square root waits for the end.
    let largest = |(i, m): (usize, &mut Real)| {
        let m2 = (neighbours.of(i).iter()).fold(own2[i], |m, &j| m.max(own2[j as usize]));
        *m = m2.sqrt();
    };
    if parallel {
        (out.par_iter_mut().enumerate())
            .with_min_len(PARTICLE_CHUNK)
            .for_each(largest);
    } else {
        out.iter_mut().enumerate().for_each(largest);
    }
}

/// Projects every constraint of one kind once, serially in the list's order; `reverse` runs
/// the sweep backward, for the symmetric pass.
///
/// `project` must touch only the particles of its constraint: [`SharedSlice`]'s contract.
fn project_kind<T: Sync, P: Positions>(
    items: &[T],
    lambdas: &mut [Real],
    reverse: bool,
    x: P,
    project: impl Fn(&T, &mut Real, P) -> Counts + Sync,
) -> Counts {
    let mut counts = Counts::default();
    sweep(items, lambdas, reverse, |(c, l)| {
        counts = counts.merge(project(c, l, x));
    });
    counts
}

/// Passes over the seams at the end of every sweep, alternating in direction: where three or
/// four panels meet at a corner, one pass leaves the first pairs open by what the later ones
/// moved their shared vertex (1.2–1.3 mm at the shoulders of Drape's T-shirt).
const SEAM_END_PASSES: usize = 4;

/// One Gauss–Seidel pass over the seam constraints.
fn project_seams(
    x: &mut [Vec3],
    w: &[Real],
    seams: &[Distance],
    lambdas: &mut [Real],
    reverse: bool,
    h: Real,
) {
    sweep(seams, lambdas, reverse, |(c, l)| {
        let [a, b] = c.particles.map(|i| i as usize);
        if let Outcome::Move([da, db]) = solve_distance(
            [x[a], x[b]],
            [w[a], w[b]],
            c.rest_length_m,
            c.compliance_m_per_n,
            h,
            l,
        ) {
            x[a] += da;
            x[b] += db;
        }
    });
}

/// Visits constraints with their multipliers, forward or backward.
///
/// See "Why symmetric sweeps" in the module docs.
#[inline]
fn sweep<T>(items: &[T], lambdas: &mut [Real], reverse: bool, f: impl FnMut((&T, &mut Real))) {
    let pairs = items.iter().zip(lambdas.iter_mut());
    if reverse {
        pairs.rev().for_each(f);
    } else {
        pairs.for_each(f);
    }
}

enum SubstepFailure {
    NonFinite,
    Overstretched(Real),
    Penetration(Real),
    Inverted(usize),
    Body(ColliderError),
}

impl SubstepFailure {
    fn describe(&self) -> String {
        match self {
            Self::NonFinite => "non-finite positions or velocities".into(),
            Self::Overstretched(s) => format!("an edge stretched by {:.0} %", s * 100.0),
            Self::Penetration(d) => format!("a particle {:.1} mm inside the body", d * 1000.0),
            Self::Inverted(n) => format!("{n} triangles turned inside out in one substep"),
            Self::Body(e) => e.to_string(),
        }
    }
}

/// The cloth–cloth search reaches beyond the thickness by the contact margin, at most this
/// fraction of the self-collision thickness: on a fine mesh a wide reach brings every vertex
/// near dozens of triangles that can never touch it, each a narrow-phase test per substep.
pub const SELF_MARGIN_FRACTION: Real = 0.5;

/// Fastest speed at which the artist's drag point follows the mouse (m/s).
pub const DRAG_SPEED_M_PER_S: Real = 2.0;

/// A triangle counts as inverted when its normal turns by more than 90° within one substep
/// while it keeps at least this fraction of its area at both ends (a crumpled, near-degenerate
/// triangle may flip harmlessly).
const INVERSION_MIN_AREA_RATIO: Real = 0.25;

/// A substep fails on inverted triangles only when more than this fraction of them (and more
/// than [`INVERSION_MIN_COUNT`]) flip at once: an unconverged fold can flip the odd triangle,
/// a blow-up flips whole regions.
const INVERSION_FAILURE_FRACTION: Real = 0.005;
/// See [`INVERSION_FAILURE_FRACTION`].
const INVERSION_MIN_COUNT: usize = 3;

impl Solver {
    /// Builds a solver; fails on invalid settings or constraint indices.
    pub fn new(
        settings: SolverSettings,
        model: ClothModel,
        body: Option<BodyCollider>,
    ) -> Result<Self, SimError> {
        Ok(Self::without_backend(settings, model, body)?.with_backend())
    }

    /// [`Solver::new`] with the body moving as `motion` says from the start
    /// ([`Solver::set_body_motion`]): a GPU backend the settings ask for is then refused
    /// before it builds anything for a static body (its distance grid).
    pub fn new_moving(
        settings: SolverSettings,
        model: ClothModel,
        body: Option<BodyCollider>,
        motion: Box<dyn BodyMotion>,
    ) -> Result<Self, SimError> {
        let mut solver = Self::without_backend(settings, model, body)?;
        solver.set_body_motion(motion)?;
        Ok(solver.with_backend())
    }

    fn without_backend(
        settings: SolverSettings,
        mut model: ClothModel,
        mut body: Option<BodyCollider>,
    ) -> Result<Self, SimError> {
        settings.validate()?;
        if let Some(b) = body.as_mut() {
            b.set_parallel(settings.parallel);
        }
        let n = model.positions.len();
        let check = |kind: &'static str, idx: &mut dyn Iterator<Item = (usize, u32)>| {
            for (index, particle) in idx {
                if particle as usize >= n {
                    return Err(SimError::BadIndex {
                        kind,
                        index,
                        particle,
                        count: n,
                    });
                }
            }
            Ok(())
        };
        check(
            "stretch",
            &mut model
                .stretch
                .iter()
                .enumerate()
                .flat_map(|(i, c)| c.particles.map(|p| (i, p))),
        )?;
        check(
            "shear",
            &mut model
                .shear
                .iter()
                .enumerate()
                .flat_map(|(i, c)| c.particles.map(|p| (i, p))),
        )?;
        check(
            "bend",
            &mut model
                .bend
                .iter()
                .enumerate()
                .flat_map(|(i, c)| c.particles.map(|p| (i, p))),
        )?;
        check(
            "attachment",
            &mut model
                .attach
                .iter()
                .enumerate()
                .map(|(i, c)| (i, c.particle)),
        )?;
        check(
            "tether",
            &mut model
                .tethers
                .iter()
                .enumerate()
                .flat_map(|(i, c)| [(i, c.particle), (i, c.anchor)]),
        )?;
        check(
            "seam",
            &mut model
                .seams
                .iter()
                .enumerate()
                .flat_map(|(i, c)| c.particles.map(|p| (i, p))),
        )?;
        check(
            "span limit",
            &mut model
                .span_limits
                .iter()
                .enumerate()
                .flat_map(|(i, c)| c.particles.map(|p| (i, p))),
        )?;
        check(
            "pin",
            &mut model.pins.iter().enumerate().map(|(i, c)| (i, c.particle)),
        )?;
        check(
            "triangle",
            &mut model
                .triangles
                .iter()
                .enumerate()
                .flat_map(|(i, t)| t.map(|p| (i, p))),
        )?;
        for (index, b) in model.body_bindings.iter().enumerate() {
            let (kind, slot, count) = match b.target {
                Anchored::Pin(k) => ("pin binding", k, model.pins.len()),
                Anchored::Attachment(k) => ("attachment binding", k, model.attach.len()),
            };
            if slot as usize >= count {
                return Err(SimError::BadIndex {
                    kind,
                    index,
                    particle: slot,
                    count,
                });
            }
            let body_vertices = body.as_ref().map_or(0, |b| b.shape().vertices().len());
            if let Some(&v) = b
                .anchor
                .vertices
                .iter()
                .find(|&&v| v as usize >= body_vertices)
            {
                return Err(SimError::BadIndex {
                    kind: "body binding (anchor vertex)",
                    index,
                    particle: v,
                    count: body_vertices,
                });
            }
        }
        for (field, len) in [
            ("mass_kg", model.mass_kg.len()),
            ("damping_per_s", model.damping_per_s.len()),
            ("friction", model.friction.len()),
            (
                "layer",
                if model.layer.is_empty() {
                    n
                } else {
                    model.layer.len()
                },
            ),
        ] {
            if len != n {
                return Err(SimError::Setting {
                    field,
                    value: len.to_string(),
                    problem: "must have one entry per particle",
                });
            }
        }
        // A negative or non-finite compliance has no physical meaning: reject it here, once.
        let compliances = (model.attach.iter())
            .map(|c| ("attachment compliance_m_per_n", c.compliance_m_per_n))
            .chain(
                model
                    .stretch
                    .iter()
                    .map(|c| ("stretch compliance_m_per_n", c.compliance_m_per_n)),
            )
            .chain(
                model
                    .shear
                    .iter()
                    .map(|c| ("shear compliance_per_n_m", c.compliance_per_n_m)),
            )
            .chain(
                model
                    .bend
                    .iter()
                    .map(|c| ("bend compliance_per_n_m", c.compliance_per_n_m)),
            );
        for (field, value) in compliances {
            if !(value.is_finite() && value >= 0.0) {
                return Err(SimError::Setting {
                    field,
                    value: value.to_string(),
                    problem: "must be a finite number of at least 0",
                });
            }
        }
        // Vector sweeps: not for a kind solved globally. Each kind in
        // levels of its own order where that order has room for them (the serial sweep's
        // numbers); where it has not, the stretch and the span limits, which carry the load and
        // need their order, one at a time, and shear and bending in colours.
        let vector = settings.vector_sweeps;
        let n = model.positions.len();
        let sweeping = |solve: StretchSolve| vector && solve == StretchSolve::Sweep;
        let shear_global = settings.shear_solve == StretchSolve::Global
            || (model.membrane == Membrane::Triangles
                && settings.stretch_solve == StretchSolve::Global);
        let edges = model.membrane == Membrane::Edges;
        // Pipelined: all four kinds, or none. Not with the warm start, whose pass runs in the
        // lists' order (which the pipeline regroups).
        let pipeline = (settings.pipelined_sweeps
            && settings.parallel
            && rayon::current_num_threads() >= 2
            && settings.warm_start == 0.0
            && edges
            && sweeping(settings.stretch_solve)
            && sweeping(settings.bend_solve)
            && !shear_global)
            .then(|| pipelined_levels(&mut model))
            .flatten();
        // The pipeline's kinds are grouped by thread, not by level: no levels of their own.
        let unpiped = pipeline.is_none();
        let stretch_levels = (unpiped && sweeping(settings.stretch_solve) && edges)
            .then(|| {
                Levels::if_wide(&mut model.stretch, |c| c.particles, n)
                    .or_else(|| layered_if_wide(&mut model.stretch, &model.pins, &model.attach, n))
            })
            .flatten();
        let span_levels = (unpiped && vector)
            .then(|| Levels::if_wide(&mut model.span_limits, |c| c.particles, n))
            .flatten();
        // With the membrane per triangle the triangle rows carry the stretch: no colours.
        let shear_levels = (unpiped && vector && !shear_global)
            .then(|| {
                Levels::if_wide(&mut model.shear, |c| c.particles, n).or_else(|| {
                    edges.then(|| Levels::colours(&mut model.shear, |c| c.particles, n))
                })
            })
            .flatten();
        let bend_levels = (unpiped && sweeping(settings.bend_solve)).then(|| {
            Levels::if_wide(&mut model.bend, |c| c.particles, n)
                .unwrap_or_else(|| Levels::colours(&mut model.bend, |c| c.particles, n))
        });
        // Every kind of the sweep's levelled block in levels of its own (or pipelined): swept
        // in positions padded to 16 bytes ([`levels::Positions`]).
        let padded = pipeline.is_some()
            || (stretch_levels.is_some()
                && shear_levels.is_some()
                && bend_levels.is_some()
                && (span_levels.is_some() || model.span_limits.is_empty()));
        let line_stretch = if edges && settings.stretch_solve == StretchSolve::Lines {
            LineStretch::new(&model.positions, &mut model.stretch)
        } else {
            LineStretch::default()
        };
        let mut mass = model.mass_kg.clone();
        for pin in &model.pins {
            mass[pin.particle as usize] = 0.0;
        }
        let tethers_apart = tethers_apart(&model.tethers, &mass);
        let mut particles = Particles::new(model.positions.clone(), &mass);
        for pin in &model.pins {
            particles.x[pin.particle as usize] = pin.target_m;
            particles.x_prev[pin.particle as usize] = pin.target_m;
        }
        let rest_area2 = model
            .shear
            .iter()
            .map(|c| {
                let [a, b, d] = c.particles.map(|i| model.positions[i as usize]);
                (b - a).cross(d - a).length()
            })
            .collect();
        let self_collision = (settings.self_collision && !model.triangles.is_empty()).then(|| {
            SelfCollision::new(
                &model.triangles,
                &model.layer,
                model.collision_rest(),
                settings.self_collision_thickness_m,
                settings
                    .contact_margin_m
                    .min(SELF_MARGIN_FRACTION * settings.self_collision_thickness_m),
            )
        });
        Ok(Self {
            self_collision,
            body_vertex: BodyVertexContacts::default(),
            rest_area2,
            motion: None,
            body_positions: Vec::new(),
            body_checkpoint: Vec::new(),
            settle_push_m_per_s: None,
            lambda_stretch: vec![0.0; model.stretch.len()],
            lambda_shear: vec![0.0; model.shear.len()],
            lambda_bend: vec![0.0; model.bend.len()],
            lambda_attach: vec![0.0; model.attach.len()],
            lambda_tether: vec![0.0; model.tethers.len()],
            lambda_span: vec![0.0; model.span_limits.len()],
            lambda_seam: vec![0.0; model.seams.len()],
            seam_rest_m: model.seams.iter().map(|c| c.rest_length_m).collect(),
            contacts: Vec::new(),
            lambda_contact: Vec::new(),
            contacts_h: 0.0,
            friction_used: Vec::new(),
            proximity: ProximityCache::new(settings.parallel),
            motion_m: Vec::new(),
            move2: Vec::new(),
            neighbours: Neighbours::new(&model.stretch, n),
            damping_factor: Vec::new(),
            damping_h: 0.0,
            checkpoint: particles.clone(),
            iterations: settings.iterations,
            settings,
            particles,
            model,
            body,
            time_s: 0.0,
            drag: None,
            drag_point: Vec3::ZERO,
            lambda_drag: 0.0,
            times: StageTimes::default(),
            last_stretch: 0.0,
            frame_contacts: 0,
            shear_levels,
            bend_levels,
            stretch_levels,
            span_levels,
            positions4: if padded {
                vec![Vec4::ZERO; n]
            } else {
                Vec::new()
            },
            pipeline,
            tethers_apart,
            global_stretch: GlobalStretch::default(),
            line_stretch,
            global_bend: GlobalBend::default(),
            global_shear: GlobalShear::default(),
            warm_h: 0.0,
            neural: None,
            neural_graph: false,
            neural_applied: false,
            neural_off: false,
            samples: None,
            #[cfg(feature = "gpu")]
            gpu: None,
            backend_notes: Vec::new(),
        })
    }

    /// Starts the GPU backend when the settings ask for it; where it cannot start (no
    /// adapter, or the scene uses what the GPU path lacks), the solver stays on the CPU and
    /// [`Solver::backend_notes`] says why.
    fn with_backend(mut self) -> Self {
        if self.settings.backend != Backend::Gpu {
            return self;
        }
        if self.motion.is_some() && self.body.is_some() {
            self.backend_note(
                "the GPU backend does not handle a moving body yet; the solver runs on the CPU"
                    .to_string(),
            );
            return self;
        }
        #[cfg(feature = "gpu")]
        match gpu::GpuStep::new(
            &self.model,
            &self.particles,
            &self.settings,
            self.body.as_ref(),
            (self.settings.stretch_solve == StretchSolve::Lines).then_some(&self.line_stretch),
        ) {
            Ok(step) => {
                log::info!("solver on the GPU: {}", step.adapter());
                self.gpu = Some(Box::new(step));
            }
            Err(e) => self.backend_note(format!("{e}; the solver runs on the CPU")),
        }
        #[cfg(not(feature = "gpu"))]
        self.backend_note(
            "this build of Drape has no GPU backend (the `gpu` feature); the solver runs on \
             the CPU"
                .to_string(),
        );
        self
    }

    fn backend_note(&mut self, note: String) {
        log::warn!("{note}");
        self.backend_notes.push(note);
    }

    /// Why the solver does not run where [`SolverSettings::backend`] asks (one sentence each,
    /// oldest first; e.g. "no GPU adapter found …; the solver runs on the CPU"), and forgets
    /// them.
    pub fn take_backend_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.backend_notes)
    }

    /// Where the substeps run now: `"CPU"`, or `"GPU: "` and the adapter's name.
    pub fn backend_name(&self) -> String {
        #[cfg(feature = "gpu")]
        if let Some(g) = &self.gpu {
            return format!("GPU: {}", g.adapter());
        }
        "CPU".to_string()
    }

    /// The GPU backend, while the solver runs on it.
    #[cfg(feature = "gpu")]
    pub fn gpu(&self) -> Option<&gpu::GpuStep> {
        self.gpu.as_deref()
    }

    /// The GPU stops here, for the reason `why` (a sentence): the CPU runs from now on.
    #[cfg_attr(not(feature = "gpu"), allow(unused_variables))]
    fn leave_gpu(&mut self, why: &str) {
        #[cfg(feature = "gpu")]
        if self.gpu.take().is_some() {
            self.backend_note(format!("{why}; the solver runs on the CPU"));
        }
    }

    /// The host's particles changed outside a GPU frame: upload them before the next one.
    fn gpu_dirty(&mut self) {
        #[cfg(feature = "gpu")]
        if let Some(g) = self.gpu.as_mut() {
            g.mark_dirty();
        }
    }

    /// Turns on the hybrid's network (layer 2; docs/solver.md, "The hybrid solver"), trained
    /// for substeps of `trained_h_s` s; `None` turns it off. It runs only while
    /// [`SolverSettings::neural`] is set, and only on substeps of the trained length (halved
    /// retries run classically). Fails for a cloth without stretch edges.
    pub fn set_network(
        &mut self,
        net: Option<std::sync::Arc<crate::neural::Gnn>>,
        trained_h_s: Real,
    ) -> Result<(), SimError> {
        self.neural = match net {
            Some(net) => Some(NeuralRun::new(Some(net), &self.model, trained_h_s, None)?),
            None => None,
        };
        Ok(())
    }

    /// Starts recording a training sample ([`Sample`]) on every substep of `h_s` s: the
    /// network's graph of the substep's prediction and where the projection took it. The
    /// solver runs classically; [`Solver::take_samples`] hands the samples over. `world`: how
    /// the graphs' world edges are found (`None`: without world edges).
    pub fn record_samples(
        &mut self,
        h_s: Real,
        world: Option<crate::neural::world::WorldParams>,
    ) -> Result<Topology, SimError> {
        let run = NeuralRun::new(None, &self.model, h_s, world)?;
        let topology = run.topology(&self.model);
        self.neural = Some(run);
        self.samples = Some(Vec::new());
        Ok(topology)
    }

    /// The samples recorded since the last call.
    pub fn take_samples(&mut self) -> Vec<Sample> {
        self.samples
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Sets or clears a temporary soft attachment: the artist dragging one particle toward
    /// `target_m` with the mouse while the simulation runs. It is projected with the model's
    /// soft attachments and never stored in the model.
    pub fn set_drag(&mut self, drag: Option<Attachment>) -> Result<(), SimError> {
        if let Some(d) = &drag {
            if d.particle as usize >= self.particles.len() {
                return Err(SimError::BadIndex {
                    kind: "drag",
                    index: 0,
                    particle: d.particle,
                    count: self.particles.len(),
                });
            }
            let usable = d.compliance_m_per_n.is_finite()
                && d.compliance_m_per_n >= 0.0
                && d.target_m.is_finite();
            if !usable {
                return Err(SimError::Setting {
                    field: "drag",
                    value: format!("{:?}", d),
                    problem: "the target must be finite and the compliance finite and >= 0 m/N",
                });
            }
        }
        let grabbed = self.drag.map(|d| d.particle);
        if let Some(d) = &drag {
            if grabbed != Some(d.particle) {
                self.drag_point = self.particles.x[d.particle as usize];
            }
        }
        self.drag = drag;
        Ok(())
    }

    /// The temporary drag attachment, if any.
    pub fn drag(&self) -> Option<&Attachment> {
        self.drag.as_ref()
    }

    /// Carries the state of another run over: sets the simulated time (s) and the particles'
    /// positions and velocities, re-posing an animated body at that time. Used when the
    /// artist edits a parameter mid-run and the solver is rebuilt. Hard pins keep their
    /// targets. Fails when the particle counts differ or the body cannot take the pose.
    pub fn restore(&mut self, time_s: f64, particles: &Particles) -> Result<(), SimError> {
        if particles.len() != self.particles.len() || !time_s.is_finite() {
            return Err(SimError::Setting {
                field: "restore",
                value: format!("{} particles at t = {time_s} s", particles.len()),
                problem: "the particle count must match the model's and the time be finite",
            });
        }
        self.time_s = time_s;
        self.warm_h = 0.0;
        self.gpu_dirty();
        if let Some(run) = self.neural.as_mut() {
            run.clear_history();
            run.invalidate();
        }
        // The contacts of another time are no guide to the next prediction's friction.
        self.contacts_h = 0.0;
        if let (Some(MotionBox(motion)), Some(body)) = (self.motion.as_mut(), self.body.as_mut()) {
            motion.pose_at(time_s, &mut self.body_positions);
            let posed = body
                .set_pose(&self.body_positions)
                .and_then(|()| body.set_pose(&self.body_positions));
            posed.map_err(|source| SimError::Body { time_s, source })?;
            self.model.update_bound_targets(body);
        }
        let p = &mut self.particles;
        for i in 0..p.len() {
            if p.inv_mass[i] > 0.0 {
                p.x[i] = particles.x[i];
                p.v[i] = particles.v[i];
            }
            p.x_prev[i] = p.x[i];
        }
        for pin in &self.model.pins {
            let i = pin.particle as usize;
            p.x[i] = pin.target_m;
            p.x_prev[i] = pin.target_m;
        }
        Ok(())
    }

    /// The settings in use.
    pub fn settings(&self) -> &SolverSettings {
        &self.settings
    }

    /// Particle state.
    pub fn particles(&self) -> &Particles {
        &self.particles
    }

    /// The model being simulated.
    pub fn model(&self) -> &ClothModel {
        &self.model
    }

    /// The body collider, if any.
    pub fn body(&self) -> Option<&BodyCollider> {
        self.body.as_ref()
    }

    /// Simulated time (s).
    pub fn time_s(&self) -> f64 {
        self.time_s
    }

    /// Accumulated time per stage since the solver was built.
    pub fn stage_times(&self) -> StageTimes {
        self.times
    }

    /// Moves a hard pin's target (m); the particle follows from the next substep. A pin bound to
    /// an animated body gets its target from the body again at every substep.
    pub fn set_pin_target(&mut self, pin: usize, target_m: Vec3) {
        if let Some(p) = self.model.pins.get_mut(pin) {
            p.target_m = target_m;
            #[cfg(feature = "gpu")]
            if let Some(g) = self.gpu.as_mut() {
                g.set_pin_target(p.particle, target_m);
            }
        }
    }

    /// Sets how open the seams are: each seam constraint's rest length becomes `fraction` (0–1,
    /// clamped) of the one the model gave it, so a sewing phase closes its seams over a set
    /// time by lowering it from 1 to 0 between frames.
    pub fn set_seam_opening(&mut self, fraction: Real) {
        let f = if fraction.is_finite() {
            fraction.clamp(0.0, 1.0)
        } else {
            0.0
        };
        for (c, &r) in self.model.seams.iter_mut().zip(&self.seam_rest_m) {
            c.rest_length_m = r * f;
        }
    }

    /// Mutable particle state, for tools and tests that edit the simulation between frames
    /// (e.g. to inject a disturbance). Hard-pinned particles are moved back to their targets
    /// at the next substep.
    pub fn particles_mut(&mut self) -> &mut Particles {
        self.gpu_dirty();
        &mut self.particles
    }

    /// Body mesh vertex positions at the current pose (m); empty without an animated body.
    pub fn body_positions(&self) -> &[Vec3] {
        &self.body_positions
    }

    /// Animates the body: from now on it is posed by `motion` at every substep's end time.
    ///
    /// The body is posed at the current time at once, and hard pins bound to it jump to their
    /// targets (with zero velocity). Fails when the pose does not fit the body mesh.
    pub fn set_body_motion(&mut self, mut motion: Box<dyn BodyMotion>) -> Result<(), SimError> {
        self.leave_gpu("the GPU backend does not handle a moving body yet");
        if let Some(body) = self.body.as_mut() {
            motion.pose_at(self.time_s, &mut self.body_positions);
            let posed = body
                .set_pose(&self.body_positions)
                .and_then(|()| body.set_pose(&self.body_positions));
            posed.map_err(|source| SimError::Body {
                time_s: self.time_s,
                source,
            })?;
            self.motion = Some(MotionBox(motion));
            self.update_bound_targets();
            let p = &mut self.particles;
            for pin in &self.model.pins {
                let i = pin.particle as usize;
                p.x[i] = pin.target_m;
                p.x_prev[i] = pin.target_m;
                p.v[i] = Vec3::ZERO;
            }
        }
        Ok(())
    }

    /// Turns the settle mode on (`Some(speed)`) or off (`None`).
    ///
    /// While settling, a body contact moves its particle by at most `speed · h` per substep
    /// (m/s), so that a garment placed partly inside the body is pushed out gently instead of
    /// being shot out, and the deep-penetration failure check is off.
    pub fn set_settling(&mut self, push_speed_m_per_s: Option<Real>) {
        self.settle_push_m_per_s = push_speed_m_per_s.filter(|v| v.is_finite() && *v > 0.0);
    }

    /// Recomputes the targets of pins and attachments bound to the body from its current pose.
    fn update_bound_targets(&mut self) {
        let Some(body) = self.body.as_ref() else {
            return;
        };
        if self.body_positions.is_empty() {
            return;
        }
        self.model.update_bound_targets(body);
    }

    /// Advances one frame of `dt_frame_s` seconds in `settings.substeps` substeps.
    ///
    /// With `settings.parallel` the frame runs on one of rayon's threads (the caller waits),
    /// so that the stages' parallel loops start from inside the thread pool: from outside it,
    /// each one is queued for the pool and the caller sleeps until it is done, which added
    /// about 16 µs to each loop on the 2-core development machine against 3 µs from inside
    /// (docs/benchmarks.md, stop 24). The same numbers either way; a frame stepped from one of
    /// rayon's threads already runs where it is.
    pub fn step_frame(&mut self, dt_frame_s: Real) -> Result<FrameReport, SimError> {
        if self.settings.parallel {
            return rayon::scope(|_| self.step_frame_here(dt_frame_s));
        }
        self.step_frame_here(dt_frame_s)
    }

    fn step_frame_here(&mut self, dt_frame_s: Real) -> Result<FrameReport, SimError> {
        check_time_step(dt_frame_s)?;
        #[cfg(feature = "gpu")]
        let mut gpu_failure = None;
        #[cfg(feature = "gpu")]
        if self.gpu.is_some() && self.settle_push_m_per_s.is_none() && self.drag.is_none() {
            match self.gpu_frame(dt_frame_s) {
                Ok(report) => return Ok(report),
                Err(why) => gpu_failure = Some(why),
            }
        }
        #[allow(unused_mut)]
        let mut report = self.cpu_frame(dt_frame_s)?;
        #[cfg(feature = "gpu")]
        if let Some(why) = gpu_failure {
            log::warn!(
                "t = {:.3} s: the GPU frame failed ({why}); it ran again on the CPU",
                self.time_s
            );
            report.gpu_fallbacks += 1;
        }
        self.gpu_dirty();
        Ok(report)
    }

    /// One frame on the GPU backend, checked as the CPU checks a substep (non-finite values,
    /// overstretch, flipped triangles) and for particles deeper in the body than
    /// `failure_penetration_m`. On a failure the particles are as they were and the reason is
    /// returned: the caller runs the frame on the CPU. A lost device ends the GPU backend.
    #[cfg(feature = "gpu")]
    fn gpu_frame(&mut self, dt_frame_s: Real) -> Result<FrameReport, String> {
        let substeps = self.settings.substeps;
        let h = dt_frame_s / substeps as Real;
        let start = self.particles.clone();
        let t = Instant::now();
        let gpu = self
            .gpu
            .as_mut()
            .expect("gpu_frame runs with the GPU backend");
        let stepped = gpu.step_frame(&mut self.particles, h, substeps, self.iterations);
        self.times.gpu += t.elapsed();
        let failure = match stepped {
            Ok(touching) => {
                let t = Instant::now();
                let checked = check_substep(
                    &self.particles,
                    &self.model,
                    self.body.as_ref(),
                    &[],
                    &self.rest_area2,
                    &self.settings,
                    false,
                );
                let deepest = (self.gpu.as_ref().and_then(|g| g.grid()))
                    .map(|grid| {
                        (self.particles.x.iter())
                            .filter_map(|&x| grid.sample(x))
                            .fold(0.0, |m: Real, d| m.max(-d))
                    })
                    .unwrap_or(0.0);
                self.times.check += t.elapsed();
                match checked {
                    Ok(_) if deepest > self.settings.failure_penetration_m => {
                        SubstepFailure::Penetration(deepest).describe()
                    }
                    Ok(stretch) => {
                        self.time_s += dt_frame_s as f64;
                        self.last_stretch = stretch;
                        self.frame_contacts = touching;
                        return Ok(FrameReport {
                            substeps,
                            iterations: self.iterations,
                            contacts: touching,
                            max_stretch: stretch,
                            gpu_substeps: substeps,
                            ..FrameReport::default()
                        });
                    }
                    Err(failure) => failure.describe(),
                }
            }
            Err(e) => {
                let why = e.to_string();
                self.leave_gpu(&format!("the GPU backend stopped: {why}"));
                why
            }
        };
        self.particles = start;
        self.gpu_dirty();
        Err(failure)
    }

    /// One frame on the CPU: the reference solver.
    fn cpu_frame(&mut self, dt_frame_s: Real) -> Result<FrameReport, SimError> {
        let h = dt_frame_s / self.settings.substeps as Real;
        let mut report = FrameReport {
            iterations: self.iterations,
            ..FrameReport::default()
        };
        for _ in 0..self.settings.substeps {
            self.substep_with_retry(h, 0, &mut report)?;
            // Within the frame the count only rises (a substep over the tolerance raises it for
            // the rest of the frame); it falls only between frames, below.
            if let Some(adaptive) = &self.settings.adaptive_iterations {
                self.iterations = adaptive.raise(self.iterations, self.last_stretch);
                report.iterations = report.iterations.max(self.iterations);
            }
        }
        report.contacts = self.contacts.len();
        report.max_stretch = self.last_stretch;
        if let Some(adaptive) = &self.settings.adaptive_iterations {
            let n = self.particles.x.len().max(1) as Real;
            let change = report.contacts.abs_diff(self.frame_contacts) as Real / n;
            self.iterations = adaptive.next(self.iterations, report.max_stretch, change);
        }
        self.frame_contacts = report.contacts;
        if let Some(sc) = &self.self_collision {
            report.self_contacts = sc.contacts().len();
            report.self_contacts_active = sc.active_contacts();
        }
        Ok(report)
    }

    fn substep_with_retry(
        &mut self,
        h: Real,
        depth: u32,
        report: &mut FrameReport,
    ) -> Result<(), SimError> {
        self.checkpoint.clone_from(&self.particles);
        self.body_checkpoint.clone_from(&self.body_positions);
        let t0 = self.time_s;
        match self.substep(h, report) {
            Ok(()) => {
                self.time_s = t0 + h as f64;
                if let Some(run) = self.neural.as_mut() {
                    if self.neural_graph {
                        if let Some(samples) = self.samples.as_mut() {
                            samples.push(run.sample(&self.particles));
                        }
                        run.record_history(&self.particles.x);
                    } else {
                        run.clear_history();
                    }
                }
                Ok(())
            }
            Err(failure) => {
                self.particles.clone_from(&self.checkpoint);
                self.time_s = t0;
                if let Some(run) = self.neural.as_mut() {
                    run.clear_history();
                    run.invalidate();
                }
                // The failed substep's multipliers are not a start for the retry, nor its
                // contacts for the friction on its prediction.
                self.warm_h = 0.0;
                self.contacts_h = 0.0;
                if !self.body_checkpoint.is_empty() {
                    std::mem::swap(&mut self.body_positions, &mut self.body_checkpoint);
                    if let Some(body) = self.body.as_mut() {
                        body.set_pose(&self.body_positions)
                            .map_err(|source| SimError::Body { time_s: t0, source })?;
                    }
                    self.update_bound_targets();
                }
                if let SubstepFailure::Body(source) = failure {
                    return Err(SimError::Body { time_s: t0, source });
                }
                // Layer 4: a substep that failed with the network's correction runs again,
                // classically, at the same length, before any halving.
                let fallback = self.settings.neural.as_ref().is_some_and(|n| n.fallback);
                if self.neural_applied && fallback {
                    report.neural_fallbacks += 1;
                    report.rollback_reasons.push(format!(
                        "t = {t0:.4} s: {} with the network's correction; run again classically",
                        failure.describe()
                    ));
                    self.neural_off = true;
                    let rerun = self.substep_with_retry(h, depth, report);
                    self.neural_off = false;
                    return rerun;
                }
                if depth >= self.settings.max_retries {
                    // An edge torn by a load the edge-by-edge sweep carries too slowly (a large
                    // cloth at few substeps) is what the span limits are for. The line solves
                    // carry it along each line at once; there the span limits did not help (the
                    // standard scene at N = 128 and 10 substeps: fewer rollbacks, a worse
                    // stretch), more substeps did.
                    let overstretched = matches!(failure, SubstepFailure::Overstretched(_));
                    let swept = self.settings.stretch_solve == StretchSolve::Sweep;
                    let advice = if overstretched && swept && self.settings.span_limit_slack < 0.0 {
                        "raise the substeps, or turn on span limits (solver.span_limit_slack: \
                         0.0; Span limits in the solver panel), which hold the stretch that few \
                         substeps leave in a large cloth"
                    } else {
                        "lower the time step, raise the substeps, or check for extreme material \
                         values"
                    };
                    return Err(SimError::Diverged {
                        time_s: t0,
                        reason: failure.describe(),
                        retries: depth,
                        advice,
                    });
                }
                report.rollbacks += 1;
                report
                    .rollback_reasons
                    .push(format!("t = {t0:.4} s: {}", failure.describe()));
                self.sanitize_checkpoint();
                let half = 0.5 * h;
                self.substep_with_retry(half, depth + 1, report)?;
                self.substep_with_retry(half, depth + 1, report)
            }
        }
    }

    /// Makes the restored state safe to retry from: non-finite positions go back to the
    /// substep's start (or the rest shape), non-finite velocities to 0, and speeds are limited
    /// to [`SolverSettings::max_speed_m_per_s`].
    fn sanitize_checkpoint(&mut self) {
        let vmax = self.settings.max_speed_m_per_s;
        let p = &mut self.particles;
        for i in 0..p.x.len() {
            if !p.x[i].is_finite() {
                p.x[i] = if p.x_prev[i].is_finite() {
                    p.x_prev[i]
                } else {
                    self.model.positions[i]
                };
            }
            let v = p.v[i];
            p.v[i] = if !v.is_finite() {
                Vec3::ZERO
            } else if v.length_squared() > vmax * vmax {
                v * (vmax / v.length())
            } else {
                v
            };
        }
    }

    /// One substep of `h` s: the stages of the module doc, in order, each timed in
    /// [`StageTimes`].
    fn substep(&mut self, h: Real, report: &mut FrameReport) -> Result<(), SubstepFailure> {
        report.substeps += 1;
        self.kinematics(h)?;
        self.predict(h)?;
        self.neural_predict(h, report);
        self.reach();
        self.find_contacts();
        self.reset_multipliers(h, report);
        self.project(h, report);
        self.update_velocities(h);
        self.check()
    }

    /// Stage 1, kinematics: poses an animated body at the substep's end time, refits its
    /// collider and re-evaluates the targets bound to it.
    fn kinematics(&mut self, h: Real) -> Result<(), SubstepFailure> {
        let Self {
            model,
            body,
            motion,
            body_positions,
            time_s,
            times,
            ..
        } = self;

        // 1. Kinematics: the body and the targets bound to it at the substep's end time.
        let t = Instant::now();
        if let (Some(MotionBox(motion)), Some(collider)) = (motion.as_mut(), body.as_mut()) {
            motion.pose_at(*time_s + h as f64, body_positions);
            collider
                .set_pose(body_positions)
                .map_err(SubstepFailure::Body)?;
            model.update_bound_targets(collider);
        }
        times.kinematics += t.elapsed();
        Ok(())
    }

    /// Stage 2, predict: `x_prev = x`, then `v += h·g` and `x += h·v` for free particles; hard
    /// pins go to their targets. Also the predicted move's friction and each particle's
    /// reach for the contact search.
    fn predict(&mut self, h: Real) -> Result<(), SubstepFailure> {
        let Self {
            settings,
            particles: p,
            model,
            contacts,
            lambda_contact,
            contacts_h,
            friction_used,
            move2,
            times,
            ..
        } = self;

        // 2. Predict; hard pins go to their targets, so their velocity is the target's.
        let t = Instant::now();
        let g = Vec3::from(settings.gravity_m_per_s2);
        move2.clear();
        move2.resize(p.x.len(), 0.0);
        let predict = |((x_prev, x), (v, (w, moved2))): PredictItem<'_>| {
            *x_prev = *x;
            if *w > 0.0 {
                *v += g * h;
                let dx = *v * h;
                *moved2 = dx.length_squared();
                *x += dx;
            }
            *moved2
        };
        // The largest squared move (the maximum of the same numbers in any order).
        let max_move2 = if settings.parallel {
            (p.x_prev.par_iter_mut().zip(p.x.par_iter_mut()))
                .zip(
                    p.v.par_iter_mut()
                        .zip(p.inv_mass.par_iter().zip(move2.par_iter_mut())),
                )
                .with_min_len(PARTICLE_CHUNK)
                .map(predict)
                .reduce(|| 0.0, Real::max)
        } else {
            (p.x_prev.iter_mut().zip(p.x.iter_mut()))
                .zip(p.v.iter_mut().zip(p.inv_mass.iter().zip(move2.iter_mut())))
                .map(predict)
                .fold(0.0, Real::max)
        };
        if !max_move2.is_finite() {
            return Err(SubstepFailure::NonFinite);
        }
        for pin in &model.pins {
            p.x[pin.particle as usize] = pin.target_m;
        }
        // Friction on the predicted move, against the previous substep's contacts.
        friction_used.clear();
        if settings.predicted_friction && *contacts_h > 0.0 {
            friction_used.resize(p.x.len(), 0.0);
            let scale = h / *contacts_h;
            for (c, &l) in contacts.iter().zip(lambda_contact.iter()) {
                let i = c.particle as usize;
                if l <= 0.0 || p.inv_mass[i] <= 0.0 {
                    continue;
                }
                let d = p.x[i] - p.x_prev[i] - c.body_motion_m * scale;
                let dn = -c.normal.dot(d);
                if dn <= 0.0 {
                    continue;
                }
                let mu = model.friction[i];
                let dx = friction_correction(d + c.normal * dn, dn, mu, mu);
                p.x[i] += dx;
                p.v[i] += dx / h;
                friction_used[i] += dx.length() / h;
            }
        }
        times.predict += t.elapsed();
        Ok(())
    }

    /// Layer 2 of the hybrid, after the prediction: the network's correction, on substeps of
    /// the length it was trained for, unless this attempt is the fallback's classical run.
    /// While recording, only the graph (the sample's inputs).
    fn neural_predict(&mut self, h: Real, report: &mut FrameReport) {
        self.neural_graph = false;
        self.neural_applied = false;
        let Some(run) = self.neural.as_mut() else {
            return;
        };
        let recording = self.samples.is_some();
        let settings = self.settings.neural.as_ref().filter(|_| run.has_network());
        let predicting = settings.is_some() && !self.neural_off;
        if !(recording || predicting) || (h - run.trained_h).abs() > 1e-6 * h {
            return;
        }
        let t = Instant::now();
        // With `reuse_substeps`, the substeps between two predictions apply the last one again
        // and build no graph (recording builds one every substep).
        let reuse = settings.map_or(1, |s| s.reuse_substeps);
        let fresh = recording || !predicting || !run.can_reuse(reuse);
        if fresh {
            let contacts: &[Contact] = if self.contacts_h > 0.0 {
                &self.contacts
            } else {
                &[]
            };
            let g = Vec3::from(self.settings.gravity_m_per_s2);
            run.build_graph(&self.particles, contacts, h, g);
            report.neural_world_edges =
                report.neural_world_edges.max(run.world_edge_count() as u32);
            self.neural_graph = true;
        }
        let Some(settings) = settings.filter(|_| predicting) else {
            self.times.neural += t.elapsed();
            return;
        };
        if fresh {
            report.neural_inferences += 1;
        }
        match run.apply(
            &mut self.particles,
            settings.fallback,
            settings.max_correction,
            self.settings.parallel,
            fresh,
        ) {
            Ok(applied) => {
                self.neural_applied = true;
                report.neural_substeps += 1;
                report.neural_max_correction_m =
                    report.neural_max_correction_m.max(applied.max_correction_m);
                // The contact search's reach follows the corrected move (a particle the
                // network left alone keeps its own, bit for bit).
                let p = &self.particles;
                for (((m2, x), xp), moved) in (self.move2.iter_mut().zip(&p.x))
                    .zip(&p.x_prev)
                    .zip(run.corrected())
                {
                    if *moved {
                        *m2 = (*x - *xp).length_squared();
                    }
                }
            }
            Err(_) => report.neural_rejected += 1,
        }
        self.times.neural += t.elapsed();
    }

    /// How far each particle may be carried this substep, for the contact search: a
    /// particle's contacts must hold wherever the projection carries it, and the constraints
    /// move it by about its own and its neighbours' predicted moves. Only the body's contact
    /// search reads it.
    fn reach(&mut self) {
        if self.body.is_some() {
            let t = Instant::now();
            moves_of_neighbours(
                &self.move2,
                &self.neighbours,
                &mut self.motion_m,
                self.settings.parallel,
            );
            self.times.predict += t.elapsed();
        }
    }

    /// Stage 3, contacts: against the body (and its vertices), and of the cloth with itself.
    fn find_contacts(&mut self) {
        let Self {
            settings,
            particles: p,
            model,
            body,
            contacts,
            proximity,
            motion_m,
            self_collision,
            body_vertex,
            times,
            ..
        } = self;

        // 3. Contacts.
        let t = Instant::now();
        contacts.clear();
        if let Some(body) = body.as_ref() {
            body.contacts(
                &p.x_prev,
                &p.x,
                &p.inv_mass,
                settings.collision_thickness_m,
                settings.contact_margin_m,
                motion_m,
                proximity,
                contacts,
            );
        }
        if let Some(sc) = self_collision.as_mut() {
            sc.find_contacts(&p.x_prev, &p.x, &p.inv_mass, model.collision_rest());
        }
        let vertex_contacts = settings.body_vertex_contacts && body.is_some();
        if let (Some(body), true) = (body.as_ref(), vertex_contacts) {
            body_vertex.find(
                body,
                &p.x_prev,
                &p.x,
                &p.inv_mass,
                &model.triangles,
                settings.collision_thickness_m + settings.contact_margin_m,
                settings.collision_thickness_m,
            );
        } else {
            body_vertex.clear();
        }
        times.contacts += t.elapsed();
    }

    /// Stage 4, reset: the multipliers from zero (or warm-started), the drag point moved.
    fn reset_multipliers(&mut self, h: Real, report: &mut FrameReport) {
        let Self {
            settings,
            particles: p,
            model,
            lambda_stretch,
            lambda_shear,
            lambda_bend,
            lambda_attach,
            lambda_tether,
            lambda_span,
            lambda_seam,
            contacts,
            lambda_contact,
            drag,
            drag_point,
            lambda_drag,
            warm_h,
            times,
            ..
        } = self;

        // 4. Multipliers: from zero, or warm-started from the previous substep's.
        let t = Instant::now();
        let warm = if *warm_h > 0.0 {
            settings.warm_start * (h / *warm_h).powi(2)
        } else {
            0.0
        };
        *warm_h = h;
        if warm > 0.0 {
            // Only the kinds projected by sweeps: a global solve converges each sweep on its
            // own (and warm-starts its conjugate gradients), and a warm multiplier on top of it
            // was measured to throw the standard scene's cloth off the sphere.
            let edges = model.membrane == Membrane::Edges;
            let stretch_sweep = edges && settings.stretch_solve == StretchSolve::Sweep;
            let shear_sweep = settings.shear_solve == StretchSolve::Sweep
                && (edges || settings.stretch_solve == StretchSolve::Sweep);
            report.degenerate += warm_start(
                &mut p.x,
                &p.inv_mass,
                model,
                [stretch_sweep, shear_sweep].map(|on| if on { warm } else { 0.0 }),
                lambda_stretch,
                lambda_shear,
                lambda_bend,
            );
        } else {
            lambda_stretch.fill(0.0);
            lambda_shear.fill(0.0);
            lambda_bend.fill(0.0);
        }
        lambda_attach.fill(0.0);
        lambda_tether.fill(0.0);
        lambda_span.fill(0.0);
        lambda_seam.fill(0.0);
        *lambda_drag = 0.0;
        if let Some(d) = drag.as_ref() {
            let step = (d.target_m - *drag_point).clamp_length_max(DRAG_SPEED_M_PER_S * h);
            *drag_point += step;
        }
        lambda_contact.clear();
        lambda_contact.resize(contacts.len(), 0.0);
        // Timed with the projection, as [`StageTimes::project`] says.
        times.project += t.elapsed();
    }

    /// Stage 5, project: `iterations` symmetric Gauss–Seidel passes over every constraint.
    fn project(&mut self, h: Real, report: &mut FrameReport) {
        let Self {
            settings,
            particles: p,
            model,
            body,
            settle_push_m_per_s,
            lambda_stretch,
            lambda_shear,
            lambda_bend,
            lambda_attach,
            lambda_tether,
            lambda_seam,
            lambda_span,
            contacts,
            lambda_contact,
            self_collision,
            body_vertex,
            drag,
            drag_point,
            lambda_drag,
            times,
            shear_levels,
            bend_levels,
            stretch_levels,
            span_levels,
            pipeline,
            positions4,
            tethers_apart,
            global_stretch,
            line_stretch,
            global_bend,
            global_shear,
            iterations,
            ..
        } = self;

        // 5. Project.
        let t = Instant::now();
        let vertex_contacts = settings.body_vertex_contacts && body.is_some();
        // Per contact projection; a substep projects each contact 2·iterations times.
        let max_push = settle_push_m_per_s.map(|v| v * h / (2 * *iterations) as Real);
        let x = &mut p.x;
        let w = &p.inv_mass;
        let sweeps = 2 * *iterations;
        let kinds = &mut times.project_kinds;
        let mut laps = Laps::start();
        for it in 0..sweeps {
            let last = it + 1 == sweeps;
            let reverse = it % 2 == 1;
            let pass = levels::Pass {
                h,
                reverse,
                parallel: settings.parallel,
            };
            sweep(&model.attach, lambda_attach, reverse, |(c, l)| {
                let i = c.particle as usize;
                if let Outcome::Move([d]) =
                    solve_attachment(x[i], w[i], c.target_m, c.compliance_m_per_n, h, l)
                {
                    x[i] += d;
                }
            });
            if let Some(c) = drag.as_ref() {
                let i = c.particle as usize;
                if let Outcome::Move([d]) = solve_attachment(
                    x[i],
                    w[i],
                    *drag_point,
                    c.compliance_m_per_n,
                    h,
                    lambda_drag,
                ) {
                    x[i] += d;
                }
            }
            if *tethers_apart && settings.parallel && model.tethers.len() >= 2 * TETHER_CHUNK {
                // Apart, the tethers give the same positions in any order: chunks on all cores.
                let xs = SharedSlice::new(x);
                (model.tethers.par_chunks(TETHER_CHUNK))
                    .zip(lambda_tether.par_chunks_mut(TETHER_CHUNK))
                    .for_each(|(c, l)| project_tethers(xs, w, c, l, false));
            } else {
                project_tethers(
                    SharedSlice::new(x),
                    w,
                    &model.tethers,
                    lambda_tether,
                    reverse,
                );
            }
            project_seams(x, w, &model.seams, lambda_seam, reverse, h);
            laps.split(&mut kinds.attachments);
            let relax = levels::StretchPass {
                omega: settings.stretch_relaxation,
                inv_h2: 1.0 / (h * h),
                residual: last,
            };
            if let Some(pipeline) = pipeline.as_mut() {
                let lists = pipeline::Kinds {
                    span_limits: (&model.span_limits, &mut lambda_span[..]),
                    stretch: (&model.stretch, &mut lambda_stretch[..]),
                    shear: (&model.shear, &mut lambda_shear[..]),
                    bend: (&model.bend, &mut lambda_bend[..]),
                };
                // Padded to 16 bytes for the lanes' loads and stores, and back.
                levels::pad_positions(positions4, x, w);
                let xs = SharedSlice::new(&mut positions4[..]);
                let [stretch, shear, bend] =
                    pipeline::project_pipelined(xs, w, lists, pipeline, pass, relax);
                levels::unpad_positions(x, positions4);
                if last {
                    report.max_residual_m = stretch.max_residual_m;
                }
                report.degenerate += stretch.degenerate + shear.degenerate + bend.degenerate;
                laps.split(&mut kinds.pipelined);
            } else {
                // With the membrane per triangle the edges are only measured; the yarn strains are
                // among the triangle constraints, solved with the shear (globally when either the
                // stretch or the shear solve is global).
                let edges = model.membrane == Membrane::Edges;
                let global = edges && settings.stretch_solve == StretchSolve::Global;
                let lined = edges && settings.stretch_solve == StretchSolve::Lines;
                let global_shearing = settings.shear_solve == StretchSolve::Global
                    || (!edges && settings.stretch_solve == StretchSolve::Global);
                let global_bending = settings.bend_solve == StretchSolve::Global;
                let membrane = MembraneSweep {
                    w,
                    model,
                    h,
                    pass,
                    relax,
                    span_levels: span_levels.as_ref(),
                    stretch_levels: stretch_levels.as_ref().filter(|_| !global && edges),
                    shear_levels: shear_levels.as_ref().filter(|_| !global_shearing),
                    bend_levels: bend_levels.as_ref().filter(|_| !global_bending),
                    stretch_swept: edges && !global && !lined,
                    shear_swept: !global_shearing,
                    bend_swept: !global_bending,
                };
                let lambdas = [
                    &mut lambda_stretch[..],
                    &mut lambda_shear[..],
                    &mut lambda_bend[..],
                ];
                let [stretch, shear, bend] = if positions4.is_empty() {
                    membrane.span_limits(SharedSlice::new(x), lambda_span);
                    laps.split(&mut kinds.span_limits);
                    if global {
                        let (edges, l) = (&model.stretch, &mut lambdas[0][..]);
                        let g = global_stretch.solve(x, w, edges, l, h, it as usize);
                        report.degenerate += g.degenerate as u64;
                        report.stretch_cg_iterations += g.iterations as u64;
                        if last {
                            report.max_residual_m = g.max_violation;
                        }
                    }
                    let line_pass = |x: &mut [Vec3], l: &mut [Real], report: &mut FrameReport| {
                        let r = line_stretch.solve(x, w, &model.stretch, l, pass);
                        report.degenerate += r.degenerate;
                        if last {
                            report.max_residual_m = r.max_violation;
                        }
                    };
                    let [stretch_l, shear_l, bend_l] = lambdas;
                    if lined {
                        line_pass(x, stretch_l, report);
                    }
                    let counts = membrane.sweep(
                        SharedSlice::new(x),
                        [&mut *stretch_l, shear_l, bend_l],
                        kinds,
                        &mut laps,
                    );
                    if lined {
                        // The stiffest last: what the shear and the bending moved back.
                        for _ in 0..settings.line_passes {
                            line_pass(x, stretch_l, report);
                        }
                        laps.split(&mut kinds.stretch);
                    }
                    counts
                } else {
                    // Every kind in levels of its own (`Solver::new` pads only then): swept in
                    // the padded positions, as the pipeline does, and back.
                    levels::pad_positions(positions4, x, w);
                    let xs = SharedSlice::new(&mut positions4[..]);
                    membrane.span_limits(xs, lambda_span);
                    laps.split(&mut kinds.span_limits);
                    let counts = membrane.sweep(xs, lambdas, kinds, &mut laps);
                    levels::unpad_positions(x, positions4);
                    laps.split(&mut kinds.bend);
                    counts
                };
                if last && !global && !lined {
                    report.max_residual_m = stretch.max_residual_m;
                }
                if global_shearing {
                    let g = global_shear.solve(x, w, &model.shear, lambda_shear, h, it as usize);
                    report.degenerate += g.degenerate as u64;
                    report.shear_cg_iterations += g.iterations as u64;
                    laps.split(&mut kinds.shear);
                }
                if global_bending {
                    let g = global_bend.solve(x, w, &model.bend, lambda_bend, h, it as usize);
                    report.degenerate += g.degenerate as u64;
                    report.bend_cg_iterations += g.iterations as u64;
                    laps.split(&mut kinds.bend);
                }
                report.degenerate += stretch.degenerate + shear.degenerate + bend.degenerate;
            }
            if vertex_contacts {
                body_vertex.project(x, w, max_push);
                laps.split(&mut kinds.body_vertices);
            }
            project_contacts(x, w, contacts, lambda_contact, max_push);
            laps.split(&mut kinds.contacts);
            if let Some(sc) = self_collision.as_mut() {
                sc.project(x, w, reverse);
                laps.split(&mut kinds.self_contacts);
            }
            if !model.seams.is_empty() {
                // Again last, so that a sweep ends with the seams at their rest length rather
                // than where the line solves and the contacts left them.
                for pass in 0..SEAM_END_PASSES {
                    project_seams(
                        x,
                        w,
                        &model.seams,
                        lambda_seam,
                        reverse == (pass % 2 == 0),
                        h,
                    );
                }
                laps.split(&mut kinds.attachments);
            }
        }
        let self_contacts = self_collision.as_ref().map_or(0, |sc| sc.contacts().len());
        // With the membrane per triangle the edges are measured, not projected.
        let projected_edges = match model.membrane {
            // The line solves project every edge once per pass.
            Membrane::Edges if settings.stretch_solve == StretchSolve::Lines => {
                model.stretch.len() * (1 + settings.line_passes as usize)
            }
            Membrane::Edges => model.stretch.len(),
            Membrane::Triangles => 0,
        };
        let per_sweep = projected_edges
            + model.shear.len()
            + model.bend.len()
            + model.attach.len()
            + model.tethers.len()
            + (1 + SEAM_END_PASSES) * model.seams.len()
            + model.span_limits.len()
            + usize::from(drag.is_some())
            + contacts.len()
            + body_vertex.contacts().len()
            + self_contacts;
        report.projections += (sweeps as u64) * per_sweep as u64;
        times.project += t.elapsed();
    }

    /// Stage 6, velocities from positions, then Coulomb friction and damping.
    fn update_velocities(&mut self, h: Real) {
        let Self {
            settings,
            particles: p,
            model,
            contacts,
            lambda_contact,
            contacts_h,
            friction_used,
            damping_factor,
            damping_h,
            self_collision,
            times,
            ..
        } = self;

        // 6. Velocities, then friction against the body at the velocity level: the velocity
        // relative to the body surface loses its tangential part up to μ times the normal
        // velocity change w·λ/h the contact gave this substep (Coulomb: stick below the limit,
        // slide with a reduced speed above it). Done here rather than on positions so that it
        // never undoes the constraints' corrections: a position-level friction applied after
        // the last sweep held a waistband vertex pressed against a swinging arm in place while
        // its edge stretched to ten times its length.
        let t = Instant::now();
        let inv_h = 1.0 / h;
        let (x, x_prev) = (&p.x, &p.x_prev);
        let velocity = |(v, i): (&mut Vec3, usize)| *v = (x[i] - x_prev[i]) * inv_h;
        if settings.parallel {
            (p.v.par_iter_mut().zip(0..x.len()))
                .with_min_len(PARTICLE_CHUNK)
                .for_each(velocity);
        } else {
            p.v.iter_mut().zip(0..x.len()).for_each(velocity);
        }
        for (c, &l) in contacts.iter().zip(lambda_contact.iter()) {
            let i = c.particle as usize;
            // A particle pinched closer than its thickness is squeezed: the cloth pressed
            // between the two surfaces grips both, as if each contact had pushed it by the
            // thickness it was denied, even where it already sits in the room left.
            let squeeze = if c.pinched {
                (settings.collision_thickness_m - c.thickness_m).max(0.0)
            } else {
                0.0
            };
            if (l <= 0.0 && squeeze <= 0.0) || p.inv_mass[i] <= 0.0 {
                continue;
            }
            let v_rel = p.v[i] - c.body_motion_m * inv_h;
            let v_t = v_rel - c.normal * c.normal.dot(v_rel);
            let mu = model.friction[i];
            let mut dv_n = p.inv_mass[i] * l.max(0.0) * inv_h;
            if squeeze > 0.0 {
                dv_n += squeeze * inv_h;
            }
            if let Some(used) = friction_used.get_mut(i).filter(|u| **u > 0.0) {
                // What the prediction's friction took of this particle's budget.
                dv_n = (dv_n - *used / mu).max(0.0);
                *used = 0.0;
            }
            p.v[i] += friction_correction(v_t, dv_n, mu, mu);
        }
        *contacts_h = h;
        // The same Coulomb friction between cloth layers (self-contacts).
        if let Some(sc) = self_collision.as_ref() {
            sc.apply_friction(&mut p.v, &p.inv_mass, &model.friction, h);
        }
        if *damping_h != h || damping_factor.len() != p.v.len() {
            damping_factor.clear();
            damping_factor.extend(model.damping_per_s.iter().map(|d| (-d * h).exp()));
            *damping_h = h;
        }
        let damp = |(v, f): (&mut Vec3, &Real)| *v *= *f;
        if settings.parallel {
            (p.v.par_iter_mut().zip(damping_factor.par_iter()))
                .with_min_len(PARTICLE_CHUNK)
                .for_each(damp);
        } else {
            p.v.iter_mut().zip(damping_factor.iter()).for_each(damp);
        }
        times.velocities += t.elapsed();
    }

    /// Stage 7, check: non-finite values, overstretch, deep penetration, flipped triangles.
    fn check(&mut self) -> Result<(), SubstepFailure> {
        let Self {
            settings,
            particles: p,
            model,
            settle_push_m_per_s,
            rest_area2,
            contacts,
            times,
            last_stretch,
            body,
            ..
        } = self;

        // 7. Check.
        let t = Instant::now();
        let result = check_substep(
            p,
            model,
            body.as_ref(),
            contacts,
            rest_area2,
            settings,
            settle_push_m_per_s.is_none(),
        );
        times.check += t.elapsed();
        *last_stretch = result?;
        Ok(())
    }
}

/// The pipeline's parts of the four kinds (span limits, stretch, shear, bending), each levelled
/// in its own order and each level split between the two halves of [`Halves`], and `model`'s
/// lists regrouped to match (each level's first half, level after level, then each level's
/// second half). `None`, `model` untouched, when a kind's levels are narrower than
/// [`levels::MIN_LEVEL_WIDTH`], the stretch's narrower than [`crate::solver::pipeline::MIN_LEVEL_WIDTH`],
/// or one half has no work.
fn pipelined_levels(model: &mut ClothModel) -> Option<Pipeline> {
    use crate::solver::pipeline::{padded, KindParts, KINDS};
    let n = model.positions.len();
    let halves = Halves::new(&model.positions);
    let (mut span, mut stretch) = (model.span_limits.clone(), model.stretch.clone());
    let (mut shear, mut bend) = (model.shear.clone(), model.bend.clone());
    let levels = [
        Levels::if_wide(&mut span, |c| c.particles, n)?,
        Levels::if_wide(&mut stretch, |c| c.particles, n)?,
        Levels::if_wide(&mut shear, |c| c.particles, n)?,
        Levels::if_wide(&mut bend, |c| c.particles, n)?,
    ];
    // Narrow levels split in two leave each thread too little per level.
    if stretch.len() < crate::solver::pipeline::MIN_LEVEL_WIDTH * levels[1].count() {
        return None;
    }
    let parts = [
        halves.split_levels(&mut span, &levels[0], |c| c.particles),
        halves.split_levels(&mut stretch, &levels[1], |c| c.particles),
        halves.split_levels(&mut shear, &levels[2], |c| c.particles),
        halves.split_levels(&mut bend, &levels[3], |c| c.particles),
    ];
    let stencils: [Vec<[u32; 4]>; KINDS] = [
        span.iter().map(|c| padded(c.particles)).collect(),
        stretch.iter().map(|c| padded(c.particles)).collect(),
        shear.iter().map(|c| padded(c.particles)).collect(),
        bend.iter().map(|c| padded(c.particles)).collect(),
    ];
    let kinds: [KindParts<'_>; KINDS] = std::array::from_fn(|k| KindParts {
        stencils: &stencils[k],
        levels: &parts[k],
    });
    let pipeline = Pipeline::new(&kinds, n)?;
    (model.span_limits, model.stretch) = (span, stretch);
    (model.shear, model.bend) = (shear, bend);
    Some(pipeline)
}

/// The stretch in layers from where the load comes in ([`Levels::layered`]) when the mesh's own
/// order has no room for levels: layered by distance in edges from the pinned and attached
/// particles (or, with neither, from the first particle), kept when that order holds at least
/// [`crate::solver::levels::MIN_LEVEL_WIDTH`] edges per level on average; otherwise `None` and
/// `stretch` untouched.
fn layered_if_wide(
    stretch: &mut Vec<Distance>,
    pins: &[Pin],
    attach: &[Attachment],
    n: usize,
) -> Option<Levels> {
    let edges: Vec<[u32; 2]> = stretch.iter().map(|c| c.particles).collect();
    let seeds: Vec<u32> = (pins.iter().map(|p| p.particle))
        .chain(attach.iter().map(|a| a.particle))
        .collect();
    let layer = crate::solver::levels::particle_layers(&edges, &seeds, n);
    Levels::layered_if_wide(stretch, |c| c.particles, n, &layer)
}

/// One particle in the prediction: its previous and current position, velocity, inverse mass
/// and squared predicted move.
type PredictItem<'a> = (
    (&'a mut Vec3, &'a mut Vec3),
    (&'a mut Vec3, (&'a Real, &'a mut Real)),
);

/// Particles per task of the per-particle loops run in parallel (the prediction, the
/// velocities).
const PARTICLE_CHUNK: usize = 4096;

/// Tethers per task when they are projected in parallel.
const TETHER_CHUNK: usize = 1024;

/// Whether `tethers` are apart: no two move the same particle, and every anchor has no mass
/// (`mass_kg` 0: pinned, never moved by a projection) and is no tether's particle. Then each
/// tether reads only its own particle and a position that no tether writes, so they give the
/// same positions, bit for bit, in any order or all at once.
fn tethers_apart(tethers: &[Tether], mass_kg: &[Real]) -> bool {
    let mut moved = vec![false; mass_kg.len()];
    for t in tethers {
        match moved.get_mut(t.particle as usize) {
            Some(m) if !*m => *m = true,
            _ => return false,
        }
    }
    (tethers.iter()).all(|t| {
        let a = t.anchor as usize;
        mass_kg.get(a) == Some(&0.0) && !moved[a]
    })
}

/// Projects `tethers` once, forward or in reverse.
fn project_tethers(
    x: SharedSlice<'_, Vec3>,
    w: &[Real],
    tethers: &[Tether],
    lambda: &mut [Real],
    reverse: bool,
) {
    sweep(tethers, lambda, reverse, |(c, l)| {
        let (i, a) = (c.particle as usize, c.anchor as usize);
        // SAFETY: the indices are in bounds (checked when the solver was built); serially there
        // is one thread, and in parallel the tethers are apart, so particle `i` is this
        // tether's alone and anchor `a` is written by none.
        let (p, anchor) = unsafe { (x.get(i), x.get(a)) };
        if let Outcome::Move([d]) = solve_tether(p, w[i], anchor, c.max_length_m, l) {
            // SAFETY: as above.
            unsafe { x.add(i, d) };
        }
    });
}

/// Projects the span limits once, forward or in reverse.
fn project_span_limits<P: Positions>(
    x: P,
    w: &[Real],
    limits: &[SpanLimit],
    lambda: &mut [Real],
    reverse: bool,
) {
    sweep(limits, lambda, reverse, |(c, l)| {
        let [a, b] = c.particles.map(|i| i as usize);
        // SAFETY: the indices are in bounds (checked when the solver was built), and this runs
        // on one thread.
        let p = unsafe { [x.get(a), x.get(b)] };
        if let Outcome::Move([da, db]) = solve_span_limit(p, [w[a], w[b]], c.max_length_m, l) {
            // SAFETY: as above.
            unsafe {
                x.add(a, da);
                x.add(b, db);
            }
        }
    });
}

/// What one sweep of the span limits, stretch, shear and bending needs besides the positions,
/// so that the same code sweeps `x` or the padded positions ([`levels::Positions`]).
struct MembraneSweep<'a> {
    /// Inverse masses (kg⁻¹).
    w: &'a [Real],
    model: &'a ClothModel,
    /// The substep (s).
    h: Real,
    pass: levels::Pass,
    relax: levels::StretchPass,
    /// Each kind's levels where it is swept in them (`None`: one at a time or in colours).
    span_levels: Option<&'a Levels>,
    stretch_levels: Option<&'a Levels>,
    shear_levels: Option<&'a Levels>,
    bend_levels: Option<&'a Levels>,
    /// Whether each kind is swept at all (not solved globally; the stretch edges not only
    /// measured).
    stretch_swept: bool,
    shear_swept: bool,
    bend_swept: bool,
}

impl MembraneSweep<'_> {
    /// The span limits, in levels or one at a time.
    fn span_limits<P: Positions>(&self, xs: P, lambda: &mut [Real]) {
        let (w, limits) = (self.w, &self.model.span_limits);
        match self.span_levels {
            Some(levels) => levels::project_span_limits(xs, w, limits, lambda, levels, self.pass),
            None => project_span_limits(xs, w, limits, lambda, self.pass.reverse),
        }
    }

    /// The stretch, shear and bending swept kinds, each timed in `kinds`; returns their counts.
    fn sweep<P: Positions>(
        &self,
        xs: P,
        [lambda_stretch, lambda_shear, lambda_bend]: [&mut [Real]; 3],
        kinds: &mut ProjectTimes,
        laps: &mut Laps,
    ) -> [Counts; 3] {
        let (w, h, model, reverse) = (self.w, self.h, self.model, self.pass.reverse);
        // SAFETY (the three kinds below): each closure reads and writes only the particles of
        // its own constraint, whose indices `Solver::new` checked; within a level no two
        // constraints share a particle (`Levels`), and serially there is one thread.
        let stretch = if let Some(levels) = self.stretch_levels {
            let (edges, relax) = (&model.stretch, self.relax);
            levels::project_stretch(xs, w, edges, lambda_stretch, levels, self.pass, relax)
        } else {
            project_kind(
                swept(&model.stretch, self.stretch_swept),
                lambda_stretch,
                reverse,
                xs,
                |c, l, x| levels::stretch_one(x, w, c, l, h, self.relax),
            )
        };
        laps.split(&mut kinds.stretch);
        let shear = if let Some(levels) = self.shear_levels {
            levels::project_shear(xs, w, &model.shear, lambda_shear, levels, self.pass)
        } else {
            project_kind(
                swept(&model.shear, self.shear_swept),
                lambda_shear,
                reverse,
                xs,
                |c, l, x| Counts::skipped(levels::shear_one(x, w, c, l, h)),
            )
        };
        laps.split(&mut kinds.shear);
        let bend = if let Some(levels) = self.bend_levels {
            levels::project_bend(xs, w, &model.bend, lambda_bend, levels, self.pass)
        } else {
            project_kind(
                swept(&model.bend, self.bend_swept),
                lambda_bend,
                reverse,
                xs,
                |c, l, x| Counts::skipped(levels::bend_one(x, w, c, l, h)),
            )
        };
        laps.split(&mut kinds.bend);
        [stretch, shear, bend]
    }
}

/// `list`, or nothing when its kind is not swept.
fn swept<T>(list: &[T], on: bool) -> &[T] {
    if on {
        list
    } else {
        &[]
    }
}

/// Projects the body contacts once, in order (stage 5 of the substep); `max_push` limits each
/// move while settling.
fn project_contacts(
    x: &mut [Vec3],
    w: &[Real],
    contacts: &[Contact],
    lambda_contact: &mut [Real],
    max_push: Option<Real>,
) {
    for (c, l) in contacts.iter().zip(lambda_contact.iter_mut()) {
        let i = c.particle as usize;
        let before = *l;
        if let Outcome::Move([d]) = solve_contact(x[i], w[i], c.point_m, c.normal, c.thickness_m, l)
        {
            match max_push {
                // Settling: limit the move, and the multiplier with it, so friction
                // (which reads λ) sees only the push that was applied.
                Some(m) if d.length_squared() > m * m => {
                    let f = m / d.length();
                    x[i] += d * f;
                    *l = before + (*l - before) * f;
                }
                _ => x[i] += d,
            }
        }
    }
}

/// Stage 4 with a warm start: scales each membrane multiplier (stretch edges, and the shear
/// rows, which hold the yarn strains too with [`Membrane::Triangles`]) by its kind's factor
/// (0 for a kind not projected by sweeps) and applies the
/// position change it stands for, `w_i·∇C_i·λ`, at the predicted positions, so the sweeps start
/// from the previous substep's forces. Bending starts from zero: its loads are local, and its
/// gradient is the dearest to evaluate. Returns the constraints skipped as degenerate (their
/// multiplier is set to 0).
fn warm_start(
    x: &mut [Vec3],
    w: &[Real],
    model: &ClothModel,
    [warm_stretch, warm_shear]: [Real; 2],
    lambda_stretch: &mut [Real],
    lambda_shear: &mut [Real],
    lambda_bend: &mut [Real],
) -> u64 {
    fn apply<const N: usize>(
        x: &mut [Vec3],
        w: &[Real],
        idx: [u32; N],
        lambda: &mut Real,
        grad: impl Fn([Vec3; N]) -> Option<[Vec3; N]>,
    ) -> u64 {
        let idx = idx.map(|i| i as usize);
        match multiplier_move(grad(idx.map(|i| x[i])), idx.map(|i| w[i]), *lambda) {
            Outcome::Move(d) => {
                for k in 0..N {
                    x[idx[k]] += d[k];
                }
                0
            }
            _ => {
                *lambda = 0.0;
                1
            }
        }
    }
    let mut degenerate = 0;
    for (c, l) in model.stretch.iter().zip(lambda_stretch.iter_mut()) {
        *l *= warm_stretch;
        if *l != 0.0 {
            degenerate += apply(x, w, c.particles, l, |p| {
                distance_and_gradient(p, c.rest_length_m).map(|(_, g)| g)
            });
        }
    }
    for (c, l) in model.shear.iter().zip(lambda_shear.iter_mut()) {
        *l *= warm_shear;
        if *l != 0.0 {
            degenerate += apply(x, w, c.particles, l, |p| {
                triangle_strain_and_gradient(p, c.rest_inverse, c.strain).map(|(_, g)| g)
            });
        }
    }
    lambda_bend.fill(0.0);
    degenerate
}

/// Stage 7: the failure checks, in order of cost.
fn check_substep(
    p: &Particles,
    model: &ClothModel,
    body: Option<&BodyCollider>,
    contacts: &[Contact],
    rest_area2: &[Real],
    settings: &SolverSettings,
    check_penetration: bool,
) -> Result<Real, SubstepFailure> {
    // Particles pinched between two parts of the body are left out of the stretch and
    // penetration checks: the body leaves them no room, and smaller steps cannot make any
    // (an empty list, allocated for nothing, where nothing is pinched).
    let mut pinched = Vec::new();
    if contacts.iter().any(|c| c.pinched) {
        pinched.resize(p.x.len(), false);
        for c in contacts.iter().filter(|c| c.pinched) {
            pinched[c.particle as usize] = true;
        }
    }
    // Where a failure is found, the particles it is about are also tested against the body
    // itself: one the body leaves less than twice the collision thickness of room
    // (`BodyCollider::room_at`, the stats' pinch test) is pinched too, whatever its contacts
    // found this substep.
    let pinch_gap_m = 2.0 * settings.collision_thickness_m;
    let is_pinched = |i: usize| pinched.get(i).copied().unwrap_or(false);
    let room_pinched = |i: usize| {
        body.is_some_and(|b| {
            let s = b.closest(p.x[i]);
            let near = s.signed_distance_m <= pinch_gap_m;
            near && b.room_at(&s, pinch_gap_m).is_some()
        })
    };
    // The particles and edges on one thread, the triangles on another (with `parallel`); the
    // checks then report in the same order as one after another.
    let particles_and_edges = || {
        let finite = p.x.iter().all(|v| v.is_finite()) && p.v.iter().all(|v| v.is_finite());
        let stretch_of = |c: &Distance| {
            let [a, b] = c.particles.map(|i| i as usize);
            p.x[a].distance(p.x[b]) / c.rest_length_m - 1.0
        };
        let free = |c: &&Distance| !c.particles.iter().any(|&i| is_pinched(i as usize));
        let mut worst = (model.stretch.iter())
            .filter(free)
            .map(stretch_of)
            .fold(0.0, Real::max);
        if worst > settings.failure_stretch && finite {
            worst = (model.stretch.iter())
                .filter(free)
                .map(|c| (c, stretch_of(c)))
                .filter(|&(c, s)| {
                    s <= settings.failure_stretch
                        || !c.particles.iter().any(|&i| room_pinched(i as usize))
                })
                .fold(0.0, |m: Real, (_, s)| m.max(s));
        }
        (finite, worst)
    };
    let ((finite, worst), (triangles, inverted)) = if settings.parallel {
        rayon::join(particles_and_edges, || {
            inverted_triangles(p, model, rest_area2, &is_pinched)
        })
    } else {
        (
            particles_and_edges(),
            inverted_triangles(p, model, rest_area2, &is_pinched),
        )
    };
    if !finite {
        return Err(SubstepFailure::NonFinite);
    }
    if worst > settings.failure_stretch {
        return Err(SubstepFailure::Overstretched(worst));
    }
    if check_penetration {
        let depth =
            |c: &Contact| c.thickness_m - c.normal.dot(p.x[c.particle as usize] - c.point_m);
        let deepest = contacts
            .iter()
            .filter(|c| !is_pinched(c.particle as usize))
            .filter(|c| {
                depth(c) <= settings.failure_penetration_m || !room_pinched(c.particle as usize)
            })
            .map(depth)
            .fold(0.0, Real::max);
        if deepest > settings.failure_penetration_m {
            return Err(SubstepFailure::Penetration(deepest));
        }
    }
    let allowed =
        INVERSION_MIN_COUNT.max((INVERSION_FAILURE_FRACTION * triangles as Real) as usize);
    if inverted > allowed {
        let either = |i: usize| is_pinched(i) || room_pinched(i);
        let (_, inverted) = inverted_triangles(p, model, rest_area2, &either);
        if inverted > allowed {
            return Err(SubstepFailure::Inverted(inverted));
        }
    }
    Ok(worst)
}

/// The triangles of [`check_substep`], and how many of them flipped over the substep (their
/// normal turned by more than 90° while both their areas stayed above a quarter of the rest
/// area). Each triangle once: its shear row (with the membrane per triangle it also has yarn
/// rows).
/// A triangle with a corner for which `pinched` holds is not counted as flipped: the body
/// folds a pinched piece of cloth as it likes.
fn inverted_triangles(
    p: &Particles,
    model: &ClothModel,
    rest_area2: &[Real],
    pinched: &(dyn Fn(usize) -> bool + Sync),
) -> (usize, usize) {
    (model.shear.iter())
        .zip(rest_area2)
        .filter(|(c, _)| c.strain == Strain::Shear)
        .fold((0usize, 0usize), |(triangles, inverted), (c, &rest)| {
            let [a, b, d] = c.particles.map(|i| i as usize);
            let n0 = (p.x_prev[b] - p.x_prev[a]).cross(p.x_prev[d] - p.x_prev[a]);
            let n1 = (p.x[b] - p.x[a]).cross(p.x[d] - p.x[a]);
            let min_area2 = INVERSION_MIN_AREA_RATIO * rest;
            let flipped = n0.dot(n1) < 0.0
                && n0.length() > min_area2
                && n1.length() > min_area2
                && ![a, b, d].into_iter().any(pinched);
            (triangles + 1, inverted + flipped as usize)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rule of [`AdaptiveIterations`]: more above the tolerance (at least one, at most
    /// twice), fewer below half of it only with quiet contacts (at most half), the bounds kept.
    #[test]
    fn adaptive_iterations_follow_the_stretch_and_the_contacts() {
        let a = AdaptiveIterations {
            min_iterations: 2,
            max_iterations: 12,
            stretch_tolerance: 0.02,
        };
        // Over the tolerance: 4 · 0.03 / 0.016 = 7.5 → 8, within 5..=8.
        assert_eq!(a.next(4, 0.03, 0.0), 8);
        // Just over: at least one more.
        assert_eq!(a.next(4, 0.0201, 0.0), 6);
        assert_eq!(a.next(6, 0.021, 0.0), 8);
        // Far over: at most twice, and never past the maximum.
        assert_eq!(a.next(4, 1.0, 0.0), 8);
        assert_eq!(a.next(8, 1.0, 0.0), 12);
        // Inside the band: the same, quiet or not.
        assert_eq!(a.next(4, 0.015, 0.0), 4);
        // Below half, quiet: 4 · 0.004 / 0.016 = 1 → at most halved, 2; never under the minimum.
        assert_eq!(a.next(4, 0.004, 0.0), 2);
        assert_eq!(a.next(8, 0.008, 0.0), 4);
        assert_eq!(a.next(8, 0.009, 0.0), 5);
        assert_eq!(a.next(2, 0.0, 0.0), 2);
        // Below half with the contacts changing: kept.
        assert_eq!(a.next(4, 0.004, 0.05), 4);
        // Over half with the contacts changing: raised before the tolerance is reached.
        assert_eq!(a.next(4, 0.012, 0.05), 5);
        // A count outside the bounds comes back inside them; a non-finite stretch keeps it.
        assert_eq!(a.next(1, 0.015, 0.0), 2);
        assert_eq!(a.next(40, 0.015, 0.0), 12);
        assert_eq!(a.next(4, Real::NAN, 0.0), 4);
        // Within a frame it only rises.
        assert_eq!(a.raise(4, 0.03), 8);
        assert_eq!(a.raise(4, 0.0), 4);
        assert_eq!(a.raise(4, 0.019), 4);
    }

    #[test]
    fn bad_adaptive_iterations_are_refused_naming_the_field() {
        let with = |a: AdaptiveIterations| SolverSettings {
            adaptive_iterations: Some(a),
            ..SolverSettings::default()
        };
        let d = AdaptiveIterations::default();
        assert!(with(d).validate().is_ok());
        for (bad, field) in [
            (
                AdaptiveIterations {
                    min_iterations: 0,
                    ..d
                },
                "adaptive_iterations.min_iterations",
            ),
            (
                AdaptiveIterations {
                    min_iterations: 4,
                    max_iterations: 3,
                    ..d
                },
                "adaptive_iterations.max_iterations",
            ),
            (
                AdaptiveIterations {
                    max_iterations: 101,
                    ..d
                },
                "adaptive_iterations.max_iterations",
            ),
            (
                AdaptiveIterations {
                    stretch_tolerance: 0.0,
                    ..d
                },
                "adaptive_iterations.stretch_tolerance",
            ),
            (
                AdaptiveIterations {
                    stretch_tolerance: Real::NAN,
                    ..d
                },
                "adaptive_iterations.stretch_tolerance",
            ),
        ] {
            match with(bad).validate() {
                Err(SimError::Setting { field: f, .. }) => assert_eq!(f, field),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn tethers_are_apart_only_with_own_particles_and_pinned_anchors() {
        let tether = |particle, anchor| Tether {
            particle,
            anchor,
            max_length_m: 0.1,
        };
        // Particles 0 and 1 pinned (no mass), 2 to 4 free.
        let mass = [0.0, 0.0, 0.01, 0.01, 0.01];
        assert!(tethers_apart(
            &[tether(2, 0), tether(3, 0), tether(4, 1)],
            &mass
        ));
        assert!(tethers_apart(&[], &mass));
        // Two tethers on one particle.
        assert!(!tethers_apart(&[tether(2, 0), tether(2, 1)], &mass));
        // An anchor that moves.
        assert!(!tethers_apart(&[tether(2, 3)], &mass));
        // An anchor that is another tether's particle.
        assert!(!tethers_apart(&[tether(2, 0), tether(0, 1)], &mass));
        // Out of range.
        assert!(!tethers_apart(&[tether(9, 0)], &mass));
        assert!(!tethers_apart(&[tether(2, 9)], &mass));
    }

    #[test]
    fn contact_motion_is_the_largest_move_among_neighbours() {
        // A chain 0 - 1 - 2 - 3: only particle 0 moves (3 mm). Its neighbour 1 gets its move;
        // 2 and 3, two and three edges away, do not (the maximum does not spread along the
        // list's order).
        let edge = |a, b| Distance {
            particles: [a, b],
            rest_length_m: 0.01,
            compliance_m_per_n: 0.0,
        };
        let edges = [edge(0, 1), edge(1, 2), edge(2, 3)];
        let mut out = Vec::new();
        let chain = Neighbours::new(&edges, 4);
        moves_of_neighbours(&[0.003 * 0.003, 0.0, 0.0, 0.0], &chain, &mut out, false);
        assert_eq!(out.len(), 4);
        assert!((out[0] - 0.003).abs() < 1.0e-9 && (out[1] - 0.003).abs() < 1.0e-9);
        assert_eq!(&out[2..], &[0.0, 0.0]);
        // On a mesh whose moves all differ, serial and parallel give what one pass over the
        // edges gives, bit for bit (a NaN among the moves is passed over either way).
        let n = 30;
        let grid: Vec<Distance> = (0..n - 1)
            .flat_map(|i| [edge(i, i + 1), edge(i, (i * 7 + 3) % n)])
            .collect();
        let mut own2: Vec<Real> = (0..n).map(|i| ((i * 13) % 17) as Real * 1.0e-6).collect();
        own2[5] = Real::NAN;
        let mut by_edge = own2.clone();
        for e in &grid {
            let [a, b] = e.particles.map(|i| i as usize);
            by_edge[a] = by_edge[a].max(own2[b]);
            by_edge[b] = by_edge[b].max(own2[a]);
        }
        let by_edge: Vec<Real> = by_edge.iter().map(|m| m.sqrt()).collect();
        let bits = |v: &[Real]| v.iter().map(|m| m.to_bits()).collect::<Vec<_>>();
        let neighbours = Neighbours::new(&grid, n as usize);
        for parallel in [false, true] {
            moves_of_neighbours(&own2, &neighbours, &mut out, parallel);
            assert_eq!(bits(&by_edge), bits(&out), "parallel {parallel}");
        }
    }
    use approx::assert_relative_eq;

    /// A skirt's ring mesh, whose own order has no room for levels, gets its stretch in layers
    /// from the pinned waistband, and a grid keeps its own order.
    #[test]
    fn a_ring_mesh_sweeps_its_stretch_in_layers_and_a_grid_in_its_own_order() {
        let model = |mesh: &crate::mesh::Mesh, pinned: &[u32]| {
            let topology = crate::mesh::Topology::new(mesh);
            let cloth = crate::garment::material::build_cloth(
                mesh,
                &topology,
                &crate::garment::material::Fabric::default(),
            );
            let mut m = ClothModel::from_cloth(mesh.positions.clone(), cloth, 0.0, 0.0);
            m.pins = (pinned.iter())
                .map(|&p| Pin {
                    particle: p,
                    target_m: mesh.positions[p as usize],
                })
                .collect();
            m
        };
        let skirt = crate::mesh::shapes::skirt(&crate::mesh::shapes::SkirtParams {
            rings: 16,
            segments: 48,
            ..Default::default()
        });
        let m = model(&skirt.mesh, &skirt.pinned);
        let first_edges: Vec<[u32; 2]> = m.stretch.iter().map(|c| c.particles).collect();
        // Levels are for the stretch swept edge by edge (not the default line solves).
        let sweep = SolverSettings {
            stretch_solve: StretchSolve::Sweep,
            ..Default::default()
        };
        let s = Solver::new(sweep.clone(), m, None).unwrap();
        let levels = s.stretch_levels.as_ref().expect("levelled");
        assert!(levels.count() * crate::solver::levels::MIN_LEVEL_WIDTH <= first_edges.len());
        // The first level holds waistband edges (layer 0), pinned at both ends or one.
        let waist = |p: u32| (p as usize) < 48;
        let first = &s.model.stretch[..levels.offsets[1]];
        assert!(first.iter().all(|c| c.particles.iter().any(|&p| waist(p))));

        let grid = crate::mesh::shapes::grid_cloth(1.0, 32, 0.5);
        let m = model(&grid, &[]);
        // The levels of the mesh's own order.
        let mut in_order = m.stretch.clone();
        let own = Levels::new(&mut in_order, |c| c.particles, grid.positions.len());
        // (Pipelined, the lists are regrouped by thread: `tests/parallel.rs`.)
        let settings = SolverSettings {
            pipelined_sweeps: false,
            ..sweep
        };
        let s = Solver::new(settings, m, None).unwrap();
        assert_eq!(
            s.stretch_levels.as_ref().map(Levels::count),
            Some(own.count())
        );
        assert_eq!(
            in_order.iter().map(|c| c.particles).collect::<Vec<_>>(),
            s.model
                .stretch
                .iter()
                .map(|c| c.particles)
                .collect::<Vec<_>>()
        );
    }

    fn pendulum(compliance: Real) -> ClothModel {
        ClothModel {
            positions: vec![Vec3::ZERO, Vec3::new(1.0, 0.0, 0.0)],
            mass_kg: vec![1.0, 1.0],
            damping_per_s: vec![0.0; 2],
            friction: vec![0.0; 2],
            stretch: vec![Distance {
                particles: [0, 1],
                rest_length_m: 1.0,
                compliance_m_per_n: compliance,
            }],
            pins: vec![Pin {
                particle: 0,
                target_m: Vec3::ZERO,
            }],
            ..Default::default()
        }
    }

    #[test]
    fn rejects_bad_time_step_and_settings() {
        let mut s = Solver::new(SolverSettings::default(), pendulum(0.0), None).unwrap();
        assert!(s.step_frame(0.0).is_err());
        assert!(s.step_frame(-0.1).is_err());
        assert!(s.step_frame(Real::NAN).is_err());
        let bad = SolverSettings {
            substeps: 0,
            ..Default::default()
        };
        assert!(matches!(
            Solver::new(bad, pendulum(0.0), None),
            Err(SimError::Setting {
                field: "substeps",
                ..
            })
        ));
        let mut m = pendulum(0.0);
        m.stretch[0].compliance_m_per_n = -1.0;
        let e = Solver::new(SolverSettings::default(), m, None).unwrap_err();
        assert!(e.to_string().contains("compliance"));
        let bad = SolverSettings {
            span_limit_slack: Real::NAN,
            ..Default::default()
        };
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("span_limit_slack"), "{e}");
        let bad = SolverSettings {
            line_passes: MAX_LINE_PASSES + 1,
            ..Default::default()
        };
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("line_passes") && e.contains("9"), "{e}");
        let mut m = pendulum(0.0);
        m.span_limits.push(SpanLimit {
            particles: [0, 7],
            max_length_m: 1.0,
        });
        let e = Solver::new(SolverSettings::default(), m, None).unwrap_err();
        assert!(e.to_string().contains("span limit"), "{e}");
    }

    #[test]
    fn pendulum_keeps_length_and_hangs_with_spring_extension() {
        // A 1 kg mass on a spring of stiffness 1000 N/m hangs 9.81 mm below its rest length.
        let k = 1000.0;
        let mut m = pendulum(1.0 / k);
        m.damping_per_s = vec![2.0; 2];
        let mut s = Solver::new(SolverSettings::default(), m, None).unwrap();
        for _ in 0..24 * 20 {
            s.step_frame(1.0 / 24.0).unwrap();
        }
        let x = s.particles().x[1];
        assert_relative_eq!(x.length(), 1.0 + 9.81 / k, epsilon = 1e-4);
        assert!(x.x.abs() < 0.05, "settled under the pin: {x}");
    }

    #[test]
    fn drag_pulls_a_particle_and_releases_it() {
        // The same 0.1 kg particle held by the drag alone sags m·g·α; cleared, it falls.
        let m = ClothModel {
            positions: vec![Vec3::ZERO],
            mass_kg: vec![0.1],
            damping_per_s: vec![3.0],
            friction: vec![0.0],
            ..Default::default()
        };
        let mut s = Solver::new(SolverSettings::default(), m, None).unwrap();
        let target = Vec3::new(0.2, 0.5, 0.0);
        s.set_drag(Some(Attachment {
            particle: 0,
            target_m: target,
            compliance_m_per_n: 0.05,
        }))
        .unwrap();
        for _ in 0..24 * 10 {
            s.step_frame(1.0 / 24.0).unwrap();
        }
        let x = s.particles().x[0];
        assert_relative_eq!(x.x, 0.2, epsilon = 1e-4);
        assert_relative_eq!(x.y, 0.5 - 0.1 * 9.81 * 0.05, epsilon = 1e-4);
        s.set_drag(None).unwrap();
        s.step_frame(1.0 / 24.0).unwrap();
        assert!(s.particles().x[0].y < x.y - 1e-3, "released particle falls");
        assert!(s
            .set_drag(Some(Attachment {
                particle: 7,
                target_m: target,
                compliance_m_per_n: 0.05,
            }))
            .is_err());
    }

    #[test]
    fn restore_carries_time_and_state_over() {
        let m = ClothModel {
            positions: vec![Vec3::ZERO],
            mass_kg: vec![0.1],
            damping_per_s: vec![0.0],
            friction: vec![0.0],
            ..Default::default()
        };
        let mut a = Solver::new(SolverSettings::default(), m.clone(), None).unwrap();
        for _ in 0..5 {
            a.step_frame(1.0 / 24.0).unwrap();
        }
        let mut b = Solver::new(SolverSettings::default(), m, None).unwrap();
        b.restore(a.time_s(), a.particles()).unwrap();
        assert_eq!(b.time_s(), a.time_s());
        a.step_frame(1.0 / 24.0).unwrap();
        b.step_frame(1.0 / 24.0).unwrap();
        assert_eq!(a.particles().x, b.particles().x);
        assert!(b.restore(0.0, &Particles::default()).is_err());
    }

    #[test]
    fn soft_attachment_hangs_by_its_compliance() {
        // A 0.1 kg particle on a soft attachment of 0.05 m/N sags m·g·α = 4.905 cm.
        let m = ClothModel {
            positions: vec![Vec3::ZERO],
            mass_kg: vec![0.1],
            damping_per_s: vec![3.0],
            friction: vec![0.0],
            attach: vec![Attachment {
                particle: 0,
                target_m: Vec3::ZERO,
                compliance_m_per_n: 0.05,
            }],
            ..Default::default()
        };
        let mut s = Solver::new(SolverSettings::default(), m, None).unwrap();
        for _ in 0..24 * 10 {
            s.step_frame(1.0 / 24.0).unwrap();
        }
        assert_relative_eq!(s.particles().x[0].y, -0.1 * 9.81 * 0.05, epsilon = 1e-5);
    }

    #[test]
    fn coincident_particles_counted_not_nan() {
        let mut m = pendulum(0.0);
        m.positions[1] = Vec3::ZERO;
        m.pins.clear();
        m.stretch[0].rest_length_m = 0.5;
        let settings = SolverSettings {
            gravity_m_per_s2: [0.0; 3],
            ..Default::default()
        };
        let mut s = Solver::new(settings, m, None).unwrap();
        let r = s.step_frame(1.0 / 24.0).unwrap();
        assert!(r.degenerate > 0);
        assert!(s.particles().x.iter().all(|p| p.is_finite()));
    }

    #[test]
    fn free_fall_matches_symplectic_euler() {
        let m = ClothModel {
            positions: vec![Vec3::ZERO],
            mass_kg: vec![1.0],
            damping_per_s: vec![0.0],
            friction: vec![0.0],
            ..Default::default()
        };
        let settings = SolverSettings {
            substeps: 20,
            ..Default::default()
        };
        let mut s = Solver::new(settings, m, None).unwrap();
        s.step_frame(0.5).unwrap();
        // Symplectic Euler: y = −g·h²·n(n+1)/2 with h = 0.025 s, n = 20.
        let h: Real = 0.025;
        assert_relative_eq!(s.particles().x[0].y, -9.81 * h * h * 210.0, epsilon = 1e-4);
        assert_relative_eq!(s.particles().v[0].y, -9.81 * 0.5, epsilon = 1e-4);
    }

    #[test]
    fn blow_up_rolls_back_then_errors() {
        // A nearly limp spring under 100 g makes every substep overstretch: the solver retries, then errors
        // instead of keeping garbage.
        let m = pendulum(1.0e6);
        let settings = SolverSettings {
            failure_stretch: 0.001,
            gravity_m_per_s2: [0.0, -1000.0, 0.0],
            ..Default::default()
        };
        let mut s = Solver::new(settings.clone(), m.clone(), None).unwrap();
        let e = s.step_frame(1.0 / 24.0).unwrap_err();
        assert!(matches!(e, SimError::Diverged { retries: 3, .. }), "{e}");
        assert!(s.particles().x.iter().all(|p| p.is_finite()));
        // With the line solves (the default) an edge torn asks for more substeps.
        assert!(!e.to_string().contains("span limits"), "{e}");
        assert!(e.to_string().contains("raise the substeps"), "{e}");
        // An edge torn by the edge-by-edge sweep with span limits off: the message points at
        // them.
        let settings = SolverSettings {
            stretch_solve: StretchSolve::Sweep,
            ..settings
        };
        let e = Solver::new(settings.clone(), m.clone(), None)
            .unwrap()
            .step_frame(1.0 / 24.0)
            .unwrap_err();
        assert!(e.to_string().contains("turn on span limits"), "{e}");
        let settings = SolverSettings {
            span_limit_slack: 0.0,
            ..settings
        };
        let e = Solver::new(settings, m, None)
            .unwrap()
            .step_frame(1.0 / 24.0)
            .unwrap_err();
        assert!(!e.to_string().contains("span limits"), "{e}");
        assert!(e.to_string().contains("raise the substeps"), "{e}");
    }
}
