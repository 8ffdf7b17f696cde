//! The two membrane discretisations against the continuum energy of an orthotropic fabric.
//!
//! A woven fabric with warp stiffness `E₁`, weft stiffness `E₂` and shear stiffness `G` (N/m;
//! Poisson ratio about 0) stores, under a uniform small strain, `½·A·(E₁ε_u² + E₂ε_v² + Gγ²)`
//! (J). Each test deforms a flat, irregular disk mesh by a uniform affine map and sums the
//! energy the constraints hold, `Σ ½·C²/α`, against that formula:
//!
//! - `Membrane::Triangles` (warp, weft and shear strain per triangle) matches it in stretch and
//!   in shear;
//! - `Membrane::Edges` (edge springs, Van Gelder's lattice) matches no orthotropic fabric: a
//!   spring lattice is isotropic with shear modulus `3k/8`, so for a stiff woven its bias
//!   shear is tens of times too stiff (docs/cusick.md, "the edge lattice").

use drape::constraints::triangle_strain_and_gradient;
use drape::cusick::specimen_disk_scattered;
use drape::garment::material::{build_cloth_membrane, ClothConstraints, Fabric, Membrane};
use drape::math::{Real, Vec3};
use drape::mesh::{Mesh, Topology};
use drape::preset::builtin_fabric;

/// A flat, irregular disk (scattered vertices, Delaunay), radius 0.15 m, in the XZ plane; its
/// UVs put the warp along X and the weft along Z.
fn disk() -> Mesh {
    specimen_disk_scattered(0.15, 0.09, 800, 0.0, 3).unwrap()
}

fn constraints(mesh: &Mesh, fabric: &Fabric, membrane: Membrane) -> ClothConstraints {
    build_cloth_membrane(mesh, &Topology::new(mesh), fabric, None, membrane)
}

/// The energy (J) the membrane constraints of `c` hold at the positions `x`.
fn energy(c: &ClothConstraints, membrane: Membrane, x: &[Vec3]) -> f64 {
    let mut e = 0.0f64;
    if membrane == Membrane::Edges {
        for d in &c.stretch {
            let [a, b] = d.particles.map(|i| x[i as usize]);
            let v = (a.distance(b) - d.rest_length_m) as f64;
            e += 0.5 * v * v / d.compliance_m_per_n as f64;
        }
    }
    for t in &c.shear {
        let p = t.particles.map(|i| x[i as usize]);
        let (v, _) = triangle_strain_and_gradient(p, t.rest_inverse, t.strain).unwrap();
        e += 0.5 * (v as f64).powi(2) / t.compliance_per_n_m as f64;
    }
    e
}

/// The mesh's rest positions under the map `(x, z) ↦ (x + a·x + b·z, z + c·x + d·z)`.
fn deformed(mesh: &Mesh, [a, b, c, d]: [Real; 4]) -> Vec<Vec3> {
    mesh.positions
        .iter()
        .map(|p| Vec3::new(p.x + a * p.x + b * p.z, p.y, p.z + c * p.x + d * p.z))
        .collect()
}

#[test]
fn triangle_membrane_stores_the_orthotropic_energy() {
    let mesh = disk();
    let area = mesh.area() as f64;
    let mut fabric = builtin_fabric("cotton_shirting").unwrap();
    // Different warp and weft, so that a swapped axis would show.
    fabric.stretch_weft_n_per_m = 500.0;
    let c = constraints(&mesh, &fabric, Membrane::Triangles);
    assert_eq!(c.shear.len(), 3 * mesh.indices.len());
    // At rest only f32 rounding remains (the strained cases below hold about 1e-5 J).
    assert!(energy(&c, Membrane::Triangles, &mesh.positions) < 1e-10);
    let eps: Real = 1e-3;
    let cases = [
        (
            "warp stretch",
            [eps, 0.0, 0.0, 0.0],
            fabric.stretch_warp_n_per_m,
        ),
        (
            "weft stretch",
            [0.0, 0.0, 0.0, eps],
            fabric.stretch_weft_n_per_m,
        ),
        // Pure shear: γ = ε/2 + ε/2.
        (
            "shear",
            [0.0, eps / 2.0, eps / 2.0, 0.0],
            fabric.shear_n_per_m,
        ),
    ];
    for (name, map, k) in cases {
        let expected = 0.5 * k as f64 * area * (eps as f64).powi(2);
        let got = energy(&c, Membrane::Triangles, &deformed(&mesh, map));
        assert!(
            (got / expected - 1.0).abs() < 0.02,
            "{name}: {got:e} J, continuum {expected:e} J"
        );
    }
}

#[test]
fn edge_lattice_is_isotropic_and_far_too_stiff_on_the_bias() {
    let mesh = disk();
    let area = mesh.area() as f64;
    let fabric = builtin_fabric("cotton_shirting").unwrap();
    let (k, g) = (
        fabric.stretch_warp_n_per_m as f64,
        fabric.shear_n_per_m as f64,
    );
    let c = constraints(&mesh, &fabric, Membrane::Edges);
    let eps: Real = 1e-3;
    let shear = energy(
        &c,
        Membrane::Edges,
        &deformed(&mesh, [0.0, eps / 2.0, eps / 2.0, 0.0]),
    );
    let continuum = 0.5 * g * area * (eps as f64).powi(2);
    // The lattice's shear modulus is about 3k/8 (750 N/m for cotton), added to the shear
    // constraints' G (19 N/m): about 40 times the fabric's.
    let lattice = 0.5 * (3.0 * k / 8.0 + g) * area * (eps as f64).powi(2);
    assert!(
        shear > 20.0 * continuum,
        "{shear:e} J against {continuum:e} J"
    );
    assert!(
        (shear / lattice - 1.0).abs() < 0.15,
        "{shear:e} J against the isotropic lattice's {lattice:e} J"
    );
    // Uniaxial strain along the warp: the lattice's Poisson coupling makes it 9/8 as stiff.
    let warp = energy(&c, Membrane::Edges, &deformed(&mesh, [eps, 0.0, 0.0, 0.0]));
    let expected = 0.5 * 9.0 / 8.0 * k * area * (eps as f64).powi(2);
    assert!(
        (warp / expected - 1.0).abs() < 0.1,
        "{warp:e} J against {expected:e} J"
    );
}

/// The solver with `Membrane::Triangles`: a 0.3 m cotton square pinned along one edge swings
/// down and hangs with its yarn-aligned edges barely stretched, and the edges are measured,
/// not projected (each sweep projects `2T − E` more constraints than with edge springs: three
/// rows per triangle instead of one, and no edges).
#[test]
fn a_sheet_hangs_on_the_triangle_membrane() {
    use drape::mesh::shapes::grid_cloth;
    use drape::solver::{ClothModel, Pin, Solver, SolverSettings, StretchSolve};
    let mesh = grid_cloth(0.3, 16, 0.0);
    let topology = Topology::new(&mesh);
    let fabric = builtin_fabric("cotton_shirting").unwrap();
    let run = |membrane: Membrane| {
        let c = build_cloth_membrane(&mesh, &topology, &fabric, None, membrane);
        let n = mesh.positions.len();
        let z0 = mesh
            .positions
            .iter()
            .map(|p| p.z)
            .fold(Real::MAX, Real::min);
        let pins = (0..n)
            .filter(|&i| mesh.positions[i].z <= z0 + 1e-6)
            .map(|i| Pin {
                particle: i as u32,
                target_m: mesh.positions[i],
            })
            .collect();
        let model = ClothModel {
            pins,
            ..ClothModel::from_cloth(mesh.positions.clone(), c, 2.0, 0.0)
        };
        // Solved globally: with the triangle membrane the yarn rows go to the global solve
        // with the shear.
        let settings = SolverSettings {
            substeps: 20,
            stretch_solve: StretchSolve::Global,
            ..Default::default()
        };
        let mut solver = Solver::new(settings, model, None).unwrap();
        let mut projections = 0;
        for _ in 0..36 {
            projections += solver.step_frame(1.0 / 24.0).unwrap().projections;
        }
        (solver, projections)
    };
    let (tri, p_tri) = run(Membrane::Triangles);
    let (edge, p_edge) = run(Membrane::Edges);
    let yarn_stretch_of = |s: &Solver| {
        let x = &s.particles().x;
        (s.model().stretch.iter())
            .filter(|d| {
                let [a, b] = d.particles.map(|i| mesh.positions[i as usize]);
                (a.x - b.x).abs() < 1e-6 || (a.z - b.z).abs() < 1e-6
            })
            .map(|d| {
                let [a, b] = d.particles.map(|i| x[i as usize]);
                a.distance(b) / d.rest_length_m - 1.0
            })
            .fold(0.0, Real::max)
    };
    let (yarn_tri, yarn_edge) = (yarn_stretch_of(&tri), yarn_stretch_of(&edge));
    eprintln!("yarn stretch: triangles {yarn_tri}, edges {yarn_edge}");
    // The yarns keep their length on the triangle membrane as on the edge springs.
    assert!(yarn_tri < 0.005, "yarn edges stretched {yarn_tri}");
    let x = &tri.particles().x;
    assert!(x.iter().all(|p| p.is_finite()));
    let lowest = x.iter().map(|p| p.y).fold(Real::MAX, Real::min);
    assert!(
        lowest < -0.25,
        "the free edge should hang near 0.3 m down: {lowest} m"
    );
    let (t, e) = (mesh.indices.len() as u64, edge.model().stretch.len() as u64);
    assert!(p_tri > p_edge);
    assert_eq!((p_tri - p_edge) % (2 * t - e), 0, "{p_tri} {p_edge}");
}
