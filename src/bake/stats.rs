//! The stats report of a bake (DESIGN §3), and the measurements behind it.
//!
//! Every figure is measured on the positions the bake produced, independently of the solver's
//! own bookkeeping: stretch from the edge lengths, penetrations by parry3d's signed point
//! projection against the closed body, self-intersections by an exact segment–triangle test
//! between non-adjacent garment triangles.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::math::{Real, Vec3};

/// Constraint counts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ConstraintCounts {
    /// Edge stretch constraints.
    pub stretch: usize,
    /// Triangle shear constraints.
    pub shear: usize,
    /// Dihedral bending constraints.
    pub bend: usize,
    /// Attachments: hard pins plus soft attachments.
    pub attach: usize,
    /// Long-range tethers.
    pub tether: usize,
    /// Long-range stretch limits between free particles (span limits).
    #[serde(default)]
    pub span_limit: usize,
}

/// Measurements at the end of one frame.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FrameStats {
    /// Frame number on the timeline.
    pub frame: i32,
    /// Largest edge stretch, `length / rest − 1`, over all simulated edges.
    pub max_stretch: Real,
    /// Mean edge stretch.
    pub mean_stretch: Real,
    /// Render vertices strictly inside the body where it leaves room: not pinched
    /// (`pinched_vertices`).
    pub body_penetrations: usize,
    /// Deepest render vertex inside the body (m).
    pub max_penetration_m: Real,
    /// Render vertices pinched between two parts of the body: inside the body or within twice
    /// the collision thickness of it, where the body leaves less than twice the collision
    /// thickness of room ([`crate::collide::measure_penetrations`]).
    #[serde(default)]
    pub pinched_vertices: usize,
    /// Pairs of non-adjacent garment triangles that intersect.
    pub self_intersections: usize,
    /// Largest stretch residual `|C + α̃·λ|` in the last iteration of the frame (m).
    pub max_residual: Real,
    /// Substeps rolled back and retried in this frame.
    pub rollbacks: u32,
    /// Non-finite render positions (always 0 in a bake that succeeded).
    pub non_finite: usize,
    /// Iterations per substep the solver ran this frame (the scene's `iterations`, or what
    /// `adaptive_iterations` chose; 0 for the first frame, which is not simulated).
    #[serde(default)]
    pub iterations: u32,
    /// Substeps whose prediction the hybrid's network corrected (0 with the network off).
    #[serde(default)]
    pub neural_substeps: u32,
    /// Network predictions not applied (not finite, or a spike).
    #[serde(default)]
    pub neural_rejected: u32,
    /// Substeps that failed with the network's correction and ran again classically.
    #[serde(default)]
    pub neural_fallbacks: u32,
    /// Largest move the network gave a particle in this frame (m).
    #[serde(default)]
    pub neural_max_correction_m: Real,
    /// Most directed world edges (cloth pairs close in space, far on the mesh) in one substep's
    /// graph this frame (0 with the network off, or a network without world edges).
    #[serde(default)]
    pub neural_world_edges: u32,
    /// Substeps on which the network ran (fewer than `neural_substeps` where
    /// `neural.reuse_substeps` applies one prediction on several substeps).
    #[serde(default)]
    pub neural_inferences: u32,
    /// Substeps that ran on the GPU backend (0 on the CPU).
    #[serde(default)]
    pub gpu_substeps: u32,
    /// GPU frames that failed their check and ran again on the CPU.
    #[serde(default)]
    pub gpu_fallbacks: u32,
}

/// Worst values over the whole bake.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Largest `max_stretch` over frames.
    pub max_stretch: Real,
    /// Largest `body_penetrations` over frames.
    pub body_penetrations: usize,
    /// Largest `max_penetration_m` over frames (m).
    pub max_penetration_m: Real,
    /// Largest `self_intersections` over frames.
    pub self_intersections: usize,
    /// Largest `pinched_vertices` over frames.
    #[serde(default)]
    pub pinched_vertices: usize,
    /// Frames with at least one pinched vertex.
    #[serde(default)]
    pub pinched_frames: usize,
    /// Total rollbacks.
    pub rollbacks: u32,
    /// Mean of `iterations` over the simulated frames (those with `iterations > 0`).
    #[serde(default)]
    pub mean_iterations: f64,
    /// Total `neural_substeps`.
    #[serde(default)]
    pub neural_substeps: u32,
    /// Total `neural_rejected`.
    #[serde(default)]
    pub neural_rejected: u32,
    /// Total `neural_fallbacks`.
    #[serde(default)]
    pub neural_fallbacks: u32,
    /// Largest `neural_world_edges` over frames.
    #[serde(default)]
    pub neural_world_edges: u32,
    /// Total `neural_inferences`.
    #[serde(default)]
    pub neural_inferences: u32,
    /// Total `gpu_substeps`.
    #[serde(default)]
    pub gpu_substeps: u32,
    /// Total `gpu_fallbacks`.
    #[serde(default)]
    pub gpu_fallbacks: u32,
}

/// Milliseconds spent in each solver stage over the whole bake.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StageMs {
    /// Kinematics (pins, body pose).
    pub kinematics: f64,
    /// Prediction.
    pub predict: f64,
    /// Contact generation.
    pub contacts: f64,
    /// Constraint projection.
    pub project: f64,
    /// Velocity update and damping.
    pub velocities: f64,
    /// Failure checks.
    pub check: f64,
    /// The hybrid's network: its graph and inference.
    #[serde(default)]
    pub neural: f64,
    /// Frames on the GPU backend, every stage, upload to read-back.
    #[serde(default)]
    pub gpu: f64,
    /// The constraint projection by kind (within `project`).
    #[serde(default)]
    pub project_kinds: ProjectMs,
}

/// Milliseconds spent projecting each kind of constraint over the whole bake
/// ([`crate::solver::ProjectTimes`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProjectMs {
    /// Soft attachments, the drag and the tethers.
    pub attachments: f64,
    /// Span limits.
    pub span_limits: f64,
    /// Stretch edges.
    pub stretch: f64,
    /// Shear (and, with the membrane per triangle, the yarn rows).
    pub shear: f64,
    /// Bending hinges.
    pub bend: f64,
    /// Body-vertex contacts.
    pub body_vertices: f64,
    /// Particle–body contacts.
    pub contacts: f64,
    /// Cloth–cloth contacts.
    pub self_contacts: f64,
    /// Span limits, stretch, shear and bending projected together on two threads
    /// (`pipelined_sweeps`); their own fields then hold nothing.
    pub pipelined: f64,
}

/// The stats report written by `drape bake --stats`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Version of Drape that baked.
    pub drape_version: String,
    /// Scene name.
    pub scene: String,
    /// Frames per second.
    pub fps: Real,
    /// Frames baked.
    pub frames: usize,
    /// Substeps per frame.
    pub substeps: u32,
    /// Iterations per substep.
    pub iterations: u32,
    /// Where the substeps ran: `"CPU"`, or `"GPU: "` and the adapter (at the end of the bake).
    #[serde(default)]
    pub backend: String,
    /// Simulated particles.
    pub proxy_vertices: usize,
    /// Render-mesh vertices exported.
    pub render_vertices: usize,
    /// Constraint counts.
    pub constraints: ConstraintCounts,
    /// Wall-clock time of the whole bake, measurements included (s).
    pub wall_seconds: f64,
    /// Simulation time per frame, measurements excluded (ms).
    pub sim_ms_per_frame: f64,
    /// Time per solver stage (ms, whole bake).
    pub stage_ms: StageMs,
    /// Mesh warnings found while loading (welded duplicates, skipped triangles, ...).
    pub warnings: Vec<String>,
    /// Settle frames simulated before the first frame (not exported).
    pub preroll_frames: u32,
    /// Substeps rolled back during the settle frames (not counted in `per_frame`).
    pub settle_rollbacks: u32,
    /// Per-frame measurements.
    pub per_frame: Vec<FrameStats>,
    /// Worst values.
    pub summary: Summary,
}

impl Stats {
    /// Recomputes the summary from `per_frame`.
    pub fn summarise(&mut self) {
        self.summary = self
            .per_frame
            .iter()
            .fold(Summary::default(), |s, f| Summary {
                max_stretch: s.max_stretch.max(f.max_stretch),
                body_penetrations: s.body_penetrations.max(f.body_penetrations),
                max_penetration_m: s.max_penetration_m.max(f.max_penetration_m),
                self_intersections: s.self_intersections.max(f.self_intersections),
                pinched_vertices: s.pinched_vertices.max(f.pinched_vertices),
                pinched_frames: s.pinched_frames + usize::from(f.pinched_vertices > 0),
                rollbacks: s.rollbacks + f.rollbacks,
                mean_iterations: 0.0,
                neural_substeps: s.neural_substeps + f.neural_substeps,
                neural_rejected: s.neural_rejected + f.neural_rejected,
                neural_fallbacks: s.neural_fallbacks + f.neural_fallbacks,
                neural_world_edges: s.neural_world_edges.max(f.neural_world_edges),
                neural_inferences: s.neural_inferences + f.neural_inferences,
                gpu_substeps: s.gpu_substeps + f.gpu_substeps,
                gpu_fallbacks: s.gpu_fallbacks + f.gpu_fallbacks,
            });
        let simulated: Vec<f64> = (self.per_frame.iter())
            .filter(|f| f.iterations > 0)
            .map(|f| f.iterations as f64)
            .collect();
        if !simulated.is_empty() {
            self.summary.mean_iterations = simulated.iter().sum::<f64>() / simulated.len() as f64;
        }
    }
}

/// `(max, mean)` of `length / rest − 1` over `edges` (pairs of indices into `x`, with rest
/// lengths in m). Compressed edges count as negative stretch in the mean and 0 in the max.
pub fn edge_stretch(x: &[Vec3], edges: impl Iterator<Item = ([u32; 2], Real)>) -> (Real, Real) {
    let mut max: Real = 0.0;
    let mut sum = 0.0f64;
    let mut n = 0usize;
    for ([a, b], rest) in edges {
        if rest <= 0.0 {
            continue;
        }
        let s = x[a as usize].distance(x[b as usize]) / rest - 1.0;
        max = max.max(s);
        sum += s as f64;
        n += 1;
    }
    (max, if n > 0 { (sum / n as f64) as Real } else { 0.0 })
}

/// Whether segment `p q` crosses triangle `a b c` (proper crossing; touching at exactly zero
/// volume does not count).
fn segment_crosses_triangle(p: Vec3, q: Vec3, a: Vec3, b: Vec3, c: Vec3) -> bool {
    let vol = |u: Vec3, v: Vec3, w: Vec3, z: Vec3| (v - u).cross(w - u).dot(z - u);
    let sp = vol(a, b, c, p);
    let sq = vol(a, b, c, q);
    if sp == 0.0 || sq == 0.0 || (sp > 0.0) == (sq > 0.0) {
        return false;
    }
    // The segment's line passes inside the triangle iff the three edge volumes share a sign.
    let s1 = vol(p, q, a, b);
    let s2 = vol(p, q, b, c);
    let s3 = vol(p, q, c, a);
    (s1 > 0.0 && s2 > 0.0 && s3 > 0.0) || (s1 < 0.0 && s2 < 0.0 && s3 < 0.0)
}

/// Whether two triangles intersect (non-coplanar case: an edge of one crosses the other).
pub fn triangles_intersect(t1: [Vec3; 3], t2: [Vec3; 3]) -> bool {
    (0..3).any(|k| segment_crosses_triangle(t1[k], t1[(k + 1) % 3], t2[0], t2[1], t2[2]))
        || (0..3).any(|k| segment_crosses_triangle(t2[k], t2[(k + 1) % 3], t1[0], t1[1], t1[2]))
}

/// Counts pairs of triangles that share no vertex and intersect.
///
/// A uniform hash grid (cell = the mean triangle bounding-box size) finds candidate pairs;
/// each pair is tested once with [`triangles_intersect`].
pub fn count_self_intersections(x: &[Vec3], triangles: &[[u32; 3]]) -> usize {
    if triangles.len() < 2 {
        return 0;
    }
    let boxes: Vec<(Vec3, Vec3)> = triangles
        .iter()
        .map(|t| {
            let [a, b, c] = t.map(|i| x[i as usize]);
            (a.min(b).min(c), a.max(b).max(c))
        })
        .collect();
    let mean_size: Real = boxes
        .iter()
        .map(|(lo, hi)| (*hi - *lo).max_element())
        .sum::<Real>()
        / boxes.len() as Real;
    let cell = mean_size.max(1.0e-6);
    let key = |p: Vec3| -> [i32; 3] {
        [
            (p.x / cell).floor() as i32,
            (p.y / cell).floor() as i32,
            (p.z / cell).floor() as i32,
        ]
    };
    // Triangles spanning many cells (a few huge ones among small ones) go to a list tested
    // against everything by bounding box, so the grid stays linear in size.
    const MAX_CELLS: i64 = 64;
    let span = |t: usize| -> i64 {
        let (k0, k1) = (key(boxes[t].0), key(boxes[t].1));
        (0..3)
            .map(|a| k1[a] as i64 - k0[a] as i64 + 1)
            .fold(1i64, i64::saturating_mul)
    };
    let (big, small): (Vec<usize>, Vec<usize>) =
        (0..triangles.len()).partition(|&t| span(t) > MAX_CELLS);
    let mut grid: HashMap<[i32; 3], Vec<u32>> = HashMap::new();
    for &t in &small {
        let (k0, k1) = (key(boxes[t].0), key(boxes[t].1));
        for i in k0[0]..=k1[0] {
            for j in k0[1]..=k1[1] {
                for k in k0[2]..=k1[2] {
                    grid.entry([i, j, k]).or_default().push(t as u32);
                }
            }
        }
    }
    let intersect = |t: usize, u: usize| -> bool {
        let (tri, other) = (triangles[t], triangles[u]);
        if tri.iter().any(|v| other.contains(v)) {
            return false;
        }
        let ((lo, hi), (lo2, hi2)) = (boxes[t], boxes[u]);
        if lo.cmpgt(hi2).any() || lo2.cmpgt(hi).any() {
            return false;
        }
        triangles_intersect(tri.map(|i| x[i as usize]), other.map(|i| x[i as usize]))
    };
    let mut seen = vec![u32::MAX; triangles.len()];
    let mut count = 0;
    for &t in &small {
        let (k0, k1) = (key(boxes[t].0), key(boxes[t].1));
        for i in k0[0]..=k1[0] {
            for j in k0[1]..=k1[1] {
                for k in k0[2]..=k1[2] {
                    let Some(list) = grid.get(&[i, j, k]) else {
                        continue;
                    };
                    for &u in list {
                        let u = u as usize;
                        if u <= t || seen[u] == t as u32 {
                            continue;
                        }
                        seen[u] = t as u32;
                        count += usize::from(intersect(t, u));
                    }
                }
            }
        }
    }
    for (n, &b) in big.iter().enumerate() {
        // Against every small triangle, and against the big ones after it.
        count += small.iter().filter(|&&u| intersect(b, u)).count();
        count += big[n + 1..].iter().filter(|&&u| intersect(b, u)).count();
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossing_triangles_are_found() {
        let t1 = [
            Vec3::new(-1.0, 0.0, -1.0),
            Vec3::new(1.0, 0.0, -1.0),
            Vec3::new(0.0, 0.0, 1.0),
        ];
        let t2 = [
            Vec3::new(0.0, -1.0, 0.0),
            Vec3::new(0.0, 1.0, 0.0),
            Vec3::new(0.1, 1.0, 0.5),
        ];
        assert!(triangles_intersect(t1, t2));
        let t3 = t2.map(|p| p + Vec3::new(0.0, 2.0, 0.0));
        assert!(!triangles_intersect(t1, t3));
        let x: Vec<Vec3> = t1
            .iter()
            .chain(t2.iter())
            .chain(t3.iter())
            .copied()
            .collect();
        assert_eq!(
            count_self_intersections(&x, &[[0, 1, 2], [3, 4, 5], [6, 7, 8]]),
            1
        );
        // Sharing a vertex excludes the pair.
        assert_eq!(count_self_intersections(&x, &[[0, 1, 2], [0, 4, 5]]), 0);
    }

    /// Regression (review): one huge triangle among small ones filled the grid with millions of
    /// cells. It is now tested by bounding box, and still found.
    #[test]
    fn huge_triangle_among_small_ones() {
        let mut grid = crate::mesh::shapes::grid_cloth(1.0, 20, 0.0);
        let base = grid.positions.len() as u32;
        grid.positions.extend([
            Vec3::new(0.013, -500.0, -500.0),
            Vec3::new(0.013, 500.0, -500.0),
            Vec3::new(0.013, 0.0, 1000.0),
        ]);
        grid.indices.push([base, base + 1, base + 2]);
        let n = count_self_intersections(&grid.positions, &grid.indices);
        // The plane x = 0.013 crosses one column of the cloth's cells: each crossed triangle counts.
        assert!(n > 0 && n < 100, "{n}");
    }

    #[test]
    fn flat_grid_has_none_and_stretch_is_measured() {
        let grid = crate::mesh::shapes::grid_cloth(7.0, 8, 0.0);
        let (x, tris) = (grid.positions, grid.indices);
        assert_eq!(count_self_intersections(&x, &tris), 0);
        let (max, mean) = edge_stretch(&x, [([0u32, 1u32], 0.5), ([1, 2], 1.0)].into_iter());
        assert!((max - 1.0).abs() < 1e-6 && (mean - 0.5).abs() < 1e-6);
    }
}
