//! Issue 9, long runs: 10,000 frames of the default scene and 2,000 frames of a skirt on the
//! walking CesiumMan (its 2 s walk looped 40 times) stay finite and do not grow in memory.
//!
//! Both are ignored by default (minutes each); run them in release:
//!
//! ```text
//! cargo test --release --test soak -- --ignored --nocapture
//! ```
//!
//! They step the scene's solver ([`LoadedScene::build_solver`], as a bake does) without
//! keeping the frames, so the memory measured is the solver's own. The resident set size
//! (`VmRSS` in `/proc/self/status`) is read every 500 frames after a 500-frame warm-up; from
//! the first reading to the last it must grow by less than [`MAX_RSS_GROWTH_KIB`].

use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use drape::bake::stats::edge_stretch;
use drape::bake::LoadedScene;
use drape::math::Real;
use drape::scene::demo::{fitted_skirt_params, write_demo, write_fitted_skirt, DemoScene};

/// Largest RSS growth allowed between the first and the last reading (KiB): 16 MiB.
const MAX_RSS_GROWTH_KIB: u64 = 16 * 1024;

/// Frames between two RSS readings, and before the first.
const READ_EVERY: usize = 500;

/// The two soaks share the process; run them one at a time so each reads only its own memory.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The process's resident set size (KiB), from `/proc/self/status`.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("a VmRSS line in /proc/self/status")
}

/// Steps `loaded` for its pre-roll (settling, as a bake does) and then `frames` frames,
/// checking every particle is finite after every frame; prints and checks the RSS readings.
fn soak(name: &str, loaded: &LoadedScene, frames: usize) {
    let started = Instant::now();
    let mut sim = loaded.build_solver().expect("the solver builds");
    let timeline = &loaded.scene.timeline;
    let dt = 1.0 / timeline.fps;
    if timeline.preroll_frames > 0 {
        sim.solver
            .set_settling(Some(timeline.settle_push_speed_m_per_s));
        for k in 0..timeline.preroll_frames {
            sim.solver
                .step_frame(dt)
                .unwrap_or_else(|e| panic!("{name}: pre-roll frame {k}: {e}"));
        }
        sim.solver.set_settling(None);
    }
    let mut readings: Vec<(usize, u64)> = Vec::new();
    let mut max_stretch: Real = 0.0;
    let mut rollbacks = 0;
    for k in 1..=frames {
        let report = sim
            .solver
            .step_frame(dt)
            .unwrap_or_else(|e| panic!("{name}: frame {k}: {e}"));
        rollbacks += report.rollbacks;
        let x = &sim.solver.particles().x;
        let bad = x.iter().filter(|p| !p.is_finite()).count();
        assert_eq!(bad, 0, "{name}: frame {k}: {bad} non-finite particles");
        let (stretch, _) = edge_stretch(
            x,
            (sim.solver.model().stretch.iter()).map(|c| (c.particles, c.rest_length_m)),
        );
        max_stretch = max_stretch.max(stretch);
        if k % READ_EVERY == 0 {
            let rss = rss_kib();
            readings.push((k, rss));
            println!(
                "{name}: frame {k}: RSS {rss} KiB, {:.1} s, max stretch so far {max_stretch:.3}",
                started.elapsed().as_secs_f64()
            );
        }
    }
    let render = sim.world_render_positions(loaded);
    assert!(render.iter().all(|p| p.is_finite()));
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "{name}: {frames} frames in {elapsed:.1} s ({:.2} ms/frame), max stretch {max_stretch:.3}, \
         rollbacks {rollbacks}, RSS readings (frame, KiB): {readings:?}",
        elapsed * 1000.0 / frames as f64
    );
    // The first reading is at the end of the warm-up (frame 500).
    let (Some((_, first)), Some((_, last))) = (readings.first(), readings.last()) else {
        panic!("{name}: too few frames for an RSS reading past the warm-up");
    };
    let growth = last.saturating_sub(*first);
    assert!(
        growth < MAX_RSS_GROWTH_KIB,
        "{name}: RSS grew by {growth} KiB from {first} KiB ({readings:?})"
    );
}

/// The built-in default scene (mannequin and skirt), 10,000 frames (about 7 minutes of
/// animation at 24 fps).
#[test]
#[ignore = "long: run with `cargo test --release --test soak -- --ignored --nocapture`"]
fn default_scene_10000_frames_stays_finite_and_flat_in_memory() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let scene = write_demo(dir.path(), DemoScene::Default, None).unwrap();
    let loaded = LoadedScene::load(&scene).unwrap();
    soak("default scene", &loaded, 10_000);
}

/// A skirt on CesiumMan (`../shared/data/khronos/CesiumMan.glb`, see its LICENSES.md), as in
/// `tests/cesium_skirt.rs`, with its 2 s walk looping.
fn cesium_man_skirt(dir: &Path) -> LoadedScene {
    let body = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/khronos/CesiumMan.glb");
    let scene = write_fitted_skirt(dir, &body, &fitted_skirt_params(), Some(0.76)).unwrap();
    let loaded = LoadedScene::load(&scene).unwrap();
    assert_eq!(
        loaded.scene.body.as_ref().map(|b| b.playback),
        Some(drape::body::Playback::Loop)
    );
    loaded
}

/// The CesiumMan skirt scene as written, 2,000 frames: the walk looped about 42 times.
///
/// Measured (issue 9 note): it stops at frame 616 (t = 26.7 s) with "an edge stretched by
/// 300 %" after 4 retries, the hand–hip pinch of the known limitation (docs/solver.md), with
/// every value finite and the RSS flat until then.
#[test]
#[ignore = "long, and open: a hand–hip pinch fails a step near frame 616 (docs/reliability.md)"]
fn cesium_man_skirt_2000_frames_stays_finite_and_flat_in_memory() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    soak("CesiumMan skirt", &cesium_man_skirt(dir.path()), 2_000);
}

/// The same 2,000 frames with the failure stretch raised from 300 % to 1,000 %, so that a
/// pinch is simulated through instead of stopping the run: what is soaked is finiteness and
/// memory, not the pinch.
#[test]
#[ignore = "long: run with `cargo test --release --test soak -- --ignored --nocapture`"]
fn cesium_man_skirt_2000_frames_through_pinches_stays_finite_and_flat_in_memory() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut loaded = cesium_man_skirt(dir.path());
    loaded.scene.solver.failure_stretch = 10.0;
    soak("CesiumMan skirt through pinches", &loaded, 2_000);
}
