//! `drape bake`: load a scene, apply the command line's solver overrides, bake with a progress
//! bar, and write the .glb, the point caches and the stats report.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use clap::Args;
use drape::bake::{bake, BakeOptions, BakeResult, LoadedScene};

/// `drape bake`'s arguments.
#[derive(Args)]
pub struct BakeArgs {
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
    /// Also write a USD stage (.usda): garment and body with time-sampled points, metres, Y up.
    #[arg(long)]
    usd: Option<PathBuf>,
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
    /// Body joints left out of collision, comma-separated, instead of the scene's
    /// `body.exclude_joints`: the triangles that follow them (and their descendants) with a
    /// mean skin weight above 0.5 (or the scene's `exclude_weight`) do not collide, e.g.
    /// `--exclude-joints hand_l,hand_r`. Unnamed nodes are `node_N`; `drape inspect` lists
    /// them. An empty value (`--exclude-joints ""`) turns the scene's exclusions off.
    #[arg(long, value_delimiter = ',')]
    exclude_joints: Option<Vec<String>>,
    /// Bake with the hybrid solver: this model (a name in the library's `models/`, as `drape
    /// train` writes it, or a .ron path) corrects each substep's prediction before the XPBD
    /// projection. `--neural off` turns the scene's network off.
    #[arg(long)]
    neural: Option<String>,
    /// With the hybrid solver, apply the network's predictions unchecked and let a failed
    /// substep go straight to the halved classical retries (the fallback layer off; for
    /// ablations).
    #[arg(long)]
    no_neural_fallback: bool,
    /// With the hybrid solver, run the network on one substep in K and apply its prediction
    /// again on the substeps between (K = the substeps per frame: one prediction per frame).
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..=1000))]
    neural_reuse: Option<u32>,
    /// Where the substeps run, instead of the scene's `solver.backend`: `cpu` (the reference)
    /// or `gpu` (wgpu compute; it falls back to the CPU, saying why, when there is no GPU
    /// adapter or the scene uses what the GPU path lacks).
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
}

/// `drape bake --backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum BackendArg {
    /// The CPU solver.
    Cpu,
    /// The GPU backend.
    Gpu,
}

/// Runs `drape bake`.
pub fn run(args: BakeArgs) -> Result<(), String> {
    run_bake(
        &args.scene,
        &args.out,
        args.frames,
        &SolverOverrides {
            preset: args.solver,
            substeps: args.substeps,
            iterations: args.iterations,
            exclude_joints: args.exclude_joints,
            neural: args.neural,
            no_neural_fallback: args.no_neural_fallback,
            neural_reuse: args.neural_reuse,
            backend: args.backend.map(|b| match b {
                BackendArg::Cpu => drape::solver::Backend::Cpu,
                BackendArg::Gpu => drape::solver::Backend::Gpu,
            }),
        },
        args.stats.as_deref(),
        &Extras {
            pc2: args.pc2.as_deref(),
            mdd: args.mdd.as_deref(),
            usd: args.usd.as_deref(),
        },
    )
}

/// The files a bake writes besides the .glb, when asked for.
#[derive(Default)]
struct Extras<'a> {
    /// A PC2 point cache.
    pc2: Option<&'a Path>,
    /// An MDD point cache.
    mdd: Option<&'a Path>,
    /// A USD text stage.
    usd: Option<&'a Path>,
}

/// Writes the built-in default scene and bakes it (the headless build's default).
#[cfg(not(feature = "gui"))]
pub fn run_default() -> Result<(), String> {
    let dir = PathBuf::from("drape-default");
    let scene = drape::scene::demo::write_demo(&dir, drape::scene::demo::DemoScene::Default, None)
        .map_err(|e| e.to_string())?;
    eprintln!("wrote the built-in default scene to {}", scene.display());
    run_bake(
        &scene,
        &dir.join("bake.glb"),
        None,
        &SolverOverrides::default(),
        Some(&dir.join("stats.json")),
        &Extras::default(),
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
    /// Body joints left out of collision.
    exclude_joints: Option<Vec<String>>,
    /// The hybrid's model, or "off".
    neural: Option<String>,
    /// The hybrid's fallback layer off.
    no_neural_fallback: bool,
    /// The hybrid's substeps per prediction.
    neural_reuse: Option<u32>,
    /// Where the substeps run.
    backend: Option<drape::solver::Backend>,
}

impl SolverOverrides {
    /// Applies the overrides to `loaded`'s solver settings; says on stderr what is used.
    fn apply(&self, loaded: &mut LoadedScene) -> Result<(), String> {
        if let Some(joints) = &self.exclude_joints {
            let joints: Vec<String> = (joints.iter())
                .map(|j| j.trim().to_string())
                .filter(|j| !j.is_empty())
                .collect();
            let weight = (loaded.scene.body.as_ref())
                .map_or(drape::scene::DEFAULT_EXCLUDE_WEIGHT, |b| b.exclude_weight);
            loaded
                .set_exclusions(joints, weight)
                .map_err(|e| format!("--exclude-joints: {e}"))?;
            if let Some(body) = &loaded.body {
                eprintln!(
                    "collision exclusions: {} of {} body triangles left out (the scene file is \
                     unchanged)",
                    body.excluded_triangles(),
                    body.mesh().indices.len()
                );
            }
        }
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
        if let Some(b) = self.backend {
            settings.backend = b;
        }
        match self.neural.as_deref() {
            Some("off") => settings.neural = None,
            Some(model) => {
                settings.neural = Some(drape::solver::neural::NeuralSettings {
                    model: model.into(),
                    ..settings.neural.clone().unwrap_or_default()
                })
            }
            None => {}
        }
        if self.no_neural_fallback {
            if let Some(n) = settings.neural.as_mut() {
                n.fallback = false;
            }
        }
        if let Some(k) = self.neural_reuse {
            match settings.neural.as_mut() {
                Some(n) => n.reuse_substeps = k,
                None => {
                    return Err("--neural-reuse needs the hybrid solver (--neural MODEL)".into())
                }
            }
        }
        settings.validate().map_err(|e| e.to_string())?;
        if self.neural.is_some() || self.no_neural_fallback || self.preset.is_some() {
            // The model the settings now name.
            loaded.reload_network().map_err(|e| e.to_string())?;
            if let Some(n) = &loaded.network {
                eprintln!("hybrid solver: model {}", n.path.display());
            }
        }
        let settings = &loaded.scene.solver;
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
    extras: &Extras,
) -> Result<(), String> {
    check_usd_name(extras.usd)?;
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
    // What the bake found beyond the load's warnings (the backend's notes among them).
    for w in (result.stats.warnings.iter()).filter(|w| !loaded.warnings.contains(w)) {
        eprintln!("warning: {w}");
    }
    if loaded.scene.solver.backend != drape::solver::Backend::Cpu {
        eprintln!("solver backend: {}", result.stats.backend);
    }
    write_outputs(&loaded, &result, out, stats, extras)
}

/// Refuses a USD name the writer would refuse, before the bake rather than after it.
fn check_usd_name(usd: Option<&Path>) -> Result<(), String> {
    usd.map_or(Ok(()), |p| {
        drape::io::usd::check_path(p).map_err(|e| format!("--usd {e}"))
    })
}

fn write_outputs(
    loaded: &LoadedScene,
    result: &BakeResult,
    out: &Path,
    stats: Option<&Path>,
    extras: &Extras,
) -> Result<(), String> {
    drape::bake::write_glb(loaded, result, out).map_err(|e| e.to_string())?;
    eprintln!("wrote {} ({} frames)", out.display(), result.frames.len());
    if let Some(p) = extras.pc2 {
        drape::io::cache::write_pc2(p, &result.frames, result.fps, result.start_frame as f32)
            .map_err(|e| e.to_string())?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(p) = extras.mdd {
        drape::io::cache::write_mdd(p, &result.frames, result.fps).map_err(|e| e.to_string())?;
        eprintln!("wrote {}", p.display());
    }
    if let Some(p) = extras.usd {
        drape::bake::write_usd(loaded, result, p).map_err(|e| e.to_string())?;
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
