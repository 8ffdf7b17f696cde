//! The `drape` command line: bake scenes, write the built-in scenes, inspect glTF files.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use drape::bake::{bake, BakeOptions, BakeResult, LoadedScene};
mod cli;

use drape::scene::demo::{fitted_skirt_params, write_demo, write_fitted_skirt, DemoScene};

/// Drape: garment simulation (XPBD) on characters, baked to glTF and point caches.
#[derive(Parser)]
#[command(name = "drape", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

/// `drape maps export | import`.
#[derive(Subcommand)]
enum MapsCommand {
    /// Write a garment's render mesh with its painted maps (unpainted values where it has
    /// none) to a .glb.
    Export {
        /// The scene file (.ron).
        scene: PathBuf,
        /// The garment's name in the scene.
        garment: String,
        /// Output glTF binary (.glb).
        out: PathBuf,
    },
    /// Read painted maps from a glTF onto a garment and save the scene. The glTF mesh must be
    /// the garment's render mesh: same vertices in the same order (within 0.1 mm).
    Import {
        /// The scene file (.ron); it is rewritten atomically.
        scene: PathBuf,
        /// The garment's name in the scene.
        garment: String,
        /// The glTF file (.glb or .gltf) with _DRAPE_* vertex attributes.
        input: PathBuf,
    },
}

fn run_maps(command: MapsCommand) -> Result<(), String> {
    match command {
        MapsCommand::Export {
            scene,
            garment,
            out,
        } => drape::scene::maps::export_garment_maps(&scene, &garment, &out)
            .map(|n| println!("wrote {} ({garment}: {n} vertices)", out.display())),
        MapsCommand::Import {
            scene,
            garment,
            input,
        } => drape::scene::maps::import_garment_maps(&scene, &garment, &input).map(|n| {
            println!(
                "read the maps of {garment} ({n} vertices) from {}; saved {}",
                input.display(),
                scene.display()
            )
        }),
    }
    .map_err(|e| e.to_string())
}

#[derive(Subcommand)]
enum Command {
    /// Bake a scene: simulate its timeline and export the garment animation.
    Bake {
        /// The scene file (.ron).
        scene: PathBuf,
        /// Output glTF binary (.glb): the garment as morph-target animation, plus the body.
        #[arg(long)]
        out: PathBuf,
        /// Number of frames to bake, 1 to 10000 (default: the scene's timeline).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=drape::scene::MAX_FRAMES as i64))]
        frames: Option<u32>,
        /// Write the stats report (JSON) here.
        #[arg(long)]
        stats: Option<PathBuf>,
        /// Also write a PC2 point cache (Blender's Mesh Cache modifier).
        #[arg(long)]
        pc2: Option<PathBuf>,
        /// Also write an MDD point cache.
        #[arg(long)]
        mdd: Option<PathBuf>,
        /// Bake with this solver preset (built in: preview, production, final; or one in the
        /// user library) instead of the scene's own solver settings. The scene file is not
        /// changed.
        #[arg(long)]
        solver: Option<String>,
        /// Substeps per frame, 1 to 1000, instead of the scene's (or `--solver`'s).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=drape::solver::MAX_SUBSTEPS as i64))]
        substeps: Option<u32>,
        /// Constraint iterations per substep, 1 to 100, instead of the scene's (or
        /// `--solver`'s).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=drape::solver::MAX_ITERATIONS as i64))]
        iterations: Option<u32>,
    },
    /// Write a built-in scene (scene.ron and its glTF files) into a folder.
    Demo {
        /// Output folder (created if needed).
        dir: PathBuf,
        /// Which scene.
        #[arg(long, value_enum, default_value_t = DemoKind::Default)]
        scene: DemoKind,
        /// Cloth vertices per side (sphere-drop only).
        #[arg(long)]
        grid: Option<u32>,
        /// The character to dress (fitted-skirt only): a closed, Y-up glTF body, skinned and
        /// animated or not.
        #[arg(long)]
        body: Option<PathBuf>,
        /// Height of the skirt's waistband at the body's rest pose, in m (fitted-skirt only;
        /// default: the detected waist).
        #[arg(long)]
        waist_height: Option<f32>,
        /// Vertex rings of the skirt, waistband to hem (walk only; default 24; 64 gives the
        /// 10k-vertex skirt of the animated-body benchmark with `--segments 160`).
        #[arg(long, value_parser = clap::value_parser!(u32).range(2..=512))]
        rings: Option<u32>,
        /// Vertices around each ring of the skirt (walk only; default 64).
        #[arg(long, value_parser = clap::value_parser!(u32).range(3..=1024))]
        segments: Option<u32>,
    },
    /// List the meshes, skins, animations and morph targets of a glTF file.
    Inspect {
        /// The glTF file (.glb or .gltf).
        file: PathBuf,
    },
    /// Manage fabric and solver presets: the built-ins and the user library.
    Preset(cli::preset::PresetArgs),
    /// Export or import a garment's painted maps as glTF vertex attributes (_DRAPE_PIN,
    /// _DRAPE_STRETCH_SCALE, _DRAPE_BEND_SCALE, _DRAPE_MASS_SCALE and COLOR_0).
    #[command(subcommand)]
    Maps(MapsCommand),
    /// Run the Cusick drape test (30 cm specimen on an 18 cm pedestal) on a fabric preset and
    /// print its drape coefficient.
    DrapeTest(cli::cusick::DrapeTestArgs),
    /// Open a scene in the desktop app.
    Open {
        /// The scene file (.ron).
        scene: PathBuf,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DemoKind {
    /// Mannequin with a skirt pinned at the waist.
    Default,
    /// The standard scene: a cloth dropped on a sphere.
    SphereDrop,
    /// A skirt fitted to the waist of the character given with --body, pinned to it, over the
    /// body's animation.
    FittedSkirt,
    /// The mannequin walking in place (skinned and animated by Drape) in the default skirt.
    Walk,
}

fn run_demo(
    dir: &Path,
    scene: DemoKind,
    grid: Option<u32>,
    body: Option<&Path>,
    waist_height: Option<f32>,
    (rings, segments): (Option<u32>, Option<u32>),
) -> Result<(), String> {
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
        (DemoKind::FittedSkirt, None, Some(body)) => {
            write_fitted_skirt(dir, body, &fitted_skirt_params(), waist_height)
        }
        (DemoKind::FittedSkirt, _, None) => {
            return Err("--scene fitted-skirt needs --body FILE.glb: the character to dress".into())
        }
        (_, Some(_), _) => {
            return Err("--grid applies to --scene sphere-drop only".into());
        }
        _ => return Err("--body and --waist-height apply to --scene fitted-skirt only".into()),
    };
    written
        .map(|p| eprintln!("wrote {}", p.display()))
        .map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Bake {
            scene,
            out,
            frames,
            stats,
            pc2,
            mdd,
            solver,
            substeps,
            iterations,
        }) => run_bake(
            &scene,
            &out,
            frames,
            &SolverOverrides {
                preset: solver,
                substeps,
                iterations,
            },
            stats.as_deref(),
            pc2.as_deref(),
            mdd.as_deref(),
        ),
        Some(Command::Demo {
            dir,
            scene,
            grid,
            body,
            waist_height,
            rings,
            segments,
        }) => run_demo(
            &dir,
            scene,
            grid,
            body.as_deref(),
            waist_height,
            (rings, segments),
        ),
        Some(Command::Inspect { file }) => drape::io::inspect::inspect(&file)
            .map(|r| print!("{r}"))
            .map_err(|e| e.to_string()),
        Some(Command::Preset(args)) => cli::preset::run(args),
        Some(Command::Maps(command)) => run_maps(command),
        Some(Command::DrapeTest(args)) => cli::cusick::run(args),
        Some(Command::Open { scene }) => open_app(Some(scene)),
        None => open_app(None),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Opens the desktop app on a scene, or on the built-in default scene.
#[cfg(feature = "gui")]
fn open_app(scene: Option<PathBuf>) -> Result<(), String> {
    if let Some(s) = &scene {
        // A missing or broken file is reported here, before a window opens.
        drape::scene::Scene::load(s).map_err(|e| e.to_string())?;
    }
    drape::app::run(scene)
}

/// Without the desktop app (built with `--no-default-features`): `open` is refused and the
/// default is to write the built-in default scene and bake it.
#[cfg(not(feature = "gui"))]
fn open_app(scene: Option<PathBuf>) -> Result<(), String> {
    match scene {
        Some(s) => Err(format!(
            "{}: this build has no desktop app (built without the `gui` feature); bake it with \
             `drape bake {} --out OUT.glb`",
            s.display(),
            s.display()
        )),
        None => run_default(),
    }
}

/// Writes the built-in default scene and bakes it (the headless build's default).
#[cfg(not(feature = "gui"))]
fn run_default() -> Result<(), String> {
    let dir = PathBuf::from("drape-default");
    let scene = write_demo(&dir, DemoScene::Default, None).map_err(|e| e.to_string())?;
    eprintln!("wrote the built-in default scene to {}", scene.display());
    run_bake(
        &scene,
        &dir.join("bake.glb"),
        None,
        &SolverOverrides::default(),
        Some(&dir.join("stats.json")),
        None,
        None,
    )
}

/// `drape bake`'s replacements for the scene's solver settings (none by default).
#[derive(Default)]
struct SolverOverrides {
    /// A solver preset to use instead of the scene's settings.
    preset: Option<String>,
    /// Substeps per frame.
    substeps: Option<u32>,
    /// Iterations per substep.
    iterations: Option<u32>,
}

impl SolverOverrides {
    /// Applies the overrides to `loaded`'s solver settings; says on stderr what is used.
    fn apply(&self, loaded: &mut LoadedScene) -> Result<(), String> {
        let settings = &mut loaded.scene.solver;
        if let Some(name) = &self.preset {
            *settings = match drape::preset::Library::open_default() {
                Ok(library) => library.solver(name),
                Err(_) => drape::preset::builtin_solver(name),
            }
            .map_err(|e| format!("--solver {name}: {e}"))?;
        }
        if let Some(n) = self.substeps {
            settings.substeps = n;
        }
        if let Some(n) = self.iterations {
            settings.iterations = n;
        }
        settings.validate().map_err(|e| e.to_string())?;
        if self.preset.is_some() || self.substeps.is_some() || self.iterations.is_some() {
            eprintln!(
                "solver: {}{} substeps × {} iterations per frame (the scene file is unchanged)",
                self.preset
                    .as_ref()
                    .map(|p| format!("preset '{p}', "))
                    .unwrap_or_default(),
                settings.substeps,
                settings.iterations
            );
        }
        Ok(())
    }
}

fn run_bake(
    scene: &Path,
    out: &Path,
    frames: Option<u32>,
    overrides: &SolverOverrides,
    stats: Option<&Path>,
    pc2: Option<&Path>,
    mdd: Option<&Path>,
) -> Result<(), String> {
    let mut loaded = LoadedScene::load(scene).map_err(|e| e.to_string())?;
    overrides.apply(&mut loaded)?;
    for w in &loaded.warnings {
        eprintln!("warning: {w}");
    }
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(0);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "{msg} [{bar:40}] {pos}/{len} frames, {elapsed} elapsed, ETA {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar.set_message("baking");
        bar
    });
    let progress = |done: usize, total: usize| {
        if let Some(bar) = &bar {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        }
    };
    let options = BakeOptions {
        frames,
        progress: Some(&progress),
        cancel: None,
    };
    let result = bake(&loaded, &options).map_err(|e| e.to_string())?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    write_outputs(&loaded, &result, out, stats, pc2, mdd)
}

fn write_outputs(
    loaded: &LoadedScene,
    result: &BakeResult,
    out: &Path,
    stats: Option<&Path>,
    pc2: Option<&Path>,
    mdd: Option<&Path>,
) -> Result<(), String> {
    drape::bake::write_glb(loaded, result, out).map_err(|e| e.to_string())?;
    eprintln!("wrote {} ({} frames)", out.display(), result.frames.len());
    if let Some(p) = pc2 {
        drape::io::cache::write_pc2(p, &result.frames, result.fps, result.start_frame as f32)
            .map_err(|e| e.to_string())?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(p) = mdd {
        drape::io::cache::write_mdd(p, &result.frames, result.fps).map_err(|e| e.to_string())?;
        eprintln!("wrote {}", p.display());
    }
    let s = &result.stats;
    if let Some(p) = stats {
        let json = serde_json::to_string_pretty(s).map_err(|e| e.to_string())?;
        drape::file::atomic::write_atomic(p, json.as_bytes())
            .map_err(|e| format!("{}: {e}", p.display()))?;
        eprintln!("wrote {}", p.display());
    }
    eprintln!(
        "{} frames, {} particles, {:.2} ms/frame; max stretch {:.2} %, body penetrations {}, self-intersections {}, rollbacks {}",
        s.frames,
        s.proxy_vertices,
        s.sim_ms_per_frame,
        s.summary.max_stretch * 100.0,
        s.summary.body_penetrations,
        s.summary.self_intersections,
        s.summary.rollbacks
    );
    Ok(())
}
