//! The GPU backend (issue 37).

use std::path::{Path, PathBuf};

use drape::bake::{bake, BakeOptions, BakeResult, LoadedScene};
use drape::scene::demo::write_sphere_drop;
use drape::solver::Backend;

fn drop_scene(dir: &Path, n: u32, frames: i32) -> PathBuf {
    let path = write_sphere_drop(dir, n, 0.3, 0.5).unwrap();
    let mut loaded = LoadedScene::load(&path).unwrap();
    loaded.scene.timeline.end_frame = Some(frames);
    loaded.scene.save(&path).unwrap();
    path
}

fn bake_on(scene: &Path, backend: Backend, iterations: u32) -> BakeResult {
    let mut loaded = LoadedScene::load(scene).unwrap();
    loaded.scene.solver.backend = backend;
    loaded.scene.solver.iterations = iterations;
    bake(&loaded, &BakeOptions::default()).unwrap()
}

#[test]
fn explore() {
    let dir = tempfile::tempdir().unwrap();
    let scene = drop_scene(dir.path(), 32, 48);
    let t = std::time::Instant::now();
    let cpu = bake_on(&scene, Backend::Cpu, 1);
    eprintln!("cpu {:?}", t.elapsed());
    for it in [1, 2, 4, 8] {
        let t = std::time::Instant::now();
        let gpu = bake_on(&scene, Backend::Gpu, it);
        eprintln!("gpu it{it} {:?}", t.elapsed());
        for (name, r) in [("cpu", &cpu), ("gpu", &gpu)] {
            let last = r.frames.last().unwrap();
            let mean_y = last.iter().map(|p| p.y).sum::<f32>() / last.len() as f32;
            let s = &r.stats;
            eprintln!(
                "{name}: mean y {mean_y:.4} max stretch last {:.4} all {:.4} pen {} warnings {:?}",
                s.per_frame.last().unwrap().max_stretch,
                s.summary.max_stretch,
                s.summary.body_penetrations,
                s.warnings
            );
        }
    }
}

#[test]
fn explore_colours() {
    let dir = tempfile::tempdir().unwrap();
    let scene = drop_scene(dir.path(), 32, 48);
    let mut loaded = LoadedScene::load(&scene).unwrap();
    loaded.scene.solver.backend = Backend::Gpu;
    let s = loaded.build_solver().unwrap();
    let g = s.solver.gpu().unwrap();
    eprintln!(
        "colours {:?} substeps {} membrane {:?}",
        g.colours(),
        loaded.scene.solver.substeps,
        s.solver.model().membrane
    );
}
