//! Fabrics in real units, and the constraint builder that turns them into masses and compliances.
//!
//! # From fabric properties to XPBD compliances
//!
//! A fabric is a thin sheet with areal density `ρ` (kg/m²), in-plane stiffness per unit width
//! `k_s = E·t` (N/m), shear stiffness `k_γ = G·t` (N/m) and bending stiffness `B` (N·m). Its
//! continuum energy is integrated over the mesh, so every discrete stiffness carries the area it
//! stands for, and the response does not change with the mesh resolution:
//!
//! ```text
//! m_i   = ρ · Σ_{t ∋ i} A_t / 3                    particle mass: a third of each adjacent triangle
//! α_e   = L₀² / (k_s · Σ_{t ∋ e} A_t)              edge (m/N)  — Van Gelder 1998: a triangular
//!                                                   spring lattice then has Young's modulus k_s
//! α_t   = 1 / (k_γ · A_t)                          shear per triangle, (N·m)⁻¹, C = γ
//! α_b   = (A₁ + A₂) / (3 · B · |e|²)               bend per interior edge, (N·m)⁻¹, C = θ
//! ```
//!
//! - `A_t` rest triangle area (m²), `L₀` rest edge length (m), `|e|` rest length of the hinge
//!   edge (m), `A₁, A₂` the areas of the hinge's two triangles (m²).
//! - The bending energy `½·B·κ²` per unit area, with the hinge angle `θ` spread over a strip of
//!   width `(A₁ + A₂)/(3|e|)`, gives `E = ½ · 3B|e|²/(A₁+A₂) · θ²` (Grinspun et al., *Discrete
//!   Shells*, SCA 2003), hence `α_b`.
//!
//! The warp and weft stiffnesses are averaged for the edge springs in this version; direction
//! dependent stretch from the UVs arrives with the proxy and fabric work (see docs/materials.md).

use serde::{Deserialize, Serialize};

use crate::constraints::{
    shear_rest_inverse, Bend, Distance, EdgeGraph, Shear, SpanLimit, Strain, Tether,
};
use crate::math::{triangle_area, Real, Vec3, DEGENERATE_AREA_M2};
use crate::mesh::{Mesh, Topology};
use parry3d::query::PointQueryWithLocation;

/// A fabric's physical properties, in SI units.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Fabric {
    /// Display name.
    pub name: String,
    /// Where the numbers come from.
    pub source: String,
    /// Areal density (kg/m²).
    pub density_kg_per_m2: Real,
    /// Tensile stiffness per unit width along the warp, `E·t` (N/m).
    pub stretch_warp_n_per_m: Real,
    /// Tensile stiffness per unit width along the weft, `E·t` (N/m).
    pub stretch_weft_n_per_m: Real,
    /// In-plane shear stiffness per unit width, `G·t` (N/m per radian of shear).
    pub shear_n_per_m: Real,
    /// Bending stiffness along the warp (N·m).
    pub bend_warp_n_m: Real,
    /// Bending stiffness along the weft (N·m).
    pub bend_weft_n_m: Real,
    /// Fabric thickness (m).
    pub thickness_m: Real,
    /// Coulomb friction coefficient against the body (dimensionless).
    pub friction: Real,
    /// Velocity damping rate (1/s): velocities decay as `exp(−damping·t)` without forces.
    pub damping_per_s: Real,
}

impl Default for Fabric {
    /// Cotton shirting: see `presets/fabrics/cotton_shirting.ron` for the sources.
    fn default() -> Self {
        Self {
            name: "cotton shirting".into(),
            source: "built-in default; see presets/fabrics/cotton_shirting.ron".into(),
            density_kg_per_m2: 0.1036,
            stretch_warp_n_per_m: 2000.0,
            stretch_weft_n_per_m: 2000.0,
            shear_n_per_m: 19.0,
            bend_warp_n_m: 1.4e-5,
            bend_weft_n_m: 8.8e-6,
            thickness_m: 0.000253,
            friction: 0.4,
            damping_per_s: 0.1,
        }
    }
}

/// The allowed range of one fabric field, as validation checks it and as `docs/presets.md`
/// lists it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldRange {
    /// Field name, as written in the preset file.
    pub field: &'static str,
    /// Lower bound, in the field's unit.
    pub min: Real,
    /// Whether `min` itself is allowed (`[min, …`) or not (`(min, …`).
    pub min_inclusive: bool,
    /// Upper bound (inclusive), in the field's unit.
    pub max: Real,
    /// The range as text with its unit, e.g. `(0, 10] kg/m²`.
    pub allowed: &'static str,
}

impl FieldRange {
    /// Whether `value` is finite and inside the range.
    pub fn contains(&self, value: Real) -> bool {
        let above = if self.min_inclusive {
            value >= self.min
        } else {
            value > self.min
        };
        value.is_finite() && above && value <= self.max
    }
}

/// The allowed range of every numeric fabric field, in the order of [`Fabric`]'s fields.
///
/// The bounds are generous physical limits, not typical values: they catch wrong units (a
/// Young's modulus in Pa given as `E·t` in N/m, a thickness in mm given in m) and typing
/// mistakes. Real fabrics span about 0.015–0.9 kg/m², 10–10⁴ N/m and 10⁻⁷–10⁻³ N·m.
pub const FABRIC_RANGES: [FieldRange; 9] = [
    FieldRange {
        field: "density_kg_per_m2",
        min: 0.0,
        min_inclusive: false,
        max: 10.0,
        allowed: "(0, 10] kg/m²",
    },
    FieldRange {
        field: "stretch_warp_n_per_m",
        min: 0.0,
        min_inclusive: false,
        max: 1.0e7,
        allowed: "(0, 1e7] N/m",
    },
    FieldRange {
        field: "stretch_weft_n_per_m",
        min: 0.0,
        min_inclusive: false,
        max: 1.0e7,
        allowed: "(0, 1e7] N/m",
    },
    FieldRange {
        field: "shear_n_per_m",
        min: 0.0,
        min_inclusive: false,
        max: 1.0e7,
        allowed: "(0, 1e7] N/m",
    },
    FieldRange {
        field: "bend_warp_n_m",
        min: 0.0,
        min_inclusive: false,
        max: 1.0,
        allowed: "(0, 1] N·m",
    },
    FieldRange {
        field: "bend_weft_n_m",
        min: 0.0,
        min_inclusive: true,
        max: 1.0,
        allowed: "[0, 1] N·m",
    },
    FieldRange {
        field: "thickness_m",
        min: 0.0,
        min_inclusive: true,
        max: 0.05,
        allowed: "[0, 0.05] m",
    },
    FieldRange {
        field: "friction",
        min: 0.0,
        min_inclusive: true,
        max: 2.0,
        allowed: "[0, 2] (dimensionless)",
    },
    FieldRange {
        field: "damping_per_s",
        min: 0.0,
        min_inclusive: true,
        max: 100.0,
        allowed: "[0, 100] 1/s",
    },
];

/// A fabric value that cannot be simulated.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("fabric '{fabric}': {field} = {value}: must be in {allowed}")]
pub struct FabricError {
    /// Fabric name.
    pub fabric: String,
    /// Field name, as written in the preset file.
    pub field: &'static str,
    /// The offending value.
    pub value: Real,
    /// The allowed range with its unit, e.g. `(0, 10] kg/m²` (see [`FABRIC_RANGES`]).
    pub allowed: &'static str,
}

impl Fabric {
    /// Checks that every value is finite and in its range ([`FABRIC_RANGES`]); the error names
    /// the field, the value and the allowed range.
    pub fn validate(&self) -> Result<(), FabricError> {
        for (range, value) in FABRIC_RANGES.iter().zip(self.numeric_fields()) {
            if !range.contains(value) {
                return Err(FabricError {
                    fabric: self.name.clone(),
                    field: range.field,
                    value,
                    allowed: range.allowed,
                });
            }
        }
        Ok(())
    }

    /// The numeric fields, in the order of [`FABRIC_RANGES`].
    pub fn numeric_fields(&self) -> [Real; 9] {
        [
            self.density_kg_per_m2,
            self.stretch_warp_n_per_m,
            self.stretch_weft_n_per_m,
            self.shear_n_per_m,
            self.bend_warp_n_m,
            self.bend_weft_n_m,
            self.thickness_m,
            self.friction,
            self.damping_per_s,
        ]
    }

    /// Mean in-plane stretch stiffness (N/m).
    pub fn stretch_n_per_m(&self) -> Real {
        0.5 * (self.stretch_warp_n_per_m + self.stretch_weft_n_per_m)
    }

    /// Mean bending stiffness (N·m).
    pub fn bend_n_m(&self) -> Real {
        0.5 * (self.bend_warp_n_m + self.bend_weft_n_m)
    }
}

/// The built-in fabric presets: `(name, RON text)`, compiled in from `presets/fabrics/`.
pub const BUILTIN_FABRICS: &[(&str, &str)] = &[
    (
        "cotton_shirting",
        include_str!("../../presets/fabrics/cotton_shirting.ron"),
    ),
    ("denim", include_str!("../../presets/fabrics/denim.ron")),
    (
        "jersey_knit",
        include_str!("../../presets/fabrics/jersey_knit.ron"),
    ),
    (
        "wool_suiting",
        include_str!("../../presets/fabrics/wool_suiting.ron"),
    ),
    ("leather", include_str!("../../presets/fabrics/leather.ron")),
    (
        "polyester",
        include_str!("../../presets/fabrics/polyester.ron"),
    ),
    ("chiffon", include_str!("../../presets/fabrics/chiffon.ron")),
    (
        "silk_charmeuse",
        include_str!("../../presets/fabrics/silk_charmeuse.ron"),
    ),
];

/// The name of the default fabric preset.
pub const DEFAULT_FABRIC: &str = "cotton_shirting";

/// Calibration of the dihedral bending constraints against a continuous plate.
///
/// A hinge of rest length `|e|` between triangles of areas `A₁`, `A₂` gets the stiffness
/// `3·B·|e|²/(A₁ + A₂)` (Grinspun et al. 2003) divided by this constant. Without it the
/// discrete energy of a mesh bent into a cylinder of curvature `κ` is not `½·B·κ²·A` but
/// `½·B·A·3·Σ_e (A_e/A)·cos⁴ψ_e·κ²` (each hinge's angle is `κ·cos²ψ_e·(h₁ + h₂)/2`, with `ψ_e`
/// the angle between the curvature and the edge's normal in the plane, `h` the heights of
/// the opposite vertices): 27/8 on a mesh of equilateral triangles, whatever the direction
/// of the curvature (the three edge directions give `Σ cos⁴ψ = 9/8`); it is 3 on a
/// right-triangle grid. Drape's proxies and specimens are near-equilateral, so their
/// bending now matches the fabric's `B` (within 3 %, see the test); a right-triangle grid
/// bends 8/9 as stiffly. Without the constant every garment was 3.4 times too stiff in
/// bending (the drape coefficients in docs/cusick.md were measured before and after).
pub const BEND_CALIBRATION: Real = 27.0 / 8.0;

/// The structural constraints and particle masses of one cloth mesh.
#[derive(Clone, Debug, Default)]
pub struct ClothConstraints {
    /// Particle masses (kg), one per mesh vertex.
    pub mass_kg: Vec<Real>,
    /// Edge stretch constraints.
    pub stretch: Vec<Distance>,
    /// Triangle shear constraints.
    pub shear: Vec<Shear>,
    /// Dihedral bending constraints.
    pub bend: Vec<Bend>,
    /// Triangles skipped because they have zero rest area.
    pub degenerate_triangles: usize,
    /// How the stretch is discretised: whether `stretch` holds constraints or only the edges
    /// to measure ([`Membrane`]). Copy it into [`crate::solver::ClothModel::membrane`].
    pub membrane: Membrane,
}

/// How the fabric's in-plane stretch is discretised.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Membrane {
    /// Edge springs (Van Gelder's lattice): one distance constraint per edge with the fabric's
    /// directional stiffness. Cheap, but a triangulated spring lattice is an isotropic
    /// membrane with shear modulus about `3k/8`: a stiff woven's bias comes out as stiff as its
    /// yarns (cotton: about 750 N/m of shear against its measured 19 N/m; docs/cusick.md).
    #[default]
    Edges,
    /// Strain per triangle (Strain Based Dynamics, Müller et al. 2014): the warp strain
    /// `|F·û| − 1` with compliance `1/(k_warp·A)`, the weft strain `|F·v̂| − 1` with
    /// `1/(k_weft·A)`, and the shear, an orthotropic membrane (Poisson ratio 0) that is stiff
    /// along the yarns and as soft on the bias as the fabric's shear stiffness says. The edges
    /// are still listed in [`ClothConstraints::stretch`], to measure the stretch and for the
    /// solver's checks, but not projected.
    Triangles,
}

/// Builds masses and constraints for `mesh` (rest shape = its positions) from `fabric`.
///
/// `mesh` must be valid (see [`Mesh::validate`]) and welded; `topology` is its adjacency.
/// The warp direction is taken from the UVs where present (the direction of increasing `u`),
/// otherwise world X projected into each triangle.
pub fn build_cloth(mesh: &Mesh, topology: &Topology, fabric: &Fabric) -> ClothConstraints {
    build_cloth_oriented(mesh, topology, fabric, None)
}

/// [`build_cloth`] with the warp direction of each triangle of `mesh` given (`warps`, one 3D
/// vector per triangle, projected into the triangle's plane here) instead of read from the
/// mesh's own UVs: a proxy or a welded mesh takes it from the render mesh
/// ([`warp_directions_from`]), whose UVs are intact across seams.
pub fn build_cloth_oriented(
    mesh: &Mesh,
    topology: &Topology,
    fabric: &Fabric,
    warps: Option<&[Vec3]>,
) -> ClothConstraints {
    build_cloth_membrane(mesh, topology, fabric, warps, Membrane::Edges)
}

/// [`build_cloth_oriented`] with the stretch discretised as `membrane` says.
pub fn build_cloth_membrane(
    mesh: &Mesh,
    topology: &Topology,
    fabric: &Fabric,
    warps: Option<&[Vec3]>,
    membrane: Membrane,
) -> ClothConstraints {
    let warps = warps.filter(|w| w.len() == mesh.indices.len());
    let warp_of =
        |t: usize, tri: [u32; 3]| warps.map_or_else(|| warp_direction(mesh, tri), |w| w[t]);
    let x = &mesh.positions;
    let areas: Vec<Real> = mesh
        .indices
        .iter()
        .map(|t| triangle_area(x[t[0] as usize], x[t[1] as usize], x[t[2] as usize]))
        .collect();
    let mut mass_kg = vec![0.0; x.len()];
    for (t, tri) in mesh.indices.iter().enumerate() {
        for &i in tri {
            mass_kg[i as usize] += fabric.density_kg_per_m2 * areas[t] / 3.0;
        }
    }
    // Unit warp direction in each triangle's plane (None for a degenerate triangle).
    let warps: Vec<Option<Vec3>> = mesh
        .indices
        .iter()
        .enumerate()
        .map(|(t, &tri)| in_plane_warp(mesh, tri, warp_of(t, tri)))
        .collect();
    let stretch = topology
        .edges
        .iter()
        .zip(&topology.edge_triangles)
        .filter_map(|(&[a, b], tris)| {
            let (xa, xb) = (x[a as usize], x[b as usize]);
            let rest = xa.distance(xb);
            let dir = (xb - xa).try_normalize()?;
            // Σ_t A_t · k_s(θ_t): each adjacent triangle contributes its area times the fabric's
            // stiffness along this edge's direction in that triangle's warp/weft frame.
            let mut area = 0.0;
            let mut area_k = 0.0;
            for &t in tris {
                let a_t = areas[t as usize];
                let cos2 = warps[t as usize].map_or(0.5, |w| dir.dot(w).powi(2));
                area += a_t;
                area_k += a_t
                    * directional(
                        fabric.stretch_warp_n_per_m,
                        fabric.stretch_weft_n_per_m,
                        cos2,
                    );
            }
            (rest > 0.0 && area > 0.0 && area_k > 0.0).then(|| Distance {
                particles: [a, b],
                rest_length_m: rest,
                compliance_m_per_n: rest * rest / area_k,
            })
        })
        .collect();
    let mut degenerate_triangles = 0;
    let mut shear = Vec::with_capacity(mesh.indices.len());
    for (t, tri) in mesh.indices.iter().enumerate() {
        let rest = tri.map(|i| x[i as usize]);
        let warp = warp_of(t, *tri);
        match shear_rest_inverse(rest, warp) {
            Some(rest_inverse) if areas[t] >= DEGENERATE_AREA_M2 => {
                shear.push(Shear {
                    particles: *tri,
                    rest_inverse,
                    compliance_per_n_m: 1.0 / (fabric.shear_n_per_m * areas[t]),
                    strain: Strain::Shear,
                });
                if membrane == Membrane::Triangles {
                    for (strain, k) in [
                        (Strain::Warp, fabric.stretch_warp_n_per_m),
                        (Strain::Weft, fabric.stretch_weft_n_per_m),
                    ] {
                        shear.push(Shear {
                            particles: *tri,
                            rest_inverse,
                            compliance_per_n_m: 1.0 / (k * areas[t]),
                            strain,
                        });
                    }
                }
            }
            _ => degenerate_triangles += 1,
        }
    }
    let bend = topology
        .bend_pairs
        .iter()
        .filter_map(|bp| {
            let p = [bp.edge[0], bp.edge[1], bp.opposite[0], bp.opposite[1]];
            let pos = p.map(|i| x[i as usize]);
            let (theta, _) = crate::constraints::dihedral_angle_and_gradient(pos)?;
            let e2 = pos[0].distance_squared(pos[1]);
            let a = triangle_area(pos[0], pos[1], pos[2]) + triangle_area(pos[0], pos[1], pos[3]);
            // The hinge bends the fabric across its edge: the curvature runs perpendicular to
            // the edge, so an edge along the weft bends the warp yarns (cos² of the curvature
            // direction to the warp = 1 − cos² of the edge to the warp).
            let dir = (pos[1] - pos[0]).try_normalize()?;
            let cos2_edge = bp
                .triangles
                .iter()
                .map(|&t| warps[t as usize].map_or(0.5, |w| dir.dot(w).powi(2)))
                .sum::<Real>()
                / 2.0;
            let b = directional(fabric.bend_warp_n_m, fabric.bend_weft_n_m, 1.0 - cos2_edge);
            (b > 0.0).then(|| Bend {
                particles: p,
                rest_angle_rad: theta,
                compliance_per_n_m: BEND_CALIBRATION * a / (3.0 * b * e2),
            })
        })
        .collect();
    ClothConstraints {
        mass_kg,
        stretch,
        shear,
        bend,
        degenerate_triangles,
        membrane,
    }
}

/// Long-range tethers from the pinned vertices: each free vertex connected (through the mesh)
/// to a pinned one gets a tether to its geodesically nearest pinned vertex, with the geodesic
/// rest distance (shortest path along the edges, Dijkstra) times `1 + slack` as its limit.
pub fn build_tethers(mesh: &Mesh, topology: &Topology, pinned: &[u32], slack: Real) -> Vec<Tether> {
    let x = &mesh.positions;
    let mut graph = EdgeGraph::new(
        x.len(),
        topology
            .edges
            .iter()
            .map(|&[a, b]| ([a, b], x[a as usize].distance(x[b as usize]))),
    );
    let mut out = Vec::new();
    graph.nearest_anchor_tethers(pinned, slack, &mut out);
    out
}

/// Long-range stretch limits over the whole cloth ([`SpanLimit`]), in levels of doubling
/// spacing from 1.5 mean edge lengths ([`EdgeGraph::span_limits`]), each `(1 + slack)` times an
/// upper bound of the geodesic rest distance of its pair: the straight rest distance where the
/// surface between them is flat (widened by the spread of the rest normals where it curves),
/// else the shortest path along the edges and, across each interior edge whose two triangles
/// unfold into a convex quadrilateral, the straight line between the opposite vertices in the
/// unfolded pair. Only pairs whose bound is within [`SPAN_LIMIT_TIGHTNESS`] of their straight
/// rest distance are kept.
pub fn build_span_limits(mesh: &Mesh, topology: &Topology, slack: Real) -> Vec<SpanLimit> {
    let x = &mesh.positions;
    if topology.edges.is_empty() {
        return Vec::new();
    }
    let unfolded = topology.bend_pairs.iter().filter_map(|b| {
        let [a, c] = b.edge.map(|i| x[i as usize]);
        let [p, q] = b.opposite.map(|i| x[i as usize]);
        let e = c - a;
        let len = e.length();
        if len <= 0.0 || !len.is_finite() {
            return None;
        }
        let u = e / len;
        // Coordinates along the edge and heights off it, on either side once unfolded.
        let (sp, sq) = ((p - a).dot(u), (q - a).dot(u));
        let (hp, hq) = ((p - a - u * sp).length(), (q - a - u * sq).length());
        if hp <= 0.0 || hq <= 0.0 || hp.is_nan() || hq.is_nan() {
            return None;
        }
        // Where the straight line crosses the edge's line: inside the edge when convex.
        let cross = sp + (sq - sp) * hp / (hp + hq);
        (cross > 0.0 && cross < len).then(|| {
            let d = ((sq - sp).powi(2) + (hp + hq).powi(2)).sqrt();
            (b.opposite, d)
        })
    });
    let edges = topology
        .edges
        .iter()
        .map(|&[a, b]| ([a, b], x[a as usize].distance(x[b as usize])));
    let mean_edge_m = edges.clone().map(|(_, l)| l).sum::<Real>() / topology.edges.len() as Real;
    let all: Vec<([u32; 2], Real)> = edges.chain(unfolded).collect();
    let mut graph = EdgeGraph::new(x.len(), all.iter().copied());
    let normals = mesh.vertex_normals_for(x);
    let mut out = Vec::new();
    graph.span_limits(
        x,
        &normals,
        mean_edge_m,
        slack,
        SPAN_LIMIT_TIGHTNESS,
        &mut out,
    );
    out
}

/// How much longer than the straight rest distance a span limit's bound of the geodesic rest
/// distance may be (a fraction): pairs over it are left out of [`build_span_limits`].
pub const SPAN_LIMIT_TIGHTNESS: Real = 0.02;

/// An orthotropic stiffness along a direction whose squared cosine to the warp is `cos2`:
/// `warp·cos²θ + weft·sin²θ` (the usual interpolation of a woven fabric's directional
/// stiffness between its two yarn directions).
fn directional(warp: Real, weft: Real, cos2: Real) -> Real {
    let c = cos2.clamp(0.0, 1.0);
    warp * c + weft * (1.0 - c)
}

/// The warp direction of triangle `tri` projected into its plane and normalised; `None` for a
/// degenerate triangle. A warp `w` normal to the triangle (world X on a triangle facing X,
/// without UVs) falls back to the triangle's first edge.
fn in_plane_warp(mesh: &Mesh, tri: [u32; 3], w: Vec3) -> Option<Vec3> {
    let [a, b, c] = tri.map(|i| mesh.positions[i as usize]);
    let n = (b - a).cross(c - a).try_normalize()?;
    (w - n * n.dot(w))
        .try_normalize()
        .or_else(|| (b - a).try_normalize())
}

/// The warp direction (3D, unit) for each triangle of `sim`, a proxy or welded copy of
/// `render`, taken from the render triangle nearest each sim triangle's centroid, where the
/// render mesh's UVs give it. `None` when `render` has no UVs or no usable triangles.
///
/// Welding merges the copies of a seam vertex and keeps one copy's UVs, so UV gradients on the
/// welded or simplified mesh are wrong next to seams; the render mesh's own triangles are not.
pub fn warp_directions_from(render: &Mesh, sim: &Mesh) -> Option<Vec<Vec3>> {
    render.uvs.as_ref()?;
    let query = parry3d::shape::TriMesh::with_flags(
        render.positions.clone(),
        render.indices.clone(),
        parry3d::shape::TriMeshFlags::empty(),
    )
    .ok()?;
    Some(
        sim.indices
            .iter()
            .map(|tri| {
                let c = tri
                    .iter()
                    .map(|&i| sim.positions[i as usize])
                    .fold(Vec3::ZERO, |s, p| s + p)
                    / 3.0;
                let (_, (t, _)) = query.project_local_point_and_get_location(c, false);
                warp_direction(render, query.indices()[t as usize])
            })
            .collect(),
    )
}

/// The 3D direction of increasing `u` over triangle `tri`, or world X without UVs.
fn warp_direction(mesh: &Mesh, tri: [u32; 3]) -> Vec3 {
    let Some(uvs) = &mesh.uvs else {
        return Vec3::X;
    };
    let [a, b, c] = tri.map(|i| mesh.positions[i as usize]);
    let [ta, tb, tc] = tri.map(|i| uvs[i as usize]);
    let (e1, e2) = (b - a, c - a);
    let (d1, d2) = (tb - ta, tc - ta);
    let det = d1.x * d2.y - d2.x * d1.y;
    if det.abs() < 1.0e-12 {
        return Vec3::X;
    }
    // Tangent (∂x/∂u) from the standard two-edge solve.
    ((e1 * d2.y - e2 * d1.y) / det)
        .try_normalize()
        .unwrap_or(Vec3::X)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::preset::{builtin_fabric, parse_fabric, PresetError};
    use approx::assert_relative_eq;

    fn grid(n: u32, size: Real) -> Mesh {
        crate::mesh::shapes::grid_cloth(size, n, 0.0)
    }

    #[test]
    fn total_mass_is_density_times_area() {
        let m = grid(11, 2.0);
        let c = build_cloth(&m, &Topology::new(&m), &Fabric::default());
        let total: Real = c.mass_kg.iter().sum();
        assert_relative_eq!(total, 4.0 * 0.1036, max_relative = 1e-5);
    }

    #[test]
    fn warp_and_weft_set_the_stiffness_along_each_direction() {
        // A grid in the XZ plane with u along X: X edges are warp, Z edges weft, diagonals
        // halfway. Bending hinges along X bend the weft yarns, hinges along Z the warp.
        let m = grid(9, 1.0);
        let fabric = Fabric {
            stretch_warp_n_per_m: 1000.0,
            stretch_weft_n_per_m: 100.0,
            bend_warp_n_m: 4.0e-5,
            bend_weft_n_m: 1.0e-5,
            ..Fabric::default()
        };
        let topo = Topology::new(&m);
        let c = build_cloth(&m, &topo, &fabric);
        let x = &m.positions;
        let triangle_area_m2 = 0.5 * (1.0 / 8.0 as Real).powi(2);
        assert_eq!(c.stretch.len(), topo.edges.len());
        let (mut warp, mut weft, mut diagonal) = (0, 0, 0);
        for (d, tris) in c.stretch.iter().zip(&topo.edge_triangles) {
            let e = x[d.particles[1] as usize] - x[d.particles[0] as usize];
            // k_e·L₀²/ΣA_t is the fabric's stiffness along the edge (N/m).
            let area = tris.len() as Real * triangle_area_m2;
            let k = d.rest_length_m * d.rest_length_m / d.compliance_m_per_n / area;
            let expected = if e.z.abs() < 1e-9 {
                warp += 1;
                1000.0
            } else if e.x.abs() < 1e-9 {
                weft += 1;
                100.0
            } else {
                diagonal += 1;
                550.0
            };
            assert_relative_eq!(k, expected, max_relative = 1e-4);
        }
        assert!(warp > 0 && weft > 0 && diagonal > 0);
        for b in &c.bend {
            let e = x[b.particles[1] as usize] - x[b.particles[0] as usize];
            let e2 = e.length_squared();
            let area = 2.0 * triangle_area_m2;
            let stiffness = BEND_CALIBRATION * area / (3.0 * e2 * b.compliance_per_n_m);
            let expected = if e.z.abs() < 1e-9 {
                1.0e-5 // hinge along the warp: curvature along the weft
            } else if e.x.abs() < 1e-9 {
                4.0e-5
            } else {
                2.5e-5
            };
            assert_relative_eq!(stiffness, expected, max_relative = 1e-4);
        }
    }

    /// Bends `mesh` (in the XZ plane) into a cylinder of radius 1 m whose axis makes the angle
    /// `axis_rad` with Z and returns the discrete bending energy over `½·B·κ²·A`.
    fn cylinder_energy_ratio(mut m: Mesh, axis_rad: Real) -> Real {
        let b = 1.0e-5;
        let fabric = Fabric {
            bend_warp_n_m: b,
            bend_weft_n_m: b,
            ..Fabric::default()
        };
        let topo = Topology::new(&m);
        let c = build_cloth(&m, &topo, &fabric);
        let area: Real = m.indices.iter().map(|t| triangle_area_of(&m, t)).sum();
        let (s, co) = axis_rad.sin_cos();
        for p in &mut m.positions {
            // u runs across the axis, v along it.
            let (u, v) = (p.x * co - p.z * s, p.x * s + p.z * co);
            let (u, y) = (u.sin(), 1.0 - u.cos());
            *p = Vec3::new(u * co + v * s, y, -u * s + v * co);
        }
        let mut e = 0.0;
        for h in &c.bend {
            let pos = h.particles.map(|i| m.positions[i as usize]);
            let (theta, _) = crate::constraints::dihedral_angle_and_gradient(pos).unwrap();
            e += 0.5 * (theta - h.rest_angle_rad).powi(2) / h.compliance_per_n_m;
        }
        e / (0.5 * b * area)
    }

    fn triangle_area_of(m: &Mesh, t: &[u32; 3]) -> Real {
        triangle_area(
            m.positions[t[0] as usize],
            m.positions[t[1] as usize],
            m.positions[t[2] as usize],
        )
    }

    #[test]
    fn bending_energy_of_a_cylinder_matches_the_plate() {
        // Near-equilateral disk (the Cusick specimen mesh) in any direction: ½·B·κ²·A.
        for rings in [10, 20, 40] {
            let d = crate::cusick::specimen_disk(0.25, rings, 0.0);
            for axis in [0.0, 0.4, 1.1] {
                let r = cylinder_energy_ratio(d.clone(), axis);
                assert_relative_eq!(r, 1.0, max_relative = 0.03);
            }
        }
        // A right-triangle grid: 3/(27/8) = 8/9 of the plate, converging with resolution.
        let r: Vec<Real> = [17, 33, 65]
            .iter()
            .map(|&n| cylinder_energy_ratio(crate::mesh::shapes::grid_cloth(0.5, n, 0.0), 0.0))
            .collect();
        assert!(r[0] < r[1] && r[1] < r[2], "{r:?}");
        assert_relative_eq!(r[2], 8.0 / 9.0, max_relative = 0.02);
    }

    #[test]
    fn edge_stiffness_sum_is_resolution_independent() {
        // Σ_e k_e·L₀² = k_s · Σ_e Σ_{t∋e} A_t = 3·k_s·A: the same for every resolution.
        for n in [5, 17, 33] {
            let m = grid(n, 1.0);
            let c = build_cloth(&m, &Topology::new(&m), &Fabric::default());
            let sum: Real = c
                .stretch
                .iter()
                .map(|d| d.rest_length_m * d.rest_length_m / d.compliance_m_per_n)
                .sum();
            assert_relative_eq!(sum, 3.0 * 2000.0, max_relative = 1e-3);
        }
    }

    /// The eight fabrics of issue 4 are built in, each with its source, and they differ the
    /// way the sources say: chiffon lightest and limpest, leather heaviest and stiffest.
    #[test]
    fn builtin_library_has_the_eight_sourced_fabrics() {
        let names = [
            "cotton_shirting",
            "denim",
            "silk_charmeuse",
            "jersey_knit",
            "wool_suiting",
            "leather",
            "polyester",
            "chiffon",
        ];
        let fabrics: Vec<Fabric> = names.iter().map(|n| builtin_fabric(n).unwrap()).collect();
        for (n, f) in names.iter().zip(&fabrics) {
            assert!(!f.source.trim().is_empty(), "{n} has no source");
            let text = BUILTIN_FABRICS.iter().find(|(k, _)| k == n).unwrap().1;
            assert!(
                text.contains("// "),
                "{n}: values need their sources in comments"
            );
        }
        let by = |n: &str| &fabrics[names.iter().position(|k| *k == n).unwrap()];
        for f in &fabrics {
            assert!(by("chiffon").density_kg_per_m2 <= f.density_kg_per_m2);
            assert!(by("leather").density_kg_per_m2 >= f.density_kg_per_m2);
            assert!(by("chiffon").bend_warp_n_m <= f.bend_warp_n_m);
            assert!(by("leather").bend_warp_n_m >= f.bend_warp_n_m);
        }
    }

    #[test]
    fn builtin_presets_parse_and_default_matches() {
        for (name, _) in BUILTIN_FABRICS {
            builtin_fabric(name).unwrap();
        }
        let cotton = builtin_fabric(DEFAULT_FABRIC).unwrap();
        let d = Fabric::default();
        assert_eq!(cotton.density_kg_per_m2, d.density_kg_per_m2);
        assert_eq!(cotton.stretch_warp_n_per_m, d.stretch_warp_n_per_m);
        assert_eq!(cotton.shear_n_per_m, d.shear_n_per_m);
        assert_eq!(cotton.bend_warp_n_m, d.bend_warp_n_m);
        assert_eq!(cotton.friction, d.friction);
        assert!(builtin_fabric("velvet")
            .unwrap_err()
            .to_string()
            .contains("denim"));
        let e = parse_fabric("(density_kg_per_m2: \"heavy\")", "x").unwrap_err();
        assert!(matches!(e, PresetError::Parse { .. }));
    }

    #[test]
    fn tethers_use_geodesic_distance() {
        let m = grid(5, 1.0);
        let topo = Topology::new(&m);
        // Pin the first row (the z = −0.5 m edge): vertex (i, j) is j·5 + i.
        let tethers = build_tethers(&m, &topo, &[0, 1, 2, 3, 4], 0.0);
        assert_eq!(tethers.len(), 20);
        let far = tethers.iter().find(|t| t.particle == 24).unwrap();
        assert_relative_eq!(far.max_length_m, 1.0, max_relative = 1e-5);
        assert_eq!(far.anchor, 4);
    }

    /// Rest grid `n × n` of 1 m, wrapped round a cylinder of radius `radius_m` about the Z
    /// axis (its vertices on the cylinder, so its X edges are chords); returns it and its
    /// unfolding, a flat grid whose X spacing is the chord, which has the same edges and
    /// geodesic distances as the faceted wrapped mesh.
    fn wrapped_grid(n: u32, radius_m: Real) -> (Mesh, Mesh) {
        let flat = grid(n, 1.0);
        let mut wrapped = flat.clone();
        for p in &mut wrapped.positions {
            let theta = p.x / radius_m;
            *p = Vec3::new(radius_m * theta.sin(), radius_m * theta.cos(), p.z);
        }
        let spacing = 1.0 / (n - 1) as Real;
        let chord = 2.0 * radius_m * (spacing / (2.0 * radius_m)).sin();
        let mut unfolded = flat;
        for p in &mut unfolded.positions {
            p.x *= chord / spacing;
        }
        (wrapped, unfolded)
    }

    #[test]
    fn span_limits_are_safe_and_tight_and_reach_across_the_cloth() {
        for radius_m in [Real::INFINITY, 0.25] {
            let (mesh, flat) = if radius_m.is_finite() {
                wrapped_grid(33, radius_m)
            } else {
                (grid(33, 1.0), grid(33, 1.0))
            };
            let limits = build_span_limits(&mesh, &Topology::new(&mesh), 0.0);
            let n = mesh.positions.len();
            assert!(
                limits.len() > n / 2,
                "{} limits for {n} vertices",
                limits.len()
            );
            let (mut longest, mut widest): (Real, Real) = (0.0, 0.0);
            for l in &limits {
                let [a, b] = l.particles.map(|i| i as usize);
                // The geodesic distance is the unfolded twin's straight distance: no limit may
                // be shorter, or it would hold the cloth short of its rest shape.
                let geodesic = flat.positions[a].distance(flat.positions[b]);
                assert!(
                    l.max_length_m >= geodesic * (1.0 - 1e-5),
                    "limit {} under geodesic {geodesic} (radius {radius_m})",
                    l.max_length_m
                );
                let straight = mesh.positions[a].distance(mesh.positions[b]);
                assert!(l.max_length_m <= straight * (1.0 + SPAN_LIMIT_TIGHTNESS) + 1e-6);
                longest = longest.max(geodesic);
                widest = widest.max((flat.positions[a].x - flat.positions[b].x).abs());
            }
            // Long limits run across the flat cloth and along the cylinder's axis...
            assert!(
                longest > 0.4,
                "longest span {longest} m (radius {radius_m})"
            );
            if radius_m.is_finite() {
                // ...but round a 0.25 m cylinder a chord is within 2 % of its arc only up to
                // about 0.17 m of arc (2·R·sin(s/2R) = 0.98·s).
                assert!(widest < 0.2, "widest span {widest} m round the cylinder");
            }
        }
    }

    #[test]
    fn span_limits_with_slack_and_on_a_scrambled_grid() {
        let mut m = grid(17, 1.0);
        let topo = Topology::new(&m);
        let tight = build_span_limits(&m, &topo, 0.0);
        let slack = build_span_limits(&m, &topo, 0.05);
        assert_eq!(tight.len(), slack.len());
        for (t, s) in tight.iter().zip(&slack) {
            assert_relative_eq!(s.max_length_m, t.max_length_m * 1.05, max_relative = 1e-6);
        }
        // Jitter the interior by up to a fifth of an edge: fewer pairs pass the tightness test
        // (paths along irregular edges bend), but every kept one is still safe and tight.
        let h = 1.0 / 16.0;
        for (k, p) in m.positions.iter_mut().enumerate() {
            let (i, j) = (k % 17, k / 17);
            if i > 0 && i < 16 && j > 0 && j < 16 {
                let s = (k as Real * 12.9898).sin() * 43_758.547;
                let r = s - s.floor();
                p.x += 0.2 * h * (r - 0.5);
                p.z += 0.2 * h * ((r * 7.0).fract() - 0.5);
            }
        }
        let limits = build_span_limits(&m, &Topology::new(&m), 0.0);
        assert!(limits.len() > 17 * 17 / 4, "{} limits", limits.len());
        for l in &limits {
            let [a, b] = l.particles.map(|i| m.positions[i as usize]);
            let straight = a.distance(b);
            assert!(l.max_length_m >= straight * (1.0 - 1e-5));
            assert!(l.max_length_m <= straight * (1.0 + SPAN_LIMIT_TIGHTNESS) + 1e-6);
        }
        // A mesh without edges has none.
        assert!(build_span_limits(&Mesh::default(), &Topology::default(), 0.0).is_empty());
    }

    #[test]
    fn invalid_fabric_names_field() {
        let f = Fabric {
            density_kg_per_m2: -1.0,
            ..Fabric::default()
        };
        let e = f.validate().unwrap_err();
        assert_eq!(e.field, "density_kg_per_m2");
        assert!(e.to_string().contains("density_kg_per_m2"));
        assert!(Fabric::default().validate().is_ok());
    }
}
