//! The GPU backend against the CPU solver (issue 37): milliseconds per frame of the standard
//! scene (a 1 m × 1 m cloth of N × N vertices dropped onto a 0.3 m sphere, 24 fps, 10
//! substeps) on each backend, in the same run. Before timing each size, one 24-frame bake per
//! backend prints its ms/frame, its last frame's max stretch and its penetrations.
//!
//! The sizes come from `DRAPE_GPU_BENCH_SIZES` (comma-separated N; default `32,64`; the issue's
//! table is `64,128,256,512,317`, 317 × 317 being the 100k-vertex cloth) and the GPU's
//! iterations per substep from `DRAPE_GPU_BENCH_ITERATIONS` (default 4; the CPU runs the
//! scene's 1 with its line solves). Without a GPU adapter only the CPU is timed, and the bench
//! says why. On a software adapter (lavapipe) the GPU figures are correctness only.
//!
//! Run: `cargo bench --bench gpu`; on a lent GPU, `bash benches/gpu/run.sh`.

use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use drape::bake::{bake, BakeOptions, LoadedScene};
use drape::scene::demo::{write_demo, DemoScene};
use drape::solver::{Backend, Solver};

const SUBSTEPS: u32 = 10;
const FRAMES: u32 = 60;

fn env_list(name: &str, default: &str) -> Vec<u32> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect()
}

fn load(n: u32, dir: &std::path::Path, backend: Backend, iterations: u32) -> LoadedScene {
    let path = write_demo(dir, DemoScene::SphereDrop, Some(n)).expect("demo scene");
    let mut loaded = LoadedScene::load(&path).expect("scene loads");
    loaded.scene.solver.substeps = SUBSTEPS;
    loaded.scene.solver.backend = backend;
    if backend == Backend::Gpu {
        loaded.scene.solver.iterations = iterations;
    }
    loaded
}

fn solver(loaded: &LoadedScene) -> Solver {
    let body = loaded.body_collider().expect("collider");
    let (model, _) = loaded.build_model(body.as_ref());
    Solver::new(loaded.scene.solver.clone(), model, body).expect("solver")
}

fn gpu_backend(c: &mut Criterion) {
    let mut group = c.benchmark_group("gpu_backend_10_substeps");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    let iterations = env_list("DRAPE_GPU_BENCH_ITERATIONS", "4")
        .first()
        .copied()
        .unwrap_or(4);
    for n in env_list("DRAPE_GPU_BENCH_SIZES", "32,64") {
        for backend in [Backend::Cpu, Backend::Gpu] {
            let dir = tempfile::tempdir().expect("temp dir");
            let loaded = load(n, dir.path(), backend, iterations);
            let mut probe = solver(&loaded);
            let name = probe.backend_name();
            if backend == Backend::Gpu && probe.gpu().is_none() {
                eprintln!(
                    "N = {n}: GPU not timed: {}",
                    probe.take_backend_notes().join("; ")
                );
                continue;
            }
            let full = bake(
                &loaded,
                &BakeOptions {
                    frames: Some(24),
                    ..Default::default()
                },
            );
            match full {
                Ok(full) => eprintln!(
                    "N = {n} ({} vertices), {name}, {} iterations: {:.1} ms/frame, last-frame \
                     stretch {:.2} %, max {:.2} %, penetrations {}, GPU fallbacks {}",
                    n * n,
                    loaded.scene.solver.iterations,
                    full.stats.sim_ms_per_frame,
                    full.stats.per_frame.last().map_or(0.0, |f| f.max_stretch) * 100.0,
                    full.stats.summary.max_stretch * 100.0,
                    full.stats.summary.body_penetrations,
                    full.stats.summary.gpu_fallbacks,
                ),
                Err(e) => {
                    eprintln!("N = {n}, {name}: not timed, the bake failed: {e}");
                    continue;
                }
            }
            let id = match backend {
                Backend::Cpu => "cpu_frame",
                Backend::Gpu => "gpu_frame",
            };
            let dt = 1.0 / loaded.scene.timeline.fps;
            let mut s = solver(&loaded);
            let mut frame = 0;
            group.bench_with_input(BenchmarkId::new(id, n * n), &n, |b, _| {
                b.iter(|| {
                    if frame == FRAMES {
                        s = solver(&loaded);
                        frame = 0;
                    }
                    frame += 1;
                    s.step_frame(dt).expect("frame")
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, gpu_backend);
criterion_main!(benches);
