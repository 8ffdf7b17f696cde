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
use drape::material::{build_cloth_membrane, builtin_fabric, ClothConstraints, Fabric, Membrane};
use drape::math::{Real, Vec3};
use drape::mesh::{Mesh, Topology};

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
