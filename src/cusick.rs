//! The Cusick drape test (BS 5058 / ISO 9073-9): how much a fabric drapes, as one number.
//!
//! A circular specimen of radius `R` = 0.15 m (30 cm across) is held centred between a
//! horizontal circular pedestal of radius `r` = 0.09 m (18 cm across) and an upper disc of the
//! same size, and hangs under gravity around them. The shadow
//! it casts straight down (its projected area) is compared with the two extremes, a specimen
//! that stays flat (a perfectly stiff fabric) and one that hangs straight down at the pedestal's
//! edge (a perfectly limp one):
//!
//! ```text
//! DC = (A_p − A_d) / (A_s − A_d)
//! ```
//!
//! - `A_p` projected area of the draped specimen on the horizontal plane (m²),
//! - `A_d = π r²` pedestal area (m²),
//! - `A_s` specimen area, flat (m²): the rest area of the specimen mesh, `π R²` to 0.03 % at
//!   the default resolution (so that a specimen that does not move gives exactly `DC = 1`),
//! - `DC` the drape coefficient, a fraction (often quoted in %): near 1 for a stiff fabric,
//!   low for a limp one.
//!
//! # Method
//!
//! 1. **Specimen**: [`specimen_disk`], a disk of concentric rings with `6k` vertices on ring
//!    `k` (`1 + 3N(N + 1)` vertices for `N` rings), zipped ring to ring by angle into nearly
//!    equilateral triangles of edge ≈ `R/N`. Each ring is rotated by a different fraction of its
//!    vertex spacing (the golden-ratio sequence), so the mesh has no six-fold symmetry lines
//!    that would favour six folds. UVs are the top view (`u` along +X, `v` along +Z), so the
//!    fabric's warp runs along X ([`build_cloth`] takes the warp from increasing `u`). One ring
//!    lies exactly on the pedestal's edge ([`specimen_disk_with_ring`]), so that the specimen is
//!    supported to the same radius at every resolution.
//! 2. **Pedestal**: [`pedestal_mesh`], a closed cylinder of radius `r`, top face at `y = 0`,
//!    [`PEDESTAL_HEIGHT_M`] tall (well below the longest possible overhang, `R − r` = 6 cm), a
//!    static [`BodyCollider`].
//! 3. **Clamp and start**: the specimen lies flat and centred, the collision thickness above
//!    the top face, at rest; its vertices on and inside the pedestal's radius are pinned there
//!    (the upper disc; [`CusickOptions::clamped`]).
//! 4. **Simulate** with [`Solver`] (body contacts with the fabric's friction, the fabric's
//!    damping) in frames of `1/fps`, until the largest particle speed has stayed below
//!    [`CusickOptions::settle_speed_m_per_s`] for [`CusickOptions::settle_time_s`], or the time
//!    limit [`CusickOptions::max_time_s`] is reached ([`CusickResult::settled`] says which).
//! 5. **Measure**: [`projected_area_m2`] rasterises the union of all triangles, projected onto
//!    the horizontal (XZ) plane, onto a grid of square cells and counts the cells whose centre is
//!    covered. The counting error is confined to the cells the outline crosses: at most half a
//!    cell's area per boundary cell, and in practice far less because the errors cancel along a
//!    smooth outline (a disk of radius 0.15 m on 0.5 mm or 1 mm cells comes out within 0.1 % of
//!    `π R²`; see the tests).
//!
//! A flat, centred start is symmetric: the folds form from the small asymmetries of the mesh
//! and of the fabric's warp/weft anisotropy, not from a deliberate disturbance as when a
//! technician lowers a real specimen. [`CusickOptions::perturbation_m`] adds a small
//! deterministic vertical jitter where wanted.

use std::time::Instant;

use crate::collide::{BodyCollider, ColliderError};
use crate::garment::material::{build_cloth_membrane, Fabric, FabricError, Membrane};
use crate::math::{Real, Vec2, Vec3};
use crate::mesh::{Mesh, Topology};
use crate::solver::{ClothModel, Pin, SimError, Solver, SolverSettings, StretchSolve};

/// Standard specimen radius (m): 30 cm across.
pub const SPECIMEN_RADIUS_M: Real = 0.15;
/// Standard pedestal radius (m): 18 cm across.
pub const PEDESTAL_RADIUS_M: Real = 0.09;
/// Height of the pedestal cylinder below its top face (m).
pub const PEDESTAL_HEIGHT_M: Real = 0.25;
/// Rings of the pedestal's end faces ([`pedestal_mesh`]): 96 segments around, so its polygon
/// lies within 50 µm of the circle, and triangles of about 5.6 mm on the top face.
pub const PEDESTAL_RINGS: u32 = 16;
/// Most specimen vertices [`cusick_test`] accepts.
pub const MAX_SPECIMEN_VERTICES: usize = 200_000;
/// Most cells [`projected_area_m2`] rasterises (a 1 m square at 0.1 mm is 10⁸).
pub const MAX_AREA_CELLS: usize = 100_000_000;

/// How to run the drape test. The defaults are the standard geometry (30 cm specimen on an
/// 18 cm pedestal) at about 2000 specimen vertices, and solver settings checked for
/// convergence (see docs/cusick.md).
#[derive(Clone, Debug, PartialEq)]
pub struct CusickOptions {
    /// Target number of specimen vertices; the mesh has the nearest count of the form
    /// `1 + 3N(N + 1)` (at least 7, at most [`MAX_SPECIMEN_VERTICES`]).
    pub vertices: usize,
    /// Specimen radius (m).
    pub specimen_radius_m: Real,
    /// Pedestal radius (m); smaller than the specimen's.
    pub pedestal_radius_m: Real,
    /// Substeps per frame (1 to 1000).
    pub substeps: u32,
    /// Constraint iterations per substep (1 to 100).
    pub iterations: u32,
    /// Frames per second (1/s): the simulation advances and checks for rest once per frame.
    pub fps: Real,
    /// Simulated time limit (s).
    pub max_time_s: Real,
    /// The specimen counts as at rest when no particle is faster than this (m/s)...
    pub settle_speed_m_per_s: Real,
    /// ...for this long without a break (s).
    pub settle_time_s: Real,
    /// Distance the fabric keeps from the pedestal (m); the specimen starts this far above it.
    pub collision_thickness_m: Real,
    /// Extra reach of the contact search beyond the collision thickness (m); see
    /// [`SolverSettings::contact_margin_m`]. The specimen moves slowly, so a small margin
    /// suffices and keeps the contact queries cheap.
    pub contact_margin_m: Real,
    /// Cell size of the projected-area raster (m).
    pub area_cell_m: Real,
    /// Amplitude of a deterministic pseudo-random vertical jitter of the start shape (m); 0 for
    /// a perfectly flat start.
    pub perturbation_m: Real,
    /// Velocity damping rate (1/s) to use instead of the fabric's, or `None` for the fabric's.
    /// Damping changes how fast the specimen comes to rest, not where.
    pub damping_per_s: Option<Real>,
    /// How the stretch constraints are solved ([`SolverSettings::stretch_solve`]).
    pub stretch_solve: StretchSolve,
    /// How the bending constraints are solved ([`SolverSettings::bend_solve`]).
    pub bend_solve: StretchSolve,
    /// How the shear constraints are solved ([`SolverSettings::shear_solve`]).
    pub shear_solve: StretchSolve,
    /// Clamp the specimen between the pedestal and an upper disc of the same radius, as the
    /// standard's instrument does (true), or let it rest on the pedestal alone (false). The
    /// specimen vertices on and inside the pedestal's radius are then held where they start.
    pub clamped: bool,
    /// Mesh the specimen with scattered vertices ([`specimen_disk_scattered`]) instead of
    /// concentric rings ([`specimen_disk_with_ring`]).
    pub scattered_mesh: bool,
    /// Mesh the specimen as a square grid along the warp and weft, clipped to the disk
    /// ([`specimen_disk_grid`]), instead of rings; takes precedence over `scattered_mesh`.
    pub grid_mesh: bool,
    /// How the fabric's stretch is discretised ([`Membrane`]): edge springs (the default) or
    /// per-triangle yarn strains, which leave the bias as soft as the fabric's shear.
    pub membrane: Membrane,
    /// Seed of the specimen: which scattered mesh ([`specimen_disk_scattered`]) and which
    /// perturbation pattern. Two seeds are two specimens cut from the same fabric.
    pub seed: u32,
}

impl Default for CusickOptions {
    fn default() -> Self {
        Self {
            vertices: 2000,
            specimen_radius_m: SPECIMEN_RADIUS_M,
            pedestal_radius_m: PEDESTAL_RADIUS_M,
            substeps: 80,
            iterations: 1,
            fps: 60.0,
            max_time_s: 10.0,
            settle_speed_m_per_s: 1.0e-3,
            settle_time_s: 0.5,
            collision_thickness_m: 1.0e-3,
            contact_margin_m: 2.0e-3,
            area_cell_m: 5.0e-4,
            perturbation_m: 0.0,
            damping_per_s: Some(2.0),
            stretch_solve: StretchSolve::Sweep,
            bend_solve: StretchSolve::Sweep,
            shear_solve: StretchSolve::Sweep,
            clamped: true,
            scattered_mesh: false,
            grid_mesh: false,
            membrane: Membrane::Edges,
            seed: 1,
        }
    }
}

impl CusickOptions {
    /// The locking-free configuration (docs/cusick.md, "Locking"): a specimen meshed along the
    /// yarns ([`specimen_disk_grid`], about 1000 vertices), the stretch per triangle
    /// ([`Membrane::Triangles`]), stretch and bending solved globally, 40 substeps, 6 s, and a
    /// 0.5 mm perturbation so that seeds give different specimens. The fabric table is
    /// measured in it: a stiff woven's bias is as soft as its shear stiffness says, where the
    /// edge springs of [`CusickOptions::default`] (ring mesh, sweeps) lock it. Not yet
    /// resolution-converged: cotton gives 0.645 at 553 vertices, 0.652 at 1033 and 0.700 at
    /// 1941 (more nodes form on the finer grid).
    pub fn locking_free() -> Self {
        Self {
            vertices: 1000,
            substeps: 40,
            max_time_s: 6.0,
            perturbation_m: 5.0e-4,
            stretch_solve: StretchSolve::Global,
            bend_solve: StretchSolve::Global,
            grid_mesh: true,
            membrane: Membrane::Triangles,
            ..Self::default()
        }
    }
}

/// The outcome of one drape test. Areas in m², times in s.
#[derive(Clone, Debug, PartialEq)]
pub struct CusickResult {
    /// Drape coefficient `(A_p − A_d) / (A_s − A_d)`, a fraction (× 100 for %).
    pub drape_coefficient: Real,
    /// Projected area of the draped specimen, `A_p` (m²).
    pub projected_area_m2: Real,
    /// Flat specimen area, `A_s` (m²): the rest area of the specimen mesh.
    pub specimen_area_m2: Real,
    /// Pedestal area, `A_d = π r²` (m²).
    pub pedestal_area_m2: Real,
    /// Whether the specimen came to rest before the time limit.
    pub settled: bool,
    /// Simulated time (s).
    pub simulated_s: f64,
    /// Frames simulated.
    pub frames: u32,
    /// Largest particle speed in the last frame (m/s).
    pub final_max_speed_m_per_s: Real,
    /// Mean particle speed in the last frame (m/s).
    pub final_mean_speed_m_per_s: Real,
    /// Largest edge stretch at the end, max over edges of `length / rest − 1` (dimensionless).
    pub max_stretch: Real,
    /// Number of nodes (folds) of the draped outline, as textile labs report beside the
    /// coefficient: see [`count_nodes`].
    pub nodes: u32,
    /// Substeps rolled back and retried with a smaller step.
    pub rollbacks: u32,
    /// Specimen vertices.
    pub vertices: usize,
    /// Specimen triangles.
    pub triangles: usize,
    /// Substeps per frame used.
    pub substeps: u32,
    /// Iterations per substep used.
    pub iterations: u32,
    /// Wall-clock time of the simulation and measurement (s).
    pub wall_s: f64,
    /// The draped specimen: its vertex positions at the end (m), in the order of `mesh`.
    pub positions: Vec<Vec3>,
    /// The specimen mesh at rest (flat, m).
    pub mesh: Mesh,
}

/// Why a drape test could not run.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CusickError {
    /// An option is out of range.
    #[error("drape test option `{field}` = {value}: {problem}")]
    Option {
        /// Field of [`CusickOptions`].
        field: &'static str,
        /// The offending value, as text.
        value: String,
        /// What is allowed.
        problem: &'static str,
    },
    /// The fabric cannot be simulated.
    #[error(transparent)]
    Fabric(#[from] FabricError),
    /// The pedestal could not be made into a collider.
    #[error(transparent)]
    Collider(#[from] ColliderError),
    /// The solver refused its settings or diverged.
    #[error("drape test: {0}")]
    Sim(#[from] SimError),
    /// The projected-area raster would be too large.
    #[error("projected area: {cells} cells of {cell_m} m would be needed (at most {MAX_AREA_CELLS}); use a larger cell")]
    RasterTooLarge {
        /// Cells needed.
        cells: usize,
        /// Cell size (m).
        cell_m: Real,
    },
    /// The projected-area input is unusable.
    #[error("projected area: {0}")]
    AreaInput(&'static str),
    /// The specimen could not be meshed.
    #[error("specimen mesh: {0}")]
    Specimen(&'static str),
}

impl CusickOptions {
    /// Checks every field; the error names it.
    pub fn validate(&self) -> Result<(), CusickError> {
        let bad = |field, value: String, problem| {
            Err(CusickError::Option {
                field,
                value,
                problem,
            })
        };
        if !(7..=MAX_SPECIMEN_VERTICES).contains(&self.vertices) {
            return bad(
                "vertices",
                self.vertices.to_string(),
                "must be from 7 to 200000",
            );
        }
        let positive = [
            ("specimen_radius_m", self.specimen_radius_m),
            ("pedestal_radius_m", self.pedestal_radius_m),
            ("fps", self.fps),
            ("max_time_s", self.max_time_s),
            ("settle_speed_m_per_s", self.settle_speed_m_per_s),
            ("area_cell_m", self.area_cell_m),
        ];
        for (field, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return bad(
                    field,
                    v.to_string(),
                    "must be a finite number greater than 0",
                );
            }
        }
        let non_negative = [
            ("settle_time_s", self.settle_time_s),
            ("collision_thickness_m", self.collision_thickness_m),
            ("contact_margin_m", self.contact_margin_m),
            ("perturbation_m", self.perturbation_m),
            ("damping_per_s", self.damping_per_s.unwrap_or(0.0)),
        ];
        for (field, v) in non_negative {
            if !(v.is_finite() && v >= 0.0) {
                return bad(
                    field,
                    v.to_string(),
                    "must be a finite number of at least 0",
                );
            }
        }
        if self.pedestal_radius_m >= self.specimen_radius_m {
            return bad(
                "pedestal_radius_m",
                self.pedestal_radius_m.to_string(),
                "must be smaller than specimen_radius_m",
            );
        }
        if self.specimen_radius_m > 10.0 {
            return bad(
                "specimen_radius_m",
                self.specimen_radius_m.to_string(),
                "must be at most 10 m",
            );
        }
        Ok(())
    }
}

/// The number of rings `N` whose vertex count `1 + 3N(N + 1)` is nearest to `target` (≥ 1).
pub fn rings_for_vertices(target: usize) -> u32 {
    // 3N² + 3N + 1 − t = 0  ⇒  N = (−3 + √(9 + 12(t − 1))) / 6.
    let t = target.max(1) as f64;
    let n = ((-3.0 + (9.0 + 12.0 * (t - 1.0)).sqrt()) / 6.0).round();
    (n as u32).max(1)
}

/// A flat disk of radius `radius_m` (m) in the plane `y = height_m`, centred on `x = z = 0`,
/// with `rings` concentric rings (at least 1): `1 + 3·rings·(rings + 1)` vertices and
/// `6·rings²` triangles, counter-clockwise seen from above (normal +Y).
///
/// Vertex 0 is the centre; ring `k` (radius `radius_m·k/rings`) has `6k` vertices, at angles
/// `2π(j + φ_k)/(6k)` with `φ_k` the fractional part of `k·0.618…`, so that neighbouring rings
/// do not line up. Neighbouring rings are zipped by angle, which gives nearly equilateral
/// triangles with edges of about `radius_m / rings`. UVs are the top view scaled to `[0, 1]²`:
/// `u = (x/R + 1)/2`, `v = (z/R + 1)/2`, so the warp (increasing `u`) runs along +X.
pub fn specimen_disk(radius_m: Real, rings: u32, height_m: Real) -> Mesh {
    specimen_disk_with_ring(radius_m, rings, height_m, None)
}

/// [`specimen_disk`] with one ring at exactly `ring_radius_m` (m, strictly between 0 and
/// `radius_m`), or evenly spaced rings for `None`. The rings inside it are evenly spaced from the
/// centre to it, the rest from it to the rim; the ring counts on each side follow the radii, so
/// the two spacings differ by at most one ring's worth. The Cusick test puts that ring on the
/// pedestal's edge, so that the specimen is supported (and clamped) to the same radius at every
/// resolution: with evenly spaced rings, the last ring on the pedestal lies up to one spacing
/// inside its edge, and a triangle across the edge is not held by it.
pub fn specimen_disk_with_ring(
    radius_m: Real,
    rings: u32,
    height_m: Real,
    ring_radius_m: Option<Real>,
) -> Mesh {
    let rings = rings.max(1);
    let big_r = radius_m as f64;
    // (radius of the fixed ring, its index), when there is room for rings on both sides.
    let fixed = ring_radius_m
        .map(|r| r as f64)
        .filter(|&r| rings >= 2 && r > 0.0 && r < big_r)
        .map(|r| {
            let k = ((rings as f64 * r / big_r).round() as u32).clamp(1, rings - 1);
            (r, k)
        });
    let ring_radius = |k: u32| -> f64 {
        match fixed {
            Some((r, kr)) if k <= kr => r * k as f64 / kr as f64,
            Some((r, kr)) => r + (big_r - r) * (k - kr) as f64 / (rings - kr) as f64,
            None => big_r * k as f64 / rings as f64,
        }
    };
    let golden = 0.618_033_988_749_894_9_f64;
    let mut positions = vec![Vec3::new(0.0, height_m, 0.0)];
    // First vertex index, count and angular offset (as a fraction of the spacing) per ring.
    let mut ring_start = vec![0u32];
    let mut phase = vec![0.0f64];
    for k in 1..=rings {
        ring_start.push(positions.len() as u32);
        let n = 6 * k;
        let phi = (k as f64 * golden).fract();
        phase.push(phi);
        let r = ring_radius(k);
        for j in 0..n {
            let a = std::f64::consts::TAU * (j as f64 + phi) / n as f64;
            positions.push(Vec3::new(
                (r * a.cos()) as Real,
                height_m,
                (r * a.sin()) as Real,
            ));
        }
    }
    let mut indices = Vec::with_capacity(6 * (rings * rings) as usize);
    // Angle of vertex `j` (unwrapped: j may reach n) of ring k.
    let angle = |k: u32, j: u32| -> f64 {
        if k == 0 {
            0.0
        } else {
            std::f64::consts::TAU * (j as f64 + phase[k as usize]) / (6 * k) as f64
        }
    };
    // Centre fan: (centre, next, this) is counter-clockwise seen from +Y.
    for j in 0..6u32 {
        indices.push([0, 1 + (j + 1) % 6, 1 + j]);
    }
    for k in 1..rings {
        let (na, nb) = (6 * k, 6 * (k + 1));
        let (sa, sb) = (ring_start[k as usize], ring_start[k as usize + 1]);
        let ia = |j: u32| sa + j % na;
        let ib = |j: u32| sb + j % nb;
        // Both rings start at their vertex 0, within one spacing of angle 0 (φ < 1).
        let (mut i, mut j) = (0u32, 0u32);
        while i < na || j < nb {
            let advance_a = if i == na {
                false
            } else if j == nb {
                true
            } else {
                angle(k, i + 1) <= angle(k + 1, j + 1)
            };
            if advance_a {
                indices.push([ia(i), ia(i + 1), ib(j)]);
                i += 1;
            } else {
                indices.push([ia(i), ib(j + 1), ib(j)]);
                j += 1;
            }
        }
    }
    flat_disk_mesh("cusick specimen", positions, indices, radius_m)
}

/// A flat specimen mesh facing +Y with the top-view UVs of a disk of radius `radius_m` (m):
/// `u` along +X (the warp), `v` along +Z, the disk spanning [0, 1] in both.
fn flat_disk_mesh(
    name: &str,
    positions: Vec<Vec3>,
    indices: Vec<[u32; 3]>,
    radius_m: Real,
) -> Mesh {
    let uvs = positions
        .iter()
        .map(|p| Vec2::new(0.5 * (p.x / radius_m + 1.0), 0.5 * (p.z / radius_m + 1.0)))
        .collect();
    let mut mesh = Mesh::new(name, positions, indices);
    mesh.uvs = Some(uvs);
    mesh.normals = Some(vec![Vec3::Y; mesh.positions.len()]);
    mesh
}

/// A disk of radius `radius_m` (m) in the plane `y = height_m` with about `vertices` vertices
/// scattered without any rotational structure: one ring of vertices exactly on the circle of
/// radius `ring_radius_m` (the pedestal's edge), one on the rim, and the rest placed by
/// Mitchell's best-candidate sampling (each new point the farthest of 12 pseudo-random
/// candidates from those already placed, deterministic for a `seed`), then triangulated by
/// Delaunay ([`spade`]). The rings of [`specimen_disk`] carry `6k` vertices, a six-fold texture
/// that may favour six folds; this mesh has none. UVs and normals as in [`specimen_disk`].
pub fn specimen_disk_scattered(
    radius_m: Real,
    ring_radius_m: Real,
    vertices: usize,
    height_m: Real,
    seed: u32,
) -> Result<Mesh, CusickError> {
    use spade::{DelaunayTriangulation, Point2, Triangulation};
    let big_r = radius_m as f64;
    if !(big_r.is_finite() && big_r > 0.0 && ring_radius_m.is_finite()) {
        return Err(CusickError::Specimen(
            "the radii must be finite and the disk's greater than 0",
        ));
    }
    let small_r = (ring_radius_m as f64).clamp(0.0, big_r);
    // Edge length of an equilateral mesh of `vertices` vertices on the disk.
    let h = (std::f64::consts::PI * big_r * big_r / (vertices.max(7) as f64 * 0.866)).sqrt();
    let mut points: Vec<[f64; 2]> = Vec::new();
    for r in [small_r, big_r] {
        let n = ((std::f64::consts::TAU * r / h).round() as usize).max(6);
        for j in 0..n {
            let a = std::f64::consts::TAU * j as f64 / n as f64;
            points.push([r * a.cos(), r * a.sin()]);
        }
    }
    // A uniform grid of cells of size h over the disk for the nearest-point queries.
    let cells = ((2.0 * big_r / h).ceil() as usize).max(1);
    let cell_of = |p: [f64; 2]| {
        let f = |v: f64| (((v + big_r) / h) as usize).min(cells - 1);
        (f(p[0]), f(p[1]))
    };
    let mut grid: Vec<Vec<usize>> = vec![Vec::new(); cells * cells];
    for (i, p) in points.iter().enumerate() {
        let (cx, cy) = cell_of(*p);
        grid[cy * cells + cx].push(i);
    }
    let nearest2 = |points: &[[f64; 2]], grid: &[Vec<usize>], p: [f64; 2]| -> f64 {
        let (cx, cy) = cell_of(p);
        let mut best = f64::MAX;
        for ring in 0..cells {
            let (x0, x1) = (cx.saturating_sub(ring), (cx + ring).min(cells - 1));
            let (y0, y1) = (cy.saturating_sub(ring), (cy + ring).min(cells - 1));
            for y in y0..=y1 {
                for x in x0..=x1 {
                    if x != x0 && x != x1 && y != y0 && y != y1 {
                        continue;
                    }
                    for &i in &grid[y * cells + x] {
                        let q = points[i];
                        best = best.min((q[0] - p[0]).powi(2) + (q[1] - p[1]).powi(2));
                    }
                }
            }
            // Anything in a farther ring of cells is at least `ring·h` away.
            if best < (ring as f64 * h).powi(2) {
                break;
            }
        }
        best
    };
    let mut state = (seed.wrapping_mul(0x9E37_79B9) ^ 0x5851_F42D).max(1);
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        state as f64 / u32::MAX as f64
    };
    let target = vertices.max(points.len() + 1);
    while points.len() < target {
        let mut best = ([0.0, 0.0], -1.0);
        for _ in 0..12 {
            // Uniform in the disk, kept half a spacing inside the rim and off the edge ring.
            let (u, v) = (next(), next());
            let r = (big_r - 0.5 * h) * u.sqrt();
            let a = std::f64::consts::TAU * v;
            let p = [r * a.cos(), r * a.sin()];
            if (r - small_r).abs() < 0.5 * h {
                continue;
            }
            let d = nearest2(&points, &grid, p);
            if d > best.1 {
                best = (p, d);
            }
        }
        if best.1 < 0.0 {
            continue;
        }
        let (cx, cy) = cell_of(best.0);
        grid[cy * cells + cx].push(points.len());
        points.push(best.0);
    }
    let triangulation: DelaunayTriangulation<Point2<f64>> =
        DelaunayTriangulation::bulk_load_stable(
            points.iter().map(|p| Point2::new(p[0], p[1])).collect(),
        )
        .map_err(|_| CusickError::Specimen("the scattered points could not be triangulated"))?;
    let positions: Vec<Vec3> = points
        .iter()
        .map(|p| Vec3::new(p[0] as Real, height_m, p[1] as Real))
        .collect();
    let indices: Vec<[u32; 3]> = triangulation
        .inner_faces()
        .map(|f| {
            let [a, b, c] = f.vertices().map(|v| v.fix().index() as u32);
            // Counter-clockwise in (x, z) is clockwise seen from +Y: swap for a +Y normal.
            [a, c, b]
        })
        .collect();
    Ok(flat_disk_mesh(
        "cusick specimen (scattered)",
        positions,
        indices,
        radius_m,
    ))
}

/// A disk of radius `radius_m` (m) in the plane `y = height_m` meshed as a square grid along X
/// (the warp) and Z (the weft) with about `vertices` vertices: the grid squares whose four
/// corners lie in the disk, each split into two right triangles whose legs run along the
/// yarns. The rim is a staircase, so the mesh's area is a little less than `π R²` (the drape
/// coefficient uses the mesh's own area). A woven fabric is a net of yarns that keep their
/// length and shear at the crossings (a Chebyshev net); this mesh's triangles have one leg
/// along each yarn, so per-triangle yarn strains ([`Membrane::Triangles`]) constrain the grid
/// lines and leave the diagonals to the shear. UVs and normals as in [`specimen_disk`].
pub fn specimen_disk_grid(radius_m: Real, vertices: usize, height_m: Real) -> Mesh {
    let r = radius_m as f64;
    let h = (std::f64::consts::PI * r * r / vertices.max(4) as f64).sqrt();
    let n = (r / h).floor() as i64;
    let inside = |i: i64, j: i64| ((i * i + j * j) as f64) * h * h <= r * r * (1.0 + 1e-9);
    let mut index = std::collections::HashMap::new();
    let mut positions = Vec::new();
    for j in -n..=n {
        for i in -n..=n {
            if inside(i, j) {
                index.insert((i, j), positions.len() as u32);
                positions.push(Vec3::new(
                    (i as f64 * h) as Real,
                    height_m,
                    (j as f64 * h) as Real,
                ));
            }
        }
    }
    let mut indices = Vec::new();
    for j in -n..n {
        for i in -n..n {
            let corners = [(i, j), (i + 1, j), (i, j + 1), (i + 1, j + 1)];
            if let [Some(&a), Some(&b), Some(&c), Some(&d)] = corners.map(|k| index.get(&k)) {
                // Faces +Y: (v01 − v00) × (v10 − v00) points up.
                indices.push([a, c, b]);
                indices.push([b, c, d]);
            }
        }
    }
    // Drop vertices no kept square uses (corners of the staircase).
    let mut used = vec![false; positions.len()];
    for t in &indices {
        for &v in t {
            used[v as usize] = true;
        }
    }
    let mut remap = vec![u32::MAX; positions.len()];
    let mut kept = Vec::new();
    for (i, p) in positions.iter().enumerate() {
        if used[i] {
            remap[i] = kept.len() as u32;
            kept.push(*p);
        }
    }
    let indices: Vec<[u32; 3]> = indices
        .iter()
        .map(|t| t.map(|v| remap[v as usize]))
        .collect();
    flat_disk_mesh("cusick specimen (grid)", kept, indices, radius_m)
}

/// A closed cylinder of radius `radius_m` (m) with its top face at `y = 0` and its bottom at
/// `y = −height_m`, counter-clockwise seen from outside (a positive volume): the pedestal of the
/// drape test.
///
/// Both end faces are [`specimen_disk`]s of `rings` rings (at least 1), so the top face, where
/// the specimen rests, has well-shaped triangles (a fan of slivers from the centre would make
/// every point query near the centre test all of them); the side joins the two rims of `6·rings`
/// vertices each.
pub fn pedestal_mesh(radius_m: Real, height_m: Real, rings: u32) -> Mesh {
    let top = specimen_disk(radius_m, rings, 0.0);
    let n_cap = top.positions.len() as u32;
    let rim = 6 * rings.max(1);
    let rim_start = n_cap - rim;
    let mut positions = top.positions.clone();
    positions.extend(top.positions.iter().map(|p| Vec3::new(p.x, -height_m, p.z)));
    let mut indices = top.indices.clone();
    // The bottom face looks down: the top's triangles, reversed.
    indices.extend(
        top.indices
            .iter()
            .map(|t| [t[0] + n_cap, t[2] + n_cap, t[1] + n_cap]),
    );
    let t = |j: u32| rim_start + j % rim;
    let b = |j: u32| n_cap + rim_start + j % rim;
    for j in 0..rim {
        indices.push([t(j), t(j + 1), b(j + 1)]);
        indices.push([t(j), b(j + 1), b(j)]);
    }
    Mesh::new("cusick pedestal", positions, indices)
}

/// Area (m²) of the union of the triangles projected onto the horizontal XZ plane (Y is up),
/// by rasterisation onto square cells of `cell_m` (m): a cell counts when its centre lies in a
/// projected triangle (edges included). Triangles seen edge-on (zero projected area) add
/// nothing. The error is confined to the cells the outline crosses (see the module docs).
///
/// Fails on an empty or non-finite input, a bad cell size, an index out of range or a raster
/// of more than [`MAX_AREA_CELLS`] cells.
pub fn projected_area_m2(
    positions: &[Vec3],
    triangles: &[[u32; 3]],
    cell_m: Real,
) -> Result<Real, CusickError> {
    if !(cell_m.is_finite() && cell_m > 0.0) {
        return Err(CusickError::AreaInput(
            "the cell size must be a finite number of metres greater than 0",
        ));
    }
    if triangles
        .iter()
        .flatten()
        .any(|&i| i as usize >= positions.len())
    {
        return Err(CusickError::AreaInput(
            "a triangle refers to a vertex that does not exist",
        ));
    }
    let used = || triangles.iter().flatten().map(|&i| positions[i as usize]);
    if used().any(|p| !p.is_finite()) {
        return Err(CusickError::AreaInput("a vertex position is not finite"));
    }
    let Some((lo, hi)) = used().fold(None, |acc: Option<(Vec2, Vec2)>, p| {
        let q = Vec2::new(p.x, p.z);
        Some(acc.map_or((q, q), |(lo, hi)| (lo.min(q), hi.max(q))))
    }) else {
        return Ok(0.0);
    };
    let cell = cell_m as f64;
    let (x0, z0) = (lo.x as f64, lo.y as f64);
    let nx = ((hi.x as f64 - x0) / cell).floor() as usize + 1;
    let nz = ((hi.y as f64 - z0) / cell).floor() as usize + 1;
    let cells = nx.saturating_mul(nz);
    if cells > MAX_AREA_CELLS {
        return Err(CusickError::RasterTooLarge { cells, cell_m });
    }
    let mut covered = vec![false; cells];
    for tri in triangles {
        let [a, b, c] = tri.map(|i| {
            let p = positions[i as usize];
            [p.x as f64 - x0, p.z as f64 - z0]
        });
        let area2 = (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]);
        if area2 == 0.0 {
            continue;
        }
        // Orient counter-clockwise so that inside means all edge functions ≥ 0.
        let (b, c) = if area2 > 0.0 { (b, c) } else { (c, b) };
        let edges = [(a, b), (b, c), (c, a)];
        // Edge functions of a point: twice the signed area of (p, edge); a tolerance relative
        // to the edge's length keeps centres on a shared edge inside (no cracks).
        let tol: Vec<f64> = edges
            .iter()
            .map(|(p, q)| 1.0e-9 * cell * ((q[0] - p[0]).hypot(q[1] - p[1])))
            .collect();
        let min = |k: usize| a[k].min(b[k]).min(c[k]);
        let max = |k: usize| a[k].max(b[k]).max(c[k]);
        // Cells whose centre (i + ½)·cell lies in [min, max].
        let first = |v: f64| ((v / cell - 0.5).ceil().max(0.0)) as usize;
        let last =
            |v: f64, n: usize| ((v / cell - 0.5).floor().max(-1.0) + 1.0).min(n as f64) as usize;
        for iz in first(min(1))..last(max(1), nz) {
            let pz = (iz as f64 + 0.5) * cell;
            for ix in first(min(0))..last(max(0), nx) {
                let px = (ix as f64 + 0.5) * cell;
                let inside = edges.iter().zip(&tol).all(|((p, q), t)| {
                    (q[0] - p[0]) * (pz - p[1]) - (q[1] - p[1]) * (px - p[0]) >= -t
                });
                if inside {
                    covered[iz * nx + ix] = true;
                }
            }
        }
    }
    let count = covered.iter().filter(|&&c| c).count();
    Ok((count as f64 * cell * cell) as Real)
}

/// A deterministic pseudo-random number in `[−1, 1]` for vertex `i` of specimen `seed` (a
/// 32-bit integer hash; seed 1 gives the pattern of the versions before seeds).
fn jitter(i: u32, seed: u32) -> Real {
    let i = i.wrapping_add(seed.wrapping_sub(1).wrapping_mul(0x632B_E5AB));
    let mut h = i.wrapping_mul(0x9E37_79B9) ^ 0x85EB_CA6B;
    h ^= h >> 16;
    h = h.wrapping_mul(0x7FEB_352D);
    h ^= h >> 15;
    h = h.wrapping_mul(0x846C_A68B);
    h ^= h >> 16;
    (h as f64 / u32::MAX as f64 * 2.0 - 1.0) as Real
}

/// Runs the drape test on `fabric` (see the module docs): returns the drape coefficient, the
/// areas (m²) and how the simulation went.
///
/// Fails on invalid options or fabric values, or when the simulation diverges.
pub fn cusick_test(fabric: &Fabric, options: &CusickOptions) -> Result<CusickResult, CusickError> {
    let wall = Instant::now();
    options.validate()?;
    fabric.validate()?;
    let rings = rings_for_vertices(options.vertices);
    let mut mesh = if options.grid_mesh {
        specimen_disk_grid(options.specimen_radius_m, options.vertices, 0.0)
    } else if options.scattered_mesh {
        specimen_disk_scattered(
            options.specimen_radius_m,
            options.pedestal_radius_m,
            options.vertices,
            0.0,
            options.seed,
        )?
    } else {
        specimen_disk_with_ring(
            options.specimen_radius_m,
            rings,
            0.0,
            Some(options.pedestal_radius_m),
        )
    };
    let specimen_area_m2 = mesh.area();
    // A mesh too coarse to stand for the disk (the yarn grid at a few dozen vertices covers
    // less than the pedestal) would give a meaningless coefficient.
    let disk_area_m2 = std::f32::consts::PI * options.specimen_radius_m.powi(2);
    if specimen_area_m2.is_nan() || specimen_area_m2 < 0.8 * disk_area_m2 {
        return Err(CusickError::Option {
            field: "vertices",
            value: options.vertices.to_string(),
            problem: "too few for this specimen mesh: it covers less than 80 % of the disk",
        });
    }
    let topology = Topology::new(&mesh);
    let cloth = build_cloth_membrane(&mesh, &topology, fabric, None, options.membrane);
    let n = mesh.positions.len();
    let start_y = options.collision_thickness_m;
    // The clamped vertices: on or inside the pedestal's radius (the ring on its edge included).
    let clamp_radius_m = options.pedestal_radius_m * (1.0 + 1.0e-5);
    let clamped: Vec<bool> = mesh
        .positions
        .iter()
        .map(|p| options.clamped && Vec2::new(p.x, p.z).length() <= clamp_radius_m)
        .collect();
    let start: Vec<Vec3> = (0..n)
        .map(|i| {
            let p = mesh.positions[i];
            let jitter_m = if clamped[i] {
                0.0
            } else {
                options.perturbation_m * (1.0 + jitter(i as u32, options.seed)) * 0.5
            };
            Vec3::new(p.x, start_y + jitter_m, p.z)
        })
        .collect();
    let pins = (0..n)
        .filter(|&i| clamped[i])
        .map(|i| Pin {
            particle: i as u32,
            target_m: start[i],
        })
        .collect();
    let model = ClothModel {
        pins,
        ..ClothModel::from_cloth(
            start.clone(),
            cloth,
            options.damping_per_s.unwrap_or(fabric.damping_per_s),
            fabric.friction,
        )
    };
    let settings = SolverSettings {
        substeps: options.substeps,
        iterations: options.iterations,
        collision_thickness_m: options.collision_thickness_m,
        contact_margin_m: options.contact_margin_m,
        stretch_solve: options.stretch_solve,
        bend_solve: options.bend_solve,
        shear_solve: options.shear_solve,
        ..Default::default()
    };
    let pedestal = BodyCollider::new(&pedestal_mesh(
        options.pedestal_radius_m,
        PEDESTAL_HEIGHT_M,
        PEDESTAL_RINGS,
    ))?;
    let mut solver = Solver::new(settings, model, Some(pedestal))?;
    let dt = 1.0 / options.fps;
    let max_frames = (options.max_time_s * options.fps).ceil().max(1.0) as u32;
    let settle_frames = (options.settle_time_s * options.fps).ceil() as u32;
    let (mut frames, mut calm, mut rollbacks) = (0u32, 0u32, 0u32);
    let mut settled = false;
    let (mut speed, mut mean_speed) = (0.0, 0.0);
    while frames < max_frames {
        let report = solver.step_frame(dt)?;
        frames += 1;
        rollbacks += report.rollbacks;
        let v = &solver.particles().v;
        speed = v.iter().map(|v| v.length()).fold(0.0, Real::max);
        mean_speed = v.iter().map(|v| v.length()).sum::<Real>() / v.len().max(1) as Real;
        if speed < options.settle_speed_m_per_s {
            calm += 1;
            if calm > settle_frames {
                settled = true;
                break;
            }
        } else {
            calm = 0;
        }
    }
    let positions = solver.particles().x.clone();
    let max_stretch = (solver.model().stretch.iter())
        .map(|d| {
            let [a, b] = d.particles.map(|i| positions[i as usize]);
            a.distance(b) / d.rest_length_m - 1.0
        })
        .fold(0.0, Real::max);
    let projected_area_m2 = projected_area_m2(&positions, &mesh.indices, options.area_cell_m)?;
    let pedestal_area_m2 =
        (std::f64::consts::PI * (options.pedestal_radius_m as f64).powi(2)) as Real;
    let drape_coefficient =
        (projected_area_m2 - pedestal_area_m2) / (specimen_area_m2 - pedestal_area_m2);
    mesh.name = format!("cusick specimen ({})", fabric.name);
    Ok(CusickResult {
        drape_coefficient,
        projected_area_m2,
        specimen_area_m2,
        pedestal_area_m2,
        settled,
        simulated_s: solver.time_s(),
        frames,
        final_max_speed_m_per_s: speed,
        final_mean_speed_m_per_s: mean_speed,
        max_stretch,
        nodes: count_nodes(&positions, &mesh.indices, NODE_PROMINENCE_M),
        rollbacks,
        vertices: n,
        triangles: mesh.indices.len(),
        substeps: options.substeps,
        iterations: options.iterations,
        wall_s: wall.elapsed().as_secs_f64(),
        positions,
        mesh,
    })
}

/// Most specimens [`cusick_series`] runs.
pub const MAX_SPECIMENS: u32 = 64;

/// The drape test of several specimens of one fabric, as the standard averages them.
#[derive(Clone, Debug, PartialEq)]
pub struct CusickSeries {
    /// Each specimen's result, in seed order (`options.seed`, `options.seed + 1`, …).
    pub specimens: Vec<CusickResult>,
    /// Mean drape coefficient over the specimens (fraction).
    pub mean: Real,
    /// Sample standard deviation of the coefficients (fraction; 0 for one specimen).
    pub sample_sd: Real,
    /// Standard error of the mean, `sample_sd / √n` (fraction).
    pub standard_error: Real,
}

/// Runs the drape test on `specimens` specimens of `fabric` (seeds `options.seed`,
/// `options.seed + 1`, …; each its own scattered mesh and perturbation pattern), in parallel,
/// and returns them with their mean coefficient.
///
/// One specimen's coefficient depends on the fold pattern it falls into (its node count and
/// where the folds sit), a bifurcation: on the real instrument and in the simulation, two
/// specimens of one fabric differ by several per cent (docs/cusick.md). The mean of several is
/// the figure to compare. The specimens must differ: with more than one, the options must ask
/// for the scattered mesh or a perturbation (ring meshes started flat are all alike).
pub fn cusick_series(
    fabric: &Fabric,
    options: &CusickOptions,
    specimens: u32,
) -> Result<CusickSeries, CusickError> {
    use rayon::prelude::*;
    if !(1..=MAX_SPECIMENS).contains(&specimens) {
        return Err(CusickError::Option {
            field: "specimens",
            value: specimens.to_string(),
            problem: "must be from 1 to 64",
        });
    }
    if specimens > 1 && !options.scattered_mesh && options.perturbation_m == 0.0 {
        return Err(CusickError::Option {
            field: "specimens",
            value: specimens.to_string(),
            problem: "more than one specimen needs the scattered mesh or a perturbation \
                      (flat ring meshes are all alike)",
        });
    }
    options.validate()?;
    let results = (0..specimens)
        .into_par_iter()
        .map(|k| {
            let o = CusickOptions {
                seed: options.seed.wrapping_add(k),
                ..options.clone()
            };
            cusick_test(fabric, &o)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let dc: Vec<f64> = results.iter().map(|r| r.drape_coefficient as f64).collect();
    let n = dc.len() as f64;
    let mean = dc.iter().sum::<f64>() / n;
    let sample_sd = if dc.len() > 1 {
        (dc.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
    } else {
        0.0
    };
    Ok(CusickSeries {
        specimens: results,
        mean: mean as Real,
        sample_sd: sample_sd as Real,
        standard_error: (sample_sd / n.sqrt()) as Real,
    })
}

/// Smallest rise (m) of the outline's radius between a node and the troughs on both sides.
pub const NODE_PROMINENCE_M: Real = 3.0e-3;

/// Counts the nodes (folds) of a draped specimen seen from above.
///
/// The outline's radius `r(φ)` is the largest horizontal distance from the Y axis of the
/// `positions` and of points every eighth of the way along each edge of `triangles` (so that
/// a coarse mesh's straight edges do not read as dents between its vertices), in each of 360
/// one-degree sectors (sectors no point falls in take their neighbours' value), smoothed over
/// ±5° (a fold is wider; a coarse mesh's facets are not). A node is a local maximum of `r(φ)`
/// that stands at least `prominence_m` above the lowest point between it and the next higher
/// maximum on each side (topographic prominence, circular); a flat outline has no nodes.
pub fn count_nodes(positions: &[Vec3], triangles: &[[u32; 3]], prominence_m: Real) -> u32 {
    const BINS: usize = 360;
    let mut r = [Real::NAN; BINS];
    let along_edges = triangles.iter().flat_map(|t| {
        (0..3).flat_map(move |k| {
            let (a, b) = (t[k] as usize, t[(k + 1) % 3] as usize);
            (1..8).filter_map(move |j| {
                let (pa, pb) = (positions.get(a)?, positions.get(b)?);
                Some(pa.lerp(*pb, j as Real / 8.0))
            })
        })
    });
    for p in positions.iter().copied().chain(along_edges) {
        let rad = p.x.hypot(p.z);
        if !rad.is_finite() || rad == 0.0 {
            continue;
        }
        let phi = p.z.atan2(p.x).rem_euclid(std::f32::consts::TAU);
        let b = ((phi / std::f32::consts::TAU * BINS as Real) as usize).min(BINS - 1);
        if r[b].is_nan() || rad > r[b] {
            r[b] = rad;
        }
    }
    if r.iter().all(|v| v.is_nan()) {
        return 0;
    }
    // Fill empty sectors from the nearest filled one before them.
    let first = r.iter().position(|v| !v.is_nan()).unwrap_or(0);
    let mut last = r[first];
    for k in 0..BINS {
        let i = (first + k) % BINS;
        if r[i].is_nan() {
            r[i] = last;
        } else {
            last = r[i];
        }
    }
    let smooth: Vec<Real> = (0..BINS)
        .map(|i| (0..11).map(|k| r[(i + BINS + k - 5) % BINS]).sum::<Real>() / 11.0)
        .collect();
    let at = |i: isize| smooth[i.rem_euclid(BINS as isize) as usize];
    let mut nodes = 0;
    for i in 0..BINS as isize {
        let h = at(i);
        // A strict maximum on plateaus: higher than the left neighbour, not lower than the right.
        if !(h > at(i - 1) && h >= at(i + 1)) {
            continue;
        }
        // Walk each way until a higher point (or all the way round); the lowest point passed is
        // the key col on that side.
        let col = |dir: isize| {
            let mut low = h;
            for k in 1..BINS as isize {
                let v = at(i + dir * k);
                if v > h {
                    break;
                }
                low = low.min(v);
            }
            low
        };
        if h - col(1).max(col(-1)) >= prominence_m {
            nodes += 1;
        }
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An outline of radius `0.12 + a·cos(n·φ)` (m), sampled as points.
    fn lobed(n: u32, a: Real) -> Vec<Vec3> {
        (0..2000)
            .map(|k| {
                let phi = k as Real / 2000.0 * std::f32::consts::TAU;
                let r = 0.12 + a * (n as Real * phi).cos();
                Vec3::new(r * phi.cos(), -0.02, r * phi.sin())
            })
            .collect()
    }

    #[test]
    fn nodes_of_lobed_outlines() {
        for n in [4, 5, 6, 7, 9] {
            assert_eq!(count_nodes(&lobed(n, 0.01), &[], NODE_PROMINENCE_M), n);
        }
        // Ripples below the prominence are no nodes; an empty or flat outline has none.
        assert_eq!(count_nodes(&lobed(6, 0.001), &[], NODE_PROMINENCE_M), 0);
        assert_eq!(count_nodes(&lobed(6, 0.0), &[], NODE_PROMINENCE_M), 0);
        assert_eq!(count_nodes(&[], &[], NODE_PROMINENCE_M), 0);
        // A coarse flat specimen (78 vertices on its rim, 4.6° apart) has no nodes: its edges
        // fill the gaps between the rim vertices.
        let disk = specimen_disk(0.15, 13, 0.0);
        assert_eq!(
            count_nodes(&disk.positions, &disk.indices, NODE_PROMINENCE_M),
            0
        );
        // Small ripples on top of five big lobes do not add nodes.
        let mut p = lobed(5, 0.01);
        for (k, q) in p.iter_mut().enumerate() {
            let phi = k as Real / 2000.0 * std::f32::consts::TAU;
            *q *= 1.0 + 0.005 * (40.0 * phi).sin();
        }
        assert_eq!(count_nodes(&p, &[], NODE_PROMINENCE_M), 5);
    }

    #[test]
    fn ring_counts() {
        assert_eq!(rings_for_vertices(7), 1);
        assert_eq!(rings_for_vertices(2000), 25);
        for k in 1..30u32 {
            let m = specimen_disk(0.15, k, 0.0);
            assert_eq!(m.positions.len(), 1 + 3 * (k * (k + 1)) as usize);
            assert_eq!(m.indices.len(), 6 * (k * k) as usize);
        }
    }

    #[test]
    fn disk_faces_up_and_is_a_clean_disk() {
        let m = specimen_disk(0.15, 12, 0.0);
        m.validate().unwrap();
        for t in &m.indices {
            let [a, b, c] = t.map(|i| m.positions[i as usize]);
            let n = (b - a).cross(c - a);
            assert!(n.y > 0.0, "triangle {t:?} faces down");
        }
        let topo = Topology::new(&m);
        assert!(topo.non_manifold_edges.is_empty());
        // The boundary is exactly the outer ring.
        assert_eq!(topo.boundary_edges.len(), 6 * 12);
    }

    #[test]
    fn ringed_disk_has_a_ring_on_the_pedestal_edge_at_every_resolution() {
        for rings in [13u32, 18, 25, 36, 51] {
            let even = specimen_disk(0.15, rings, 0.0);
            let m = specimen_disk_with_ring(0.15, rings, 0.0, Some(0.09));
            m.validate().unwrap();
            assert_eq!(m.positions.len(), even.positions.len());
            assert_eq!(m.indices, even.indices, "same connectivity");
            let radius = |p: &Vec3| Vec2::new(p.x, p.z).length();
            // A whole ring of 6k vertices lies on the edge, the rim stays at the specimen's.
            let on_edge = m
                .positions
                .iter()
                .filter(|p| (radius(p) - 0.09).abs() < 1e-6)
                .count();
            assert!(on_edge >= 6 && on_edge % 6 == 0, "{rings} rings: {on_edge}");
            let rim = m.positions.iter().map(radius).fold(0.0, Real::max);
            assert!((rim - 0.15).abs() < 1e-6);
            // Triangles keep their shape: the two spacings are within one ring of each other.
            let q = crate::garment::proxy::ProxyQuality::measure(&m);
            let q_even = crate::garment::proxy::ProxyQuality::measure(&even);
            assert_eq!(q.degenerate_triangles, 0);
            assert!(
                q.min_angle_deg > 0.9 * q_even.min_angle_deg,
                "{rings} rings: min angle {} against {}",
                q.min_angle_deg,
                q_even.min_angle_deg
            );
            for t in &m.indices {
                let [a, b, c] = t.map(|i| m.positions[i as usize]);
                assert!((b - a).cross(c - a).y > 0.0, "triangle {t:?} faces down");
            }
        }
        // No room on one side: evenly spaced rings.
        assert_eq!(
            specimen_disk_with_ring(0.15, 1, 0.0, Some(0.09)).positions,
            specimen_disk(0.15, 1, 0.0).positions
        );
    }

    #[test]
    fn a_series_runs_distinct_specimens_and_averages_them() {
        let fabric = crate::preset::builtin_fabric("cotton_shirting").unwrap();
        let options = CusickOptions {
            vertices: 120,
            substeps: 10,
            max_time_s: 0.25,
            scattered_mesh: true,
            seed: 7,
            ..CusickOptions::default()
        };
        let series = cusick_series(&fabric, &options, 3).unwrap();
        assert_eq!(series.specimens.len(), 3);
        // Seed order, each specimen the same as a single test with its seed.
        let second = cusick_test(
            &fabric,
            &CusickOptions {
                seed: 8,
                ..options.clone()
            },
        )
        .unwrap();
        assert_eq!(series.specimens[1].positions, second.positions);
        assert_ne!(series.specimens[0].mesh, series.specimens[1].mesh);
        let dc: Vec<Real> = series
            .specimens
            .iter()
            .map(|r| r.drape_coefficient)
            .collect();
        let mean = dc.iter().sum::<Real>() / 3.0;
        assert!((series.mean - mean).abs() < 1e-6);
        let var = dc.iter().map(|d| (d - mean).powi(2)).sum::<Real>() / 2.0;
        assert!((series.sample_sd - var.sqrt()).abs() < 1e-6);
        assert!((series.standard_error - series.sample_sd / 3.0_f32.sqrt()).abs() < 1e-6);
        // Flat ring meshes are all alike: refused, naming the field.
        let err = cusick_series(
            &fabric,
            &CusickOptions {
                scattered_mesh: false,
                ..options.clone()
            },
            2,
        )
        .unwrap_err();
        assert!(err.to_string().contains("specimens"), "{err}");
        assert!(cusick_series(&fabric, &options, 0).is_err());
        assert!(cusick_series(&fabric, &options, MAX_SPECIMENS + 1).is_err());
    }

    #[test]
    fn too_coarse_a_specimen_is_an_error() {
        let fabric = crate::preset::builtin_fabric("cotton_shirting").unwrap();
        let coarse = CusickOptions {
            vertices: 12,
            max_time_s: 0.1,
            ..CusickOptions::locking_free()
        };
        let err = cusick_test(&fabric, &coarse).unwrap_err();
        assert!(err.to_string().contains("vertices"), "{err}");
        // The ring mesh's hexagon at 7 vertices still covers 83 % of the disk.
        let hexagon = CusickOptions {
            vertices: 7,
            max_time_s: 0.1,
            ..CusickOptions::default()
        };
        assert!(cusick_test(&fabric, &hexagon).is_ok());
    }

    #[test]
    fn grid_disk_is_a_clean_disk_along_the_yarns() {
        let m = specimen_disk_grid(0.15, 1000, 0.0);
        m.validate().unwrap();
        assert!(
            (900..1100).contains(&m.positions.len()),
            "{}",
            m.positions.len()
        );
        let topo = Topology::new(&m);
        assert!(topo.non_manifold_edges.is_empty());
        // Within the disk, a staircase a spacing inside the rim at most, facing +Y, and every
        // triangle has one leg along X (the warp) and one along Z (the weft).
        let h = (std::f32::consts::PI * 0.15 * 0.15 / 1000.0).sqrt();
        assert!(m.area() < std::f32::consts::PI * 0.15 * 0.15);
        assert!(m.area() > std::f32::consts::PI * (0.15 - 1.5 * h).powi(2));
        for t in &m.indices {
            let [a, b, c] = t.map(|i| m.positions[i as usize]);
            assert!((b - a).cross(c - a).y > 0.0, "triangle {t:?} faces down");
            let legs = [b - a, c - b, a - c];
            assert!(legs.iter().any(|e| e.z.abs() < 1e-6 && e.x.abs() > 0.5 * h));
            assert!(legs.iter().any(|e| e.x.abs() < 1e-6 && e.z.abs() > 0.5 * h));
        }
        assert!(m
            .positions
            .iter()
            .all(|p| Vec2::new(p.x, p.z).length() <= 0.15 + 1e-6));
    }

    #[test]
    fn scattered_disk_is_a_clean_disk_with_the_edge_ring() {
        for target in [547usize, 1951] {
            let m = specimen_disk_scattered(0.15, 0.09, target, 0.0, 1).unwrap();
            m.validate().unwrap();
            assert_eq!(m.positions.len(), target);
            assert_eq!(
                m,
                specimen_disk_scattered(0.15, 0.09, target, 0.0, 1).unwrap(),
                "deterministic"
            );
            for t in &m.indices {
                let [a, b, c] = t.map(|i| m.positions[i as usize]);
                assert!((b - a).cross(c - a).y > 0.0, "triangle {t:?} faces down");
            }
            let topo = Topology::new(&m);
            assert!(topo.non_manifold_edges.is_empty());
            let radius = |p: &Vec3| Vec2::new(p.x, p.z).length();
            // The boundary is the rim; a ring of vertices lies on the pedestal's edge.
            for &e in &topo.boundary_edges {
                for i in topo.edges[e as usize] {
                    assert!((radius(&m.positions[i as usize]) - 0.15).abs() < 1e-6);
                }
            }
            let on_edge = (m.positions.iter())
                .filter(|p| (radius(p) - 0.09).abs() < 1e-6)
                .count();
            assert!(on_edge >= 20, "{on_edge}");
            let area = m.area() as f64;
            let disk = std::f64::consts::PI * 0.15 * 0.15;
            assert!((area / disk - 1.0).abs() < 0.005, "{area}");
            let q = crate::garment::proxy::ProxyQuality::measure(&m);
            assert_eq!(q.degenerate_triangles, 0);
            assert!(q.min_angle_deg > 10.0, "min angle {}", q.min_angle_deg);
        }
    }

    #[test]
    fn pedestal_is_closed() {
        let m = pedestal_mesh(0.09, 0.25, 8);
        assert!(m.signed_volume() > 0.0);
        assert!(Topology::new(&m).is_closed());
        assert!(BodyCollider::new(&m).unwrap().is_closed());
    }

    #[test]
    fn bad_options_are_errors() {
        let f = Fabric::default();
        let o = CusickOptions {
            vertices: 0,
            ..Default::default()
        };
        assert!(matches!(
            cusick_test(&f, &o),
            Err(CusickError::Option {
                field: "vertices",
                ..
            })
        ));
        let o = CusickOptions {
            pedestal_radius_m: 0.2,
            ..Default::default()
        };
        assert!(cusick_test(&f, &o).is_err());
    }
}
