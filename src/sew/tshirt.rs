//! Drape's own T-shirt, drafted in code (`drape demo --scene tshirt`): four panels (back,
//! front and two short sleeves) written as an SVG in millimetres with the pattern file beside
//! it, sewn around the body's rest pose, and a scene that bakes the sewn shirt like any other
//! garment.
//!
//! The draft is a boxy shirt with dropped shoulders: 1.08 m round the chest (the mannequin's is
//! 0.845 m under the arms), 1.14 m round the hem, 0.68 m from the neck point to the hem, a
//! 0.23 m wide neck 3 cm deep at the back and 10 cm at the front, and short sleeves 0.27 m
//! from the cap's top to the cuff. Each sleeve cap is 3 % longer than its armhole, as a tailor
//! drafts it, and the weld shares the difference. Measured while drafting (the mannequin, in
//! cotton): a fitted shoulder (0.39 m across) and 0.2 m armholes left the shirt hanging on the
//! armpits at 12–24 % stretch, a 0.2 m neck 5 % at the back of the neck; this draft settles at
//! 2.1 %.

use std::path::{Path, PathBuf};

use crate::garment::pattern::{Pattern, PatternError};
use crate::scene::demo::DemoError;
use crate::scene::{BodySpec, GarmentSpec, Scene, Timeline};
use crate::sew::{sew, SewError, SewReport};
use crate::solver::SolverSettings;

/// The SVG file a T-shirt scene's folder holds.
pub const TSHIRT_SVG: &str = "tshirt.svg";
/// Its pattern file.
pub const TSHIRT_PATTERN: &str = "tshirt.ron";
/// The sewn garment, a static glTF binary.
pub const TSHIRT_GARMENT: &str = "tshirt.glb";
/// The fabric it is sewn and baked in.
pub const TSHIRT_FABRIC: &str = "cotton_shirting";

/// Why a T-shirt scene could not be written.
#[derive(Debug, thiserror::Error)]
pub enum TshirtError {
    /// Writing the scene's files failed.
    #[error(transparent)]
    Demo(#[from] DemoError),
    /// The built-in fabric could not be read.
    #[error(transparent)]
    Fabric(#[from] crate::preset::PresetError),
    /// The drafted pattern could not be read back.
    #[error(transparent)]
    Pattern(#[from] PatternError),
    /// The shirt could not be sewn on the body.
    #[error("{body}: {source}")]
    Sew {
        /// The body it was sewn on.
        body: String,
        /// Why.
        source: SewError,
    },
    /// A file could not be written.
    #[error("{}: cannot write: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// A torso panel's outline (mm, SVG y down), from the neck point on the body's right (−x):
/// 0 shoulder, 1 armhole, 2 side, 3 hem, 4 side, 5 armhole, 6 shoulder, 7 neck, `neck_mm`
/// deep.
fn torso_path(x0: f64, neck_mm: f64) -> String {
    let p = |x: f64, y: f64| format!("{:.1},{:.1}", x0 + x, y);
    format!(
        "M{} L{} C{} {} {} L{} L{} L{} C{} {} {} L{} C{} {} {} Z",
        p(-115.0, 0.0),
        p(-235.0, 40.0),
        p(-240.0, 160.0),
        p(-245.0, 285.0),
        p(-270.0, 300.0),
        p(-285.0, 680.0),
        p(285.0, 680.0),
        p(270.0, 300.0),
        p(245.0, 285.0),
        p(240.0, 160.0),
        p(235.0, 40.0),
        p(115.0, 0.0),
        p(76.0, neck_mm),
        p(-76.0, neck_mm),
        p(-115.0, 0.0),
    )
}

/// A sleeve's outline (mm): 0 underarm (cuff to cap), 1 and 2 the cap's halves, 3 underarm
/// (cap to cuff), 4 cuff.
fn sleeve_path(x0: f64) -> String {
    let p = |x: f64, y: f64| format!("{:.1},{:.1}", x0 + x, y);
    format!(
        "M{} L{} C{} {} {} C{} {} {} L{} Z",
        p(-210.0, 270.0),
        p(-240.0, 120.0),
        p(-160.0, 115.0),
        p(-100.0, 0.0),
        p(0.0, 0.0),
        p(100.0, 0.0),
        p(160.0, 115.0),
        p(240.0, 120.0),
        p(210.0, 270.0),
    )
}

/// The T-shirt's four panels as an SVG document in millimetres (back, front, left sleeve,
/// right sleeve, in that order).
pub fn tshirt_svg() -> String {
    format!(
        r#"<?xml version="1.0" encoding="utf-8"?>
<!-- Drape's T-shirt, drafted in code (src/sew/tshirt.rs). Millimetres, y down. -->
<svg xmlns="http://www.w3.org/2000/svg" width="2200mm" height="700mm" viewBox="0 0 2200 700">
  <path id="back" fill="none" stroke="red" d="{}"/>
  <path id="front" fill="none" stroke="red" d="{}"/>
  <path id="sleeve_l" fill="none" stroke="red" d="{}"/>
  <path id="sleeve_r" fill="none" stroke="red" d="{}"/>
</svg>
"#,
        torso_path(300.0, 30.0),
        torso_path(900.0, 100.0),
        sleeve_path(1450.0),
        sleeve_path(1950.0),
    )
}

/// The T-shirt's pattern file (RON), reading `svg` (a path relative to the file).
pub fn tshirt_pattern_ron(svg: &str) -> String {
    format!(
        r#"// Drape's T-shirt (src/sew/tshirt.rs): panels, placement and seams (docs/patterns.md).
(
    version: 1,
    svg: {svg:?},
    unit_m: Some(0.001),
    edge_length_m: 0.03,
    max_length_mismatch: 0.15,
    panels: [
        (name: "back", path: 0, place: Some(Back)),
        (name: "front", path: 1, place: Some(Front)),
        (name: "sleeve_l", path: 2, place: Some(LeftArm)),
        (name: "sleeve_r", path: 3, place: Some(RightArm)),
    ],
    seams: [
        // Shoulders and sides: front and back drawn alike, so their edges run the same way.
        (a: ("back", 0), b: ("front", 0), flip: true),
        (a: ("back", 6), b: ("front", 6), flip: true),
        (a: ("back", 2), b: ("front", 2), flip: true),
        (a: ("back", 4), b: ("front", 4), flip: true),
        // Each sleeve closed under the arm, cuff to cuff.
        (a: ("sleeve_l", 0), b: ("sleeve_l", 3)),
        (a: ("sleeve_r", 0), b: ("sleeve_r", 3)),
        // The caps into the armholes, underarm to underarm.
        (a: ("back", 5), b: ("sleeve_l", 1), flip: true),
        (a: ("front", 5), b: ("sleeve_l", 2)),
        (a: ("back", 1), b: ("sleeve_r", 1)),
        (a: ("front", 1), b: ("sleeve_r", 2), flip: true),
    ],
)
"#
    )
}

/// Writes the T-shirt's pattern into `dir` (created if needed): `tshirt.svg` and the pattern
/// file `file_name` that reads it. Returns the pattern file's path.
pub fn write_tshirt_pattern(dir: &Path, file_name: &str) -> Result<PathBuf, TshirtError> {
    std::fs::create_dir_all(dir).map_err(|source| DemoError::Folder {
        path: dir.to_path_buf(),
        source,
    })?;
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        crate::file::atomic::write_atomic(&path, text.as_bytes())
            .map_err(|source| TshirtError::Write {
                path: path.clone(),
                source,
            })
            .map(|()| path)
    };
    write(TSHIRT_SVG, &tshirt_svg())?;
    write(file_name, &tshirt_pattern_ron(TSHIRT_SVG))
}

/// Writes the T-shirt scene into `dir`: the pattern (`tshirt.svg`, `tshirt.ron`), the shirt
/// sewn on the body (`tshirt.glb`) and `scene.ron`. The body is `body_glb`'s rest pose, or,
/// without one, Drape's walking mannequin (written beside it, the scene baking its walk).
/// `progress` gets the sewing's fraction done. Returns the scene's path and what the sewing
/// measured.
pub fn write_tshirt(
    dir: &Path,
    body_glb: Option<&Path>,
    progress: &mut dyn FnMut(f32),
) -> Result<(PathBuf, SewReport), TshirtError> {
    let pattern = Pattern::load(&write_tshirt_pattern(dir, TSHIRT_PATTERN)?)?;
    let (rest, body_spec, timeline) = match body_glb {
        Some(path) => {
            let rig = crate::body::Rig::load(path, None).map_err(DemoError::from)?;
            let spec = BodySpec {
                path: std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()),
                ..Default::default()
            };
            let timeline = Timeline {
                preroll_frames: 24,
                ..Default::default()
            };
            (rig.rest_mesh().clone(), spec, timeline)
        }
        None => {
            use crate::scene::demo::{WALK_BODY_FILE, WALK_FRAMES, WALK_PREROLL_FRAMES};
            let body = crate::scene::walk::WalkingMannequin::new();
            crate::scene::walk::write_walking_mannequin(&dir.join(WALK_BODY_FILE), &body)
                .map_err(DemoError::from)?;
            let spec = BodySpec {
                path: WALK_BODY_FILE.into(),
                playback: crate::body::Playback::Loop,
                ..Default::default()
            };
            let timeline = Timeline {
                fps: 24.0,
                start_frame: 1,
                end_frame: Some(WALK_FRAMES),
                preroll_frames: WALK_PREROLL_FRAMES,
                ..Default::default()
            };
            (body.mesh, spec, timeline)
        }
    };
    let fabric = crate::preset::builtin_fabric(TSHIRT_FABRIC)?;
    let sewn = sew(
        &pattern,
        &rest,
        &fabric,
        &SolverSettings::default(),
        progress,
    )
    .map_err(|source| TshirtError::Sew {
        body: body_glb.map_or_else(
            || "the walking mannequin".into(),
            |p| p.display().to_string(),
        ),
        source,
    })?;
    let mut garment = sewn.mesh.clone();
    garment.name = "tshirt".into();
    crate::io::write_static_glb(&dir.join(TSHIRT_GARMENT), &[&garment]).map_err(DemoError::from)?;
    let scene = Scene {
        name: "tshirt".into(),
        body: Some(body_spec),
        garments: vec![GarmentSpec {
            name: "tshirt".into(),
            path: TSHIRT_GARMENT.into(),
            fabric: TSHIRT_FABRIC.into(),
            ..Default::default()
        }],
        timeline,
        solver: SolverSettings {
            self_collision: true,
            ..Default::default()
        },
        ..Default::default()
    };
    let path = dir.join("scene.ron");
    scene.save(&path).map_err(DemoError::from)?;
    Ok((path, sewn.report))
}
