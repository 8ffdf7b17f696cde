//! `drape pattern FILE.ron [--out PANELS.glb]`: read a sewing pattern, mesh its panels, list
//! them with their edges and seams, and write the flat panels as a glTF to look at.

use std::path::PathBuf;

use clap::Args;
use drape::garment::pattern::Pattern;

/// `drape pattern`'s arguments.
#[derive(Args)]
pub struct PatternArgs {
    /// The pattern file (.ron), beside its SVG.
    pattern: PathBuf,
    /// Write the meshed panels, flat, as a static glTF binary (.glb).
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Runs `drape pattern`.
pub fn run(args: PatternArgs) -> Result<(), String> {
    let pattern = Pattern::load(&args.pattern).map_err(|e| e.to_string())?;
    for p in &pattern.panels {
        println!(
            "panel '{}': {} vertices, {} triangles, {:.4} m²",
            p.name,
            p.mesh.positions.len(),
            p.mesh.indices.len(),
            p.mesh.area()
        );
        for (k, (edge, len)) in p.edges.iter().zip(&p.edge_lengths_m).enumerate() {
            println!("  edge {k}: {:.1} mm, {} vertices", len * 1e3, edge.len());
        }
    }
    for (k, s) in pattern.seams.iter().enumerate() {
        let name = |(p, e): (usize, usize)| format!("'{}' edge {e}", pattern.panels[p].name);
        println!(
            "seam {k}: {} to {}, {} vertex pairs",
            name(s.a),
            name(s.b),
            s.pairs.len()
        );
    }
    if let Some(out) = &args.out {
        let meshes: Vec<_> = pattern.panels.iter().map(|p| &p.mesh).collect();
        drape::io::write_static_glb(out, &meshes).map_err(|e| e.to_string())?;
        eprintln!("wrote {}", out.display());
    }
    Ok(())
}
