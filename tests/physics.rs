//! Physics checks against numbers: a hanging cloth and the standard sphere-drop scene.

use drape::bake::stats::edge_stretch;
use drape::bake::{bake, BakeOptions, LoadedScene};
use drape::garment::material::{build_cloth, build_span_limits, build_tethers, Fabric};
use drape::math::{Real, Vec3};
use drape::mesh::shapes::grid_cloth;
use drape::mesh::Topology;
use drape::scene::demo::{write_demo, DemoScene};
use drape::solver::{ClothModel, Pin, Solver, SolverSettings, StretchSolve};

/// A 1 m × 1 m cloth of 32 × 32 vertices, horizontal at y = 0, pinned along its z = 0 edge,
/// with the default fabric; swings down under gravity for `frames` frames at 24 fps.
/// Returns `(static sag (m): depth of the lowest vertex below the pins, max edge stretch)`.
fn hanging_cloth(substeps: u32, frames: u32) -> (Real, Real) {
    let mut m = grid_cloth(1.0, 32, 0.0);
    for p in &mut m.positions {
        *p = Vec3::new(p.x, 0.0, p.z + 0.5);
    }
    let fabric = Fabric::default();
    let topology = Topology::new(&m);
    let c = build_cloth(&m, &topology, &fabric);
    let n = m.positions.len();
    let pinned: Vec<u32> = (0..n as u32)
        .filter(|&i| m.positions[i as usize].z < 1e-6)
        .collect();
    assert_eq!(pinned.len(), 32);
    let settings = SolverSettings {
        substeps,
        ..Default::default()
    };
    let model = ClothModel {
        tethers: build_tethers(&m, &topology, &pinned, settings.tether_slack),
        pins: pinned
            .iter()
            .map(|&i| Pin {
                particle: i,
                target_m: m.positions[i as usize],
            })
            .collect(),
        // A settling run: damp harder than the fabric so the test reaches rest in a few seconds.
        ..ClothModel::from_cloth(m.positions.clone(), c, 1.0, 0.0)
    };
    let mut solver = Solver::new(settings, model, None).unwrap();
    for _ in 0..frames {
        solver.step_frame(1.0 / 24.0).unwrap();
    }
    let x = &solver.particles().x;
    assert!(x.iter().all(|p| p.is_finite()));
    let sag = -x.iter().map(|p| p.y).fold(Real::INFINITY, Real::min);
    let (max_stretch, _) = edge_stretch(
        x,
        solver
            .model()
            .stretch
            .iter()
            .map(|c| (c.particles, c.rest_length_m)),
    );
    (sag, max_stretch)
}

#[test]
fn hanging_cloth_barely_stretches_and_sags_the_same_at_any_substep_count() {
    let results: Vec<(u32, Real, Real)> = [5, 10, 20]
        .into_iter()
        .map(|n| {
            let (sag, stretch) = hanging_cloth(n, 192);
            (n, sag, stretch)
        })
        .collect();
    println!("substeps, static sag (m), max stretch: {results:?}");
    for &(n, sag, stretch) in &results {
        assert!(stretch <= 0.01, "{n} substeps: max stretch {stretch}");
        // A 1 m cloth hangs about 1 m below its pins.
        assert!((sag - 1.0).abs() < 0.02, "{n} substeps: sag {sag}");
    }
    for &(_, a, _) in &results {
        for &(_, b, _) in &results {
            assert!((a - b).abs() / a.max(b) <= 0.02, "sags {a} and {b} differ");
        }
    }
}

#[test]
fn standard_scene_has_no_penetrations_in_any_frame() {
    let dir = tempfile::tempdir().unwrap();
    let scene = write_demo(dir.path(), DemoScene::SphereDrop, Some(64)).unwrap();
    let loaded = LoadedScene::load(&scene).unwrap();
    assert_eq!(loaded.proxy_vertices(), 64 * 64);
    assert_eq!(loaded.frame_count(), 60);
    // The penetration count means something only for a closed body.
    let body = loaded.body_collider().unwrap().unwrap();
    assert!(body.is_closed());
    let result = bake(&loaded, &BakeOptions::default()).unwrap();
    let stats = &result.stats;
    assert_eq!(stats.per_frame.len(), 60);
    for f in &stats.per_frame {
        assert_eq!(f.body_penetrations, 0, "frame {}", f.frame);
        assert_eq!(f.non_finite, 0, "frame {}", f.frame);
        assert!(f.max_stretch.is_finite() && f.mean_stretch.is_finite());
    }
    assert!(result.frames.iter().flatten().all(|p| p.is_finite()));
    // The cloth came to rest on the sphere: its centre is held at the top, 0.3 m plus the
    // collision thickness, not at the floor of free fall.
    let last = result.frames.last().unwrap();
    let centre = last
        .iter()
        .min_by(|a, b| (a.x * a.x + a.z * a.z).total_cmp(&(b.x * b.x + b.z * b.z)))
        .unwrap();
    assert!((centre.y - 0.305).abs() < 0.01, "centre at {centre}");
    println!(
        "standard scene N = 64: max stretch {:.3}, last-frame max stretch {:.3}, {:.1} ms/frame",
        stats.summary.max_stretch,
        stats.per_frame.last().unwrap().max_stretch,
        stats.sim_ms_per_frame
    );
}

#[test]
fn painted_weights_make_hard_and_soft_pins() {
    use drape::scene::Pins;
    let dir = tempfile::tempdir().unwrap();
    let scene_path = write_demo(dir.path(), DemoScene::SphereDrop, Some(8)).unwrap();
    let mut scene = drape::scene::Scene::load(&scene_path).unwrap();
    scene.body = None;
    // Vertex 0 and 7 (two corners of the first row) are hard pins; vertex 3 of that row is
    // soft (weight 0.5 ⇒ compliance 2e-3 m/N); the rest are free.
    let mut weights = vec![0.0; 64];
    weights[0] = 1.0;
    weights[7] = 1.0;
    weights[3] = 0.5;
    scene.garments[0].pins = Pins::Weights {
        weights,
        threshold: 0.99,
        soft_compliance_m_per_n: 1.0e-3,
    };
    let loaded = LoadedScene::from_scene(scene, &scene_path).unwrap();
    assert_eq!(loaded.garments[0].pinned, vec![0, 7]);
    assert_eq!(loaded.garments[0].soft_pins, vec![(3, 2.0e-3)]);
    let result = bake(
        &loaded,
        &BakeOptions {
            frames: Some(24),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(result.stats.constraints.attach, 3);
    let (rest, last) = (&result.frames[0], result.frames.last().unwrap());
    let drop = |i: usize| rest[i].y - last[i].y;
    assert!(
        drop(0).abs() < 1e-6 && drop(7).abs() < 1e-6,
        "hard pins hold exactly"
    );
    assert!(drop(3) > 1e-4, "the soft pin gives: {}", drop(3));
    assert!(
        drop(3) < drop(60),
        "but less than a free vertex: {} vs {}",
        drop(3),
        drop(60)
    );
}

/// A long strip, 0.5 m wide and 2 m long (16 × 64 vertices, square cells), pinned along its
/// top edge and hanging straight down, cotton; `tether_slack < 0` turns tethers off. Returns the
/// max edge stretch after `frames` frames at 24 fps with `substeps` × 1 iteration.
fn hanging_strip_stretch(substeps: u32, frames: u32, tether_slack: Real) -> Real {
    hanging_strip_stretch_with(substeps, frames, tether_slack, StretchSolve::Sweep)
}

/// [`hanging_strip_stretch`] with the stretch constraints solved as `stretch_solve` says.
fn hanging_strip_stretch_with(
    substeps: u32,
    frames: u32,
    tether_slack: Real,
    stretch_solve: StretchSolve,
) -> Real {
    hanging_strip_stretch_in(
        SolverSettings {
            substeps,
            iterations: 1,
            tether_slack,
            stretch_solve,
            ..Default::default()
        },
        frames,
    )
}

/// [`hanging_strip_stretch`] with these solver settings (`tether_slack < 0`: no tethers).
fn hanging_strip_stretch_in(settings: SolverSettings, frames: u32) -> Real {
    let tether_slack = settings.tether_slack;
    let (nx, nz) = (16u32, 64u32);
    let cell = 2.0 / (nz - 1) as Real;
    let mut positions = Vec::new();
    let mut indices = Vec::new();
    for j in 0..nz {
        for i in 0..nx {
            positions.push(Vec3::new(i as Real * cell, -(j as Real) * cell, 0.0));
        }
    }
    for j in 0..nz - 1 {
        for i in 0..nx - 1 {
            let a = j * nx + i;
            let (b, c, d) = (a + 1, a + nx, a + nx + 1);
            indices.push([a, c, b]);
            indices.push([b, c, d]);
        }
    }
    let m = drape::mesh::Mesh {
        name: "strip".into(),
        positions,
        indices,
        normals: None,
        uvs: None,
    };
    let fabric = Fabric::default();
    let topology = Topology::new(&m);
    let c = build_cloth(&m, &topology, &fabric);
    let n = m.positions.len();
    let pinned: Vec<u32> = (0..nx).collect();
    let tethers = if tether_slack >= 0.0 {
        build_tethers(&m, &topology, &pinned, tether_slack)
    } else {
        Vec::new()
    };
    let span_limits = if settings.span_limit_slack >= 0.0 {
        build_span_limits(&m, &topology, settings.span_limit_slack)
    } else {
        Vec::new()
    };
    let model = ClothModel {
        positions: m.positions.clone(),
        mass_kg: c.mass_kg,
        damping_per_s: vec![1.0; n],
        friction: vec![0.0; n],
        stretch: c.stretch,
        shear: c.shear,
        bend: c.bend,
        attach: Vec::new(),
        tethers,
        span_limits,
        pins: pinned
            .iter()
            .map(|&i| Pin {
                particle: i,
                target_m: m.positions[i as usize],
            })
            .collect(),
        body_bindings: Vec::new(),
        ..Default::default()
    };
    let mut solver = Solver::new(settings, model, None).unwrap();
    for _ in 0..frames {
        solver.step_frame(1.0 / 24.0).unwrap();
    }
    let x = &solver.particles().x;
    assert!(x.iter().all(|p| p.is_finite()));
    edge_stretch(
        x,
        solver
            .model()
            .stretch
            .iter()
            .map(|c| (c.particles, c.rest_length_m)),
    )
    .0
}

#[test]
fn tethers_cut_the_stretch_of_a_long_hanging_cloth_at_the_same_budget() {
    // Same substeps and iterations, 2 s of hanging: with geodesic tethers from the pinned top
    // edge with 5 % slack, the strip's worst edge stretch drops far below the untethered one
    // (measured: 91 % without, 11 % with: the slack bounds distances to the pins, not single
    // edges); with no slack (the default), below 1 %.
    let slack = 0.05;
    let without = hanging_strip_stretch(6, 48, -1.0);
    let with = hanging_strip_stretch(6, 48, slack);
    let tight = hanging_strip_stretch(6, 48, 0.0);
    eprintln!(
        "max stretch: without tethers {without:.4}, slack {slack}: {with:.4}, no slack: {tight:.4}"
    );
    assert!(without > 0.05, "the untethered strip stretches ({without})");
    assert!(
        with < 0.5 * without,
        "tethers cut the stretch: {with} vs {without}"
    );
    assert!(tight < 0.01, "tight tethers hold the strip ({tight})");
}

/// The warm start (`SolverSettings::warm_start`, docs/solver.md "Warm start") cuts the stretch
/// that the sweeps leave in the long strip at the same budget (20 substeps × 1 iteration, no
/// tethers, 2 s): by the linear analysis the steady error falls by `1 − β`. Measured: 9.4 %
/// cold, 6.9 % at β = 0.45 (0.73×; the strip still swings a little at 2 s), no rollbacks.
#[test]
fn warm_start_cuts_the_stretch_of_a_long_hanging_strip_at_the_same_budget() {
    let run = |warm_start| {
        hanging_strip_stretch_in(
            SolverSettings {
                substeps: 20,
                tether_slack: -1.0,
                warm_start,
                // The warm start is for the stretch swept edge by edge.
                stretch_solve: StretchSolve::Sweep,
                ..Default::default()
            },
            48,
        )
    };
    let (cold, warm) = (run(0.0), run(0.45));
    eprintln!("max stretch, 20 substeps, no tethers: cold {cold:.4}, warm start 0.45 {warm:.4}");
    assert!(cold > 0.05, "{cold}");
    assert!(warm < 0.8 * cold, "warm {warm} vs cold {cold}");
    // At 0.5 the slowest modes are marginal and above it they grow: refused.
    let bad = SolverSettings {
        warm_start: 0.5,
        ..Default::default()
    };
    let e = bad.validate().unwrap_err().to_string();
    assert!(e.contains("warm_start"), "{e}");
}

/// Span limits (`SolverSettings::span_limit_slack`, docs/solver.md "Span limits") on the
/// standard scene at N = 32 and 10 substeps: the last frame's mean edge stretch falls by more
/// than half (measured 0.71 % → 0.14 %) and the worst edge's by a tenth or more (8.3 % → 4.9 %),
/// with no penetration and no rollback.
#[test]
fn span_limits_cut_the_stretch_of_the_standard_scene_at_the_same_budget() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_demo(dir.path(), DemoScene::SphereDrop, Some(32)).unwrap();
    let run = |slack: Real| {
        let mut scene = drape::scene::Scene::load(&path).unwrap();
        scene.solver.substeps = 10;
        scene.solver.span_limit_slack = slack;
        // The span limits are for the stretch swept edge by edge; the line solves hold the
        // scene's stretch themselves (docs/solver.md, "Line solves of the stretch").
        scene.solver.stretch_solve = StretchSolve::Sweep;
        let loaded = LoadedScene::from_scene(scene, &path).unwrap();
        let stats = bake(&loaded, &BakeOptions::default()).unwrap().stats;
        assert_eq!(stats.summary.body_penetrations, 0);
        assert_eq!(stats.summary.rollbacks, 0);
        assert_eq!(stats.constraints.span_limit > 0, slack >= 0.0);
        let last = stats.per_frame.last().unwrap().clone();
        (last.mean_stretch, last.max_stretch)
    };
    let (without, with) = (run(-1.0), run(0.0));
    eprintln!("standard scene N = 32, 10 substeps: (mean, max) stretch {without:?} without span limits, {with:?} with");
    assert!(with.0 < 0.5 * without.0, "{with:?} vs {without:?}");
    assert!(with.1 < 0.9 * without.1, "{with:?} vs {without:?}");
}

/// Span limits leave a cloth whose strain stays under their slack alone: the long strip held
/// at cotton's real stretch (about 0.1 %) by the global solve hangs the same with limits of
/// 1 % slack as without them; with no slack they only hold it at or under its rest distances.
#[test]
fn span_limits_do_not_change_a_cloth_within_their_slack() {
    let run = |span_limit_slack| {
        hanging_strip_stretch_in(
            SolverSettings {
                substeps: 6,
                tether_slack: -1.0,
                stretch_solve: StretchSolve::Global,
                span_limit_slack,
                ..Default::default()
            },
            48,
        )
    };
    let (without, slack) = (run(-1.0), run(0.01));
    eprintln!("strip, global stretch: {without:.6} without span limits, {slack:.6} with 1 % slack");
    assert!(without > 1e-4 && without < 0.005, "{without}");
    assert!((slack - without).abs() < 1e-5, "{slack} vs {without}");
}

/// The global stretch solve (`StretchSolve::Global`) holds the same long strip, with no
/// tethers and the same 6 substeps of one iteration, close to cotton's real stretch: the strip
/// weighs 0.1036 kg/m² × 2 m × 9.81 m/s² ≈ 2.0 N per metre of width at its top edge, which
/// 2000 N/m stretches by about 0.1 %, where the edge-by-edge sweep leaves 91 %.
#[test]
fn global_stretch_solve_holds_a_long_strip_at_its_real_stretch() {
    let sweep = hanging_strip_stretch_with(6, 48, -1.0, StretchSolve::Sweep);
    let global = hanging_strip_stretch_with(6, 48, -1.0, StretchSolve::Global);
    eprintln!("max stretch, 6 substeps, no tethers: sweep {sweep:.4}, global {global:.5}");
    assert!(sweep > 0.5, "{sweep}");
    assert!(global < 0.005, "{global}");
}

/// The line solve (`StretchSolve::Lines`) on the same strip: its columns are lines, each solved
/// exactly, so the strip hangs at the fabric's stretch without the conjugate gradients.
#[test]
fn line_stretch_solve_holds_a_long_strip_at_its_real_stretch() {
    let lines = hanging_strip_stretch_with(6, 48, -1.0, StretchSolve::Lines);
    eprintln!("max stretch, 6 substeps, no tethers: lines {lines:.5}");
    assert!(lines < 0.005, "{lines}");
}
