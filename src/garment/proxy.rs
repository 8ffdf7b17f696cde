//! The simulation proxy: a coarser version of a garment's render mesh.
//!
//! Production garments are dense render meshes (tens of thousands of vertices, split along UV
//! seams). The cloth is simulated on a *proxy* with a vertex count the artist picks, and the
//! render mesh follows it through a [`Binding`](crate::garment::binding::Binding).
//!
//! [`build_proxy`] runs four steps:
//!
//! 1. **Weld** the render mesh ([`mesh::weld`](crate::mesh::weld)): seam duplicates become one
//!    vertex, so the proxy has no cut along UV seams. If the welded mesh already has no more
//!    vertices than the target, it *is* the proxy and the other steps are skipped.
//! 2. **Simplify** each connected component (garment piece) on its own with meshoptimizer's
//!    edge-collapse simplifier (the `meshopt` crate, option `Regularize` for even triangle sizes).
//!    Each piece gets a share of the target triangle count proportional to its area, so pieces
//!    get the same density and are never merged: an edge collapse only joins vertices that
//!    already share an edge. The target triangle count is corrected a few times until the vertex
//!    count is within 2 % of the target.
//! 3. **Keep the boundaries.** meshoptimizer collapses a border vertex only along the border,
//!    onto a border neighbour, so hems and cuffs stay where they are; the corners of the outline
//!    (border vertices where the border turns by more than [`ProxyOptions::corner_angle_deg`])
//!    are locked, so the outline keeps its shape. [`ProxyOptions::lock_border`] locks every
//!    border vertex instead (meshoptimizer's `LockBorder`): the outline is then exact, but the
//!    border keeps the render mesh's spacing and its triangles become slivers.
//! 4. **Improve the triangles**, a few passes of:
//!    - edge flips that raise the smaller of the two triangles' minimum angles, only between
//!      nearly coplanar triangles (dihedral below 20°), so the shape does not change;
//!    - tangential relaxation of interior vertices: each moves halfway towards the
//!      area-weighted centroid of its triangles, tangentially (the normal part of the move is
//!      removed), then is projected back onto the welded render surface; a move is kept only if
//!      it does not lower the minimum angle around the vertex (below 35°) or fold a triangle.
//!
//!    Boundary vertices are not moved. The improved mesh is kept only if its minimum angle is
//!    not lower than the simplified one's.
//!
//! ```text
//! target from an edge length L (m), for a mesh of area A (m²) and boundary length P (m):
//!     F ≈ A / (√3/4 · L²)        triangles (equilateral, edge L)
//!     V ≈ F/2 + P/(2L)           vertices (Euler: V − E + F = χ, 3F = 2E − B, B = P/L)
//! aspect ratio of a triangle with longest edge ℓ_max, perimeter P_t and area A_t:
//!     ℓ_max · P_t / (4√3 · A_t)  = ℓ_max / (2√3 · r_in)   (1 for an equilateral triangle)
//! ```
//!
//! The proxy has no UVs when it was simplified (seam vertices have more than one UV); its
//! normals are recomputed.

use std::collections::{HashMap, HashSet};
use std::fmt;

use meshopt::SimplifyOptions;
use parry3d::query::PointQuery;
use parry3d::shape::{Polyline, TriMesh, TriMeshFlags};

use crate::math::{triangle_area, Real, Vec3, DEGENERATE_AREA_M2};
use crate::mesh::{weld, Mesh, MeshError, Topology};

/// Weld tolerance used by [`build_proxy`] (m): the scene file's default.
pub const DEFAULT_WELD_TOLERANCE_M: Real = 1.0e-5;

/// Fewest vertices a proxy may be asked for: one triangle.
pub const MIN_TARGET_VERTICES: usize = 3;

/// How close the vertex count must come to the target before the search stops (relative).
const TARGET_TOLERANCE: f64 = 0.02;

/// Most simplification runs spent on reaching the target vertex count.
const MAX_TARGET_ROUNDS: usize = 6;

/// Largest dihedral angle across which an edge is flipped (cosine of 20°).
const FLIP_MAX_DIHEDRAL_COS: Real = 0.939_692_6;

/// A flip must raise the minimum angle of its two triangles by at least this much (rad).
const FLIP_MIN_GAIN_RAD: Real = 1.0e-3;

/// Relaxation may lower the minimum angle around a vertex, but never below this (rad, 35°).
const RELAX_KEEP_ANGLE_RAD: Real = 0.610_865_2;

/// Fraction of the way to the centroid that one relaxation step moves.
const RELAX_STEP: Real = 0.5;

/// What the proxy should be reduced to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ProxyTarget {
    /// About this many vertices (at least [`MIN_TARGET_VERTICES`]).
    Vertices(usize),
    /// About this mean edge length (m), turned into a vertex count from the welded mesh's area
    /// and boundary length (see the module docs).
    EdgeLength(Real),
}

/// Settings of [`build_proxy_with`]; [`Default`] gives what [`build_proxy`] uses.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProxyOptions {
    /// Vertices closer than this are welded before simplifying (m).
    pub weld_tolerance_m: Real,
    /// Lock every border vertex (meshoptimizer's `LockBorder`) instead of only the outline's
    /// corners.
    pub lock_border: bool,
    /// A border vertex where the border turns by more than this angle is a corner and is
    /// locked (degrees).
    pub corner_angle_deg: Real,
    /// Passes of edge flips and tangential relaxation after simplifying (0 turns them off).
    pub improve_passes: u32,
}

impl Default for ProxyOptions {
    fn default() -> Self {
        Self {
            weld_tolerance_m: DEFAULT_WELD_TOLERANCE_M,
            lock_border: false,
            corner_angle_deg: 30.0,
            improve_passes: 8,
        }
    }
}

/// Triangle-shape figures of a mesh, as [`ProxyQuality::measure`] finds them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProxyQuality {
    /// Vertices used by at least one triangle.
    pub vertices: usize,
    /// Triangles.
    pub triangles: usize,
    /// Connected components (garment pieces), through shared vertices.
    pub components: usize,
    /// Boundary edges (used by exactly one triangle).
    pub boundary_edges: usize,
    /// Triangles with an area below [`DEGENERATE_AREA_M2`] (m²); left out of the figures below.
    pub degenerate_triangles: usize,
    /// Smallest interior angle over all triangles (degrees; 60 is the best possible).
    pub min_angle_deg: Real,
    /// Mean over the triangles of each triangle's smallest angle (degrees).
    pub mean_min_angle_deg: Real,
    /// Largest aspect ratio, longest edge over 2√3 × inradius (1 for an equilateral triangle;
    /// dimensionless).
    pub max_aspect_ratio: Real,
    /// Mean length of the unique edges (m).
    pub mean_edge_length_m: Real,
    /// Total area (m²).
    pub area_m2: Real,
    /// Total length of the boundary edges (m).
    pub boundary_length_m: Real,
}

impl ProxyQuality {
    /// Measures `mesh`. Triangles with an index out of range are counted as degenerate.
    pub fn measure(mesh: &Mesh) -> Self {
        let n = mesh.positions.len();
        let valid: Vec<[u32; 3]> = mesh
            .indices
            .iter()
            .copied()
            .filter(|t| t.iter().all(|&i| (i as usize) < n))
            .collect();
        let invalid = mesh.indices.len() - valid.len();
        let mut used = vec![false; n];
        let mut degenerate = invalid;
        let mut min_angle = Real::INFINITY;
        let mut sum_min_angle = 0.0f64;
        let mut shaped = 0usize;
        let mut max_aspect: Real = 0.0;
        let mut area = 0.0f64;
        for tri in &valid {
            for &i in tri {
                used[i as usize] = true;
            }
            let [a, b, c] = tri.map(|i| mesh.positions[i as usize]);
            let a_t = triangle_area(a, b, c);
            area += f64::from(a_t);
            if a_t < DEGENERATE_AREA_M2 {
                degenerate += 1;
                continue;
            }
            let m = min_angle_rad(a, b, c);
            min_angle = min_angle.min(m);
            sum_min_angle += f64::from(m);
            shaped += 1;
            max_aspect = max_aspect.max(aspect_ratio(a, b, c, a_t));
        }
        let valid_mesh = Mesh::new("", Vec::new(), valid);
        let topo = Topology::new(&valid_mesh);
        let edge_len = |e: &[u32; 2]| {
            f64::from(mesh.positions[e[0] as usize].distance(mesh.positions[e[1] as usize]))
        };
        let total_edge: f64 = topo.edges.iter().map(edge_len).sum();
        let boundary: f64 = topo
            .boundary_edges
            .iter()
            .map(|&e| edge_len(&topo.edges[e as usize]))
            .sum();
        let (_, components) = component_labels(n, &valid_mesh.indices);
        Self {
            vertices: used.iter().filter(|u| **u).count(),
            triangles: mesh.indices.len(),
            components,
            boundary_edges: topo.boundary_edges.len(),
            degenerate_triangles: degenerate,
            min_angle_deg: if shaped > 0 {
                min_angle.to_degrees()
            } else {
                0.0
            },
            mean_min_angle_deg: if shaped > 0 {
                (sum_min_angle / shaped as f64).to_degrees() as Real
            } else {
                0.0
            },
            max_aspect_ratio: if shaped > 0 {
                max_aspect
            } else {
                Real::INFINITY
            },
            mean_edge_length_m: if topo.edges.is_empty() {
                0.0
            } else {
                (total_edge / topo.edges.len() as f64) as Real
            },
            area_m2: area as Real,
            boundary_length_m: boundary as Real,
        }
    }
}

impl fmt::Display for ProxyQuality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} vertices, {} triangles, {} piece{}; min angle {:.1}° (mean of minima {:.1}°), \
             max aspect ratio {:.2}, mean edge {:.2} mm",
            self.vertices,
            self.triangles,
            self.components,
            if self.components == 1 { "" } else { "s" },
            self.min_angle_deg,
            self.mean_min_angle_deg,
            self.max_aspect_ratio,
            self.mean_edge_length_m * 1000.0,
        )?;
        if self.degenerate_triangles > 0 {
            write!(f, ", {} degenerate triangles", self.degenerate_triangles)?;
        }
        Ok(())
    }
}

/// A simulation proxy and how it was made.
#[derive(Clone, Debug)]
pub struct Proxy {
    /// The proxy mesh (m), welded, with normals; UVs only when it is the welded render mesh.
    pub mesh: Mesh,
    /// Triangle quality of [`Proxy::mesh`].
    pub quality: ProxyQuality,
    /// Triangle quality straight after simplification, before flips and relaxation (equal to
    /// `quality` when nothing was simplified).
    pub simplified_quality: ProxyQuality,
    /// Vertices of the welded render mesh.
    pub welded_vertices: usize,
    /// Whether the mesh was simplified (`false`: the proxy is the welded render mesh).
    pub simplified: bool,
}

/// Why a proxy could not be built.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ProxyError {
    /// The render mesh is invalid (empty, bad indices, non-finite positions).
    #[error("render mesh: {0}")]
    Mesh(#[from] MeshError),
    /// Every triangle has zero area once seams are welded.
    #[error(
        "render mesh '{0}': every triangle has zero area after welding; check the export scale"
    )]
    AllDegenerate(String),
    /// The target vertex count is below [`MIN_TARGET_VERTICES`].
    #[error("proxy target of {0} vertices is too small; ask for at least 3")]
    TargetTooSmall(usize),
    /// The target edge length is not a positive finite number of metres.
    #[error("proxy target edge length {0} m is not a positive finite length")]
    InvalidEdgeLength(Real),
    /// Simplification left no triangle (should not happen; report the mesh).
    #[error("simplifying render mesh '{0}' left no triangle")]
    NothingLeft(String),
}

/// Builds the simulation proxy of `render` with [`ProxyOptions::default`].
pub fn build_proxy(render: &Mesh, target: ProxyTarget) -> Result<Proxy, ProxyError> {
    build_proxy_with(render, target, &ProxyOptions::default())
}

/// Builds the simulation proxy of `render` (see the module docs for the steps).
pub fn build_proxy_with(
    render: &Mesh,
    target: ProxyTarget,
    options: &ProxyOptions,
) -> Result<Proxy, ProxyError> {
    render.validate()?;
    match target {
        ProxyTarget::Vertices(n) if n < MIN_TARGET_VERTICES => {
            return Err(ProxyError::TargetTooSmall(n))
        }
        ProxyTarget::EdgeLength(l) if !(l.is_finite() && l > 0.0) => {
            return Err(ProxyError::InvalidEdgeLength(l))
        }
        _ => {}
    }
    let welded = weld(render, options.weld_tolerance_m).mesh;
    let welded_quality = ProxyQuality::measure(&welded);
    if welded.indices.is_empty() || welded_quality.degenerate_triangles == welded.indices.len() {
        return Err(ProxyError::AllDegenerate(render.name.clone()));
    }
    let target_vertices = match target {
        ProxyTarget::Vertices(n) => n,
        ProxyTarget::EdgeLength(l) => vertices_for_edge_length(&welded_quality, l),
    };
    if welded_quality.vertices <= target_vertices {
        let mut mesh = welded;
        if mesh.normals.is_none() {
            mesh.compute_normals();
        }
        return Ok(Proxy {
            mesh,
            quality: welded_quality,
            simplified_quality: welded_quality,
            welded_vertices: welded_quality.vertices,
            simplified: false,
        });
    }

    let simplified = simplify_to(&welded, target_vertices, options);
    if simplified.indices.is_empty() {
        return Err(ProxyError::NothingLeft(render.name.clone()));
    }
    let simplified_quality = ProxyQuality::measure(&simplified);
    let mut mesh = simplified.clone();
    if options.improve_passes > 0 {
        improve(
            &mut mesh,
            &welded,
            options.improve_passes,
            options.corner_angle_deg,
        );
    }
    let mut quality = ProxyQuality::measure(&mesh);
    if quality.min_angle_deg < simplified_quality.min_angle_deg {
        mesh = simplified;
        quality = simplified_quality;
    }
    mesh.name = format!("{} (proxy)", render.name);
    mesh.compute_normals();
    Ok(Proxy {
        mesh,
        quality,
        simplified_quality,
        welded_vertices: welded_quality.vertices,
        simplified: true,
    })
}

/// The vertex count that gives a mean edge length of about `edge_m` (module docs).
fn vertices_for_edge_length(q: &ProxyQuality, edge_m: Real) -> usize {
    let l = f64::from(edge_m);
    let faces = f64::from(q.area_m2) / (3.0f64.sqrt() / 4.0 * l * l);
    let v = faces / 2.0 + f64::from(q.boundary_length_m) / (2.0 * l);
    // `as` saturates: a tiny edge length asks for "everything".
    (v.round() as usize).max(MIN_TARGET_VERTICES)
}

/// The edge length (m) that gives about `vertices` vertices: the inverse of
/// [`vertices_for_edge_length`], solving `V = 2A/(√3·L²) + P/(2L)` for `1/L`.
fn edge_length_for_vertices(q: &ProxyQuality, vertices: usize) -> Real {
    let (a, p, v) = (
        f64::from(q.area_m2) * 2.0 / 3.0f64.sqrt(),
        f64::from(q.boundary_length_m) / 2.0,
        vertices as f64,
    );
    if a <= 0.0 {
        return 0.0;
    }
    let inv = (-p + (p * p + 4.0 * a * v).sqrt()) / (2.0 * a);
    if inv > 0.0 {
        (1.0 / inv) as Real
    } else {
        0.0
    }
}

/// Labels each vertex with its connected component through shared triangles; unused vertices
/// get `u32::MAX`. Returns the labels (numbered in order of first vertex) and the count.
pub(crate) fn component_labels(vertex_count: usize, indices: &[[u32; 3]]) -> (Vec<u32>, usize) {
    let mut parent: Vec<u32> = (0..vertex_count as u32).collect();
    fn find(parent: &mut [u32], mut x: u32) -> u32 {
        while parent[x as usize] != x {
            let up = parent[parent[x as usize] as usize];
            parent[x as usize] = up;
            x = up;
        }
        x
    }
    let mut used = vec![false; vertex_count];
    for t in indices {
        for &i in t {
            used[i as usize] = true;
        }
        let mut r0 = find(&mut parent, t[0]);
        for &i in &t[1..] {
            let r = find(&mut parent, i);
            if r != r0 {
                // Union towards the smaller root.
                let (lo, hi) = (r.min(r0), r.max(r0));
                parent[hi as usize] = lo;
                r0 = lo;
            }
        }
    }
    let mut label = vec![u32::MAX; vertex_count];
    let mut root_label: HashMap<u32, u32> = HashMap::new();
    for v in 0..vertex_count {
        if !used[v] {
            continue;
        }
        let r = find(&mut parent, v as u32);
        let next = root_label.len() as u32;
        label[v] = *root_label.entry(r).or_insert(next);
    }
    let count = root_label.len();
    (label, count)
}

/// One garment piece, with its own compact vertex numbering.
struct Piece {
    /// Welded vertex of each local vertex.
    vertices: Vec<u32>,
    /// Local positions, as meshoptimizer reads them.
    positions: Vec<[f32; 3]>,
    /// Local triangles, flattened.
    indices: Vec<u32>,
    /// Local vertices that meshoptimizer must not move.
    locked: Vec<bool>,
    /// Share of the total area.
    area_share: f64,
}

/// Simplifies `welded` piece by piece to about `target_vertices` vertices; the result is
/// compacted (only used vertices, in welded order).
fn simplify_to(welded: &Mesh, target_vertices: usize, options: &ProxyOptions) -> Mesh {
    let quality = ProxyQuality::measure(welded);
    let spacing_m = if options.lock_border {
        0.0
    } else {
        edge_length_for_vertices(&quality, target_vertices)
    };
    let locked = locked_vertices(welded, options.corner_angle_deg, spacing_m);
    let (labels, count) = component_labels(welded.positions.len(), &welded.indices);
    let mut pieces: Vec<Piece> = (0..count)
        .map(|_| Piece {
            vertices: Vec::new(),
            positions: Vec::new(),
            indices: Vec::new(),
            locked: Vec::new(),
            area_share: 0.0,
        })
        .collect();
    let mut local = vec![u32::MAX; welded.positions.len()];
    for (v, &c) in labels.iter().enumerate() {
        if c == u32::MAX {
            continue;
        }
        let piece = &mut pieces[c as usize];
        local[v] = piece.vertices.len() as u32;
        piece.vertices.push(v as u32);
        piece.positions.push(welded.positions[v].to_array());
        piece.locked.push(locked[v]);
    }
    let mut total_area = 0.0f64;
    for t in &welded.indices {
        let piece = &mut pieces[labels[t[0] as usize] as usize];
        piece.indices.extend(t.iter().map(|&i| local[i as usize]));
        let [a, b, c] = t.map(|i| welded.positions[i as usize]);
        let area = f64::from(triangle_area(a, b, c));
        piece.area_share += area;
        total_area += area;
    }
    for p in &mut pieces {
        p.area_share = if total_area > 0.0 {
            p.area_share / total_area
        } else {
            1.0 / count as f64
        };
    }

    let mut flags = SimplifyOptions::Regularize;
    if options.lock_border {
        flags |= SimplifyOptions::LockBorder;
    }
    let run = |total_triangles: f64| -> Vec<Vec<u32>> {
        pieces
            .iter()
            .map(|p| {
                // A sparse piece beside a dense one can be asked for more triangles than it has
                // (meshoptimizer aborts the process on a target above the input).
                let triangles = ((total_triangles * p.area_share).round().max(1.0) as usize)
                    .min(p.indices.len() / 3);
                meshopt::simplify_with_locks_decoder(
                    &p.indices,
                    &p.positions,
                    &p.locked,
                    triangles * 3,
                    // No error limit: the count decides (relative to the piece's extent).
                    1.0e3,
                    flags,
                    None,
                )
            })
            .collect()
    };
    let used_vertices = |result: &[Vec<u32>]| -> usize {
        result
            .iter()
            .zip(&pieces)
            .map(|(r, p)| {
                let mut seen = vec![false; p.vertices.len()];
                r.iter().for_each(|&i| seen[i as usize] = true);
                seen.iter().filter(|s| **s).count()
            })
            .sum()
    };

    // V ≈ F/2 + B/2: start from the welded mesh's triangle-per-vertex ratio and correct it.
    let target = target_vertices as f64;
    let welded_vertices = labels.iter().filter(|l| **l != u32::MAX).count().max(1) as f64;
    let mut triangles = welded.indices.len() as f64 * target / welded_vertices;
    let mut best: Option<(f64, Vec<Vec<u32>>)> = None;
    for _ in 0..MAX_TARGET_ROUNDS {
        let result = run(triangles);
        let got = used_vertices(&result) as f64;
        let miss = (got - target).abs() / target;
        let better = best.as_ref().is_none_or(|(m, _)| miss < *m);
        if better {
            best = Some((miss, result));
        }
        if miss <= TARGET_TOLERANCE || got <= 0.0 {
            break;
        }
        triangles *= target / got;
    }
    let result = best.map(|(_, r)| r).unwrap_or_default();

    // Compact into one mesh, vertices in welded order so the result is deterministic.
    let mut keep = vec![false; welded.positions.len()];
    for (r, p) in result.iter().zip(&pieces) {
        for &i in r {
            keep[p.vertices[i as usize] as usize] = true;
        }
    }
    let mut new_index = vec![u32::MAX; welded.positions.len()];
    let mut positions = Vec::new();
    for (v, k) in keep.iter().enumerate() {
        if *k {
            new_index[v] = positions.len() as u32;
            positions.push(welded.positions[v]);
        }
    }
    let mut indices = Vec::new();
    for (r, p) in result.iter().zip(&pieces) {
        for t in r.chunks_exact(3) {
            indices.push([t[0], t[1], t[2]].map(|i| new_index[p.vertices[i as usize] as usize]));
        }
    }
    Mesh::new(welded.name.clone(), positions, indices)
}

/// Vertices that simplification must keep: the outline's corners (the border turns by more than
/// `corner_angle_deg`), vertices on more or fewer than two border edges (pinched borders) or on
/// non-manifold edges, and border vertices spaced about `spacing_m` (m) apart along each stretch
/// of border between corners.
///
/// The last keep the border's vertices evenly spaced at the proxy's edge length: left alone,
/// meshoptimizer collapses straight borders unevenly (every collinear collapse costs nothing),
/// and the long border edges that remain make slivers.
fn locked_vertices(mesh: &Mesh, corner_angle_deg: Real, spacing_m: Real) -> Vec<bool> {
    let topo = Topology::new(mesh);
    let n = mesh.positions.len();
    let mut locked = vec![false; n];
    let mut border_neighbours: Vec<Vec<u32>> = vec![Vec::new(); n];
    for &e in &topo.boundary_edges {
        let [a, b] = topo.edges[e as usize];
        border_neighbours[a as usize].push(b);
        border_neighbours[b as usize].push(a);
    }
    for &e in &topo.non_manifold_edges {
        for v in topo.edges[e as usize] {
            locked[v as usize] = true;
        }
    }
    let cos_corner = corner_angle_deg.to_radians().cos();
    for (v, nb) in border_neighbours.iter().enumerate() {
        match nb.as_slice() {
            [] => {}
            [a, b] => {
                let p = mesh.positions[v];
                let into = (p - mesh.positions[*a as usize]).normalize_or_zero();
                let out = (mesh.positions[*b as usize] - p).normalize_or_zero();
                if into.dot(out) < cos_corner {
                    locked[v] = true;
                }
            }
            _ => locked[v] = true,
        }
    }
    if !(spacing_m.is_finite() && spacing_m > 0.0) {
        return locked;
    }
    // Walk each stretch of border from a locked vertex to the next; a closed loop with no
    // locked vertex starts at its lowest-numbered vertex.
    let mut visited = vec![false; n];
    let starts: Vec<u32> = (0..n as u32)
        .filter(|&v| locked[v as usize] && !border_neighbours[v as usize].is_empty())
        .chain((0..n as u32).filter(|&v| border_neighbours[v as usize].len() == 2))
        .collect();
    for start in starts {
        if visited[start as usize] && !locked[start as usize] {
            continue;
        }
        locked[start as usize] = true;
        visited[start as usize] = true;
        for &first in &border_neighbours[start as usize] {
            if visited[first as usize] && !locked[first as usize] {
                continue;
            }
            // The stretch start → … → the next locked vertex, with arc lengths.
            let mut chain = vec![(start, 0.0 as Real)];
            let (mut prev, mut cur) = (start, first);
            let mut length = 0.0;
            loop {
                length += mesh.positions[prev as usize].distance(mesh.positions[cur as usize]);
                chain.push((cur, length));
                if locked[cur as usize] || visited[cur as usize] {
                    break;
                }
                visited[cur as usize] = true;
                let nb = &border_neighbours[cur as usize];
                let Some(&next) = nb.iter().find(|&&x| x != prev) else {
                    break;
                };
                (prev, cur) = (cur, next);
            }
            let pieces = (length / spacing_m).round().max(1.0) as usize;
            let mut k = 0;
            for i in 1..pieces {
                let at = length * i as Real / pieces as Real;
                while k + 1 < chain.len() && chain[k + 1].1 <= at {
                    k += 1;
                }
                let pick = if k + 1 < chain.len() && chain[k + 1].1 - at < at - chain[k].1 {
                    k + 1
                } else {
                    k
                };
                locked[chain[pick].0 as usize] = true;
            }
        }
    }
    locked
}

/// Smallest interior angle of triangle `abc` (rad).
fn min_angle_rad(a: Vec3, b: Vec3, c: Vec3) -> Real {
    let angle = |p: Vec3, q: Vec3, r: Vec3| {
        let (u, v) = (q - p, r - p);
        u.cross(v).length().atan2(u.dot(v))
    };
    angle(a, b, c).min(angle(b, c, a)).min(angle(c, a, b))
}

/// Longest edge over 2√3 × inradius (1 for an equilateral triangle); `area` in m².
fn aspect_ratio(a: Vec3, b: Vec3, c: Vec3, area: Real) -> Real {
    let (l0, l1, l2) = (a.distance(b), b.distance(c), c.distance(a));
    let longest = l0.max(l1).max(l2);
    longest * (l0 + l1 + l2) / (4.0 * 3.0f32.sqrt() * area)
}

/// Minimum angle of a triangle given by indices into `pos` (rad); 0 when degenerate.
fn tri_min_angle(pos: &[Vec3], t: [u32; 3]) -> Real {
    let [a, b, c] = t.map(|i| pos[i as usize]);
    if triangle_area(a, b, c) < DEGENERATE_AREA_M2 {
        0.0
    } else {
        min_angle_rad(a, b, c)
    }
}

/// Flip passes and tangential relaxation, projected onto `surface` (the welded render mesh)
/// and, for border vertices, onto its border.
fn improve(mesh: &mut Mesh, surface: &Mesh, passes: u32, corner_angle_deg: Real) {
    let Ok(surface_query) = TriMesh::with_flags(
        surface.positions.clone(),
        surface.indices.clone(),
        TriMeshFlags::empty(),
    ) else {
        return;
    };
    let topo = Topology::new(surface);
    let border_segments: Vec<[u32; 2]> = topo
        .boundary_edges
        .iter()
        .map(|&e| topo.edges[e as usize])
        .collect();
    let border_query = (!border_segments.is_empty())
        .then(|| Polyline::new(surface.positions.clone(), Some(border_segments)));
    let roles = vertex_roles(mesh, corner_angle_deg);
    let target = Projection {
        surface: &surface_query,
        border: border_query.as_ref(),
    };
    for _ in 0..passes {
        flip_pass(&mesh.positions, &mut mesh.indices);
        relax_pass(&mut mesh.positions, &mesh.indices, &roles, &target);
    }
    flip_pass(&mesh.positions, &mut mesh.indices);
}

/// Where relaxed vertices are projected back to.
struct Projection<'a> {
    /// The welded render surface.
    surface: &'a TriMesh,
    /// Its border edges, if it has any.
    border: Option<&'a Polyline>,
}

/// How relaxation may move a vertex.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Role {
    /// Inside the surface: moves tangentially, projected onto the surface.
    Interior,
    /// On a smooth stretch of border, between these two border neighbours: slides along the
    /// border, projected onto the original border.
    Border(u32, u32),
    /// A corner of the outline, or on a non-manifold edge: stays.
    Fixed,
}

/// The [`Role`] of each vertex of `mesh`.
fn vertex_roles(mesh: &Mesh, corner_angle_deg: Real) -> Vec<Role> {
    let topo = Topology::new(mesh);
    let n = mesh.positions.len();
    let mut neighbours: Vec<Vec<u32>> = vec![Vec::new(); n];
    for &e in &topo.boundary_edges {
        let [a, b] = topo.edges[e as usize];
        neighbours[a as usize].push(b);
        neighbours[b as usize].push(a);
    }
    let cos_corner = corner_angle_deg.to_radians().cos();
    let mut roles: Vec<Role> = neighbours
        .iter()
        .enumerate()
        .map(|(v, nb)| match nb.as_slice() {
            [] => Role::Interior,
            [a, b] => {
                let p = mesh.positions[v];
                let into = (p - mesh.positions[*a as usize]).normalize_or_zero();
                let out = (mesh.positions[*b as usize] - p).normalize_or_zero();
                if into.dot(out) < cos_corner {
                    Role::Fixed
                } else {
                    Role::Border(*a, *b)
                }
            }
            _ => Role::Fixed,
        })
        .collect();
    for &e in &topo.non_manifold_edges {
        for v in topo.edges[e as usize] {
            roles[v as usize] = Role::Fixed;
        }
    }
    roles
}

/// One pass of minimum-angle-raising edge flips; returns the number of flips.
///
/// The edge `a→b` of triangle `[a, b, c]`, shared with `[b, a, d]`, becomes `c–d`: triangles
/// `[a, d, c]` and `[d, b, c]` (same orientation). A triangle flipped once is not touched again
/// in the same pass, so the edge map stays valid for the others.
fn flip_pass(pos: &[Vec3], tris: &mut [[u32; 3]]) -> usize {
    // Edge (min, max) → triangles using it (`u32::MAX` for none) and how many.
    let mut edge_map: HashMap<[u32; 2], ([u32; 2], u32)> = HashMap::with_capacity(tris.len() * 2);
    for (t, tri) in tris.iter().enumerate() {
        for k in 0..3 {
            let (a, b) = (tri[k], tri[(k + 1) % 3]);
            let entry = edge_map
                .entry([a.min(b), a.max(b)])
                .or_insert(([u32::MAX; 2], 0));
            if entry.1 < 2 {
                entry.0[entry.1 as usize] = t as u32;
            }
            entry.1 += 1;
        }
    }
    let mut touched = vec![false; tris.len()];
    let mut created: HashSet<[u32; 2]> = HashSet::new();
    let mut flips = 0;
    for t0 in 0..tris.len() {
        for k in 0..3 {
            if touched[t0] {
                break;
            }
            let tri = tris[t0];
            let (a, b, c) = (tri[k], tri[(k + 1) % 3], tri[(k + 2) % 3]);
            if a > b {
                continue; // each consistently oriented interior edge is seen once, from a < b
            }
            let Some(&([e0, e1], 2)) = edge_map.get(&[a, b]) else {
                continue;
            };
            let t1 = if e0 as usize == t0 { e1 } else { e0 } as usize;
            if touched[t1] {
                continue;
            }
            let other = tris[t1];
            let Some(j) = (0..3).find(|&j| other[j] == b && other[(j + 1) % 3] == a) else {
                continue; // inconsistent orientation: leave it
            };
            let d = other[(j + 2) % 3];
            let key = [c.min(d), c.max(d)];
            if c == d || edge_map.contains_key(&key) || created.contains(&key) {
                continue;
            }
            let [pa, pb, pc, pd] = [a, b, c, d].map(|i| pos[i as usize]);
            let n0 = (pb - pa).cross(pc - pa);
            let n1 = (pa - pb).cross(pd - pb);
            let (Some(u0), Some(u1)) = (n0.try_normalize(), n1.try_normalize()) else {
                continue;
            };
            if u0.dot(u1) < FLIP_MAX_DIHEDRAL_COS {
                continue;
            }
            let new0 = [a, d, c];
            let new1 = [d, b, c];
            let m0 = (pd - pa).cross(pc - pa);
            let m1 = (pb - pd).cross(pc - pd);
            let avg = n0 + n1;
            if m0.dot(avg) <= 0.0 || m1.dot(avg) <= 0.0 {
                continue;
            }
            let before = tri_min_angle(pos, tri).min(tri_min_angle(pos, other));
            let after = tri_min_angle(pos, new0).min(tri_min_angle(pos, new1));
            if after > before + FLIP_MIN_GAIN_RAD {
                tris[t0] = new0;
                tris[t1] = new1;
                touched[t0] = true;
                touched[t1] = true;
                created.insert(key);
                flips += 1;
            }
        }
    }
    flips
}

/// One Gauss–Seidel pass of tangential, area-weighted relaxation (module docs); returns the
/// number of vertices moved.
fn relax_pass(pos: &mut [Vec3], tris: &[[u32; 3]], roles: &[Role], target: &Projection) -> usize {
    let mut ring: Vec<Vec<u32>> = vec![Vec::new(); pos.len()];
    for (t, tri) in tris.iter().enumerate() {
        for &i in tri {
            ring[i as usize].push(t as u32);
        }
    }
    let mut moved = 0;
    for v in 0..pos.len() {
        if roles[v] == Role::Fixed || ring[v].is_empty() {
            continue;
        }
        let p = pos[v];
        let mut centroid = Vec3::ZERO;
        let mut normal = Vec3::ZERO;
        let mut area = 0.0;
        let mut edge_sum = 0.0;
        let mut local_min = Real::INFINITY;
        for &t in &ring[v] {
            let tri = tris[t as usize];
            let [a, b, c] = tri.map(|i| pos[i as usize]);
            let n = (b - a).cross(c - a);
            let a_t = 0.5 * n.length();
            centroid += (a + b + c) / 3.0 * a_t;
            normal += n;
            area += a_t;
            edge_sum += a.distance(b) + b.distance(c) + c.distance(a);
            local_min = local_min.min(tri_min_angle(pos, tri));
        }
        let mean_edge = edge_sum / (3 * ring[v].len()) as Real;
        let projected = match roles[v] {
            Role::Interior => {
                let Some(normal) = normal.try_normalize() else {
                    continue;
                };
                if area <= 0.0 {
                    continue;
                }
                let step = (centroid / area - p) * RELAX_STEP;
                let guess = p + step - normal * normal.dot(step);
                let q = target.surface.project_local_point(guess, false).point;
                (q.distance(guess) <= 0.5 * mean_edge).then_some(q)
            }
            Role::Border(a, b) => {
                // Towards the middle of its two border neighbours, back onto the border.
                let Some(border) = target.border else {
                    continue;
                };
                let mid = 0.5 * (pos[a as usize] + pos[b as usize]);
                let guess = p + (mid - p) * RELAX_STEP;
                let q = border.project_local_point(guess, false).point;
                (q.distance(guess) <= 0.25 * mean_edge).then_some(q)
            }
            Role::Fixed => None,
        };
        let Some(projected) = projected.filter(|q| q.is_finite()) else {
            continue;
        };
        pos[v] = projected;
        let mut ok = true;
        let mut new_min = Real::INFINITY;
        for &t in &ring[v] {
            let tri = tris[t as usize];
            let [a0, b0, c0] = tri.map(|i| if i as usize == v { p } else { pos[i as usize] });
            let [a, b, c] = tri.map(|i| pos[i as usize]);
            let before = (b0 - a0).cross(c0 - a0);
            let after = (b - a).cross(c - a);
            if after.dot(before) <= 0.0 {
                ok = false;
                break;
            }
            new_min = new_min.min(tri_min_angle(pos, tri));
        }
        if ok && new_min >= local_min.min(RELAX_KEEP_ANGLE_RAD) {
            moved += 1;
        } else {
            pos[v] = p;
        }
    }
    moved
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An `n × n` grid over `size_m` in the XZ plane, offset by `origin`.
    fn grid(n: usize, size_m: Real, origin: Vec3) -> Mesh {
        let mut positions = Vec::new();
        let mut indices = Vec::new();
        for j in 0..n {
            for i in 0..n {
                let s = size_m / (n - 1) as Real;
                positions.push(origin + Vec3::new(i as Real * s, 0.0, j as Real * s));
            }
        }
        for j in 0..n - 1 {
            for i in 0..n - 1 {
                let v = (j * n + i) as u32;
                let n = n as u32;
                indices.push([v, v + n, v + 1]);
                indices.push([v + 1, v + n, v + n + 1]);
            }
        }
        Mesh::new("grid", positions, indices)
    }

    /// A dense piece beside a large sparse one (two triangles with most of the area): the
    /// sparse piece's share of the target exceeds its own triangles, which meshoptimizer
    /// refuses by aborting the process. Each piece is asked for at most what it has.
    #[test]
    fn a_sparse_piece_beside_a_dense_one_is_not_asked_for_more_than_it_has() {
        let dense = grid(30, 0.5, Vec3::ZERO);
        let sparse = grid(2, 1.0, Vec3::new(1.0, 0.0, 0.0));
        let mut m = dense.clone();
        let offset = m.positions.len() as u32;
        m.positions.extend(&sparse.positions);
        m.indices
            .extend(sparse.indices.iter().map(|t| t.map(|i| i + offset)));
        for target in [
            ProxyTarget::Vertices(3),
            ProxyTarget::Vertices(5),
            ProxyTarget::Vertices(200),
            ProxyTarget::EdgeLength(10.0),
        ] {
            let p = build_proxy(&m, target).unwrap();
            assert!(p.mesh.indices.len() >= 2, "{target:?}");
        }
    }

    #[test]
    fn small_mesh_is_its_own_proxy() {
        let m = grid(5, 1.0, Vec3::ZERO);
        let p = build_proxy(&m, ProxyTarget::Vertices(100)).unwrap();
        assert!(!p.simplified);
        assert_eq!(p.mesh.positions, m.positions);
        assert_eq!(p.mesh.indices, m.indices);
        assert_eq!(p.quality.vertices, 25);
        assert!((p.quality.min_angle_deg - 45.0).abs() < 1e-3);
    }

    #[test]
    fn bad_targets_and_inputs_are_errors() {
        let m = grid(5, 1.0, Vec3::ZERO);
        assert_eq!(
            build_proxy(&m, ProxyTarget::Vertices(2)).unwrap_err(),
            ProxyError::TargetTooSmall(2)
        );
        for l in [0.0, -1.0, Real::NAN, Real::INFINITY] {
            assert!(matches!(
                build_proxy(&m, ProxyTarget::EdgeLength(l)),
                Err(ProxyError::InvalidEdgeLength(_))
            ));
        }
        let empty = Mesh::new("e", vec![], vec![]);
        assert!(matches!(
            build_proxy(&empty, ProxyTarget::Vertices(10)),
            Err(ProxyError::Mesh(MeshError::Empty(_)))
        ));
        let flat = Mesh::new("flat", vec![Vec3::ZERO; 3], vec![[0, 1, 2]]);
        assert!(matches!(
            build_proxy(&flat, ProxyTarget::Vertices(10)),
            Err(ProxyError::AllDegenerate(_))
        ));
        let line = Mesh::new(
            "line",
            vec![Vec3::ZERO, Vec3::X, Vec3::X * 2.0],
            vec![[0, 1, 2]],
        );
        assert!(matches!(
            build_proxy(&line, ProxyTarget::Vertices(10)),
            Err(ProxyError::AllDegenerate(_))
        ));
    }

    #[test]
    fn quality_of_a_right_triangle() {
        let m = Mesh::new("t", vec![Vec3::ZERO, Vec3::X, Vec3::Z], vec![[0, 2, 1]]);
        let q = ProxyQuality::measure(&m);
        assert!((q.min_angle_deg - 45.0).abs() < 1e-4);
        // Longest edge √2, perimeter 2 + √2, area 1/2.
        let expected = 2.0f32.sqrt() * (2.0 + 2.0f32.sqrt()) / (4.0 * 3.0f32.sqrt() * 0.5);
        assert!((q.max_aspect_ratio - expected).abs() < 1e-5);
        assert!((q.mean_edge_length_m - (2.0 + 2.0f32.sqrt()) / 3.0).abs() < 1e-6);
        assert_eq!(q.boundary_edges, 3);
        assert_eq!(q.components, 1);
        let text = q.to_string();
        assert!(text.contains("min angle 45.0°"), "{text}");
    }

    #[test]
    fn edge_length_target_gives_about_that_edge_length() {
        let m = grid(61, 1.0, Vec3::ZERO);
        let p = build_proxy(&m, ProxyTarget::EdgeLength(0.05)).unwrap();
        assert!(p.simplified);
        let l = p.quality.mean_edge_length_m;
        assert!((0.04..0.06).contains(&l), "mean edge {l} m");
    }

    #[test]
    fn flips_raise_the_minimum_angle() {
        // A thin quad split along its long diagonal: flipping to the short one is better.
        let pos = vec![
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, -0.1),
            Vec3::new(2.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.1),
        ];
        let mut tris = vec![[0, 2, 1], [2, 0, 3]];
        let before = tri_min_angle(&pos, tris[0]).min(tri_min_angle(&pos, tris[1]));
        assert_eq!(flip_pass(&pos, &mut tris), 1);
        let after = tri_min_angle(&pos, tris[0]).min(tri_min_angle(&pos, tris[1]));
        assert!(after > before);
        assert_eq!(flip_pass(&pos, &mut tris), 0, "no flip back");
    }

    #[test]
    fn component_labels_count_pieces() {
        let mut m = grid(3, 1.0, Vec3::ZERO);
        m.append(&grid(3, 1.0, Vec3::new(2.0, 0.0, 0.0)));
        let (labels, count) = component_labels(m.positions.len(), &m.indices);
        assert_eq!(count, 2);
        assert_eq!(labels[0], 0);
        assert_eq!(labels[9], 1);
    }
}
