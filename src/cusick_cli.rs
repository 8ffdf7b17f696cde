//! `drape drape-test PRESET`: the Cusick drape test of a fabric preset ([`drape::cusick`]).

use clap::Args;
use drape::cusick::{cusick_test, CusickOptions, MAX_SPECIMEN_VERTICES};
use drape::preset::Library;
use drape::sim::StretchSolve;

/// `drape drape-test` and its options.
#[derive(Args)]
pub struct DrapeTestArgs {
    /// The fabric preset (built-in or user), e.g. denim.
    preset: String,
    /// Target number of specimen vertices (7 to 200000; the mesh has the nearest count of the
    /// form 1 + 3N(N + 1)).
    #[arg(long, default_value_t = CusickOptions::default().vertices)]
    vertices: usize,
    /// Substeps per frame (1 to 1000).
    #[arg(long, default_value_t = CusickOptions::default().substeps)]
    substeps: u32,
    /// Constraint iterations per substep (1 to 100).
    #[arg(long, default_value_t = CusickOptions::default().iterations)]
    iterations: u32,
    /// Simulated time limit, in s.
    #[arg(long, default_value_t = CusickOptions::default().max_time_s)]
    max_time: f32,
    /// Velocity damping rate in 1/s (default: 2/s, whatever the fabric's own). Damping changes
    /// how fast the specimen comes to rest.
    #[arg(long)]
    damping: Option<f32>,
    /// Solve the stretch constraints all at once (conjugate gradients) in every sweep instead
    /// of edge by edge (the solver setting `stretch_solve: Global`).
    #[arg(long)]
    global_stretch: bool,
    /// Solve the bending constraints all at once (conjugate gradients) in every sweep instead
    /// of hinge by hinge (the solver setting `bend_solve: Global`).
    #[arg(long)]
    global_bend: bool,
    /// Solve the shear constraints all at once (conjugate gradients) in every sweep instead
    /// of triangle by triangle (the solver setting `shear_solve: Global`).
    #[arg(long)]
    global_shear: bool,
    /// Amplitude of a small deterministic vertical jitter of the flat start, in m (default 0).
    #[arg(long, default_value_t = 0.0)]
    perturbation: f32,
    /// Let the specimen rest on the pedestal alone instead of clamping it under an upper disc
    /// of the pedestal's size, as the standard's instrument does.
    #[arg(long)]
    unclamped: bool,
    /// Mesh the specimen with scattered vertices (Delaunay) instead of concentric rings.
    #[arg(long)]
    scattered: bool,
}

/// The solve a `--global-…` flag asks for.
fn solve_method(global: bool) -> StretchSolve {
    if global {
        StretchSolve::Global
    } else {
        StretchSolve::Sweep
    }
}

/// Runs the drape test and prints the drape coefficient and the figures behind it.
pub fn run(args: DrapeTestArgs) -> Result<(), String> {
    if !(7..=MAX_SPECIMEN_VERTICES).contains(&args.vertices) {
        return Err(format!(
            "--vertices {}: must be from 7 to {MAX_SPECIMEN_VERTICES}",
            args.vertices
        ));
    }
    let library = Library::open_default().map_err(|e| e.to_string())?;
    let fabric = library.fabric(&args.preset).map_err(|e| e.to_string())?;
    let options = CusickOptions {
        vertices: args.vertices,
        substeps: args.substeps,
        iterations: args.iterations,
        max_time_s: args.max_time,
        damping_per_s: args.damping.or(CusickOptions::default().damping_per_s),
        perturbation_m: args.perturbation,
        stretch_solve: solve_method(args.global_stretch),
        bend_solve: solve_method(args.global_bend),
        shear_solve: solve_method(args.global_shear),
        clamped: !args.unclamped,
        scattered_mesh: args.scattered,
        ..CusickOptions::default()
    };
    let r = cusick_test(&fabric, &options).map_err(|e| format!("{}: {e}", args.preset))?;
    println!(
        "drape coefficient of {} ({}): {:.3} ({:.1} %)",
        args.preset,
        fabric.name,
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
    Ok(())
}
