//! Resolution independence (issue 4): the same fabric behaves the same on proxies of different
//! densities. A 1 m × 1 m cloth, simplified from one dense render mesh to proxies of about
//! 1k, 2k, 4k and 8k vertices, hangs from its top edge; its static sag must agree across them
//! (with the substeps scaled to the resolution, see [`substeps_for`]), and so must the Cusick
//! drape coefficient of the fabric across specimen resolutions, as the mean of several
//! specimens (one specimen's coefficient depends on the folds it happens to form).
//!
//! The CI variants run the two coarser proxies (and smaller Cusick specimens) in a few seconds;
//! the full 1k–8k table is `#[ignore]`d and run in release:
//! `cargo test --release --test resolution -- --ignored --nocapture`.

use drape::cusick::{cusick_series, cusick_test, CusickOptions};
use drape::garment::material::{build_cloth_oriented, warp_directions_from};
use drape::garment::proxy::{build_proxy, ProxyTarget};
use drape::math::{Real, Vec3};
use drape::mesh::shapes::grid_cloth;
use drape::mesh::{Mesh, Topology};
use drape::preset::builtin_fabric;
use drape::solver::{ClothModel, Pin, Solver, SolverSettings, StretchSolve};

/// Gravity (m/s²), as in the solver's default settings.
const G: Real = 9.81;

/// The dense render mesh: a 1 m × 1 m curtain of 128 × 128 vertices (16,384) in the XY plane,
/// its top edge at y = 0, hanging towards −y. UVs from `grid_cloth`: u (the warp) runs along X,
/// v (the weft) down the curtain.
fn curtain() -> Mesh {
    let mut m = grid_cloth(1.0, 128, 0.0);
    for p in &mut m.positions {
        *p = Vec3::new(p.x, -(p.z + 0.5), 0.0);
    }
    // The grid faced +Y; after the turn it faces +Z, with the same winding.
    m.compute_normals();
    m
}

/// What a hanging run measured.
#[derive(Clone, Copy, Debug)]
struct Sag {
    /// Proxy vertices.
    vertices: usize,
    /// Depth of the bottom edge's lowest vertex below the pinned edge at rest (m).
    sag_m: Real,
    /// Largest particle speed at the end (m/s).
    max_speed_m_per_s: Real,
}

/// Simplifies the curtain to about `target` vertices, pins the proxy's top-edge vertices in
/// place and lets it hang for `seconds` (24 fps, `substeps` × 1 iteration, damping 4/s so it
/// comes to rest), with the fabric `fabric` and no tethers. `omega`: the stretch swept edge by
/// edge with that over-relaxation; `None`: the line solves (the default).
fn hang(
    render: &Mesh,
    target: usize,
    fabric: &str,
    substeps: u32,
    omega: Option<Real>,
    seconds: Real,
) -> Sag {
    let proxy = build_proxy(render, ProxyTarget::Vertices(target)).expect("proxy");
    let m = proxy.mesh;
    let fabric = builtin_fabric(fabric).expect("fabric");
    let topology = Topology::new(&m);
    let warps = warp_directions_from(render, &m).expect("the curtain has UVs");
    let c = build_cloth_oriented(&m, &topology, &fabric, Some(&warps));
    let n = m.positions.len();
    let pinned: Vec<u32> = (0..n as u32)
        .filter(|&i| m.positions[i as usize].y > -1e-6)
        .collect();
    assert!(
        pinned.len() >= 20,
        "{target}: only {} top-edge vertices",
        pinned.len()
    );
    let settings = SolverSettings {
        substeps,
        iterations: 1,
        stretch_relaxation: omega.unwrap_or(1.0),
        stretch_solve: if omega.is_some() {
            StretchSolve::Sweep
        } else {
            StretchSolve::Lines
        },
        // Tethers would hold the fabric at its rest length: this check is about its stretch.
        tether_slack: -1.0,
        ..Default::default()
    };
    let model = ClothModel {
        pins: pinned
            .iter()
            .map(|&i| Pin {
                particle: i,
                target_m: m.positions[i as usize],
            })
            .collect(),
        ..ClothModel::from_cloth(m.positions.clone(), c, 4.0, 0.0)
    };
    let mut solver = Solver::new(settings, model, None).expect("solver");
    let frames = (seconds * 24.0).round() as u32;
    for _ in 0..frames {
        solver.step_frame(1.0 / 24.0).expect("step");
    }
    let p = solver.particles();
    assert!(p.x.iter().all(|x| x.is_finite()));
    Sag {
        vertices: n,
        sag_m: -p.x.iter().map(|x| x.y).fold(Real::INFINITY, Real::min),
        max_speed_m_per_s: p.v.iter().map(|v| v.length()).fold(0.0, Real::max),
    }
}

/// The linear-elastic sag of a sheet of length `l` (m) hanging under its own weight:
/// `l + ρ g l² / (2 k)`, with `k` the stretch stiffness down the sheet (N/m). It ignores the
/// sideways contraction the pinned edge prevents, so it is a sanity band, not the reference.
fn analytic_sag_m(density_kg_per_m2: Real, k_n_per_m: Real, l: Real) -> Real {
    l + density_kg_per_m2 * G * l * l / (2.0 * k_n_per_m)
}

/// Largest relative difference between any two values.
fn spread(values: &[Real]) -> Real {
    let max = values.iter().cloned().fold(Real::NEG_INFINITY, Real::max);
    let min = values.iter().cloned().fold(Real::INFINITY, Real::min);
    (max - min) / min
}

/// One row of the table: the jersey-knit curtain at `target` proxy vertices, hanging for
/// `seconds`.
fn sag_row(render: &Mesh, target: usize, substeps: u32, omega: Option<Real>, seconds: Real) -> Sag {
    let r = hang(render, target, "jersey_knit", substeps, omega, seconds);
    let solve = omega.map_or("line solves".to_string(), |w| format!("sweep ω {w}"));
    println!(
        "jersey_knit curtain, {} proxy vertices, {substeps} substeps, {solve}: sag {:.4} m, \
         max speed {:.2e} m/s",
        r.vertices, r.sag_m, r.max_speed_m_per_s
    );
    r
}

/// Checks a table: every row at rest with a stretch of the right size, total sags within 3 %
/// (the check) and, where given, the extensions within `max_extension_spread`.
fn check_sags(rows: &[Sag], max_extension_spread: Option<Real>) {
    let fabric = builtin_fabric("jersey_knit").unwrap();
    // Down the curtain is the weft (v); jersey knit is the stretchiest built-in fabric there.
    let analytic = analytic_sag_m(fabric.density_kg_per_m2, fabric.stretch_weft_n_per_m, 1.0);
    for r in rows {
        // 5 mm/s: the 8k proxy keeps a 1.3 mm/s flutter at 8 s while its sag moved 0.3 mm
        // between 4 s and 8 s.
        assert!(
            r.max_speed_m_per_s < 5e-3,
            "{} vertices: not at rest ({} m/s)",
            r.vertices,
            r.max_speed_m_per_s
        );
        // The stretch is real and of the right size: within 25 % of the 1D estimate's
        // extension (the pinned top edge stiffens the sheet against its sideways contraction).
        let ext = r.sag_m - 1.0;
        let ext_analytic = analytic - 1.0;
        assert!(
            (ext - ext_analytic).abs() < 0.25 * ext_analytic,
            "{} vertices: extension {ext} m, linear estimate {ext_analytic} m",
            r.vertices
        );
    }
    let sags: Vec<Real> = rows.iter().map(|r| r.sag_m).collect();
    let extensions: Vec<Real> = rows.iter().map(|r| r.sag_m - 1.0).collect();
    println!(
        "sag spread {:.2} %, extension spread {:.2} %",
        100.0 * spread(&sags),
        100.0 * spread(&extensions)
    );
    assert!(
        spread(&sags) <= 0.03,
        "sags {sags:?} differ by more than 3 %"
    );
    // Stricter than the issue asks: the stretch itself, not only the total, agrees.
    if let Some(max) = max_extension_spread {
        assert!(
            spread(&extensions) <= max,
            "extensions {extensions:?} differ by more than {} %",
            100.0 * max
        );
    }
}

/// Substeps for a proxy of `vertices` vertices: XPBD at one iteration per substep carries a
/// load through the mesh only about one edge per substep, so its fixed-point error grows with
/// `(c·h/Δx)²` (c the fabric's stretch wave speed, h the substep, Δx the edge length). Keeping
/// `h ∝ Δx` keeps the error the same: substeps ∝ √vertices, `base` at 1000 vertices.
fn substeps_for(vertices: usize, base: u32) -> u32 {
    (base as Real * (vertices as Real / 1000.0).sqrt()).round() as u32
}

#[test]
fn hanging_sag_is_the_same_on_1k_and_2k_proxies() {
    let render = curtain();
    let rows: Vec<Sag> = [1000, 2000]
        .iter()
        .map(|&t| {
            let s = substeps_for(t, 20);
            sag_row(&render, t, s, Some(1.5), 4.0)
        })
        .collect();
    // Measured: sag spread 0.15 %, extension spread 3.1 %.
    check_sags(&rows, Some(0.05));
}

/// With the line solves (the default) the substeps need not grow with the proxy: at 20
/// substeps on both proxies the sags agree, where the sweep needs `substeps_for`'s square-root
/// rule (docs/solver.md, "Line solves of the stretch"). Measured: line solves 1.0455 and
/// 1.0451 m (sag spread 0.04 %, extension spread 0.8 %; with `line_passes: 0` 1.0464 and
/// 1.0487 m, 0.22 % and 5.0 %); the sweep at ω 1 and the same 20
/// substeps 1.0495 and 1.0728 m, whose 4k extension (7.3 cm against the 5.4 cm estimate) fails
/// this check.
#[test]
fn hanging_sag_is_the_same_on_1k_and_4k_proxies_at_20_substeps_with_line_solves() {
    let render = curtain();
    let rows: Vec<Sag> = [1000, 4000]
        .iter()
        .map(|&t| sag_row(&render, t, 20, None, 4.0))
        .collect();
    check_sags(&rows, Some(0.03));
}

#[test]
#[ignore = "the full table, 1k to 8k proxies: about three minutes in release"]
fn hanging_sag_is_the_same_on_1k_to_8k_proxies() {
    let render = curtain();
    // Measured at ω 1.5: sags 1.0510, 1.0495, 1.0495, 1.0485 m (spread 0.24 %), extensions
    // spread 5.1 %. At ω 1: 1.0495, 1.0482, 1.0489, 1.0452 m (0.41 %), extensions 9.5 % (the
    // 8k proxy still moving at 3.9 mm/s after 8 s).
    for (omega, max_extension_spread) in [(1.5, Some(0.06)), (1.0, None)] {
        let rows: Vec<Sag> = [1000, 2000, 4000, 8000]
            .iter()
            .map(|&t| sag_row(&render, t, substeps_for(t, 20), Some(omega), 8.0))
            .collect();
        check_sags(&rows, max_extension_spread);
    }
}

/// The line solves' table: 1k to 8k proxies, all at 20 substeps (the sweep's needs 20 to 57).
/// Measured (8 s): 1.0455, 1.0444, 1.0451, 1.0435 m, every proxy at rest (under 0.35 mm/s);
/// sag spread 0.18 %, extension spread 4.4 % (with `line_passes: 0`: 1.0463, 1.0460, 1.0487,
/// 1.0489 m, 0.27 % and 6.1 %).
#[test]
#[ignore = "the line solves' table, 1k to 8k proxies at 20 substeps: under a minute in release"]
fn hanging_sag_is_the_same_on_1k_to_8k_proxies_at_20_substeps_with_line_solves() {
    let render = curtain();
    let rows: Vec<Sag> = [1000, 2000, 4000, 8000]
        .iter()
        .map(|&t| sag_row(&render, t, 20, None, 8.0))
        .collect();
    check_sags(&rows, Some(0.08));
}

/// Options for a converged drape test of `vertices` specimen vertices: substeps by
/// [`substeps_for`] from 40 at 1000 vertices, stretch and bending solved globally, the
/// scattered specimen mesh (no six-fold ring texture), 6 s simulated.
fn converged(vertices: usize) -> CusickOptions {
    CusickOptions {
        vertices,
        substeps: substeps_for(vertices, 40),
        iterations: 1,
        max_time_s: 6.0,
        stretch_solve: StretchSolve::Global,
        bend_solve: StretchSolve::Global,
        scattered_mesh: true,
        ..CusickOptions::default()
    }
}

/// One specimen's drape coefficient depends on the fold pattern it falls into (a bifurcation,
/// as on the real instrument): two specimens of one resolution differ by up to 11 %, more than
/// the resolution moves it (docs/cusick.md). So the resolution check compares means over
/// several specimens, as the standard averages specimens: eight seeds per size. With four, the
/// standard error of each mean (s.d. 0.02–0.035) made the 3 % check sensitive to any change of
/// the solver's order: the vector sweeps' colour-ordered shear on these scattered meshes moved
/// the four-seed means from 0.754 and 0.746 (1.1 % apart) to 0.762 and 0.740 (2.9 %).
/// Measured, eight seeds, release build: 547 vertices 0.777/0.755/0.780/0.735/0.769/0.733/
/// 0.747/0.741, mean 0.755; 1027 vertices 0.769/0.696/0.767/0.729/0.738/0.748/0.774/0.717,
/// mean 0.742: 1.7 % apart (139 s on 2 cores).
#[test]
fn mean_drape_coefficient_is_the_same_on_500_and_1000_vertex_specimens() {
    let cotton = builtin_fabric("cotton_shirting").unwrap();
    let means: Vec<Real> = [547, 1027]
        .iter()
        .map(|&v| {
            let s = cusick_series(&cotton, &converged(v), 8).expect("cusick");
            for r in &s.specimens {
                println!(
                    "{v} vertices: DC {:.4}, {} nodes, max stretch {:.2} %, {:.1} s wall",
                    r.drape_coefficient,
                    r.nodes,
                    r.max_stretch * 100.0,
                    r.wall_s
                );
                assert_eq!(r.rollbacks, 0);
                assert!(r.max_stretch < 0.01, "converged stretch: {}", r.max_stretch);
            }
            println!("{v} vertices: mean {:.4}, s.d. {:.4}", s.mean, s.sample_sd);
            s.mean
        })
        .collect();
    assert!(
        spread(&means) <= 0.03,
        "cotton mean drape coefficients {means:?}"
    );
}

/// The table: cotton at about 1k, 2k, 4k and 8k specimen vertices, eight specimens
/// each: the scattered mesh of seed 1, started flat and with 0.2, 0.5 and 1 mm perturbations,
/// and seeds 2–5 (their own meshes) at 0.5 mm (docs/cusick.md, "Eight specimens per size").
#[test]
#[ignore = "about two and a half hours in release (8k: 9–18 min per specimen). Measured: means \
            of eight 0.760, 0.743, 0.753, 0.755 at about 1k, 2k, 4k and 8k vertices, a spread \
            of 2.3 % (docs/cusick.md)"]
fn mean_drape_coefficient_is_the_same_on_1k_to_8k_specimens() {
    let cotton = builtin_fabric("cotton_shirting").unwrap();
    // The substeps of the measurement (the command's --substeps), about `substeps_for`.
    let sizes = [
        (1027, 1000, 40),
        (1951, 2000, 57),
        (3997, 4000, 80),
        (7957, 8000, 113),
    ];
    let means: Vec<Real> = sizes
        .iter()
        .map(|&(first, second, substeps)| {
            let mut dc: Vec<Real> = [0.0, 0.2e-3, 0.5e-3, 1.0e-3]
                .iter()
                .map(|&perturbation_m| {
                    let options = CusickOptions {
                        perturbation_m,
                        substeps,
                        ..converged(first)
                    };
                    let r = cusick_test(&cotton, &options).expect("cusick");
                    println!(
                        "{first} vertices, perturbation {perturbation_m} m: DC {:.4}, {} nodes",
                        r.drape_coefficient, r.nodes
                    );
                    r.drape_coefficient
                })
                .collect();
            let options = CusickOptions {
                perturbation_m: 0.5e-3,
                substeps,
                seed: 2,
                ..converged(second)
            };
            let s = cusick_series(&cotton, &options, 4).expect("cusick");
            for (k, r) in s.specimens.iter().enumerate() {
                println!(
                    "{second} vertices, seed {}: DC {:.4}, {} nodes",
                    2 + k,
                    r.drape_coefficient,
                    r.nodes
                );
            }
            dc.extend(s.specimens.iter().map(|r| r.drape_coefficient));
            dc.iter().sum::<Real>() / dc.len() as Real
        })
        .collect();
    println!("means {means:?}");
    assert!(
        spread(&means) <= 0.03,
        "cotton mean drape coefficients {means:?}"
    );
}
