//! The GPU backend of the solver (issue 37): the substep pipeline on wgpu compute, with the
//! CPU solver as the reference and the fallback.
//!
//! # What runs on the GPU
//!
//! One frame is one command buffer: for every substep, *predict* (gravity, pins on their
//! targets), the multipliers reset, `iterations` forward-and-backward sweeps over the stretch,
//! the triangle strains (shear, or warp and weft with the per-triangle membrane) and the bends,
//! each followed by the body contacts, and then *velocities* (with damping). The particle state
//! stays on the GPU and is read back once per frame into the solver's [`Particles`], where the
//! checks, the stats and the exports read it as they read the CPU's.
//!
//! - **Same physics.** The same XPBD updates as [`crate::constraints`], in `f32`, with the
//!   same compliances (m/N, 1/(N·m)) and `λ` reset every substep (`step.wgsl`).
//! - **Coloured Gauss–Seidel.** Each kind's constraints are coloured greedily on the CPU so that
//!   no two of one colour share a particle; one dispatch per colour projects them all with no
//!   atomics, and the result does not depend on the order the GPU runs the threads in. A
//!   backward sweep runs the colours in reverse order, as the CPU's sweeps reverse theirs.
//! - **The body** is a signed-distance grid ([`DistanceGrid`]) built once from the collider
//!   (the pseudo-normal sign of [`BodyCollider::closest`]) and sampled trilinearly, an O(1)
//!   look-up per particle. A particle within the collision thickness is pushed out along the
//!   field's gradient, and the tangential part of its move over the substep is held back by
//!   Coulomb friction against that push, in the same projection.
//!
//! # What does not (yet), and falls back to the CPU
//!
//! [`GpuStep::supports`] names the first thing a scene uses that the GPU path lacks: a moving
//! body, soft attachments, tethers, span limits, seams, body-bound pins, self-collision, the
//! pre-roll's settling, an open body. The solver then runs on the CPU and says why
//! ([`super::Solver::backend_notes`]).

use std::borrow::Cow;

use wgpu::util::DeviceExt;

use crate::collide::BodyCollider;
use crate::math::{Real, Vec3};

use super::line_stretch::LineStretch;
use super::{ClothModel, Membrane, Particles, SolverSettings};

/// Threads per workgroup of every kernel (`@workgroup_size(64)` in `step.wgsl`).
const WORKGROUP: u32 = 64;
/// The most workgroups along one dispatch axis (WebGPU's limit); larger batches use a second
/// axis.
const MAX_WORKGROUPS_X: u32 = 65_535;
/// Stride of the per-batch uniforms (bytes): the largest `min_uniform_buffer_offset_alignment`
/// WebGPU allows.
const BATCH_STRIDE: u64 = 256;
/// Storage buffers bound per kernel (`step.wgsl`'s group 0).
const STORAGE_BUFFERS: u32 = 8;
/// The most colours one constraint kind may need (the greedy colouring's bit mask).
pub const MAX_COLOURS: usize = 64;

/// Grid points along the body's longest side in its signed-distance grid: about 7 mm cells
/// for the standard scene's 0.6 m sphere, whose trilinear distance is then within 0.03 mm of
/// the sphere's.
pub const GRID_POINTS_LONGEST: usize = 96;
/// How far the distance grid reaches past the body on every side (m): further than any
/// particle within the collision thickness can be.
pub const GRID_PAD_M: Real = 0.05;

/// Why the GPU backend is not used.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// No wgpu adapter (no GPU, no driver, no software Vulkan).
    #[error("no GPU adapter found ({0})")]
    NoAdapter(String),
    /// The adapter refused a device with the limits the solver needs.
    #[error("the GPU adapter '{adapter}' gave no device: {reason}")]
    NoDevice {
        /// The adapter's name.
        adapter: String,
        /// wgpu's reason.
        reason: String,
    },
    /// The scene uses something the GPU path does not have yet.
    #[error("{0}")]
    Unsupported(String),
    /// Reading the state back failed (a lost device).
    #[error("reading the GPU state back failed: {0}")]
    Readback(String),
    /// The device refused the solver's buffers, kernels or commands.
    #[error("the GPU adapter '{adapter}' refused the solver: {reason}")]
    Device {
        /// The adapter's name.
        adapter: String,
        /// wgpu's validation error.
        reason: String,
    },
}

/// One particle as the GPU holds it (80 bytes; `Particle` in `step.wgsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct GpuParticle {
    x: [f32; 3],
    w: f32,
    x_prev: [f32; 3],
    damping: f32,
    v: [f32; 3],
    friction: f32,
    target: [f32; 3],
    pinned: f32,
    contact_normal: [f32; 3],
    contact_push: f32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct GpuDistance {
    a: u32,
    b: u32,
    rest: f32,
    compliance: f32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct GpuStrain {
    i: [u32; 3],
    kind: u32,
    d: [f32; 4],
    compliance: f32,
    pad: [f32; 3],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct GpuBend {
    p: [u32; 4],
    rest: f32,
    compliance: f32,
    pad: [f32; 2],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct GpuParams {
    gravity: [f32; 3],
    h: f32,
    sdf_origin: [f32; 3],
    sdf_cell: f32,
    sdf_dims: [u32; 3],
    particles: u32,
    thickness: f32,
    stretch_relaxation: f32,
    line_vertices_at: u32,
    pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct GpuLineSlot {
    n: [f32; 3],
    diag: f32,
    rhs: f32,
    upper: f32,
    pad: [f32; 2],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
struct GpuBatch {
    start: u32,
    count: u32,
    lambda_base: u32,
    pad: u32,
}

/// A body's signed distance (m) on a regular grid: negative inside a closed body.
#[derive(Clone, Debug)]
pub struct DistanceGrid {
    /// The first grid point (m).
    pub origin_m: Vec3,
    /// The spacing of the grid points (m).
    pub cell_m: Real,
    /// Grid points along x, y and z.
    pub dims: [usize; 3],
    /// The signed distances (m), x fastest, then y, then z.
    pub values_m: Vec<Real>,
}

impl DistanceGrid {
    /// The grid of `body` at its current pose: [`GRID_POINTS_LONGEST`] points along its
    /// longest side and [`GRID_PAD_M`] beyond it on every side. Each point is one closest-point
    /// query (parallel over z-slices with rayon).
    pub fn of_body(body: &BodyCollider) -> Self {
        use rayon::prelude::*;
        let (lo, hi) = body.vertices().iter().fold(
            (Vec3::splat(Real::MAX), Vec3::splat(Real::MIN)),
            |(lo, hi), v| (lo.min(*v), hi.max(*v)),
        );
        let longest = (hi - lo).max_element().max(1.0e-3);
        let cell_m = longest / (GRID_POINTS_LONGEST - 1) as Real;
        let origin_m = lo - Vec3::splat(GRID_PAD_M);
        let span = hi - lo + Vec3::splat(2.0 * GRID_PAD_M);
        let dims = [span.x, span.y, span.z].map(|s| (s / cell_m).ceil() as usize + 1);
        let [nx, ny, nz] = dims;
        let values_m = (0..nz)
            .into_par_iter()
            .flat_map_iter(|k| {
                let mut slice = Vec::with_capacity(nx * ny);
                for j in 0..ny {
                    for i in 0..nx {
                        let p = origin_m + Vec3::new(i as Real, j as Real, k as Real) * cell_m;
                        slice.push(body.closest(p).signed_distance_m);
                    }
                }
                slice
            })
            .collect();
        Self {
            origin_m,
            cell_m,
            dims,
            values_m,
        }
    }

    /// The trilinear signed distance (m) at `p`, as the GPU samples it; `None` outside the
    /// grid.
    pub fn sample(&self, p: Vec3) -> Option<Real> {
        let g = (p - self.origin_m) / self.cell_m;
        let [nx, ny, nz] = self.dims;
        let hi = Vec3::new(nx as Real, ny as Real, nz as Real) - Vec3::splat(1.0001);
        if g.min_element() < 0.0 || g.x > hi.x || g.y > hi.y || g.z > hi.z || !g.is_finite() {
            return None;
        }
        let c = g.floor();
        let f = g - c;
        let (i, j, k) = (c.x as usize, c.y as usize, c.z as usize);
        let at = |di: usize, dj: usize, dk: usize| {
            self.values_m[(i + di) + nx * ((j + dj) + ny * (k + dk))]
        };
        let lerp = |a: Real, b: Real, t: Real| a + (b - a) * t;
        let x00 = lerp(at(0, 0, 0), at(1, 0, 0), f.x);
        let x10 = lerp(at(0, 1, 0), at(1, 1, 0), f.x);
        let x01 = lerp(at(0, 0, 1), at(1, 0, 1), f.x);
        let x11 = lerp(at(0, 1, 1), at(1, 1, 1), f.x);
        Some(lerp(lerp(x00, x10, f.y), lerp(x01, x11, f.y), f.z))
    }
}

/// A colouring: the constraints' order sorted by colour, and each colour's `(start, count)`
/// in it.
pub type Colouring = (Vec<usize>, Vec<(u32, u32)>);

/// Greedy colouring: a colour per constraint such that no two constraints of one colour share
/// a particle; returns the order of the constraints sorted by colour and each colour's
/// `(start, count)` in it. `None` when more than [`MAX_COLOURS`] colours are needed.
pub fn colour<const N: usize>(constraints: &[[u32; N]], particles: usize) -> Option<Colouring> {
    let mut used = vec![0u64; particles];
    let mut colour_of = Vec::with_capacity(constraints.len());
    let mut counts = [0u32; MAX_COLOURS];
    for c in constraints {
        let mask = c.iter().fold(0u64, |m, &p| m | used[p as usize]);
        let colour = mask.trailing_ones() as usize;
        if colour >= MAX_COLOURS {
            return None;
        }
        for &p in c {
            used[p as usize] |= 1 << colour;
        }
        colour_of.push(colour);
        counts[colour] += 1;
    }
    let colours = counts.iter().rposition(|&c| c > 0).map_or(0, |i| i + 1);
    let mut ranges = Vec::with_capacity(colours);
    let mut start = 0;
    for &count in &counts[..colours] {
        ranges.push((start, count));
        start += count;
    }
    let mut order: Vec<usize> = (0..constraints.len()).collect();
    order.sort_by_key(|&i| colour_of[i]);
    Some((order, ranges))
}

/// One kind's colours: the first batch (index into the batch uniforms) and how many.
#[derive(Clone, Copy, Debug, Default)]
struct Colours {
    first: usize,
    count: usize,
}

/// The GPU state and kernels of one solver.
pub struct GpuStep {
    device: wgpu::Device,
    queue: wgpu::Queue,
    adapter: String,
    predict: wgpu::ComputePipeline,
    distance: wgpu::ComputePipeline,
    tether: wgpu::ComputePipeline,
    strain: wgpu::ComputePipeline,
    bend: wgpu::ComputePipeline,
    contacts: wgpu::ComputePipeline,
    velocities: wgpu::ComputePipeline,
    state: wgpu::BindGroup,
    batch_group: wgpu::BindGroup,
    particles_buf: wgpu::Buffer,
    lambda_buf: wgpu::Buffer,
    params_buf: wgpu::Buffer,
    readback: wgpu::Buffer,
    batches: Vec<GpuBatch>,
    distances: Colours,
    tethers: Colours,
    strains: Colours,
    bends: Colours,
    has_body: bool,
    /// Extra passes of the line solves after the shear and bending (0 edge by edge).
    line_passes: u32,
    /// The host copy of the particles as the GPU last had them (targets and material values
    /// included).
    host: Vec<GpuParticle>,
    /// The host's state changed (a restore, a CPU frame, a pin moved): upload before the next
    /// frame.
    dirty: bool,
    /// The body's distance grid, for the check of the read-back state.
    grid: Option<DistanceGrid>,
    params: GpuParams,
}

impl std::fmt::Debug for GpuStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuStep")
            .field("adapter", &self.adapter)
            .field("particles", &self.host.len())
            .field("batches", &self.batches.len())
            .finish_non_exhaustive()
    }
}

impl GpuStep {
    /// The first thing in this model and these settings that the GPU path does not have, as a
    /// sentence; `None` when it has everything.
    pub fn supports(
        model: &ClothModel,
        settings: &SolverSettings,
        body: Option<&BodyCollider>,
        moving_body: bool,
    ) -> Option<String> {
        let lacks = |what: &str| Some(format!("the GPU backend does not handle {what} yet"));
        if moving_body {
            return lacks("a moving body");
        }
        if body.is_some_and(|b| !b.is_closed()) {
            return lacks("an open body (its signed distance is undefined)");
        }
        if !model.attach.is_empty() {
            return lacks("soft attachments");
        }
        if (model.tethers.iter()).any(|t| {
            model.mass_kg.get(t.anchor as usize) != Some(&0.0)
                && !model.pins.iter().any(|p| p.particle == t.anchor)
        }) {
            return lacks("tethers to a particle that is not pinned");
        }
        if !model.span_limits.is_empty() {
            return lacks("span limits");
        }
        if !model.seams.is_empty() {
            return lacks("seams");
        }
        // Pins bound to a static body keep the targets the model gave them.
        if moving_body && !model.body_bindings.is_empty() {
            return lacks("pins bound to a moving body");
        }
        if settings.self_collision {
            return lacks("self-collision");
        }
        if settings.neural.is_some() {
            return lacks("the hybrid solver's network");
        }
        None
    }

    /// Sets up the device, the kernels and the state for `model` at `particles`, against
    /// `body` at its current pose.
    ///
    /// With `lines` (the CPU's [`LineStretch`] of `model.stretch`, whose edges it sorted),
    /// the stretch is solved line by line as on the CPU, a thread per line of a family;
    /// without, edge by edge in colours.
    pub fn new(
        model: &ClothModel,
        particles: &Particles,
        settings: &SolverSettings,
        body: Option<&BodyCollider>,
        lines: Option<&LineStretch>,
    ) -> Result<Self, GpuError> {
        if let Some(why) = Self::supports(model, settings, body, false) {
            return Err(GpuError::Unsupported(why));
        }
        let n = particles.x.len();
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor {
            backends: wgpu::Backends::PRIMARY,
            ..wgpu::InstanceDescriptor::new_without_display_handle()
        });
        let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        }))
        .map_err(|e| GpuError::NoAdapter(e.to_string()))?;
        let info = adapter.get_info();
        let name = format!("{} ({:?}, {:?})", info.name, info.backend, info.device_type);
        let available = adapter.limits();
        if available.max_storage_buffers_per_shader_stage < STORAGE_BUFFERS {
            return Err(GpuError::NoDevice {
                adapter: name,
                reason: format!(
                    "it binds {} storage buffers per shader, the solver needs {STORAGE_BUFFERS}",
                    available.max_storage_buffers_per_shader_stage
                ),
            });
        }
        let required_limits = wgpu::Limits {
            max_storage_buffers_per_shader_stage: STORAGE_BUFFERS,
            max_storage_buffer_binding_size: available.max_storage_buffer_binding_size,
            max_buffer_size: available.max_buffer_size,
            ..wgpu::Limits::downlevel_defaults()
        };
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("drape solver"),
            required_limits,
            ..Default::default()
        }))
        .map_err(|e| GpuError::NoDevice {
            adapter: name.clone(),
            reason: e.to_string(),
        })?;
        // Errors are caught by the error scopes around the set-up and every frame; anything
        // else is logged, never a panic.
        device.on_uncaptured_error(std::sync::Arc::new(|e: wgpu::Error| {
            log::error!("GPU backend: {e}");
        }));
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);

        // Constraints, coloured and sorted by colour.
        let too_many = |kind: &str| {
            GpuError::Unsupported(format!(
                "the {kind} constraints need more than {MAX_COLOURS} colours"
            ))
        };
        let mut batches = Vec::new();
        let mut push_colours = |ranges: &[(u32, u32)], base: u32| {
            let first = batches.len();
            for &(start, count) in ranges {
                batches.push(GpuBatch {
                    start,
                    count,
                    lambda_base: base,
                    pad: 0,
                });
            }
            Colours {
                first,
                count: ranges.len(),
            }
        };
        let projected_stretch: &[super::Distance] = match model.membrane {
            Membrane::Edges => &model.stretch,
            Membrane::Triangles => &[],
        };
        let lines = lines.filter(|l| l.line_count() > 0 && !projected_stretch.is_empty());
        let pairs: Vec<[u32; 2]> = projected_stretch.iter().map(|c| c.particles).collect();
        let (order, ranges) = match lines {
            // The edges stay in the lines' order; the batches are the families.
            Some(l) => (
                (0..pairs.len()).collect(),
                (l.families().iter())
                    .map(|&(a, b)| (a as u32, (b - a) as u32))
                    .collect(),
            ),
            None => colour(&pairs, n).ok_or_else(|| too_many("stretch"))?,
        };
        let mut line_data: Vec<u32> = Vec::new();
        if let Some(l) = lines {
            line_data.extend(l.line_table().iter().flatten());
            line_data.extend_from_slice(l.vertices());
        }
        let line_vertices_at = lines.map_or(0, |l| 4 * l.line_count() as u32);
        let distances: Vec<GpuDistance> = (order.iter())
            .map(|&i| {
                let c = &projected_stretch[i];
                GpuDistance {
                    a: c.particles[0],
                    b: c.particles[1],
                    rest: c.rest_length_m,
                    compliance: c.compliance_m_per_n,
                }
            })
            .collect();
        let distance_colours = push_colours(&ranges, 0);
        // The tethers after the stretch edges, coloured by their free particle.
        let singles: Vec<[u32; 1]> = model.tethers.iter().map(|t| [t.particle]).collect();
        let (order, ranges) = colour(&singles, n).ok_or_else(|| too_many("tether"))?;
        let tethers: Vec<GpuDistance> = (order.iter())
            .map(|&i| {
                let t = &model.tethers[i];
                GpuDistance {
                    a: t.particle,
                    b: t.anchor,
                    rest: t.max_length_m,
                    compliance: 0.0,
                }
            })
            .collect();
        let stretch_edges = distances.len() as u32;
        let shifted: Vec<(u32, u32)> = (ranges.iter())
            .map(|&(start, count)| (start + stretch_edges, count))
            .collect();
        let lambda_of_tethers = |lambdas: u32| lambdas - stretch_edges;
        let triples: Vec<[u32; 3]> = model.shear.iter().map(|c| c.particles).collect();
        let (order, ranges) = colour(&triples, n).ok_or_else(|| too_many("shear"))?;
        let strains: Vec<GpuStrain> = (order.iter())
            .map(|&i| {
                let c = &model.shear[i];
                GpuStrain {
                    i: c.particles,
                    kind: match c.strain {
                        crate::constraints::Strain::Shear => 0,
                        crate::constraints::Strain::Warp => 1,
                        crate::constraints::Strain::Weft => 2,
                    },
                    d: c.rest_inverse,
                    compliance: c.compliance_per_n_m,
                    pad: [0.0; 3],
                }
            })
            .collect();
        let strain_colours = push_colours(&ranges, distances.len() as u32);
        let quads: Vec<[u32; 4]> = model.bend.iter().map(|c| c.particles).collect();
        let (order, ranges) = colour(&quads, n).ok_or_else(|| too_many("bend"))?;
        let bends: Vec<GpuBend> = (order.iter())
            .map(|&i| {
                let c = &model.bend[i];
                GpuBend {
                    p: c.particles,
                    rest: c.rest_angle_rad,
                    compliance: c.compliance_per_n_m,
                    pad: [0.0; 2],
                }
            })
            .collect();
        let bend_colours = push_colours(&ranges, (distances.len() + strains.len()) as u32);
        let tether_colours = push_colours(
            &shifted,
            lambda_of_tethers((distances.len() + strains.len() + bends.len()) as u32),
        );
        let lambdas = distances.len() + strains.len() + bends.len() + tethers.len();
        let mut distances = distances;
        distances.extend(tethers);

        // The particles, with their material values and pin targets.
        let mut host = vec![GpuParticle::default(); n];
        for (i, g) in host.iter_mut().enumerate() {
            g.damping = model.damping_per_s.get(i).copied().unwrap_or(0.0);
            g.friction = model.friction.get(i).copied().unwrap_or(0.0);
        }
        for pin in &model.pins {
            let g = &mut host[pin.particle as usize];
            g.target = pin.target_m.to_array();
            g.pinned = 1.0;
        }
        write_particles(&mut host, particles);

        let grid = body.map(DistanceGrid::of_body);
        let mut params = GpuParams {
            gravity: settings.gravity_m_per_s2,
            particles: n as u32,
            thickness: settings.collision_thickness_m,
            stretch_relaxation: settings.stretch_relaxation,
            line_vertices_at,
            ..Default::default()
        };
        let sdf: Vec<f32> = match &grid {
            Some(g) => {
                params.sdf_origin = g.origin_m.to_array();
                params.sdf_cell = g.cell_m;
                params.sdf_dims = g.dims.map(|d| d as u32);
                g.values_m.clone()
            }
            None => vec![0.0],
        };

        // Buffers. wgpu refuses empty bindings, hence one element at least.
        let storage = |label: &str, bytes: &[u8], usage: wgpu::BufferUsages| {
            let min = [0u8; 16];
            device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: if bytes.is_empty() { &min } else { bytes },
                usage,
            })
        };
        let ro = wgpu::BufferUsages::STORAGE;
        let particles_buf = storage(
            "particles",
            bytemuck::cast_slice(&host),
            ro | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
        );
        let distance_buf = storage("distances", bytemuck::cast_slice(&distances), ro);
        let strain_buf = storage("strains", bytemuck::cast_slice(&strains), ro);
        let bend_buf = storage("bends", bytemuck::cast_slice(&bends), ro);
        let lambda_buf = storage(
            "lambda",
            bytemuck::cast_slice(&vec![0f32; lambdas.max(4)]),
            ro | wgpu::BufferUsages::COPY_DST,
        );
        let sdf_buf = storage("sdf", bytemuck::cast_slice(&sdf), ro);
        let line_buf = storage("lines", bytemuck::cast_slice(&line_data), ro);
        let slot_buf = storage(
            "line slots",
            bytemuck::cast_slice(&vec![
                GpuLineSlot::default();
                if lines.is_some() { distances.len() } else { 0 }
            ]),
            ro,
        );
        let params_buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("params"),
            contents: bytemuck::bytes_of(&params),
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
        });
        let mut batch_bytes = vec![0u8; (batches.len().max(1) as u64 * BATCH_STRIDE) as usize];
        for (k, b) in batches.iter().enumerate() {
            let at = k * BATCH_STRIDE as usize;
            batch_bytes[at..at + 16].copy_from_slice(bytemuck::bytes_of(b));
        }
        let batch_buf = device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("batches"),
            contents: &batch_bytes,
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let readback = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: particles_buf.size(),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });

        // Layouts and kernels.
        let entry =
            |binding: u32, ty: wgpu::BufferBindingType, dynamic: bool| wgpu::BindGroupLayoutEntry {
                binding,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty,
                    has_dynamic_offset: dynamic,
                    min_binding_size: None,
                },
                count: None,
            };
        let rw = wgpu::BufferBindingType::Storage { read_only: false };
        let r = wgpu::BufferBindingType::Storage { read_only: true };
        let u = wgpu::BufferBindingType::Uniform;
        let state_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("state"),
            entries: &[
                entry(0, rw, false),
                entry(1, r, false),
                entry(2, r, false),
                entry(3, r, false),
                entry(4, rw, false),
                entry(5, r, false),
                entry(6, u, false),
                entry(7, r, false),
                entry(8, rw, false),
            ],
        });
        let batch_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("batch"),
            entries: &[entry(0, u, true)],
        });
        let buffers = [
            &particles_buf,
            &distance_buf,
            &strain_buf,
            &bend_buf,
            &lambda_buf,
            &sdf_buf,
            &params_buf,
            &line_buf,
            &slot_buf,
        ];
        let entries: Vec<wgpu::BindGroupEntry> = (buffers.iter().enumerate())
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        let state = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("state"),
            layout: &state_layout,
            entries: &entries,
        });
        let batch_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("batch"),
            layout: &batch_layout,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &batch_buf,
                    offset: 0,
                    size: wgpu::BufferSize::new(16),
                }),
            }],
        });
        let layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("solver"),
            bind_group_layouts: &[Some(&state_layout), Some(&batch_layout)],
            immediate_size: 0,
        });
        let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("step.wgsl"),
            source: wgpu::ShaderSource::Wgsl(Cow::Borrowed(include_str!("step.wgsl"))),
        });
        let pipeline = |entry: &str| {
            device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(entry),
                layout: Some(&layout),
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            })
        };
        let pipelines = [
            "solve_tether",
            "predict",
            if lines.is_some() {
                "solve_line"
            } else {
                "solve_distance"
            },
            "solve_strain",
            "solve_bend",
            "contacts",
            "velocities",
        ]
        .map(pipeline);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Device {
                adapter: name,
                reason: e.to_string(),
            });
        }
        let [tether, predict, distance, strain, bend, contacts, velocities] = pipelines;
        Ok(Self {
            tether,
            tethers: tether_colours,
            predict,
            distance,
            strain,
            bend,
            contacts,
            velocities,
            device,
            queue,
            adapter: name,
            state,
            batch_group,
            particles_buf,
            lambda_buf,
            params_buf,
            readback,
            batches,
            distances: distance_colours,
            strains: strain_colours,
            bends: bend_colours,
            has_body: grid.is_some(),
            line_passes: if lines.is_some() {
                settings.line_passes
            } else {
                0
            },
            host,
            dirty: false,
            grid,
            params,
        })
    }

    /// The adapter the backend runs on: its name, API and kind (`Cpu` for a software one).
    pub fn adapter(&self) -> &str {
        &self.adapter
    }

    /// The colours (dispatches per sweep) of the stretch, the triangle strains and the bends.
    pub fn colours(&self) -> [usize; 3] {
        [self.distances.count, self.strains.count, self.bends.count]
    }

    /// The body's distance grid, if there is a body.
    pub fn grid(&self) -> Option<&DistanceGrid> {
        self.grid.as_ref()
    }

    /// Marks the host's state as newer than the GPU's: it is uploaded before the next frame.
    pub fn mark_dirty(&mut self) {
        self.dirty = true;
    }

    /// Moves pin `particle`'s target (m).
    pub fn set_pin_target(&mut self, particle: u32, target_m: Vec3) {
        if let Some(g) = self.host.get_mut(particle as usize) {
            g.target = target_m.to_array();
            self.dirty = true;
        }
    }

    /// Runs one frame of `substeps` substeps of `h_s` seconds, each with `iterations`
    /// forward-and-backward sweeps, from `particles` (uploaded first when the host's copy is
    /// newer), and reads the result back into them. Returns how many particles ended the frame
    /// touching the body.
    pub fn step_frame(
        &mut self,
        particles: &mut Particles,
        h_s: Real,
        substeps: u32,
        iterations: u32,
    ) -> Result<usize, GpuError> {
        if self.dirty {
            write_particles(&mut self.host, particles);
            self.queue
                .write_buffer(&self.particles_buf, 0, bytemuck::cast_slice(&self.host));
            self.dirty = false;
        }
        self.params.h = h_s;
        self.queue
            .write_buffer(&self.params_buf, 0, bytemuck::bytes_of(&self.params));
        let n = self.host.len() as u32;
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let mut encoder = self
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("frame"),
            });
        for _ in 0..substeps {
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                pass.set_bind_group(0, &self.state, &[]);
                pass.set_bind_group(1, &self.batch_group, &[0]);
                pass.set_pipeline(&self.predict);
                dispatch(&mut pass, n);
            }
            encoder.clear_buffer(&self.lambda_buf, 0, None);
            let mut pass = encoder.begin_compute_pass(&Default::default());
            pass.set_bind_group(0, &self.state, &[]);
            for _ in 0..iterations {
                for backward in [false, true] {
                    // With the line solves, the lines again `line_passes` times after the
                    // shear and bending (the CPU's order, docs/solver.md "Line passes").
                    // The CPU's order: tethers, stretch, shear, bending.
                    let kinds = [
                        (&self.tether, self.tethers),
                        (&self.distance, self.distances),
                        (&self.strain, self.strains),
                        (&self.bend, self.bends),
                    ];
                    let again = std::iter::repeat_n(kinds[1], self.line_passes as usize);
                    for (pipeline, colours) in kinds.into_iter().chain(again) {
                        if colours.count == 0 {
                            continue;
                        }
                        pass.set_pipeline(pipeline);
                        for i in 0..colours.count {
                            let k =
                                colours.first + if backward { colours.count - 1 - i } else { i };
                            let offset = (k as u64 * BATCH_STRIDE) as u32;
                            pass.set_bind_group(1, &self.batch_group, &[offset]);
                            dispatch(&mut pass, self.batches[k].count);
                        }
                    }
                    if self.has_body {
                        pass.set_bind_group(1, &self.batch_group, &[0]);
                        pass.set_pipeline(&self.contacts);
                        dispatch(&mut pass, n);
                    }
                }
            }
            pass.set_bind_group(1, &self.batch_group, &[0]);
            pass.set_pipeline(&self.velocities);
            dispatch(&mut pass, n);
        }
        encoder.copy_buffer_to_buffer(&self.particles_buf, 0, &self.readback, 0, None);
        self.queue.submit([encoder.finish()]);
        if let Some(e) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Device {
                adapter: self.adapter.clone(),
                reason: e.to_string(),
            });
        }
        let slice = self.readback.slice(..);
        let (tx, rx) = std::sync::mpsc::channel();
        slice.map_async(wgpu::MapMode::Read, move |r| {
            let _ = tx.send(r);
        });
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: None,
                timeout: None,
            })
            .map_err(|e| GpuError::Readback(e.to_string()))?;
        rx.recv()
            .map_err(|e| GpuError::Readback(e.to_string()))?
            .map_err(|e| GpuError::Readback(e.to_string()))?;
        {
            let view = slice
                .get_mapped_range()
                .map_err(|e| GpuError::Readback(e.to_string()))?;
            self.host.copy_from_slice(bytemuck::cast_slice(&view));
        }
        self.readback.unmap();
        let mut touching = 0;
        for (i, g) in self.host.iter().enumerate() {
            particles.x_prev[i] = Vec3::from_array(g.x_prev);
            particles.x[i] = Vec3::from_array(g.x);
            particles.v[i] = Vec3::from_array(g.v);
            touching += usize::from(g.contact_normal != [0.0; 3]);
        }
        Ok(touching)
    }
}

/// Copies the positions, velocities and inverse masses of `particles` into the GPU's layout.
fn write_particles(host: &mut [GpuParticle], particles: &Particles) {
    for (i, g) in host.iter_mut().enumerate() {
        g.x = particles.x[i].to_array();
        g.x_prev = particles.x_prev[i].to_array();
        g.v = particles.v[i].to_array();
        g.w = particles.inv_mass[i];
    }
}

/// Dispatches enough workgroups for `threads` threads (on a second axis past
/// [`MAX_WORKGROUPS_X`]; the kernels read the index back from both).
fn dispatch(pass: &mut wgpu::ComputePass<'_>, threads: u32) {
    if threads == 0 {
        return;
    }
    let groups = threads.div_ceil(WORKGROUP);
    let x = groups.min(MAX_WORKGROUPS_X);
    pass.dispatch_workgroups(x, groups.div_ceil(x), 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colouring_never_puts_two_constraints_on_one_particle_in_a_colour() {
        // A 5 × 5 grid's edges, both diagonals' triangles and the bends: every colour's
        // constraints must touch each particle at most once.
        let n = 5;
        let id = |i: u32, j: u32| i + j * n;
        let mut edges = Vec::new();
        for j in 0..n {
            for i in 0..n {
                if i + 1 < n {
                    edges.push([id(i, j), id(i + 1, j)]);
                }
                if j + 1 < n {
                    edges.push([id(i, j), id(i, j + 1)]);
                }
                if i + 1 < n && j + 1 < n {
                    edges.push([id(i, j), id(i + 1, j + 1)]);
                }
            }
        }
        let (order, ranges) = colour(&edges, 25).unwrap();
        assert_eq!(order.len(), edges.len());
        let mut seen: Vec<usize> = order.clone();
        seen.sort();
        assert_eq!(seen, (0..edges.len()).collect::<Vec<_>>());
        for &(start, count) in &ranges {
            let mut touched = [false; 25];
            for &c in &order[start as usize..(start + count) as usize] {
                for p in edges[c] {
                    assert!(
                        !touched[p as usize],
                        "two constraints of a colour share {p}"
                    );
                    touched[p as usize] = true;
                }
            }
        }
        // A vertex of degree 6 needs at least 6 colours; greedy stays within twice that.
        assert!(ranges.len() >= 6 && ranges.len() <= 12, "{}", ranges.len());
        assert_eq!(
            ranges.iter().map(|r| r.1).sum::<u32>() as usize,
            edges.len()
        );
    }

    #[test]
    fn colouring_gives_up_past_the_colour_limit() {
        // 65 constraints all on particle 0.
        let star: Vec<[u32; 2]> = (1..=65).map(|i| [0, i]).collect();
        assert!(colour(&star, 66).is_none());
        assert!(colour(&star[..64], 66).is_some());
    }
}
