//! Painted maps on the simulation mesh: the transfer from the render mesh, the attachments
//! they make, and the post-pass that scales the constraints [`crate::garment::material::build_cloth`]
//! built (see the [module docs](super)).

use crate::garment::binding::Binding;
use crate::garment::material::ClothConstraints;
use crate::math::Real;

use super::maps::{
    attachment_compliance_m_per_n, Attach, GarmentMaps, MapError, MapKind, VertexMaps,
};

/// The maps carried to the simulation mesh: one value per simulated vertex in each map.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SimMaps {
    /// The maps, indexed like the simulation mesh's vertices.
    pub values: VertexMaps,
}

/// How render vertices reach the simulation mesh.
#[derive(Clone, Copy, Debug)]
pub enum RenderToSim<'a> {
    /// The simulation mesh is the welded render mesh: each render vertex's welded vertex, and
    /// the number of welded vertices.
    Welded(&'a [u32], usize),
    /// The simulation mesh is a proxy the render mesh is bound to.
    Proxy(&'a Binding),
}

impl SimMaps {
    /// Carries render-mesh maps to the simulation mesh: welded seam duplicates take their mean
    /// (`v₀ + Σ(vₖ − v₀)/k`, exact for equal values); a proxy takes the binding's
    /// barycentric average ([`Binding::render_to_proxy`]). `garment` names the garment in
    /// errors.
    pub fn transfer(
        maps: &VertexMaps,
        to_sim: RenderToSim,
        garment: &str,
    ) -> Result<Self, MapError> {
        let mut values = VertexMaps::default();
        for kind in MapKind::ALL {
            let render = maps.get(kind);
            let sim = match to_sim {
                RenderToSim::Welded(map, count) => {
                    if map.len() != render.len() {
                        return Err(MapError::Length {
                            garment: garment.into(),
                            map: kind.name(),
                            got: render.len(),
                            expected: map.len(),
                        });
                    }
                    let mut first: Vec<Option<Real>> = vec![None; count];
                    let mut sum = vec![0.0 as Real; count];
                    let mut n = vec![0u32; count];
                    for (&w, &v) in map.iter().zip(render) {
                        let w = w as usize;
                        let v0 = *first[w].get_or_insert(v);
                        sum[w] += v - v0;
                        n[w] += 1;
                    }
                    (0..count)
                        .map(|w| match first[w] {
                            Some(v0) => v0 + sum[w] / n[w] as Real,
                            None => kind.default_value(),
                        })
                        .collect()
                }
                RenderToSim::Proxy(binding) => {
                    binding
                        .render_to_proxy(render)
                        .map_err(|e| MapError::Corrupt {
                            garment: garment.into(),
                            problem: format!("{} map: {e}", kind.name()),
                        })?
                }
            };
            values.set(kind, sim);
        }
        Ok(Self { values })
    }

    /// The attachments the weight map makes under `settings` (see
    /// [`attachment_compliance_m_per_n`]): the hard-pinned vertices, ascending, and the soft
    /// attachments with their compliance (m/N), ascending by vertex.
    pub fn attachments(&self, settings: &GarmentMaps) -> (Vec<u32>, Vec<(u32, Real)>) {
        let mut hard = Vec::new();
        let mut soft = Vec::new();
        for (i, &w) in self.values.get(MapKind::Attachment).iter().enumerate() {
            match attachment_compliance_m_per_n(w, settings) {
                Attach::Free => {}
                Attach::Soft(alpha) => soft.push((i as u32, alpha)),
                Attach::Hard => hard.push(i as u32),
            }
        }
        (hard, soft)
    }

    /// Scales the constraints and masses built for the simulation mesh (indices local to it):
    ///
    /// ```text
    /// stretch edge (a, b)        α ← α · (s_a + s_b) / 2          s: stretch scale
    /// shear triangle (a, b, c)   α ← α · (s_a + s_b + s_c) / 3
    /// bend hinge (a, b, c, d)    α ← α · (β_a + β_b + β_c + β_d) / 4   β: bend scale
    /// particle i                 m_i ← m_i · μ_i                  μ: mass scale
    /// ```
    ///
    /// An unpainted map (all 1) leaves its constraints bit for bit as they were.
    pub fn scale_constraints(&self, c: &mut ClothConstraints) {
        let s = self.values.get(MapKind::StretchScale);
        let b = self.values.get(MapKind::BendScale);
        let m = self.values.get(MapKind::MassScale);
        let mean = |map: &[Real], ids: &[u32]| -> Real {
            let v0 = map[ids[0] as usize];
            v0 + ids[1..].iter().map(|&i| map[i as usize] - v0).sum::<Real>() / ids.len() as Real
        };
        let ok = |ids: &[u32], len: usize| ids.iter().all(|&i| (i as usize) < len);
        if !self.values.is_default(MapKind::StretchScale) {
            for d in &mut c.stretch {
                if ok(&d.particles, s.len()) {
                    d.compliance_m_per_n *= mean(s, &d.particles);
                }
            }
            for t in &mut c.shear {
                if ok(&t.particles, s.len()) {
                    t.compliance_per_n_m *= mean(s, &t.particles);
                }
            }
        }
        if !self.values.is_default(MapKind::BendScale) {
            for h in &mut c.bend {
                if ok(&h.particles, b.len()) {
                    h.compliance_per_n_m *= mean(b, &h.particles);
                }
            }
        }
        if !self.values.is_default(MapKind::MassScale) {
            for (mass, &k) in c.mass_kg.iter_mut().zip(m) {
                *mass *= k;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::garment::material::{build_cloth, Fabric};
    use crate::mesh::{weld, Topology};

    #[test]
    fn seam_duplicates_average_and_unpainted_maps_change_nothing() {
        let grid = crate::mesh::shapes::grid_cloth(1.0, 5, 0.0);
        let w = weld(&grid, 1e-5);
        let mut maps = VertexMaps::new(grid.positions.len());
        let sim = SimMaps::transfer(
            &maps,
            RenderToSim::Welded(&w.original_to_welded, w.mesh.positions.len()),
            "g",
        )
        .unwrap();
        let topo = Topology::new(&w.mesh);
        let c0 = build_cloth(&w.mesh, &topo, &Fabric::default());
        let mut c1 = c0.clone();
        sim.scale_constraints(&mut c1);
        assert_eq!(c0.stretch, c1.stretch);
        assert_eq!(c0.bend, c1.bend);
        assert_eq!(c0.mass_kg, c1.mass_kg);
        // Stretch 10× at vertex 0 and 2 on one edge: that edge's compliance is 10×.
        maps.get_mut(MapKind::StretchScale)[0] = 10.0;
        maps.get_mut(MapKind::StretchScale)[1] = 10.0;
        maps.get_mut(MapKind::MassScale)[2] = 2.0;
        let sim = SimMaps::transfer(
            &maps,
            RenderToSim::Welded(&w.original_to_welded, w.mesh.positions.len()),
            "g",
        )
        .unwrap();
        let mut c2 = c0.clone();
        sim.scale_constraints(&mut c2);
        let (a, b) = (w.original_to_welded[0], w.original_to_welded[1]);
        for (d0, d2) in c0.stretch.iter().zip(&c2.stretch) {
            let touches = |i: u32| d0.particles.contains(&i);
            let expected = match (touches(a), touches(b)) {
                (true, true) => 10.0,
                (true, false) | (false, true) => 5.5,
                _ => 1.0,
            };
            approx::assert_relative_eq!(
                d2.compliance_m_per_n,
                d0.compliance_m_per_n * expected,
                max_relative = 1e-6
            );
        }
        let k = w.original_to_welded[2] as usize;
        assert_eq!(c2.mass_kg[k], 2.0 * c0.mass_kg[k]);
        let e = SimMaps::transfer(
            &VertexMaps::new(3),
            RenderToSim::Welded(&w.original_to_welded, 25),
            "shirt",
        )
        .unwrap_err();
        assert!(e.to_string().contains("shirt"), "{e}");
    }

    #[test]
    fn weights_become_hard_pins_and_soft_attachments() {
        let mut values = VertexMaps::new(4);
        values
            .get_mut(MapKind::Attachment)
            .copy_from_slice(&[0.0, 0.5, 0.995, 1.0]);
        let sim = SimMaps { values };
        let (hard, soft) = sim.attachments(&GarmentMaps::default());
        assert_eq!(hard, vec![2, 3]);
        assert_eq!(soft.len(), 1);
        assert_eq!(soft[0].0, 1);
        approx::assert_relative_eq!(soft[0].1, 1.0e-2, max_relative = 1e-5);
    }
}
