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

use crate::constraints::{shear_rest_inverse, Bend, Distance, Shear};
use crate::math::{triangle_area, Real, Vec3};
use crate::mesh::{Mesh, Topology};

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

/// A fabric value that cannot be simulated.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("fabric '{fabric}': field `{field}` = {value} {problem}")]
pub struct FabricError {
    /// Fabric name.
    pub fabric: String,
    /// Field name, as written in the preset file.
    pub field: &'static str,
    /// The offending value.
    pub value: Real,
    /// What is wrong with it.
    pub problem: &'static str,
}

impl Fabric {
    /// Checks that every value is finite and in range; the error names the field.
    pub fn validate(&self) -> Result<(), FabricError> {
        let positive: [(&'static str, Real); 5] = [
            ("density_kg_per_m2", self.density_kg_per_m2),
            ("stretch_warp_n_per_m", self.stretch_warp_n_per_m),
            ("stretch_weft_n_per_m", self.stretch_weft_n_per_m),
            ("shear_n_per_m", self.shear_n_per_m),
            ("bend_warp_n_m", self.bend_warp_n_m),
        ];
        let non_negative: [(&'static str, Real); 4] = [
            ("bend_weft_n_m", self.bend_weft_n_m),
            ("thickness_m", self.thickness_m),
            ("friction", self.friction),
            ("damping_per_s", self.damping_per_s),
        ];
        let err = |field, value, problem| FabricError {
            fabric: self.name.clone(),
            field,
            value,
            problem,
        };
        for (field, value) in positive {
            if !value.is_finite() || value <= 0.0 {
                return Err(err(field, value, "must be a finite number greater than 0"));
            }
        }
        for (field, value) in non_negative {
            if !value.is_finite() || value < 0.0 {
                return Err(err(field, value, "must be a finite number of at least 0"));
            }
        }
        Ok(())
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
}

/// Builds masses and constraints for `mesh` (rest shape = its positions) from `fabric`.
///
/// `mesh` must be valid (see [`Mesh::validate`]) and welded; `topology` is its adjacency.
/// The warp direction is taken from the UVs where present (the direction of increasing `u`),
/// otherwise world X projected into each triangle.
pub fn build_cloth(mesh: &Mesh, topology: &Topology, fabric: &Fabric) -> ClothConstraints {
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
    let k_s = fabric.stretch_n_per_m();
    let stretch = topology
        .edges
        .iter()
        .zip(&topology.edge_triangles)
        .filter_map(|(&[a, b], tris)| {
            let rest = x[a as usize].distance(x[b as usize]);
            let area: Real = tris.iter().map(|&t| areas[t as usize]).sum();
            (rest > 0.0 && area > 0.0).then(|| Distance {
                particles: [a, b],
                rest_length_m: rest,
                compliance_m_per_n: rest * rest / (k_s * area),
            })
        })
        .collect();
    let mut degenerate_triangles = 0;
    let mut shear = Vec::with_capacity(mesh.indices.len());
    for (t, tri) in mesh.indices.iter().enumerate() {
        let rest = tri.map(|i| x[i as usize]);
        let warp = warp_direction(mesh, *tri);
        match shear_rest_inverse(rest, warp) {
            Some(rest_inverse) if areas[t] > 0.0 => shear.push(Shear {
                particles: *tri,
                rest_inverse,
                compliance_per_n_m: 1.0 / (fabric.shear_n_per_m * areas[t]),
            }),
            _ => degenerate_triangles += 1,
        }
    }
    let b = fabric.bend_n_m();
    let bend = topology
        .bend_pairs
        .iter()
        .filter_map(|bp| {
            let p = [bp.edge[0], bp.edge[1], bp.opposite[0], bp.opposite[1]];
            let pos = p.map(|i| x[i as usize]);
            let (theta, _) = crate::constraints::dihedral_angle_and_gradient(pos)?;
            let e2 = pos[0].distance_squared(pos[1]);
            let a = triangle_area(pos[0], pos[1], pos[2]) + triangle_area(pos[0], pos[1], pos[3]);
            Some(Bend {
                particles: p,
                rest_angle_rad: theta,
                compliance_per_n_m: a / (3.0 * b * e2),
            })
        })
        .collect();
    ClothConstraints {
        mass_kg,
        stretch,
        shear,
        bend,
        degenerate_triangles,
    }
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
    use approx::assert_relative_eq;

    fn grid(n: u32, size: Real) -> Mesh {
        let mut p = Vec::new();
        for j in 0..n {
            for i in 0..n {
                let s = size / (n - 1) as Real;
                p.push(Vec3::new(i as Real * s, 0.0, j as Real * s));
            }
        }
        let mut t = Vec::new();
        for j in 0..n - 1 {
            for i in 0..n - 1 {
                let a = j * n + i;
                t.push([a, a + n, a + 1]);
                t.push([a + 1, a + n, a + n + 1]);
            }
        }
        Mesh::new("grid", p, t)
    }

    #[test]
    fn total_mass_is_density_times_area() {
        let m = grid(11, 2.0);
        let c = build_cloth(&m, &Topology::new(&m), &Fabric::default());
        let total: Real = c.mass_kg.iter().sum();
        assert_relative_eq!(total, 4.0 * 0.1036, max_relative = 1e-5);
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
