//! The GPU backend (issue 37): the same physics as the CPU solver within stated tolerances, on
//! the standard scene and a hanging curtain; the CPU takes over, saying why, where the GPU path
//! lacks something; the distance grid and the shader are checked without a GPU.
//!
//! The tests that run on a GPU adapter need one: CI installs Mesa's software Vulkan adapter
//! (lavapipe) and sets `DRAPE_REQUIRE_GPU=1`, so that a missing adapter fails them there.
//! Elsewhere, without an adapter, they say so and return.

#![cfg(feature = "gpu")]

use std::path::{Path, PathBuf};

use drape::bake::{bake, BakeOptions, BakeResult, LoadedScene};
use drape::collide::BodyCollider;
use drape::garment::material::build_cloth;
use drape::math::{Real, Vec3};
use drape::mesh::shapes::{grid_cloth, uv_sphere};
use drape::mesh::Topology;
use drape::preset::builtin_fabric;
use drape::scene::demo::write_sphere_drop;
use drape::solver::gpu::{colour, DistanceGrid, GpuStep};
use drape::solver::{Backend, ClothModel, Pin, Solver, SolverSettings, StretchSolve};

/// Whether a GPU adapter is there; panics without one when CI requires it.
fn adapter_or_skip(test: &str) -> bool {
    let m = grid_cloth(0.1, 2, 0.0);
    let c = build_cloth(
        &m,
        &Topology::new(&m),
        &builtin_fabric("cotton_shirting").unwrap(),
    );
    let model = ClothModel::from_cloth(m.positions.clone(), c, 0.0, 0.0);
    let probe = Solver::new(
        SolverSettings {
            backend: Backend::Gpu,
            ..Default::default()
        },
        model,
        None,
    )
    .unwrap();
    if probe.gpu().is_some() {
        return true;
    }
    let mut probe = probe;
    let why = probe.take_backend_notes().join("; ");
    if std::env::var_os("DRAPE_REQUIRE_GPU").is_some_and(|v| v == "1") {
        panic!("{test}: DRAPE_REQUIRE_GPU=1 but the GPU backend did not start: {why}");
    }
    eprintln!("{test}: skipped, no GPU backend here ({why})");
    false
}

/// The standard scene (sphere-drop, the default fabric, 20 substeps) at `n` × `n`, `frames`
/// frames.
fn drop_scene(dir: &Path, n: u32, frames: i32) -> PathBuf {
    let path = write_sphere_drop(dir, n, 0.3, 0.5).unwrap();
    let mut loaded = LoadedScene::load(&path).unwrap();
    loaded.scene.timeline.end_frame = Some(frames);
    loaded.scene.save(&path).unwrap();
    path
}

fn bake_on(scene: &Path, backend: Backend, iterations: u32, stretch: StretchSolve) -> BakeResult {
    let mut loaded = LoadedScene::load(scene).unwrap();
    loaded.scene.solver.backend = backend;
    loaded.scene.solver.iterations = iterations;
    loaded.scene.solver.stretch_solve = stretch;
    bake(&loaded, &BakeOptions::default()).unwrap()
}

fn mean_height_m(frame: &[Vec3]) -> Real {
    frame.iter().map(|p| p.y).sum::<Real>() / frame.len() as Real
}

#[test]
fn the_distance_grid_of_a_sphere_is_its_signed_distance() {
    let r = 0.3;
    let body = BodyCollider::new(&uv_sphere(r, 48, 24)).unwrap();
    let grid = DistanceGrid::of_body(&body);
    // The grid reaches past the body by its pad on every side.
    let far = grid.origin_m + Vec3::splat(grid.cell_m) * (grid.dims[0] as Real - 1.0);
    assert!(grid.origin_m.x < -r - 0.04 && far.x > r + 0.04, "{grid:?}");
    let mut worst: Real = 0.0;
    for k in 0..500 {
        // Points on a spiral through the band ±1 cm around the surface.
        let t = k as Real / 500.0;
        let (theta, phi) = (t * 37.0, (2.0 * t - 1.0).acos());
        let dir = Vec3::new(phi.sin() * theta.cos(), phi.cos(), phi.sin() * theta.sin());
        let d = 0.01 * (2.0 * ((k * 7919) % 100) as Real / 100.0 - 1.0);
        let p = dir * (r + d);
        // The reference is the collider's own signed distance (the tessellated sphere).
        let exact = body.closest(p).signed_distance_m;
        let sampled = grid.sample(p).expect("inside the grid");
        worst = worst.max((sampled - exact).abs());
    }
    // Trilinear on 7 mm cells of a 0.3 m sphere: far under the 5 mm collision thickness.
    assert!(worst < 5.0e-4, "grid error {worst} m");
    assert!(grid.sample(Vec3::splat(10.0)).is_none());
}

#[test]
fn the_shader_parses_and_validates_without_a_gpu() {
    let source = include_str!("../src/solver/gpu/step.wgsl");
    let module = naga::front::wgsl::parse_str(source).unwrap_or_else(|e| {
        panic!("step.wgsl: {}", e.emit_to_string(source));
    });
    naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::empty(),
    )
    .validate(&module)
    .unwrap_or_else(|e| panic!("step.wgsl: {}", e.emit_to_string(source)));
    let entries: Vec<&str> = module
        .entry_points
        .iter()
        .map(|e| e.name.as_str())
        .collect();
    for kernel in [
        "predict",
        "solve_distance",
        "solve_line",
        "solve_strain",
        "solve_bend",
        "contacts",
        "velocities",
    ] {
        assert!(entries.contains(&kernel), "{kernel} missing: {entries:?}");
    }
}

#[test]
fn the_colours_of_a_cloth_never_share_a_particle() {
    let m = grid_cloth(1.0, 12, 0.0);
    let topology = Topology::new(&m);
    let c = build_cloth(&m, &topology, &builtin_fabric("cotton_shirting").unwrap());
    let n = m.positions.len();
    let bends: Vec<[u32; 4]> = c.bend.iter().map(|b| b.particles).collect();
    let (order, ranges) = colour(&bends, n).unwrap();
    for &(start, count) in &ranges {
        let mut seen = vec![false; n];
        for &b in &order[start as usize..(start + count) as usize] {
            for p in bends[b] {
                assert!(!seen[p as usize]);
                seen[p as usize] = true;
            }
        }
    }
    assert_eq!(order.len(), bends.len());
}

/// The standard scene at 32 × 32 for 48 frames (2 s: the fall, the impact and the settle),
/// on each backend with the same settings: the scene's own (the line solves, 1 iteration),
/// and the stretch swept edge by edge at 4 iterations (the GPU's edges in colours, the CPU's in
/// its own order). The mean height within 1 %, the last frame's max stretch within 1 point,
/// the peak over the bake within 2 (4 edge by edge), no penetration, no rollback, every
/// substep on the GPU.
#[test]
fn the_gpu_drapes_the_standard_scene_as_the_cpu_does() {
    if !adapter_or_skip("standard scene") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scene = drop_scene(dir.path(), 32, 48);
    // The edge sweep's peak, at the impact, depends on the order of the edges: 9.4 % on the
    // CPU against 12.4 % in the GPU's colours.
    for (iterations, solve, peak) in [
        (1, StretchSolve::Lines, 0.02),
        (4, StretchSolve::Sweep, 0.04),
    ] {
        let cpu = bake_on(&scene, Backend::Cpu, iterations, solve);
        let gpu = bake_on(&scene, Backend::Gpu, iterations, solve);
        let s = &gpu.stats;
        assert!(s.backend.starts_with("GPU: "), "{}", s.backend);
        assert_eq!(
            s.summary.gpu_substeps,
            47 * s.substeps,
            "every frame on the GPU"
        );
        assert_eq!(s.summary.gpu_fallbacks, 0);
        assert_eq!(cpu.stats.summary.gpu_substeps, 0);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert_eq!(s.summary.body_penetrations, 0);
        assert_eq!(s.summary.rollbacks, 0);
        let (hc, hg) = (
            mean_height_m(cpu.frames.last().unwrap()),
            mean_height_m(gpu.frames.last().unwrap()),
        );
        let last = |r: &BakeResult| r.stats.per_frame.last().unwrap().max_stretch;
        let (sc, sg) = (last(&cpu), last(&gpu));
        let (pc, pg) = (cpu.stats.summary.max_stretch, s.summary.max_stretch);
        eprintln!(
            "{solve:?} × {iterations}: mean height CPU {hc:.4} m, GPU {hg:.4} m; last-frame \
             stretch CPU {sc:.4}, GPU {sg:.4}; peak CPU {pc:.4}, GPU {pg:.4}"
        );
        assert!((hg - hc).abs() < 0.01 * hc.abs(), "CPU {hc} m, GPU {hg} m");
        assert!(
            (sg - sc).abs() < 0.01,
            "last-frame stretch CPU {sc}, GPU {sg}"
        );
        assert!((pg - pc).abs() < peak, "peak stretch CPU {pc}, GPU {pg}");
        // It fell onto the sphere and rests on it, not through it.
        assert!(hg > 0.0 && hg < 0.3, "{hg}");
    }
}

/// A 0.5 m curtain of cotton pinned along its top edge hangs for 2 s (damping 4/s): its sag on
/// the GPU is within 1 % of the CPU's with the same settings, edge by edge and line by line,
/// and the stretch part of it within a tenth.
#[test]
fn a_hanging_curtain_sags_on_the_gpu_as_on_the_cpu() {
    if !adapter_or_skip("curtain") {
        return;
    }
    let mut m = grid_cloth(0.5, 16, 0.0);
    for p in &mut m.positions {
        *p = Vec3::new(p.x, -(p.z + 0.25), 0.0);
    }
    m.compute_normals();
    let topology = Topology::new(&m);
    let c = build_cloth(&m, &topology, &builtin_fabric("cotton_shirting").unwrap());
    let pins: Vec<Pin> = (0..m.positions.len() as u32)
        .filter(|&i| m.positions[i as usize].y > -1e-6)
        .map(|i| Pin {
            particle: i,
            target_m: m.positions[i as usize],
        })
        .collect();
    assert_eq!(pins.len(), 16);
    let hang = |backend, stretch_solve| {
        let settings = SolverSettings {
            substeps: 10,
            iterations: 4,
            stretch_solve,
            tether_slack: -1.0,
            backend,
            ..Default::default()
        };
        let model = ClothModel {
            pins: pins.clone(),
            ..ClothModel::from_cloth(m.positions.clone(), c.clone(), 4.0, 0.0)
        };
        let mut solver = Solver::new(settings, model, None).unwrap();
        assert_eq!(solver.gpu().is_some(), backend == Backend::Gpu);
        let mut gpu_substeps = 0;
        for _ in 0..48 {
            gpu_substeps += solver.step_frame(1.0 / 24.0).unwrap().gpu_substeps;
        }
        let p = solver.particles();
        for pin in &pins {
            assert!(p.x[pin.particle as usize].distance(pin.target_m) < 1e-6);
        }
        let sag = -p.x.iter().map(|x| x.y).fold(Real::INFINITY, Real::min);
        (sag, gpu_substeps)
    };
    for solve in [StretchSolve::Sweep, StretchSolve::Lines] {
        let (cpu, none) = hang(Backend::Cpu, solve);
        let (gpu, substeps) = hang(Backend::Gpu, solve);
        eprintln!("curtain sag, {solve:?}: CPU {cpu:.5} m, GPU {gpu:.5} m");
        assert_eq!((none, substeps), (0, 480));
        assert!(cpu > 0.5 && cpu < 0.52, "{cpu}");
        assert!((gpu - cpu).abs() < 0.01 * cpu, "CPU {cpu} m, GPU {gpu} m");
        // The stricter figure: the stretch part of the sag (beyond the 0.5 m rest length),
        // about 2.4 mm, within a tenth.
        let (ec, eg) = (cpu - 0.5, gpu - 0.5);
        assert!(
            (eg - ec).abs() < 0.1 * ec,
            "elongation CPU {ec} m, GPU {eg} m"
        );
    }
}

/// Where the GPU path lacks something (here self-collision), the bake runs on the CPU, bit for
/// bit as a CPU bake, and its stats say why.
#[test]
fn a_scene_the_gpu_cannot_run_bakes_on_the_cpu_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let scene = drop_scene(dir.path(), 12, 6);
    let run = |backend| {
        let mut loaded = LoadedScene::load(&scene).unwrap();
        loaded.scene.solver.backend = backend;
        loaded.scene.solver.self_collision = true;
        bake(&loaded, &BakeOptions::default()).unwrap()
    };
    let cpu = run(Backend::Cpu);
    let asked = run(Backend::Gpu);
    assert_eq!(asked.frames, cpu.frames);
    assert_eq!(asked.stats.backend, "CPU");
    assert_eq!(asked.stats.summary.gpu_substeps, 0);
    let note = asked.stats.warnings.join("\n");
    assert!(
        note.contains("self-collision") && note.contains("runs on the CPU"),
        "{note}"
    );
    assert!(!cpu.stats.warnings.iter().any(|w| w.contains("GPU")));
    // A model the GPU path lacks a constraint kind for is named too.
    let model = ClothModel {
        tethers: vec![drape::constraints::Tether {
            particle: 1,
            anchor: 0,
            max_length_m: 1.0,
        }],
        ..ClothModel::from_cloth(vec![Vec3::ZERO, Vec3::X], Default::default(), 0.0, 0.0)
    };
    let why = GpuStep::supports(&model, &SolverSettings::default(), None, false).unwrap();
    assert!(why.contains("tethers"), "{why}");
    assert!(GpuStep::supports(
        &ClothModel::default(),
        &SolverSettings::default(),
        None,
        true
    )
    .unwrap()
    .contains("moving body"));
}

/// The walk's moving mannequin keeps the solver on the CPU (`Solver::new_moving` refuses the
/// GPU before it builds its distance grid, about 100k closest-point queries that a moving body
/// would waste), with the note, and the bake is the CPU's bit for bit. Needs no adapter.
#[test]
fn a_moving_body_keeps_the_solver_on_the_cpu_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let scene =
        drape::scene::demo::write_demo(dir.path(), drape::scene::demo::DemoScene::Walk, None)
            .unwrap();
    let mut loaded = LoadedScene::load(&scene).unwrap();
    loaded.scene.timeline.end_frame = Some(3);
    loaded.scene.timeline.preroll_frames = 2;
    let cpu = bake(&loaded, &BakeOptions::default()).unwrap();
    loaded.scene.solver.backend = Backend::Gpu;
    let s = loaded.build_solver().unwrap();
    assert!(s.solver.gpu().is_none());
    assert_eq!(s.solver.backend_name(), "CPU");
    let asked = bake(&loaded, &BakeOptions::default()).unwrap();
    assert_eq!(asked.frames, cpu.frames);
    let note = asked.stats.warnings.join("\n");
    assert!(
        note.contains("moving body") && note.contains("runs on the CPU"),
        "{note}"
    );
    assert_eq!(asked.stats.summary.gpu_substeps, 0);
}

/// The backend is a scene setting: `Cpu` is not written, `Gpu` is and reads back.
#[test]
fn the_backend_setting_round_trips_and_cpu_is_not_written() {
    let cpu = ron::to_string(&SolverSettings::default()).unwrap();
    assert!(!cpu.contains("backend"), "{cpu}");
    let gpu = SolverSettings {
        backend: Backend::Gpu,
        ..Default::default()
    };
    let text = ron::to_string(&gpu).unwrap();
    assert!(text.contains("backend:Gpu"), "{text}");
    let back: SolverSettings = ron::from_str(&text).unwrap();
    assert_eq!(back.backend, Backend::Gpu);
}

/// The built-in default scene (a skirt pinned at the waist of a static mannequin, with
/// tethers) runs on the GPU as on the CPU: every substep there, the stretch within 1 point,
/// no penetration, the centroid within 5 mm of the CPU's on every frame.
#[test]
fn the_default_skirt_bakes_on_the_gpu_as_on_the_cpu() {
    if !adapter_or_skip("default scene") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path =
        drape::scene::demo::write_demo(dir.path(), drape::scene::demo::DemoScene::Default, None)
            .unwrap();
    let run = |backend| {
        let mut loaded = LoadedScene::load(&path).unwrap();
        loaded.scene.solver.backend = backend;
        bake(
            &loaded,
            &BakeOptions {
                frames: Some(24),
                ..Default::default()
            },
        )
        .unwrap()
    };
    let cpu = run(Backend::Cpu);
    let gpu = run(Backend::Gpu);
    let s = &gpu.stats;
    assert!(
        s.backend.starts_with("GPU: "),
        "{} {:?}",
        s.backend,
        s.warnings
    );
    assert!(s.constraints.tether > 0, "the default skirt has tethers");
    assert_eq!(s.summary.gpu_substeps, 23 * s.substeps);
    assert_eq!((s.summary.gpu_fallbacks, s.summary.rollbacks), (0, 0));
    assert_eq!(s.summary.body_penetrations, 0);
    let (a, b) = (cpu.frames.last().unwrap(), gpu.frames.last().unwrap());
    let mean_gap = a.iter().zip(b).map(|(p, q)| p.distance(*q)).sum::<Real>() / a.len() as Real;
    // The skirt buckles into folds as it settles, and where each fold lands depends on the
    // order of the projections: the vertices part by about 14 mm on average after 1 s (the
    // skirt is 0.67 m across) while the centroid stays within 3 mm.
    for (fa, fb) in cpu.frames.iter().zip(&gpu.frames) {
        let centroid = |f: &[Vec3]| f.iter().copied().sum::<Vec3>() / f.len() as Real;
        let d = centroid(fa).distance(centroid(fb));
        assert!(d < 0.005, "centroids {d} m apart");
    }
    let (sc, sg) = (cpu.stats.summary.max_stretch, s.summary.max_stretch);
    eprintln!("default skirt: mean gap {mean_gap:.5} m, peak stretch CPU {sc:.4}, GPU {sg:.4}");
    assert!((sg - sc).abs() < 0.01, "CPU {sc}, GPU {sg}");
    assert!(mean_gap < 0.025, "{mean_gap} m");
}
