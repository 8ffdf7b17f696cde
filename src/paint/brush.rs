//! Brushes on a render mesh: dabs with a radius and a falloff, the four brush modes, flood fill,
//! X-mirror, picking, and the edits that undo and redo strokes (see the [module docs](super)).

use std::collections::{HashMap, VecDeque};

use parry3d::query::{Ray, RayCast};
use parry3d::shape::{TriMesh, TriMeshFlags};

use crate::math::{Real, Vec3};
use crate::mesh::{weld, Mesh};

use super::maps::{MapKind, VertexMaps};

/// How a brush's effect fades from its centre to its rim.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Falloff {
    /// `1 − 3t² + 2t³` (smoothstep from the rim), `t = d / r`: flat at the centre and the rim.
    #[default]
    Smooth,
    /// `1 − t`.
    Linear,
    /// `1` everywhere inside the radius.
    Constant,
}

impl Falloff {
    /// The falloff factor at distance `distance_m` from the centre of a brush of radius
    /// `radius_m` (m): in `[0, 1]`, and 0 at and beyond the radius.
    pub fn weight(self, distance_m: Real, radius_m: Real) -> Real {
        if distance_m.is_nan() || distance_m >= radius_m || radius_m <= 0.0 {
            return 0.0;
        }
        let t = (distance_m / radius_m).max(0.0);
        match self {
            Falloff::Smooth => 1.0 - t * t * (3.0 - 2.0 * t),
            Falloff::Linear => 1.0 - t,
            Falloff::Constant => 1.0,
        }
    }
}

/// What a brush does to the values under it. `f` is the falloff factor times the strength.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BrushMode {
    /// `v ← v + f·value`.
    #[default]
    Add,
    /// `v ← v − f·value`.
    Subtract,
    /// `v ← v + f·(value − v)`: towards `value`, reaching it where `f = 1`.
    Replace,
    /// `v ← v + f·(v̄ − v)`, `v̄` the mean of the vertex's mesh neighbours before the dab.
    Smooth,
}

/// A brush.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Brush {
    /// Radius on the surface, measured as the straight distance from the centre (m).
    pub radius_m: Real,
    /// Strength per dab, in `[0, 1]` (dimensionless).
    pub strength: Real,
    /// The profile from centre to rim.
    pub falloff: Falloff,
    /// What the brush does.
    pub mode: BrushMode,
    /// The amount added or subtracted, or the value replaced towards (in the map's unit).
    pub value: Real,
    /// Also paint the vertex closest to each touched vertex mirrored in the plane `x = 0`.
    pub mirror_x: bool,
}

impl Default for Brush {
    fn default() -> Self {
        Self {
            radius_m: 0.05,
            strength: 0.5,
            falloff: Falloff::Smooth,
            mode: BrushMode::Add,
            value: 1.0,
            mirror_x: false,
        }
    }
}

/// A brush setting that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum BrushError {
    /// The radius is not a positive finite distance.
    #[error("brush radius {0} m must be finite and greater than 0")]
    Radius(Real),
    /// The strength is outside `[0, 1]`.
    #[error("brush strength {0} must be from 0 to 1")]
    Strength(Real),
    /// The value is not finite.
    #[error("brush value {0} must be finite")]
    Value(Real),
    /// The centre is not finite.
    #[error("brush centre {0} is not a finite point")]
    Centre(Vec3),
    /// The seed of a flood fill is not a vertex of the mesh.
    #[error("vertex {vertex} does not exist (the mesh has {count} vertices)")]
    Vertex {
        /// The vertex given.
        vertex: u32,
        /// Vertices of the mesh.
        count: usize,
    },
    /// The maps do not belong to the mesh being painted.
    #[error("the maps have {maps} vertices but the painted mesh has {mesh}")]
    Mismatch {
        /// Vertices of the maps.
        maps: usize,
        /// Vertices of the mesh.
        mesh: usize,
    },
}

impl Brush {
    /// Checks the settings.
    pub fn validate(&self) -> Result<(), BrushError> {
        if !(self.radius_m.is_finite() && self.radius_m > 0.0) {
            return Err(BrushError::Radius(self.radius_m));
        }
        if !(0.0..=1.0).contains(&self.strength) {
            return Err(BrushError::Strength(self.strength));
        }
        if !self.value.is_finite() {
            return Err(BrushError::Value(self.value));
        }
        Ok(())
    }
}

/// Vertices closer than this are one point for painting (m): seam duplicates share their
/// neighbours, so smoothing and flood fill cross UV seams.
pub const PAINT_WELD_TOLERANCE_M: Real = 1.0e-5;

/// What a brush needs to know about the painted (render) mesh: positions, neighbours across
/// seams, a spatial grid for radius queries, the X-mirror table and a ray-cast structure.
/// Built once per mesh.
#[derive(Clone)]
pub struct PaintMesh {
    positions: Vec<Vec3>,
    /// Seam group (welded vertex) of each vertex.
    group: Vec<u32>,
    /// Members of each group: `group_vertices[group_start[g]..group_start[g + 1]]`.
    group_start: Vec<u32>,
    group_vertices: Vec<u32>,
    /// Neighbouring groups of each group, in the same layout.
    neighbour_start: Vec<u32>,
    neighbours: Vec<u32>,
    /// The vertex closest to each vertex's mirror image `(−x, y, z)`, when one lies within the
    /// mirror tolerance.
    mirror: Vec<Option<u32>>,
    grid: Grid,
    picker: Option<TriMesh>,
}

impl std::fmt::Debug for PaintMesh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PaintMesh")
            .field("vertices", &self.positions.len())
            .field("groups", &(self.group_start.len().saturating_sub(1)))
            .finish_non_exhaustive()
    }
}

/// A uniform hash grid over the vertices.
#[derive(Clone, Debug)]
struct Grid {
    cell_m: Real,
    cells: HashMap<[i32; 3], Vec<u32>>,
}

impl Grid {
    fn new(points: &[Vec3], cell_m: Real) -> Self {
        let mut cells: HashMap<[i32; 3], Vec<u32>> = HashMap::new();
        for (i, p) in points.iter().enumerate() {
            cells.entry(cell_of(*p, cell_m)).or_default().push(i as u32);
        }
        Self { cell_m, cells }
    }

    /// Calls `f` with every vertex within `radius_m` of `centre` (and some beyond it).
    fn near(&self, points: &[Vec3], centre: Vec3, radius_m: Real, mut f: impl FnMut(u32)) {
        let lo = cell_of(centre - Vec3::splat(radius_m), self.cell_m);
        let hi = cell_of(centre + Vec3::splat(radius_m), self.cell_m);
        let span = (0..3)
            .map(|k| (hi[k] as i64 - lo[k] as i64 + 1) as u64)
            .product::<u64>();
        if span > self.cells.len() as u64 {
            (0..points.len() as u32).for_each(f);
            return;
        }
        for x in lo[0]..=hi[0] {
            for y in lo[1]..=hi[1] {
                for z in lo[2]..=hi[2] {
                    if let Some(c) = self.cells.get(&[x, y, z]) {
                        c.iter().copied().for_each(&mut f);
                    }
                }
            }
        }
    }
}

fn cell_of(p: Vec3, cell_m: Real) -> [i32; 3] {
    let c = (p / cell_m).floor();
    [c.x, c.y, c.z].map(|v| v.clamp(i32::MIN as Real, i32::MAX as Real) as i32)
}

/// A point where a ray meets the painted mesh.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Hit {
    /// The point on the surface (m).
    pub point_m: Vec3,
    /// Distance along the ray from its origin (m, for a unit direction).
    pub distance_m: Real,
    /// The triangle hit.
    pub triangle: u32,
    /// The triangle's corner closest to the point.
    pub vertex: u32,
}

impl PaintMesh {
    /// Prepares `mesh` (valid, see [`Mesh::validate`]) for painting. The mirror table pairs
    /// each vertex with the vertex closest to its mirror image when that is within
    /// `mirror_tolerance_m` (m).
    pub fn new(mesh: &Mesh, mirror_tolerance_m: Real) -> Self {
        let positions = mesh.positions.clone();
        let n = positions.len();
        let group = weld(mesh, PAINT_WELD_TOLERANCE_M).original_to_welded;
        let groups = group.iter().map(|&g| g as usize + 1).max().unwrap_or(0);
        let (group_start, group_vertices) = csr(
            groups,
            group.iter().enumerate().map(|(i, &g)| (g, i as u32)),
        );
        let mut pairs: Vec<(u32, u32)> = Vec::with_capacity(mesh.indices.len() * 6);
        for t in &mesh.indices {
            for k in 0..3 {
                let (a, b) = (group[t[k] as usize], group[t[(k + 1) % 3] as usize]);
                if a != b {
                    pairs.push((a, b));
                    pairs.push((b, a));
                }
            }
        }
        pairs.sort_unstable();
        pairs.dedup();
        let (neighbour_start, neighbours) = csr(groups, pairs.into_iter());
        let mean_edge = {
            let (mut sum, mut count) = (0.0f64, 0usize);
            for t in &mesh.indices {
                for k in 0..3 {
                    let (a, b) = (t[k] as usize, t[(k + 1) % 3] as usize);
                    sum += f64::from(positions[a].distance(positions[b]));
                    count += 1;
                }
            }
            if count > 0 {
                (sum / count as f64) as Real
            } else {
                0.01
            }
        };
        let grid = Grid::new(&positions, mean_edge.max(1.0e-4));
        let tol = mirror_tolerance_m.max(0.0);
        let mirror = (0..n)
            .map(|i| {
                let m = positions[i] * Vec3::new(-1.0, 1.0, 1.0);
                let mut best: Option<(u32, Real)> = None;
                grid.near(&positions, m, tol, |j| {
                    let d = positions[j as usize].distance(m);
                    if d <= tol && best.is_none_or(|(b, bd)| d < bd || (d == bd && j < b)) {
                        best = Some((j, d));
                    }
                });
                best.map(|(j, _)| j)
            })
            .collect();
        let picker = TriMesh::with_flags(
            positions.clone(),
            mesh.indices.clone(),
            TriMeshFlags::empty(),
        )
        .ok();
        Self {
            positions,
            group,
            group_start,
            group_vertices,
            neighbour_start,
            neighbours,
            mirror,
            grid,
            picker,
        }
    }

    /// Number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.positions.len()
    }

    /// The painted positions (m).
    pub fn positions(&self) -> &[Vec3] {
        &self.positions
    }

    /// The vertex closest to vertex `i`'s mirror image in `x = 0`, if within the tolerance.
    pub fn mirror_of(&self, i: u32) -> Option<u32> {
        self.mirror.get(i as usize).copied().flatten()
    }

    /// The first point where the ray `origin + t·dir` (m; `t ≥ 0`, `dir` need not be unit)
    /// meets the mesh, from either side.
    pub fn ray_cast(&self, origin: Vec3, dir: Vec3) -> Option<Hit> {
        let picker = self.picker.as_ref()?;
        let len = dir.length();
        if !(origin.is_finite() && len.is_finite() && len > 0.0) {
            return None;
        }
        let dir = dir / len;
        let hit = picker.cast_local_ray_and_get_normal(&Ray::new(origin, dir), Real::MAX, false)?;
        let tri = picker.indices().get(hit.subshape as usize)?;
        let point = origin + dir * hit.time_of_impact;
        let vertex = tri.iter().copied().min_by(|&a, &b| {
            let da = self.positions[a as usize].distance_squared(point);
            let db = self.positions[b as usize].distance_squared(point);
            da.total_cmp(&db).then(a.cmp(&b))
        })?;
        Some(Hit {
            point_m: point,
            distance_m: hit.time_of_impact,
            triangle: hit.subshape,
            vertex,
        })
    }

    /// The vertices within the brush at `centre` (m) and their falloff factor times the
    /// strength, mirrored when the brush asks for it (the larger factor wins where a vertex is
    /// reached twice). Sorted by vertex.
    pub fn dab_weights(&self, brush: &Brush, centre: Vec3) -> Vec<(u32, Real)> {
        let mut w: HashMap<u32, Real> = HashMap::new();
        self.grid
            .near(&self.positions, centre, brush.radius_m, |i| {
                let f = brush
                    .falloff
                    .weight(self.positions[i as usize].distance(centre), brush.radius_m)
                    * brush.strength;
                if f > 0.0 {
                    let e = w.entry(i).or_insert(0.0);
                    *e = e.max(f);
                }
            });
        if brush.mirror_x {
            let direct: Vec<(u32, Real)> = w.iter().map(|(&i, &f)| (i, f)).collect();
            for (i, f) in direct {
                if let Some(m) = self.mirror_of(i) {
                    let e = w.entry(m).or_insert(0.0);
                    *e = e.max(f);
                }
            }
        }
        let mut out: Vec<(u32, Real)> = w.into_iter().collect();
        out.sort_unstable_by_key(|&(i, _)| i);
        out
    }

    /// The vertices connected to `seed` through the mesh (across seams), sorted.
    pub fn connected(&self, seed: u32) -> Vec<u32> {
        let groups = self.group_start.len() - 1;
        let mut seen = vec![false; groups];
        let mut queue = VecDeque::new();
        let g0 = self.group[seed as usize];
        seen[g0 as usize] = true;
        queue.push_back(g0);
        let mut out = Vec::new();
        while let Some(g) = queue.pop_front() {
            out.extend_from_slice(self.members(g));
            for &h in self.neighbours_of(g) {
                if !seen[h as usize] {
                    seen[h as usize] = true;
                    queue.push_back(h);
                }
            }
        }
        out.sort_unstable();
        out
    }

    fn members(&self, g: u32) -> &[u32] {
        let g = g as usize;
        &self.group_vertices[self.group_start[g] as usize..self.group_start[g + 1] as usize]
    }

    fn neighbours_of(&self, g: u32) -> &[u32] {
        let g = g as usize;
        &self.neighbours[self.neighbour_start[g] as usize..self.neighbour_start[g + 1] as usize]
    }

    /// The mean of vertex `i`'s neighbours in `map` (each neighbouring seam group counted once,
    /// by its first vertex), written as `v + Σ(v_j − v)/k` so that a constant map gives back
    /// exactly its value; `v` itself when the vertex has no neighbour.
    fn neighbour_mean(&self, map: &[Real], i: u32) -> Real {
        let v = map[i as usize];
        let nb = self.neighbours_of(self.group[i as usize]);
        if nb.is_empty() {
            return v;
        }
        let sum: Real = nb
            .iter()
            .map(|&h| map[self.members(h)[0] as usize] - v)
            .sum();
        v + sum / nb.len() as Real
    }

    fn check(&self, maps: &VertexMaps) -> Result<(), BrushError> {
        if maps.len() != self.positions.len() {
            return Err(BrushError::Mismatch {
                maps: maps.len(),
                mesh: self.positions.len(),
            });
        }
        Ok(())
    }
}

/// Compressed rows: `start` (len `rows + 1`) and the values of `(row, value)` pairs, in the
/// order given within each row.
fn csr(rows: usize, pairs: impl Iterator<Item = (u32, u32)>) -> (Vec<u32>, Vec<u32>) {
    let pairs: Vec<(u32, u32)> = pairs.collect();
    let mut start = vec![0u32; rows + 1];
    for &(r, _) in &pairs {
        start[r as usize + 1] += 1;
    }
    for r in 0..rows {
        start[r + 1] += start[r];
    }
    let mut fill = start.clone();
    let mut values = vec![0u32; pairs.len()];
    for (r, v) in pairs {
        values[fill[r as usize] as usize] = v;
        fill[r as usize] += 1;
    }
    (start, values)
}

/// The new value of `v` under `mode` with factor `f` (falloff × strength), clamped to `range`.
fn apply(
    mode: BrushMode,
    v: Real,
    f: Real,
    value: Real,
    mean: Real,
    (lo, hi): (Real, Real),
) -> Real {
    let out = match mode {
        BrushMode::Add => v + f * value,
        BrushMode::Subtract => v - f * value,
        BrushMode::Replace => {
            if f >= 1.0 {
                value
            } else {
                v + f * (value - v)
            }
        }
        BrushMode::Smooth => v + f * (mean - v),
    };
    out.clamp(lo, hi)
}

/// One stroke on one map: any number of dabs and fills, remembered so that the whole stroke
/// undoes as one [`MapEdit`].
#[derive(Clone, Debug)]
pub struct Stroke {
    kind: MapKind,
    /// The value of each touched vertex before the stroke.
    before: HashMap<u32, Real>,
}

impl Stroke {
    /// Starts a stroke on map `kind`.
    pub fn new(kind: MapKind) -> Self {
        Self {
            kind,
            before: HashMap::new(),
        }
    }

    /// The map this stroke paints.
    pub fn kind(&self) -> MapKind {
        self.kind
    }

    /// One dab of `brush` centred at `centre` (m); returns how many values changed.
    pub fn dab(
        &mut self,
        mesh: &PaintMesh,
        maps: &mut VertexMaps,
        brush: &Brush,
        centre: Vec3,
    ) -> Result<usize, BrushError> {
        brush.validate()?;
        mesh.check(maps)?;
        if !centre.is_finite() {
            return Err(BrushError::Centre(centre));
        }
        let weights = mesh.dab_weights(brush, centre);
        Ok(self.apply_weights(mesh, maps, brush, &weights))
    }

    /// Flood fill: the brush's mode at its strength (no falloff) over every vertex connected
    /// to `seed` through the mesh, and, with X-mirror, over the region of `seed`'s mirror
    /// vertex too; returns how many values changed.
    pub fn flood(
        &mut self,
        mesh: &PaintMesh,
        maps: &mut VertexMaps,
        brush: &Brush,
        seed: u32,
    ) -> Result<usize, BrushError> {
        brush.validate()?;
        mesh.check(maps)?;
        if seed as usize >= mesh.vertex_count() {
            return Err(BrushError::Vertex {
                vertex: seed,
                count: mesh.vertex_count(),
            });
        }
        let mut region = mesh.connected(seed);
        if brush.mirror_x {
            if let Some(m) = mesh.mirror_of(seed) {
                if region.binary_search(&m).is_err() {
                    region.extend(mesh.connected(m));
                    region.sort_unstable();
                }
            }
        }
        let weights: Vec<(u32, Real)> = region.into_iter().map(|i| (i, brush.strength)).collect();
        Ok(self.apply_weights(mesh, maps, brush, &weights))
    }

    fn apply_weights(
        &mut self,
        mesh: &PaintMesh,
        maps: &mut VertexMaps,
        brush: &Brush,
        weights: &[(u32, Real)],
    ) -> usize {
        let range = self.kind.range();
        let map = maps.get_mut(self.kind);
        // Jacobi: every new value from the values before this dab.
        let new: Vec<Real> = weights
            .iter()
            .map(|&(i, f)| {
                let v = map[i as usize];
                let mean = if brush.mode == BrushMode::Smooth {
                    mesh.neighbour_mean(map, i)
                } else {
                    v
                };
                apply(brush.mode, v, f, brush.value, mean, range)
            })
            .collect();
        let mut changed = 0;
        for (&(i, _), v) in weights.iter().zip(new) {
            let old = map[i as usize];
            if old.to_bits() != v.to_bits() {
                self.before.entry(i).or_insert(old);
                map[i as usize] = v;
                changed += 1;
            }
        }
        changed
    }

    /// Ends the stroke: the edit that undoes and redoes it on `maps` (the maps it painted).
    pub fn finish(self, maps: &VertexMaps) -> MapEdit {
        let map = maps.get(self.kind);
        let mut entries: Vec<(u32, Real)> = self
            .before
            .into_iter()
            .filter(|&(i, b)| map[i as usize].to_bits() != b.to_bits())
            .collect();
        entries.sort_unstable_by_key(|e| e.0);
        MapEdit {
            kind: self.kind,
            after: entries.iter().map(|&(i, _)| map[i as usize]).collect(),
            vertices: entries.iter().map(|e| e.0).collect(),
            before: entries.into_iter().map(|e| e.1).collect(),
        }
    }
}

/// What a stroke changed on one map: the vertices, and their values before and after, so it
/// can be undone and redone exactly (bitwise).
#[derive(Clone, Debug, PartialEq)]
pub struct MapEdit {
    /// The map.
    pub kind: MapKind,
    /// The changed vertices, ascending.
    pub vertices: Vec<u32>,
    /// Their values before the stroke.
    pub before: Vec<Real>,
    /// Their values after the stroke.
    pub after: Vec<Real>,
}

impl MapEdit {
    /// Whether the stroke changed nothing.
    pub fn is_empty(&self) -> bool {
        self.vertices.is_empty()
    }

    /// Puts the values before the stroke back.
    pub fn undo(&self, maps: &mut VertexMaps) {
        self.write(maps, &self.before);
    }

    /// Puts the values after the stroke back.
    pub fn redo(&self, maps: &mut VertexMaps) {
        self.write(maps, &self.after);
    }

    fn write(&self, maps: &mut VertexMaps, values: &[Real]) {
        let map = maps.get_mut(self.kind);
        for (&i, &v) in self.vertices.iter().zip(values) {
            if let Some(slot) = map.get_mut(i as usize) {
                *slot = v;
            }
        }
    }
}

/// Undo and redo of strokes on one garment's maps.
#[derive(Clone, Debug, Default)]
pub struct History {
    undo: Vec<MapEdit>,
    redo: Vec<MapEdit>,
}

impl History {
    /// Records a finished stroke (empty ones are dropped); clears the redo list.
    pub fn push(&mut self, edit: MapEdit) {
        if !edit.is_empty() {
            self.undo.push(edit);
            self.redo.clear();
        }
    }

    /// Undoes the last stroke; returns whether there was one.
    pub fn undo(&mut self, maps: &mut VertexMaps) -> bool {
        match self.undo.pop() {
            Some(e) => {
                e.undo(maps);
                self.redo.push(e);
                true
            }
            None => false,
        }
    }

    /// Redoes the last undone stroke; returns whether there was one.
    pub fn redo(&mut self, maps: &mut VertexMaps) -> bool {
        match self.redo.pop() {
            Some(e) => {
                e.redo(maps);
                self.undo.push(e);
                true
            }
            None => false,
        }
    }
}
