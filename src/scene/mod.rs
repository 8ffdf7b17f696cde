//! The scene file: which body and garments, which fabrics and pins, solver settings, timeline.
//!
//! A scene is a versioned RON file (see `docs/scene-format.md`). Paths inside it are relative to
//! the scene file. Every field has a default (`#[serde(default)]`), so older files keep loading;
//! unknown fields are rejected, so a typo is an error instead of a silently ignored setting.
//! Validation names the file, the field and the problem.
//!
//! Also here: the built-in scenes ([`demo`]), the walking mannequin they use ([`walk`]) and the
//! exchange of a scene's painted maps through glTF ([`maps`]).
//!
//! May import: [`crate::preset`], [`crate::io`], [`crate::paint`], [`crate::solver`],
//! [`crate::garment`], [`crate::collide`], [`crate::body`], [`crate::mesh`], [`crate::file`],
//! [`crate::math`].

pub mod demo;
pub mod maps;
pub mod walk;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::body::{AnimationRef, Playback};
use crate::garment::material::{Fabric, DEFAULT_FABRIC};
use crate::math::Real;
use crate::preset::builtin_fabric;
use crate::solver::SolverSettings;

/// The most frames one bake may have (about 7 minutes at 24 fps). Every baked frame is kept in
/// memory and the glTF `weights` animation grows with the square of the frame count.
pub const MAX_FRAMES: u32 = 10_000;

/// The scene format version this build writes and reads.
pub const SCENE_VERSION: u32 = 1;

/// A scene.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Scene {
    /// Format version; files from a newer Drape are refused.
    pub version: u32,
    /// Scene name, written into stats.
    pub name: String,
    /// The character (a collider), if any.
    pub body: Option<BodySpec>,
    /// The garments to simulate.
    pub garments: Vec<GarmentSpec>,
    /// Solver settings.
    pub solver: SolverSettings,
    /// Frame rate and frame range.
    pub timeline: Timeline,
}

impl Default for Scene {
    fn default() -> Self {
        Self {
            version: SCENE_VERSION,
            name: "untitled".into(),
            body: None,
            garments: Vec::new(),
            solver: SolverSettings::default(),
            timeline: Timeline::default(),
        }
    }
}

/// The body: a glTF character (skinned and animated, or static) used as a collider.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BodySpec {
    /// glTF file, relative to the scene file.
    pub path: PathBuf,
    /// Mesh name inside the file; `None` takes every mesh of the file's scene.
    pub mesh: Option<String>,
    /// The animation to play, by name or index; `None` plays the file's first animation (if
    /// any).
    pub animation: Option<AnimationRef>,
    /// What happens past the animation's end: `Loop` repeats it, `Clamp` holds the last pose.
    pub playback: Playback,
    /// Factor from the file's units to metres, applied to the whole body (rest mesh, skeleton
    /// and animation) right after loading: `0.01` for a body authored in centimetres. Finite
    /// and greater than 0; 1 by default (not written then).
    #[serde(skip_serializing_if = "is_one")]
    pub unit_scale: Real,
    /// Body regions left out of collision, by joint: the nodes named here (or `node_N` for an
    /// unnamed node, N its glTF index) and their descendants. A body triangle whose vertices
    /// follow them with a mean skin weight above `exclude_weight` does not collide: hands that
    /// should pass through a skirt rather than pinch it. Empty by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude_joints: Vec<String>,
    /// The skin weight above which a triangle follows the `exclude_joints` (0 to 1); 0.5 by
    /// default.
    #[serde(
        default = "default_exclude_weight",
        skip_serializing_if = "is_default_exclude_weight"
    )]
    pub exclude_weight: Real,
}

/// [`BodySpec::exclude_weight`]'s default.
pub const DEFAULT_EXCLUDE_WEIGHT: Real = 0.5;

fn default_exclude_weight() -> Real {
    DEFAULT_EXCLUDE_WEIGHT
}

fn is_default_exclude_weight(w: &Real) -> bool {
    *w == DEFAULT_EXCLUDE_WEIGHT
}

/// Whether a unit scale is the default, 1 (it is then left out of the written scene).
fn is_one(s: &Real) -> bool {
    *s == 1.0
}

/// Largest `unit_scale` a scene may give (file units of a kilometre).
pub const MAX_UNIT_SCALE: Real = 1000.0;

/// Bodies whose largest rest-pose extent is above this (m) get a unit warning when their
/// `unit_scale` is 1: no character is 10 m tall; the file is likely in centimetres or inches.
pub const MAX_PLAUSIBLE_BODY_M: Real = 10.0;

/// Bodies whose largest rest-pose extent is below this (m) get a unit warning when their
/// `unit_scale` is 1 (a file in decimetres, or scaled down on export).
pub const MIN_PLAUSIBLE_BODY_M: Real = 0.1;

/// The unit scale that brings an asset of largest extent `extent_m` (in file units) to
/// about human size: the power of ten nearest to `1.7 / extent_m`, e.g. `0.01` for a body
/// 166 units long. `None` for an extent that is not finite and positive.
pub fn suggested_unit_scale(extent_m: Real) -> Option<Real> {
    if !(extent_m.is_finite() && extent_m > 0.0) {
        return None;
    }
    let exponent = (1.7 / extent_m as f64).log10().round() as i32;
    Some(10f64.powi(exponent) as Real)
}

impl Default for BodySpec {
    fn default() -> Self {
        Self {
            path: PathBuf::from("body.glb"),
            mesh: None,
            animation: None,
            playback: Playback::Loop,
            unit_scale: 1.0,
            exclude_joints: Vec::new(),
            exclude_weight: DEFAULT_EXCLUDE_WEIGHT,
        }
    }
}

/// Where pin targets live.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum PinTarget {
    /// On the body surface when the pinned vertex is within [`AUTO_BIND_DISTANCE_M`] of it
    /// (so the pin follows the character), else fixed in world space.
    #[default]
    Auto,
    /// Always on the closest point of the body surface (the pins follow the character).
    Body,
    /// Fixed in world space, at the vertex's rest position.
    World,
}

/// Pins closer than this to the body surface are bound to it under [`PinTarget::Auto`] (m).
pub const AUTO_BIND_DISTANCE_M: Real = 0.05;

/// Which garment vertices are hard-pinned (held at their rest position).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Pins {
    /// No pins.
    #[default]
    None,
    /// These render-mesh vertex indices.
    Vertices(Vec<u32>),
    /// A weight per render-mesh vertex. Vertices at or above `threshold` are hard-pinned; those
    /// with a weight `w` in `(0, threshold)` get a soft attachment to their rest position with
    /// compliance `soft_compliance_m_per_n / w` (m/N): half the weight, twice as soft.
    Weights {
        /// One weight per render vertex, 0–1.
        weights: Vec<Real>,
        /// Weights at or above this are hard pins.
        threshold: Real,
        /// Compliance of a soft attachment of weight 1 (m/N).
        #[serde(default = "default_soft_compliance")]
        soft_compliance_m_per_n: Real,
    },
    /// Vertices inside this axis-aligned box (m).
    Box {
        /// Minimum corner (m).
        min: [Real; 3],
        /// Maximum corner (m).
        max: [Real; 3],
    },
}

fn default_soft_compliance() -> Real {
    1.0e-3
}

/// A garment: a glTF mesh, its fabric and its pins.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GarmentSpec {
    /// Garment name.
    pub name: String,
    /// glTF file, relative to the scene file.
    pub path: PathBuf,
    /// Mesh name inside the file; `None` takes the only mesh.
    pub mesh: Option<String>,
    /// Fabric preset name: a built-in one (see `presets/fabrics/`) or one in the user library.
    pub fabric: String,
    /// A full fabric given inline; it replaces the preset when present.
    pub fabric_override: Option<Fabric>,
    /// Pinned vertices.
    pub pins: Pins,
    /// Vertices closer than this are welded into one (m).
    pub weld_tolerance_m: Real,
    /// Where the pin targets live: on the body (following it) or in world space.
    pub pin_target: PinTarget,
    /// The simulation proxy: a simplified mesh the render mesh is bound to. `None` simulates
    /// the render mesh itself (after welding its seams).
    pub proxy: Option<ProxySpec>,
    /// Painted per-vertex maps on the render mesh (attachment weights, compliance and mass
    /// scales; see [`crate::paint`] and `docs/painting.md`). Large maps live in a sidecar file
    /// beside the scene ([`Scene::save`], [`Scene::load`]).
    pub maps: Option<crate::paint::GarmentMaps>,
    /// Collision layer, when the solver's `self_collision` is on: where two garments touch, the
    /// one with the lower layer (worn underneath) does not yield and the other one drapes over
    /// it. Garments of the same layer push each other equally. 0 by default.
    pub layer: i32,
    /// Factor from the file's units to metres, applied to the garment's mesh right after
    /// loading (before welding, pins and proxy): `0.01` for a mesh authored in centimetres.
    /// Finite and greater than 0; 1 by default (not written then).
    #[serde(skip_serializing_if = "is_one")]
    pub unit_scale: Real,
}

/// How coarse a garment's simulation proxy is.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum ProxySpec {
    /// About this many vertices.
    Vertices(u32),
    /// About this mean edge length (m).
    EdgeLength(Real),
}

/// Most vertices a proxy may be asked for.
pub const MAX_PROXY_VERTICES: u32 = 1_000_000;

impl ProxySpec {
    /// The proxy builder's target.
    pub fn target(self) -> crate::garment::proxy::ProxyTarget {
        match self {
            Self::Vertices(n) => crate::garment::proxy::ProxyTarget::Vertices(n as usize),
            Self::EdgeLength(l) => crate::garment::proxy::ProxyTarget::EdgeLength(l),
        }
    }
}

impl Default for GarmentSpec {
    fn default() -> Self {
        Self {
            name: "garment".into(),
            path: PathBuf::from("garment.glb"),
            mesh: None,
            fabric: DEFAULT_FABRIC.into(),
            fabric_override: None,
            pins: Pins::None,
            weld_tolerance_m: 1.0e-5,
            pin_target: PinTarget::Auto,
            proxy: None,
            maps: None,
            layer: 0,
            unit_scale: 1.0,
        }
    }
}

impl GarmentSpec {
    /// The fabric this garment uses: the inline override, or the named preset, built in or
    /// from the user library ([`crate::preset::Library::open_default`]).
    pub fn resolve_fabric(&self) -> Result<Fabric, crate::preset::PresetError> {
        let library = crate::preset::Library::open_default();
        self.resolve_fabric_in(library.as_ref().ok())
    }

    /// [`GarmentSpec::resolve_fabric`] with the user presets of `library`; `None` (no user
    /// folder) finds the built-in presets only.
    pub fn resolve_fabric_in(
        &self,
        library: Option<&crate::preset::Library>,
    ) -> Result<Fabric, crate::preset::PresetError> {
        match (&self.fabric_override, library) {
            (Some(f), _) => {
                f.validate()?;
                Ok(f.clone())
            }
            (None, Some(library)) => library.fabric(&self.fabric),
            (None, None) => builtin_fabric(&self.fabric),
        }
    }
}

/// Frame rate and range.
///
/// The first frame is the garment at rest (after the pre-roll, if any) with the body at the
/// start of its animation; each further frame advances `1/fps` seconds of animation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Timeline {
    /// Frames per second (1/s).
    pub fps: Real,
    /// First frame.
    pub start_frame: i32,
    /// Last frame, inclusive: the bake has `end_frame − start_frame + 1` frames. `None` takes
    /// the body animation's range (or [`DEFAULT_FRAMES`] frames without an animation).
    #[serde(deserialize_with = "frame_or_none")]
    pub end_frame: Option<i32>,
    /// Settle frames simulated before the first frame and not exported: the body blends from
    /// its rest pose into the animation's first pose, and a garment placed slightly inside the
    /// body is pushed out gently (see [`crate::solver::Solver::set_settling`]).
    pub preroll_frames: u32,
    /// While settling, how fast a body contact may push a particle out (m/s).
    pub settle_push_speed_m_per_s: Real,
}

/// Frames baked without an end frame and without a body animation.
pub const DEFAULT_FRAMES: u32 = 60;

/// Reads `end_frame` as `60`, `Some(60)` or `None` (older scenes wrote a plain number).
fn frame_or_none<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum FrameOrNone {
        Plain(i32),
        Optional(Option<i32>),
    }
    Ok(match FrameOrNone::deserialize(d)? {
        FrameOrNone::Plain(f) => Some(f),
        FrameOrNone::Optional(f) => f,
    })
}

impl Default for Timeline {
    fn default() -> Self {
        Self {
            fps: 24.0,
            start_frame: 1,
            end_frame: None,
            preroll_frames: 0,
            settle_push_speed_m_per_s: 0.5,
        }
    }
}

impl Timeline {
    /// Number of frames in the range; `animation_s` is the body animation's length (s), used
    /// when the end frame is not set (saturating; [`Scene::validate`] bounds it by
    /// [`MAX_FRAMES`]).
    pub fn frame_count(&self, animation_s: Option<f64>) -> u32 {
        match self.end_frame {
            Some(end) => {
                (end as i64 - self.start_frame as i64 + 1).clamp(0, u32::MAX as i64) as u32
            }
            None => match animation_s {
                // Frames at 0, 1/fps, …, up to and including the animation's end.
                Some(len) if len.is_finite() && len > 0.0 => {
                    ((len * self.fps as f64 + 1e-6).floor() as i64 + 1).clamp(1, MAX_FRAMES as i64)
                        as u32
                }
                _ => DEFAULT_FRAMES,
            },
        }
    }
}

/// A scene that cannot be loaded, saved or used.
#[derive(Debug, thiserror::Error)]
pub enum SceneError {
    /// The file cannot be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not valid RON for a scene.
    #[error("{path}: not a valid Drape scene: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A field has a value that cannot be used.
    #[error("{path}: field `{field}`: {problem}")]
    Field {
        /// The file.
        path: PathBuf,
        /// Dotted field path, e.g. `garments[0].fabric`.
        field: String,
        /// What is wrong and how to fix it.
        problem: String,
    },
}

impl Scene {
    /// Parses a scene from RON text; `path` is used in errors only.
    pub fn from_ron(text: &str, path: &Path) -> Result<Self, SceneError> {
        let (scene, warnings) = Self::from_ron_with_warnings(text, path)?;
        warnings.iter().for_each(|w| log::warn!("{w}"));
        Ok(scene)
    }

    /// [`Scene::from_ron`], returning the warnings instead of logging them: each retired
    /// solver setting the file sets ([`crate::solver::RETIRED_SETTINGS`]), which is ignored.
    pub fn from_ron_with_warnings(
        text: &str,
        path: &Path,
    ) -> Result<(Self, Vec<String>), SceneError> {
        let mut scene: Scene = ron::from_str(text).map_err(|e| SceneError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        scene.validate(path)?;
        let warnings = (scene.solver.take_retired().into_iter())
            .map(|w| format!("{}: field `solver`: {w}", path.display()))
            .collect();
        Ok((scene, warnings))
    }

    /// Loads and validates a scene file.
    pub fn load(path: &Path) -> Result<Self, SceneError> {
        let (scene, warnings) = Self::load_with_warnings(path)?;
        warnings.iter().for_each(|w| log::warn!("{w}"));
        Ok(scene)
    }

    /// [`Scene::load`], returning the warnings ([`Scene::from_ron_with_warnings`]) instead of
    /// logging them.
    pub fn load_with_warnings(path: &Path) -> Result<(Self, Vec<String>), SceneError> {
        // A scene is small; refuse anything huge before reading it into memory.
        const MAX_SCENE_BYTES: u64 = 256 * 1024 * 1024;
        let io = |source| SceneError::Io {
            path: path.to_path_buf(),
            source,
        };
        let len = std::fs::metadata(path).map_err(io)?.len();
        if len > MAX_SCENE_BYTES {
            return Err(SceneError::Parse {
                path: path.to_path_buf(),
                message: format!("the file is {len} bytes, larger than any scene"),
            });
        }
        let text = std::fs::read_to_string(path).map_err(io)?;
        let (mut scene, warnings) = Self::from_ron_with_warnings(&text, path)?;
        scene.load_map_files(path)?;
        Ok((scene, warnings))
    }

    /// Reads the painted maps that the scene keeps in sidecar files (paths relative to
    /// `path`, the scene file); maps already in memory are left alone.
    pub fn load_map_files(&mut self, path: &Path) -> Result<(), SceneError> {
        for (i, g) in self.garments.iter_mut().enumerate() {
            let name = g.name.clone();
            if let Some(maps) = &mut g.maps {
                maps.load_sidecar(&name, path)
                    .map_err(|e| SceneError::Field {
                        path: path.to_path_buf(),
                        field: format!("garments[{i}].maps.file"),
                        problem: e.to_string(),
                    })?;
            }
        }
        Ok(())
    }

    /// Serialises the scene as pretty RON.
    pub fn to_ron(&self) -> Result<String, ron::Error> {
        let config = ron::ser::PrettyConfig::new().struct_names(false);
        ron::ser::to_string_pretty(self, config)
    }

    /// Writes the scene atomically (a temporary file, then a rename).
    pub fn save(&self, path: &Path) -> Result<(), SceneError> {
        // Large painted maps go to a sidecar file beside the scene, written first.
        let mut written = self.clone();
        for (i, g) in written.garments.iter_mut().enumerate() {
            let name = g.name.clone();
            if let Some(maps) = &mut g.maps {
                if maps.file.is_none() && maps.wants_sidecar() {
                    let file = crate::paint::GarmentMaps::sidecar_name(path, i);
                    *maps = maps
                        .to_sidecar(&name, path, file)
                        .map_err(|e| SceneError::Field {
                            path: path.to_path_buf(),
                            field: format!("garments[{i}].maps"),
                            problem: e.to_string(),
                        })?;
                }
            }
        }
        let body = written.to_ron().map_err(|e| SceneError::Parse {
            path: path.to_path_buf(),
            message: format!("cannot be written: {e}"),
        })?;
        let text = format!(
            "// Drape scene (format version {}). See docs/scene-format.md.\n{body}\n",
            written.version
        );
        crate::file::atomic::write_atomic(path, text.as_bytes()).map_err(|source| SceneError::Io {
            path: path.to_path_buf(),
            source,
        })
    }

    /// Resolves a path from the scene file against the scene's folder.
    pub fn resolve(scene_path: &Path, relative: &Path) -> PathBuf {
        crate::file::resolve(scene_path, relative)
    }

    /// Checks every field; the error names the file and the field.
    pub fn validate(&self, path: &Path) -> Result<(), SceneError> {
        let field = |field: String, problem: String| SceneError::Field {
            path: path.to_path_buf(),
            field,
            problem,
        };
        if self.version > SCENE_VERSION {
            return Err(field(
                "version".into(),
                format!(
                    "version {} was written by a newer Drape; this build reads up to {SCENE_VERSION}",
                    self.version
                ),
            ));
        }
        if self.garments.is_empty() {
            return Err(field(
                "garments".into(),
                "the scene has no garment to simulate".into(),
            ));
        }
        let t = &self.timeline;
        if !(t.fps.is_finite() && t.fps > 0.0 && t.fps <= 10_000.0) {
            return Err(field(
                "timeline.fps".into(),
                format!(
                    "{} must be a number of frames per second in (0, 10000]",
                    t.fps
                ),
            ));
        }
        if let Some(end) = t.end_frame {
            if end < t.start_frame {
                return Err(field(
                    "timeline.end_frame".into(),
                    format!("{end} is before start_frame {}", t.start_frame),
                ));
            }
        }
        if t.preroll_frames > MAX_FRAMES {
            return Err(field(
                "timeline.preroll_frames".into(),
                format!("{} is more than {MAX_FRAMES}", t.preroll_frames),
            ));
        }
        if !(t.settle_push_speed_m_per_s.is_finite() && t.settle_push_speed_m_per_s > 0.0) {
            return Err(field(
                "timeline.settle_push_speed_m_per_s".into(),
                format!(
                    "{} must be a speed greater than 0 m/s",
                    t.settle_push_speed_m_per_s
                ),
            ));
        }
        self.solver
            .validate()
            .map_err(|e| field("solver".into(), e.to_string()))?;
        // Up to kilometres: a larger factor only blows a file's coordinates past anything the
        // solver's grids and the exporter can hold.
        let unit_scale = |name: String, s: Real| {
            if s.is_finite() && s > 0.0 && s <= MAX_UNIT_SCALE {
                Ok(())
            } else {
                Err(field(
                    name,
                    format!(
                        "{s} must be a finite factor greater than 0 and at most 1000 from the \
                         file's units to metres (e.g. 0.01 for centimetres)"
                    ),
                ))
            }
        };
        if let Some(b) = &self.body {
            unit_scale("body.unit_scale".into(), b.unit_scale)?;
            if !(b.exclude_weight > 0.0 && b.exclude_weight <= 1.0) {
                return Err(field(
                    "body.exclude_weight".into(),
                    format!(
                        "{} must be a skin weight above 0 and at most 1",
                        b.exclude_weight
                    ),
                ));
            }
            if let Some(empty) = b.exclude_joints.iter().position(|j| j.trim().is_empty()) {
                return Err(field(
                    format!("body.exclude_joints[{empty}]"),
                    "is empty: name a joint, or `node_N` for an unnamed node".into(),
                ));
            }
        }
        for (i, g) in self.garments.iter().enumerate() {
            g.resolve_fabric()
                .map_err(|e| field(format!("garments[{i}].fabric"), e.to_string()))?;
            unit_scale(format!("garments[{i}].unit_scale"), g.unit_scale)?;
            if !(g.weld_tolerance_m.is_finite() && g.weld_tolerance_m >= 0.0) {
                return Err(field(
                    format!("garments[{i}].weld_tolerance_m"),
                    "must be a finite distance of at least 0 m".into(),
                ));
            }
            if let Some(maps) = &g.maps {
                maps.validate_settings(&g.name)
                    .map_err(|e| field(format!("garments[{i}].maps"), e.to_string()))?;
            }
            match g.proxy {
                Some(ProxySpec::Vertices(n)) if !(3..=MAX_PROXY_VERTICES).contains(&n) => {
                    return Err(field(
                        format!("garments[{i}].proxy"),
                        format!("Vertices({n}): must be 3 to {MAX_PROXY_VERTICES} vertices"),
                    ))
                }
                Some(ProxySpec::EdgeLength(l)) if !(1.0e-4..=10.0).contains(&l) => {
                    return Err(field(
                        format!("garments[{i}].proxy"),
                        format!("EdgeLength({l}): must be 0.0001 to 10 m"),
                    ))
                }
                _ => {}
            }
            if let Pins::Weights {
                weights,
                threshold,
                soft_compliance_m_per_n,
            } = &g.pins
            {
                if weights.iter().any(|w| !(0.0..=1.0).contains(w)) {
                    return Err(field(
                        format!("garments[{i}].pins.weights"),
                        "every pin weight must be a number from 0 to 1".into(),
                    ));
                }
                if !(*threshold > 0.0 && *threshold <= 1.0) {
                    return Err(field(
                        format!("garments[{i}].pins.threshold"),
                        format!("{threshold} must be greater than 0 and at most 1"),
                    ));
                }
                if !(soft_compliance_m_per_n.is_finite() && *soft_compliance_m_per_n > 0.0) {
                    return Err(field(
                        format!("garments[{i}].pins.soft_compliance_m_per_n"),
                        format!("{soft_compliance_m_per_n} must be a finite compliance greater than 0 m/N"),
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Scene {
        Scene {
            name: "test".into(),
            body: Some(BodySpec::default()),
            garments: vec![GarmentSpec {
                pins: Pins::Box {
                    min: [-1.0, 1.0, -1.0],
                    max: [1.0, 2.0, 1.0],
                },
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    /// A retired solver setting (issue 39: `parallel_projection`) still loads, with a warning
    /// that names the file and the field; the settings are the defaults, and it is not written
    /// back.
    #[test]
    fn a_retired_solver_setting_loads_with_a_warning_and_is_not_saved() {
        let text = "(garments: [(path: \"g.glb\")], solver: (parallel_projection: true))";
        let (scene, warnings) = Scene::from_ron_with_warnings(text, Path::new("old.ron")).unwrap();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("old.ron"), "{}", warnings[0]);
        assert!(
            warnings[0].contains("`parallel_projection`"),
            "{}",
            warnings[0]
        );
        assert!(warnings[0].contains("ignored"), "{}", warnings[0]);
        assert_eq!(scene.solver, SolverSettings::default());
        let saved = scene.to_ron().unwrap();
        assert!(!saved.contains("parallel_projection"), "{saved}");
        // Without it, no warning.
        let (_, none) =
            Scene::from_ron_with_warnings("(garments: [(path: \"g.glb\")])", Path::new("n.ron"))
                .unwrap();
        assert!(none.is_empty());
        // A solver preset that sets it loads too.
        let preset = "(version: 2, settings: (substeps: 8, parallel_projection: false))";
        let s = crate::preset::parse_solver(preset, "old_preset.ron").unwrap();
        assert_eq!(s.substeps, 8);
        assert_eq!(s.retired_parallel_projection, None);
    }

    #[test]
    fn round_trip_and_defaults() {
        let s = sample();
        let back = Scene::from_ron(&s.to_ron().unwrap(), Path::new("s.ron")).unwrap();
        assert_eq!(back, s);
        // A minimal older file: every missing field takes its default.
        let min = Scene::from_ron("(garments: [(path: \"g.glb\")])", Path::new("m.ron")).unwrap();
        assert_eq!(min.timeline.fps, 24.0);
        assert_eq!(min.garments[0].fabric, DEFAULT_FABRIC);
    }

    #[test]
    fn end_frame_reads_old_and_new_forms_and_defaults_to_the_animation() {
        let parse = |t: &str| {
            Scene::from_ron(
                &format!("(garments: [(path: \"g.glb\")], timeline: ({t}))"),
                Path::new("t.ron"),
            )
        };
        assert_eq!(parse("end_frame: 60").unwrap().timeline.end_frame, Some(60));
        assert_eq!(
            parse("end_frame: Some(60)").unwrap().timeline.end_frame,
            Some(60)
        );
        let none = parse("end_frame: None").unwrap().timeline;
        assert_eq!(none.end_frame, None);
        // 2 s at 24 fps: frames at 0, 1/24, …, 2 s.
        assert_eq!(none.frame_count(Some(2.0)), 49);
        assert_eq!(none.frame_count(None), DEFAULT_FRAMES);
        assert_eq!(
            parse("end_frame: 10")
                .unwrap()
                .timeline
                .frame_count(Some(2.0)),
            10
        );
        let e = parse("settle_push_speed_m_per_s: -1.0").unwrap_err();
        assert!(
            e.to_string().contains("timeline.settle_push_speed_m_per_s"),
            "{e}"
        );
        let e = parse("preroll_frames: 20000").unwrap_err();
        assert!(e.to_string().contains("timeline.preroll_frames"), "{e}");
    }

    #[test]
    fn errors_name_file_and_field() {
        let e = Scene::from_ron(
            "(garments: [(path: \"g.glb\", fabric: \"velvet\")])",
            Path::new("a.ron"),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("a.ron") && e.contains("garments[0].fabric"),
            "{e}"
        );
        let e = Scene::from_ron(
            "(garments: [(path: \"g.glb\")], timeline: (fps: -24.0))",
            Path::new("b.ron"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("b.ron") && e.contains("timeline.fps"), "{e}");
        let e = Scene::from_ron("(garmnts: [])", Path::new("c.ron"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("c.ron") && e.contains("garmnts"), "{e}");
        let e = Scene::from_ron(
            "(version: 99, garments: [(path: \"g.glb\")])",
            Path::new("d.ron"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("newer"), "{e}");
        let e = Scene::from_ron(
            "(garments: [(path: \"g.glb\")], solver: (substeps: 0))",
            Path::new("e.ron"),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("substeps"), "{e}");
    }

    #[test]
    fn unit_scale_defaults_to_one_is_validated_and_round_trips() {
        let parse = |body: &str, garment: &str| {
            Scene::from_ron(
                &format!(
                    "(body: Some((path: \"b.glb\"{body})), garments: [(path: \"g.glb\"{garment})])"
                ),
                Path::new("u.ron"),
            )
        };
        let s = parse("", "").unwrap();
        assert_eq!(s.body.as_ref().unwrap().unit_scale, 1.0);
        assert_eq!(s.garments[0].unit_scale, 1.0);
        // The default is not written, so older readers and diffs see nothing new.
        assert!(!s.to_ron().unwrap().contains("unit_scale"));
        let s = parse(", unit_scale: 0.01", ", unit_scale: 0.001").unwrap();
        assert_eq!(s.body.as_ref().unwrap().unit_scale, 0.01);
        assert_eq!(s.garments[0].unit_scale, 0.001);
        let back = Scene::from_ron(&s.to_ron().unwrap(), Path::new("u.ron")).unwrap();
        assert_eq!(back, s);
        for bad in ["0.0", "-1.0", "inf", "NaN", "1e20", "1000.5"] {
            let e = parse(&format!(", unit_scale: {bad}"), "")
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("u.ron") && e.contains("`body.unit_scale`"),
                "{e}"
            );
            let e = parse("", &format!(", unit_scale: {bad}"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("`garments[0].unit_scale`"), "{e}");
        }
    }

    #[test]
    fn exclusions_default_to_none_are_validated_and_round_trip() {
        let parse = |body: &str| {
            Scene::from_ron(
                &format!("(body: Some((path: \"b.glb\"{body})), garments: [(path: \"g.glb\")])"),
                Path::new("x.ron"),
            )
        };
        let s = parse("").unwrap();
        let b = s.body.as_ref().unwrap();
        assert!(b.exclude_joints.is_empty());
        assert_eq!(b.exclude_weight, DEFAULT_EXCLUDE_WEIGHT);
        assert!(!s.to_ron().unwrap().contains("exclude"));
        let s = parse(", exclude_joints: [\"hand_l\", \"node_7\"], exclude_weight: 0.3").unwrap();
        let b = s.body.as_ref().unwrap();
        assert_eq!(b.exclude_joints, ["hand_l", "node_7"]);
        assert_eq!(b.exclude_weight, 0.3);
        let back = Scene::from_ron(&s.to_ron().unwrap(), Path::new("x.ron")).unwrap();
        assert_eq!(back, s);
        for bad in ["0.0", "1.5", "NaN"] {
            let e = parse(&format!(", exclude_weight: {bad}"))
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("x.ron") && e.contains("`body.exclude_weight`"),
                "{e}"
            );
        }
        let e = parse(", exclude_joints: [\"hand\", \" \"]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`body.exclude_joints[1]`"), "{e}");
    }

    #[test]
    fn suggested_unit_scale_is_the_power_of_ten_to_human_size() {
        assert_eq!(suggested_unit_scale(166.0), Some(0.01));
        assert_eq!(suggested_unit_scale(1700.0), Some(0.001));
        assert_eq!(suggested_unit_scale(67.0), Some(0.01));
        assert_eq!(suggested_unit_scale(0.017), Some(100.0));
        assert_eq!(suggested_unit_scale(1.7), Some(1.0));
        assert_eq!(suggested_unit_scale(0.0), None);
        assert_eq!(suggested_unit_scale(Real::NAN), None);
    }

    #[test]
    fn save_is_atomic_and_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("scene.ron");
        sample().save(&p).unwrap();
        assert_eq!(Scene::load(&p).unwrap(), sample());
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1);
        assert!(matches!(
            Scene::load(&dir.path().join("missing.ron")),
            Err(SceneError::Io { .. })
        ));
    }
}
