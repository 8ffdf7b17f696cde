//! The `drape` command line: bake scenes, write the built-in scenes, inspect glTF files.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;

/// Drape: garment simulation (XPBD) on characters, baked to glTF and point caches.
#[derive(Parser)]
#[command(name = "drape", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Bake a scene: simulate its timeline and export the garment animation.
    Bake(cli::bake::BakeArgs),
    /// Write a built-in scene (scene.ron and its glTF files) into a folder.
    Demo(cli::demo::DemoArgs),
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
    Maps(cli::maps::MapsCommand),
    /// Run the Cusick drape test (30 cm specimen on an 18 cm pedestal) on a fabric preset and
    /// print its drape coefficient.
    DrapeTest(cli::cusick::DrapeTestArgs),
    /// Read a sewing pattern (a .ron file beside its SVG), mesh its panels and list them with
    /// their edges and seams; `--out` writes the flat panels as a .glb.
    Pattern(cli::pattern::PatternArgs),
    /// Place a pattern's panels around a body, sew them and write the sewn garment (.glb).
    Sew(cli::sew::SewArgs),
    /// Train the hybrid solver's network on Drape's own converged bakes and write the model.
    Train(cli::train::TrainArgs),
    /// Open a scene (or the built-in default scene) in the desktop app.
    Open {
        /// The scene file (.ron).
        scene: Option<PathBuf>,
        /// Also open this sewing pattern (.ron beside its SVG) in the pattern window.
        #[arg(long)]
        pattern: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Bake(args)) => cli::bake::run(args),
        Some(Command::Demo(args)) => cli::demo::run(args),
        Some(Command::Inspect { file }) => drape::io::inspect::inspect(&file)
            .map(|r| print!("{r}"))
            .map_err(|e| e.to_string()),
        Some(Command::Preset(args)) => cli::preset::run(args),
        Some(Command::Maps(command)) => cli::maps::run(command),
        Some(Command::DrapeTest(args)) => cli::cusick::run(args),
        Some(Command::Pattern(args)) => cli::pattern::run(args),
        Some(Command::Sew(args)) => cli::sew::run(args),
        Some(Command::Train(args)) => cli::train::run(args),
        Some(Command::Open { scene, pattern }) => open_app(scene, pattern),
        None => open_app(None, None),
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
fn open_app(scene: Option<PathBuf>, pattern: Option<PathBuf>) -> Result<(), String> {
    // A missing or broken file is reported here, before a window opens.
    if let Some(s) = &scene {
        drape::scene::Scene::load(s).map_err(|e| e.to_string())?;
    }
    if let Some(p) = &pattern {
        drape::garment::pattern::Pattern::load(p).map_err(|e| e.to_string())?;
    }
    drape::app::run(scene, pattern)
}

/// Without the desktop app (built with `--no-default-features`): `open` is refused and the
/// default is to write the built-in default scene and bake it.
#[cfg(not(feature = "gui"))]
fn open_app(scene: Option<PathBuf>, pattern: Option<PathBuf>) -> Result<(), String> {
    if pattern.is_some() {
        return Err(
            "--pattern: this build has no desktop app (built without the `gui` \
                    feature); sew it with `drape sew`"
                .into(),
        );
    }
    match scene {
        Some(s) => Err(format!(
            "{}: this build has no desktop app (built without the `gui` feature); bake it with \
             `drape bake {} --out OUT.glb`",
            s.display(),
            s.display()
        )),
        None => cli::bake::run_default(),
    }
}
