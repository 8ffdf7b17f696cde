//! `drape drape-test PRESET`: the Cusick drape test of a fabric preset ([`drape::cusick`]).

use clap::Args;
use drape::cusick::{cusick_series, CusickOptions, CusickResult, MAX_SPECIMEN_VERTICES};
use drape::garment::material::Membrane;
use drape::preset::Library;
use drape::solver::StretchSolve;

/// `drape drape-test` and its options.
#[derive(Args)]
pub struct DrapeTestArgs {
    /// The fabric preset (built-in or user), e.g. denim.
    preset: String,
    /// Start from the older edge-spring configuration (a ring-meshed specimen, edge springs,
    /// sweeps, 2000 vertices, 80 substeps, 10 s, flat start) instead of the locking-free one the
    /// fabric table is measured in (a specimen meshed along the yarns, the stretch per
    /// triangle, stretch and bending solved globally, 1000 vertices, 40 substeps, 6 s, 0.5 mm
    /// perturbation; docs/cusick.md). The other options given still apply.
    #[arg(long)]
    edge_springs: bool,
    /// Target number of specimen vertices (7 to 200000; the ring mesh has the nearest count of
    /// the form 1 + 3N(N + 1)) [default: 1000, or 2000 with --edge-springs].
    #[arg(long)]
    vertices: Option<usize>,
    /// Substeps per frame (1 to 1000) [default: 40, or 80 with --edge-springs].
    #[arg(long)]
    substeps: Option<u32>,
    /// Constraint iterations per substep (1 to 100).
    #[arg(long, default_value_t = CusickOptions::default().iterations)]
    iterations: u32,
    /// Simulated time limit, in s [default: 6, or 10 with --edge-springs].
    #[arg(long)]
    max_time: Option<f32>,
    /// Velocity damping rate in 1/s (default: 2/s, whatever the fabric's own). Damping changes
    /// how fast the specimen comes to rest.
    #[arg(long)]
    damping: Option<f32>,
    /// Solve the stretch constraints all at once (conjugate gradients) in every sweep instead
    /// of edge by edge (the solver setting `stretch_solve: Global`).
    #[arg(long, conflicts_with = "line_stretch")]
    global_stretch: bool,
    /// Solve the stretch constraints line by line, each straight line of edges exactly, in
    /// every sweep (the solver setting `stretch_solve: Lines`, the scenes' default).
    #[arg(long)]
    line_stretch: bool,
    /// Solve the bending constraints all at once (conjugate gradients) in every sweep instead
    /// of hinge by hinge (the solver setting `bend_solve: Global`).
    #[arg(long)]
    global_bend: bool,
    /// Solve the shear constraints all at once (conjugate gradients) in every sweep instead
    /// of triangle by triangle (the solver setting `shear_solve: Global`).
    #[arg(long)]
    global_shear: bool,
    /// Amplitude of a small deterministic vertical jitter of the flat start, in m [default:
    /// 0.0005, or 0 with --edge-springs].
    #[arg(long)]
    perturbation: Option<f32>,
    /// Let the specimen rest on the pedestal alone instead of clamping it under an upper disc
    /// of the pedestal's size, as the standard's instrument does.
    #[arg(long)]
    unclamped: bool,
    /// Mesh the specimen with scattered vertices (Delaunay) instead of concentric rings.
    #[arg(long)]
    scattered: bool,
    /// Mesh the specimen as a square grid along the warp and weft, clipped to the disk.
    #[arg(long, conflicts_with = "scattered")]
    grid: bool,
    /// Discretise the fabric's stretch per triangle (warp and weft strains, soft bias) instead
    /// of as edge springs (the library setting `Membrane::Triangles`).
    #[arg(long)]
    triangle_membrane: bool,
    /// Number of specimens to test and average (1 to 64), as the standard averages several:
    /// one specimen's coefficient depends on the folds it happens to form. They run in
    /// parallel, each with its own seed; more than one needs --scattered or --perturbation.
    #[arg(long, default_value_t = 1)]
    specimens: u32,
    /// Seed of the first specimen (its scattered mesh and perturbation pattern); specimen k
    /// takes seed + k.
    #[arg(long, default_value_t = CusickOptions::default().seed)]
    seed: u32,
}

/// Runs the drape test and prints the drape coefficient and the figures behind it.
pub fn run(args: DrapeTestArgs) -> Result<(), String> {
    let base = if args.edge_springs {
        CusickOptions::default()
    } else {
        CusickOptions::locking_free()
    };
    let vertices = args.vertices.unwrap_or(base.vertices);
    if !(7..=MAX_SPECIMEN_VERTICES).contains(&vertices) {
        return Err(format!(
            "--vertices {vertices}: must be from 7 to {MAX_SPECIMEN_VERTICES}"
        ));
    }
    let library = Library::open_default().map_err(|e| e.to_string())?;
    let fabric = library.fabric(&args.preset).map_err(|e| e.to_string())?;
    let global = |flag: bool, base: StretchSolve| if flag { StretchSolve::Global } else { base };
    let options = CusickOptions {
        vertices,
        substeps: args.substeps.unwrap_or(base.substeps),
        iterations: args.iterations,
        max_time_s: args.max_time.unwrap_or(base.max_time_s),
        damping_per_s: args.damping.or(base.damping_per_s),
        perturbation_m: args.perturbation.unwrap_or(base.perturbation_m),
        stretch_solve: if args.line_stretch {
            StretchSolve::Lines
        } else {
            global(args.global_stretch, base.stretch_solve)
        },
        bend_solve: global(args.global_bend, base.bend_solve),
        shear_solve: global(args.global_shear, base.shear_solve),
        clamped: !args.unclamped,
        scattered_mesh: args.scattered || base.scattered_mesh,
        // --scattered chooses the scattered mesh over the locking-free configuration's grid.
        grid_mesh: args.grid || (base.grid_mesh && !args.scattered),
        membrane: if args.triangle_membrane {
            Membrane::Triangles
        } else {
            base.membrane
        },
        seed: args.seed,
        ..base
    };
    let series = cusick_series(&fabric, &options, args.specimens)
        .map_err(|e| format!("{}: {e}", args.preset))?;
    for (k, r) in series.specimens.iter().enumerate() {
        if series.specimens.len() > 1 {
            println!(
                "specimen {} (seed {}):",
                k + 1,
                options.seed.wrapping_add(k as u32)
            );
        }
        print_result(&args.preset, &fabric.name, &options, r);
    }
    if series.specimens.len() > 1 {
        println!(
            "mean drape coefficient of {} ({}) over {} specimens: {:.3} ({:.1} %), sample s.d. {:.3}, standard error {:.3}",
            args.preset,
            fabric.name,
            series.specimens.len(),
            series.mean,
            series.mean * 100.0,
            series.sample_sd,
            series.standard_error
        );
    }
    Ok(())
}

/// Prints one specimen's coefficient and the figures behind it.
fn print_result(preset: &str, fabric_name: &str, options: &CusickOptions, r: &CusickResult) {
    println!(
        "drape coefficient of {} ({}): {:.3} ({:.1} %)",
        preset,
        fabric_name,
        r.drape_coefficient,
        r.drape_coefficient * 100.0
    );
    println!(
        "  projected area {:.5} m², specimen {:.5} m² (30 cm), pedestal {:.5} m² (18 cm), {} nodes",
        r.projected_area_m2, r.specimen_area_m2, r.pedestal_area_m2, r.nodes
    );
    println!(
        "  {} after {:.2} s simulated ({} frames at {} fps), last max speed {:.2} mm/s, mean {:.3} mm/s",
        if r.settled {
            "settled"
        } else {
            "NOT settled (time limit)"
        },
        r.simulated_s,
        r.frames,
        options.fps,
        r.final_max_speed_m_per_s * 1000.0,
        r.final_mean_speed_m_per_s * 1000.0
    );
    println!(
        "  {} vertices, {} triangles, {} substeps × {} iterations, max stretch {:.2} %, rollbacks {}, {:.1} s wall",
        r.vertices,
        r.triangles,
        r.substeps,
        r.iterations,
        r.max_stretch * 100.0,
        r.rollbacks,
        r.wall_s
    );
    if !r.settled {
        eprintln!(
            "warning: the specimen had not come to rest after {:.1} s; raise --max-time",
            r.simulated_s
        );
    }
}
