//! Self-collision and garment-to-garment collision (issue 5): folds and layers hold, neighbours
//! do not collide at rest, tight folds still collide, fast motion does not pass through.
//!
//! Every scene counts self-intersections with the stats' independent triangle–triangle test
//! ([`count_self_intersections`]), never with the solver's own contacts. The full-size scenes
//! of the issue (a 2k-vertex strip folding over a bar and a 41 × 41 heap, 120 frames each at 2
//! iterations per substep: see [`FULL_SIZE_ITERATIONS`]) take about 13 s each in release; the
//! smaller versions beside them show the same at a glance.

use drape::bake::stats::count_self_intersections;
use drape::collide::self_collision::{SelfCollision, SelfContact};
use drape::collide::BodyCollider;
use drape::garment::material::{build_cloth, DEFAULT_FABRIC};
use drape::math::{Real, Vec3};
use drape::mesh::shapes::{cuboid, grid_cloth, uv_sphere};
use drape::mesh::{Mesh, Topology};
use drape::preset::builtin_fabric;
use drape::solver::{ClothModel, Pin, Solver, SolverSettings};

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

/// Pins `particles` of `model` where they are (their rest positions).
fn pin_in_place(model: &mut ClothModel, particles: impl IntoIterator<Item = u32>) {
    model.pins = particles
        .into_iter()
        .map(|i| Pin {
            particle: i,
            target_m: model.positions[i as usize],
        })
        .collect();
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
    pin_in_place(&mut model, corners);
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
    pin_in_place(&mut model, corners);
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

/// Angle of the sheet of [`flap_swings_through_sheet`] about the hinge (degrees from +x).
const SHEET_DEG: Real = 95.0;
/// How far the flap swings in one substep (degrees).
const SWING_DEG: Real = 100.0;

/// A flap of cloth (one 0.2 m quad, every vertex pinned) hinged on the z axis swings 100° in
/// one substep, each vertex on its chord, through a free 6 × 16 cm sheet that stands at 95°
/// beyond the hinge, 3–9 cm from it, without gravity. At `x_prev` the flap's point closest to
/// each sheet vertex is on the hinge, which does not move, so the contacts linearised there are
/// satisfied at the end and the flap passes through the sheet; the continuous test finds each
/// pass at its time of impact, with the flap's normal then, and pushes the sheet ahead of the
/// flap (the flap is moving its tip at about 70 m/s, so the sheet flies off ahead of it).
/// Returns the self-intersections per frame, the final positions (the flap's first) and the
/// flap's vertex count.
fn flap_swings_through_sheet(frames: u32) -> (Vec<usize>, Vec<Vec3>, usize) {
    let mut flap = strip(0.2, 0.2, 2, 2, 0.0);
    for p in &mut flap.positions {
        p.x += 0.1;
    }
    let mut sheet = strip(0.06, 0.16, 7, 9, 0.0);
    let at: Real = SHEET_DEG.to_radians();
    for p in &mut sheet.positions {
        let r = 0.06 + p.x;
        *p = Vec3::new(r * at.cos(), r * at.sin(), p.z);
    }
    let mut model = ClothModel::default();
    add_garment(&mut model, &flap, 0);
    // Every flap vertex is pinned: its constraints would only see the swing as triangles
    // turned inside out (a failed substep).
    model.stretch.clear();
    model.shear.clear();
    model.bend.clear();
    add_garment(&mut model, &sheet, 0);
    let n_flap = flap.positions.len();
    pin_in_place(&mut model, 0..n_flap as u32);
    let s = SolverSettings {
        gravity_m_per_s2: [0.0; 3],
        ..settings(true)
    };
    let mut solver = Solver::new(s, model, None).unwrap();
    let swing = drape::math::Mat3::from_rotation_z(SWING_DEG.to_radians());
    for (k, p) in flap.positions.iter().enumerate() {
        solver.set_pin_target(k, swing * *p);
    }
    let counts = run(&mut solver, frames);
    (counts, solver.particles().x.clone(), n_flap)
}

/// Issue 5, continuous tests: after the swing above no intersection is left and every sheet
/// vertex is ahead of the flap's final plane. With the continuous test off (the default of
/// `SelfCollision::continuous` set to false) this fails: all 63 sheet vertices end behind the
/// flap, pushed back to 44–87° by the few contacts the linearised test does find.
#[test]
fn flap_swinging_through_a_sheet_in_one_substep_is_caught() {
    let (counts, x, n_flap) = flap_swings_through_sheet(6);
    assert!(counts.iter().all(|&c| c == 0), "{counts:?}");
    // Every sheet vertex is on the far side of the flap's final plane.
    let ahead = Vec3::new(
        -(SWING_DEG.to_radians()).sin(),
        (SWING_DEG.to_radians()).cos(),
        0.0,
    );
    let behind = x[n_flap..].iter().filter(|p| p.dot(ahead) < 0.0).count();
    assert_eq!(behind, 0, "sheet vertices left behind the flap");
    assert!(x.iter().all(|p| p.is_finite()));
}

/// Slope of the friction tests (degrees): tan 20° = 0.364.
const SLOPE_DEG: Real = 20.0;

/// A 0.1 m square (6 × 6 vertices, layer 1) resting on a 0.8 m square (one quad, every vertex
/// pinned, layer 0) tilted by [`SLOPE_DEG`] about z, downhill towards +x, 20 substeps, no
/// damping. The lower square's fabric friction is `mu_lower`, the upper's `mu_upper`; their
/// self-contacts use the mean. Returns the time (s) and the upper square's mean displacement
/// along the slope (m) at the end of each frame.
///
/// The lower square is one quad whose diagonal runs down the slope, beside the upper square's
/// path, so that the upper vertices never cross a triangle edge: on a finer lower mesh, the
/// contacts linearised at `x_prev` against the triangle just ahead (closest point on its edge,
/// normal tilted back) brake the slide by themselves (on 17 × 17 vertices the frictionless
/// square slides at 1.10 m/s² instead of g·sin θ = 3.36), which would hide the friction law
/// this test checks.
fn square_on_slope(mu_lower: Real, mu_upper: Real, frames: u32) -> Vec<(Real, Real)> {
    let theta = SLOPE_DEG.to_radians();
    let tilt = drape::math::Mat3::from_rotation_z(-theta);
    let normal = tilt * Vec3::Y;
    let downhill = tilt * Vec3::X;
    let thickness = SolverSettings::default().self_collision_thickness_m;
    // One quad, turned 45° in its plane so that its diagonal runs down the slope.
    let mut lower = grid_cloth(0.8, 2, 0.0);
    let turn = drape::math::Mat3::from_rotation_y(std::f32::consts::FRAC_PI_4);
    for p in &mut lower.positions {
        *p = tilt * (turn * *p);
    }
    // In the rest shape the upper square is two thicknesses above, so each pair's thickness is
    // the full one (at most half the rest distance); it starts one thickness above, touching.
    let mut upper = grid_cloth(0.1, 6, 0.0);
    for p in &mut upper.positions {
        *p = tilt * (*p + Vec3::new(-0.25, 0.0, 0.1)) + normal * (2.0 * thickness);
    }
    let mut model = ClothModel::default();
    add_garment(&mut model, &lower, 0);
    add_garment(&mut model, &upper, 1);
    let n_lower = lower.positions.len();
    pin_in_place(&mut model, 0..n_lower as u32);
    for (i, mu) in model.friction.iter_mut().enumerate() {
        *mu = if i < n_lower { mu_lower } else { mu_upper };
    }
    model.damping_per_s.fill(0.0);
    let mut solver = Solver::new(settings(true), model, None).unwrap();
    for p in &mut solver.particles_mut().x[n_lower..] {
        *p -= normal * thickness;
    }
    let start: Vec3 = solver.particles().x[n_lower..].iter().sum::<Vec3>() / 36.0;
    (1..=frames)
        .map(|f| {
            solver.step_frame(1.0 / FPS).unwrap();
            let x = &solver.particles().x[n_lower..];
            let centre = x.iter().sum::<Vec3>() / x.len() as Real;
            (f as Real / FPS, (centre - start).dot(downhill))
        })
        .collect()
}

/// Least-squares fit of `s = s0 + v0·t + a·t²/2`: returns `a`.
#[allow(clippy::needless_range_loop)] // index loops read as the elimination's formulas
fn fitted_acceleration(samples: &[(Real, Real)]) -> Real {
    // Normal equations of the basis (1, t, t²/2), in f64.
    let mut m = [[0.0f64; 3]; 3];
    let mut r = [0.0f64; 3];
    for &(t, s) in samples {
        let b = [1.0, t as f64, 0.5 * (t as f64).powi(2)];
        for i in 0..3 {
            r[i] += b[i] * s as f64;
            for j in 0..3 {
                m[i][j] += b[i] * b[j];
            }
        }
    }
    // Gaussian elimination (the matrix is symmetric positive definite).
    for k in 0..3 {
        for i in k + 1..3 {
            let f = m[i][k] / m[k][k];
            for j in k..3 {
                m[i][j] -= f * m[k][j];
            }
            r[i] -= f * r[k];
        }
    }
    let mut x = [0.0f64; 3];
    for i in (0..3).rev() {
        x[i] = (r[i] - (i + 1..3).map(|j| m[i][j] * x[j]).sum::<f64>()) / m[i][i];
    }
    x[2] as Real
}

/// Cloth–cloth friction (issue 5): with the mean μ = 0.7 > tan 20° the square stays put; with
/// μ = 0.2 it slides down at `g·(sin θ − μ·cos θ)`, and without friction at `g·sin θ`.
///
/// Velocity-level friction removes the tangential velocity but not the tangential move the
/// predicted step already made, so a stuck square still creeps by `g·sin θ·h²` per substep,
/// `g·sin θ·h·T` in all (7.0 mm/s at h = 1/480 s, the same as on the body): the bound on
/// "stays" is 1.5 times that, under a hundredth of the frictionless slide. Once sliding, each
/// substep adds `g·sin θ·h` of tangential velocity and the contacts' normal push `g·cos θ·h²`
/// lets friction remove `μ·g·cos θ·h`, so the discrete model has exactly the analytic
/// acceleration; the creep is a constant velocity, absorbed by the fit's linear term. The fit
/// over frames 4–18 is within 0.01 % of it (measured); the bound is 1 %.
#[test]
fn square_sticks_on_a_gentle_slope_and_slides_on_a_steep_one() {
    let (g, theta) = (9.81, SLOPE_DEG.to_radians());
    let h = 1.0 / (FPS * SolverSettings::default().substeps as Real);
    let frames = 18;
    let duration = frames as Real / FPS;

    // Stays: mean of 0.5 and 0.9 is 0.7 > tan 20° = 0.364.
    let stuck = square_on_slope(0.5, 0.9, frames);
    let creep = g * theta.sin() * h * duration;
    let moved = stuck.iter().map(|s| s.1.abs()).fold(0.0, Real::max);
    let frictionless = 0.5 * g * theta.sin() * duration * duration;
    eprintln!(
        "stuck: moved {:.2} mm in {duration:.2} s (creep bound {:.2} mm, frictionless slide {:.0} mm)",
        moved * 1e3,
        creep * 1e3,
        frictionless * 1e3
    );
    assert!(moved < 1.5 * creep, "moved {moved} m");

    // Slides: mean of 0.1 and 0.3 is 0.2 < tan 20°.
    let mu = 0.2;
    let sliding = square_on_slope(0.1, 0.3, frames);
    let a = fitted_acceleration(&sliding[3..]);
    let expected = g * (theta.sin() - mu * theta.cos());
    eprintln!(
        "sliding: a = {a:.4} m/s² (g(sin θ − μ cos θ) = {expected:.4}), moved {:.1} mm",
        sliding[frames as usize - 1].1 * 1e3
    );
    assert!(
        ((a - expected) / expected).abs() < 0.01,
        "a = {a} m/s², expected {expected}"
    );
    assert!(sliding.windows(2).all(|w| w[1].1 > w[0].1), "{sliding:?}");

    // Without friction: g·sin θ.
    let free = square_on_slope(0.0, 0.0, frames);
    let a = fitted_acceleration(&free[3..]);
    let expected = g * theta.sin();
    eprintln!("frictionless: a = {a:.4} m/s² (g sin θ = {expected:.4})");
    assert!(
        ((a - expected) / expected).abs() < 0.01,
        "a = {a} m/s², expected {expected}"
    );
}

/// The contact search runs on rayon's pool in fixed chunks joined in order, so the result does
/// not depend on the number of threads: two stacked squares falling on a sphere (24 frames),
/// bit for bit on 1 and 3 threads.
#[test]
fn self_collision_is_identical_on_any_thread_count() {
    let on = |threads: usize| -> Vec<Vec3> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let n = 17;
            let mut model = ClothModel::default();
            add_garment(&mut model, &grid_cloth(0.5, n, 0.32), 0);
            add_garment(&mut model, &grid_cloth(0.5, n, 0.33), 0);
            let body = BodyCollider::new(&uv_sphere(0.3, 32, 16)).unwrap();
            let mut solver = Solver::new(settings(true), model, Some(body)).unwrap();
            let mut contacts = 0;
            for _ in 0..24 {
                contacts += solver.step_frame(1.0 / FPS).unwrap().self_contacts_active;
            }
            assert!(contacts > 0, "the layers touched");
            solver.particles().x.clone()
        })
    };
    assert_eq!(on(1), on(3));
}
