//! `drape maps export | import`: a garment's painted maps as glTF vertex attributes.

use std::path::PathBuf;

use clap::Subcommand;

/// `drape maps export | import`.
#[derive(Subcommand)]
pub enum MapsCommand {
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

/// Runs `drape maps`.
pub fn run(command: MapsCommand) -> Result<(), String> {
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
