//! `drape sew PATTERN.ron --out GARMENT.glb [--body BODY.glb] [--fabric NAME]`: place a
//! pattern's panels around a body, sew them and write the sewn garment as a static glTF that
//! a scene can name like any other garment.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use drape::garment::pattern::Pattern;
use drape::preset::Library;
use drape::solver::SolverSettings;

/// `drape sew`'s arguments.
#[derive(Args)]
pub struct SewArgs {
    /// The pattern file (.ron) beside its SVG; its panels need places (`place: Some(Front)`).
    pattern: PathBuf,
    /// The sewn garment (.glb): the panels' vertices with their UVs, sewn and settled.
    #[arg(long)]
    out: PathBuf,
    /// The body (.glb, closed, Y up, metres) whose rest pose the garment is sewn on (default:
    /// Drape's mannequin).
    #[arg(long)]
    body: Option<PathBuf>,
    /// The fabric preset (built-in or user) it is sewn in.
    #[arg(long, default_value = "cotton_shirting")]
    fabric: String,
    /// Also write the garment with the body, and the panels as placed before sewing, here
    /// (.glb), to look at.
    #[arg(long)]
    preview: Option<PathBuf>,
}

/// Runs `drape sew`.
pub fn run(args: SewArgs) -> Result<(), String> {
    if args.out.extension().and_then(|e| e.to_str()) != Some("glb") {
        return Err(format!(
            "--out {}: the garment is written as .glb",
            args.out.display()
        ));
    }
    let pattern = Pattern::load(&args.pattern).map_err(|e| e.to_string())?;
    let fabric = Library::open_default()
        .and_then(|l| l.fabric(&args.fabric))
        .map_err(|e| e.to_string())?;
    let body = match &args.body {
        Some(path) => drape::body::Rig::load(path, None)
            .map_err(|e| e.to_string())?
            .rest_mesh()
            .clone(),
        None => drape::mesh::shapes::mannequin(),
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(1000);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "sewing [{bar:40}] {percent} %, {elapsed} elapsed, ETA {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let mut progress = |f: f32| {
        if let Some(bar) = &bar {
            bar.set_position((f * 1000.0) as u64);
        }
    };
    let sewn = drape::sew::sew(
        &pattern,
        &body,
        &fabric,
        &SolverSettings::default(),
        &mut progress,
    )
    .map_err(|e| match e {
        // The body's problem is the body file's, not the pattern's.
        drape::sew::SewError::Place(drape::garment::place::PlaceError::Body { .. }) => {
            let body = args.body.as_ref().map_or_else(
                || "Drape's mannequin".to_owned(),
                |b| b.display().to_string(),
            );
            format!("{body}: {e}")
        }
        e => format!("{}: {e}", args.pattern.display()),
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let r = &sewn.report;
    println!(
        "sewn {} panels, {} seam vertex pairs: {} vertices, {} triangles",
        r.panels, r.seam_pairs, r.vertices, r.triangles
    );
    println!("{r}");
    for (k, (seam, gap)) in pattern.seams.iter().zip(&r.seam_gaps_m).enumerate() {
        let name = |(p, e): (usize, usize)| format!("'{}' edge {e}", pattern.panels[p].name);
        println!(
            "  seam {k}: {} to {}: gap {:.2} mm",
            name(seam.a),
            name(seam.b),
            gap * 1e3
        );
    }
    let mut garment = sewn.mesh.clone();
    garment.name = args
        .out
        .file_stem()
        .map_or_else(|| "garment".into(), |s| s.to_string_lossy().into_owned());
    drape::io::write_static_glb(&args.out, &[&garment]).map_err(|e| e.to_string())?;
    eprintln!("wrote {}", args.out.display());
    if let Some(preview) = &args.preview {
        let mut placed = sewn.placed.clone();
        // Beside the body, so both shapes show in one file.
        let shift = drape::math::Vec3::new(1.2, 0.0, 0.0);
        for p in &mut placed.positions {
            *p += shift;
        }
        let mut beside = body.clone();
        beside.name = format!("{} (placed)", body.name);
        for p in &mut beside.positions {
            *p += shift;
        }
        drape::io::write_static_glb(preview, &[&garment, &body, &placed, &beside])
            .map_err(|e| e.to_string())?;
        eprintln!("wrote {}", preview.display());
    }
    Ok(())
}
