//! Self-collision and garment-to-garment collision (issue 5): folds and layers hold, neighbours
//! do not collide at rest, tight folds still collide, fast motion does not pass through.
//!
//! Every scene counts self-intersections with the stats' independent triangle–triangle test
//! ([`count_self_intersections`]), never with the solver's own contacts. The full-size scenes
//! of the issue (a 2k-vertex strip and a heap over 120 frames, at 2 iterations per substep:
//! see [`FULL_SIZE_ITERATIONS`]) take about 30 s each in release and are `#[ignore]`d; run
//! them with
//! `cargo test --release --test self_collision -- --ignored --nocapture`. The default suite
//! runs the same scenes at a coarser resolution and for fewer frames.

use drape::collide::BodyCollider;
use drape::material::{build_cloth, builtin_fabric, DEFAULT_FABRIC};
use drape::math::{Real, Vec3};
use drape::mesh::{Mesh, Topology};
use drape::self_collision::{SelfCollision, SelfContact};
use drape::shapes::{cuboid, grid_cloth, uv_sphere};
use drape::sim::{ClothModel, Pin, Solver, SolverSettings};
use drape::stats::count_self_intersections;

const FPS: Real = 24.0;

/// A rectangle of `nx × nz` vertices, `length_m` along X and `width_m` along Z, centred on the
/// Y axis at height `y_m`, with the checkerboard diagonals of [`grid_cloth`].
fn strip(length_m: Real, width_m: Real, nx: u32, nz: u32, y_m: Real) -> Mesh {
    let mut positions = Vec::new();
    for j in 0..nz {
        for i in 0..nx {
            positions.push(Vec3::new(
                -0.5 * length_m + length_m * i as Real / (nx - 1) as Real,
                y_m,
                -0.5 * width_m + width_m * j as Real / (nz - 1) as Real,
            ));
        }
    }
    let mut indices = Vec::new();
    for j in 0..nz - 1 {
        for i in 0..nx - 1 {
            let (a, b, c, d) = (
                j * nx + i,
                j * nx + i + 1,
                (j + 1) * nx + i,
                (j + 1) * nx + i + 1,
            );
            if (i + j) % 2 == 0 {
                indices.push([a, d, b]);
                indices.push([a, c, d]);
            } else {
                indices.push([a, c, b]);
                indices.push([b, c, d]);
            }
        }
    }
    Mesh {
        name: "strip".into(),
        positions,
        indices,
        ..Default::default()
    }
}

/// Appends a garment (the default fabric) to `model` on collision layer `layer`.
fn add_garment(model: &mut ClothModel, mesh: &Mesh, layer: i32) {
    let fabric = builtin_fabric(DEFAULT_FABRIC).unwrap();
    let c = build_cloth(mesh, &Topology::new(mesh), &fabric);
    let base = model.positions.len() as u32;
    let n = mesh.positions.len();
    model.positions.extend_from_slice(&mesh.positions);
    model.mass_kg.extend_from_slice(&c.mass_kg);
    model.damping_per_s.extend(vec![fabric.damping_per_s; n]);
    model.friction.extend(vec![fabric.friction; n]);
    model.stretch.extend(c.stretch.into_iter().map(|mut d| {
        d.particles = d.particles.map(|i| i + base);
        d
    }));
    model.shear.extend(c.shear.into_iter().map(|mut s| {
        s.particles = s.particles.map(|i| i + base);
        s
    }));
    model.bend.extend(c.bend.into_iter().map(|mut b| {
        b.particles = b.particles.map(|i| i + base);
        b
    }));
    model
        .triangles
        .extend(mesh.indices.iter().map(|t| t.map(|i| i + base)));
    model.layer.extend(vec![layer; n]);
}

fn settings(self_collision: bool) -> SolverSettings {
    SolverSettings {
        self_collision,
        ..Default::default()
    }
}

/// The full-size scenes run 2 iterations per substep: at 1 they end with a few intersecting
/// pairs (the 2k strip 6 from frame 8 on, the heap 2 at one frame), which 2 iterations or 40
/// substeps remove.
const FULL_SIZE_ITERATIONS: u32 = 2;

/// Runs `frames` frames; returns the self-intersection count at the end of each frame.
fn run(solver: &mut Solver, frames: u32) -> Vec<usize> {
    let triangles = solver.model().triangles.clone();
    (0..frames)
        .map(|_| {
            solver.step_frame(1.0 / FPS).unwrap();
            count_self_intersections(&solver.particles().x, &triangles)
        })
        .collect()
}

/// A 1 m × 0.2 m strip dropped across a 1 cm bar: both halves fall, swing in and meet under
/// the bar. Returns the per-frame self-intersections and the final positions.
fn strip_over_bar(
    nx: u32,
    nz: u32,
    frames: u32,
    self_collision: bool,
    iterations: u32,
) -> (Vec<usize>, Vec<Vec3>) {
    let mut model = ClothModel::default();
    add_garment(&mut model, &strip(1.0, 0.2, nx, nz, 0.015), 0);
    let bar = cuboid(
        "bar",
        Vec3::new(-0.005, -0.005, -0.3),
        Vec3::new(0.005, 0.005, 0.3),
    );
    let body = BodyCollider::new(&bar).unwrap();
    let s = SolverSettings {
        iterations,
        ..settings(self_collision)
    };
    let mut solver = Solver::new(s, model, Some(body)).unwrap();
    let counts = run(&mut solver, frames);
    (counts, solver.particles().x.clone())
}

fn check_strip(nx: u32, nz: u32, frames: u32, iterations: u32) {
    let (counts, x) = strip_over_bar(nx, nz, frames, true, iterations);
    assert!(
        counts.iter().all(|&c| c == 0),
        "self-intersections per frame: {counts:?}"
    );
    // It folded over the bar: both ends hang well below it.
    let (left, right) = (x[0], x[nx as usize - 1]);
    assert!(
        left.y < -0.2 && right.y < -0.2,
        "ends at {left} and {right}"
    );
    assert!(x.iter().all(|p| p.is_finite()));
}

/// Before: without self-collision the two halves pass through each other.
#[test]
fn strip_halves_cross_without_self_collision() {
    let (counts, _) = strip_over_bar(41, 9, 36, false, 1);
    assert!(
        counts.iter().any(|&c| c > 0),
        "the scene must show the failure it guards against: {counts:?}"
    );
}

#[test]
fn strip_folds_over_bar_without_self_intersections() {
    check_strip(41, 9, 36, 1);
}

#[test]
#[ignore = "issue 5 full size (2,121 vertices, 120 frames, 2 iterations): about 30 s in release; run with --release"]
fn strip_2k_vertices_folds_over_bar_120_frames() {
    check_strip(101, 21, 120, FULL_SIZE_ITERATIONS);
}

/// A square cloth standing on its edge just above a floor collapses into a heap.
fn heap(n: u32, frames: u32, self_collision: bool, iterations: u32) -> (Vec<usize>, Vec<Vec3>) {
    let mut cloth = grid_cloth(0.5, n, 0.0);
    // Stand it up in the plane z ≈ 0, bottom edge 1 cm above the floor, with a small ripple
    // so that it buckles into folds instead of sinking straight down.
    for p in &mut cloth.positions {
        let (x, along) = (p.x, p.z + 0.25);
        *p = Vec3::new(
            x,
            0.01 + along,
            0.01 * (9.0 * x).sin() * (7.0 * along).cos(),
        );
    }
    let mut model = ClothModel::default();
    add_garment(&mut model, &cloth, 0);
    let floor = cuboid(
        "floor",
        Vec3::new(-2.0, -0.1, -2.0),
        Vec3::new(2.0, 0.0, 2.0),
    );
    let body = BodyCollider::new(&floor).unwrap();
    let s = SolverSettings {
        iterations,
        ..settings(self_collision)
    };
    let mut solver = Solver::new(s, model, Some(body)).unwrap();
    let counts = run(&mut solver, frames);
    (counts, solver.particles().x.clone())
}

fn check_heap(n: u32, frames: u32, iterations: u32) {
    let (counts, x) = heap(n, frames, true, iterations);
    assert!(
        counts.iter().all(|&c| c == 0),
        "self-intersections per frame: {counts:?}"
    );
    let top = x.iter().map(|p| p.y).fold(Real::MIN, Real::max);
    assert!(top < 0.2, "the cloth collapsed (top at {top} m)");
    assert!(x.iter().all(|p| p.is_finite() && p.y > -0.001));
}

/// Two iterations, as at full size: at one iteration per substep this heap kept 2
/// intersecting pairs from frame 10 on with the isotropic constraint build (CI, stop 13) and
/// none with the anisotropic one of issue 4, so one iteration was a coin toss, not a check.
#[test]
fn cloth_heap_on_a_plane_without_self_intersections() {
    check_heap(21, 36, FULL_SIZE_ITERATIONS);
}

#[test]
#[ignore = "full size (41 × 41 vertices, 120 frames, 2 iterations): about 30 s in release; run with --release"]
fn cloth_heap_on_a_plane_120_frames() {
    check_heap(41, 120, FULL_SIZE_ITERATIONS);
}

/// Two 0.5 m squares, 1 cm apart, fall onto a sphere: the upper one (layer 1) drapes over the
/// lower one (layer 0) and they never interpenetrate.
#[test]
fn stacked_squares_on_a_sphere_do_not_interpenetrate() {
    let n = 17;
    let mut model = ClothModel::default();
    add_garment(&mut model, &grid_cloth(0.5, n, 0.32), 0);
    add_garment(&mut model, &grid_cloth(0.5, n, 0.33), 1);
    let body = BodyCollider::new(&uv_sphere(0.3, 32, 16)).unwrap();
    let s = settings(true);
    let thickness = s.self_collision_thickness_m;
    let mut solver = Solver::new(s, model, Some(body)).unwrap();
    let counts = run(&mut solver, 48);
    assert!(counts.iter().all(|&c| c == 0), "{counts:?}");
    let x = &solver.particles().x;
    let per = (n * n) as usize;
    let (lower, upper) = (&x[..per], &x[per..]);
    // Draped: the edges fell well below the top of the sphere.
    assert!(
        lower[0].y < 0.15 && upper[0].y < 0.15,
        "{} {}",
        lower[0],
        upper[0]
    );
    // Over the lower one: the upper square's centre is outside the lower's, a thickness away.
    let centre = per / 2;
    let gap = upper[centre].length() - lower[centre].length();
    assert!(
        gap > 0.5 * thickness,
        "upper centre {} m from the sphere's centre, lower {} m",
        upper[centre].length(),
        lower[centre].length()
    );
    // No upper vertex ends up closer to the sphere than the lower cloth beneath it.
    let tris = &solver.model().triangles[..2 * ((n - 1) * (n - 1)) as usize];
    for p in upper {
        let dir = p.normalize();
        let beneath = tris.iter().find_map(|t| {
            let [a, b, c] = t.map(|i| x[i as usize]);
            ray_hits_triangle(Vec3::ZERO, dir, a, b, c)
        });
        if let Some(r) = beneath {
            assert!(
                p.length() > r,
                "upper vertex {p} is under the lower cloth (at {r} m)"
            );
        }
    }
}

/// Distance along the ray `o + r·d` to triangle `a b c`, if the ray hits it (Möller–Trumbore).
fn ray_hits_triangle(o: Vec3, d: Vec3, a: Vec3, b: Vec3, c: Vec3) -> Option<Real> {
    let (e1, e2) = (b - a, c - a);
    let p = d.cross(e2);
    let det = e1.dot(p);
    if det.abs() < 1e-12 {
        return None;
    }
    let s = o - a;
    let u = s.dot(p) / det;
    let q = s.cross(e1);
    let v = d.dot(q) / det;
    let r = e2.dot(q) / det;
    (u >= 0.0 && v >= 0.0 && u + v <= 1.0 && r > 0.0).then_some(r)
}

/// A flat cloth at rest, without gravity, with self-collision on: its edges (5 mm) are close to
/// the thickness (4 mm), so vertices are within the search reach of triangles one ring away,
/// yet no contact pushes and nothing moves.
#[test]
fn flat_cloth_at_rest_stays_at_rest() {
    let cloth = grid_cloth(0.05, 11, 0.0);
    let mut model = ClothModel::default();
    add_garment(&mut model, &cloth, 0);
    let s = SolverSettings {
        gravity_m_per_s2: [0.0; 3],
        ..settings(true)
    };
    let mut solver = Solver::new(s, model, None).unwrap();
    let start = solver.particles().x.clone();
    let mut candidates = 0;
    for _ in 0..100 {
        let r = solver.step_frame(1.0 / FPS).unwrap();
        assert_eq!(r.self_contacts_active, 0, "a neighbour contact pushed");
        candidates = candidates.max(r.self_contacts);
    }
    assert!(candidates > 0, "the exclusion was exercised");
    let moved = solver
        .particles()
        .x
        .iter()
        .zip(&start)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, Real::max);
    assert!(moved < 1e-6, "moved {moved} m");
}

/// A strip folded 175° on itself along a crease: the two layers near the crease are closer than
/// the thickness, but far apart along the cloth, so the neighbour exclusion must not hide them.
#[test]
fn tight_fold_contacts_are_kept_and_separate_the_layers() {
    let (nx, nz, dx) = (21u32, 5u32, 0.01);
    let rest = strip(dx * (nx - 1) as Real, 0.04, nx, nz, 0.0);
    let crease = rest.positions[10].x;
    let angle: Real = 5.0_f32.to_radians();
    let folded: Vec<Vec3> = rest
        .positions
        .iter()
        .map(|p| {
            let r = p.x - crease;
            if r <= 0.0 {
                *p
            } else {
                Vec3::new(crease - r * angle.cos(), r * angle.sin(), p.z)
            }
        })
        .collect();
    let thickness = 0.004;
    let mut sc = SelfCollision::new(&rest.indices, &[], &rest.positions, thickness, 0.005);
    sc.find_contacts(&folded, &folded, &vec![1.0; folded.len()], &rest.positions);
    let column = |i: u32| (i % nx) as i32 - 10;
    // Vertex–triangle contacts across the fold, between parts at least 2 edges apart.
    let across = |c: &SelfContact| {
        let v = column(c.particles[0]);
        let t = c.particles[1..].iter().map(|&i| column(i));
        let (lo, hi) = (t.clone().min().unwrap(), t.max().unwrap());
        (v >= 2 && hi <= -1 || v <= -2 && lo >= 1) && c.thickness_m == thickness
    };
    let n_across = sc.contacts().iter().filter(|c| across(c)).count();
    assert!(n_across > 10, "{n_across} contacts across the fold");
    // Projecting them pushes the layers a thickness apart (to the side each came from).
    let mut x = folded.clone();
    let w = vec![1.0; x.len()];
    for sweep in 0..40 {
        sc.project(&mut x, &w, sweep % 2 == 1);
    }
    for c in sc.contacts().iter().filter(|c| across(c)) {
        let gap: Vec3 = (0..4)
            .map(|k| x[c.particles[k] as usize] * c.coeffs[k])
            .sum();
        assert!(
            c.normal.dot(gap) > thickness - 2e-4,
            "gap {} m after projection",
            c.normal.dot(gap)
        );
    }
    // Seen from the upper layer's vertices: still above the lower layer.
    for (i, p) in x.iter().enumerate() {
        if column(i as u32) >= 3 {
            assert!(p.y > 0.0, "vertex {i} crossed to the other side: {p}");
        }
    }
}

/// A small square thrown at 6 m/s onto a larger one pinned at its corners moves 1.25 cm per
/// substep, three times the thickness, yet does not pass through.
#[test]
fn fast_square_does_not_pass_through_a_pinned_square() {
    let n = 17;
    let mut model = ClothModel::default();
    add_garment(&mut model, &grid_cloth(0.4, n, 0.0), 0);
    add_garment(&mut model, &grid_cloth(0.2, 9, 0.03), 0);
    let corners = [0, n - 1, n * (n - 1), n * n - 1];
    model.pins = corners
        .iter()
        .map(|&i| Pin {
            particle: i,
            target_m: model.positions[i as usize],
        })
        .collect();
    let mut solver = Solver::new(settings(true), model, None).unwrap();
    let first = (n * n) as usize;
    for v in &mut solver.particles_mut().v[first..] {
        *v = Vec3::new(0.0, -6.0, 0.0);
    }
    let counts = run(&mut solver, 12);
    assert!(counts.iter().all(|&c| c == 0), "{counts:?}");
    let x = &solver.particles().x;
    // The small square's centre stays above the big one's.
    let (big_c, small_c) = (x[(n * n / 2) as usize], x[first + 40]);
    assert!(small_c.y > big_c.y, "{small_c} vs {big_c}");
}

/// The same throw without self-collision passes through: the test above guards something.
#[test]
fn fast_square_passes_through_without_self_collision() {
    let n = 17;
    let mut model = ClothModel::default();
    add_garment(&mut model, &grid_cloth(0.4, n, 0.0), 0);
    add_garment(&mut model, &grid_cloth(0.2, 9, 0.03), 0);
    let corners = [0, n - 1, n * (n - 1), n * n - 1];
    model.pins = corners
        .iter()
        .map(|&i| Pin {
            particle: i,
            target_m: model.positions[i as usize],
        })
        .collect();
    let mut solver = Solver::new(settings(false), model, None).unwrap();
    let first = (n * n) as usize;
    for v in &mut solver.particles_mut().v[first..] {
        *v = Vec3::new(0.0, -6.0, 0.0);
    }
    run(&mut solver, 12);
    let x = &solver.particles().x;
    assert!(x[first + 40].y < x[(n * n / 2) as usize].y);
}

#[test]
fn bad_settings_and_layers_are_errors() {
    let mut model = ClothModel::default();
    add_garment(&mut model, &grid_cloth(0.2, 3, 0.0), 0);
    let bad = SolverSettings {
        self_collision_thickness_m: -0.001,
        ..settings(true)
    };
    let e = Solver::new(bad, model.clone(), None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("self_collision_thickness_m"), "{e}");
    let mut wrong = model.clone();
    wrong.layer.pop();
    let e = Solver::new(settings(true), wrong, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("layer"), "{e}");
    let mut wrong = model;
    wrong.triangles.push([0, 1, 99]);
    let e = Solver::new(settings(true), wrong, None)
        .unwrap_err()
        .to_string();
    assert!(e.contains("triangle") && e.contains("99"), "{e}");
}
