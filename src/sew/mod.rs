//! Sewing a pattern around a body: placement, the sewing phase, the weld and the settle.
//!
//! 1. **Placement** ([`crate::garment::place`]): every panel with an arrangement is wrapped
//!    around the body's rest pose, clear of it.
//! 2. **Closing** (gravity off, extra damping): one XPBD seam constraint per vertex pair
//!    ([`crate::solver::ClothModel::seams`], compliance in m/N) whose rest length goes linearly
//!    from the pair's placed distance to zero over [`SewingSpec::closing_s`], then is held at
//!    zero for [`SewingSpec::hold_s`]. The panels keep their flat rest shape (stretch, shear and
//!    bending from the pattern), and the body pushes them out.
//! 3. **Weld**: the two sides of every seam become one vertex, at their midpoint. The welded
//!    garment keeps the panels' flat rest shape, and every seam edge gets a bending constraint
//!    that holds it flat (rest angle 0), so a seam is no hinge.
//! 4. **Settle** (gravity on, self-collision on): the welded garment hangs on the body for
//!    [`SewingSpec::settle_s`].
//!
//! The result is an ordinary garment mesh, written as glTF and baked like any other: the
//! panels' vertices with their UVs (metres in the grain's frame, `u` along the warp), the two
//! copies of a seam vertex at one position so that the bake's weld joins them.
//!
//! May import: every layer below it ([`crate::bake`] and down).

pub mod tshirt;

use std::time::Instant;

use crate::bake::stats::{count_self_intersections, edge_stretch};
use crate::collide::BodyCollider;
use crate::constraints::{Bend, Distance};
use crate::garment::material::{build_cloth_oriented, Fabric, BEND_CALIBRATION};
use crate::garment::pattern::{Pattern, SewingSpec};
use crate::garment::place::{place_panels, BodyFrame, PlaceError};
use crate::math::{triangle_area, Real, Vec2, Vec3};
use crate::mesh::{Mesh, Topology};
use crate::solver::{ClothModel, SimError, Solver, SolverSettings};

/// Why a pattern could not be sewn.
#[derive(Debug, thiserror::Error)]
pub enum SewError {
    /// The panels could not be placed.
    #[error(transparent)]
    Place(#[from] PlaceError),
    /// The pattern has nothing to sew.
    #[error("{0}")]
    Pattern(String),
    /// The sewing settings are unusable.
    #[error("sewing: {field}: {problem}")]
    Setting {
        /// The field of [`SewingSpec`].
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// The solver failed.
    #[error("sewing, {phase} at {time_s:.2} s: {source}")]
    Sim {
        /// Closing or settling.
        phase: &'static str,
        /// Time into the phase (s).
        time_s: f64,
        /// The solver's error.
        source: SimError,
    },
}

/// What the sewing did, measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SewReport {
    /// Panels sewn.
    pub panels: usize,
    /// Vertex pairs sewn.
    pub seam_pairs: usize,
    /// Vertices of the welded garment.
    pub vertices: usize,
    /// Its triangles.
    pub triangles: usize,
    /// Largest distance between the two sides of a seam when the seams were welded (m).
    pub max_seam_gap_m: Real,
    /// The same for each seam of the pattern, in its order (m; 0 for a seam between panels
    /// that were not placed).
    pub seam_gaps_m: Vec<Real>,
    /// Welded vertices inside the body right after the weld.
    pub penetrations_at_weld: usize,
    /// Pairs of intersecting triangles right after the weld.
    pub self_intersections_at_weld: usize,
    /// Vertices inside the body at the end of the settle.
    pub penetrations: usize,
    /// Pairs of intersecting triangles at the end of the settle.
    pub self_intersections: usize,
    /// Largest edge stretch against the pattern at the end of the settle (fraction).
    pub max_stretch: Real,
    /// Frames of closing (with the hold) and of settling.
    pub frames: [u32; 2],
    /// Wall time of the whole sewing (s).
    pub seconds: f64,
}

impl std::fmt::Display for SewReport {
    /// One line: the gap, penetrations and self-intersections at the weld, the same and the
    /// stretch after the settle, and the time.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "largest seam gap at the weld {:.2} mm; at the weld {} body penetrations, {} \
             self-intersections; after the settle {} and {}, largest stretch {:.2} %; {:.1} s",
            self.max_seam_gap_m * 1e3,
            self.penetrations_at_weld,
            self.self_intersections_at_weld,
            self.penetrations,
            self.self_intersections,
            self.max_stretch * 100.0,
            self.seconds
        )
    }
}

/// A sewn garment.
#[derive(Clone, Debug)]
pub struct Sewn {
    /// The garment as a render mesh: the panels' vertices (the two copies of a seam vertex at
    /// one position), UVs in the grain's frame (m) and normals.
    pub mesh: Mesh,
    /// The welded garment at the end of the settle (m).
    pub welded: Mesh,
    /// For each render vertex, its welded vertex.
    pub welded_of: Vec<u32>,
    /// The panels as placed around the body, before sewing (the render mesh's vertices and
    /// triangles, m).
    pub placed: Mesh,
    /// The measurements.
    pub report: SewReport,
}

/// Fewest iterations per substep while the seams close. The solver projects the seams first
/// and again last in every sweep, so they end each sweep closed (the T-shirt's largest gap is
/// 0.36 mm at 1 and 0.26 mm at 4), but the garment welded after one iteration settles to a
/// largest stretch of 3.3 % against 2.8 % after four.
const CLOSING_ITERATIONS: u32 = 4;

/// Fewest iterations per substep while the welded garment settles: the T-shirt in cotton on
/// the mannequin keeps a largest stretch of 10.0 % at 1, 4.6 % at 4, 2.8 % at 8 and 2.0 % at
/// 16 (at the shoulders, where it hangs), so the stretch left is the solver's, not the cloth's.
const SETTLE_ITERATIONS: u32 = 16;

/// Frames per second of the sewing simulation.
const SEW_FPS: Real = 30.0;

/// Sews `pattern` around `body` (its rest mesh, closed, Y up, metres) in `fabric`; `solver`
/// gives the substeps, iterations and thicknesses (its gravity and self-collision are set per
/// phase). `progress` is called with the fraction done (0–1) after every frame.
pub fn sew(
    pattern: &Pattern,
    body: &Mesh,
    fabric: &Fabric,
    solver: &SolverSettings,
    progress: &mut dyn FnMut(f32),
) -> Result<Sewn, SewError> {
    let start = Instant::now();
    let spec = &pattern.file.sewing;
    check_spec(spec)?;
    let frame = BodyFrame::measure(body)?;
    let placed = place_panels(pattern, body, &frame, spec.clearance_m)?;
    let used: Vec<usize> = (0..pattern.panels.len())
        .filter(|&i| !placed.positions[i].is_empty())
        .collect();
    if used.is_empty() {
        return Err(SewError::Pattern(
            "no panel has a place around the body (give the panels `place: Some(Front)`, \
             `Back`, `LeftArm` or `RightArm`)"
                .into(),
        ));
    }
    // The flat panels, one after the other, their triangles turned to face outward.
    let mut offset = vec![u32::MAX; pattern.panels.len()];
    let mut flat = Mesh::new("flat", Vec::new(), Vec::new());
    let mut uvs: Vec<Vec2> = Vec::new();
    let mut x0: Vec<Vec3> = Vec::new();
    let mut tri_panel: Vec<usize> = Vec::new();
    let mut warps: Vec<Vec3> = Vec::new();
    for &i in &used {
        let panel = &pattern.panels[i];
        let base = flat.positions.len() as u32;
        offset[i] = base;
        flat.positions.extend_from_slice(&panel.mesh.positions);
        x0.extend_from_slice(&placed.positions[i]);
        let panel_uvs = panel.mesh.uvs.as_deref().unwrap_or(&[]);
        uvs.extend((0..panel.mesh.positions.len()).map(|k| {
            panel_uvs.get(k).copied().unwrap_or(Vec2::new(
                panel.mesh.positions[k].x,
                panel.mesh.positions[k].y,
            ))
        }));
        let g = pattern.file.panels[i].grain_deg.to_radians();
        let warp = Vec3::new(-g.sin(), g.cos(), 0.0);
        for t in &panel.mesh.indices {
            let t = if placed.reversed[i] {
                [t[0], t[2], t[1]]
            } else {
                *t
            };
            flat.indices.push(t.map(|k| k + base));
            tri_panel.push(i);
            warps.push(warp);
        }
    }
    flat.uvs = Some(uvs);
    let n = flat.positions.len();
    // The seams' vertex pairs, of the placed panels only.
    let mut pairs: Vec<[u32; 2]> = Vec::new();
    let mut seam_of_pair: Vec<usize> = Vec::new();
    for (k, s) in pattern.seams.iter().enumerate() {
        let (pa, pb) = (offset[s.a.0], offset[s.b.0]);
        if pa == u32::MAX || pb == u32::MAX {
            continue;
        }
        pairs.extend(s.pairs.iter().map(|&(a, b)| [a + pa, b + pb]));
        seam_of_pair.extend(std::iter::repeat_n(k, s.pairs.len()));
    }
    if pairs.is_empty() {
        return Err(SewError::Pattern(
            "the placed panels have no seam between them".into(),
        ));
    }
    // The welded vertices: the seam pairs unioned (a corner can be in two seams).
    let mut parent: Vec<u32> = (0..n as u32).collect();
    fn root(parent: &mut [u32], mut i: u32) -> u32 {
        while parent[i as usize] != i {
            parent[i as usize] = parent[parent[i as usize] as usize];
            i = parent[i as usize];
        }
        i
    }
    for &[a, b] in &pairs {
        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
        if ra != rb {
            parent[ra.max(rb) as usize] = ra.min(rb);
        }
    }
    let mut welded_of = vec![u32::MAX; n];
    let mut members: Vec<u32> = Vec::new();
    for i in 0..n as u32 {
        let r = root(&mut parent, i) as usize;
        if welded_of[r] == u32::MAX {
            welded_of[r] = members.len() as u32;
            members.push(0);
        }
        let w = welded_of[r];
        welded_of[i as usize] = w;
        members[w as usize] += 1;
    }
    let topology = Topology::new(&flat);
    let cloth = build_cloth_oriented(&flat, &topology, fabric, Some(&warps));

    // 2. Closing: gravity off, seams shrinking to zero.
    let collider = || {
        BodyCollider::new(body)
            .map_err(|e| SewError::Pattern(format!("body mesh '{}': {e}", body.name)))
    };
    let closing_frames = (spec.closing_s * SEW_FPS).ceil().max(1.0) as u32;
    let hold_frames = (spec.hold_s * SEW_FPS).ceil() as u32;
    let settle_frames = (spec.settle_s * SEW_FPS).ceil() as u32;
    let total = (closing_frames + hold_frames + settle_frames) as f32;
    // The solver starts at `positions` and measures the self-collision's rest distances there:
    // the placed panels (isometric to the flat ones, so the inversion checks hold too).
    let mut model = ClothModel::from_cloth(
        x0.clone(),
        cloth.clone(),
        spec.closing_damping_per_s.max(fabric.damping_per_s),
        fabric.friction,
    );
    model.triangles = flat.indices.clone();
    // The self-collision's rest: the placed panels with the two sides of each seam together.
    let centres = class_means(&x0, &welded_of, &members);
    model.collision_rest = welded_of.iter().map(|&w| centres[w as usize]).collect();
    model.seams = pairs
        .iter()
        .map(|&[a, b]| Distance {
            particles: [a, b],
            rest_length_m: x0[a as usize].distance(x0[b as usize]),
            compliance_m_per_n: spec.seam_compliance_m_per_n,
        })
        .collect();
    let closing_settings = SolverSettings {
        gravity_m_per_s2: [0.0; 3],
        self_collision: true,
        adaptive_iterations: None,
        iterations: solver.iterations.max(CLOSING_ITERATIONS),
        ..solver.clone()
    };
    let sim_err = |phase: &'static str, s: &Solver| {
        let time_s = s.time_s();
        move |source: SimError| SewError::Sim {
            phase,
            time_s,
            source,
        }
    };
    let solver_at_rest = |phase: &'static str, settings: SolverSettings, model: ClothModel| {
        // The solver starts at rest at the model's positions.
        Solver::new(settings, model, Some(collider()?)).map_err(|source| SewError::Sim {
            phase,
            time_s: 0.0,
            source,
        })
    };
    let mut sim = solver_at_rest("closing", closing_settings, model)?;
    let dt = 1.0 / SEW_FPS;
    for f in 0..closing_frames + hold_frames {
        sim.set_seam_opening(1.0 - (f + 1) as Real / closing_frames as Real);
        let err = sim_err("closing", &sim);
        sim.step_frame(dt).map_err(err)?;
        progress((f + 1) as f32 / total);
    }
    let x = sim.particles().x.clone();
    let mut seam_gaps_m = vec![0.0; pattern.seams.len()];
    for (&[a, b], &k) in pairs.iter().zip(&seam_of_pair) {
        seam_gaps_m[k] = Real::max(seam_gaps_m[k], x[a as usize].distance(x[b as usize]));
    }
    let max_seam_gap_m = seam_gaps_m.iter().copied().fold(0.0, Real::max);

    // 3. Weld: each welded vertex at the mean of its copies.
    let wx = class_means(&x, &welded_of, &members);
    let mut welded = Mesh::new(
        "welded",
        wx.clone(),
        flat.indices
            .iter()
            .map(|t| t.map(|i| welded_of[i as usize]))
            .collect(),
    );
    // The creased seams' welded edges: consecutive pairs along each seam.
    let mut creases = std::collections::HashMap::new();
    for s in &pattern.seams {
        let pa = offset[s.a.0];
        if pa == u32::MAX || offset[s.b.0] == u32::MAX || s.crease_rad == 0.0 {
            continue;
        }
        for w in s.pairs.windows(2) {
            let [u, v] = [w[0].0, w[1].0].map(|i| welded_of[(i + pa) as usize]);
            creases.insert((u.min(v), u.max(v)), s.crease_rad);
        }
    }
    let model = welded_model(
        &flat, &cloth, &welded, &welded_of, &tri_panel, fabric, &creases,
    );
    let body_collider = collider()?;
    let inside = |x: &[Vec3]| {
        x.iter()
            .filter(|&&p| body_collider.closest(p).signed_distance_m < 0.0)
            .count()
    };
    let penetrations_at_weld = inside(&wx);
    let self_intersections_at_weld = count_self_intersections(&wx, &welded.indices);

    // 4. Settle: gravity and self-collision on, the welded rest shape the pattern's.
    let settle_settings = SolverSettings {
        self_collision: true,
        adaptive_iterations: None,
        iterations: solver.iterations.max(SETTLE_ITERATIONS),
        ..solver.clone()
    };
    let mut sim = solver_at_rest("settling", settle_settings, model)?;
    // Without a settle, the stretch of the welded shape itself.
    let edges = sim.model().stretch.iter();
    let (mut max_stretch, _) = edge_stretch(&wx, edges.map(|d| (d.particles, d.rest_length_m)));
    for f in 0..settle_frames {
        let err = sim_err("settling", &sim);
        max_stretch = sim.step_frame(dt).map_err(err)?.max_stretch;
        progress((closing_frames + hold_frames + f + 1) as f32 / total);
    }
    let sx = sim.particles().x.clone();
    welded.positions.clone_from(&sx);
    welded.compute_normals();
    let report = SewReport {
        panels: used.len(),
        seam_pairs: pairs.len(),
        vertices: sx.len(),
        triangles: welded.indices.len(),
        max_seam_gap_m,
        seam_gaps_m,
        penetrations_at_weld,
        self_intersections_at_weld,
        penetrations: inside(&sx),
        self_intersections: count_self_intersections(&sx, &welded.indices),
        max_stretch,
        frames: [closing_frames + hold_frames, settle_frames],
        seconds: start.elapsed().as_secs_f64(),
    };
    let mut mesh = Mesh::new(
        "garment",
        welded_of.iter().map(|&w| sx[w as usize]).collect(),
        flat.indices.clone(),
    );
    mesh.uvs = flat.uvs.clone();
    mesh.compute_normals();
    let placed = Mesh::new("placed", x0, flat.indices.clone());
    Ok(Sewn {
        mesh,
        welded,
        welded_of,
        placed,
        report,
    })
}

/// The mean position of each welded vertex's copies in `x`.
fn class_means(x: &[Vec3], welded_of: &[u32], members: &[u32]) -> Vec<Vec3> {
    let mut sum = vec![Vec3::ZERO; members.len()];
    for (p, &w) in x.iter().zip(welded_of) {
        sum[w as usize] += *p;
    }
    sum.iter()
        .zip(members)
        .map(|(&s, &m)| s / m as Real)
        .collect()
}

/// Refuses sewing settings that cannot work, naming the field.
fn check_spec(spec: &SewingSpec) -> Result<(), SewError> {
    let fields: [(&'static str, Real, Real, Real); 6] = [
        ("clearance_m", spec.clearance_m, 0.0, 0.5),
        ("closing_s", spec.closing_s, 0.05, 60.0),
        ("hold_s", spec.hold_s, 0.0, 60.0),
        ("settle_s", spec.settle_s, 0.0, 600.0),
        (
            "seam_compliance_m_per_n",
            spec.seam_compliance_m_per_n,
            0.0,
            1.0,
        ),
        (
            "closing_damping_per_s",
            spec.closing_damping_per_s,
            0.0,
            1000.0,
        ),
    ];
    for (field, v, lo, hi) in fields {
        if !(v.is_finite() && (lo..=hi).contains(&v)) {
            return Err(SewError::Setting {
                field,
                problem: format!("{v}; it must be between {lo} and {hi}"),
            });
        }
    }
    Ok(())
}

/// The sign of the dihedral angle ([`crate::constraints::dihedral_angle_and_gradient`]) of a
/// stencil `[e₀, e₁, o₀, o₁]` folded with its outer faces toward each other, where the
/// triangle with `o₀` runs from `e₀` to `e₁` (`forward`) or back: measured on a unit stencil
/// folded by 0.3 rad.
fn outward_fold_sign(forward: bool) -> Real {
    let y = if forward { 1.0 } else { -1.0 };
    let (sin, cos) = (0.3 as Real).sin_cos();
    let p = [
        Vec3::ZERO,
        Vec3::X,
        Vec3::new(0.5, y, 0.0),
        // The outer side is +z: the other triangle lifted toward it.
        Vec3::new(0.5, -y * cos, sin),
    ];
    crate::constraints::dihedral_angle_and_gradient(p).map_or(1.0, |(t, _)| t.signum())
}

/// The welded garment's model: the panels' own constraints (flat rest shape) carried to the
/// welded vertices, a seam edge's two halves joined into one stretch constraint (their
/// stiffnesses add), and a bending constraint across every seam edge, flat or at the crease
/// `creases` gives the welded edge (rad, positive folding the outer faces toward each other).
fn welded_model(
    flat: &Mesh,
    cloth: &crate::garment::material::ClothConstraints,
    welded: &Mesh,
    welded_of: &[u32],
    tri_panel: &[usize],
    fabric: &Fabric,
    creases: &std::collections::HashMap<(u32, u32), Real>,
) -> ClothModel {
    let nw = welded.positions.len();
    let map = |i: u32| welded_of[i as usize];
    let mut mass_kg = vec![0.0; nw];
    for (i, &m) in cloth.mass_kg.iter().enumerate() {
        mass_kg[map(i as u32) as usize] += m;
    }
    let mut stretch: Vec<Distance> = Vec::with_capacity(cloth.stretch.len());
    let mut seen = std::collections::HashMap::new();
    for d in &cloth.stretch {
        let [a, b] = d.particles.map(map);
        let key = (a.min(b), a.max(b));
        match seen.get(&key) {
            Some(&k) => {
                let e: &mut Distance = &mut stretch[k];
                // Two springs side by side: the mean rest length, the stiffnesses added.
                e.rest_length_m = 0.5 * (e.rest_length_m + d.rest_length_m);
                e.compliance_m_per_n =
                    1.0 / (1.0 / e.compliance_m_per_n + 1.0 / d.compliance_m_per_n);
            }
            None => {
                seen.insert(key, stretch.len());
                stretch.push(Distance {
                    particles: [a, b],
                    ..*d
                });
            }
        }
    }
    let shear = (cloth.shear.iter())
        .map(|s| crate::constraints::Shear {
            particles: s.particles.map(map),
            ..*s
        })
        .collect();
    let mut bend: Vec<Bend> = (cloth.bend.iter())
        .map(|b| Bend {
            particles: b.particles.map(map),
            ..*b
        })
        .collect();
    // Bending across the seams: hinges of the welded mesh whose triangles are of two panels
    // (or two ends of one panel's seam), held flat.
    let topology = Topology::new(welded);
    let rest_area = |t: u32| {
        let [a, b, c] = flat.indices[t as usize].map(|i| flat.positions[i as usize]);
        triangle_area(a, b, c)
    };
    let b_mean = 0.5 * (fabric.bend_warp_n_m + fabric.bend_weft_n_m);
    for bp in &topology.bend_pairs {
        let [t1, t2] = bp.triangles;
        let (f1, f2) = (flat.indices[t1 as usize], flat.indices[t2 as usize]);
        let shared = f1.iter().filter(|v| f2.contains(v)).count();
        if shared == 2 && tri_panel[t1 as usize] == tri_panel[t2 as usize] {
            continue; // an edge inside a panel: the panel's own bending has it
        }
        // The seam edge's rest length: as the first triangle's panel has it.
        let e = f1
            .iter()
            .filter(|&&v| bp.edge.contains(&map(v)))
            .map(|&v| flat.positions[v as usize])
            .collect::<Vec<_>>();
        let e2 = if e.len() == 2 {
            e[0].distance_squared(e[1])
        } else {
            continue;
        };
        let a = rest_area(t1) + rest_area(t2);
        let [e0, e1] = bp.edge;
        let crease = creases
            .get(&(e0.min(e1), e0.max(e1)))
            .copied()
            .unwrap_or(0.0);
        let rest_angle_rad = if crease == 0.0 {
            0.0
        } else {
            // The dihedral's sign for this stencil: the triangle with the first opposite
            // vertex, running along the edge as its winding (the outer side) says.
            let t = [t1, t2]
                .map(|t| flat.indices[t as usize].map(map))
                .into_iter()
                .find(|t| t.contains(&bp.opposite[0]))
                .unwrap_or([e0, e1, bp.opposite[0]]);
            let forward = (0..3).any(|k| t[k] == e0 && t[(k + 1) % 3] == e1);
            crease * outward_fold_sign(forward)
        };
        if e2 > 0.0 && b_mean > 0.0 {
            bend.push(Bend {
                particles: [bp.edge[0], bp.edge[1], bp.opposite[0], bp.opposite[1]],
                rest_angle_rad,
                compliance_per_n_m: BEND_CALIBRATION * a / (3.0 * b_mean * e2),
            });
        }
    }
    // The solver starts at `positions` and measures the self-collision's rest distances there:
    // the welded shape.
    ClothModel {
        positions: welded.positions.clone(),
        mass_kg,
        damping_per_s: vec![fabric.damping_per_s; nw],
        friction: vec![fabric.friction; nw],
        stretch,
        shear,
        membrane: cloth.membrane,
        bend,
        triangles: welded.indices.clone(),
        ..ClothModel::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two one-triangle panels sewn along a 5 cm edge, welded flat, with the seam asked to
    /// keep `crease_deg`: the angle the garment settles at (degrees, between the two
    /// triangles' planes' normals) and whether the second triangle lies on the outer side of
    /// the first.
    fn settle_crease(crease_deg: Real, reversed: bool) -> (Real, bool) {
        let l = 0.05;
        // Panel A: e0, e1, o0 (counter-clockwise from +z, the outer side); panel B: e1', e0',
        // o1, wound the same way once welded.
        let mut flat = Mesh::new(
            "two",
            vec![
                Vec3::ZERO,
                Vec3::new(l, 0.0, 0.0),
                Vec3::new(0.5 * l, l, 0.0),
                Vec3::new(l, 0.0, 0.0),
                Vec3::ZERO,
                Vec3::new(0.5 * l, -l, 0.0),
            ],
            vec![[0, 1, 2], [3, 4, 5]],
        );
        if reversed {
            // The same garment wound the other way: its outer side is −z.
            for t in &mut flat.indices {
                t.swap(1, 2);
            }
        }
        let welded_of = vec![0, 1, 2, 1, 0, 3];
        let mut fabric = crate::preset::builtin_fabric("cotton_shirting").unwrap();
        fabric.damping_per_s = 20.0;
        let cloth = build_cloth_oriented(&flat, &Topology::new(&flat), &fabric, None);
        let welded = Mesh::new(
            "welded",
            vec![
                Vec3::ZERO,
                Vec3::new(l, 0.0, 0.0),
                Vec3::new(0.5 * l, l, 0.0),
                Vec3::new(0.5 * l, -l, 0.0),
            ],
            flat.indices
                .iter()
                .map(|t| t.map(|i| welded_of[i as usize]))
                .collect(),
        );
        let creases = std::collections::HashMap::from([((0, 1), crease_deg.to_radians())]);
        let model = welded_model(
            &flat,
            &cloth,
            &welded,
            &welded_of,
            &[0, 1],
            &fabric,
            &creases,
        );
        assert_eq!(model.bend.len(), 1);
        let settings = SolverSettings {
            gravity_m_per_s2: [0.0; 3],
            iterations: 8,
            ..SolverSettings::default()
        };
        let mut sim = Solver::new(settings, model, None).unwrap();
        // Nudged off the flat state the right way, so a crease toward either side can start.
        sim.particles_mut().x[3].z += 1.0e-4;
        for _ in 0..90 {
            sim.step_frame(1.0 / 30.0).unwrap();
        }
        let x = &sim.particles().x;
        let outer = if reversed { -1.0 } else { 1.0 };
        let n_a = (x[1] - x[0]).cross(x[2] - x[0]).normalize() * outer;
        let n_b = (x[0] - x[1]).cross(x[3] - x[1]).normalize() * outer;
        let angle = n_a.dot(n_b).clamp(-1.0, 1.0).acos().to_degrees();
        (angle, (x[3] - x[0]).dot(n_a) > 0.0)
    }

    #[test]
    fn a_creased_seam_keeps_its_angle_folding_the_outer_faces_together() {
        for reversed in [false, true] {
            let (angle, inward) = settle_crease(90.0, reversed);
            assert!(
                (angle - 90.0).abs() < 5.0 && inward,
                "{angle} {inward} {reversed}"
            );
            let (angle, inward) = settle_crease(-60.0, reversed);
            assert!(
                (angle - 60.0).abs() < 5.0 && !inward,
                "{angle} {inward} {reversed}"
            );
        }
        // No crease: the seam stays flat.
        let (angle, _) = settle_crease(0.0, false);
        assert!(angle < 1.0, "{angle}");
    }
}
