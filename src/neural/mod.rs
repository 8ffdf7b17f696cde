//! The learned dynamics prior of the hybrid solver (issue 34; docs/solver.md, "The hybrid
//! solver"): a small message-passing graph network over the cloth's mesh edges and its body
//! edges, its model file, and its inference.
//!
//! # What it predicts
//!
//! For each particle, a **position residual** `Δx` (m) added to the substep's prediction
//! `x̃ = x + h·v + h²·g` before the XPBD projection. Its training target is what a converged
//! projection (many iterations) does to the same prediction: `Δx* = x* − x̃`. So a perfect
//! network hands the projection a state that is already feasible, and the one or two
//! iterations that follow keep the hard guarantees (contacts, pins, the stretch limit) without
//! having to carry the whole correction. Whatever the network moves becomes velocity exactly as
//! a projection's move does (`v = (x − x_prev)/h`), so a prediction that matches the converged
//! projection gives the converged solve's dynamics, not a force of its own.
//!
//! The prediction is made **per substep**, from that substep's prediction and the previous
//! substep's projection: nothing is shared across substeps except the history input below.
//!
//! # The graph
//!
//! All lengths are divided by the cloth's mean rest edge length `ℓ` (m) and all features are
//! relative, so the network sees neither the cloth's place in the world nor its resolution.
//!
//! - **Nodes** (one per particle, [`NODE_FEATURES`]): the predicted move `(x̃ − x)/ℓ`, the
//!   previous substep's projection move `(x_end − x̃)/ℓ` (the history, zero after a rollback),
//!   whether the particle is pinned, and gravity's move in one substep `h²·g/ℓ`.
//! - **Mesh edges** (each stretch edge in both directions, [`EDGE_FEATURES`]): the predicted
//!   relative position `(x̃_j − x̃_i)/ℓ`, its strain `|x̃_j − x̃_i|/L − 1`, the rest length `L/ℓ`
//!   and the edge's stiffness for one substep `ln(1 + (w_i + w_j)/α̃)/20`, `α̃ = α/h²`.
//! - **Body edges** (each particle in contact with the body, to its closest body point,
//!   [`BODY_FEATURES`]): the gap `(d − thickness)/ℓ` along the normal, the normal, and the body
//!   surface's move in the substep relative to the particle's predicted move, over `ℓ`.
//! - **World edges** (optional, [`WorldEdges`]; [`WORLD_FEATURES`]): between two particles
//!   closer than [`WorldEdges::radius`] edge lengths at the prediction but at least
//!   [`WorldEdges::min_hops`] mesh edges apart (a fold lying on the cloth, two layers in
//!   contact), both ways: the relative position `(x̃_j − x̃_i)/ℓ`, its length, and the relative
//!   predicted move `((x̃_j − x_j) − (x̃_i − x_i))/ℓ`. They are found anew every substep
//!   ([`world::WorldFinder`]).
//!
//! # The network
//!
//! Encode–process–decode (Pfaff et al., MeshGraphNets), every block a two-layer MLP
//! (`Linear → ReLU → Linear`) of width [`Gnn::hidden`]: the three encoders, then
//! [`Gnn::steps`] message-passing steps, each updating every directed edge from its latent and
//! its two nodes' (`e += MLP[e, n_i, n_j]`) and every node from its latent, the sum of its
//! incoming edges and its body edge (`n += MLP[n, Σe, b]`; with world edges, each world edge
//! is updated by its own MLP and the node reads their sum too: `n += MLP[n, Σe, Σw, b]`), then
//! a decoder to `Δx/ℓ`. The
//! steps have weights of their own. The forward pass here is the one the solver runs: plain
//! `f32`, allocation-free once its [`Scratch`] is warm; `src/train/` trains the same network
//! with candle and checks that both forwards agree.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub mod world;

/// The model file format this build reads and writes. Version 2 added the optional world
/// edges ([`Gnn::world`]); a version-1 file reads as a network without them.
pub const MODEL_FORMAT_VERSION: u32 = 2;

/// Features per node: predicted move (3), history (3), pinned (1), gravity's move (3).
pub const NODE_FEATURES: usize = 10;

/// Features per directed mesh edge: relative position (3), strain, rest length, stiffness.
pub const EDGE_FEATURES: usize = 6;

/// Features per body edge: gap, normal (3), relative body move (3).
pub const BODY_FEATURES: usize = 7;

/// Features per directed world edge: relative position (3), its length, relative move (3).
pub const WORLD_FEATURES: usize = 7;

/// Outputs per node: `Δx/ℓ`.
pub const OUTPUTS: usize = 3;

/// Widest hidden layer a model may have (the forward pass keeps its rows on the stack).
pub const MAX_HIDDEN: usize = 64;

/// Most message-passing steps a model may have.
pub const MAX_STEPS: usize = 8;

/// A dense layer: `y = W·x + b`, `W` row-major with `outputs` rows of `inputs`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Linear {
    /// Input width.
    pub inputs: usize,
    /// Output width.
    pub outputs: usize,
    /// `outputs × inputs` weights, row by row.
    pub weight: Vec<f32>,
    /// `outputs` biases.
    pub bias: Vec<f32>,
}

impl Linear {
    /// A layer of zeros.
    pub fn zeros(inputs: usize, outputs: usize) -> Self {
        Self {
            inputs,
            outputs,
            weight: vec![0.0; inputs * outputs],
            bias: vec![0.0; outputs],
        }
    }

    fn check(&self, name: &str, inputs: usize, outputs: usize) -> Result<(), String> {
        if self.inputs != inputs || self.outputs != outputs {
            return Err(format!(
                "{name}: a {}×{} layer where the network needs {inputs}×{outputs}",
                self.inputs, self.outputs
            ));
        }
        if self.weight.len() != inputs * outputs || self.bias.len() != outputs {
            return Err(format!(
                "{name}: {} weights and {} biases for a {inputs}×{outputs} layer",
                self.weight.len(),
                self.bias.len()
            ));
        }
        if !self.weight.iter().chain(&self.bias).all(|v| v.is_finite()) {
            return Err(format!("{name}: a weight is not a finite number"));
        }
        Ok(())
    }
}

/// Two dense layers with a ReLU between them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mlp {
    /// Input to hidden.
    pub first: Linear,
    /// Hidden to output.
    pub second: Linear,
}

impl Mlp {
    /// An MLP of zeros.
    pub fn zeros(inputs: usize, hidden: usize, outputs: usize) -> Self {
        Self {
            first: Linear::zeros(inputs, hidden),
            second: Linear::zeros(hidden, outputs),
        }
    }

    fn check(
        &self,
        name: &str,
        inputs: usize,
        hidden: usize,
        outputs: usize,
    ) -> Result<(), String> {
        self.first.check(&format!("{name}.first"), inputs, hidden)?;
        self.second
            .check(&format!("{name}.second"), hidden, outputs)
    }
}

/// One message-passing step's weights.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Edge update from `[e, n_i, n_j]` (3 × hidden in).
    pub edge: Mlp,
    /// Node update from `[n, Σ incoming e, body edge]` (3 × hidden in), or from
    /// `[n, Σ incoming e, Σ incoming world edges, body edge]` (4 × hidden) with world edges.
    pub node: Mlp,
}

/// The network's weights (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gnn {
    /// Width of every latent and hidden layer.
    pub hidden: usize,
    /// Node encoder ([`NODE_FEATURES`] in).
    pub node_encoder: Mlp,
    /// Mesh-edge encoder ([`EDGE_FEATURES`] in).
    pub edge_encoder: Mlp,
    /// Body-edge encoder ([`BODY_FEATURES`] in).
    pub body_encoder: Mlp,
    /// The message-passing steps.
    pub steps: Vec<Step>,
    /// Decoder to `Δx/ℓ` ([`OUTPUTS`] out).
    pub decoder: Mlp,
    /// Each node feature is multiplied by its scale before the encoder (the inverse of its RMS
    /// over the training data), so that every input is of order one.
    pub node_scale: Vec<f32>,
    /// The same for the mesh-edge features.
    pub edge_scale: Vec<f32>,
    /// The same for the body-edge features.
    pub body_scale: Vec<f32>,
    /// Scale of the decoder's output: `Δx/ℓ = output_scale × decoder` (the targets are small
    /// next to an edge, so the decoder works at unit scale).
    pub output_scale: f32,
    /// The world edges' weights and how they are found; `None`: a network of mesh and body
    /// edges only (every version-1 file). With them, each step's node update reads `4 ×
    /// hidden` inputs instead of 3.
    #[serde(default)]
    pub world: Option<WorldEdges>,
}

/// The world edges of a [`Gnn`]: which pairs of particles are joined, and the weights that
/// read them (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorldEdges {
    /// Two particles closer than this at the prediction are joined, in mean rest edge lengths
    /// `ℓ`.
    pub radius: f32,
    /// ... unless they are fewer than this many mesh edges apart (at least 2: mesh neighbours
    /// are joined by their mesh edge already).
    pub min_hops: u32,
    /// Most world edges a particle starts (the nearest are kept), so that a crumpled cloth
    /// cannot grow the graph without bound.
    pub max_per_node: u32,
    /// World-edge encoder ([`WORLD_FEATURES`] in).
    pub encoder: Mlp,
    /// Per message-passing step, the world edges' update from `[w, n_i, n_j]` (3 × hidden in).
    pub steps: Vec<Mlp>,
    /// Each world-edge feature's scale before the encoder.
    pub scale: Vec<f32>,
}

impl WorldEdges {
    /// Default [`WorldEdges::radius`] (edge lengths).
    pub const RADIUS: f32 = 1.0;
    /// Default [`WorldEdges::min_hops`].
    pub const MIN_HOPS: u32 = 3;
    /// Default [`WorldEdges::max_per_node`].
    pub const MAX_PER_NODE: u32 = 8;

    /// World edges of zeros for a network `hidden` wide with `steps` steps, found with the
    /// default radius and hops.
    pub fn zeros(hidden: usize, steps: usize) -> Self {
        Self {
            radius: Self::RADIUS,
            min_hops: Self::MIN_HOPS,
            max_per_node: Self::MAX_PER_NODE,
            encoder: Mlp::zeros(WORLD_FEATURES, hidden, hidden),
            steps: (0..steps)
                .map(|_| Mlp::zeros(3 * hidden, hidden, hidden))
                .collect(),
            scale: vec![1.0; WORLD_FEATURES],
        }
    }

    /// How the pairs are found.
    pub fn params(&self) -> world::WorldParams {
        world::WorldParams {
            radius: self.radius,
            min_hops: self.min_hops,
            max_per_node: self.max_per_node,
        }
    }
}

impl Gnn {
    /// A network of zeros (it predicts `Δx = 0`), `hidden` wide with `steps` steps, without
    /// world edges ([`Gnn::with_world_edges`] adds them).
    pub fn zeros(hidden: usize, steps: usize) -> Self {
        Self {
            hidden,
            node_encoder: Mlp::zeros(NODE_FEATURES, hidden, hidden),
            edge_encoder: Mlp::zeros(EDGE_FEATURES, hidden, hidden),
            body_encoder: Mlp::zeros(BODY_FEATURES, hidden, hidden),
            steps: (0..steps)
                .map(|_| Step {
                    edge: Mlp::zeros(3 * hidden, hidden, hidden),
                    node: Mlp::zeros(3 * hidden, hidden, hidden),
                })
                .collect(),
            decoder: Mlp::zeros(hidden, hidden, OUTPUTS),
            node_scale: vec![1.0; NODE_FEATURES],
            edge_scale: vec![1.0; EDGE_FEATURES],
            body_scale: vec![1.0; BODY_FEATURES],
            output_scale: 1.0,
            world: None,
        }
    }

    /// The same network of zeros with world edges of zeros, found as `params` says (its node
    /// updates widen to `4 × hidden` inputs).
    pub fn with_world_edges(mut self, params: world::WorldParams) -> Self {
        let h = self.hidden;
        for s in &mut self.steps {
            s.node = Mlp::zeros(4 * h, h, h);
        }
        let mut w = WorldEdges::zeros(h, self.steps.len());
        w.radius = params.radius;
        w.min_hops = params.min_hops;
        w.max_per_node = params.max_per_node;
        self.world = Some(w);
        self
    }

    /// Inputs of each step's node update: `[n, Σe, b]`, and `Σw` with world edges.
    pub fn node_update_inputs(&self) -> usize {
        if self.world.is_some() {
            4 * self.hidden
        } else {
            3 * self.hidden
        }
    }

    /// Every MLP in a fixed order (the order the trainer and the file use): the three
    /// encoders, each step's edge and node updates, the decoder, then the world edges' encoder
    /// and steps.
    pub fn mlps(&self) -> Vec<&Mlp> {
        let mut out = vec![&self.node_encoder, &self.edge_encoder, &self.body_encoder];
        for s in &self.steps {
            out.push(&s.edge);
            out.push(&s.node);
        }
        out.push(&self.decoder);
        if let Some(w) = &self.world {
            out.push(&w.encoder);
            out.extend(&w.steps);
        }
        out
    }

    /// [`Gnn::mlps`], mutable.
    pub fn mlps_mut(&mut self) -> Vec<&mut Mlp> {
        let Gnn {
            node_encoder,
            edge_encoder,
            body_encoder,
            steps,
            decoder,
            world,
            ..
        } = self;
        let mut out = vec![node_encoder, edge_encoder, body_encoder];
        for s in steps.iter_mut() {
            out.push(&mut s.edge);
            out.push(&mut s.node);
        }
        out.push(decoder);
        if let Some(w) = world {
            out.push(&mut w.encoder);
            out.extend(w.steps.iter_mut());
        }
        out
    }

    /// Number of weights and biases.
    pub fn parameter_count(&self) -> usize {
        self.mlps()
            .iter()
            .flat_map(|m| [&m.first, &m.second])
            .map(|l| l.weight.len() + l.bias.len())
            .sum()
    }

    /// Checks every layer's shape against `hidden` and `steps`, and that every weight is
    /// finite; the error names the layer.
    pub fn check(&self) -> Result<(), String> {
        let h = self.hidden;
        if h == 0 || h > MAX_HIDDEN {
            return Err(format!("hidden width {h}: must be 1 to {MAX_HIDDEN}"));
        }
        if self.steps.len() > MAX_STEPS {
            return Err(format!(
                "{} message-passing steps: at most {MAX_STEPS}",
                self.steps.len()
            ));
        }
        if !(self.output_scale.is_finite() && self.output_scale > 0.0) {
            return Err(format!(
                "output_scale {}: must be a positive number",
                self.output_scale
            ));
        }
        for (name, scale, len) in [
            ("node_scale", &self.node_scale, NODE_FEATURES),
            ("edge_scale", &self.edge_scale, EDGE_FEATURES),
            ("body_scale", &self.body_scale, BODY_FEATURES),
        ] {
            if scale.len() != len || !scale.iter().all(|v| v.is_finite()) {
                return Err(format!("{name}: needs {len} finite numbers"));
            }
        }
        self.node_encoder
            .check("node_encoder", NODE_FEATURES, h, h)?;
        self.edge_encoder
            .check("edge_encoder", EDGE_FEATURES, h, h)?;
        self.body_encoder
            .check("body_encoder", BODY_FEATURES, h, h)?;
        let node_in = self.node_update_inputs();
        for (k, s) in self.steps.iter().enumerate() {
            s.edge.check(&format!("steps[{k}].edge"), 3 * h, h, h)?;
            s.node.check(&format!("steps[{k}].node"), node_in, h, h)?;
        }
        self.decoder.check("decoder", h, h, OUTPUTS)?;
        if let Some(w) = &self.world {
            w.params().check().map_err(|e| format!("world: {e}"))?;
            if w.scale.len() != WORLD_FEATURES || !w.scale.iter().all(|v| v.is_finite()) {
                return Err(format!(
                    "world.scale: needs {WORLD_FEATURES} finite numbers"
                ));
            }
            w.encoder.check("world.encoder", WORLD_FEATURES, h, h)?;
            if w.steps.len() != self.steps.len() {
                return Err(format!(
                    "world.steps: {} steps for a network of {}",
                    w.steps.len(),
                    self.steps.len()
                ));
            }
            for (k, m) in w.steps.iter().enumerate() {
                m.check(&format!("world.steps[{k}]"), 3 * h, h, h)?;
            }
        }
        Ok(())
    }

    /// The forward pass: `out[i] = Δx_i/ℓ` for every node of `graph` (`graph` consistent, as
    /// [`Graph::check`] says). Compiles the network each call; the solver keeps a
    /// [`Compiled`] instead.
    pub fn forward(&self, graph: &Graph<'_>, scratch: &mut Scratch, out: &mut [[f32; OUTPUTS]]) {
        self.compile().forward(graph, scratch, out, false);
    }

    /// The network laid out for the forward pass.
    pub fn compile(&self) -> Compiled {
        let m = |m: &Mlp| CompiledMlp {
            first: CompiledLinear::of(&m.first),
            second: CompiledLinear::of(&m.second),
        };
        Compiled {
            hidden: self.hidden,
            node_encoder: m(&self.node_encoder),
            edge_encoder: m(&self.edge_encoder),
            body_encoder: m(&self.body_encoder),
            steps: self
                .steps
                .iter()
                .map(|s| (m(&s.edge), m(&s.node)))
                .collect(),
            decoder: m(&self.decoder),
            node_scale: self.node_scale.clone(),
            edge_scale: self.edge_scale.clone(),
            body_scale: self.body_scale.clone(),
            output_scale: self.output_scale,
            world: self.world.as_ref().map(|w| CompiledWorld {
                encoder: m(&w.encoder),
                steps: w.steps.iter().map(m).collect(),
                scale: w.scale.clone(),
            }),
        }
    }
}

/// A dense layer with its weights column by column (`inputs` rows of `outputs`), so that
/// `y = b + Σ_k W[:, k]·x_k` runs as vector adds over the outputs. The sum runs over `k` in
/// order for every output, as [`Linear`]'s definition does.
#[derive(Clone, Debug)]
struct CompiledLinear {
    outputs: usize,
    columns: Vec<f32>,
    bias: Vec<f32>,
}

impl CompiledLinear {
    fn of(l: &Linear) -> Self {
        let mut columns = vec![0.0; l.inputs * l.outputs];
        for o in 0..l.outputs {
            for k in 0..l.inputs {
                columns[k * l.outputs + o] = l.weight[o * l.inputs + k];
            }
        }
        Self {
            outputs: l.outputs,
            columns,
            bias: l.bias.clone(),
        }
    }

    #[inline]
    fn apply(&self, x: &[f32], out: &mut [f32]) {
        out.copy_from_slice(&self.bias);
        for (column, &v) in self.columns.chunks_exact(self.outputs).zip(x) {
            for (o, w) in out.iter_mut().zip(column) {
                *o += w * v;
            }
        }
    }
}

#[derive(Clone, Debug)]
struct CompiledMlp {
    first: CompiledLinear,
    second: CompiledLinear,
}

impl CompiledMlp {
    #[inline]
    fn apply(&self, x: &[f32], out: &mut [f32]) {
        let mut h = [0.0f32; MAX_HIDDEN];
        let h = &mut h[..self.first.outputs];
        self.first.apply(x, h);
        for v in h.iter_mut() {
            *v = v.max(0.0);
        }
        self.second.apply(h, out);
    }
}

/// A [`Gnn`] laid out for its forward pass ([`Gnn::compile`]).
#[derive(Clone, Debug)]
pub struct Compiled {
    hidden: usize,
    node_encoder: CompiledMlp,
    edge_encoder: CompiledMlp,
    body_encoder: CompiledMlp,
    steps: Vec<(CompiledMlp, CompiledMlp)>,
    decoder: CompiledMlp,
    node_scale: Vec<f32>,
    edge_scale: Vec<f32>,
    body_scale: Vec<f32>,
    output_scale: f32,
    world: Option<CompiledWorld>,
}

#[derive(Clone, Debug)]
struct CompiledWorld {
    encoder: CompiledMlp,
    steps: Vec<CompiledMlp>,
    scale: Vec<f32>,
}

/// Rows per parallel task of the forward pass.
const ROWS_PER_TASK: usize = 512;

/// Runs `f(row, out_row)` over the rows of `out` (`width` wide), on rayon's threads when
/// `parallel`. Each row's numbers do not depend on the thread.
fn rows(out: &mut [f32], width: usize, parallel: bool, f: impl Fn(usize, &mut [f32]) + Sync) {
    use rayon::prelude::*;
    if parallel {
        out.par_chunks_mut(width * ROWS_PER_TASK)
            .enumerate()
            .for_each(|(t, chunk)| {
                for (r, row) in chunk.chunks_exact_mut(width).enumerate() {
                    f(t * ROWS_PER_TASK + r, row);
                }
            });
    } else {
        for (r, row) in out.chunks_exact_mut(width).enumerate() {
            f(r, row);
        }
    }
}

impl Compiled {
    /// The forward pass ([`Gnn::forward`]); allocation-free once `scratch` has held a graph
    /// this size. `parallel` splits the rows among rayon's threads, with the same numbers.
    pub fn forward(
        &self,
        graph: &Graph<'_>,
        scratch: &mut Scratch,
        out: &mut [[f32; OUTPUTS]],
        parallel: bool,
    ) {
        let h = self.hidden;
        let n = graph.nodes();
        let e = graph.edges.len();
        scratch.node.resize(n * h, 0.0);
        scratch.edge.resize(e * h, 0.0);
        scratch.body.clear();
        scratch.body.resize(n * h, 0.0);
        scratch.sum.resize(n * h, 0.0);
        let scaled = |f: &[f32], k: &[f32], buf: &mut [f32]| {
            for ((s, v), c) in buf.iter_mut().zip(f).zip(k) {
                *s = v * c;
            }
        };
        rows(&mut scratch.node, h, parallel, |i, row| {
            let mut buf = [0.0f32; NODE_FEATURES];
            let f = &graph.node_features[i * NODE_FEATURES..(i + 1) * NODE_FEATURES];
            scaled(f, &self.node_scale, &mut buf);
            self.node_encoder.apply(&buf, row);
        });
        rows(&mut scratch.edge, h, parallel, |k, row| {
            let mut buf = [0.0f32; EDGE_FEATURES];
            let f = &graph.edge_features[k * EDGE_FEATURES..(k + 1) * EDGE_FEATURES];
            scaled(f, &self.edge_scale, &mut buf);
            self.edge_encoder.apply(&buf, row);
        });
        for (&i, f) in graph
            .body_nodes
            .iter()
            .zip(graph.body_features.chunks_exact(BODY_FEATURES))
        {
            let i = i as usize;
            let mut buf = [0.0f32; BODY_FEATURES];
            scaled(f, &self.body_scale, &mut buf);
            self.body_encoder
                .apply(&buf, &mut scratch.body[i * h..(i + 1) * h]);
        }
        let world = self
            .world
            .as_ref()
            .filter(|_| !graph.world_edges.is_empty());
        if let Some(w) = world {
            scratch.world.resize(graph.world_edges.len() * h, 0.0);
            rows(&mut scratch.world, h, parallel, |k, row| {
                let mut buf = [0.0f32; WORLD_FEATURES];
                let f = &graph.world_features[k * WORLD_FEATURES..(k + 1) * WORLD_FEATURES];
                scaled(f, &w.scale, &mut buf);
                w.encoder.apply(&buf, row);
            });
        }
        scratch.world_sum.clear();
        if self.world.is_some() {
            scratch.world_sum.resize(n * h, 0.0);
        }
        let sum_into = |sum: &mut [f32], edges: &[[u32; 2]], latents: &[f32]| {
            sum.iter_mut().for_each(|v| *v = 0.0);
            for (k, &[_, j]) in edges.iter().enumerate() {
                let j = j as usize;
                for (s, l) in sum[j * h..(j + 1) * h]
                    .iter_mut()
                    .zip(&latents[k * h..(k + 1) * h])
                {
                    *s += l;
                }
            }
        };
        for (step, (edge_mlp, node_mlp)) in self.steps.iter().enumerate() {
            let node = &scratch.node;
            rows(&mut scratch.edge, h, parallel, |k, row| {
                edge_update(edge_mlp, graph.edges[k], node, h, row)
            });
            if let Some(w) = world {
                let mlp = &w.steps[step];
                rows(&mut scratch.world, h, parallel, |k, row| {
                    edge_update(mlp, graph.world_edges[k], node, h, row)
                });
                sum_into(&mut scratch.world_sum, graph.world_edges, &scratch.world);
            }
            sum_into(&mut scratch.sum, graph.edges, &scratch.edge);
            let (sum, world_sum, body) = (&scratch.sum, &scratch.world_sum, &scratch.body);
            let with_world = self.world.is_some();
            rows(&mut scratch.node, h, parallel, |i, row| {
                let mut input = [0.0f32; 4 * MAX_HIDDEN];
                let mut delta = [0.0f32; MAX_HIDDEN];
                input[..h].copy_from_slice(row);
                input[h..2 * h].copy_from_slice(&sum[i * h..(i + 1) * h]);
                let mut at = 2 * h;
                if with_world {
                    input[at..at + h].copy_from_slice(&world_sum[i * h..(i + 1) * h]);
                    at += h;
                }
                input[at..at + h].copy_from_slice(&body[i * h..(i + 1) * h]);
                node_mlp.apply(&input[..at + h], &mut delta[..h]);
                for (l, d) in row.iter_mut().zip(&delta[..h]) {
                    *l += d;
                }
            });
        }
        for (i, o) in out.iter_mut().enumerate().take(n) {
            self.decoder.apply(&scratch.node[i * h..(i + 1) * h], o);
            for v in o.iter_mut() {
                *v *= self.output_scale;
            }
        }
    }
}

/// One edge's message-passing update: `e += MLP[e, n_i, n_j]`, `e` the edge's latent `row`,
/// `node` every node's latent (`hidden` wide).
#[inline]
fn edge_update(mlp: &CompiledMlp, [i, j]: [u32; 2], node: &[f32], h: usize, row: &mut [f32]) {
    let (i, j) = (i as usize, j as usize);
    let mut input = [0.0f32; 3 * MAX_HIDDEN];
    let mut delta = [0.0f32; MAX_HIDDEN];
    input[..h].copy_from_slice(row);
    input[h..2 * h].copy_from_slice(&node[i * h..(i + 1) * h]);
    input[2 * h..3 * h].copy_from_slice(&node[j * h..(j + 1) * h]);
    mlp.apply(&input[..3 * h], &mut delta[..h]);
    for (l, d) in row.iter_mut().zip(&delta[..h]) {
        *l += d;
    }
}

/// One substep's graph, as the network reads it (see the [module docs](self)).
#[derive(Clone, Copy, Debug)]
pub struct Graph<'a> {
    /// `nodes × NODE_FEATURES`, node by node.
    pub node_features: &'a [f32],
    /// Directed mesh edges `[from, to]`.
    pub edges: &'a [[u32; 2]],
    /// `edges × EDGE_FEATURES`, edge by edge.
    pub edge_features: &'a [f32],
    /// The node of each body edge (at most one per node).
    pub body_nodes: &'a [u32],
    /// `body_nodes × BODY_FEATURES`.
    pub body_features: &'a [f32],
    /// Directed world edges `[from, to]` (empty without).
    pub world_edges: &'a [[u32; 2]],
    /// `world_edges × WORLD_FEATURES`.
    pub world_features: &'a [f32],
}

impl Graph<'_> {
    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.node_features.len() / NODE_FEATURES
    }

    /// Whether the arrays fit together: whole rows, indices in range, one body edge per node
    /// at most.
    pub fn check(&self) -> Result<(), String> {
        let n = self.nodes();
        if self.node_features.len() != n * NODE_FEATURES
            || self.edge_features.len() != self.edges.len() * EDGE_FEATURES
            || self.body_features.len() != self.body_nodes.len() * BODY_FEATURES
            || self.world_features.len() != self.world_edges.len() * WORLD_FEATURES
        {
            return Err("feature arrays of the wrong length".into());
        }
        if self
            .edges
            .iter()
            .chain(self.world_edges)
            .flatten()
            .any(|&i| i as usize >= n)
        {
            return Err("an edge refers to a node that does not exist".into());
        }
        let mut seen = vec![false; n];
        for &i in self.body_nodes {
            let Some(s) = seen.get_mut(i as usize) else {
                return Err("a body edge refers to a node that does not exist".into());
            };
            if std::mem::replace(s, true) {
                return Err(format!("node {i} has two body edges"));
            }
        }
        Ok(())
    }
}

/// The forward pass's buffers, reused from substep to substep.
#[derive(Clone, Debug, Default)]
pub struct Scratch {
    node: Vec<f32>,
    edge: Vec<f32>,
    body: Vec<f32>,
    sum: Vec<f32>,
    world: Vec<f32>,
    world_sum: Vec<f32>,
}

impl Scratch {
    /// Room for a graph of `nodes` nodes, `edges` mesh edges and up to `world_edges` world
    /// edges, `hidden` wide, so that the forward pass does not allocate when the number of
    /// world edges grows from substep to substep.
    pub fn reserve(&mut self, nodes: usize, edges: usize, world_edges: usize, hidden: usize) {
        let more =
            |v: &mut Vec<f32>, rows: usize| v.reserve((rows * hidden).saturating_sub(v.len()));
        more(&mut self.node, nodes);
        more(&mut self.edge, edges);
        more(&mut self.body, nodes);
        more(&mut self.sum, nodes);
        more(&mut self.world, world_edges);
        more(&mut self.world_sum, nodes);
    }
}

/// What a model was trained for: a scene whose solver differs is refused (or falls back, as the
/// scene says), since the network's inputs are scaled by the substep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainedFor {
    /// Substeps per frame.
    pub substeps: u32,
    /// Frames per second.
    pub fps: f32,
}

/// The loss terms of the training, each a mean over the training samples (dimensionless, in
/// units of the edge length where a length).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Losses {
    /// Supervised: `|Δx − Δx*|²/ℓ²` against the converged projection.
    pub supervised: f32,
    /// Stretch: the squared edge strain `(|x_j − x_i|/L − 1)²` after the prediction.
    pub stretch: f32,
    /// Bending: the squared change of each hinge's wing-tip distance from its rest value, over
    /// `ℓ²` (an isometric stand-in for the dihedral angle).
    pub bending: f32,
    /// Collision: the squared depth below the collision thickness after the prediction, `/ℓ²`.
    pub collision: f32,
    /// Inertia: the squared move `|Δx|²/ℓ²` (the prediction's departure from free flight).
    pub inertia: f32,
    /// The weighted sum the optimiser minimised.
    pub total: f32,
}

/// How a model was trained, as `drape train` recorded it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainingRecord {
    /// The scenes baked for the data, one line each.
    pub scenes: Vec<String>,
    /// Training samples (substeps).
    pub samples: usize,
    /// Optimiser steps.
    pub epochs: usize,
    /// Learning rate of the optimiser (AdamW).
    pub learning_rate: f64,
    /// The loss weights `[supervised, stretch, bending, collision, inertia]`.
    pub weights: [f32; 5],
    /// Iterations per substep of the converged teacher bakes.
    pub teacher_iterations: u32,
    /// The losses before the first step, on the training samples.
    pub initial: Losses,
    /// The losses after the last step.
    pub final_losses: Losses,
    /// The losses after the last step on the held-out samples (scenes not trained on).
    pub held_out: Losses,
    /// The losses before the first step on the held-out samples.
    #[serde(default)]
    pub held_out_initial: Losses,
}

/// A trained model as stored on disk (RON, `NAME.ron` in the library's `models/` folder).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelFile {
    /// [`MODEL_FORMAT_VERSION`] of the build that wrote it.
    pub format_version: u32,
    /// Drape's version that wrote it.
    pub drape_version: String,
    /// What the model was trained for.
    pub trained_for: TrainedFor,
    /// A hash of the training data (FNV-1a over the samples' features and targets, hex).
    pub data_hash: String,
    /// How it was trained.
    pub training: TrainingRecord,
    /// The network.
    pub network: Gnn,
}

/// A model file that cannot be used; every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    /// The file cannot be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The model file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// No model file there: none has been trained under that name yet.
    #[error(
        "{path}: no such model yet; train one with `drape train --out NAME` (it writes the preset library's models/NAME.ron), or point `neural.model` at a model file"
    )]
    Missing {
        /// The model file looked for.
        path: PathBuf,
    },
    /// The file is not a model file (corrupt or another kind of file).
    #[error("{path}: not a Drape model file: {problem}")]
    Parse {
        /// The model file.
        path: PathBuf,
        /// What the parser said.
        problem: String,
    },
    /// Written by a newer Drape.
    #[error(
        "{path}: model format {found} is newer than this Drape reads ({supported}); retrain it with `drape train` or update Drape"
    )]
    Newer {
        /// The model file.
        path: PathBuf,
        /// The file's format.
        found: u32,
        /// What this build reads.
        supported: u32,
    },
    /// The network's layers do not fit together.
    #[error("{path}: broken network: {problem}")]
    Invalid {
        /// The model file.
        path: PathBuf,
        /// Which layer and how.
        problem: String,
    },
    /// Trained for other solver settings than the scene's.
    #[error("{path}: trained for {trained}, but the scene runs {scene}; retrain it for these settings with `drape train`")]
    Mismatch {
        /// The model file.
        path: PathBuf,
        /// What it was trained for.
        trained: String,
        /// What the scene runs.
        scene: String,
    },
}

impl ModelFile {
    /// Reads and checks a model file.
    pub fn load(path: &Path) -> Result<Self, ModelError> {
        let text = std::fs::read_to_string(path).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => ModelError::Missing { path: path.into() },
            _ => ModelError::Io {
                path: path.into(),
                source,
            },
        })?;
        Self::parse(&text, path)
    }

    /// Parses and checks a model file's text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<Self, ModelError> {
        // The version first, so that a newer file is named as such and not as a parse error
        // of a field this build does not know.
        #[derive(Deserialize)]
        struct Version {
            format_version: u32,
        }
        let parse = |problem: String| ModelError::Parse {
            path: path.into(),
            problem,
        };
        let options = ron::Options::default();
        let version: Version = options
            .from_str::<ron::Value>(text)
            .map_err(|e| parse(e.to_string()))?
            .into_rust()
            .map_err(|e| parse(format!("no format_version ({e})")))?;
        if version.format_version > MODEL_FORMAT_VERSION {
            return Err(ModelError::Newer {
                path: path.into(),
                found: version.format_version,
                supported: MODEL_FORMAT_VERSION,
            });
        }
        let file: ModelFile = options.from_str(text).map_err(|e| parse(e.to_string()))?;
        file.network
            .check()
            .map_err(|problem| ModelError::Invalid {
                path: path.into(),
                problem,
            })?;
        Ok(file)
    }

    /// Refuses a model trained for other settings than `substeps` at `fps`.
    pub fn check_for(&self, path: &Path, substeps: u32, fps: f32) -> Result<(), ModelError> {
        let t = &self.trained_for;
        if t.substeps != substeps || (t.fps - fps).abs() > 1e-3 * fps.abs() {
            return Err(ModelError::Mismatch {
                path: path.into(),
                trained: format!("{} substeps at {} fps", t.substeps, t.fps),
                scene: format!("{substeps} substeps at {fps} fps"),
            });
        }
        Ok(())
    }

    /// Writes the model atomically (a temporary file beside it, then a rename), creating the
    /// folder.
    pub fn save(&self, path: &Path) -> Result<(), ModelError> {
        let io = |source| ModelError::Io {
            path: path.into(),
            source,
        };
        let text = ron::ser::to_string_pretty(self, ron::ser::PrettyConfig::default())
            .map_err(|e| io(std::io::Error::other(e.to_string())))?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let tmp = path.with_extension("ron.tmp");
        std::fs::write(&tmp, text).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Gnn {
        let mut g = Gnn::zeros(4, 1);
        // Deterministic, non-trivial weights.
        for (k, mlp) in g.mlps_mut().into_iter().enumerate() {
            let l = &mut mlp.first;
            for (m, w) in l.weight.iter_mut().chain(l.bias.iter_mut()).enumerate() {
                *w = (((k * 31 + m * 7) % 13) as f32 - 6.0) * 0.05;
            }
            let l = &mut mlp.second;
            for (m, w) in l.weight.iter_mut().chain(l.bias.iter_mut()).enumerate() {
                *w = (((k * 31 + m * 7) % 13) as f32 - 6.0) * 0.05;
            }
        }
        g
    }

    fn graph_of<'a>(
        nf: &'a [f32],
        ef: &'a [f32],
        edges: &'a [[u32; 2]],
        bf: &'a [f32],
    ) -> Graph<'a> {
        Graph {
            node_features: nf,
            edges,
            edge_features: ef,
            body_nodes: &[1],
            body_features: bf,
            world_edges: &[],
            world_features: &[],
        }
    }

    #[test]
    fn a_zero_network_predicts_nothing_and_a_tiny_one_is_deterministic() {
        let nf: Vec<f32> = (0..3 * NODE_FEATURES).map(|i| i as f32 * 0.01).collect();
        let edges = [[0, 1], [1, 0], [1, 2], [2, 1]];
        let ef: Vec<f32> = (0..4 * EDGE_FEATURES)
            .map(|i| (i as f32 * 0.3).sin())
            .collect();
        let bf = [0.1, 0.0, 1.0, 0.0, 0.0, -0.2, 0.0];
        let g = graph_of(&nf, &ef, &edges, &bf);
        g.check().unwrap();
        let mut out = vec![[9.0; 3]; 3];
        Gnn::zeros(4, 2).forward(&g, &mut Scratch::default(), &mut out);
        assert!(out.iter().flatten().all(|&v| v == 0.0));
        let net = tiny();
        net.check().unwrap();
        let (mut a, mut b) = (vec![[0.0; 3]; 3], vec![[0.0; 3]; 3]);
        let mut s = Scratch::default();
        net.forward(&g, &mut s, &mut a);
        net.forward(&g, &mut s, &mut b);
        assert_eq!(a, b);
        assert!(a.iter().flatten().any(|&v| v != 0.0));
        // The body edge reaches node 1 only before message passing spreads it.
        let g2 = Graph {
            body_nodes: &[],
            body_features: &[],
            ..g
        };
        net.forward(&g2, &mut s, &mut b);
        assert_ne!(a[1], b[1]);
    }

    #[test]
    fn broken_graphs_and_networks_are_named() {
        let nf = vec![0.0; 2 * NODE_FEATURES];
        let ef = vec![0.0; EDGE_FEATURES];
        let bad = [[0, 5]];
        let g = graph_of(&nf, &ef, &bad, &[0.0; BODY_FEATURES]);
        assert!(g.check().unwrap_err().contains("does not exist"));
        let mut net = tiny();
        net.steps[0].node.first.weight.pop();
        assert!(net.check().unwrap_err().starts_with("steps[0].node.first"));
        let mut net = tiny();
        net.decoder.second.bias[0] = f32::NAN;
        assert!(net.check().unwrap_err().contains("finite"));
    }

    fn file() -> ModelFile {
        ModelFile {
            format_version: MODEL_FORMAT_VERSION,
            drape_version: crate::VERSION.into(),
            trained_for: TrainedFor {
                substeps: 10,
                fps: 24.0,
            },
            data_hash: "0".into(),
            training: TrainingRecord::default(),
            network: tiny(),
        }
    }

    #[test]
    fn a_model_file_round_trips_and_bad_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("models/m.ron");
        let f = file();
        f.save(&path).unwrap();
        assert_eq!(ModelFile::load(&path).unwrap(), f);
        assert!(!path.with_extension("ron.tmp").exists());

        let text = std::fs::read_to_string(&path).unwrap();
        let newer = text.replacen(
            &format!("format_version: {MODEL_FORMAT_VERSION}"),
            "format_version: 99",
            1,
        );
        let e = ModelFile::parse(&newer, &path).unwrap_err().to_string();
        assert!(e.contains("m.ron") && e.contains("newer"), "{e}");
        let e = ModelFile::parse(&text[..text.len() / 2], &path)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("m.ron") && e.contains("not a Drape model"),
            "{e}"
        );
        let e = ModelFile::load(&dir.path().join("models/none.ron"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("none.ron") && e.contains("no such model yet") && e.contains("drape train"),
            "{e}"
        );
        let e = ModelFile::parse("(name: \"cotton\")", &path)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a Drape model"), "{e}");
        let e = f.check_for(&path, 20, 24.0).unwrap_err().to_string();
        assert!(
            e.contains("trained for 10 substeps") && e.contains("20 substeps"),
            "{e}"
        );
        f.check_for(&path, 10, 24.0).unwrap();
    }

    #[test]
    fn a_version_1_file_reads_as_a_network_without_world_edges() {
        let f = file();
        let text = ron::ser::to_string_pretty(&f, ron::ser::PrettyConfig::default()).unwrap();
        let v1: Vec<&str> = text
            .lines()
            .filter(|l| !l.trim_start().starts_with("world:"))
            .collect();
        let v1 = v1.join("\n").replacen(
            &format!("format_version: {MODEL_FORMAT_VERSION}"),
            "format_version: 1",
            1,
        );
        assert!(!v1.contains("world"));
        let back = ModelFile::parse(&v1, Path::new("old.ron")).unwrap();
        assert_eq!(back.network, f.network);
        assert_eq!(back.network.world, None);
    }

    #[test]
    fn world_edges_carry_messages_between_nodes_the_mesh_does_not_join() {
        let mut net = tiny().with_world_edges(world::WorldParams::default());
        for (k, mlp) in net.mlps_mut().into_iter().enumerate() {
            for l in [&mut mlp.first, &mut mlp.second] {
                for (m, w) in l.weight.iter_mut().chain(l.bias.iter_mut()).enumerate() {
                    *w = (((k * 17 + m * 5) % 11) as f32 - 5.0) * 0.07;
                }
            }
        }
        net.check().unwrap();
        assert_eq!(net.node_update_inputs(), 16);
        // Nodes 0–1 and 2–3 are two mesh pieces; a world edge joins 1 to 2 (both ways).
        let nf: Vec<f32> = (0..4 * NODE_FEATURES)
            .map(|i| (i as f32 * 0.7).cos())
            .collect();
        let edges = [[0, 1], [1, 0], [2, 3], [3, 2]];
        let ef: Vec<f32> = (0..4 * EDGE_FEATURES)
            .map(|i| (i as f32 * 0.3).sin())
            .collect();
        let wf: Vec<f32> = (0..2 * WORLD_FEATURES).map(|i| 0.1 * i as f32).collect();
        let joined = Graph {
            node_features: &nf,
            edges: &edges,
            edge_features: &ef,
            body_nodes: &[],
            body_features: &[],
            world_edges: &[[1, 2], [2, 1]],
            world_features: &wf,
        };
        joined.check().unwrap();
        let apart = Graph {
            world_edges: &[],
            world_features: &[],
            ..joined
        };
        let (mut a, mut b) = (vec![[0.0; 3]; 4], vec![[0.0; 3]; 4]);
        let mut s = Scratch::default();
        net.forward(&joined, &mut s, &mut a);
        net.forward(&apart, &mut s, &mut b);
        assert!(a.iter().flatten().all(|v| v.is_finite()));
        // One step: the world edge reaches its two ends only.
        assert_ne!(a[1], b[1]);
        assert_ne!(a[2], b[2]);
        assert_eq!(a[0], b[0]);
        assert_eq!(a[3], b[3]);
        // Broken world weights are named.
        let mut broken = net.clone();
        broken.world.as_mut().unwrap().steps.clear();
        assert!(broken.check().unwrap_err().starts_with("world.steps"));
        let mut broken = net;
        broken.world.as_mut().unwrap().radius = -1.0;
        assert!(broken.check().unwrap_err().contains("radius"));
    }
}
