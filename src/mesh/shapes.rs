//! Procedural meshes made by our own code: a UV sphere, a flat cloth grid, a mannequin and a
//! skirt fitted to it. Y is up, lengths are in metres, and the mannequin faces +Z.
//!
//! # Sphere and grid
//!
//! [`uv_sphere`] has one vertex at each pole and shares its seam longitude, so it is closed and
//! watertight without welding. [`grid_cloth`] is a flat square of `n × n` vertices whose quads
//! alternate their diagonals in a checkerboard, so the triangulation has no preferred shear
//! direction.
//!
//! # Mannequin
//!
//! The body is the zero level set of a signed distance field ([`mannequin_sdf`], negative
//! inside). Limbs are round cones (capsules whose radius varies linearly along the axis), the
//! head, hands, calves and feet are ellipsoids, and the torso is a loft of horizontal ellipses
//! whose half-axes `a(y)` (along X) and `b(y)` (along Z) and centre `c(y)` (along Z) are
//! Hermite-interpolated through a table of key heights. The parts are joined by the polynomial
//! smooth minimum
//!
//! ```text
//! smin(d1, d2; k) = min(d1, d2) − h² k / 4,   h = max(k − |d1 − d2|, 0) / k
//! ```
//!
//! where `d1`, `d2` are the parts' distances (m) and `k` is the blend width (m): the parts are
//! filleted where they come within `k` of each other and untouched elsewhere. The ellipse and
//! ellipsoid distances use the first-order estimate
//!
//! ```text
//! d(q) ≈ k0 (k0 − 1) / k1,   k0 = |q / r|,   k1 = |q / r²|
//! ```
//!
//! with `q` the point relative to the centre and `r` the half-axes (division componentwise); it
//! is exact on the surface and accurate near it. The torso's horizontal distance is divided by
//! `√(1 + s²)`, with `s` the steepest of `|a′(y)|`, `|b′(y)|`, `|c′(y)|`, so that a sloping flank
//! does not overstate the distance.
//!
//! The field is sampled on a regular grid and polygonised by marching tetrahedra
//! ([`marching_tetrahedra`]): every cube is cut into the six Kuhn tetrahedra that share its main
//! diagonal, which makes neighbouring cubes agree on their face diagonals. Inside a tetrahedron
//! the surface is one triangle (one corner on its own side) or one quad split along its shorter
//! diagonal (two and two). Each grid edge that the surface crosses gets exactly one vertex (an
//! edge-keyed cache), at the linear zero crossing `t = v_a / (v_a − v_b)` clamped to
//! `[T_MIN, 1 − T_MIN]`. Because every triangle edge lies in a tetrahedron face that two
//! tetrahedra share, the result is a closed 2-manifold; because no vertex sits on a grid corner,
//! no triangle is degenerate. Triangles are oriented from the combinatorics of positively
//! oriented tetrahedra, not from geometry, so the orientation is always outward.
//!
//! Finally three rounds of tangential relaxation even out the triangles: each vertex moves
//! halfway to the mean of its neighbours and is then projected back onto the level set by a
//! Newton step
//!
//! ```text
//! x ← x − f(x) ∇f / |∇f|²
//! ```
//!
//! with `f` the field (m) and `∇f` its gradient (dimensionless), both from four samples at the
//! corners of a tetrahedron of half-size `h = 0.1 mm` around `x`. The raw marching-tetrahedra
//! surface cannot self-intersect (each triangle lies inside its own tetrahedron); relaxation
//! moves vertices by a fraction of a cell, which at the default 2 cm cell stays clear of the
//! narrowest gaps (armpits, crotch, hands), and a test checks it.
//!
//! # Skirt
//!
//! [`skirt`] builds rings of vertices from the waist down. Each ring is the waist ellipse grown
//! by an offset `o` that is the smallest multiple of a millimetre keeping every vertex at least
//! `clearance_m` outside the body, and never less than the ring above's offset plus
//! `tan(flare) · Δy`: the skirt follows the hips and flares below them.

use std::collections::HashMap;

use crate::math::{Real, Vec2, Vec3};
use crate::mesh::Mesh;

const PI: Real = std::f64::consts::PI as Real;
const TAU: Real = std::f64::consts::TAU as Real;

/// A generated garment: its mesh and the vertices to pin (attach) to the body.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Garment {
    /// The garment's render and simulation mesh (m).
    pub mesh: Mesh,
    /// Indices into `mesh.positions` of the vertices held in place (for a skirt: the waistband).
    pub pinned: Vec<u32>,
}

// ---------------------------------------------------------------------------------------------
// Sphere and grid
// ---------------------------------------------------------------------------------------------

/// An axis-aligned box from `min` to `max` (m): 8 vertices, 12 triangles, counter-clockwise
/// seen from outside, so it is closed with a positive volume. Vertex `i` has the `max`
/// coordinate on x when bit 0 of `i` is set, on y for bit 1, on z for bit 2. Named `name`.
pub fn cuboid(name: &str, min: Vec3, max: Vec3) -> Mesh {
    let positions = (0..8)
        .map(|i| {
            Vec3::new(
                if i & 1 == 0 { min.x } else { max.x },
                if i & 2 == 0 { min.y } else { max.y },
                if i & 4 == 0 { min.z } else { max.z },
            )
        })
        .collect();
    let quads: [[u32; 4]; 6] = [
        [0, 2, 3, 1],
        [4, 5, 7, 6],
        [0, 1, 5, 4],
        [2, 6, 7, 3],
        [0, 4, 6, 2],
        [1, 3, 7, 5],
    ];
    let indices = quads
        .iter()
        .flat_map(|q| [[q[0], q[1], q[2]], [q[0], q[2], q[3]]])
        .collect();
    Mesh::new(name, positions, indices)
}

/// A closed UV sphere of radius `radius_m` (m) centred at the origin, with outward normals.
///
/// `segments` (at least 3) vertices go around each of the `rings − 1` parallels (`rings` at least
/// 2 latitude bands), plus one vertex at each pole: `2 + (rings − 1) · segments` vertices and
/// `2 · segments · (rings − 1)` triangles, counter-clockwise seen from outside. The seam longitude
/// is shared, so [`Topology::is_closed`](crate::mesh::Topology::is_closed) holds; for the same
/// reason the sphere has no UVs. Vertex 0 is the north pole (+Y), the last vertex the south pole.
pub fn uv_sphere(radius_m: Real, segments: u32, rings: u32) -> Mesh {
    let segments = segments.max(3);
    let rings = rings.max(2);
    let count = (2 + (rings - 1) * segments) as usize;
    let mut normals = Vec::with_capacity(count);
    normals.push(Vec3::Y);
    for i in 1..rings {
        let (st, ct) = (PI * i as Real / rings as Real).sin_cos();
        for j in 0..segments {
            let (sp, cp) = (TAU * j as Real / segments as Real).sin_cos();
            normals.push(Vec3::new(st * cp, ct, st * sp));
        }
    }
    normals.push(-Vec3::Y);
    let positions = normals.iter().map(|n| *n * radius_m).collect();

    let south = count as u32 - 1;
    // Vertex `j` of parallel `i` (1 ≤ i < rings); `j` wraps around the seam.
    let ring = |i: u32, j: u32| 1 + (i - 1) * segments + j % segments;
    let mut indices = Vec::with_capacity((2 * segments * (rings - 1)) as usize);
    for j in 0..segments {
        indices.push([0, ring(1, j + 1), ring(1, j)]);
    }
    for i in 1..rings - 1 {
        for j in 0..segments {
            let (a, b) = (ring(i, j), ring(i, j + 1));
            let (c, d) = (ring(i + 1, j), ring(i + 1, j + 1));
            indices.push([a, b, c]);
            indices.push([b, d, c]);
        }
    }
    for j in 0..segments {
        indices.push([ring(rings - 1, j), ring(rings - 1, j + 1), south]);
    }
    Mesh {
        name: "sphere".into(),
        positions,
        indices,
        normals: Some(normals),
        uvs: None,
    }
}

/// A horizontal square of cloth, `size_m` (m) on a side, centred on `x = z = 0` at `y = height_m`.
///
/// It has `n × n` vertices (`n` at least 2), row-major with X varying fastest: vertex
/// `j · n + i` is at `x = −size/2 + size · i/(n − 1)`, `z = −size/2 + size · j/(n − 1)`, with UV
/// `(i/(n − 1), j/(n − 1))` in `[0, 1]²`. Each quad has two triangles facing +Y (normal `+Y`,
/// counter-clockwise seen from above); the quad at `(i, j)` is split along the diagonal from
/// `(i, j)` to `(i + 1, j + 1)` when `i + j` is even and along the other diagonal when it is odd,
/// a checkerboard with no preferred shear direction. The mesh is named `"cloth"`.
pub fn grid_cloth(size_m: Real, n: u32, height_m: Real) -> Mesh {
    let n = n.max(2);
    let step = 1.0 / (n - 1) as Real;
    let mut positions = Vec::with_capacity((n * n) as usize);
    let mut uvs = Vec::with_capacity((n * n) as usize);
    for j in 0..n {
        for i in 0..n {
            let uv = Vec2::new(i as Real * step, j as Real * step);
            positions.push(Vec3::new(
                (uv.x - 0.5) * size_m,
                height_m,
                (uv.y - 0.5) * size_m,
            ));
            uvs.push(uv);
        }
    }
    let id = |i: u32, j: u32| j * n + i;
    let mut indices = Vec::with_capacity((2 * (n - 1) * (n - 1)) as usize);
    for j in 0..n - 1 {
        for i in 0..n - 1 {
            let (a, b, c, d) = (id(i, j), id(i + 1, j), id(i, j + 1), id(i + 1, j + 1));
            if (i + j) % 2 == 0 {
                indices.push([a, c, d]);
                indices.push([a, d, b]);
            } else {
                indices.push([a, c, b]);
                indices.push([b, c, d]);
            }
        }
    }
    Mesh {
        name: "cloth".into(),
        normals: Some(vec![Vec3::Y; positions.len()]),
        positions,
        indices,
        uvs: Some(uvs),
    }
}

// ---------------------------------------------------------------------------------------------
// Signed distance primitives
// ---------------------------------------------------------------------------------------------

/// Polynomial smooth minimum of two distances with blend width `k` (m); see the module docs.
#[inline]
fn smin(d1: Real, d2: Real, k: Real) -> Real {
    let h = (k - (d1 - d2).abs()).max(0.0) / k;
    d1.min(d2) - h * h * k * 0.25
}

/// Exact distance to a round cone: the convex hull of spheres of radii `r1` at `a` and `r2` at `b`.
///
/// After Inigo Quilez, "distance functions" (iquilezles.org/articles/distfunctions).
fn round_cone(p: Vec3, a: Vec3, b: Vec3, r1: Real, r2: Real) -> Real {
    let ba = b - a;
    let l2 = ba.dot(ba);
    let rr = r1 - r2;
    let a2 = l2 - rr * rr;
    let il2 = 1.0 / l2;
    let pa = p - a;
    let y = pa.dot(ba);
    let z = y - l2;
    let x2 = (pa * l2 - ba * y).length_squared();
    let y2 = y * y * l2;
    let z2 = z * z * l2;
    let k = rr.signum() * rr * rr * x2;
    if z.signum() * a2 * z2 > k {
        return (x2 + z2).sqrt() * il2 - r2;
    }
    if y.signum() * a2 * y2 < k {
        return (x2 + y2).sqrt() * il2 - r1;
    }
    ((x2 * a2 * il2).sqrt() + y * rr) * il2 - r1
}

/// Approximate distance to an axis-aligned ellipsoid with half-axes `r` (module docs).
fn ellipsoid(q: Vec3, r: Vec3) -> Real {
    let k0 = (q / r).length();
    let k1 = (q / (r * r)).length();
    if k1 < 1.0e-9 {
        return -r.min_element();
    }
    k0 * (k0 - 1.0) / k1
}

/// Approximate distance to an ellipse with half-axes `r` (module docs).
fn ellipse(q: Vec2, r: Vec2) -> Real {
    let k0 = (q / r).length();
    let k1 = (q / (r * r)).length();
    if k1 < 1.0e-9 {
        return -r.min_element();
    }
    k0 * (k0 - 1.0) / k1
}

// ---------------------------------------------------------------------------------------------
// Mannequin
// ---------------------------------------------------------------------------------------------

/// Height of the top of the mannequin's head above the floor (m).
pub const MANNEQUIN_HEIGHT_M: Real = 1.697;
/// Height of the mannequin's waist, its narrowest torso section (m).
pub const MANNEQUIN_WAIST_HEIGHT_M: Real = 1.05;
/// Half-width of the waist section along X (m).
pub const MANNEQUIN_WAIST_RADIUS_X_M: Real = 0.13;
/// Half-depth of the waist section along Z (m).
pub const MANNEQUIN_WAIST_RADIUS_Z_M: Real = 0.095;
/// Z of the waist section's centre (m); its X is 0.
pub const MANNEQUIN_WAIST_CENTRE_Z_M: Real = 0.0;
/// Height of the hips' widest section (m).
pub const MANNEQUIN_HIP_HEIGHT_M: Real = 0.92;
/// Height of the knee joints (m).
pub const MANNEQUIN_KNEE_HEIGHT_M: Real = 0.48;
/// Angle of the arms from the vertical, in the frontal plane (degrees).
pub const MANNEQUIN_ARM_ANGLE_DEG: Real = 25.0;
/// `sin` and `cos` of [`MANNEQUIN_ARM_ANGLE_DEG`], spelled out so the field does not recompute them.
const ARM_SIN: Real = 0.422_618_26;
/// See [`ARM_SIN`].
const ARM_COS: Real = 0.906_307_8;
/// Grid cell used by [`mannequin`] (m).
pub const MANNEQUIN_CELL_M: Real = 0.02;

/// Torso loft keys: height `y`, half-width `a` (X), half-depth `b` (Z), centre `c` (Z), all m.
const TORSO_KEYS: [[Real; 4]; 13] = [
    [0.80, 0.140, 0.090, -0.010],
    [0.86, 0.170, 0.115, -0.012],
    [0.92, 0.178, 0.122, -0.014],
    [0.98, 0.160, 0.110, -0.008],
    [MANNEQUIN_WAIST_HEIGHT_M, 0.130, 0.095, 0.0],
    [1.12, 0.132, 0.097, 0.0],
    [1.20, 0.145, 0.105, 0.005],
    [1.28, 0.155, 0.112, 0.010],
    [1.34, 0.160, 0.108, 0.004],
    [1.40, 0.155, 0.098, -0.006],
    [1.43, 0.120, 0.080, -0.012],
    [1.455, 0.085, 0.065, -0.014],
    [1.47, 0.065, 0.055, -0.015],
];

/// The torso section at height `y` (clamped to the key range): `[a, b, c]` and their slope
/// `max(|a′|, |b′|, |c′|)`, by cubic Hermite interpolation with finite-difference tangents.
fn torso_section(y: Real) -> ([Real; 3], Real) {
    let keys = &TORSO_KEYS;
    let last = keys.len() - 1;
    let y = y.clamp(keys[0][0], keys[last][0]);
    let i = keys
        .iter()
        .position(|k| k[0] > y)
        .map_or(last - 1, |i| i.saturating_sub(1));
    let (k0, k1) = (keys[i], keys[i + 1]);
    let h = k1[0] - k0[0];
    let t = (y - k0[0]) / h;
    let tangent = |j: usize, c: usize| {
        let (lo, hi) = (j.saturating_sub(1), (j + 1).min(last));
        (keys[hi][c] - keys[lo][c]) / (keys[hi][0] - keys[lo][0])
    };
    let (t2, t3) = (t * t, t * t * t);
    let (h00, h10, h01, h11) = (
        2.0 * t3 - 3.0 * t2 + 1.0,
        t3 - 2.0 * t2 + t,
        -2.0 * t3 + 3.0 * t2,
        t3 - t2,
    );
    let (d00, d10, d01, d11) = (
        (6.0 * t2 - 6.0 * t) / h,
        (3.0 * t2 - 4.0 * t + 1.0) / h,
        (-6.0 * t2 + 6.0 * t) / h,
        (3.0 * t2 - 2.0 * t) / h,
    );
    let mut out = [0.0; 3];
    let mut slope: Real = 0.0;
    for c in 1..4 {
        let (m0, m1) = (tangent(i, c) * h, tangent(i + 1, c) * h);
        out[c - 1] = h00 * k0[c] + h10 * m0 + h01 * k1[c] + h11 * m1;
        slope = slope.max((d00 * k0[c] + d10 * m0 + d01 * k1[c] + d11 * m1).abs());
    }
    (out, slope)
}

/// Signed distance to the torso loft, capped flat at the lowest and highest key.
fn torso(p: Vec3) -> Real {
    let ([a, b, c], slope) = torso_section(p.y);
    let horizontal =
        ellipse(Vec2::new(p.x, p.z - c), Vec2::new(a, b)) / (1.0 + slope * slope).sqrt();
    let (y0, y1) = (TORSO_KEYS[0][0], TORSO_KEYS[TORSO_KEYS.len() - 1][0]);
    let vertical = (p.y - 0.5 * (y0 + y1)).abs() - 0.5 * (y1 - y0);
    let w = Vec2::new(horizontal, vertical);
    w.max_element().min(0.0) + w.max(Vec2::ZERO).length()
}

/// The centre of the mannequin's shoulder joint on `side` (+1 its left, at +X; −1 its right) (m).
pub const fn mannequin_shoulder(side: Real) -> Vec3 {
    Vec3::new(side * 0.185, 1.38, -0.01)
}

/// The centre of the mannequin's hip joint on `side` (m): the top of the thigh.
pub const fn mannequin_hip(side: Real) -> Vec3 {
    Vec3::new(side * 0.092, 0.86, -0.01)
}

/// The centre of the mannequin's knee joint on `side` (m).
pub const fn mannequin_knee(side: Real) -> Vec3 {
    Vec3::new(side * 0.112, MANNEQUIN_KNEE_HEIGHT_M, 0.0)
}

/// Signed distance to one arm (`side` = ±1): deltoid, upper arm, forearm and hand.
fn arm(p: Vec3, side: Real) -> Real {
    let dir = Vec3::new(side * ARM_SIN, -ARM_COS, 0.0);
    let shoulder = mannequin_shoulder(side);
    let elbow = shoulder + dir * 0.28;
    let wrist = elbow + dir * 0.25;
    let hand = wrist + dir * 0.085;
    let deltoid = (p - shoulder - Vec3::new(side * 0.005, 0.0, 0.0)).length() - 0.05;
    let upper = round_cone(p, shoulder, elbow, 0.046, 0.036);
    let fore = round_cone(p, elbow, wrist, 0.036, 0.026);
    // The hand's frame: along the arm, across the palm (normal to the frontal plane is Z).
    let across = dir.cross(Vec3::Z);
    let q = p - hand;
    let palm = ellipsoid(
        Vec3::new(q.dot(dir), q.dot(across), q.z),
        Vec3::new(0.09, 0.022, 0.045),
    );
    let d = smin(deltoid, upper, 0.03);
    let d = smin(d, fore, 0.02);
    smin(d, palm, 0.02)
}

/// The signed distances to one leg's parts (`side` = ±1): the thigh, then the shin, calf and
/// foot below the knee.
fn leg_parts(p: Vec3, side: Real) -> (Real, [Real; 3]) {
    let (hip, knee) = (mannequin_hip(side), mannequin_knee(side));
    let ankle = Vec3::new(side * 0.13, 0.085, -0.015);
    let thigh = round_cone(p, hip, knee, 0.085, 0.053);
    let shin = round_cone(p, knee, ankle, 0.05, 0.035);
    let calf = ellipsoid(
        p - Vec3::new(side * 0.118, 0.34, -0.022),
        Vec3::new(0.046, 0.09, 0.048),
    );
    let foot = ellipsoid(
        p - Vec3::new(side * 0.135, 0.04, 0.045),
        Vec3::new(0.045, 0.04, 0.115),
    );
    (thigh, [shin, calf, foot])
}

/// Signed distance to one leg (`side` = ±1): thigh, shin, calf and foot.
fn leg(p: Vec3, side: Real) -> Real {
    let (thigh, [shin, calf, foot]) = leg_parts(p, side);
    let d = smin(thigh, shin, 0.03);
    let d = smin(d, calf, 0.03);
    smin(d, foot, 0.03)
}

/// Signed distance to the neck.
fn neck(p: Vec3) -> Real {
    round_cone(
        p,
        Vec3::new(0.0, 1.42, -0.015),
        Vec3::new(0.0, 1.56, 0.0),
        0.056,
        0.054,
    )
}

/// Signed distance to the head (without the nose).
fn head(p: Vec3) -> Real {
    ellipsoid(
        p - Vec3::new(0.0, 1.585, 0.015),
        Vec3::new(0.078, 0.112, 0.098),
    )
}

/// The mannequin's parts for skinning ([`crate::scene::walk`]): the distances (m) from `p` to the
/// parts that move together, in the order of [`MannequinPart`]. Each leg is split at the knee
/// (thigh; shin, calf and foot) and each arm is one part; the torso part holds the neck and the
/// head. Like [`mannequin_sdf`], only the limbs of `p`'s own side are measured: the other
/// side's are given as infinitely far.
pub fn mannequin_part_distances(p: Vec3) -> [Real; MANNEQUIN_PARTS] {
    let trunk = torso(p).min(neck(p)).min(head(p));
    let side: Real = if p.x < 0.0 { -1.0 } else { 1.0 };
    let (thigh, [shin, calf, foot]) = leg_parts(p, side);
    let shin = shin.min(calf).min(foot);
    let arm = arm(p, side);
    let far = Real::INFINITY;
    let (thigh_l, shin_l, arm_l, thigh_r, shin_r, arm_r) = if side > 0.0 {
        (thigh, shin, arm, far, far, far)
    } else {
        (far, far, far, thigh, shin, arm)
    };
    [trunk, thigh_l, shin_l, thigh_r, shin_r, arm_l, arm_r]
}

/// How many parts [`mannequin_part_distances`] measures.
pub const MANNEQUIN_PARTS: usize = 7;

/// The mannequin's parts, in the order of [`mannequin_part_distances`]. Its left is +X (it
/// faces +Z).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MannequinPart {
    /// Torso, neck and head.
    Trunk,
    /// Left thigh.
    ThighLeft,
    /// Left shin, calf and foot.
    ShinLeft,
    /// Right thigh.
    ThighRight,
    /// Right shin, calf and foot.
    ShinRight,
    /// Left arm and hand.
    ArmLeft,
    /// Right arm and hand.
    ArmRight,
}

/// Signed distance (m) from `p` (m) to the mannequin's surface: negative inside.
///
/// The mannequin is about [`MANNEQUIN_HEIGHT_M`] tall, stands on `y = 0` facing +Z with its legs
/// slightly apart and its arms [`MANNEQUIN_ARM_ANGLE_DEG`] from the vertical. The value is exact
/// on the surface and a close estimate near it (see the module docs); far from the body it is
/// only an estimate, but its sign is always right.
pub fn mannequin_sdf(p: Vec3) -> Real {
    let mut d = torso(p);
    d = smin(d, neck(p), 0.04);
    d = smin(d, head(p), 0.03);
    let nose = ellipsoid(
        p - Vec3::new(0.0, 1.575, 0.108),
        Vec3::new(0.016, 0.028, 0.024),
    );
    d = smin(d, nose, 0.01);
    // Each side only matters on its own half; evaluating one side per half keeps the field cheap
    // and is exact because the limbs do not cross the mid-plane.
    let side: Real = if p.x < 0.0 { -1.0 } else { 1.0 };
    d = smin(d, arm(p, side), 0.04);
    d = smin(d, leg(p, side), 0.05);
    d
}

/// The standard mannequin: [`mannequin_sdf`] polygonised on a [`MANNEQUIN_CELL_M`] grid.
///
/// The mesh, named `"mannequin"`, is closed and manifold with outward triangles (positive signed
/// volume), no self-intersections and area-weighted normals: 17 790 vertices and 35 576
/// triangles.
pub fn mannequin() -> Mesh {
    mannequin_with_cell(MANNEQUIN_CELL_M)
}

/// The mannequin polygonised on a grid of `cell_m` (m) cells: smaller cells, more triangles.
///
/// The triangle count goes as `1/cell²` (about 64 000 at 1.5 cm, 23 000 at 2.5 cm). The mesh is
/// always closed and manifold, but from about 3 cm up the relaxation can make the hands
/// self-intersect, and the wrists and neck lose their shape.
/// A non-positive or non-finite `cell_m` falls back to [`MANNEQUIN_CELL_M`].
pub fn mannequin_with_cell(cell_m: Real) -> Mesh {
    let min = Vec3::new(-0.58, -0.04, -0.20);
    let max = Vec3::new(0.58, 1.75, 0.24);
    let cell = if cell_m.is_finite() && cell_m > 0.0 {
        cell_m
    } else {
        MANNEQUIN_CELL_M
    };
    let mut mesh = marching_tetrahedra(mannequin_sdf, min, max, cell);
    relax_onto_level_set(&mut mesh, mannequin_sdf, 3, 1.0e-4);
    mesh.name = "mannequin".into();
    mesh.compute_normals();
    mesh
}

// ---------------------------------------------------------------------------------------------
// Marching tetrahedra
// ---------------------------------------------------------------------------------------------

/// Smallest edge parameter of a surface vertex: keeps vertices off the grid corners, so that no
/// triangle degenerates (dimensionless).
const T_MIN: Real = 0.02;

/// Largest number of grid points along one axis; a finer request is coarsened to this.
const MAX_GRID_POINTS_PER_AXIS: usize = 512;

/// Cube corners are numbered by bits: 1 = +X, 2 = +Y, 4 = +Z.
const CORNER_OFFSETS: [[usize; 3]; 8] = [
    [0, 0, 0],
    [1, 0, 0],
    [0, 1, 0],
    [1, 1, 0],
    [0, 0, 1],
    [1, 0, 1],
    [0, 1, 1],
    [1, 1, 1],
];

/// The six Kuhn tetrahedra of a cube (paths from corner 0 to corner 7), each listed in positive
/// orientation: `det(v1 − v0, v2 − v0, v3 − v0) > 0`.
const KUHN_TETS: [[usize; 4]; 6] = [
    [0, 1, 3, 7],
    [0, 1, 7, 5],
    [0, 2, 7, 3],
    [0, 2, 6, 7],
    [0, 4, 5, 7],
    [0, 4, 7, 6],
];

/// For a lone corner `l` (alone on its side), an even permutation of `0..4` that starts with `l`.
const LONE_FIRST: [[usize; 4]; 4] = [[0, 1, 2, 3], [1, 0, 3, 2], [2, 3, 0, 1], [3, 2, 1, 0]];

/// For a pair of corners on the inside, an even permutation of `0..4` that starts with the pair.
const PAIR_FIRST: [([usize; 2], [usize; 4]); 6] = [
    ([0, 1], [0, 1, 2, 3]),
    ([2, 3], [2, 3, 0, 1]),
    ([0, 2], [0, 2, 3, 1]),
    ([0, 3], [0, 3, 1, 2]),
    ([1, 2], [1, 2, 0, 3]),
    ([1, 3], [1, 3, 2, 0]),
];

/// Output of the polygoniser, with the edge-keyed vertex cache.
struct Polygoniser {
    positions: Vec<Vec3>,
    indices: Vec<[u32; 3]>,
    cache: HashMap<u64, u32>,
}

/// One corner of a tetrahedron: grid point id, position (m) and field value (m).
#[derive(Clone, Copy)]
struct Corner {
    id: u32,
    p: Vec3,
    v: Real,
}

impl Polygoniser {
    /// The vertex where the surface crosses the grid edge `a`–`b` (created once per edge).
    fn edge_vertex(&mut self, a: Corner, b: Corner) -> u32 {
        let (a, b) = if a.id < b.id { (a, b) } else { (b, a) };
        let key = ((a.id as u64) << 32) | b.id as u64;
        if let Some(&v) = self.cache.get(&key) {
            return v;
        }
        // a and b have opposite signs, so the denominator is never zero.
        let t = (a.v / (a.v - b.v)).clamp(T_MIN, 1.0 - T_MIN);
        let v = self.positions.len() as u32;
        self.positions.push(a.p + (b.p - a.p) * t);
        self.cache.insert(key, v);
        v
    }

    /// Emits the surface inside one positively oriented tetrahedron, facing from inside (< 0)
    /// to outside (≥ 0).
    fn tetrahedron(&mut self, c: [Corner; 4]) {
        let inside = c.map(|c| c.v < 0.0);
        let count = inside.iter().filter(|&&i| i).count();
        match count {
            1 | 3 => {
                // The lone corner is the inside one (count 1) or the outside one (count 3).
                let lone = inside.iter().position(|&i| i == (count == 1)).unwrap_or(0);
                let [l, x, y, z] = LONE_FIRST[lone];
                let a = self.edge_vertex(c[l], c[x]);
                let b = self.edge_vertex(c[l], c[y]);
                let d = self.edge_vertex(c[l], c[z]);
                // In a positive tetrahedron (l, x, y, z) the triangle (x, y, z) faces away from l.
                if count == 1 {
                    self.indices.push([a, b, d]);
                } else {
                    self.indices.push([a, d, b]);
                }
            }
            2 => {
                let mut pair = [0; 2];
                let mut n = 0;
                for (k, &i) in inside.iter().enumerate() {
                    if i && n < 2 {
                        pair[n] = k;
                        n += 1;
                    }
                }
                let Some(&(_, [p, q, r, s])) = PAIR_FIRST.iter().find(|(pr, _)| *pr == pair) else {
                    return;
                };
                // The quad (pr, ps, qs, qr) faces outward for inside corners p, q.
                let a = self.edge_vertex(c[p], c[r]);
                let b = self.edge_vertex(c[p], c[s]);
                let d = self.edge_vertex(c[q], c[s]);
                let e = self.edge_vertex(c[q], c[r]);
                let pos = |i: u32| self.positions[i as usize];
                if pos(a).distance_squared(pos(d)) <= pos(b).distance_squared(pos(e)) {
                    self.indices.push([a, b, d]);
                    self.indices.push([a, d, e]);
                } else {
                    self.indices.push([a, b, e]);
                    self.indices.push([b, d, e]);
                }
            }
            _ => {}
        }
    }
}

/// Polygonises the zero level set of `sdf` (negative inside) over the box `min`–`max` (m) by
/// marching tetrahedra on a grid of cubes with side `cell_m` (m); see the module docs.
///
/// The result is closed, manifold, free of zero-area triangles and oriented outward (towards
/// positive values), whatever the field: values on the box's boundary are treated as outside,
/// and non-finite values as far outside. The grid is coarsened if it would exceed
/// 512 points along an axis. The mesh is named `"isosurface"` and has no normals or UVs.
pub fn marching_tetrahedra(sdf: impl Fn(Vec3) -> Real, min: Vec3, max: Vec3, cell_m: Real) -> Mesh {
    let extent = (max - min).max(Vec3::ZERO);
    let longest = extent.max_element();
    let mut cell = if cell_m.is_finite() && cell_m > 0.0 {
        cell_m
    } else {
        longest.max(1.0e-3)
    };
    cell = cell.max(longest / (MAX_GRID_POINTS_PER_AXIS - 1) as Real);
    if !(cell.is_finite() && cell > 0.0) {
        return Mesh::new("isosurface", Vec::new(), Vec::new());
    }
    let dims = [extent.x, extent.y, extent.z]
        .map(|e| ((e / cell).ceil() as usize + 1).clamp(2, MAX_GRID_POINTS_PER_AXIS));
    let [nx, ny, nz] = dims;
    let point =
        |i: usize, j: usize, k: usize| min + Vec3::new(i as Real, j as Real, k as Real) * cell;
    let id = |i: usize, j: usize, k: usize| i + nx * (j + ny * k);

    let mut values = vec![0.0; nx * ny * nz];
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                let mut v = sdf(point(i, j, k));
                if !v.is_finite() {
                    v = 1.0e6;
                }
                let boundary =
                    i == 0 || j == 0 || k == 0 || i == nx - 1 || j == ny - 1 || k == nz - 1;
                if boundary {
                    v = v.max(0.5 * cell);
                }
                values[id(i, j, k)] = v;
            }
        }
    }

    let mut out = Polygoniser {
        positions: Vec::new(),
        indices: Vec::new(),
        cache: HashMap::new(),
    };
    for k in 0..nz - 1 {
        for j in 0..ny - 1 {
            for i in 0..nx - 1 {
                let corners = CORNER_OFFSETS.map(|[dx, dy, dz]| {
                    let (a, b, c) = (i + dx, j + dy, k + dz);
                    let g = id(a, b, c);
                    Corner {
                        id: g as u32,
                        p: point(a, b, c),
                        v: values[g],
                    }
                });
                let negative = corners.iter().filter(|c| c.v < 0.0).count();
                if negative == 0 || negative == 8 {
                    continue;
                }
                for tet in KUHN_TETS {
                    out.tetrahedron(tet.map(|t| corners[t]));
                }
            }
        }
    }
    Mesh::new("isosurface", out.positions, out.indices)
}

/// Evens out the triangles of a mesh lying on the zero level set of `sdf`: `iterations` rounds
/// of moving each vertex halfway to its neighbours' mean followed by a Newton step back onto the
/// level set, then one last Newton step. See the module docs; `h_m` (m) is the finite-difference
/// step of the gradient.
fn relax_onto_level_set(mesh: &mut Mesh, sdf: impl Fn(Vec3) -> Real, iterations: usize, h_m: Real) {
    let n = mesh.positions.len();
    let mut neighbours: Vec<Vec<u32>> = vec![Vec::new(); n];
    for tri in &mesh.indices {
        for k in 0..3 {
            let (a, b) = (tri[k], tri[(k + 1) % 3]);
            neighbours[a as usize].push(b);
            neighbours[b as usize].push(a);
        }
    }
    for list in &mut neighbours {
        list.sort_unstable();
        list.dedup();
    }
    // One Newton step with a tetrahedral stencil: the four samples give the gradient and, as
    // their mean, the value at `p` (both to second order in `h_m`).
    const STENCIL: [Vec3; 4] = [
        Vec3::new(1.0, -1.0, -1.0),
        Vec3::new(-1.0, -1.0, 1.0),
        Vec3::new(-1.0, 1.0, -1.0),
        Vec3::new(1.0, 1.0, 1.0),
    ];
    let newton = |p: Vec3| {
        let f = STENCIL.map(|k| sdf(p + k * h_m));
        let value = 0.25 * (f[0] + f[1] + f[2] + f[3]);
        let g = (STENCIL[0] * f[0] + STENCIL[1] * f[1] + STENCIL[2] * f[2] + STENCIL[3] * f[3])
            / (4.0 * h_m);
        let g2 = g.length_squared();
        if g2 < 1.0e-8 {
            p
        } else {
            p - g * (value / g2)
        }
    };
    let mut next = mesh.positions.clone();
    for _ in 0..iterations {
        for (v, list) in neighbours.iter().enumerate() {
            let p = mesh.positions[v];
            if list.is_empty() {
                next[v] = p;
                continue;
            }
            let mean = list
                .iter()
                .map(|&u| mesh.positions[u as usize])
                .fold(Vec3::ZERO, |s, q| s + q)
                / list.len() as Real;
            next[v] = newton(p + (mean - p) * 0.5);
        }
        std::mem::swap(&mut mesh.positions, &mut next);
    }
    for p in &mut mesh.positions {
        *p = newton(*p);
    }
}

// ---------------------------------------------------------------------------------------------
// Skirt
// ---------------------------------------------------------------------------------------------

/// Set-up of [`skirt`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SkirtParams {
    /// Number of vertex rings from the waistband to the hem (at least 2).
    pub rings: u32,
    /// Number of vertices around each ring (at least 3).
    pub segments: u32,
    /// Vertical distance from the waistband to the hem (m).
    pub length_m: Real,
    /// Angle of the skirt's flank from the vertical below the hips (degrees).
    pub flare_deg: Real,
    /// Smallest distance from any skirt vertex to the mannequin's surface (m).
    pub clearance_m: Real,
}

impl Default for SkirtParams {
    /// 24 rings × 64 segments, from the waist to the knee (0.55 m), flared 15°, 1.5 cm clear.
    fn default() -> Self {
        Self {
            rings: 24,
            segments: 64,
            length_m: MANNEQUIN_WAIST_HEIGHT_M - MANNEQUIN_KNEE_HEIGHT_M - 0.02,
            flare_deg: 15.0,
            clearance_m: 0.015,
        }
    }
}

/// A flared skirt around the [`mannequin`]'s waist, clear of the body by `clearance_m`.
///
/// Ring `i` (0 at the waistband, at [`MANNEQUIN_WAIST_HEIGHT_M`]) lies at
/// `y = waist − length · i/(rings − 1)`; vertex `j` of a ring is at parametric angle
/// `φ = −π/2 + 2π j/segments` on the waist ellipse grown by the ring's offset (module docs), so
/// `j = 0` is the centre back. Vertex `i · segments + j` is that vertex: the waistband is vertices
/// `0..segments`, all listed in `pinned`. The seam column is shared, not duplicated, so the skirt
/// is one piece with two boundary loops (waistband and hem); its UVs are `(j/segments,
/// i/(rings − 1))`, and the triangles of the last column wrap from `u = (segments − 1)/segments`
/// back to `u = 0`. Triangles face outward; normals are area-weighted. The mesh is named
/// `"skirt"`.
pub fn skirt(params: &SkirtParams) -> Garment {
    let waist = Waist {
        height_m: MANNEQUIN_WAIST_HEIGHT_M,
        centre_x_m: 0.0,
        centre_z_m: MANNEQUIN_WAIST_CENTRE_Z_M,
        radius_x_m: MANNEQUIN_WAIST_RADIUS_X_M,
        radius_z_m: MANNEQUIN_WAIST_RADIUS_Z_M,
    };
    skirt_around(params, &waist, &mannequin_sdf)
}

/// A horizontal waist ellipse (m): where a skirt's waistband starts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Waist {
    /// Height of the waistband (m).
    pub height_m: Real,
    /// Centre, x (m).
    pub centre_x_m: Real,
    /// Centre, z (m).
    pub centre_z_m: Real,
    /// Semi-axis along x (m).
    pub radius_x_m: Real,
    /// Semi-axis along z (m).
    pub radius_z_m: Real,
}

/// A flared skirt hanging from `waist`, every ring grown until it clears the body by
/// `params.clearance_m`, where `sdf` is the body's signed distance (m, negative inside).
/// See [`skirt`] for the layout; the mesh is named `"skirt"`.
pub fn skirt_around(params: &SkirtParams, waist: &Waist, sdf: &dyn Fn(Vec3) -> Real) -> Garment {
    let rings = params.rings.max(2);
    let segments = params.segments.max(3);
    let slope = params.flare_deg.clamp(0.0, 80.0).to_radians().tan();
    let dy = params.length_m.max(0.0) / (rings - 1) as Real;
    let clearance = params.clearance_m.max(0.0);
    let directions: Vec<(Real, Real)> = (0..segments)
        .map(|j| (-0.5 * PI + TAU * j as Real / segments as Real).sin_cos())
        .map(|(s, c)| (c, s))
        .collect();
    let ring_at = |y: Real, offset: Real| {
        directions.iter().map(move |&(c, s)| {
            Vec3::new(
                waist.centre_x_m + (waist.radius_x_m + offset) * c,
                y,
                waist.centre_z_m + (waist.radius_z_m + offset) * s,
            )
        })
    };

    let mut positions = Vec::with_capacity((rings * segments) as usize);
    let mut uvs = Vec::with_capacity((rings * segments) as usize);
    let mut offset: Real = 0.0;
    for i in 0..rings {
        let y = waist.height_m - dy * i as Real;
        if i > 0 {
            offset += slope * dy;
        }
        // Grow in millimetre steps until the whole ring clears the body (at most a metre).
        for _ in 0..1000 {
            if ring_at(y, offset).all(|p| sdf(p) >= clearance) {
                break;
            }
            offset += 0.001;
        }
        positions.extend(ring_at(y, offset));
        let v = i as Real / (rings - 1) as Real;
        uvs.extend((0..segments).map(|j| Vec2::new(j as Real / segments as Real, v)));
    }

    let id = |i: u32, j: u32| i * segments + j % segments;
    let mut indices = Vec::with_capacity((2 * segments * (rings - 1)) as usize);
    for i in 0..rings - 1 {
        for j in 0..segments {
            let (a, b) = (id(i, j), id(i, j + 1));
            let (c, d) = (id(i + 1, j), id(i + 1, j + 1));
            indices.push([a, b, c]);
            indices.push([b, d, c]);
        }
    }
    let mut mesh = Mesh::new("skirt", positions, indices);
    mesh.uvs = Some(uvs);
    mesh.compute_normals();
    Garment {
        mesh,
        pinned: (0..segments).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{bounds, triangle_area};
    use crate::mesh::{QualityReport, Topology};
    use approx::assert_relative_eq;
    use std::collections::HashMap;

    #[test]
    fn kuhn_tetrahedra_are_positive_and_fill_the_cube() {
        let mut volume = 0.0;
        for tet in KUHN_TETS {
            let [a, b, c, d] = tet.map(|t| {
                let [x, y, z] = CORNER_OFFSETS[t];
                Vec3::new(x as Real, y as Real, z as Real)
            });
            let det = (b - a).dot((c - a).cross(d - a));
            assert!(det > 0.0, "{tet:?}");
            volume += det / 6.0;
        }
        assert_relative_eq!(volume, 1.0, epsilon = 1e-6);
    }

    #[test]
    fn uv_sphere_is_closed_with_expected_counts() {
        let m = uv_sphere(0.3, 64, 32);
        assert_eq!(m.positions.len(), 2 + 31 * 64);
        assert_eq!(m.indices.len(), 2 * 64 * 31);
        m.validate().unwrap();
        assert!(Topology::new(&m).is_closed());
        for p in &m.positions {
            assert_relative_eq!(p.length(), 0.3, epsilon = 1e-5);
        }
        for (p, n) in m.positions.iter().zip(m.normals.as_ref().unwrap()) {
            assert_relative_eq!(p.dot(*n), 0.3, epsilon = 1e-5);
        }
        // Outward: positive volume just under the sphere's 4/3 π r³.
        let exact = 4.0 / 3.0 * PI * 0.3f32.powi(3);
        let v = m.signed_volume();
        assert!(v > 0.98 * exact && v < exact, "{v} vs {exact}");
        for t in &m.indices {
            let [a, b, c] = t.map(|i| m.positions[i as usize]);
            assert!((b - a).cross(c - a).dot(a + b + c) > 0.0);
        }
    }

    #[test]
    fn grid_cloth_counts_area_and_facing() {
        let m = grid_cloth(2.0, 41, 1.5);
        assert_eq!(m.name, "cloth");
        assert_eq!(m.positions.len(), 41 * 41);
        assert_eq!(m.indices.len(), 2 * 40 * 40);
        m.validate().unwrap();
        assert_relative_eq!(m.area(), 4.0, epsilon = 1e-4);
        for t in &m.indices {
            let [a, b, c] = t.map(|i| m.positions[i as usize]);
            assert!((b - a).cross(c - a).y > 0.0);
        }
        let (lo, hi) = bounds(&m.positions).unwrap();
        assert_relative_eq!(lo, Vec3::new(-1.0, 1.5, -1.0), epsilon = 1e-6);
        assert_relative_eq!(hi, Vec3::new(1.0, 1.5, 1.0), epsilon = 1e-6);
        let uvs = m.uvs.as_ref().unwrap();
        assert!(uvs
            .iter()
            .all(|uv| (0.0..=1.0).contains(&uv.x) && (0.0..=1.0).contains(&uv.y)));
        let topo = Topology::new(&m);
        assert_eq!(topo.boundary_edges.len(), 4 * 40);
        assert!(topo.non_manifold_edges.is_empty());
        // The checkerboard: neighbouring quads use different diagonals.
        assert_ne!(m.indices[0][2], m.indices[2][2]);
    }

    #[test]
    fn marching_tetrahedra_sphere_is_closed_and_outward() {
        let r = 0.25;
        let m = marching_tetrahedra(
            |p| p.length() - r,
            Vec3::splat(-0.3),
            Vec3::splat(0.3),
            0.03,
        );
        assert!(Topology::new(&m).is_closed());
        let exact = 4.0 / 3.0 * PI * r * r * r;
        assert_relative_eq!(m.signed_volume(), exact, max_relative = 0.05);
        assert_eq!(QualityReport::new(&m, 1e-7).zero_area_triangles, 0);
        // A field that touches the box still gives a closed surface.
        let m = marching_tetrahedra(|p| p.y, Vec3::splat(-1.0), Vec3::splat(1.0), 0.25);
        assert!(Topology::new(&m).is_closed());
        assert!(m.signed_volume() > 0.0);
    }

    #[test]
    fn mannequin_sdf_signs() {
        let inside = [
            Vec3::new(0.0, MANNEQUIN_WAIST_HEIGHT_M, 0.0),
            Vec3::new(0.0, 1.58, 0.0),
            Vec3::new(0.1, 0.7, 0.0),
            Vec3::new(-0.12, 0.3, 0.0),
            Vec3::new(0.13, 0.03, 0.1),
        ];
        for p in inside {
            assert!(mannequin_sdf(p) < 0.0, "{p}");
        }
        let outside = [
            Vec3::new(0.0, 0.5, 0.0),
            Vec3::new(0.0, 1.05, 0.2),
            Vec3::new(0.25, 1.1, 0.0),
            Vec3::new(0.0, 1.75, 0.0),
            Vec3::new(0.0, -0.01, 0.0),
        ];
        for p in outside {
            assert!(mannequin_sdf(p) > 0.0, "{p}");
        }
        // On the waist ellipse's axes the field is exact.
        let w = MANNEQUIN_WAIST_HEIGHT_M;
        let d = mannequin_sdf(Vec3::new(MANNEQUIN_WAIST_RADIUS_X_M + 0.05, w, 0.0));
        assert_relative_eq!(d, 0.05, epsilon = 2e-3);
    }

    #[test]
    fn mannequin_is_closed_outward_and_human_sized() {
        let m = mannequin();
        assert_eq!(m.name, "mannequin");
        m.validate().unwrap();
        let topo = Topology::new(&m);
        assert!(
            topo.boundary_edges.is_empty(),
            "{} boundary edges",
            topo.boundary_edges.len()
        );
        assert!(topo.non_manifold_edges.is_empty());
        assert!(topo.is_closed());
        let tris = m.indices.len();
        assert!((10_000..=40_000).contains(&tris), "{tris} triangles");

        let (lo, hi) = bounds(&m.positions).unwrap();
        let height = hi.y - lo.y;
        assert!((1.65..=1.75).contains(&height), "height {height}");
        assert!(lo.y.abs() < 0.005, "feet at {}", lo.y);
        assert!((0.8..=1.2).contains(&(hi.x - lo.x)), "span {lo} {hi}");
        assert!((0.25..=0.4).contains(&(hi.z - lo.z)), "depth {lo} {hi}");
        assert!(lo.x < -0.4 && hi.x > 0.4 && (lo.x + hi.x).abs() < 0.01);

        // Positive volume, about that of a 60–75 kg person (density ≈ 1000 kg/m³).
        let v = m.signed_volume();
        assert!((0.045..=0.08).contains(&v), "volume {v}");

        let q = QualityReport::new(&m, 1e-6);
        assert_eq!(q.zero_area_triangles, 0);
        assert_eq!(q.duplicate_vertices, 0);
        assert_eq!(q.unused_vertices, 0);
        assert!(q.min_triangle_area_m2 > 1e-9, "{}", q.min_triangle_area_m2);

        // Vertices lie on the level set and every triangle faces along the field's gradient.
        for p in &m.positions {
            assert!(mannequin_sdf(*p).abs() < 1e-3, "{p}: {}", mannequin_sdf(*p));
        }
        let h = 1e-3;
        for t in &m.indices {
            let [a, b, c] = t.map(|i| m.positions[i as usize]);
            let p = (a + b + c) / 3.0;
            let g = Vec3::new(
                mannequin_sdf(p + Vec3::X * h) - mannequin_sdf(p - Vec3::X * h),
                mannequin_sdf(p + Vec3::Y * h) - mannequin_sdf(p - Vec3::Y * h),
                mannequin_sdf(p + Vec3::Z * h) - mannequin_sdf(p - Vec3::Z * h),
            );
            let n = (b - a).cross(c - a);
            assert!(n.dot(g) > 0.0, "triangle {t:?} at {p} faces inward");
            assert!(triangle_area(a, b, c) > 0.0);
        }
    }

    /// Perimeter of the mesh's cross-section at height `y`, counting only |x| < `max_x`.
    fn section_perimeter(m: &Mesh, y: Real, max_x: Real) -> Real {
        let mut total = 0.0;
        for t in &m.indices {
            let p = t.map(|i| m.positions[i as usize]);
            let mut hits = Vec::new();
            for k in 0..3 {
                let (a, b) = (p[k], p[(k + 1) % 3]);
                if (a.y - y) * (b.y - y) < 0.0 {
                    hits.push(a + (b - a) * ((y - a.y) / (b.y - a.y)));
                }
            }
            if hits.len() == 2 && hits[0].x.abs() < max_x {
                total += hits[0].distance(hits[1]);
            }
        }
        total
    }

    #[test]
    fn mannequin_waist_matches_its_constants() {
        let m = mannequin();
        let waist = section_perimeter(&m, MANNEQUIN_WAIST_HEIGHT_M, 0.25);
        assert!((0.66..=0.75).contains(&waist), "waist {waist}");
        let hips = section_perimeter(&m, MANNEQUIN_HIP_HEIGHT_M, 0.3);
        assert!(hips > waist + 0.15, "hips {hips}, waist {waist}");
    }

    #[test]
    fn skirt_clears_the_body_and_pins_the_waistband() {
        let params = SkirtParams::default();
        let g = skirt(&params);
        let m = &g.mesh;
        assert_eq!(m.name, "skirt");
        m.validate().unwrap();
        assert_eq!(m.positions.len(), 24 * 64);
        assert_eq!(m.indices.len(), 2 * 23 * 64);
        assert_eq!(g.pinned.len(), 64);
        for &i in &g.pinned {
            let y = m.positions[i as usize].y;
            assert_relative_eq!(y, MANNEQUIN_WAIST_HEIGHT_M, epsilon = 1e-6);
        }
        for p in &m.positions {
            assert!(
                mannequin_sdf(*p) >= 0.01,
                "{p} is {} from the body",
                mannequin_sdf(*p)
            );
        }
        // The waistband hugs the waist: within 3 cm of the body.
        for &i in &g.pinned {
            assert!(mannequin_sdf(m.positions[i as usize]) < 0.03);
        }
        let topo = Topology::new(m);
        assert_eq!(topo.boundary_edges.len(), 2 * 64);
        assert!(topo.non_manifold_edges.is_empty());
        let (lo, _) = bounds(&m.positions).unwrap();
        assert!((0.45..=0.55).contains(&lo.y), "hem at {}", lo.y);
        // Outward triangles and normals.
        let axis = |p: Vec3| Vec3::new(p.x, 0.0, p.z - MANNEQUIN_WAIST_CENTRE_Z_M);
        for t in &m.indices {
            let [a, b, c] = t.map(|i| m.positions[i as usize]);
            assert!((b - a).cross(c - a).dot(axis(a + b + c)) > 0.0);
        }
        for (p, n) in m.positions.iter().zip(m.normals.as_ref().unwrap()) {
            assert!(n.dot(axis(*p)) > 0.0);
        }
        // Flared: the hem is wider than the hips.
        let hem_width = m.positions[(23 * 64 + 16) as usize].x;
        assert!(hem_width > 0.178 + 0.05, "hem half-width {hem_width}");
    }

    #[test]
    fn arm_angle_constants_match() {
        let (s, c) = MANNEQUIN_ARM_ANGLE_DEG.to_radians().sin_cos();
        assert_relative_eq!(ARM_SIN, s, epsilon = 1e-6);
        assert_relative_eq!(ARM_COS, c, epsilon = 1e-6);
    }

    /// Whether segment `p`–`q` crosses the interior of triangle `a b c` (strictly).
    fn segment_crosses_triangle(p: Vec3, q: Vec3, [a, b, c]: [Vec3; 3]) -> bool {
        let n = (b - a).cross(c - a);
        let (dp, dq) = ((p - a).dot(n), (q - a).dot(n));
        if dp * dq >= 0.0 {
            return false;
        }
        let x = p + (q - p) * (dp / (dp - dq));
        [(a, b), (b, c), (c, a)]
            .iter()
            .all(|&(u, v)| (v - u).cross(x - u).dot(n) > 0.0)
    }

    /// Number of pairs of triangles with no common vertex that intersect (brute force over a
    /// hash grid of triangle bounds).
    fn self_intersections(m: &Mesh) -> usize {
        let cell = 0.02;
        let mut grid: HashMap<[i32; 3], Vec<usize>> = HashMap::new();
        for (t, tri) in m.indices.iter().enumerate() {
            let (lo, hi) = bounds(&tri.map(|i| m.positions[i as usize])).unwrap();
            let (lo, hi) = ((lo / cell).floor(), (hi / cell).floor());
            for x in lo.x as i32..=hi.x as i32 {
                for y in lo.y as i32..=hi.y as i32 {
                    for z in lo.z as i32..=hi.z as i32 {
                        grid.entry([x, y, z]).or_default().push(t);
                    }
                }
            }
        }
        let mut pairs = std::collections::HashSet::new();
        for list in grid.values() {
            for (k, &s) in list.iter().enumerate() {
                for &t in &list[k + 1..] {
                    let (ts, tt) = (m.indices[s], m.indices[t]);
                    if ts.iter().any(|v| tt.contains(v)) {
                        continue;
                    }
                    let ps = ts.map(|i| m.positions[i as usize]);
                    let pt = tt.map(|i| m.positions[i as usize]);
                    let hit = (0..3).any(|e| {
                        segment_crosses_triangle(ps[e], ps[(e + 1) % 3], pt)
                            || segment_crosses_triangle(pt[e], pt[(e + 1) % 3], ps)
                    });
                    if hit {
                        pairs.insert((s.min(t), s.max(t)));
                    }
                }
            }
        }
        pairs.len()
    }

    #[test]
    fn mannequin_and_skirt_do_not_intersect() {
        let mut m = mannequin();
        assert_eq!(self_intersections(&m), 0);
        m.append(&skirt(&SkirtParams::default()).mesh);
        assert_eq!(self_intersections(&m), 0);
        // The checker does see an intersection: a sphere pushed through the body.
        let mut crossing = uv_sphere(0.05, 12, 6);
        for p in &mut crossing.positions {
            *p += Vec3::new(0.0, MANNEQUIN_WAIST_HEIGHT_M, MANNEQUIN_WAIST_RADIUS_Z_M);
        }
        m.append(&crossing);
        assert!(self_intersections(&m) > 0);
    }
}
