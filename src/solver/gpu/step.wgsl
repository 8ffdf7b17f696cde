// Drape's GPU substep (issue 37): the same XPBD as the CPU solver (src/constraints.rs), on
// coloured Gauss–Seidel batches. Within one colour no two constraints share a particle, so each
// thread reads and writes its constraint's particles with no atomics, and the result does not
// depend on the order the threads run in.
//
// Units: positions m, velocities m/s, inverse masses 1/kg, compliances as in constraints.rs
// (m/N for distances, 1/(N·m) for strains and angles), h s.

struct Particle {
    // Position (m) and inverse mass (1/kg; 0 for a pinned particle).
    x: vec3<f32>,
    w: f32,
    // Position at the start of the substep (m) and the damping rate (1/s).
    x_prev: vec3<f32>,
    damping: f32,
    // Velocity (m/s) and the friction coefficient against the body.
    v: vec3<f32>,
    friction: f32,
    // A pinned particle's target, its goal (m); `pinned` is 1 for a hard pin, else 0.
    goal: vec3<f32>,
    pinned: f32,
    // The body's outward normal at the substep's last contact (0: no contact this substep),
    // and the friction budget that contact leaves (m): how far the contacts pushed the
    // particle out along it this substep, less what the friction on the prediction used
    // (divided by μ).
    contact_normal: vec3<f32>,
    contact_push: f32,
}

struct Distance {
    a: u32,
    b: u32,
    rest: f32,
    compliance: f32,
}

// A triangle strain (shear, warp or weft): constraints.rs `Shear`.
struct Strain {
    i0: u32,
    i1: u32,
    i2: u32,
    // 0 shear (f_u·f_v), 1 warp (|f_u| − 1), 2 weft (|f_v| − 1).
    kind: u32,
    // D⁻¹, row-major [d00, d01, d10, d11] (1/m).
    d: vec4<f32>,
    compliance: f32,
    pad0: f32,
    pad1: f32,
    pad2: f32,
}

// A dihedral bend: constraints.rs `Bend` (shared edge p.x, p.y; opposite p.z, p.w).
struct Bend {
    p: vec4<u32>,
    rest: f32,
    compliance: f32,
    pad0: f32,
    pad1: f32,
}

struct Params {
    // Gravity (m/s²) and the substep (s).
    gravity: vec3<f32>,
    h: f32,
    // The body's signed-distance grid: origin (m) and cell size (m).
    sdf_origin: vec3<f32>,
    sdf_cell: f32,
    // Grid points per axis (0: no body) and the particle count.
    sdf_dims: vec3<u32>,
    particles: u32,
    // Collision thickness (m): how far outside the body the cloth is held.
    thickness: f32,
    // Over-relaxation of the stretch (the settings' `stretch_relaxation`, 1 = none).
    stretch_relaxation: f32,
    // Where the lines' particle list starts in `line_data` (after 4 words per line).
    line_vertices_at: u32,
    pad2: u32,
}

// One edge of a line in its tridiagonal system (constraints.rs, line_stretch.rs): the
// direction, the pivot, the right-hand side (then Δλ) and the coupling to the next edge.
struct LineSlot {
    n: vec3<f32>,
    diag: f32,
    rhs: f32,
    upper: f32,
    pad0: f32,
    pad1: f32,
}

// One dispatch's batch: the constraints `start .. start + count` of a list, and where their
// multipliers start in `lambda`.
struct Batch {
    start: u32,
    count: u32,
    lambda_base: u32,
    pad: u32,
}

@group(0) @binding(0) var<storage, read_write> particles: array<Particle>;
@group(0) @binding(1) var<storage, read> distances: array<Distance>;
@group(0) @binding(2) var<storage, read> strains: array<Strain>;
@group(0) @binding(3) var<storage, read> bends: array<Bend>;
@group(0) @binding(4) var<storage, read_write> lambda: array<f32>;
@group(0) @binding(5) var<storage, read> sdf: array<f32>;
@group(0) @binding(6) var<uniform> params: Params;
// Per line [first_vertex, first_edge, edges, cyclic], then the lines' particles.
@group(0) @binding(7) var<storage, read> line_data: array<u32>;
@group(0) @binding(8) var<storage, read_write> line_slots: array<LineSlot>;
@group(1) @binding(0) var<uniform> batch: Batch;

const WORKGROUP: u32 = 64u;
// constraints.rs and math.rs: the degenerate thresholds.
const DEGENERATE_LENGTH_SQ: f32 = 1.0e-20;
const DEGENERATE_AREA2_SQ: f32 = 1.0e-24;
const PI: f32 = 3.14159265358979;
const TAU: f32 = 6.28318530717959;
// A distance (m) no contact reaches.
const FAR: f32 = 1.0e9;

fn index(gid: vec3<u32>, nwg: vec3<u32>) -> u32 {
    return gid.x + gid.y * nwg.x * WORKGROUP;
}

// Stage 2, predict: x_prev = x; a free particle gets gravity and moves by h·v, a pinned one is
// put on its target.
@compute @workgroup_size(64)
fn predict(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if i >= params.particles {
        return;
    }
    var p = particles[i];
    p.x_prev = p.x;
    if p.pinned > 0.5 {
        p.x = p.goal;
    } else if p.w > 0.0 {
        p.v = p.v + params.gravity * params.h;
        var d = p.v * params.h;
        // Friction on the prediction (the CPU's `predicted_friction`): a particle that touched
        // the body in the previous substep and is predicted to move into it keeps its
        // tangential move within μ times the normal one, so resting cloth does not creep. What
        // it takes away is taken from the velocity stage's budget, so that the two together
        // stay within Coulomb's limit (docs/solver.md, "Friction on the prediction").
        var used = 0.0;
        if dot(p.contact_normal, p.contact_normal) > 0.0 && p.friction > 0.0 {
            let n = p.contact_normal;
            let dn = dot(d, n);
            if dn < 0.0 {
                let dt = d - n * dn;
                let t_len = length(dt);
                let budget = p.friction * (-dn);
                if t_len > budget {
                    d = n * dn + dt * (budget / t_len);
                    used = budget;
                } else {
                    d = n * dn;
                    used = t_len;
                }
            }
            p.contact_push = -used / p.friction;
        } else {
            p.contact_push = 0.0;
        }
        p.x = p.x + d;
    } else {
        p.contact_push = 0.0;
    }
    p.contact_normal = vec3<f32>(0.0);
    particles[i] = p;
}

fn delta_lambda(c: f32, grad_w: f32, alpha_tilde: f32, l: f32) -> f32 {
    let denom = grad_w + alpha_tilde;
    if denom <= 0.0 {
        return 0.0;
    }
    return (-c - alpha_tilde * l) / denom;
}

@compute @workgroup_size(64)
fn solve_distance(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = index(gid, nwg);
    if k >= batch.count {
        return;
    }
    let c = distances[batch.start + k];
    let pa = particles[c.a].x;
    let pb = particles[c.b].x;
    let wa = particles[c.a].w;
    let wb = particles[c.b].w;
    let d = pa - pb;
    let len2 = dot(d, d);
    if len2 < DEGENERATE_LENGTH_SQ {
        return;
    }
    let len = sqrt(len2);
    let n = d / len;
    let li = batch.lambda_base + batch.start + k;
    let h = params.h;
    let dl = params.stretch_relaxation
        * delta_lambda(len - c.rest, wa + wb, c.compliance / (h * h), lambda[li]);
    lambda[li] = lambda[li] + dl;
    particles[c.a].x = pa + n * (wa * dl);
    particles[c.b].x = pb - n * (wb * dl);
}

@compute @workgroup_size(64)
fn solve_strain(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = index(gid, nwg);
    if k >= batch.count {
        return;
    }
    let s = strains[batch.start + k];
    let p0 = particles[s.i0].x;
    let p1 = particles[s.i1].x;
    let p2 = particles[s.i2].x;
    let w0 = particles[s.i0].w;
    let w1 = particles[s.i1].w;
    let w2 = particles[s.i2].w;
    let e1 = p1 - p0;
    let e2 = p2 - p0;
    let n = cross(e1, e2);
    if dot(n, n) < DEGENERATE_AREA2_SQ {
        return;
    }
    let fu = e1 * s.d.x + e2 * s.d.z;
    let fv = e1 * s.d.y + e2 * s.d.w;
    var c: f32;
    var g1: vec3<f32>;
    var g2: vec3<f32>;
    if s.kind == 0u {
        c = dot(fu, fv);
        g1 = fv * s.d.x + fu * s.d.y;
        g2 = fv * s.d.z + fu * s.d.w;
    } else if s.kind == 1u {
        let len = length(fu);
        if len < 1.0e-12 {
            return;
        }
        let u = fu / len;
        c = len - 1.0;
        g1 = u * s.d.x;
        g2 = u * s.d.z;
    } else {
        let len = length(fv);
        if len < 1.0e-12 {
            return;
        }
        let u = fv / len;
        c = len - 1.0;
        g1 = u * s.d.y;
        g2 = u * s.d.w;
    }
    let g0 = -(g1 + g2);
    let grad_w = w0 * dot(g0, g0) + w1 * dot(g1, g1) + w2 * dot(g2, g2);
    let li = batch.lambda_base + batch.start + k;
    let h = params.h;
    let dl = delta_lambda(c, grad_w, s.compliance / (h * h), lambda[li]);
    lambda[li] = lambda[li] + dl;
    particles[s.i0].x = p0 + g0 * (w0 * dl);
    particles[s.i1].x = p1 + g1 * (w1 * dl);
    particles[s.i2].x = p2 + g2 * (w2 * dl);
}

// The stretch line by line (src/solver/line_stretch.rs), one thread per line of a family (the
// lines of a family share no particle): the line's edges' XPBD system
// (J M⁻¹ Jᵀ + α̃) Δλ = −C − α̃ λ is tridiagonal and solved exactly (Thomas), and every edge
// moves its ends by its own impulse. A closed loop is solved as an open line here (its last
// edge's coupling to its first is left out); the CPU solves it whole.
@compute @workgroup_size(64)
fn solve_line(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = index(gid, nwg);
    if k >= batch.count {
        return;
    }
    let line = batch.start + k;
    let vbase = params.line_vertices_at + line_data[4u * line];
    let e0 = line_data[4u * line + 1u];
    let m = line_data[4u * line + 2u];
    if m == 0u {
        return;
    }
    let inv_h2 = 1.0 / (params.h * params.h);
    // Assemble at the positions before any move, eliminating forward as it goes.
    var prev_n = vec3<f32>(0.0);
    var prev_diag = 1.0;
    var prev_rhs = 0.0;
    for (var j = 0u; j < m; j = j + 1u) {
        let p = line_data[vbase + j];
        let q = line_data[vbase + j + 1u];
        let e = distances[e0 + j];
        let d = particles[p].x - particles[q].x;
        let len2 = dot(d, d);
        var slot: LineSlot;
        slot.n = vec3<f32>(0.0);
        slot.diag = 1.0;
        slot.rhs = 0.0;
        slot.upper = 0.0;
        let at = e.compliance * inv_h2;
        let a = particles[p].w + particles[q].w + at;
        if len2 >= DEGENERATE_LENGTH_SQ && a > 0.0 {
            let len = sqrt(len2);
            slot.n = d / len;
            slot.diag = a;
            slot.rhs = -(len - e.rest) - at * lambda[e0 + j];
        }
        if j > 0u {
            // The coupling of edge j − 1 to edge j through their shared particle p.
            let upper = -particles[p].w * dot(prev_n, slot.n);
            line_slots[e0 + j - 1u].upper = upper;
            let f = upper / prev_diag;
            slot.diag = slot.diag - f * upper;
            slot.rhs = slot.rhs - f * prev_rhs;
        }
        line_slots[e0 + j] = slot;
        prev_n = slot.n;
        prev_diag = slot.diag;
        prev_rhs = slot.rhs;
    }
    // Back substitution: rhs becomes Δλ.
    var next = line_slots[e0 + m - 1u].rhs / line_slots[e0 + m - 1u].diag;
    line_slots[e0 + m - 1u].rhs = next;
    for (var j = i32(m) - 2; j >= 0; j = j - 1) {
        let s = line_slots[e0 + u32(j)];
        next = (s.rhs - s.upper * next) / s.diag;
        line_slots[e0 + u32(j)].rhs = next;
    }
    for (var j = 0u; j < m; j = j + 1u) {
        let s = line_slots[e0 + j];
        if s.rhs == 0.0 || dot(s.n, s.n) == 0.0 {
            continue;
        }
        let p = line_data[vbase + j];
        let q = line_data[vbase + j + 1u];
        particles[p].x = particles[p].x + s.n * (particles[p].w * s.rhs);
        particles[q].x = particles[q].x - s.n * (particles[q].w * s.rhs);
        lambda[e0 + j] = lambda[e0 + j] + s.rhs;
    }
}

// Tethers (constraints.rs `solve_tether`): `C = |x − x_anchor| − max ≤ 0` to a pinned anchor,
// no compliance, the multiplier clamped to λ ≤ 0 (a tether only pulls). Stored in `distances`
// after the stretch edges (a: the particle, b: the anchor, rest: the largest length); only the
// free particle moves, and the colours keep one tether per particle.
@compute @workgroup_size(64)
fn solve_tether(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = index(gid, nwg);
    if k >= batch.count {
        return;
    }
    let t = distances[batch.start + k];
    let p = particles[t.a].x;
    let w = particles[t.a].w;
    let d = p - particles[t.b].x;
    let len2 = dot(d, d);
    if len2 < DEGENERATE_LENGTH_SQ {
        return;
    }
    let len = sqrt(len2);
    let c = len - t.rest;
    let li = batch.lambda_base + batch.start + k;
    let l = lambda[li];
    if (c <= 0.0 && l == 0.0) || w <= 0.0 {
        return;
    }
    let new_l = min(l + (-c) / w, 0.0);
    let dl = new_l - l;
    lambda[li] = new_l;
    particles[t.a].x = p + (d / len) * (w * dl);
}

fn wrap_angle(a: f32) -> f32 {
    var r = a;
    if r > PI {
        r = r - TAU * ceil((r - PI) / TAU);
    } else if r <= -PI {
        r = r + TAU * ceil((-PI - r) / TAU);
    }
    return r;
}

@compute @workgroup_size(64)
fn solve_bend(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let k = index(gid, nwg);
    if k >= batch.count {
        return;
    }
    let b = bends[batch.start + k];
    // Bridson et al. 2003 notation, as constraints.rs: x1, x2 opposite; x3, x4 the edge.
    let x3 = particles[b.p.x].x;
    let x4 = particles[b.p.y].x;
    let x1 = particles[b.p.z].x;
    let x2 = particles[b.p.w].x;
    let e = x4 - x3;
    let e_len2 = dot(e, e);
    if e_len2 < DEGENERATE_LENGTH_SQ {
        return;
    }
    let e_len = sqrt(e_len2);
    let n1 = cross(x1 - x3, x1 - x4);
    let n2 = cross(x2 - x4, x2 - x3);
    let n1_len2 = dot(n1, n1);
    let n2_len2 = dot(n2, n2);
    if n1_len2 < DEGENERATE_AREA2_SQ || n2_len2 < DEGENERATE_AREA2_SQ {
        return;
    }
    let e_hat = e / e_len;
    let m1 = n1 / n1_len2;
    let m2 = n2 / n2_len2;
    let theta = atan2(dot(cross(n1, n2), e), dot(n1, n2) * e_len);
    let u1 = m1 * e_len;
    let u2 = m2 * e_len;
    let u3 = m1 * dot(x1 - x4, e_hat) + m2 * dot(x2 - x4, e_hat);
    let u4 = -(m1 * dot(x1 - x3, e_hat)) - m2 * dot(x2 - x3, e_hat);
    // Gradients of θ for [p.x, p.y, p.z, p.w].
    let g0 = -u3;
    let g1 = -u4;
    let g2 = -u1;
    let g3 = -u2;
    let w0 = particles[b.p.x].w;
    let w1 = particles[b.p.y].w;
    let w2 = particles[b.p.z].w;
    let w3 = particles[b.p.w].w;
    let grad_w = w0 * dot(g0, g0) + w1 * dot(g1, g1) + w2 * dot(g2, g2) + w3 * dot(g3, g3);
    let li = batch.lambda_base + batch.start + k;
    let h = params.h;
    let dl = delta_lambda(wrap_angle(theta - b.rest), grad_w, b.compliance / (h * h), lambda[li]);
    lambda[li] = lambda[li] + dl;
    particles[b.p.x].x = x3 + g0 * (w0 * dl);
    particles[b.p.y].x = x4 + g1 * (w1 * dl);
    particles[b.p.z].x = x1 + g2 * (w2 * dl);
    particles[b.p.w].x = x2 + g3 * (w3 * dl);
}

// The body's signed distance (m) at grid point (i, j, k).
fn sdf_at(i: u32, j: u32, k: u32) -> f32 {
    let d = params.sdf_dims;
    return sdf[i + d.x * (j + d.y * k)];
}

// Trilinear gradient (xyz) and signed distance (w, m) at `p`; outside the grid the distance is
// FAR (no contact there: the grid reaches past the largest contact distance).
fn sample_sdf(p: vec3<f32>) -> vec4<f32> {
    let d = params.sdf_dims;
    let g = (p - params.sdf_origin) / params.sdf_cell;
    let hi = vec3<f32>(d) - vec3<f32>(1.0001);
    if any(g < vec3<f32>(0.0)) || any(g > hi) {
        return vec4<f32>(0.0, 0.0, 0.0, FAR);
    }
    let c = vec3<u32>(floor(g));
    let f = g - floor(g);
    let c000 = sdf_at(c.x, c.y, c.z);
    let c100 = sdf_at(c.x + 1u, c.y, c.z);
    let c010 = sdf_at(c.x, c.y + 1u, c.z);
    let c110 = sdf_at(c.x + 1u, c.y + 1u, c.z);
    let c001 = sdf_at(c.x, c.y, c.z + 1u);
    let c101 = sdf_at(c.x + 1u, c.y, c.z + 1u);
    let c011 = sdf_at(c.x, c.y + 1u, c.z + 1u);
    let c111 = sdf_at(c.x + 1u, c.y + 1u, c.z + 1u);
    let x00 = mix(c000, c100, f.x);
    let x10 = mix(c010, c110, f.x);
    let x01 = mix(c001, c101, f.x);
    let x11 = mix(c011, c111, f.x);
    let y0 = mix(x00, x10, f.y);
    let y1 = mix(x01, x11, f.y);
    let value = mix(y0, y1, f.z);
    let dx = mix(mix(c100 - c000, c110 - c010, f.y), mix(c101 - c001, c111 - c011, f.y), f.z);
    let dy = mix(mix(c010 - c000, c110 - c100, f.x), mix(c011 - c001, c111 - c101, f.x), f.z);
    let dz = mix(mix(c001 - c000, c101 - c100, f.x), mix(c011 - c010, c111 - c110, f.x), f.y);
    return vec4<f32>(vec3<f32>(dx, dy, dz) / params.sdf_cell, value);
}

// The body contacts of stage 5, one thread per particle: a particle closer to the body than
// the thickness is pushed out along the distance field's gradient (no friction here: a
// position-level friction in the sweeps undoes the constraints' tangential corrections).
@compute @workgroup_size(64)
fn contacts(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if i >= params.particles || params.sdf_dims.x == 0u {
        return;
    }
    var p = particles[i];
    if p.w <= 0.0 {
        return;
    }
    let s = sample_sdf(p.x);
    let dist = s.w;
    let grad = s.xyz;
    let glen = length(grad);
    if dist >= params.thickness || glen < 1.0e-6 {
        return;
    }
    let n = grad / glen;
    let push = params.thickness - dist;
    p.x = p.x + n * push;
    p.contact_normal = n;
    p.contact_push = p.contact_push + push;
    particles[i] = p;
}

// Stage 6, velocities: v = (x − x_prev)/h, Coulomb friction on the particles the contacts
// pushed (the body is static), then damping v ← v·exp(−c·h).
@compute @workgroup_size(64)
fn velocities(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    let i = index(gid, nwg);
    if i >= params.particles {
        return;
    }
    var p = particles[i];
    var v = (p.x - p.x_prev) / params.h;
    // Coulomb friction against the contacts' push, at the velocity level, within what the
    // friction on the prediction left of the budget.
    if dot(p.contact_normal, p.contact_normal) > 0.0 && p.contact_push > 0.0 {
        let n = p.contact_normal;
        let vn = dot(v, n);
        let vt = v - n * vn;
        let vt_len = length(vt);
        let dv = p.friction * p.contact_push / params.h;
        if vt_len > dv {
            v = n * vn + vt * (1.0 - dv / vt_len);
        } else {
            v = n * vn;
        }
    }
    p.v = v * exp(-p.damping * params.h);
    particles[i] = p;
}
