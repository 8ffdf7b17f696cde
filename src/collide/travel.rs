//! How far each part of a moving body has moved: travel bounds per region.
//!
//! The contact search skips work with bounds that hold while the body moves little: a
//! particle's lower bound on its distance to the body, and its list of nearby body triangles
//! ([`crate::collide`]). Both stay valid until the body surface has moved by more than their
//! slack. A single bound for the whole body (the sum over poses of the largest vertex
//! displacement) is spent by the fastest part: a swinging hand invalidated the lists of cloth
//! resting on the hips. So the collider's triangles are split into 64 spatial regions,
//! each with its own running travel (the sum over poses of the largest displacement among its
//! triangles' vertices: every point of a triangle moves at most as far as its farthest vertex)
//! and its current bounding box. A bound about the triangles within `r` of a point `p` needs
//! only the travel of the regions whose box is within `r` of `p`: the triangles of any other
//! region are farther than `r` now, wherever they came from.
//!
//! The running sums are kept for every pose ([`RegionTravel::pose`] counts them), so a bound
//! made at one pose asks for the travel since that pose ([`RegionTravel::since`]).

use crate::math::{Real, Vec3};

/// Halvings from the whole body to a group of regions (8 groups).
const GROUP_DEPTH: u32 = 3;

/// Halvings from a group to a region (8 regions per group, 64 in all).
const REGION_DEPTH: u32 = 3;

/// Poses whose running travel is kept: a bound made longer ago than this counts as unbounded
/// (the particle is queried again), so that the history needs no memory beyond this.
pub const HISTORY_POSES: u32 = 256;

/// Fewest triangles per region: a part is halved only when both halves keep this many.
const MIN_REGION_TRIANGLES: usize = 16;

/// A triangle's centroid and index, while splitting.
type Part = Vec<(Vec3, u32)>;

/// The travel of each region of a body since every pose.
///
/// Regions come in groups (the first halvings), each with the box and travel of its regions
/// together, so that [`Self::since`] looks into the regions of the groups near a point only.
#[derive(Clone, Debug)]
pub struct RegionTravel {
    /// The vertices of region `r`'s triangles: `vertices[offsets[r]..offsets[r + 1]]`.
    offsets: Vec<u32>,
    vertices: Vec<u32>,
    /// Each region's box at the current pose (m): `[min, max]`.
    boxes: Vec<[Vec3; 2]>,
    /// The regions of group `g`: `groups[g]..groups[g + 1]`.
    groups: Vec<u32>,
    /// Each group's box at the current pose (m).
    group_boxes: Vec<[Vec3; 2]>,
    /// The running travel (m) at the last [`HISTORY_POSES`] poses, pose `k` in row
    /// `k % HISTORY_POSES`: one entry per region, then one per group, then the whole body's.
    /// f64, as the sums grow for the whole bake.
    history: Vec<f64>,
    /// The current pose's index (0 for the first).
    pose: u32,
    /// Scratch: this pose's steps, as the history's rows.
    steps: Vec<Real>,
}

/// Halves `part` at the median of its centroids along the widest axis of their box, `depth`
/// times (fewer where a half would have fewer than [`MIN_REGION_TRIANGLES`]), appending the
/// pieces to `out` in order.
fn split(mut part: Part, depth: u32, out: &mut Vec<Part>) {
    if depth == 0 || part.len() < 2 * MIN_REGION_TRIANGLES {
        out.push(part);
        return;
    }
    let [lo, hi] = bounds(part.iter().map(|c| c.0));
    let axis = (hi - lo).max_position();
    let half = part.len() / 2;
    part.select_nth_unstable_by(half, |a, b| a.0[axis].total_cmp(&b.0[axis]));
    let upper = part.split_off(half);
    split(part, depth - 1, out);
    split(upper, depth - 1, out);
}

impl RegionTravel {
    /// Splits the triangles `indices` of a body with `vertices` (its first pose) into regions:
    /// the triangles' centroids are halved at the median along the widest axis of their box,
    /// and the halves again ([`GROUP_DEPTH`] times for the groups, [`REGION_DEPTH`] more for
    /// the regions), while the halves keep [`MIN_REGION_TRIANGLES`].
    pub fn new(vertices: &[Vec3], indices: &[[u32; 3]]) -> Self {
        let centroid = |t: &[u32; 3]| t.iter().map(|&i| vertices[i as usize]).sum::<Vec3>() / 3.0;
        let all: Part = (indices.iter().enumerate())
            .map(|(k, t)| (centroid(t), k as u32))
            .collect();
        let mut groups_of = Vec::new();
        split(all, GROUP_DEPTH, &mut groups_of);
        let mut parts = Vec::new();
        let mut groups = vec![0u32];
        for group in groups_of {
            split(group, REGION_DEPTH, &mut parts);
            groups.push(parts.len() as u32);
        }
        let mut offsets = vec![0u32];
        let mut vertices_of = Vec::new();
        for part in &parts {
            let start = vertices_of.len();
            vertices_of.extend(part.iter().flat_map(|&(_, t)| indices[t as usize]));
            vertices_of[start..].sort_unstable();
            let mut kept = start;
            for k in start..vertices_of.len() {
                if k == start || vertices_of[k] != vertices_of[kept - 1] {
                    vertices_of[kept] = vertices_of[k];
                    kept += 1;
                }
            }
            vertices_of.truncate(kept);
            offsets.push(vertices_of.len() as u32);
        }
        let (regions, group_count) = (parts.len(), groups.len() - 1);
        let mut travel = Self {
            offsets,
            vertices: vertices_of,
            boxes: vec![[Vec3::ZERO; 2]; regions],
            groups,
            group_boxes: vec![[Vec3::ZERO; 2]; group_count],
            history: vec![0.0; (regions + group_count + 1) * HISTORY_POSES as usize],
            pose: 0,
            steps: Vec::with_capacity(regions + group_count + 1),
        };
        for r in 0..regions {
            travel.boxes[r] = bounds(travel.region(r).map(|i| vertices[i]));
        }
        travel.group_bounds();
        travel
    }

    /// Number of regions.
    pub fn regions(&self) -> usize {
        self.boxes.len()
    }

    /// Entries per pose in the history.
    fn row(&self) -> usize {
        self.boxes.len() + self.group_boxes.len() + 1
    }

    /// The index of the current pose (0 for the first).
    pub fn pose(&self) -> u32 {
        self.pose
    }

    /// Where pose `k`'s row starts in the history, if it is still kept.
    fn row_of(&self, k: u32) -> Option<usize> {
        (k <= self.pose && self.pose - k < HISTORY_POSES)
            .then(|| (k % HISTORY_POSES) as usize * self.row())
    }

    /// The whole body's running travel at the current pose (m).
    pub fn total_m(&self) -> f64 {
        let now = (self.pose % HISTORY_POSES) as usize * self.row();
        self.history[now + self.row() - 1]
    }

    /// Records a new pose: `now` are the vertices at it and `prev` at the pose before. Returns
    /// the largest vertex displacement (m).
    pub fn update(&mut self, prev: &[Vec3], now: &[Vec3]) -> Real {
        let (regions, groups, row) = (self.regions(), self.group_boxes.len(), self.row());
        let last = (self.pose % HISTORY_POSES) as usize * row;
        let mut steps = std::mem::take(&mut self.steps);
        steps.clear();
        for r in 0..regions {
            let (range, boxes) = (self.range(r), &mut self.boxes);
            let mut step2: Real = 0.0;
            let (mut lo, mut hi) = (Vec3::splat(Real::INFINITY), Vec3::splat(-Real::INFINITY));
            for &i in &self.vertices[range] {
                let (a, b) = (prev[i as usize], now[i as usize]);
                step2 = step2.max(a.distance_squared(b));
                lo = lo.min(b);
                hi = hi.max(b);
            }
            boxes[r] = [lo, hi];
            steps.push(step2.sqrt());
        }
        for g in 0..groups {
            let leaves = self.groups[g] as usize..self.groups[g + 1] as usize;
            steps.push(steps[leaves].iter().copied().fold(0.0, Real::max));
        }
        let largest = steps[..regions].iter().copied().fold(0.0, Real::max);
        steps.push(largest);
        self.pose += 1;
        let next = (self.pose % HISTORY_POSES) as usize * row;
        for (k, step) in steps.iter().enumerate() {
            self.history[next + k] = self.history[last + k] + f64::from(*step);
        }
        self.steps = steps;
        self.group_bounds();
        largest
    }

    /// Each group's box from its regions' boxes.
    fn group_bounds(&mut self) {
        for g in 0..self.group_boxes.len() {
            let leaves = self.groups[g] as usize..self.groups[g + 1] as usize;
            self.group_boxes[g] = self.boxes[leaves].iter().fold(
                [Vec3::splat(Real::INFINITY), Vec3::splat(-Real::INFINITY)],
                |[lo, hi], [a, b]| [lo.min(*a), hi.max(*b)],
            );
        }
    }

    /// How far (m) the triangles that are now within `r` of `p` can have moved since pose
    /// `pose_at`: the largest travel since then among the regions whose box is within `r` of
    /// `p`. A pose not kept (longer ago than [`HISTORY_POSES`], or a bound made on another
    /// body) gives infinity.
    pub fn since(&self, pose_at: u32, p: Vec3, r: Real) -> Real {
        let total = self.total_since(pose_at);
        if total == 0.0 || total == Real::INFINITY {
            return total;
        }
        let (Some(at), Some(now)) = (self.row_of(pose_at), self.row_of(self.pose)) else {
            return Real::INFINITY;
        };
        let regions = self.regions();
        let moved_since = |k: usize| self.history[now + k] - self.history[at + k];
        let near = |[lo, hi]: &[Vec3; 2]| {
            let gap = (*lo - p).max(p - *hi).max(Vec3::ZERO);
            gap.length_squared() <= r * r
        };
        let mut moved: f64 = 0.0;
        for (g, group) in self.group_boxes.iter().enumerate() {
            // A group that moved no farther than the most found so far cannot raise it.
            if moved_since(regions + g) <= moved || !near(group) {
                continue;
            }
            for k in self.groups[g] as usize..self.groups[g + 1] as usize {
                if near(&self.boxes[k]) {
                    moved = moved.max(moved_since(k));
                }
            }
        }
        moved as Real
    }

    /// How far (m) any part of the body can have moved since pose `pose_at` (infinity for a
    /// pose not kept): [`Self::since`] without the regions, at no cost.
    pub fn total_since(&self, pose_at: u32) -> Real {
        let (Some(at), Some(now)) = (self.row_of(pose_at), self.row_of(self.pose)) else {
            return Real::INFINITY;
        };
        let last = self.row() - 1;
        (self.history[now + last] - self.history[at + last]) as Real
    }

    fn range(&self, r: usize) -> std::ops::Range<usize> {
        self.offsets[r] as usize..self.offsets[r + 1] as usize
    }

    fn region(&self, r: usize) -> impl Iterator<Item = usize> + '_ {
        self.vertices[self.range(r)].iter().map(|&i| i as usize)
    }
}

/// The box of `points` (`[min, max]`; inverted infinities for none).
fn bounds(points: impl Iterator<Item = Vec3>) -> [Vec3; 2] {
    points.fold(
        [Vec3::splat(Real::INFINITY), Vec3::splat(-Real::INFINITY)],
        |[lo, hi], p| [lo.min(p), hi.max(p)],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mesh::shapes::uv_sphere;

    #[test]
    fn regions_cover_every_triangle_and_split_evenly() {
        let m = uv_sphere(0.3, 64, 32);
        let t = RegionTravel::new(&m.positions, &m.indices);
        assert_eq!(t.regions(), 64);
        assert_eq!(t.group_boxes.len(), 8);
        // Median halvings of 3,968 triangles: 62 per region, so at least 32 vertices each.
        assert!((0..64).all(|r| t.offsets[r + 1] - t.offsets[r] >= 32));
        // Every vertex of every triangle is in some region, and each region's box holds its
        // vertices.
        let mut seen = vec![false; m.positions.len()];
        for r in 0..t.regions() {
            let [lo, hi] = t.boxes[r];
            for i in t.region(r) {
                seen[i] = true;
                let p = m.positions[i];
                assert!(p.cmpge(lo).all() && p.cmple(hi).all());
            }
        }
        assert!(seen.iter().all(|&s| s));
        // A 6-triangle body is one region.
        let cube = crate::mesh::shapes::uv_sphere(0.1, 3, 2);
        assert_eq!(
            RegionTravel::new(&cube.positions, &cube.indices).regions(),
            1
        );
    }

    #[test]
    fn only_the_regions_near_a_point_count() {
        // Two spheres 2 m apart: the right one moves 1 cm per pose, the left one stays.
        let left = uv_sphere(0.3, 32, 16);
        let mut all = left.positions.clone();
        let mut indices = left.indices.clone();
        let n = all.len() as u32;
        all.extend(left.positions.iter().map(|p| *p + Vec3::X * 2.0));
        indices.extend(left.indices.iter().map(|t| t.map(|i| i + n)));
        let mut t = RegionTravel::new(&all, &indices);
        assert_eq!(t.pose(), 0);
        let mut prev = all.clone();
        for _ in 0..3 {
            let now: Vec<Vec3> = prev
                .iter()
                .enumerate()
                .map(|(k, p)| {
                    if k >= n as usize {
                        *p + Vec3::Y * 0.01
                    } else {
                        *p
                    }
                })
                .collect();
            let step = t.update(&prev, &now);
            assert!((step - 0.01).abs() < 1.0e-6);
            prev = now;
        }
        assert_eq!(t.pose(), 3);
        assert!((t.total_m() - 0.03).abs() < 1.0e-6);
        // Near the left sphere nothing moved; near the right one, 3 cm since pose 0 and 1 cm
        // since pose 2; a reach that takes in both sees the right one's travel.
        let near_left = Vec3::new(-0.35, 0.0, 0.0);
        assert_eq!(t.since(0, near_left, 0.1), 0.0);
        let near_right = Vec3::new(2.35, 0.0, 0.0);
        assert!((t.since(0, near_right, 0.1) - 0.03).abs() < 1.0e-6);
        assert!((t.since(2, near_right, 0.1) - 0.01).abs() < 1.0e-6);
        assert!((t.since(0, near_left, 2.5) - 0.03).abs() < 1.0e-6);
        // Since now: nothing; a pose that was never recorded: unbounded.
        assert_eq!(t.since(3, near_right, 0.1), 0.0);
        assert_eq!(t.since(4, near_left, 0.1), Real::INFINITY);
        // The history keeps HISTORY_POSES poses: a bound older than that is unbounded, a
        // newer one still sees the travel since it.
        for _ in 0..HISTORY_POSES {
            t.update(&prev, &prev);
        }
        assert_eq!(t.pose(), 3 + HISTORY_POSES);
        assert_eq!(t.total_since(0), Real::INFINITY);
        assert_eq!(t.total_since(4), 0.0);
        assert!((t.total_m() - 0.03).abs() < 1.0e-6);
    }
}
