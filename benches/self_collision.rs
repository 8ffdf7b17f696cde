//! The cost of self-collision (issue 5) on the standard scene: a 1 m × 1 m cloth of 64 × 64
//! vertices dropped from 0.5 m onto a sphere of radius 0.3 m, 24 fps, 10 substeps, with the
//! solver's `self_collision` off and on.
//!
//! `standard_scene_self_collision/{off,on}`: one criterion iteration is one frame of the
//! 60-frame drape (the solver is rebuilt, untimed, after the last frame), as in
//! `benches/standard_scene.rs`. Before timing, one full bake of each prints its ms per frame and
//! the largest self-intersection count of any frame (the stats' independent test).
//!
//! `self_collision_broad_phase/{hash_grid,bvh}`: the broad phase alone, on the cloth as it lies
//! on the sphere after 30 frames: every triangle's box (grown by the reach) into a structure,
//! then every vertex looked up in it. `hash_grid` is [`SpatialHash`], rebuilt in place;
//! `bvh` is parry3d's `Bvh`, built by binned SAH from the same boxes and queried with
//! `intersect_aabb`. Both report the same pairs, up to boxes that only touch.
//!
//! Run: `cargo bench --bench self_collision`.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use drape::bake::{bake, BakeOptions, LoadedScene};
use drape::collide::self_collision::{Aabb, SelfCollision, SpatialHash};
use drape::math::Vec3;
use drape::scene::demo::{write_demo, DemoScene};
use drape::solver::{Solver, SELF_MARGIN_FRACTION};
use parry3d::bounding_volume::Aabb as ParryAabb;
use parry3d::partitioning::{Bvh, BvhBuildStrategy};

const N: u32 = 64;
const SUBSTEPS: u32 = 10;
const FRAMES: u32 = 60;

fn load(dir: &std::path::Path, self_collision: bool) -> LoadedScene {
    let path = write_demo(dir, DemoScene::SphereDrop, Some(N)).expect("demo scene");
    let mut loaded = LoadedScene::load(&path).expect("scene loads");
    loaded.scene.solver.substeps = SUBSTEPS;
    loaded.scene.solver.self_collision = self_collision;
    loaded
}

fn solver(loaded: &LoadedScene) -> Solver {
    let body = loaded.body_collider().expect("collider");
    let (model, _) = loaded.build_model(body.as_ref());
    Solver::new(loaded.scene.solver.clone(), model, body).expect("solver")
}

/// `DRAPE_BENCH_CONTACT_ITERS=n`: skip the timed groups; set up the broad-phase state and run
/// `find_contacts` `n` times (for `perf stat`, which counts cycles whatever the machine's load).
fn contact_iters() -> Option<u32> {
    std::env::var("DRAPE_BENCH_CONTACT_ITERS")
        .ok()?
        .parse()
        .ok()
}

fn standard_scene(c: &mut Criterion) {
    if contact_iters().is_some() {
        return;
    }
    let mut group = c.benchmark_group("standard_scene_self_collision");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    for on in [false, true] {
        let dir = tempfile::tempdir().expect("temp dir");
        let loaded = load(dir.path(), on);
        let full = bake(&loaded, &BakeOptions::default()).expect("bake");
        eprintln!(
            "self_collision {}: full 60-frame bake {:.1} ms/frame (contacts stage {:.0} ms, \
             project {:.0} ms in all), max self-intersections {}, max stretch {:.1} %, \
             rollbacks {}",
            if on { "on" } else { "off" },
            full.stats.sim_ms_per_frame,
            full.stats.stage_ms.contacts,
            full.stats.stage_ms.project,
            full.stats.summary.self_intersections,
            full.stats.summary.max_stretch * 100.0,
            full.stats.summary.rollbacks,
        );
        group.bench_function(if on { "on" } else { "off" }, |b| {
            let mut s = solver(&loaded);
            let mut frame = 0;
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    if frame == FRAMES {
                        s = solver(&loaded);
                        frame = 0;
                    }
                    let t = Instant::now();
                    s.step_frame(1.0 / 24.0).expect("frame");
                    total += t.elapsed();
                    frame += 1;
                }
                total
            });
        });
    }
    group.finish();
}

fn broad_phase(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let loaded = load(dir.path(), true);
    let mut s = solver(&loaded);
    for _ in 0..30 {
        s.step_frame(1.0 / 24.0).expect("frame");
    }
    let x = s.particles().x.clone();
    let triangles = s.model().triangles.clone();
    let settings = s.settings();
    let reach = settings.self_collision_thickness_m + settings.contact_margin_m;
    let r = Vec3::splat(reach);
    let boxes: Vec<Aabb> = triangles
        .iter()
        .map(|t| {
            let [a, b, c] = t.map(|i| x[i as usize]);
            (a.min(b).min(c) - r, a.max(b).max(c) + r)
        })
        .collect();
    let edge = triangles
        .iter()
        .map(|t| x[t[0] as usize].distance(x[t[1] as usize]))
        .sum::<f32>()
        / triangles.len() as f32;
    let cell = edge.max(2.0 * reach);
    let mut group = c.benchmark_group("self_collision_broad_phase");
    let mut hash = SpatialHash::default();
    let count_hash = |hash: &mut SpatialHash| {
        hash.build(&boxes, cell);
        let mut pairs = 0usize;
        for p in &x {
            hash.query(&(*p, *p), |_| pairs += 1);
        }
        pairs
    };
    let leaves: Vec<ParryAabb> = boxes.iter().map(|b| ParryAabb::new(b.0, b.1)).collect();
    let count_bvh = || {
        let bvh = Bvh::from_leaves(BvhBuildStrategy::Binned, &leaves);
        let mut pairs = 0usize;
        for p in &x {
            pairs += bvh.intersect_aabb(&ParryAabb::new(*p, *p)).count();
        }
        pairs
    };
    let (a, b) = (count_hash(&mut hash), count_bvh());
    eprintln!(
        "broad phase: {} triangles, {} vertices, cell {:.1} mm: {a} candidate pairs (hash grid), {b} (BVH)",
        triangles.len(),
        x.len(),
        cell * 1000.0
    );
    // Boxes that only touch may count on one side and not the other (inclusive vs strict
    // comparisons); otherwise the two find the same pairs.
    assert!(
        a.abs_diff(b) * 1000 <= a.max(b),
        "both broad phases find the same pairs"
    );
    group.bench_function("hash_grid", |bch| bch.iter(|| count_hash(&mut hash)));
    group.bench_function("bvh", |bch| bch.iter(count_bvh));
    group.finish();

    // The whole contact search of one substep on the same state: `x_prev` the cloth after 30
    // frames, `x` one substep of its velocity later.
    let h = 1.0 / (24.0 * SUBSTEPS as f32);
    let x1: Vec<Vec3> = x
        .iter()
        .zip(&s.particles().v)
        .map(|(p, v)| *p + *v * h)
        .collect();
    let model = s.model();
    let inv_mass = &s.particles().inv_mass;
    let mut sc = SelfCollision::new(
        &model.triangles,
        &model.layer,
        &model.positions,
        settings.self_collision_thickness_m,
        settings
            .contact_margin_m
            .min(SELF_MARGIN_FRACTION * settings.self_collision_thickness_m),
    );
    sc.find_contacts(&x, &x1, inv_mass, &model.positions);
    if let Some(n) = contact_iters() {
        for _ in 0..n {
            sc.find_contacts(&x, &x1, inv_mass, &model.positions);
        }
        eprintln!("{n} × find_contacts: {} contacts", sc.contacts().len());
        return;
    }
    eprintln!(
        "find_contacts: {} contacts ({} vertex–triangle candidates above)",
        sc.contacts().len(),
        a
    );
    let mut group = c.benchmark_group("self_collision_find_contacts");
    for continuous in [false, true] {
        sc.set_continuous(continuous);
        group.bench_function(
            if continuous {
                "continuous"
            } else {
                "linearised"
            },
            |bch| bch.iter(|| sc.find_contacts(&x, &x1, inv_mass, &model.positions)),
        );
    }
    group.finish();
}

criterion_group!(benches, standard_scene, broad_phase);
criterion_main!(benches);
