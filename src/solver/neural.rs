//! The hybrid solver's network in the substep (issue 34; docs/solver.md, "The hybrid solver"):
//! its settings, the graph built from the solver's state, and the correction it applies to the
//! prediction. The network itself and its file are in [`crate::neural`].
//!
//! The four layers and their switches:
//!
//! 1. **Training losses**: offline, in `drape train` (`src/train/`); the model file records
//!    them.
//! 2. **The network's prediction**: [`SolverSettings::neural`](super::SolverSettings::neural)
//!    on, and a model given to the solver ([`super::Solver::set_network`]).
//! 3. **The XPBD projection**: always on after the prediction, with the scene's iterations; the
//!    network never replaces the contact search or any constraint.
//! 4. **The fallback**: [`NeuralSettings::fallback`]. A prediction that is not finite or moves
//!    a particle more than [`NeuralSettings::max_correction`] edge lengths is not applied
//!    (counted in `neural_rejected`), and a substep that fails its checks with the prediction
//!    applied is rolled back and run again classically at the same length (`neural_fallbacks`)
//!    before any halving. Halved substeps always run classically: the network's inputs are
//!    scaled by the substep it was trained for.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::collide::Contact;
use crate::math::{Real, Vec3};
use crate::neural::world::{WorldFinder, WorldParams};
use crate::neural::{
    Compiled, Gnn, Graph, Scratch, BODY_FEATURES, EDGE_FEATURES, NODE_FEATURES, OUTPUTS,
    WORLD_FEATURES,
};

use super::{ClothModel, Particles, SimError};

/// Default [`NeuralSettings::max_correction`].
pub const DEFAULT_MAX_CORRECTION: Real = 0.5;

/// The learned prior's settings ([`super::SolverSettings::neural`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct NeuralSettings {
    /// The model: a file path (relative to the scene file) or the name of a model in the preset
    /// library's `models/` folder.
    pub model: String,
    /// Largest move the prediction may give one particle, in mean rest edge lengths; a larger
    /// one is a spike and the prediction is not applied (with [`Self::fallback`] on).
    pub max_correction: Real,
    /// Layer 4: check each prediction before it is applied, and run a substep that fails with
    /// it again classically. Off, the prediction is applied unchecked and a failure goes
    /// straight to the halved (classical) retries.
    pub fallback: bool,
    /// What a bake does when the model cannot be used (missing, corrupt, newer, trained for
    /// other settings): `false` stops with the error naming the file, `true` bakes classically
    /// with a warning.
    pub classical_if_unusable: bool,
    /// The network runs on one substep in this many, and the substeps between apply its last
    /// correction again (the same `Δx` per particle, checked again), without building a graph:
    /// 1 predicts every substep; the scene's substeps per frame predict once per frame.
    pub reuse_substeps: u32,
}

/// Largest [`NeuralSettings::reuse_substeps`].
pub const MAX_REUSE_SUBSTEPS: u32 = 1000;

impl Default for NeuralSettings {
    fn default() -> Self {
        Self {
            model: String::new(),
            max_correction: DEFAULT_MAX_CORRECTION,
            fallback: true,
            classical_if_unusable: false,
            reuse_substeps: 1,
        }
    }
}

impl NeuralSettings {
    /// Checks the fields; the error names the field.
    pub fn validate(&self) -> Result<(), SimError> {
        if self.model.trim().is_empty() {
            return Err(SimError::Setting {
                field: "neural.model",
                value: format!("{:?}", self.model),
                problem: "must name a model file or a model in the library",
            });
        }
        if !(1..=MAX_REUSE_SUBSTEPS).contains(&self.reuse_substeps) {
            return Err(SimError::Setting {
                field: "neural.reuse_substeps",
                value: self.reuse_substeps.to_string(),
                problem: "must be 1 (a prediction every substep) to 1000",
            });
        }
        if !(self.max_correction.is_finite() && self.max_correction > 0.0) {
            return Err(SimError::Setting {
                field: "neural.max_correction",
                value: self.max_correction.to_string(),
                problem: "must be a positive number of edge lengths",
            });
        }
        Ok(())
    }
}

/// One substep of a classical bake as training data: the network's inputs and what the
/// projection did (see [`crate::neural`] for the features; lengths in mean edge lengths `ℓ`).
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// `nodes × NODE_FEATURES`.
    pub node_features: Vec<f32>,
    /// `edges × EDGE_FEATURES`, for [`Topology::edges`].
    pub edge_features: Vec<f32>,
    /// The nodes with a body edge.
    pub body_nodes: Vec<u32>,
    /// `body_nodes × BODY_FEATURES`.
    pub body_features: Vec<f32>,
    /// This substep's directed world edges (empty when recorded without them).
    pub world_edges: Vec<[u32; 2]>,
    /// `world_edges × WORLD_FEATURES`.
    pub world_features: Vec<f32>,
    /// Per node, the projection's move `(x − x̃)/ℓ` (0 for pinned nodes).
    pub target: Vec<[f32; 3]>,
    /// Per node, the prediction `x̃/ℓ` about the cloth's centre, for the physics losses.
    pub predicted: Vec<[f32; 3]>,
    /// Per node, whether it is free (not pinned).
    pub free: Vec<bool>,
    /// Per node, its mass over the free particles' mean mass (0 for pinned nodes), the weights
    /// of the momentum the correction must not change.
    pub mass: Vec<f32>,
}

/// The cloth's graph and its rest shape, shared by every sample of one bake (lengths in `ℓ`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Topology {
    /// The directed mesh edges (each stretch edge both ways).
    pub edges: Vec<[u32; 2]>,
    /// The stretch edges (undirected) and their rest lengths over `ℓ`.
    pub stretch: Vec<([u32; 2], f32)>,
    /// The bending hinges' wing tips and their rest distance over `ℓ`.
    pub wings: Vec<([u32; 2], f32)>,
    /// Mean rest edge length `ℓ` (m).
    pub ell_m: f32,
}

/// Each particle's mass over the free particles' mean mass; 0 for a pinned particle.
pub fn relative_masses(inv_mass: &[Real]) -> Vec<f32> {
    let masses: Vec<f32> = inv_mass
        .iter()
        .map(|&w| if w > 0.0 { 1.0 / w } else { 0.0 })
        .collect();
    let free = inv_mass.iter().filter(|&&w| w > 0.0).count().max(1);
    let mean = masses.iter().sum::<f32>() / free as f32;
    masses.iter().map(|m| m / mean).collect()
}

/// Takes the mass-weighted mean out of the free particles' corrections, so that the network
/// changes no linear momentum: it may only carry load within the cloth (an internal force),
/// never push the cloth as a whole. The external reactions (contacts, pins) stay with the
/// projection. Without this the network's small bias toward the resting cloth's support
/// reaction (`−h²g` per substep) lifted falling cloth off the sphere (docs/solver.md, "The
/// hybrid solver").
pub fn remove_momentum(out: &mut [[f32; OUTPUTS]], inv_mass: &[Real]) {
    let (mut sum, mut mass) = ([0.0f64; 3], 0.0f64);
    for (o, &w) in out.iter().zip(inv_mass) {
        if w > 0.0 {
            let m = 1.0 / w as f64;
            for k in 0..3 {
                sum[k] += m * o[k] as f64;
            }
            mass += m;
        }
    }
    if mass <= 0.0 {
        return;
    }
    let mean = sum.map(|s| (s / mass) as f32);
    for (o, &w) in out.iter_mut().zip(inv_mass) {
        if w > 0.0 {
            for k in 0..3 {
                o[k] -= mean[k];
            }
        }
    }
}

/// What the network did in a substep.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Applied {
    /// Largest move it gave a particle (m).
    pub max_correction_m: Real,
}

/// Why a prediction was not applied.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Rejected {
    /// A value is NaN or infinite.
    NonFinite,
    /// A particle would move more than the allowed correction (m).
    Spike(Real),
}

/// The network and its buffers in a solver.
#[derive(Clone, Debug)]
pub(crate) struct NeuralRun {
    /// The network, laid out for its forward pass; `None` while recording training samples
    /// from a classical bake.
    net: Option<Compiled>,
    /// Substep length (s) the model was trained for.
    pub trained_h: Real,
    /// Mean rest edge length (m).
    ell: Real,
    /// Directed mesh edges, and per edge its rest length (m) and compliance (m/N).
    edges: Vec<[u32; 2]>,
    rest_m: Vec<Real>,
    compliance: Vec<Real>,
    /// Per particle, the previous substep's whole move from its prediction (m): what the
    /// network and the projection did together. Zero at the start and after a rollback.
    pub history_m: Vec<Vec3>,
    /// The prediction before the network, this substep (m).
    pub predicted: Vec<Vec3>,
    node_f: Vec<f32>,
    edge_f: Vec<f32>,
    body_nodes: Vec<u32>,
    body_f: Vec<f32>,
    /// The world-edge search (`None`: a graph without world edges).
    world: Option<WorldFinder>,
    world_edges: Vec<[u32; 2]>,
    world_f: Vec<f32>,
    out: Vec<[f32; OUTPUTS]>,
    /// Per particle, whether the last [`Self::apply`] moved it.
    corrected: Vec<bool>,
    scratch: Scratch,
    /// Whether `out` holds a prediction that may be applied again
    /// ([`NeuralSettings::reuse_substeps`]), and on how many substeps it has been applied.
    cached: bool,
    age: u32,
}

impl NeuralRun {
    /// The network for `model`'s cloth, trained for substeps of `trained_h` s (`None`: only the
    /// graphs, for recording, with world edges found as `record_world` says). A network finds
    /// the world edges its file says, and none if it has none.
    pub fn new(
        net: Option<Arc<Gnn>>,
        model: &ClothModel,
        trained_h: Real,
        record_world: Option<WorldParams>,
    ) -> Result<Self, SimError> {
        if model.stretch.is_empty() {
            return Err(SimError::Setting {
                field: "neural",
                value: "on".into(),
                problem: "the cloth has no stretch edges for the network's graph",
            });
        }
        let ell = model.stretch.iter().map(|d| d.rest_length_m).sum::<Real>()
            / model.stretch.len() as Real;
        let mut edges = Vec::with_capacity(2 * model.stretch.len());
        let mut rest_m = Vec::with_capacity(edges.capacity());
        let mut compliance = Vec::with_capacity(edges.capacity());
        for d in &model.stretch {
            let [a, b] = d.particles;
            for e in [[a, b], [b, a]] {
                edges.push(e);
                rest_m.push(d.rest_length_m);
                compliance.push(d.compliance_m_per_n);
            }
        }
        let n = model.positions.len();
        let world_params = match &net {
            Some(net) => net.world.as_ref().map(|w| w.params()),
            None => record_world,
        };
        if let Some(w) = world_params.filter(|w| w.check().is_err()) {
            return Err(SimError::Setting {
                field: "neural world edges",
                value: format!("{w:?}"),
                problem: "need a radius over 0 and at most 8 edge lengths, 2 to 8 hops and 1 to 32 edges per particle",
            });
        }
        let world = world_params.map(|w| WorldFinder::new(n, &edges, w));
        let world_cap = world_params.map_or(0, |w| n * w.max_per_node as usize);
        let mut scratch = Scratch::default();
        if let Some(net) = &net {
            scratch.reserve(n, edges.len(), world_cap, net.hidden);
        }
        Ok(Self {
            net: net.map(|n| n.compile()),
            trained_h,
            ell,
            edges,
            rest_m,
            compliance,
            history_m: vec![Vec3::ZERO; n],
            predicted: vec![Vec3::ZERO; n],
            node_f: Vec::new(),
            edge_f: Vec::new(),
            body_nodes: Vec::new(),
            body_f: Vec::new(),
            world,
            world_edges: Vec::with_capacity(world_cap),
            world_f: Vec::with_capacity(world_cap * WORLD_FEATURES),
            out: Vec::new(),
            corrected: Vec::new(),
            scratch,
            cached: false,
            age: 0,
        })
    }

    /// Builds this substep's graph from the particles (`x_prev` the substep's start, `x` its
    /// prediction), the previous substep's body contacts (`contacts`, empty if none) and the
    /// history, into the run's buffers. Also keeps the prediction in [`Self::predicted`].
    pub fn build_graph(&mut self, p: &Particles, contacts: &[Contact], h: Real, g: Vec3) {
        let inv = 1.0 / self.ell;
        let n = p.x.len();
        self.predicted.clone_from(&p.x);
        self.node_f.clear();
        let gm = g * (h * h * inv);
        for i in 0..n {
            let d = (p.x[i] - p.x_prev[i]) * inv;
            let hist = self.history_m[i] * inv;
            let pinned = if p.inv_mass[i] > 0.0 { 0.0 } else { 1.0 };
            self.node_f.extend_from_slice(&[
                d.x, d.y, d.z, hist.x, hist.y, hist.z, pinned, gm.x, gm.y, gm.z,
            ]);
        }
        self.edge_f.clear();
        let h2 = h * h;
        for (k, &[i, j]) in self.edges.iter().enumerate() {
            let (i, j) = (i as usize, j as usize);
            let r = p.x[j] - p.x[i];
            let l = self.rest_m[k];
            let strain = if l > 0.0 { r.length() / l - 1.0 } else { 0.0 };
            let r = r * inv;
            let w = p.inv_mass[i] + p.inv_mass[j];
            let alpha = self.compliance[k] / h2;
            let stiff = if alpha > 0.0 {
                (1.0 + w / alpha).ln() / 20.0
            } else {
                // A rigid edge: as stiff as the stiffest the features can say.
                4.0
            };
            self.edge_f
                .extend_from_slice(&[r.x, r.y, r.z, strain, l * inv, stiff.min(4.0)]);
        }
        self.body_nodes.clear();
        self.body_f.clear();
        for c in contacts {
            // One body edge per particle: the first contact the search kept for it.
            if self.body_nodes.last() == Some(&c.particle) {
                continue;
            }
            let i = c.particle as usize;
            if i >= n {
                continue;
            }
            let gap = ((p.x[i] - c.point_m).dot(c.normal) - c.thickness_m) * inv;
            let rel = (c.body_motion_m - (p.x[i] - p.x_prev[i])) * inv;
            self.body_nodes.push(c.particle);
            self.body_f
                .extend_from_slice(&[gap, c.normal.x, c.normal.y, c.normal.z, rel.x, rel.y, rel.z]);
        }
        self.world_f.clear();
        if let Some(finder) = self.world.as_mut() {
            finder.find(&p.x, self.ell, &mut self.world_edges);
            for &[a, b] in &self.world_edges {
                let (a, b) = (a as usize, b as usize);
                let r = (p.x[b] - p.x[a]) * inv;
                let moved = ((p.x[b] - p.x_prev[b]) - (p.x[a] - p.x_prev[a])) * inv;
                self.world_f.extend_from_slice(&[
                    r.x,
                    r.y,
                    r.z,
                    r.length(),
                    moved.x,
                    moved.y,
                    moved.z,
                ]);
            }
        }
        debug_assert_eq!(self.node_f.len(), n * NODE_FEATURES);
        debug_assert_eq!(self.edge_f.len(), self.edges.len() * EDGE_FEATURES);
        debug_assert_eq!(self.body_f.len(), self.body_nodes.len() * BODY_FEATURES);
    }

    /// Whether the next substep may apply the last prediction again instead of running the
    /// network, when one prediction serves `reuse` substeps.
    pub fn can_reuse(&self, reuse: u32) -> bool {
        self.cached && self.age < reuse
    }

    /// Forgets the last prediction (a rollback, a restore): the next substep runs the network.
    pub fn invalidate(&mut self) {
        self.cached = false;
    }

    /// Runs the network on the built graph (`fresh`; otherwise the last prediction is applied
    /// again, [`Self::can_reuse`]) and, unless `check` finds the prediction unusable, adds it to
    /// the free particles' positions.
    pub fn apply(
        &mut self,
        p: &mut Particles,
        check: bool,
        max_correction: Real,
        parallel: bool,
        fresh: bool,
    ) -> Result<Applied, Rejected> {
        let n = p.x.len();
        let Some(net) = &self.net else {
            return Ok(Applied::default());
        };
        if fresh || !self.cached || self.out.len() != n {
            self.out.clear();
            self.out.resize(n, [0.0; OUTPUTS]);
            let graph = Graph {
                node_features: &self.node_f,
                edges: &self.edges,
                edge_features: &self.edge_f,
                body_nodes: &self.body_nodes,
                body_features: &self.body_f,
                world_edges: &self.world_edges,
                world_features: &self.world_f,
            };
            net.forward(&graph, &mut self.scratch, &mut self.out, parallel);
            remove_momentum(&mut self.out, &p.inv_mass);
            self.cached = true;
            self.age = 0;
        }
        self.age += 1;
        let mut max2: Real = 0.0;
        let mut finite = true;
        for (o, &w) in self.out.iter().zip(&p.inv_mass) {
            if w > 0.0 {
                let d2 = (Vec3::from(*o) * self.ell).length_squared();
                // `max` skips a NaN, so finiteness is tracked apart.
                finite &= d2.is_finite();
                max2 = max2.max(d2);
            }
        }
        if check {
            if !finite {
                self.cached = false;
                return Err(Rejected::NonFinite);
            }
            let limit = max_correction * self.ell;
            if max2 > limit * limit {
                self.cached = false;
                return Err(Rejected::Spike(max2.sqrt()));
            }
        }
        self.corrected.clear();
        for ((x, o), &w) in p.x.iter_mut().zip(&self.out).zip(&p.inv_mass) {
            let moved = w > 0.0 && *o != [0.0; OUTPUTS];
            if moved {
                *x += Vec3::from(*o) * self.ell;
            }
            self.corrected.push(moved);
        }
        Ok(Applied {
            max_correction_m: max2.sqrt(),
        })
    }

    /// Directed world edges in the last graph built.
    pub fn world_edge_count(&self) -> usize {
        self.world_edges.len()
    }

    /// Per particle, whether the last [`Self::apply`] moved it.
    pub fn corrected(&self) -> &[bool] {
        &self.corrected
    }

    /// After a substep: the history is each particle's whole move from its prediction.
    pub fn record_history(&mut self, x: &[Vec3]) {
        for ((hm, &x), &pred) in self.history_m.iter_mut().zip(x).zip(&self.predicted) {
            *hm = x - pred;
        }
    }

    /// Whether a network is loaded (not only recording).
    pub fn has_network(&self) -> bool {
        self.net.is_some()
    }

    /// This substep's training sample: the graph and the target `(x − x̃)/ℓ`, `x` the
    /// positions after the projection, 0 for pinned particles.
    pub fn sample(&self, p: &Particles) -> Sample {
        let inv = 1.0 / self.ell;
        let n = p.x.len();
        let centre = self.predicted.iter().copied().sum::<Vec3>() / n.max(1) as Real;
        Sample {
            node_features: self.node_f.clone(),
            edge_features: self.edge_f.clone(),
            body_nodes: self.body_nodes.clone(),
            body_features: self.body_f.clone(),
            world_edges: self.world_edges.clone(),
            world_features: self.world_f.clone(),
            target: (0..n)
                .map(|i| {
                    if p.inv_mass[i] > 0.0 {
                        ((p.x[i] - self.predicted[i]) * inv).into()
                    } else {
                        [0.0; 3]
                    }
                })
                .collect(),
            predicted: self
                .predicted
                .iter()
                .map(|&x| ((x - centre) * inv).into())
                .collect(),
            free: p.inv_mass.iter().map(|&w| w > 0.0).collect(),
            mass: relative_masses(&p.inv_mass),
        }
    }

    /// The cloth's graph and rest shape for the training's physics losses.
    pub fn topology(&self, model: &ClothModel) -> Topology {
        let inv = 1.0 / self.ell;
        let rest = &model.positions;
        Topology {
            edges: self.edges.clone(),
            stretch: model
                .stretch
                .iter()
                .map(|d| (d.particles, d.rest_length_m * inv))
                .collect(),
            wings: model
                .bend
                .iter()
                .map(|b| {
                    let [_, _, c, d] = b.particles;
                    ([c, d], (rest[c as usize] - rest[d as usize]).length() * inv)
                })
                .collect(),
            ell_m: self.ell,
        }
    }

    /// Forgets the history (a rollback, a restore, a substep run without the network).
    pub fn clear_history(&mut self) {
        self.history_m.iter_mut().for_each(|v| *v = Vec3::ZERO);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_correction_changes_no_momentum_and_leaves_pins_alone() {
        let inv_mass = [1.0, 0.5, 0.0, 2.0];
        let mut out = [
            [1.0, 0.0, -2.0],
            [3.0, 1.0, 0.0],
            [7.0, 7.0, 7.0],
            [0.0, -1.0, 4.0],
        ];
        remove_momentum(&mut out, &inv_mass);
        for k in 0..3 {
            let p: f32 = (out.iter().zip(&inv_mass))
                .filter(|(_, &w)| w > 0.0)
                .map(|(o, &w)| o[k] / w)
                .sum();
            assert!(p.abs() < 1e-5, "momentum {p} along {k}");
        }
        assert_eq!(
            out[2],
            [7.0, 7.0, 7.0],
            "a pinned particle is not corrected"
        );
        // Masses 1, 2, pinned, 0.5 kg: their mean over the free ones is 7/6 kg.
        let m = relative_masses(&inv_mass);
        for (a, b) in m.iter().zip([6.0 / 7.0, 12.0 / 7.0, 0.0, 3.0 / 7.0]) {
            assert!((a - b).abs() < 1e-6, "{m:?}");
        }
    }
}
