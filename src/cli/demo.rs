//! `drape demo`: write a built-in scene (the default skirt, the standard sphere drop, the walk,
//! or a skirt fitted to a given body) into a folder.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use drape::scene::demo::{fitted_skirt_params, write_demo, write_fitted_skirt_scaled, DemoScene};

/// `drape demo`'s arguments.
#[derive(Args)]
pub struct DemoArgs {
    /// Output folder (created if needed).
    dir: PathBuf,
    /// Which scene.
    #[arg(long, value_enum, default_value_t = DemoKind::Default)]
    scene: DemoKind,
    /// Cloth vertices per side (sphere-drop only).
    #[arg(long)]
    grid: Option<u32>,
    /// The character to dress (fitted-skirt and tshirt): a closed, Y-up glTF body, skinned and
    /// animated or not.
    #[arg(long)]
    body: Option<PathBuf>,
    /// Height of the skirt's waistband at the body's rest pose, in m (fitted-skirt only;
    /// default: the detected waist).
    #[arg(long)]
    waist_height: Option<f32>,
    /// Factor from the body file's units to metres (fitted-skirt only; default 1): 0.01 for a
    /// body authored in centimetres. Written as the scene body's `unit_scale`.
    #[arg(long)]
    unit_scale: Option<f32>,
    /// Vertex rings of the skirt, waistband to hem (walk only; default 24; 64 gives the
    /// 10k-vertex skirt of the animated-body benchmark with `--segments 160`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..=512))]
    rings: Option<u32>,
    /// Vertices around each ring of the skirt (walk only; default 64).
    #[arg(long, value_parser = clap::value_parser!(u32).range(3..=1024))]
    segments: Option<u32>,
    /// Sphere radius in m (sphere-drop only; default 0.3), for scenes other than the standard
    /// one (the hybrid solver's unseen scenes).
    #[arg(long)]
    sphere_radius: Option<f32>,
    /// The cloth's starting height in m (sphere-drop only; default 0.5).
    #[arg(long)]
    drop_height: Option<f32>,
}

/// Runs `drape demo`.
pub fn run(args: DemoArgs) -> Result<(), String> {
    if args.sphere_radius.is_some() || args.drop_height.is_some() {
        if !matches!(args.scene, DemoKind::SphereDrop) {
            return Err("--sphere-radius and --drop-height are for --scene sphere-drop".into());
        }
        let radius = args.sphere_radius.unwrap_or(0.3);
        let height = args.drop_height.unwrap_or(0.5);
        if !(radius.is_finite() && radius > 0.0 && height.is_finite() && height > radius) {
            return Err(format!(
                "--sphere-radius {radius} m and --drop-height {height} m: the radius must be \
                 positive and the cloth start above the sphere"
            ));
        }
        let path = drape::scene::demo::write_sphere_drop(
            &args.dir,
            args.grid.unwrap_or(64),
            radius,
            height,
        )
        .map_err(|e| e.to_string())?;
        println!("wrote {}", path.display());
        return Ok(());
    }
    run_demo(
        &args.dir,
        args.scene,
        args.grid,
        args.body.as_deref(),
        args.waist_height,
        (args.rings, args.segments),
        args.unit_scale,
    )
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DemoKind {
    /// Mannequin with a skirt pinned at the waist.
    Default,
    /// The standard scene: a cloth dropped on a sphere.
    SphereDrop,
    /// A skirt fitted to the waist of the character given with --body, pinned to it, over the
    /// body's animation.
    FittedSkirt,
    /// The mannequin walking in place (skinned and animated by Drape) in the default skirt.
    Walk,
    /// Drape's T-shirt pattern (drafted in code) sewn on the walking mannequin, or on the
    /// character given with --body, then baked over its animation.
    Tshirt,
}

fn run_demo(
    dir: &Path,
    scene: DemoKind,
    grid: Option<u32>,
    body: Option<&Path>,
    waist_height: Option<f32>,
    (rings, segments): (Option<u32>, Option<u32>),
    unit_scale: Option<f32>,
) -> Result<(), String> {
    if unit_scale.is_some() && scene != DemoKind::FittedSkirt {
        return Err("--unit-scale applies to --scene fitted-skirt only".into());
    }
    let skirt = (rings.is_some() || segments.is_some()).then(|| {
        let d = drape::mesh::shapes::SkirtParams::default();
        drape::mesh::shapes::SkirtParams {
            rings: rings.unwrap_or(d.rings),
            segments: segments.unwrap_or(d.segments),
            ..d
        }
    });
    if skirt.is_some() && scene != DemoKind::Walk {
        return Err("--rings and --segments apply to --scene walk only".into());
    }
    if scene == DemoKind::Tshirt {
        if grid.is_some() || waist_height.is_some() {
            return Err("--grid and --waist-height do not apply to --scene tshirt".into());
        }
        eprintln!(
            "sewing the T-shirt on {} ...",
            body.map_or("the walking mannequin".into(), |b| b.display().to_string())
        );
        let (path, r) =
            drape::sew::tshirt::write_tshirt(dir, body, &mut |_| {}).map_err(|e| e.to_string())?;
        eprintln!("sewn, {} vertices: {r}", r.vertices);
        eprintln!("wrote {}", path.display());
        return Ok(());
    }
    let written = match (scene, grid, body) {
        (DemoKind::SphereDrop, grid, None) if waist_height.is_none() => {
            write_demo(dir, DemoScene::SphereDrop, grid)
        }
        (DemoKind::Default, None, None) if waist_height.is_none() => {
            write_demo(dir, DemoScene::Default, None)
        }
        (DemoKind::Walk, None, None) if waist_height.is_none() => match &skirt {
            Some(params) => drape::scene::demo::write_walk(dir, params),
            None => write_demo(dir, DemoScene::Walk, None),
        },
        (DemoKind::FittedSkirt, None, Some(body)) => write_fitted_skirt_scaled(
            dir,
            body,
            &fitted_skirt_params(),
            waist_height,
            unit_scale.unwrap_or(1.0),
        ),
        (DemoKind::FittedSkirt, _, None) => {
            return Err("--scene fitted-skirt needs --body FILE.glb: the character to dress".into())
        }
        (_, Some(_), _) => {
            return Err("--grid applies to --scene sphere-drop only".into());
        }
        _ => {
            return Err(
                "--body applies to --scene fitted-skirt and tshirt, --waist-height to \
                 fitted-skirt only"
                    .into(),
            )
        }
    };
    written
        .map(|p| eprintln!("wrote {}", p.display()))
        .map_err(|e| e.to_string())
}
