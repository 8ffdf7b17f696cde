//! Running a scene over its timeline into a cache of render-mesh positions, with stats.
//!
//! [`LoadedScene::load`] reads the scene file and its glTF meshes, welds each garment, checks
//! its quality and resolves its fabric and pins. [`bake`] then builds the solver, steps it one
//! frame at a time, records every garment's render positions per frame and measures each frame
//! (DESIGN §3). Progress is reported through a callback and the bake can be cancelled between
//! frames; a cancelled bake keeps the frames it finished.
//!
//! [`stats`] measures each frame and writes the JSON stats report.
//!
//! May import every simulation layer below it: [`crate::scene`], [`crate::io`], [`crate::solver`],
//! [`crate::garment`], [`crate::paint`], [`crate::collide`], [`crate::body`] and the rest.

pub mod stats;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::bake::stats::{
    count_self_intersections, edge_stretch, ConstraintCounts, FrameStats, ProjectMs, StageMs, Stats,
};
use crate::body::{BodyError, Playback, Pose, Rig};
use crate::collide::{measure_penetrations, BodyCollider, ColliderError};
use crate::constraints::Attachment;
use crate::garment::binding::Binding;
use crate::garment::material::{
    build_cloth_oriented, build_span_limits, build_tethers, warp_directions_from, Fabric,
};
use crate::garment::proxy::{build_proxy, ProxyQuality};
use crate::io::gltf_import::{load_mesh_with_warnings, GltfImportError};
use crate::math::{Real, Vec3};
use crate::mesh::{weld, Mesh, MeshError, QualityReport, Severity, Topology, Welded};
use crate::neural::{Gnn, ModelError, ModelFile};
use crate::preset::Library;
use crate::scene::{
    suggested_unit_scale, GarmentSpec, PinTarget, Pins, Scene, SceneError, AUTO_BIND_DISTANCE_M,
    MAX_FRAMES, MAX_PLAUSIBLE_BODY_M, MIN_PLAUSIBLE_BODY_M,
};
use crate::solver::{Anchored, BodyBinding, BodyMotion, ClothModel, Pin, SimError, Solver};

/// Why a scene could not be baked.
#[derive(Debug, thiserror::Error)]
pub enum BakeError {
    /// The scene file is invalid.
    #[error(transparent)]
    Scene(#[from] SceneError),
    /// A glTF file could not be read.
    #[error(transparent)]
    Import(#[from] GltfImportError),
    /// The hybrid solver's model file cannot be used.
    #[error(transparent)]
    Model(#[from] ModelError),
    /// The body's rig or animation could not be read.
    #[error(transparent)]
    Body(#[from] BodyError),
    /// A mesh cannot be simulated.
    #[error("{path}: {source}")]
    Mesh {
        /// The glTF file.
        path: PathBuf,
        /// The problem.
        source: MeshError,
    },
    /// A pin specification does not fit the mesh.
    #[error("{scene}: garment '{garment}': {problem}")]
    Pins {
        /// The scene file.
        scene: PathBuf,
        /// Garment name.
        garment: String,
        /// What is wrong.
        problem: String,
    },
    /// The body cannot be used as a collider.
    #[error("{path}: {source}")]
    Collider {
        /// The body file.
        path: PathBuf,
        /// The problem.
        source: ColliderError,
    },
    /// A garment's proxy cannot be built, or its render mesh cannot be bound to it.
    #[error("{path}: garment '{garment}': proxy: {problem}")]
    Proxy {
        /// The garment's glTF file.
        path: PathBuf,
        /// Garment name.
        garment: String,
        /// What went wrong.
        problem: String,
    },
    /// The body could not be posed at some time (a broken rig or animation).
    #[error(
        "{scene}: frame {frame}: the body {body} cannot be posed at t = {time_s:.4} s: {source}"
    )]
    BodyPose {
        /// The scene file.
        scene: PathBuf,
        /// The body's glTF file.
        body: PathBuf,
        /// Timeline frame at which it happened.
        frame: i32,
        /// Simulated time (s).
        time_s: f64,
        /// What went wrong.
        source: ColliderError,
    },
    /// The solver refused the set-up or failed.
    #[error("{scene}: frame {frame}: {source}")]
    Sim {
        /// The scene file.
        scene: PathBuf,
        /// Timeline frame at which it happened.
        frame: i32,
        /// The solver's error.
        source: SimError,
    },
}

/// A garment read from disk and prepared for simulation.
#[derive(Clone, Debug)]
pub struct LoadedGarment {
    /// The scene's description.
    pub spec: GarmentSpec,
    /// The resolved fabric.
    pub fabric: Fabric,
    /// The render mesh, as imported.
    pub render: Mesh,
    /// The welded render mesh (seam duplicates merged) and the map from render vertices. It is
    /// the simulation mesh when the garment has no proxy.
    pub welded: Welded,
    /// The simulation proxy and the binding of the render mesh to it, when the scene asks
    /// for one.
    pub proxy: Option<GarmentProxy>,
    /// Adjacency of the simulation mesh ([`LoadedGarment::sim_mesh`]).
    pub topology: Topology,
    /// The fabric's warp direction on each simulation triangle, from the render mesh's UVs
    /// (see [`crate::garment::material::warp_directions_from`]); `None` without UVs (world X is used).
    pub warps: Option<Vec<Vec3>>,
    /// Simulation-mesh vertex indices that are hard-pinned.
    pub pinned: Vec<u32>,
    /// Simulation-mesh vertex indices with a soft attachment, and its compliance (m/N).
    pub soft_pins: Vec<(u32, Real)>,
    /// The painted maps carried to the simulation mesh, when the garment has maps; their
    /// attachments are already in `pinned` and `soft_pins`.
    pub maps: Option<crate::paint::SimMaps>,
}

/// A garment's simulation proxy and the binding of its render mesh to it.
#[derive(Clone, Debug)]
pub struct GarmentProxy {
    /// The proxy mesh (m).
    pub mesh: Mesh,
    /// Its triangle quality.
    pub quality: ProxyQuality,
    /// Each render vertex bound to a proxy triangle.
    pub binding: Binding,
    /// For each render vertex, the vertex of its bound triangle with the largest barycentric
    /// weight: the particle that stands for it (picking, pins given as render vertices).
    pub representative: Vec<u32>,
}

impl LoadedGarment {
    /// Recomputes the pins and the painted maps from `self.spec` (after an edit of its `pins`
    /// or `maps`) without reading any file or rebuilding the proxy, so painting applies to a
    /// running simulation when its model is rebuilt; `scene` is the scene file, for errors and
    /// sidecar maps.
    pub fn repaint(&mut self, scene: &Path) -> Result<(), BakeError> {
        let (mut pinned, mut soft_pins) = resolve_pins(
            scene,
            &self.spec,
            &self.render,
            &self.welded,
            self.proxy.as_ref(),
        )?;
        let maps = painted_maps(
            scene,
            &self.spec,
            &self.render,
            &self.welded,
            self.proxy.as_ref(),
        )?;
        if let (Some(settings), Some(m)) = (&self.spec.maps, &maps) {
            let (hard, soft) = m.attachments(settings);
            merge_attachments(&mut pinned, &mut soft_pins, hard, soft);
        }
        self.pinned = pinned;
        self.soft_pins = soft_pins;
        self.maps = maps;
        Ok(())
    }

    /// The simulated mesh: the proxy, or the welded render mesh.
    pub fn sim_mesh(&self) -> &Mesh {
        self.proxy.as_ref().map_or(&self.welded.mesh, |p| &p.mesh)
    }

    /// For each render vertex, the simulation vertex that stands for it.
    pub fn sim_vertex_of_render(&self) -> &[u32] {
        self.proxy
            .as_ref()
            .map_or(&self.welded.original_to_welded, |p| &p.representative)
    }

    /// The render mesh's positions (m) for the simulation mesh's positions `x` (this
    /// garment's particles only), appended to `out`.
    pub fn render_positions_into(&self, x: &[Vec3], out: &mut Vec<Vec3>) {
        let start = out.len();
        match &self.proxy {
            Some(p) => {
                out.resize(start + self.render.positions.len(), Vec3::ZERO);
                if p.binding.deform(x, &mut out[start..]).is_err() {
                    // Lengths are fixed at load time; should they ever disagree, fall back to
                    // the representative particles rather than leave zeros.
                    for (o, &i) in out[start..].iter_mut().zip(&p.representative) {
                        *o = x[i as usize];
                    }
                }
            }
            None => out.extend(
                self.welded
                    .original_to_welded
                    .iter()
                    .map(|&i| x[i as usize]),
            ),
        }
    }
}

/// Builds a garment's proxy and binds its render mesh to it.
fn build_garment_proxy(
    path: &Path,
    spec: &GarmentSpec,
    render: &Mesh,
    target: crate::scene::ProxySpec,
) -> Result<GarmentProxy, BakeError> {
    let err = |problem: String| BakeError::Proxy {
        path: path.to_path_buf(),
        garment: spec.name.clone(),
        problem,
    };
    let proxy = build_proxy(render, target.target()).map_err(|e| err(e.to_string()))?;
    let binding = Binding::new(render, &proxy.mesh).map_err(|e| err(e.to_string()))?;
    let representative = binding
        .vertices()
        .iter()
        .map(|b| {
            let k = (0..3)
                .max_by(|&i, &j| b.barycentric[i].total_cmp(&b.barycentric[j]))
                .unwrap_or(0);
            b.triangle[k]
        })
        .collect();
    Ok(GarmentProxy {
        mesh: proxy.mesh,
        quality: proxy.quality,
        binding,
        representative,
    })
}

/// The body, read from its glTF file.
#[derive(Clone, Debug)]
pub struct LoadedBody {
    /// The glTF file.
    pub path: PathBuf,
    /// Its rig: meshes, skins, nodes and animations.
    pub rig: Arc<Rig>,
    /// The animation played, if the file has one.
    pub animation: Option<usize>,
    /// Looping or clamped playback.
    pub playback: Playback,
    /// Collision exclusions: how much each rest-mesh vertex follows the scene's
    /// `exclude_joints` ([`Rig::joint_influence`]) and the weight above which its triangles do
    /// not collide; `None` when nothing is excluded.
    pub exclusion: Option<(Arc<Vec<Real>>, Real)>,
}

impl LoadedBody {
    /// The body mesh at its rest pose (m): the collider's shape before any animation, and the
    /// pose garments are fitted to.
    pub fn mesh(&self) -> &Mesh {
        self.rig.rest_mesh()
    }

    /// The body's collider at its rest pose, without the excluded triangles: those whose
    /// vertices follow the scene's `exclude_joints` with a mean weight above `exclude_weight`.
    pub fn collider(&self) -> Result<BodyCollider, BakeError> {
        let built = match &self.exclusion {
            None => BodyCollider::new(self.mesh()),
            Some((influence, threshold)) => BodyCollider::excluding(self.mesh(), |t| {
                let w = t.map(|v| influence.get(v as usize).copied().unwrap_or(0.0));
                (w[0] + w[1] + w[2]) / 3.0 > *threshold
            }),
        };
        built.map_err(|source| BakeError::Collider {
            path: self.path.clone(),
            source,
        })
    }

    /// Rest-mesh triangles left out of collision by the exclusions.
    pub fn excluded_triangles(&self) -> usize {
        let Some((influence, threshold)) = &self.exclusion else {
            return 0;
        };
        (self.mesh().indices.iter())
            .filter(|t| t.iter().map(|&v| influence[v as usize]).sum::<Real>() / 3.0 > *threshold)
            .count()
    }

    /// The played animation's time range `(start, end)` (s).
    pub fn animation_range_s(&self) -> Option<(f64, f64)> {
        let a = self.rig.animations().get(self.animation?)?;
        Some((a.start_s, a.end_s))
    }

    /// The body's clock for a bake with `preroll_s` seconds of settling.
    pub fn clock(&self, preroll_s: f64) -> BodyClock {
        let rest = self.rig.rest_pose();
        let first = match self.animation_range_s() {
            Some((start, _)) => self
                .rig
                .sample(self.animation.unwrap_or(0), start, self.playback),
            None => rest.clone(),
        };
        BodyClock {
            rig: self.rig.clone(),
            animation: self.animation,
            playback: self.playback,
            animation_start_s: self.animation_range_s().map_or(0.0, |r| r.0),
            preroll_s,
            scratch: rest.clone(),
            rest,
            first,
        }
    }
}

/// Maps simulated time to the body's pose.
///
/// Simulated time starts at 0 with the pre-roll: during its `preroll_s` seconds the body blends
/// (smoothstep) from its rest pose, which the garments are fitted to, into the animation's
/// first pose; then the animation plays from its start, so timeline frame `k` (counted from
/// the first exported frame) is animation time `start + k/fps`.
#[derive(Clone, Debug)]
pub struct BodyClock {
    rig: Arc<Rig>,
    animation: Option<usize>,
    playback: Playback,
    animation_start_s: f64,
    preroll_s: f64,
    rest: Pose,
    first: Pose,
    /// Reused by [`BodyMotion::pose_at`], which runs at every substep.
    scratch: Pose,
}

impl BodyClock {
    /// The pose at simulated time `time_s` (s).
    pub fn pose(&self, time_s: f64) -> Pose {
        if time_s < self.preroll_s {
            let s = (time_s / self.preroll_s).clamp(0.0, 1.0) as Real;
            let s = s * s * (3.0 - 2.0 * s);
            return Rig::blend(&self.rest, &self.first, s);
        }
        match self.animation {
            Some(a) => self.rig.sample(
                a,
                self.animation_start_s + (time_s - self.preroll_s),
                self.playback,
            ),
            None => self.first.clone(),
        }
    }

    /// The rig.
    pub fn rig(&self) -> &Rig {
        &self.rig
    }
}

impl BodyMotion for BodyClock {
    fn pose_at(&mut self, time_s: f64, out: &mut Vec<Vec3>) {
        match self.animation {
            // The animation proper, at every substep: sample into a reused pose.
            Some(a) if time_s >= self.preroll_s => {
                let t = self.animation_start_s + (time_s - self.preroll_s);
                self.rig.sample_into(a, t, self.playback, &mut self.scratch);
                self.rig.skin(&self.scratch, out);
            }
            _ => {
                let pose = self.pose(time_s);
                self.rig.skin(&pose, out);
            }
        }
    }
}

/// The unit warning for a body whose largest rest-pose extent is outside
/// [[`MIN_PLAUSIBLE_BODY_M`], [`MAX_PLAUSIBLE_BODY_M`]] (read as metres), with the unit scale
/// that would bring it to human size; `None` for a plausible body.
pub fn body_size_warning(file: &Path, rig: &Rig) -> Option<String> {
    let (lo, hi) = rig.rest_bounds()?;
    let extent = (hi - lo).max_element();
    if (MIN_PLAUSIBLE_BODY_M..=MAX_PLAUSIBLE_BODY_M).contains(&extent) {
        return None;
    }
    let suggestion = suggested_unit_scale(extent)?;
    Some(format!(
        "{}: the body is {extent:.3} units across, implausible for a character in metres (Drape \
         works in metres); if the file is in other units, set the body's `unit_scale` in the \
         scene, e.g. `unit_scale: {suggestion}` (0.01 for centimetres, 0.001 for millimetres, \
         0.0254 for inches)",
        file.display()
    ))
}

/// The unit warning for a garment whose triangles span more than [`MAX_PLAUSIBLE_BODY_M`]
/// (read as metres), with the unit scale that would bring it to human size; `None` otherwise. (Small garments are
/// plausible: a patch or a pocket.)
pub fn garment_size_warning(file: &Path, spec: &GarmentSpec, mesh: &Mesh) -> Option<String> {
    // Over the triangles' corners: a stray vertex far off is not the garment's size.
    let corners: Vec<Vec3> = (mesh.indices.iter().flatten())
        .filter_map(|&i| mesh.positions.get(i as usize).copied())
        .collect();
    let (lo, hi) = crate::body::bounds(&corners)?;
    let extent = (hi - lo).max_element();
    if extent.is_nan() || extent <= MAX_PLAUSIBLE_BODY_M {
        return None;
    }
    let suggestion = suggested_unit_scale(extent)?;
    Some(format!(
        "{}: garment '{}' is {extent:.3} units across, implausible in metres (Drape works in \
         metres); if the file is in other units, set the garment's `unit_scale` in the scene, \
         e.g. `unit_scale: {suggestion}` (0.01 for centimetres)",
        file.display(),
        spec.name
    ))
}

/// A scene with all its files read.
#[derive(Clone, Debug)]
pub struct LoadedScene {
    /// The scene file.
    pub path: PathBuf,
    /// The scene.
    pub scene: Scene,
    /// The body, if the scene has one.
    pub body: Option<LoadedBody>,
    /// The garments.
    pub garments: Vec<LoadedGarment>,
    /// Mesh quality warnings, each naming the mesh.
    pub warnings: Vec<String>,
    /// The hybrid solver's model, when the scene's solver turns it on
    /// ([`SolverSettings::neural`](crate::solver::SolverSettings::neural)) and it can be used.
    pub network: Option<LoadedNetwork>,
}

/// A model file read for a scene.
#[derive(Clone, Debug)]
pub struct LoadedNetwork {
    /// The model file.
    pub path: PathBuf,
    /// Its network.
    pub net: Arc<Gnn>,
}

/// Where a scene's `neural.model` points: a path (relative to the scene file) when it ends in
/// `.ron` or holds a folder, else a model of that name in the preset library's `models/`.
pub fn model_path(scene_path: &Path, model: &str) -> Result<PathBuf, BakeError> {
    if model.ends_with(".ron") || model.contains('/') || model.contains('\\') {
        return Ok(Scene::resolve(scene_path, Path::new(model)));
    }
    let library = Library::open_default().map_err(|e| {
        BakeError::Model(ModelError::Io {
            path: PathBuf::from(model),
            source: std::io::Error::other(e.to_string()),
        })
    })?;
    Ok(library.model_path(model))
}

fn load_network(
    scene: &Scene,
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<Option<LoadedNetwork>, BakeError> {
    let Some(settings) = &scene.solver.neural else {
        return Ok(None);
    };
    let file = model_path(path, &settings.model)?;
    let read = ModelFile::load(&file).and_then(|m| {
        m.check_for(&file, scene.solver.substeps, scene.timeline.fps)?;
        Ok(m)
    });
    match read {
        Ok(m) => Ok(Some(LoadedNetwork {
            path: file,
            net: Arc::new(m.network),
        })),
        Err(e) if settings.classical_if_unusable => {
            warnings.push(format!("{e}; baking with the classical solver"));
            Ok(None)
        }
        Err(e) => Err(BakeError::Model(e)),
    }
}

impl LoadedScene {
    /// Reads a scene file and every file it refers to.
    pub fn load(path: &Path) -> Result<Self, BakeError> {
        let (scene, retired) = Scene::load_with_warnings(path)?;
        let mut loaded = Self::from_scene(scene, path)?;
        loaded.warnings.splice(0..0, retired);
        Ok(loaded)
    }

    /// Reads the files of an already parsed scene; `path` is the scene file (for relative paths).
    pub fn from_scene(scene: Scene, path: &Path) -> Result<Self, BakeError> {
        scene.validate(path)?;
        let mut warnings = Vec::new();
        let body = match &scene.body {
            Some(b) => {
                let file = Scene::resolve(path, &b.path);
                let mut rig = Rig::load(&file, b.mesh.as_deref())?;
                warnings.extend(rig.warnings().iter().cloned());
                rig.scale(b.unit_scale);
                // The scale can carry a loaded body past the coordinate limit (m) that every
                // mesh is held to.
                rig.rest_mesh()
                    .validate()
                    .map_err(|source| BakeError::Mesh {
                        path: file.clone(),
                        source,
                    })?;
                if b.unit_scale == 1.0 {
                    if let Some(w) = body_size_warning(&file, &rig) {
                        log::warn!("{w}");
                        warnings.push(w);
                    }
                }
                let animation = match &b.animation {
                    Some(r) => Some(rig.find_animation(r)?),
                    None => (!rig.animations().is_empty()).then_some(0),
                };
                let exclusion = if b.exclude_joints.is_empty() {
                    None
                } else {
                    let influence = rig.joint_influence(&b.exclude_joints)?;
                    Some((Arc::new(influence), b.exclude_weight))
                };
                Some(LoadedBody {
                    path: file,
                    rig: Arc::new(rig),
                    animation,
                    playback: b.playback,
                    exclusion,
                })
            }
            None => None,
        };
        let mut garments = Vec::new();
        for (gi, spec) in scene.garments.iter().enumerate() {
            let file = Scene::resolve(path, &spec.path);
            let (mut render, repairs) = load_mesh_with_warnings(&file, spec.mesh.as_deref())?;
            repairs.iter().for_each(|w| log::warn!("{w}"));
            warnings.extend(repairs);
            for p in &mut render.positions {
                *p *= spec.unit_scale;
            }
            if spec.unit_scale == 1.0 {
                if let Some(w) = garment_size_warning(&file, spec, &render) {
                    log::warn!("{w}");
                    warnings.push(w);
                }
            }
            let welded = weld(&render, spec.weld_tolerance_m);
            let (welded, collapsed) = collapse_short_edges(welded, SHORT_EDGE_FRACTION);
            if let Some(c) = collapsed {
                warnings.push(format!(
                    "garment '{}': {} edges shorter than {:.1e} m ({} % of the median edge, \
                     {:.3} m) were collapsed; such slivers cannot be simulated (merge those \
                     vertices in the modelling tool)",
                    spec.name,
                    c.edges,
                    c.threshold_m,
                    SHORT_EDGE_FRACTION * 100.0,
                    c.median_m
                ));
            }
            if welded.mesh.indices.is_empty() {
                return Err(BakeError::Mesh {
                    path: file,
                    source: MeshError::AllDegenerate(spec.name.clone()),
                });
            }
            welded.mesh.validate().map_err(|source| BakeError::Mesh {
                path: file.clone(),
                source,
            })?;
            let quality = QualityReport::new(&welded.mesh, spec.weld_tolerance_m);
            for issue in quality.issues(&spec.name, welded.mesh.indices.len()) {
                match issue.severity {
                    Severity::Error => {
                        return Err(BakeError::Mesh {
                            path: file,
                            source: MeshError::AllDegenerate(spec.name.clone()),
                        })
                    }
                    Severity::Warning => warnings.push(issue.message),
                }
            }
            if welded.merged > 0 {
                warnings.push(format!(
                    "garment '{}': {} seam duplicates welded",
                    spec.name, welded.merged
                ));
            }
            let fabric = spec.resolve_fabric().map_err(|e| SceneError::Field {
                path: path.to_path_buf(),
                field: format!("garments[{gi}].fabric"),
                problem: e.to_string(),
            })?;
            let proxy = match spec.proxy {
                Some(target) => Some(build_garment_proxy(&file, spec, &render, target)?),
                None => None,
            };
            if let Some(p) = &proxy {
                if p.quality.min_angle_deg < 10.0 {
                    warnings.push(format!(
                        "garment '{}': its proxy has slivers (smallest angle {:.1}°); a denser \
                         proxy shapes its triangles better",
                        spec.name, p.quality.min_angle_deg
                    ));
                }
            }
            let (mut pinned, mut soft_pins) =
                resolve_pins(path, spec, &render, &welded, proxy.as_ref())?;
            let maps = painted_maps(path, spec, &render, &welded, proxy.as_ref())?;
            if let (Some(settings), Some(m)) = (&spec.maps, &maps) {
                let (hard, soft) = m.attachments(settings);
                merge_attachments(&mut pinned, &mut soft_pins, hard, soft);
            }
            let sim = proxy.as_ref().map_or(&welded.mesh, |p| &p.mesh);
            let topology = Topology::new(sim);
            let warps = warp_directions_from(&render, sim);
            garments.push(LoadedGarment {
                spec: spec.clone(),
                fabric,
                render,
                welded,
                proxy,
                topology,
                warps,
                pinned,
                soft_pins,
                maps,
            });
        }
        let network = load_network(&scene, path, &mut warnings)?;
        Ok(Self {
            path: path.to_path_buf(),
            scene,
            body,
            garments,
            warnings,
            network,
        })
    }

    /// Gives `solver` the hybrid's network when the scene's solver turns it on and its model
    /// was read ([`LoadedScene::network`]); nothing otherwise.
    pub fn attach_network(&self, solver: &mut Solver) -> Result<(), SimError> {
        if let (Some(_), Some(n)) = (&self.scene.solver.neural, &self.network) {
            let h = 1.0 / (self.scene.timeline.fps * self.scene.solver.substeps as Real);
            solver.set_network(Some(n.net.clone()), h)?;
        }
        Ok(())
    }

    /// Reads the hybrid's model again, as the scene's solver settings now name it (after the
    /// artist changed them); the warnings of a model that falls back go to `warnings`.
    pub fn reload_network(&mut self) -> Result<(), BakeError> {
        self.network = load_network(&self.scene, &self.path, &mut self.warnings)?;
        Ok(())
    }

    /// Total simulated particles.
    pub fn proxy_vertices(&self) -> usize {
        self.garments
            .iter()
            .map(|g| g.sim_mesh().positions.len())
            .sum()
    }

    /// The merged render mesh's positions (m, in [`Self::merged_render_mesh`] order) for the
    /// solver's particle positions `x`; `offsets` are the garments' first particles, as
    /// [`Self::build_model`] returns them.
    pub fn render_positions(&self, offsets: &[u32], x: &[Vec3]) -> Vec<Vec3> {
        let mut out = Vec::with_capacity(self.render_vertices());
        for (g, &base) in self.garments.iter().zip(offsets) {
            let base = base as usize;
            let n = g.sim_mesh().positions.len();
            g.render_positions_into(&x[base..base + n], &mut out);
        }
        out
    }

    /// For each merged render vertex, the solver particle that drives it.
    pub fn render_to_particle(&self, offsets: &[u32]) -> Vec<u32> {
        self.garments
            .iter()
            .zip(offsets)
            .flat_map(|(g, &base)| g.sim_vertex_of_render().iter().map(move |&i| i + base))
            .collect()
    }

    /// Total render vertices.
    pub fn render_vertices(&self) -> usize {
        self.garments.iter().map(|g| g.render.positions.len()).sum()
    }

    /// All garments' render meshes merged into one (the exported mesh), in garment order.
    pub fn merged_render_mesh(&self) -> Mesh {
        let mut out = Mesh {
            name: self
                .garments
                .iter()
                .map(|g| g.spec.name.as_str())
                .collect::<Vec<_>>()
                .join("+"),
            ..Default::default()
        };
        let with_uvs = self.garments.iter().all(|g| g.render.uvs.is_some());
        let with_normals = self.garments.iter().all(|g| g.render.normals.is_some());
        out.uvs = with_uvs.then(Vec::new);
        out.normals = with_normals.then(Vec::new);
        for g in &self.garments {
            out.append(&g.render);
        }
        out
    }

    /// Frames to bake: the timeline's range, or the body animation's when it has no end frame.
    ///
    /// A looping animation of length `L` gives the frames at `k/fps < L`: the pose at `L` is
    /// the first one again, so a baked loop does not repeat a frame. A clamped one includes `L`.
    pub fn frame_count(&self) -> u32 {
        let timeline = &self.scene.timeline;
        let Some(body) = self.body.as_ref() else {
            return timeline.frame_count(None);
        };
        let length = body.animation_range_s().map(|(a, b)| b - a);
        match (timeline.end_frame, length, body.playback) {
            (None, Some(len), Playback::Loop) if len.is_finite() && len > 0.0 => {
                ((len * timeline.fps as f64 - 1e-6).ceil() as i64).clamp(1, MAX_FRAMES as i64)
                    as u32
            }
            _ => timeline.frame_count(length),
        }
    }

    /// Replaces the body's collision exclusions (the scene's `body.exclude_joints` and
    /// `exclude_weight`), e.g. from the command line. Fails, and changes nothing, when a joint
    /// is not a node of the body file or the scene has no body.
    pub fn set_exclusions(&mut self, joints: Vec<String>, weight: Real) -> Result<(), BakeError> {
        let (Some(spec), Some(body)) = (self.scene.body.as_mut(), self.body.as_mut()) else {
            return Err(BakeError::Scene(SceneError::Field {
                path: self.path.clone(),
                field: "body.exclude_joints".into(),
                problem: "the scene has no body to exclude joints of".into(),
            }));
        };
        let exclusion = if joints.is_empty() {
            None
        } else {
            Some((Arc::new(body.rig.joint_influence(&joints)?), weight))
        };
        spec.exclude_joints = joints;
        spec.exclude_weight = weight;
        body.exclusion = exclusion;
        Ok(())
    }

    /// The collider for the body at its rest pose, if the scene has a body.
    pub fn body_collider(&self) -> Result<Option<BodyCollider>, BakeError> {
        self.body.as_ref().map(LoadedBody::collider).transpose()
    }

    /// Builds the solver model: every garment's particles, constraints and pins, one after the
    /// other, with pins bound to the body surface as each garment's [`PinTarget`] says.
    /// `body` is the body's collider at its rest pose. Returns the model and each garment's
    /// first particle index.
    pub fn build_model(&self, body: Option<&BodyCollider>) -> (ClothModel, Vec<u32>) {
        self.build_model_at(body, Vec3::ZERO)
    }

    /// The point the solver's coordinates are measured from (m, world): the centre of the
    /// body's rest-pose bounds (of the garments' without a body), rounded to whole metres.
    ///
    /// Positions are single precision: 10 km from the origin they are only good to about
    /// 1 mm, coarser than a substep's motion, so [`LoadedScene::build_solver`] subtracts this
    /// point from every position before simulating and the bake adds it back. Whole metres
    /// keep the subtraction exact for points near it, and the shift of a scene moved by whole
    /// metres is exactly the shift of its origin. A scene at the origin gets `(0, 1, 0)` or so.
    pub fn sim_origin_m(&self) -> Vec3 {
        let bounds = match &self.body {
            Some(b) => b.rig.rest_bounds(),
            None => {
                let points: Vec<Vec3> = (self.garments.iter())
                    .flat_map(|g| g.render.positions.iter().copied())
                    .collect();
                crate::body::bounds(&points)
            }
        };
        match bounds {
            Some((lo, hi)) if lo.is_finite() && hi.is_finite() => ((lo + hi) * 0.5).round(),
            _ => Vec3::ZERO,
        }
    }

    /// Turns the scene into a solver re-centred on [`LoadedScene::sim_origin_m`]: the body's
    /// collider and motion, every particle and every pin target are relative to that point
    /// (see [`SceneSolver`]). The body moves as the timeline says, with `preroll_frames` of
    /// blending in; the solver starts at time 0, before the pre-roll.
    pub fn build_solver(&self) -> Result<SceneSolver, BakeError> {
        self.build_solver_at(self.sim_origin_m())
    }

    /// [`LoadedScene::build_solver`] re-centred on `origin_m` (m, world) instead;
    /// `Vec3::ZERO` simulates in world coordinates.
    pub fn build_solver_at(&self, origin_m: Vec3) -> Result<SceneSolver, BakeError> {
        let start_frame = self.scene.timeline.start_frame;
        // The body, moved by −origin: its rig is skinned next to the origin as well.
        let body = self.body.as_ref().map(|b| {
            let mut rig = (*b.rig).clone();
            rig.translate(-origin_m);
            LoadedBody {
                rig: Arc::new(rig),
                ..b.clone()
            }
        });
        let collider = body.as_ref().map(LoadedBody::collider).transpose()?;
        let (model, offsets) = self.build_model_at(collider.as_ref(), origin_m);
        // A body that does not move is left static: posing it every substep would cost a
        // skinning and a refit for nothing.
        let motion = body.as_ref().filter(|b| b.rig.is_animated()).map(|b| {
            // As the bake's own clock computes it, so both clocks agree to the bit.
            let dt = 1.0 / self.scene.timeline.fps;
            let preroll_s = self.scene.timeline.preroll_frames as f64 * dt as f64;
            Box::new(b.clock(preroll_s)) as Box<dyn crate::solver::BodyMotion>
        });
        let settings = self.scene.solver.clone();
        let mut solver = match motion {
            Some(m) => Solver::new_moving(settings, model, collider, m),
            None => Solver::new(settings, model, collider),
        }
        .map_err(|e| self.sim_error(start_frame, e))?;
        self.attach_network(&mut solver)
            .map_err(|e| self.sim_error(start_frame, e))?;
        Ok(SceneSolver {
            solver,
            offsets,
            origin_m,
        })
    }

    /// A solver error at timeline frame `frame` as a bake error; a pose the collider cannot
    /// take is the body file's fault, and names it.
    fn sim_error(&self, frame: i32, source: SimError) -> BakeError {
        match source {
            SimError::Body { time_s, source } => BakeError::BodyPose {
                scene: self.path.clone(),
                body: self
                    .body
                    .as_ref()
                    .map(|b| b.path.clone())
                    .unwrap_or_default(),
                frame,
                time_s,
                source,
            },
            source => BakeError::Sim {
                scene: self.path.clone(),
                frame,
                source,
            },
        }
    }

    /// [`LoadedScene::build_model`] in coordinates relative to `origin_m` (m, world): every
    /// particle and pin target is moved by `−origin_m`; `body` is the collider in the same
    /// coordinates.
    pub fn build_model_at(
        &self,
        body: Option<&BodyCollider>,
        origin_m: Vec3,
    ) -> (ClothModel, Vec<u32>) {
        let mut model = ClothModel::default();
        let mut offsets = Vec::new();
        for g in &self.garments {
            let base = model.positions.len() as u32;
            offsets.push(base);
            let sim = g.sim_mesh();
            let mut c = build_cloth_oriented(sim, &g.topology, &g.fabric, g.warps.as_deref());
            if let Some(maps) = &g.maps {
                maps.scale_constraints(&mut c);
            }
            let n = sim.positions.len();
            model
                .positions
                .extend(sim.positions.iter().map(|&p| p - origin_m));
            model.mass_kg.extend_from_slice(&c.mass_kg);
            model
                .damping_per_s
                .extend(std::iter::repeat_n(g.fabric.damping_per_s, n));
            model
                .friction
                .extend(std::iter::repeat_n(g.fabric.friction, n));
            model.stretch.extend(c.stretch.into_iter().map(|mut d| {
                d.particles = d.particles.map(|i| i + base);
                d
            }));
            model.shear.extend(c.shear.into_iter().map(|mut s| {
                s.particles = s.particles.map(|i| i + base);
                s
            }));
            model.bend.extend(c.bend.into_iter().map(|mut b| {
                b.particles = b.particles.map(|i| i + base);
                b
            }));
            model
                .triangles
                .extend(sim.indices.iter().map(|t| t.map(|i| i + base)));
            model.layer.extend(std::iter::repeat_n(g.spec.layer, n));
            if self.scene.solver.tether_slack >= 0.0 {
                let tethers =
                    build_tethers(sim, &g.topology, &g.pinned, self.scene.solver.tether_slack);
                model.tethers.extend(tethers.into_iter().map(|mut t| {
                    t.particle += base;
                    t.anchor += base;
                    t
                }));
            }
            if self.scene.solver.span_limit_slack >= 0.0 {
                let limits =
                    build_span_limits(sim, &g.topology, self.scene.solver.span_limit_slack);
                model.span_limits.extend(limits.into_iter().map(|mut s| {
                    s.particles = s.particles.map(|i| i + base);
                    s
                }));
            }
            let bind = |p: Vec3| -> Option<crate::collide::SurfaceAnchor> {
                let body = body?;
                match g.spec.pin_target {
                    PinTarget::World => None,
                    PinTarget::Body => Some(body.anchor(p)),
                    PinTarget::Auto => (body.closest(p).signed_distance_m.abs()
                        <= AUTO_BIND_DISTANCE_M)
                        .then(|| body.anchor(p)),
                }
            };
            for &(i, alpha) in &g.soft_pins {
                let target_m = sim.positions[i as usize] - origin_m;
                if let Some(anchor) = bind(target_m) {
                    model.body_bindings.push(BodyBinding {
                        target: Anchored::Attachment(model.attach.len() as u32),
                        anchor,
                    });
                }
                model.attach.push(Attachment {
                    particle: i + base,
                    target_m,
                    compliance_m_per_n: alpha,
                });
            }
            for &i in &g.pinned {
                let target_m = sim.positions[i as usize] - origin_m;
                if let Some(anchor) = bind(target_m) {
                    model.body_bindings.push(BodyBinding {
                        target: Anchored::Pin(model.pins.len() as u32),
                        anchor,
                    });
                }
                model.pins.push(Pin {
                    particle: i + base,
                    target_m,
                });
            }
        }
        (model, offsets)
    }
}

/// A scene's solver in coordinates re-centred on a world point, built by
/// [`LoadedScene::build_solver`].
///
/// Every position the solver holds (particles, body, pin targets, contacts) is relative to
/// `origin_m`; [`SceneSolver::world_render_positions`] gives the garments' render positions
/// back in world coordinates. Frames, stats and exports of a bake are in world coordinates.
pub struct SceneSolver {
    /// The solver, in coordinates relative to `origin_m`.
    pub solver: Solver,
    /// Each garment's first particle in the solver.
    pub offsets: Vec<u32>,
    /// The world position of the solver's origin (m).
    pub origin_m: Vec3,
}

impl SceneSolver {
    /// The merged render positions of `loaded`'s garments relative to `origin_m` (m), as the
    /// solver sees them.
    pub fn local_render_positions(&self, loaded: &LoadedScene) -> Vec<Vec3> {
        loaded.render_positions(&self.offsets, &self.solver.particles().x)
    }

    /// The merged render positions of `loaded`'s garments in world coordinates (m).
    pub fn world_render_positions(&self, loaded: &LoadedScene) -> Vec<Vec3> {
        let mut out = self.local_render_positions(loaded);
        self.to_world(&mut out);
        out
    }

    /// Moves positions relative to `origin_m` to world coordinates, in place.
    pub fn to_world(&self, positions: &mut [Vec3]) {
        if self.origin_m != Vec3::ZERO {
            for p in positions {
                *p += self.origin_m;
            }
        }
    }
}

/// Edges of a welded garment shorter than this fraction of its median edge are collapsed
/// before simulating ([`collapse_short_edges`]).
pub const SHORT_EDGE_FRACTION: Real = 0.01;

/// What [`collapse_short_edges`] did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Collapsed {
    /// Edges shorter than the threshold.
    pub edges: usize,
    /// Vertices merged into another.
    pub vertices: usize,
    /// The threshold (m).
    pub threshold_m: Real,
    /// The mesh's median edge length (m).
    pub median_m: Real,
}

/// Collapses the edges of `welded` shorter than `fraction` of its median edge length: their
/// ends become one vertex (the lowest-numbered one, where it stands), triangles that lose a
/// corner are dropped, and the render map is updated. `None` (and the mesh unchanged) when no
/// edge is that short.
///
/// Why: the solver judges a step by each edge's relative stretch, and an edge of a few
/// micrometres (a sliver left by a modelling tool) stretches by 100 % when its ends move a few
/// micrometres apart, so a single sliver fails a bake that is otherwise fine. Such an edge
/// carries no shape: merging its ends changes nothing visible.
pub fn collapse_short_edges(mut welded: Welded, fraction: Real) -> (Welded, Option<Collapsed>) {
    let mesh = &welded.mesh;
    let mut edges: Vec<(u32, u32, Real)> = Vec::with_capacity(mesh.indices.len() * 3);
    for t in &mesh.indices {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            let (a, b) = (a.min(b), a.max(b));
            let len = mesh.positions[a as usize].distance(mesh.positions[b as usize]);
            edges.push((a, b, len));
        }
    }
    edges.sort_unstable_by_key(|e| (e.0, e.1));
    edges.dedup_by_key(|e| (e.0, e.1));
    let mut lengths: Vec<Real> = edges
        .iter()
        .map(|e| e.2)
        .filter(|l| l.is_finite())
        .collect();
    if lengths.is_empty() {
        return (welded, None);
    }
    let mid = lengths.len() / 2;
    let median_m = *lengths.select_nth_unstable_by(mid, Real::total_cmp).1;
    let threshold_m = median_m * fraction;
    let short: Vec<(u32, u32)> = (edges.iter())
        .filter(|e| e.0 != e.1 && e.2 < threshold_m)
        .map(|e| (e.0, e.1))
        .collect();
    if short.is_empty() {
        return (welded, None);
    }
    // Union–find over the short edges; every set is represented by its lowest vertex.
    let n = mesh.positions.len();
    let mut parent: Vec<u32> = (0..n as u32).collect();
    fn root(parent: &mut [u32], mut i: u32) -> u32 {
        while parent[i as usize] != i {
            let up = parent[parent[i as usize] as usize];
            parent[i as usize] = up;
            i = up;
        }
        i
    }
    for &(a, b) in &short {
        let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
        let (lo, hi) = (ra.min(rb), ra.max(rb));
        parent[hi as usize] = lo;
    }
    // Renumber the representatives in order.
    let mut new_index = vec![u32::MAX; n];
    let mut keep = Vec::new();
    for i in 0..n as u32 {
        let r = root(&mut parent, i);
        if r == i {
            new_index[i as usize] = keep.len() as u32;
            keep.push(i);
        }
    }
    let map: Vec<u32> = (0..n as u32)
        .map(|i| new_index[root(&mut parent, i) as usize])
        .collect();
    let pick = |v: &Vec<Vec3>| keep.iter().map(|&i| v[i as usize]).collect::<Vec<_>>();
    let mesh = &mut welded.mesh;
    mesh.positions = pick(&mesh.positions);
    if let Some(normals) = &mesh.normals {
        mesh.normals = Some(pick(normals));
    }
    if let Some(uvs) = &mesh.uvs {
        mesh.uvs = Some(keep.iter().map(|&i| uvs[i as usize]).collect());
    }
    mesh.indices = (mesh.indices.iter())
        .map(|t| t.map(|i| map[i as usize]))
        .filter(|t| t[0] != t[1] && t[1] != t[2] && t[0] != t[2])
        .collect();
    for w in &mut welded.original_to_welded {
        *w = map[*w as usize];
    }
    let vertices = n - keep.len();
    welded.merged += vertices;
    let info = Collapsed {
        edges: short.len(),
        vertices,
        threshold_m,
        median_m,
    };
    (welded, Some(info))
}

/// Soft attachments: welded vertex index and compliance (m/N).
type SoftPins = Vec<(u32, Real)>;

/// A garment's painted maps, read from their sidecar if need be, checked against its render
/// mesh (length, finite, in range: errors name the garment) and carried to its simulation
/// mesh; `None` for a garment without maps.
fn painted_maps(
    scene: &Path,
    spec: &GarmentSpec,
    render: &Mesh,
    welded: &Welded,
    proxy: Option<&GarmentProxy>,
) -> Result<Option<crate::paint::SimMaps>, BakeError> {
    use crate::paint::{RenderToSim, SimMaps};
    let Some(maps) = &spec.maps else {
        return Ok(None);
    };
    let err = |e: crate::paint::MapError| BakeError::Pins {
        scene: scene.to_path_buf(),
        garment: spec.name.clone(),
        problem: e.to_string(),
    };
    let mut maps = maps.clone();
    maps.load_sidecar(&spec.name, scene).map_err(err)?;
    maps.validate(&spec.name, render.positions.len())
        .map_err(err)?;
    let to_sim = match proxy {
        Some(p) => RenderToSim::Proxy(&p.binding),
        None => RenderToSim::Welded(&welded.original_to_welded, welded.mesh.positions.len()),
    };
    SimMaps::transfer(&maps.values, to_sim, &spec.name)
        .map(Some)
        .map_err(err)
}

/// Adds the painted attachments to those of the pin specification: hard pins are the union;
/// a vertex keeps its stiffest soft attachment, and none where it is hard-pinned.
fn merge_attachments(pinned: &mut Vec<u32>, soft: &mut SoftPins, hard: Vec<u32>, more: SoftPins) {
    pinned.extend(hard);
    pinned.sort_unstable();
    pinned.dedup();
    soft.extend(more);
    soft.retain(|(i, _)| pinned.binary_search(i).is_err());
    soft.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    soft.dedup_by_key(|s| s.0);
}

/// Turns a garment's pin specification into welded vertex indices: the hard pins, and the soft
/// attachments with their compliance (m/N).
fn resolve_pins(
    scene: &Path,
    spec: &GarmentSpec,
    render: &Mesh,
    welded: &Welded,
    proxy: Option<&GarmentProxy>,
) -> Result<(Vec<u32>, SoftPins), BakeError> {
    let n = render.positions.len();
    let err = |problem: String| BakeError::Pins {
        scene: scene.to_path_buf(),
        garment: spec.name.clone(),
        problem,
    };
    let mut soft: Vec<(u32, Real)> = Vec::new();
    let render_ids: Vec<u32> = match &spec.pins {
        Pins::None => Vec::new(),
        Pins::Vertices(v) => {
            if let Some(&bad) = v.iter().find(|&&i| i as usize >= n) {
                return Err(err(format!(
                    "pinned vertex {bad} does not exist (the mesh has {n} vertices)"
                )));
            }
            v.clone()
        }
        Pins::Weights {
            weights,
            threshold,
            soft_compliance_m_per_n,
        } => {
            if weights.len() != n {
                return Err(err(format!(
                    "{} pin weights for {n} vertices; give one weight per vertex",
                    weights.len()
                )));
            }
            soft = (0..n)
                .filter(|&i| weights[i] > 0.0 && weights[i] < *threshold)
                .map(|i| (i as u32, soft_compliance_m_per_n / weights[i]))
                .collect();
            (0..n as u32)
                .filter(|&i| weights[i as usize] >= *threshold)
                .collect()
        }
        Pins::Box { min, max } => {
            let (lo, hi) = (Vec3::from(*min), Vec3::from(*max));
            (0..n as u32)
                .filter(|&i| {
                    let p = render.positions[i as usize];
                    p.cmpge(lo).all() && p.cmple(hi).all()
                })
                .collect()
        }
    };
    let (mut ids, soft): (Vec<u32>, SoftPins) = match proxy {
        None => (
            render_ids
                .iter()
                .map(|&i| welded.original_to_welded[i as usize])
                .collect(),
            soft.into_iter()
                .map(|(i, a)| (welded.original_to_welded[i as usize], a))
                .collect(),
        ),
        Some(p) => proxy_pins(spec, &render_ids, p).map_err(err)?,
    };
    ids.sort_unstable();
    ids.dedup();
    // Welded duplicates: keep the stiffest soft attachment, and none on a hard pin.
    let mut soft: SoftPins = soft
        .into_iter()
        .filter(|(i, _)| ids.binary_search(i).is_err())
        .collect();
    soft.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
    soft.dedup_by_key(|s| s.0);
    Ok((ids, soft))
}

/// Carries a garment's pins from its render mesh to its proxy: a weight map through the
/// binding (then thresholded, as on the render mesh), a box on the proxy's own vertices as well
/// as the render vertices' representatives, listed vertices to their representatives.
fn proxy_pins(
    spec: &GarmentSpec,
    render_ids: &[u32],
    proxy: &GarmentProxy,
) -> Result<(Vec<u32>, SoftPins), String> {
    let represent = |ids: &[u32]| -> Vec<u32> {
        ids.iter()
            .map(|&i| proxy.representative[i as usize])
            .collect()
    };
    Ok(match &spec.pins {
        Pins::Weights {
            weights,
            threshold,
            soft_compliance_m_per_n,
        } => {
            let w = proxy
                .binding
                .render_to_proxy(weights)
                .map_err(|e| e.to_string())?;
            let hard = (0..w.len() as u32)
                .filter(|&i| w[i as usize] >= *threshold)
                .collect();
            let soft = (0..w.len())
                .filter(|&i| w[i] > 0.0 && w[i] < *threshold)
                .map(|i| (i as u32, soft_compliance_m_per_n / w[i]))
                .collect();
            (hard, soft)
        }
        Pins::Box { min, max } => {
            let (lo, hi) = (Vec3::from(*min), Vec3::from(*max));
            let mut ids = represent(render_ids);
            ids.extend((0..proxy.mesh.positions.len() as u32).filter(|&i| {
                let p = proxy.mesh.positions[i as usize];
                p.cmpge(lo).all() && p.cmple(hi).all()
            }));
            (ids, Vec::new())
        }
        Pins::Vertices(_) | Pins::None => (represent(render_ids), Vec::new()),
    })
}

/// Options of a bake.
#[derive(Default)]
pub struct BakeOptions<'a> {
    /// Overrides the number of frames of the timeline.
    pub frames: Option<u32>,
    /// Called after each frame with `(frames done, frames total)`.
    pub progress: Option<&'a dyn Fn(usize, usize)>,
    /// When set to `true` (from another thread), the bake stops after the current frame.
    pub cancel: Option<&'a AtomicBool>,
}

/// The result of a bake.
#[derive(Clone, Debug)]
pub struct BakeResult {
    /// The exported mesh: all garments' render meshes merged, rest pose.
    pub render_mesh: Mesh,
    /// Render positions per baked frame (m); frame 0 is the garment after the pre-roll (the rest
    /// pose without one), with the body at the start of its animation.
    pub frames: Vec<Vec<Vec3>>,
    /// Frames per second.
    pub fps: Real,
    /// Timeline number of the first frame.
    pub start_frame: i32,
    /// Measurements.
    pub stats: Stats,
    /// Whether the bake was cancelled before the end of the range.
    pub cancelled: bool,
    /// The body's pose at each baked frame (empty without a body), for export.
    pub body_poses: Vec<Pose>,
}

/// The body as an export writes it: skinned and animated when its rig moves and the bake
/// recorded a pose per frame, else its rest mesh, static; `None` without a body.
fn body_export<'a>(
    loaded: &'a LoadedScene,
    result: &'a BakeResult,
) -> Option<crate::io::gltf_export::BodyExport<'a>> {
    use crate::io::gltf_export::BodyExport;
    loaded.body.as_ref().map(|b| {
        if b.rig.is_animated() && result.body_poses.len() == result.frames.len() {
            BodyExport::Animated {
                rig: &b.rig,
                poses: &result.body_poses,
            }
        } else {
            BodyExport::Static(b.mesh())
        }
    })
}

/// Writes a bake as glTF binary: the garments' render mesh as morph-target animation, plus the
/// body — skinned and animated when its rig moves and the bake recorded its poses, else its
/// rest mesh, static.
pub fn write_glb(
    loaded: &LoadedScene,
    result: &BakeResult,
    out: &Path,
) -> Result<(), crate::io::gltf_export::GltfExportError> {
    use crate::io::gltf_export::{write_bake_glb, BakeExport};
    let body = body_export(loaded, result);
    write_bake_glb(
        out,
        &BakeExport {
            garment: &result.render_mesh,
            frames: &result.frames,
            fps: result.fps,
            body,
        },
    )
}

/// Writes a bake as a USD text stage (`.usda`): the garments' render mesh and the body as
/// meshes with time-sampled points on the timeline's frame numbers (see [`crate::io::usd`]).
pub fn write_usd(
    loaded: &LoadedScene,
    result: &BakeResult,
    out: &Path,
) -> Result<(), crate::io::usd::UsdExportError> {
    use crate::io::usd::{write_bake_usd, UsdBake};
    let body = body_export(loaded, result);
    write_bake_usd(
        out,
        &UsdBake {
            garment: &result.render_mesh,
            frames: &result.frames,
            fps: result.fps,
            start_frame: result.start_frame,
            body,
        },
    )
}

/// Bakes a loaded scene, simulating it re-centred on [`LoadedScene::sim_origin_m`].
pub fn bake(loaded: &LoadedScene, options: &BakeOptions) -> Result<BakeResult, BakeError> {
    bake_at(loaded, options, loaded.sim_origin_m())
}

/// [`bake`], simulating re-centred on `origin_m` (m, world) instead; the frames are in world
/// coordinates all the same. `Vec3::ZERO` simulates in world coordinates, as Drape did before
/// it re-centred scenes.
pub fn bake_at(
    loaded: &LoadedScene,
    options: &BakeOptions,
    origin_m: Vec3,
) -> Result<BakeResult, BakeError> {
    let wall = Instant::now();
    let scene = &loaded.scene;
    let fps = scene.timeline.fps;
    let total = options
        .frames
        .unwrap_or_else(|| loaded.frame_count())
        .clamp(1, crate::scene::MAX_FRAMES) as usize;
    let SceneSolver {
        mut solver,
        offsets,
        origin_m,
    } = loaded.build_solver_at(origin_m)?;
    let model = solver.model();
    let counts = ConstraintCounts {
        stretch: model.stretch.len(),
        shear: model.shear.len(),
        bend: model.bend.len(),
        attach: model.pins.len() + model.attach.len(),
        tether: model.tethers.len(),
        span_limit: model.span_limits.len(),
    };
    let start_frame = scene.timeline.start_frame;
    let sim_err = |frame, source| loaded.sim_error(frame, source);
    let dt = 1.0 / fps;
    let preroll = scene.timeline.preroll_frames;
    // The body's poses in world coordinates, for export (the solver has its own clock, on the
    // re-centred rig).
    let clock = loaded
        .body
        .as_ref()
        .map(|b| b.clock(preroll as f64 * dt as f64));
    let mut warnings = loaded.warnings.clone();
    if preroll == 0 && clock.as_ref().is_some_and(|c| c.rig().is_animated()) {
        warnings.push(format!(
            "{}: timeline.preroll_frames is 0, so the animated body starts at its first animation \
             pose while the garment sits where it was fitted (the rest pose); set a pre-roll \
             (e.g. 24 frames) to blend the body in",
            loaded.path.display()
        ));
    }
    // Pre-roll: settle the garment while the body blends into its first pose.
    let mut settle_rollbacks = 0;
    let stop = || options.cancel.is_some_and(|c| c.load(Ordering::Relaxed));
    let mut cancelled = false;
    if preroll > 0 {
        solver.set_settling(Some(scene.timeline.settle_push_speed_m_per_s));
        if let Some(progress) = options.progress {
            progress(0, total);
        }
        for k in 0..preroll {
            // Cancel works during the pre-roll too (the bake then has no frames).
            if stop() {
                cancelled = true;
                break;
            }
            let frame = start_frame.saturating_sub((preroll - k) as i32);
            let r = solver.step_frame(dt).map_err(|e| sim_err(frame, e))?;
            settle_rollbacks += r.rollbacks;
            warnings.extend(
                (r.rollback_reasons.iter())
                    .map(|r| format!("pre-roll frame {frame}: rolled back at {r}")),
            );
        }
        solver.set_settling(None);
    }
    let mut body_poses = Vec::new();
    // The measured triangles: every garment's simulation mesh, in solver numbering.
    let sim_triangles: Vec<[u32; 3]> = loaded
        .garments
        .iter()
        .zip(&offsets)
        .flat_map(|(g, &base)| {
            g.sim_mesh()
                .indices
                .iter()
                .map(move |t| t.map(|i| i + base))
        })
        .collect();
    let render_of = |x: &[Vec3]| -> Vec<Vec3> { loaded.render_positions(&offsets, x) };
    // Cloth where two parts of the body leave less room than this is pinched between them.
    let pinch_gap_m = 2.0 * scene.solver.collision_thickness_m;
    let mut frames = Vec::with_capacity(total.min(4096));
    let mut per_frame = Vec::with_capacity(total.min(4096));
    let mut sim_seconds = 0.0f64;
    let total = if cancelled { 0 } else { total };
    for k in 0..total {
        let frame = start_frame.saturating_add(k as i32);
        let report = if k == 0 {
            crate::solver::FrameReport::default()
        } else {
            let t = Instant::now();
            let r = solver.step_frame(dt).map_err(|e| sim_err(frame, e))?;
            sim_seconds += t.elapsed().as_secs_f64();
            r
        };
        warnings.extend(
            (report.rollback_reasons.iter()).map(|r| format!("frame {frame}: rolled back at {r}")),
        );
        if let Some(clock) = &clock {
            body_poses.push(clock.pose(solver.time_s()));
        }
        let x = &solver.particles().x;
        // Relative to the solver's origin, like the body it is measured against.
        let mut render = render_of(x);
        let (max_stretch, mean_stretch) = edge_stretch(
            x,
            solver
                .model()
                .stretch
                .iter()
                .map(|c| (c.particles, c.rest_length_m)),
        );
        let pen = solver
            .body()
            .map(|b| measure_penetrations(b, &render, pinch_gap_m))
            .unwrap_or_default();
        per_frame.push(FrameStats {
            frame,
            max_stretch,
            mean_stretch,
            body_penetrations: pen.count,
            max_penetration_m: pen.max_depth_m,
            pinched_vertices: pen.pinched,
            self_intersections: count_self_intersections(x, &sim_triangles),
            max_residual: report.max_residual_m,
            rollbacks: report.rollbacks,
            non_finite: render.iter().filter(|p| !p.is_finite()).count(),
            iterations: report.iterations,
            neural_substeps: report.neural_substeps,
            neural_rejected: report.neural_rejected,
            neural_fallbacks: report.neural_fallbacks,
            neural_max_correction_m: report.neural_max_correction_m,
            neural_world_edges: report.neural_world_edges,
            neural_inferences: report.neural_inferences,
            gpu_substeps: report.gpu_substeps,
            gpu_fallbacks: report.gpu_fallbacks,
        });
        if origin_m != Vec3::ZERO {
            for p in &mut render {
                *p += origin_m;
            }
        }
        frames.push(render);
        if let Some(progress) = options.progress {
            progress(k + 1, total);
        }
        if stop() && k + 1 < total {
            cancelled = true;
            break;
        }
    }
    // Where the solver could not run as the settings asked (no GPU adapter, a scene the GPU
    // path lacks something for), and why.
    warnings.extend(solver.take_backend_notes());
    let times = solver.stage_times();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    let stepped = frames.len().saturating_sub(1).max(1);
    let mut stats = Stats {
        drape_version: crate::VERSION.into(),
        scene: scene.name.clone(),
        fps,
        frames: frames.len(),
        substeps: scene.solver.substeps,
        iterations: scene.solver.iterations,
        backend: solver.backend_name(),
        proxy_vertices: loaded.proxy_vertices(),
        render_vertices: loaded.render_vertices(),
        constraints: counts,
        wall_seconds: wall.elapsed().as_secs_f64(),
        sim_ms_per_frame: sim_seconds * 1000.0 / stepped as f64,
        stage_ms: StageMs {
            kinematics: ms(times.kinematics),
            predict: ms(times.predict),
            contacts: ms(times.contacts),
            project: ms(times.project),
            velocities: ms(times.velocities),
            check: ms(times.check),
            neural: ms(times.neural),
            gpu: ms(times.gpu),
            project_kinds: {
                let k = &times.project_kinds;
                ProjectMs {
                    attachments: ms(k.attachments),
                    span_limits: ms(k.span_limits),
                    stretch: ms(k.stretch),
                    shear: ms(k.shear),
                    bend: ms(k.bend),
                    body_vertices: ms(k.body_vertices),
                    contacts: ms(k.contacts),
                    self_contacts: ms(k.self_contacts),
                    pipelined: ms(k.pipelined),
                }
            },
        },
        warnings,
        preroll_frames: preroll,
        settle_rollbacks,
        per_frame,
        summary: Default::default(),
    };
    stats.summarise();
    Ok(BakeResult {
        render_mesh: loaded.merged_render_mesh(),
        frames,
        fps,
        start_frame,
        stats,
        cancelled,
        body_poses,
    })
}
