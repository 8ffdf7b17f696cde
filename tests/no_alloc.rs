//! Issue 8: no heap allocation inside the substep loop. A counting global allocator (this test
//! binary only) watches `Solver::step_frame` on the standard scene once the solver is warm: the
//! contact lists, multipliers, candidate lists and scratch buffers must be reused, not grown.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use drape::bake::LoadedScene;
use drape::math::{Real, Vec3};
use drape::neural::world::WorldParams;
use drape::neural::Gnn;
use drape::scene::demo::{write_demo, DemoScene};
use drape::solver::neural::NeuralSettings;
use drape::solver::{BodyMotion, Solver, StretchSolve};

/// Counts allocations (and reallocations) while `COUNTING` is set.
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

/// The counter is global: the tests of this binary take turns.
static SERIAL: Mutex<()> = Mutex::new(());

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// The standard scene at N = 32 (serial; parallel contact search; global solves), the cloth
/// resting on the sphere: after 36 frames to warm up (every buffer at its working size), 12
/// more frames allocate nothing. Frames with a failed substep would allocate (the rollback's
/// reason is kept as text); the test checks there were none.
///
/// The solver runs inside a two-thread rayon pool. Called from outside any pool (as `drape
/// bake` does), rayon queues each parallel section on its global injector, whose lock-free
/// queue allocates a block of 1.5 kB every 63 sections: rayon's, amortised, about one per five
/// frames here; inside a pool its work-stealing deques are reused.
#[test]
fn stepping_a_warm_solver_allocates_nothing() {
    in_two_thread_pool(step_and_count);
}

/// Runs `f` in a two-thread rayon pool, this binary's tests taking turns (the counter is
/// global).
fn in_two_thread_pool(f: impl FnOnce() + Send) {
    let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .unwrap();
    pool.install(f);
}

fn step_and_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_demo(dir.path(), DemoScene::SphereDrop, Some(32)).unwrap();
    // Serial; parallel contact search; and the global solves with the warm start of the shear.
    for (parallel, global) in [(false, false), (true, false), (true, true)] {
        let mut loaded = LoadedScene::load(&path).unwrap();
        loaded.scene.solver.substeps = 10;
        loaded.scene.solver.parallel = parallel;
        if global {
            loaded.scene.solver.stretch_solve = StretchSolve::Global;
            loaded.scene.solver.bend_solve = StretchSolve::Global;
            loaded.scene.solver.warm_start = 0.4;
        }
        let body = loaded.body_collider().unwrap();
        let (model, _) = loaded.build_model(body.as_ref());
        let mut solver = Solver::new(loaded.scene.solver.clone(), model, body).unwrap();
        for _ in 0..36 {
            solver.step_frame(1.0 / 24.0).unwrap();
        }
        let mut rollbacks = 0;
        let mut contacts = 0;
        ALLOCATIONS.store(0, Ordering::Relaxed);
        COUNTING.store(true, Ordering::Relaxed);
        for _ in 0..12 {
            let report = solver.step_frame(1.0 / 24.0).unwrap();
            rollbacks += report.rollbacks;
            contacts += report.contacts;
        }
        COUNTING.store(false, Ordering::Relaxed);
        let allocations = ALLOCATIONS.load(Ordering::Relaxed);
        assert_eq!(rollbacks, 0);
        assert!(contacts > 100, "the cloth rests on the sphere: {contacts}");
        assert_eq!(
            allocations, 0,
            "parallel contact search {parallel}, global solves {global}: {allocations} \
             allocations in 12 warm frames"
        );
    }
}

/// The hybrid's substep (issue 34): the graph, the world-edge search and the network's forward
/// pass, serial and split among the pool's threads, allocate nothing once warm.
#[test]
fn stepping_a_warm_hybrid_allocates_nothing() {
    in_two_thread_pool(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = write_demo(dir.path(), DemoScene::SphereDrop, Some(32)).unwrap();
        // Small non-zero weights: every prediction is applied, and moves the cloth little.
        let mut net = Gnn::zeros(8, 2).with_world_edges(WorldParams::default());
        for (k, mlp) in net.mlps_mut().into_iter().enumerate() {
            for l in [&mut mlp.first, &mut mlp.second] {
                for (m, w) in l.weight.iter_mut().chain(l.bias.iter_mut()).enumerate() {
                    *w = (((k * 17 + m * 5) % 11) as f32 - 5.0) * 0.05;
                }
            }
        }
        net.output_scale = 1e-4;
        let net = Arc::new(net);
        for parallel in [false, true] {
            let mut loaded = LoadedScene::load(&path).unwrap();
            loaded.scene.solver.substeps = 10;
            loaded.scene.solver.parallel = parallel;
            loaded.scene.solver.neural = Some(NeuralSettings {
                model: "in memory".into(),
                ..Default::default()
            });
            let body = loaded.body_collider().unwrap();
            let (model, _) = loaded.build_model(body.as_ref());
            let mut solver = Solver::new(loaded.scene.solver.clone(), model, body).unwrap();
            solver.set_network(Some(net.clone()), 1.0 / 240.0).unwrap();
            for _ in 0..36 {
                solver.step_frame(1.0 / 24.0).unwrap();
            }
            let (mut applied, mut rollbacks) = (0, 0);
            ALLOCATIONS.store(0, Ordering::Relaxed);
            COUNTING.store(true, Ordering::Relaxed);
            for _ in 0..12 {
                let report = solver.step_frame(1.0 / 24.0).unwrap();
                applied += report.neural_substeps;
                rollbacks += report.rollbacks;
            }
            COUNTING.store(false, Ordering::Relaxed);
            let allocations = ALLOCATIONS.load(Ordering::Relaxed);
            assert_eq!(rollbacks, 0);
            assert_eq!(applied, 120, "the network ran on every substep");
            assert_eq!(
                allocations, 0,
                "parallel {parallel}: {allocations} allocations in 12 warm hybrid frames"
            );
        }
    });
}

/// A sphere that slides sideways at 5 cm/s (the moving-body path: pose updates, the collider's
/// refit and normals, its travel per region, the candidate lists checked against it).
struct Slide {
    rest: Vec<Vec3>,
}

impl BodyMotion for Slide {
    fn pose_at(&mut self, time_s: f64, out: &mut Vec<Vec3>) {
        let offset = Vec3::new(0.05 * time_s as Real, 0.0, 0.0);
        out.clear();
        out.extend(self.rest.iter().map(|&p| p + offset));
    }
}

/// As above with the sphere moving under the cloth: after the warm-up, 12 frames (120 pose
/// updates) allocate nothing either.
#[test]
fn stepping_on_a_moving_body_allocates_nothing() {
    in_two_thread_pool(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = write_demo(dir.path(), DemoScene::SphereDrop, Some(32)).unwrap();
        let mut loaded = LoadedScene::load(&path).unwrap();
        loaded.scene.solver.substeps = 10;
        let body = loaded.body_collider().unwrap();
        let rest = loaded.body.as_ref().unwrap().mesh().positions.clone();
        let (model, _) = loaded.build_model(body.as_ref());
        let mut solver = Solver::new(loaded.scene.solver.clone(), model, body).unwrap();
        solver.set_body_motion(Box::new(Slide { rest })).unwrap();
        for _ in 0..36 {
            solver.step_frame(1.0 / 24.0).unwrap();
        }
        let mut contacts = 0;
        ALLOCATIONS.store(0, Ordering::Relaxed);
        COUNTING.store(true, Ordering::Relaxed);
        for _ in 0..12 {
            let report = solver.step_frame(1.0 / 24.0).unwrap();
            assert_eq!(report.rollbacks, 0);
            contacts += report.contacts;
        }
        COUNTING.store(false, Ordering::Relaxed);
        let allocations = ALLOCATIONS.load(Ordering::Relaxed);
        assert!(contacts > 100, "the cloth rests on the sphere: {contacts}");
        assert_eq!(
            allocations, 0,
            "{allocations} allocations in 12 warm frames"
        );
    });
}
