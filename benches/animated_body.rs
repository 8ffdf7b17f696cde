//! Garments on an animated, skinned character (issue 8): CesiumMan's walk
//! (`../shared/data/khronos/CesiumMan.glb`, test data outside the repository) with the fitted
//! skirt of `drape demo --scene fitted-skirt`, at the demo's 768-vertex proxy and at a
//! 10,240-vertex one (64 rings × 160 segments), 10 substeps × 1 iteration, 24 fps.
//!
//! One criterion iteration is a bake of 24 frames (the first second of the walk; 12 or 6 where
//! the 24-frame bake fails, so that a size that fails later is still timed) after the
//! demo's pre-roll (the skirt is fitted at the rest pose and settles while the body blends into
//! the walk): posing and refitting the body at every substep, the body-bound pins, contacts,
//! friction and the checks, all included; `sim_ms_per_frame` leaves the pre-roll out. Before timing, one bake prints ms per frame, the stage split and
//! the constraint projections per second (contacts not counted), or why it failed.
//!
//! The same on the walking mannequin of `drape demo --scene walk` (made by Drape's own code,
//! `drape::scene::walk`: its hands pass well clear of its thighs, where CesiumMan's touch them and
//! pinch the 10k skirt about half a second in), with its default skirt (1,536 vertices) and a
//! 10,240-vertex one (64 rings × 160 segments): issue 8's 10k proxy on an animated body, over
//! the whole 24 frames.
//!
//! Run: `cargo bench --bench animated_body` (`-- walking` times the mannequin only; the
//! figures printed before the timing are for every scene).

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use drape::bake::{bake, BakeOptions, LoadedScene};
use drape::mesh::shapes::SkirtParams;
use drape::scene::demo::{fitted_skirt_params, write_fitted_skirt, write_walk};

const FRAMES: u32 = 24;
const SUBSTEPS: u32 = 10;

fn cesium_man() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/khronos/CesiumMan.glb")
}

/// The scene a demo writer wrote, at the bench's substeps.
fn load(scene: Result<PathBuf, drape::scene::demo::DemoError>) -> LoadedScene {
    let mut loaded = LoadedScene::load(&scene.expect("scene")).expect("scene loads");
    loaded.scene.solver.substeps = SUBSTEPS;
    loaded
}

fn animated_body(c: &mut Criterion) {
    let sizes = [
        ("768", fitted_skirt_params()),
        (
            "10k",
            SkirtParams {
                rings: 64,
                segments: 160,
                ..fitted_skirt_params()
            },
        ),
    ];
    let mut group = c.benchmark_group("cesium_man_skirt_10_substeps");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));
    for (name, params) in sizes {
        let dir = tempfile::tempdir().expect("temp dir");
        let scene = write_fitted_skirt(dir.path(), &cesium_man(), &params, Some(0.76));
        time_bake(&mut group, name, &load(scene));
    }
    group.finish();

    // The walking mannequin (`drape demo --scene walk`): its hands clear its thighs, so the
    // 10k skirt bakes its 24 frames.
    let sizes = [
        ("1536", SkirtParams::default()),
        (
            "10k",
            SkirtParams {
                rings: 64,
                segments: 160,
                ..SkirtParams::default()
            },
        ),
    ];
    let mut group = c.benchmark_group("walking_mannequin_skirt_10_substeps");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(30));
    for (name, params) in sizes {
        let dir = tempfile::tempdir().expect("temp dir");
        time_bake(&mut group, name, &load(write_walk(dir.path(), &params)));
        if name == "10k" {
            // Stop 32's order, the line solves once per sweep (the preview preset's): a third
            // less work on the stretch than the default two passes after the shear and bending.
            let mut one_pass = load(write_walk(dir.path(), &params));
            one_pass.scene.solver.line_passes = 0;
            time_bake(&mut group, "10k_line_passes_0", &one_pass);
        }
    }
    group.finish();
}

/// Prints one bake's figures, then times bakes of `loaded` in `group`: 24 frames, or 12 or 6
/// where the longer bake fails (the bench's name says how many).
fn time_bake(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    loaded: &LoadedScene,
) {
    // A bake that fails (the 10k skirt is caught between CesiumMan's hand and thigh about
    // half a second in) is timed over the frames before the failure instead: the first 12,
    // else the first 6; the bench's name says how many.
    let mut timed = None;
    for frames in [FRAMES, FRAMES / 2, FRAMES / 4] {
        let options = BakeOptions {
            frames: Some(frames),
            ..BakeOptions::default()
        };
        match bake(loaded, &options) {
            Ok(r) => {
                timed = Some((options, r));
                break;
            }
            Err(e) => eprintln!("{name}: the {frames}-frame bake failed: {e}"),
        }
    }
    let Some((options, result)) = timed else {
        eprintln!("{name}: not timed");
        return;
    };
    let frames = options.frames.unwrap_or(FRAMES);
    let s = &result.stats;
    let k = &s.constraints;
    let per_sweep = (k.stretch + k.shear + k.bend + k.attach + k.tether) as f64;
    let projections = per_sweep * 2.0 * s.iterations as f64 * s.substeps as f64 * s.frames as f64;
    let g = &s.stage_ms;
    eprintln!(
        "{name}: {} proxy vertices, {:.1} ms/frame ({:.1} simulated frames/s), {:.2e} constraint projections/s (contacts not counted); stages over the bake (ms): kinematics {:.0}, predict {:.0}, contacts {:.0}, project {:.0}, velocities {:.0}, check {:.0}; max stretch {:.1} %, rollbacks {}",
        s.proxy_vertices,
        s.sim_ms_per_frame,
        1000.0 / s.sim_ms_per_frame,
        projections / (s.sim_ms_per_frame * s.frames as f64 / 1000.0),
        g.kinematics,
        g.predict,
        g.contacts,
        g.project,
        g.velocities,
        g.check,
        s.summary.max_stretch * 100.0,
        s.summary.rollbacks,
    );
    let id = BenchmarkId::new(format!("bake_{frames}_frames"), name);
    group.bench_with_input(id, &name, |b, _| {
        b.iter(|| bake(loaded, &options).expect("bake"))
    });
}

criterion_group!(benches, animated_body);
criterion_main!(benches);
