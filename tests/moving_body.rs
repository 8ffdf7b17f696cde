//! The solver against a moving body: continuous collision, body velocity in contacts, body-bound
//! pins, and rollback after an injected failure.

mod common;

use common::model_of;
use drape::collide::BodyCollider;
use drape::math::{Real, Vec3};
use drape::mesh::shapes::{grid_cloth, uv_sphere};
use drape::mesh::Mesh;
use drape::solver::{Anchored, BodyBinding, BodyMotion, ClothModel, Solver, SolverSettings};

/// A square cloth of `n × n` vertices and side `size` hanging in the plane z = 0, its top edge
/// at `top_y`; returns the mesh and the top row's vertex indices.
fn hanging_cloth(size: Real, n: u32, top_y: Real) -> (Mesh, Vec<u32>) {
    let mut mesh = grid_cloth(size, n, 0.0);
    // grid_cloth lies in y = 0 with z from −size/2 (row 0) to +size/2: stand it up.
    for p in &mut mesh.positions {
        *p = Vec3::new(p.x, top_y - (p.z + 0.5 * size), 0.0);
    }
    mesh.normals = None;
    (mesh, (0..n).collect())
}

/// A rigid body translated along a straight line: `start + velocity · t`, stopping at `t_stop`.
struct Translate {
    rest: Vec<Vec3>,
    start: Vec3,
    velocity: Vec3,
    t_stop: f64,
}

impl Translate {
    fn centre(&self, t: f64) -> Vec3 {
        self.start + self.velocity * t.min(self.t_stop) as Real
    }
}

impl BodyMotion for Translate {
    fn pose_at(&mut self, time_s: f64, out: &mut Vec<Vec3>) {
        let c = self.centre(time_s);
        out.clear();
        out.extend(self.rest.iter().map(|&p| p + c));
    }
}

/// Issue 3's tunnelling check: a 5 cm sphere crosses a hanging cloth at 10 m/s (24 fps, 10
/// substeps), hitting it 3 cm above its free hem, and carries on. Checked after every substep:
/// no particle is inside the sphere, and no particle on the sphere's path (closer to its axis
/// than its radius) ever gets from ahead of the sphere to behind it, which it could only do by
/// passing through it. The hem may slip around the sphere, which takes it off the path first.
#[test]
fn fast_sphere_does_not_tunnel_through_hanging_cloth() {
    let r = 0.05;
    let (cloth, top) = hanging_cloth(0.5, 41, 1.0);
    let sphere = uv_sphere(r, 32, 16);
    let (start, velocity) = (Vec3::new(0.0, 0.53, -0.3), Vec3::new(0.0, 0.0, 10.0));
    let centre = move |t: f64| start + velocity * t as Real;
    // 24 fps with 10 substeps is h = 1/240 s: step one substep at a time to check each.
    let settings = SolverSettings {
        substeps: 1,
        iterations: 4,
        ..Default::default()
    };
    let h = 1.0 / 240.0;
    let body = BodyCollider::new(&sphere).unwrap();
    let mut model = model_of(&cloth, &top);
    model.friction.fill(0.0);
    let mut solver = Solver::new(settings, model, Some(body)).unwrap();
    solver
        .set_body_motion(Box::new(Translate {
            rest: sphere.positions.clone(),
            start,
            velocity,
            t_stop: f64::INFINITY,
        }))
        .unwrap();
    let n = cloth.positions.len();
    // Per particle: +1 ahead of the sphere on its path, −1 behind it on its path, 0 off it.
    let mut side = vec![0i8; n];
    let mut hit = 0;
    for step in 1..=24 * 10 / 4 {
        solver.step_frame(h).unwrap();
        let c = centre(solver.time_s());
        for (i, p) in solver.particles().x.iter().enumerate() {
            assert!(p.is_finite());
            let d = p.distance(c);
            assert!(
                d > r - 1e-4,
                "substep {step}: particle {i} is {:.1} mm inside the sphere",
                (r - d) * 1000.0
            );
            let lateral = ((p.x - c.x).powi(2) + (p.y - c.y).powi(2)).sqrt();
            let now = if lateral >= r {
                0
            } else if p.z > c.z {
                1
            } else {
                -1
            };
            assert!(
                !(side[i] == 1 && now == -1),
                "substep {step}: particle {i} tunnelled from ahead of the sphere to behind it"
            );
            if now == 1 {
                hit += 1;
            }
            side[i] = now;
        }
    }
    assert!(hit > 0, "the sphere hit the cloth");
}

/// A slab 1 cm thick, spanning x and z in [−0.5, 0.5] m, with its top at y = 0.
fn thin_slab() -> Mesh {
    drape::mesh::shapes::cuboid(
        "slab",
        Vec3::new(-0.5, -0.01, -0.5),
        Vec3::new(0.5, 0.0, 0.5),
    )
}

/// The continuous test proper: a cloth thrown down at 30 m/s moves 12.5 cm per substep, more
/// than ten times the slab's thickness, so a test of end positions alone would let it pass
/// straight through. It must stop on top.
#[test]
fn fast_cloth_is_swept_against_a_thin_slab() {
    let slab = thin_slab();
    let body = BodyCollider::new(&slab).unwrap();
    assert!(body.is_closed());
    let cloth = grid_cloth(0.3, 16, 0.1);
    let settings = SolverSettings {
        substeps: 10,
        ..Default::default()
    };
    let mut solver = Solver::new(settings, model_of(&cloth, &[]), Some(body)).unwrap();
    for v in &mut solver.particles_mut().v {
        *v = Vec3::new(0.0, -30.0, 0.0);
    }
    for frame in 1..=12 {
        solver.step_frame(1.0 / 24.0).unwrap();
        for (i, p) in solver.particles().x.iter().enumerate() {
            assert!(
                p.y > -0.0001,
                "frame {frame}: particle {i} went through the slab to y = {:.3} m",
                p.y
            );
        }
    }
    // At rest on top, at the collision thickness.
    let mean_y: Real = solver.particles().x.iter().map(|p| p.y).sum::<Real>() / 256.0;
    assert!((mean_y - 0.005).abs() < 0.002, "mean height {mean_y}");
}

/// A body moving sideways carries a resting cloth along by friction (the contact uses the body
/// surface's velocity), and without friction the cloth stays behind.
#[test]
fn friction_uses_the_body_surface_velocity() {
    let slab = thin_slab();
    let run = |friction: Real| -> (Real, Real) {
        let body = BodyCollider::new(&slab).unwrap();
        let cloth = grid_cloth(0.2, 8, 0.005);
        let mut model = model_of(&cloth, &[]);
        model.friction.iter_mut().for_each(|f| *f = friction);
        let mut solver = Solver::new(SolverSettings::default(), model, Some(body)).unwrap();
        // Let it rest for a moment, then slide the slab along +x at 0.5 m/s for 0.5 s.
        solver
            .set_body_motion(Box::new(Translate {
                rest: slab.positions.clone(),
                start: Vec3::ZERO,
                velocity: Vec3::ZERO,
                t_stop: 0.0,
            }))
            .unwrap();
        for _ in 0..6 {
            solver.step_frame(1.0 / 24.0).unwrap();
        }
        let t0 = solver.time_s();
        let x0: Real = solver.particles().x.iter().map(|p| p.x).sum::<Real>() / 64.0;
        solver
            .set_body_motion(Box::new(Translate {
                rest: slab.positions.clone(),
                start: Vec3::new(-0.5 * t0 as Real, 0.0, 0.0),
                velocity: Vec3::new(0.5, 0.0, 0.0),
                t_stop: t0 + 0.5,
            }))
            .unwrap();
        for _ in 0..12 {
            solver.step_frame(1.0 / 24.0).unwrap();
        }
        let mean_x = |s: &Solver| s.particles().x.iter().map(|p| p.x).sum::<Real>() / 64.0;
        let x1 = mean_x(&solver);
        for _ in 0..6 {
            solver.step_frame(1.0 / 24.0).unwrap();
        }
        (x1 - x0, mean_x(&solver) - x0)
    };
    let mu = 0.8;
    let (dragged, after) = run(mu);
    let (slid, _) = run(0.0);
    // The slab jumps to 0.5 m/s and moves 0.25 m. The cloth slips (kinetic friction accelerates
    // it at μg) until it matches the slab's speed, so it lags by v²/(2μg); then static friction
    // carries it. When the slab stops, the cloth slides on by the same v²/(2μg) and ends up
    // moved by exactly 0.25 m. Frictionless, it does not move at all.
    let lag = 0.5 * 0.5 / (2.0 * mu * 9.81);
    assert!(
        (dragged - (0.25 - lag)).abs() < 2e-3,
        "dragged {dragged}, lag {lag}"
    );
    assert!((after - 0.25).abs() < 2e-3, "after the stop {after}");
    assert!(slid.abs() < 1e-3, "slid {slid}");
}

/// Hard pins bound to a moving body follow it with no lag: at the end of every frame each pin
/// is exactly on its body-bound target at that frame's time.
#[test]
fn body_bound_pins_track_without_lag() {
    let r = 0.1;
    let sphere = uv_sphere(r, 32, 16);
    let body = BodyCollider::new(&sphere).unwrap();
    // A small cloth just above the sphere's top, its centre row pinned to the sphere.
    let cloth = grid_cloth(0.1, 9, r + 0.01);
    let pinned: Vec<u32> = (36..45).collect();
    let mut model = model_of(&cloth, &pinned);
    let anchors: Vec<_> = pinned
        .iter()
        .map(|&i| body.anchor(cloth.positions[i as usize]))
        .collect();
    model.body_bindings = anchors
        .iter()
        .enumerate()
        .map(|(k, &anchor)| BodyBinding {
            target: Anchored::Pin(k as u32),
            anchor,
        })
        .collect();
    let velocity = Vec3::new(0.3, 0.2, -0.1);
    let mut solver = Solver::new(SolverSettings::default(), model, Some(body)).unwrap();
    solver
        .set_body_motion(Box::new(Translate {
            rest: sphere.positions.clone(),
            start: Vec3::ZERO,
            velocity,
            t_stop: f64::INFINITY,
        }))
        .unwrap();
    for _ in 0..24 {
        solver.step_frame(1.0 / 24.0).unwrap();
        let shift = velocity * solver.time_s() as Real;
        for &i in &pinned {
            let want = cloth.positions[i as usize] + shift;
            let got = solver.particles().x[i as usize];
            assert!(got.distance(want) < 1e-5, "pin {i} at {got}, target {want}");
        }
    }
}

/// Issue 3's rollback check: a NaN and a huge velocity injected between frames are caught, the
/// substep is rolled back and retried with a smaller step and limited speeds, the count is
/// reported, and the simulation goes on finite.
#[test]
fn injected_nan_and_huge_velocity_roll_back_and_recover() {
    let (cloth, top) = hanging_cloth(0.5, 21, 1.0);
    let mut solver = Solver::new(SolverSettings::default(), model_of(&cloth, &top), None).unwrap();
    for _ in 0..4 {
        let r = solver.step_frame(1.0 / 24.0).unwrap();
        assert_eq!(r.rollbacks, 0);
    }
    solver.particles_mut().v[200] = Vec3::new(Real::NAN, 0.0, 0.0);
    let r = solver.step_frame(1.0 / 24.0).unwrap();
    assert!(r.rollbacks >= 1, "NaN caught");
    assert!(
        r.rollback_reasons[0].contains("non-finite"),
        "{:?}",
        r.rollback_reasons
    );
    solver.particles_mut().v[300] = Vec3::new(0.0, 0.0, 1.0e4);
    let r = solver.step_frame(1.0 / 24.0).unwrap();
    assert!(r.rollbacks >= 1, "huge velocity caught");
    for _ in 0..24 {
        solver.step_frame(1.0 / 24.0).unwrap();
    }
    let p = solver.particles();
    assert!(p.x.iter().chain(&p.v).all(|v| v.is_finite()));
    // Still a hanging cloth: nothing flew away.
    assert!(p
        .x
        .iter()
        .all(|x| x.y > 0.3 && x.y < 1.05 && x.z.abs() < 0.6));
}

/// Body-vertex contacts (`SolverSettings::body_vertex_contacts`): a body feature narrower than
/// the cloth's edges (here a rail 12 mm thick, like a forearm's edge or a finger) passes
/// between the particles of a curtain of 5 cm edges unless its vertices push the cloth's
/// triangles. The rail sweeps through the hanging curtain at 0.5 m/s between two rows of
/// particles: with the contacts it carries the curtain along; without, it goes through.
#[test]
fn a_rail_narrower_than_the_cloth_edges_carries_the_cloth() {
    // A 1 m × 12 mm ellipsoid along x, tessellated every 2.5 cm or so along its length: a UV
    // sphere stretched, turned from y onto x (a rotation keeps it outward-facing).
    let mut rail = uv_sphere(1.0, 12, 64);
    for p in &mut rail.positions {
        *p = Vec3::new(0.5 * p.y, -0.006 * p.x, 0.006 * p.z);
    }
    rail.normals = None;
    // 10 × 10 vertices 5 cm apart hanging in z = 0 from y = 0.45 (top row pinned); rows at
    // y = 0.45, 0.40, …; the rail runs at y = 0.225, between the rows at 0.25 and 0.20.
    let (cloth, top) = hanging_cloth(0.45, 10, 0.45);
    let rows_beside: Vec<usize> = (0..cloth.positions.len())
        .filter(|&i| (cloth.positions[i].y - 0.225).abs() < 0.026)
        .collect();
    assert_eq!(rows_beside.len(), 20);
    let start = Vec3::new(0.0, 0.225, -0.05);
    let run = |vertex_contacts: bool| -> Real {
        let settings = SolverSettings {
            body_vertex_contacts: vertex_contacts,
            ..Default::default()
        };
        let body = BodyCollider::new(&rail).unwrap();
        assert!(body.is_closed());
        let model = ClothModel {
            triangles: cloth.indices.clone(),
            ..model_of(&cloth, &top)
        };
        let mut solver = Solver::new(settings, model, Some(body)).unwrap();
        // The rail moves through the curtain's plane to z = +0.1 m in 0.3 s, then stops.
        solver
            .set_body_motion(Box::new(Translate {
                rest: rail.positions.iter().map(|&p| p + start).collect(),
                start: Vec3::ZERO,
                velocity: Vec3::new(0.0, 0.0, 0.5),
                t_stop: 0.3,
            }))
            .unwrap();
        for _ in 0..9 {
            solver.step_frame(1.0 / 24.0).unwrap();
        }
        let x = &solver.particles().x;
        rows_beside.iter().map(|&i| x[i].z).sum::<Real>() / 20.0
    };
    let (without, with) = (run(false), run(true));
    assert!(
        without.abs() < 0.02,
        "without: the rows beside the rail moved to z = {without:.3} m"
    );
    assert!(
        with > 0.08,
        "with: the rows beside the rail are at z = {with:.3} m, behind the rail at 0.1 m"
    );
}

/// A still body that records, each time it is posed, which of rayon's threads posed it (`None`
/// for a thread outside the pool).
struct RecordThread {
    rest: Vec<Vec3>,
    seen: std::sync::Arc<std::sync::Mutex<Vec<Option<usize>>>>,
}

impl BodyMotion for RecordThread {
    fn pose_at(&mut self, _time_s: f64, out: &mut Vec<Vec3>) {
        self.seen
            .lock()
            .unwrap()
            .push(rayon::current_thread_index());
        out.clear();
        out.extend_from_slice(&self.rest);
    }
}

/// With `parallel`, a frame runs on one of rayon's threads even when stepped from a thread
/// outside the pool (so its parallel loops start inside the pool, docs/solver.md), and gives the
/// same positions bit for bit as the serial solver; without, it runs on the caller's thread.
#[test]
fn a_parallel_frame_runs_inside_rayon_and_matches_the_serial_one() {
    let (cloth, top) = hanging_cloth(0.3, 13, 0.5);
    let sphere = uv_sphere(0.1, 24, 12);
    let step = |parallel: bool| {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let settings = SolverSettings {
            substeps: 4,
            parallel,
            ..Default::default()
        };
        let body = BodyCollider::new(&sphere).unwrap();
        let mut solver = Solver::new(settings, model_of(&cloth, &top), Some(body)).unwrap();
        let rest = sphere
            .positions
            .iter()
            .map(|&p| p + Vec3::new(0.0, 0.3, 0.08));
        solver
            .set_body_motion(Box::new(RecordThread {
                rest: rest.collect(),
                seen: seen.clone(),
            }))
            .unwrap();
        // Setting the motion poses the body once, on this thread; only the frames count.
        seen.lock().unwrap().clear();
        // A thread of its own: the test harness's thread could be anything.
        let x = std::thread::scope(|s| {
            s.spawn(|| {
                for _ in 0..6 {
                    solver.step_frame(1.0 / 24.0).unwrap();
                }
                solver.particles().x.clone()
            })
            .join()
            .unwrap()
        });
        let seen = seen.lock().unwrap().clone();
        (x, seen)
    };
    let (x_parallel, on_parallel) = step(true);
    let (x_serial, on_serial) = step(false);
    assert_eq!(on_parallel.len(), on_serial.len());
    assert!(on_parallel.len() >= 24, "posed {} times", on_parallel.len());
    assert!(
        on_parallel.iter().all(Option::is_some),
        "a parallel frame ran outside rayon's pool: {on_parallel:?}"
    );
    assert!(
        on_serial.iter().all(Option::is_none),
        "a serial frame ran on rayon's pool: {on_serial:?}"
    );
    let bits = |x: &[Vec3]| {
        x.iter()
            .map(|p| p.to_array().map(f32::to_bits))
            .collect::<Vec<_>>()
    };
    assert_eq!(bits(&x_parallel), bits(&x_serial));
    assert!(x_serial
        .iter()
        .zip(&cloth.positions)
        .any(|(a, b)| a.distance(*b) > 1.0e-3));
}

/// A 0.2 m cloth square resting on the thin slab tilted by `slope_deg` about z (downhill towards
/// −x), friction `mu`, 20 substeps, from rest: the mean move of its particles along the slope
/// (m, downhill positive) from 0.25 s to 0.5 s.
fn slid_on_tilted_slab(slope_deg: Real, mu: Real, predicted_friction: bool) -> Real {
    let (s, c) = slope_deg.to_radians().sin_cos();
    let tilt = |p: Vec3| Vec3::new(c * p.x - s * p.y, s * p.x + c * p.y, p.z);
    let mut slab = thin_slab();
    slab.positions.iter_mut().for_each(|p| *p = tilt(*p));
    slab.normals = None;
    let mut cloth = grid_cloth(0.2, 9, 0.0);
    cloth
        .positions
        .iter_mut()
        .for_each(|p| *p = tilt(*p + Vec3::new(0.0, 0.0051, 0.0)));
    cloth.normals = None;
    let mut model = model_of(&cloth, &[]);
    model.friction.fill(mu);
    let settings = SolverSettings {
        substeps: 20,
        predicted_friction,
        ..Default::default()
    };
    let body = BodyCollider::new(&slab).unwrap();
    let mut solver = Solver::new(settings, model, Some(body)).unwrap();
    let downhill = Vec3::new(-c, -s, 0.0);
    let mean = |solver: &Solver| {
        let x = &solver.particles().x;
        x.iter().map(|p| p.dot(downhill)).sum::<Real>() / x.len() as Real
    };
    for _ in 0..6 {
        solver.step_frame(1.0 / 24.0).unwrap();
    }
    let start = mean(&solver);
    for _ in 0..6 {
        solver.step_frame(1.0 / 24.0).unwrap();
    }
    mean(&solver) - start
}

/// Coulomb friction on a slope: with `μ = 0.5` above `tan 20° = 0.36` a resting cloth sticks.
/// With friction on velocities only, the prediction's tangential move `g·sin θ·h²` stays in the
/// position every substep, a creep of `g·sin θ·h` = 7.0 mm/s at 480 substeps per second (1.75
/// mm over the 0.25 s measured); friction on the predicted move
/// (`SolverSettings::predicted_friction`) takes it out. With `μ = 0.2` below the friction angle
/// it slides from rest at `a = g·(sin θ − μ·cos θ)` = 1.51 m/s²: `½·a·(0.5² − 0.25²)` = 0.142 m
/// between 0.25 s and 0.5 s.
#[test]
fn resting_cloth_sticks_on_a_gentle_slope_and_slides_by_coulomb_on_a_steeper_one() {
    let (g, theta) = (9.81 as Real, (20.0 as Real).to_radians());
    let creep = 0.25 * g * theta.sin() / 480.0;
    let stuck_velocity_only = slid_on_tilted_slab(20.0, 0.5, false);
    assert!(
        (stuck_velocity_only - creep).abs() < 0.25 * creep,
        "velocity-level friction alone creeps by g·sin θ·h: {:.2} mm in 0.25 s, expected {:.2}",
        stuck_velocity_only * 1e3,
        creep * 1e3
    );
    let stuck = slid_on_tilted_slab(20.0, 0.5, true);
    assert!(
        stuck.abs() < 0.05 * creep,
        "friction on the prediction: moved {:.3} mm in 0.25 s",
        stuck * 1e3
    );
    let a = g * (theta.sin() - 0.2 * theta.cos());
    let expected = 0.5 * a * (0.5 * 0.5 - 0.25 * 0.25);
    for predicted in [false, true] {
        let slid = slid_on_tilted_slab(20.0, 0.2, predicted);
        assert!(
            (slid - expected).abs() < 0.03 * expected,
            "predicted friction {predicted}: slid {slid:.4} m, Coulomb gives {expected:.4} m",
        );
    }
}

/// Restoring a state forgets the contacts of the old one: a cloth resting on the tilted slab,
/// restored 0.3 m above it at rest, falls straight down (friction on the prediction acts only on
/// the previous substep's contacts, and after a restore there are none).
#[test]
fn a_restored_cloth_falls_straight_without_the_old_contacts_friction() {
    let (s, c) = (20.0 as Real).to_radians().sin_cos();
    let tilt = |p: Vec3| Vec3::new(c * p.x - s * p.y, s * p.x + c * p.y, p.z);
    let mut slab = thin_slab();
    slab.positions.iter_mut().for_each(|p| *p = tilt(*p));
    slab.normals = None;
    let mut cloth = grid_cloth(0.2, 9, 0.0);
    (cloth.positions.iter_mut()).for_each(|p| *p = tilt(*p + Vec3::new(0.0, 0.0051, 0.0)));
    cloth.normals = None;
    let mut model = model_of(&cloth, &[]);
    model.friction.fill(0.5);
    let body = BodyCollider::new(&slab).unwrap();
    let mut solver = Solver::new(SolverSettings::default(), model, Some(body)).unwrap();
    for _ in 0..6 {
        solver.step_frame(1.0 / 24.0).unwrap();
    }
    assert!(solver.step_frame(1.0 / 24.0).unwrap().contacts > 0);
    let mut lifted = solver.particles().clone();
    lifted.x.iter_mut().for_each(|p| p.y += 0.3);
    lifted.v.iter_mut().for_each(|v| *v = Vec3::ZERO);
    solver.restore(solver.time_s(), &lifted).unwrap();
    solver.step_frame(1.0 / 24.0).unwrap();
    for (a, b) in lifted.x.iter().zip(&solver.particles().x) {
        let sideways = Vec3::new(b.x - a.x, 0.0, b.z - a.z).length();
        assert!(
            sideways < 1.0e-6,
            "moved {sideways} m sideways while falling"
        );
        assert!(b.y < a.y - 0.008, "fell {} m", a.y - b.y);
    }
}
