//! Indexed triangle meshes, welding of seam duplicates, topology and quality checks.
//!
//! A [`Mesh`] is what glTF gives: positions, optional normals and UVs, and triangles as index
//! triples. A render mesh usually splits vertices along UV seams, so two triangles on either side
//! of a seam do not share a vertex. The cloth must not tear there, so the simulation works on the
//! [welded](weld) mesh, where vertices at the same position (within a tolerance) become one, and
//! keeps the map from each render vertex to its welded vertex.
//!
//! [`Topology`] lists the unique edges, the triangles on each edge, the bend pairs (two triangles
//! that share an interior edge) and the boundary edges. [`QualityReport`] finds zero-area
//! triangles, non-manifold edges and duplicate vertices, and turns them into errors or warnings.
//!
//! [`shapes`] builds procedural meshes (grids, spheres, skirts, the mannequin) for the built-in
//! scenes, the tests and the benchmarks.
//!
//! May import: [`crate::math`] only.

pub mod shapes;

use std::collections::HashMap;

use crate::math::{triangle_area, Real, Vec2, Vec3, DEGENERATE_AREA_M2};

/// An indexed triangle mesh, in metres.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mesh {
    /// Name of the mesh (the glTF mesh name, or a generated one).
    pub name: String,
    /// Vertex positions (m).
    pub positions: Vec<Vec3>,
    /// Triangles, as indices into `positions`, counter-clockwise seen from the front.
    pub indices: Vec<[u32; 3]>,
    /// Unit vertex normals, one per vertex, if known.
    pub normals: Option<Vec<Vec3>>,
    /// Texture coordinates, one per vertex, if known (dimensionless).
    pub uvs: Option<Vec<Vec2>>,
}

/// Problems that make a mesh unusable.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MeshError {
    /// The mesh has no triangles.
    #[error("mesh '{0}' has no triangles")]
    Empty(String),
    /// A triangle refers to a vertex that does not exist.
    #[error("mesh '{name}': triangle {triangle} refers to vertex {index}, but the mesh has only {count} vertices")]
    IndexOutOfRange {
        /// Mesh name.
        name: String,
        /// Triangle number.
        triangle: usize,
        /// The offending index.
        index: u32,
        /// Number of vertices.
        count: usize,
    },
    /// A position is NaN or infinite.
    #[error("mesh '{name}': vertex {vertex} has a non-finite position")]
    NonFinite {
        /// Mesh name.
        name: String,
        /// Vertex number.
        vertex: usize,
    },
    /// A per-vertex attribute has the wrong length.
    #[error("mesh '{name}': {attribute} has {got} entries for {expected} vertices")]
    AttributeLength {
        /// Mesh name.
        name: String,
        /// Attribute name.
        attribute: &'static str,
        /// Entries found.
        got: usize,
        /// Entries expected.
        expected: usize,
    },
    /// Every triangle has zero area.
    #[error("mesh '{0}': every triangle has zero area; check the export scale")]
    AllDegenerate(String),
    /// A coordinate is too large to be a garment or a body in metres.
    #[error("mesh '{name}': vertex {vertex} lies {distance_m:.3e} m from the origin; Drape works in metres (is the file in millimetres, or is a vertex broken?)")]
    TooFar {
        /// Mesh name.
        name: String,
        /// Vertex number.
        vertex: usize,
        /// Its distance from the origin (m).
        distance_m: Real,
    },
}

/// Largest distance from the origin a mesh vertex may have (m); beyond it areas and lengths
/// lose their precision in single precision, or overflow.
pub const MAX_COORDINATE_M: Real = 1.0e5;

impl Mesh {
    /// Creates a mesh from positions and triangles, with no normals or UVs.
    pub fn new(name: impl Into<String>, positions: Vec<Vec3>, indices: Vec<[u32; 3]>) -> Self {
        Self {
            name: name.into(),
            positions,
            indices,
            normals: None,
            uvs: None,
        }
    }

    /// Number of vertices.
    pub fn vertex_count(&self) -> usize {
        self.positions.len()
    }

    /// Checks indices, attribute lengths and finiteness; the errors name the mesh.
    pub fn validate(&self) -> Result<(), MeshError> {
        if self.indices.is_empty() {
            return Err(MeshError::Empty(self.name.clone()));
        }
        let count = self.positions.len();
        for (t, tri) in self.indices.iter().enumerate() {
            for &i in tri {
                if i as usize >= count {
                    return Err(MeshError::IndexOutOfRange {
                        name: self.name.clone(),
                        triangle: t,
                        index: i,
                        count,
                    });
                }
            }
        }
        if let Some(v) = self.positions.iter().position(|p| !p.is_finite()) {
            return Err(MeshError::NonFinite {
                name: self.name.clone(),
                vertex: v,
            });
        }
        if let Some(v) = self
            .positions
            .iter()
            .position(|p| p.abs().max_element() > MAX_COORDINATE_M)
        {
            return Err(MeshError::TooFar {
                name: self.name.clone(),
                vertex: v,
                distance_m: self.positions[v].length(),
            });
        }
        let check = |attribute: &'static str, got: usize| {
            if got == count {
                Ok(())
            } else {
                Err(MeshError::AttributeLength {
                    name: self.name.clone(),
                    attribute,
                    got,
                    expected: count,
                })
            }
        };
        if let Some(n) = &self.normals {
            check("normals", n.len())?;
        }
        if let Some(uv) = &self.uvs {
            check("uvs", uv.len())?;
        }
        Ok(())
    }

    /// Area-weighted vertex normals of the given positions over this mesh's triangles.
    ///
    /// A vertex with no non-degenerate triangle gets +Y, so the result is always unit length.
    pub fn vertex_normals_for(&self, positions: &[Vec3]) -> Vec<Vec3> {
        let mut n = vec![Vec3::ZERO; positions.len()];
        for tri in &self.indices {
            let [a, b, c] = tri.map(|i| positions[i as usize]);
            // The cross product's length is twice the area: an area weighting for free.
            let face = (b - a).cross(c - a);
            for &i in tri {
                n[i as usize] += face;
            }
        }
        for v in &mut n {
            *v = v.try_normalize().unwrap_or(Vec3::Y);
        }
        n
    }

    /// Computes and stores area-weighted vertex normals.
    pub fn compute_normals(&mut self) {
        self.normals = Some(self.vertex_normals_for(&self.positions));
    }

    /// Total surface area (m²).
    pub fn area(&self) -> Real {
        self.indices
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| self.positions[i as usize]);
                triangle_area(a, b, c)
            })
            .sum()
    }

    /// Signed volume enclosed by the mesh (m³); positive for a closed mesh with outward normals.
    pub fn signed_volume(&self) -> Real {
        self.indices
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| self.positions[i as usize]);
                a.dot(b.cross(c)) / 6.0
            })
            .sum()
    }

    /// Appends another mesh's triangles and vertices (attributes kept only if both have them).
    pub fn append(&mut self, other: &Mesh) {
        let base = self.positions.len() as u32;
        self.positions.extend_from_slice(&other.positions);
        self.indices
            .extend(other.indices.iter().map(|t| t.map(|i| i + base)));
        self.normals = match (self.normals.take(), &other.normals) {
            (Some(mut a), Some(b)) => {
                a.extend_from_slice(b);
                Some(a)
            }
            _ => None,
        };
        self.uvs = match (self.uvs.take(), &other.uvs) {
            (Some(mut a), Some(b)) => {
                a.extend_from_slice(b);
                Some(a)
            }
            _ => None,
        };
    }
}

/// A mesh with its seam duplicates merged, and the map back to the original vertices.
#[derive(Clone, Debug)]
pub struct Welded {
    /// The welded mesh: one vertex per distinct position; UVs and normals of the first duplicate.
    pub mesh: Mesh,
    /// For each vertex of the original mesh, its vertex in the welded mesh.
    pub original_to_welded: Vec<u32>,
    /// Number of original vertices that were merged into another.
    pub merged: usize,
}

/// Merges vertices closer than `tolerance_m` (m), so that UV seams do not split the cloth.
///
/// Uses a hash grid of cell size `tolerance_m`, so it runs in expected linear time. Triangles
/// that collapse (two corners welded together) are dropped, since they have no area.
pub fn weld(mesh: &Mesh, tolerance_m: Real) -> Welded {
    let tol = tolerance_m.max(Real::EPSILON);
    let cell = |p: Vec3| -> [i64; 3] {
        [
            (p.x / tol).floor() as i64,
            (p.y / tol).floor() as i64,
            (p.z / tol).floor() as i64,
        ]
    };
    let mut grid: HashMap<[i64; 3], Vec<u32>> = HashMap::new();
    let mut map = Vec::with_capacity(mesh.positions.len());
    let mut keep: Vec<u32> = Vec::new();
    let tol2 = tol * tol;
    for (i, &p) in mesh.positions.iter().enumerate() {
        let c = cell(p);
        let mut found = None;
        'search: for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    let near = [
                        c[0].saturating_add(dx),
                        c[1].saturating_add(dy),
                        c[2].saturating_add(dz),
                    ];
                    if let Some(list) = grid.get(&near) {
                        for &w in list {
                            if mesh.positions[keep[w as usize] as usize].distance_squared(p) <= tol2
                            {
                                found = Some(w);
                                break 'search;
                            }
                        }
                    }
                }
            }
        }
        let w = match found {
            Some(w) => w,
            None => {
                let w = keep.len() as u32;
                keep.push(i as u32);
                grid.entry(c).or_default().push(w);
                w
            }
        };
        map.push(w);
    }
    let pick =
        |idx: &Vec<u32>| -> Vec<Vec3> { idx.iter().map(|&i| mesh.positions[i as usize]).collect() };
    let indices = mesh
        .indices
        .iter()
        .map(|t| t.map(|i| map[i as usize]))
        .filter(|t| t[0] != t[1] && t[1] != t[2] && t[0] != t[2])
        .collect();
    let welded = Mesh {
        name: mesh.name.clone(),
        positions: pick(&keep),
        indices,
        normals: mesh
            .normals
            .as_ref()
            .map(|n| keep.iter().map(|&i| n[i as usize]).collect()),
        uvs: mesh
            .uvs
            .as_ref()
            .map(|uv| keep.iter().map(|&i| uv[i as usize]).collect()),
    };
    Welded {
        merged: mesh.positions.len() - keep.len(),
        mesh: welded,
        original_to_welded: map,
    }
}

/// Two triangles that share an interior edge: the stencil of a dihedral bending constraint.
///
/// ```text
///        x2 (opposite, first triangle)
///       /  \
///     x0 -- x1      shared edge x0–x1
///       \  /
///        x3 (opposite, second triangle)
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BendPair {
    /// Shared edge endpoints `[x0, x1]`, ordered as they run in the first triangle.
    pub edge: [u32; 2],
    /// Opposite vertices `[x2, x3]`: of the first and of the second triangle.
    pub opposite: [u32; 2],
    /// The two triangles (indices into the mesh's triangles), first and second.
    pub triangles: [u32; 2],
}

/// Edge-based adjacency of a triangle mesh.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    /// Unique edges, each as `[a, b]` with `a < b`.
    pub edges: Vec<[u32; 2]>,
    /// For each edge, the triangles that use it (one for a boundary edge, two for an interior
    /// one, more for a non-manifold edge).
    pub edge_triangles: Vec<Vec<u32>>,
    /// Bend pairs over the manifold interior edges.
    pub bend_pairs: Vec<BendPair>,
    /// Indices into `edges` of the boundary edges (used by exactly one triangle).
    pub boundary_edges: Vec<u32>,
    /// Indices into `edges` of the non-manifold edges (used by three or more triangles).
    pub non_manifold_edges: Vec<u32>,
}

impl Topology {
    /// Builds the adjacency of `mesh` (its indices must be valid: see [`Mesh::validate`]).
    pub fn new(mesh: &Mesh) -> Self {
        let mut edge_index: HashMap<[u32; 2], u32> = HashMap::with_capacity(mesh.indices.len() * 2);
        let mut edges = Vec::new();
        let mut edge_triangles: Vec<Vec<u32>> = Vec::new();
        for (t, tri) in mesh.indices.iter().enumerate() {
            for k in 0..3 {
                let (a, b) = (tri[k], tri[(k + 1) % 3]);
                let key = [a.min(b), a.max(b)];
                let e = *edge_index.entry(key).or_insert_with(|| {
                    edges.push(key);
                    edge_triangles.push(Vec::with_capacity(2));
                    (edges.len() - 1) as u32
                });
                edge_triangles[e as usize].push(t as u32);
            }
        }
        let mut bend_pairs = Vec::new();
        let mut boundary_edges = Vec::new();
        let mut non_manifold_edges = Vec::new();
        for (e, tris) in edge_triangles.iter().enumerate() {
            match tris.len() {
                1 => boundary_edges.push(e as u32),
                2 => {
                    let [a, b] = edges[e];
                    let t0 = mesh.indices[tris[0] as usize];
                    let t1 = mesh.indices[tris[1] as usize];
                    let opp = |t: [u32; 3]| t.into_iter().find(|&v| v != a && v != b);
                    if let (Some(o0), Some(o1)) = (opp(t0), opp(t1)) {
                        if o0 == o1 {
                            // Two triangles on the same three vertices: a doubled face, no hinge.
                            continue;
                        }
                        // Order the edge as it runs in the first triangle (counter-clockwise).
                        bend_pairs.push(BendPair {
                            edge: as_in(t0, [a, b]),
                            opposite: [o0, o1],
                            triangles: [tris[0], tris[1]],
                        });
                    }
                }
                _ => non_manifold_edges.push(e as u32),
            }
        }
        Self {
            edges,
            edge_triangles,
            bend_pairs,
            boundary_edges,
            non_manifold_edges,
        }
    }

    /// Returns `true` when every edge has exactly two triangles (a closed, manifold surface).
    pub fn is_closed(&self) -> bool {
        self.boundary_edges.is_empty() && self.non_manifold_edges.is_empty()
    }

    /// The boundary edges of `mesh` (the mesh this topology was built from), each ordered as it
    /// runs in its one triangle, in the order of [`Self::boundary_edges`].
    pub fn oriented_boundary(&self, mesh: &Mesh) -> Vec<[u32; 2]> {
        (self.boundary_edges.iter())
            .map(|&e| {
                let t = self.edge_triangles[e as usize][0];
                as_in(mesh.indices[t as usize], self.edges[e as usize])
            })
            .collect()
    }
}

/// The edge between `a` and `b` ordered as it runs in triangle `tri` (counter-clockwise).
fn as_in(tri: [u32; 3], [a, b]: [u32; 2]) -> [u32; 2] {
    let k = tri.iter().position(|&v| v == a).unwrap_or(0);
    if tri[(k + 1) % 3] == b {
        [a, b]
    } else {
        [b, a]
    }
}

/// How serious a [`QualityIssue`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Severity {
    /// The mesh can be simulated; the artist should know.
    Warning,
    /// The mesh cannot be simulated as it is.
    Error,
}

/// One finding of [`QualityReport`].
#[derive(Clone, Debug, PartialEq)]
pub struct QualityIssue {
    /// Warning or error.
    pub severity: Severity,
    /// What is wrong and how to fix it.
    pub message: String,
}

/// Counts of the defects that matter for cloth simulation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QualityReport {
    /// Triangles whose area is below [`DEGENERATE_AREA_M2`] (5e-11 m²); the solver skips them.
    pub zero_area_triangles: usize,
    /// Used vertices whose every triangle has zero area: they get no mass and stay in place.
    pub massless_vertices: usize,
    /// Edges shared by three or more triangles.
    pub non_manifold_edges: usize,
    /// Vertices at the same position as an earlier vertex (seam duplicates, before welding).
    pub duplicate_vertices: usize,
    /// Vertices that no triangle uses.
    pub unused_vertices: usize,
    /// Boundary edges (open borders: hems, cuffs; normal for a garment).
    pub boundary_edges: usize,
    /// Smallest triangle area (m²).
    pub min_triangle_area_m2: Real,
}

impl QualityReport {
    /// Measures `mesh` (whose indices must be valid). `weld_tolerance_m` decides duplicates.
    pub fn new(mesh: &Mesh, weld_tolerance_m: Real) -> Self {
        let topo = Topology::new(mesh);
        let mut used = vec![false; mesh.positions.len()];
        let mut has_area = vec![false; mesh.positions.len()];
        let mut zero = 0;
        let mut min_area = Real::INFINITY;
        for tri in &mesh.indices {
            let [a, b, c] = tri.map(|i| mesh.positions[i as usize]);
            let area = triangle_area(a, b, c);
            min_area = min_area.min(area);
            let degenerate = area < DEGENERATE_AREA_M2;
            zero += usize::from(degenerate);
            for &i in tri {
                used[i as usize] = true;
                has_area[i as usize] |= !degenerate;
            }
        }
        Self {
            zero_area_triangles: zero,
            non_manifold_edges: topo.non_manifold_edges.len(),
            duplicate_vertices: weld(mesh, weld_tolerance_m).merged,
            unused_vertices: used.iter().filter(|u| !**u).count(),
            massless_vertices: used
                .iter()
                .zip(&has_area)
                .filter(|(u, a)| **u && !**a)
                .count(),
            boundary_edges: topo.boundary_edges.len(),
            min_triangle_area_m2: if min_area.is_finite() { min_area } else { 0.0 },
        }
    }

    /// The findings as messages: errors stop a simulation, warnings are shown to the artist.
    ///
    /// Zero-area triangles are warnings when some triangles remain (the solver skips them), and
    /// an error when all are degenerate. Non-manifold edges are warnings: bending is not applied
    /// across them. Duplicate vertices are warnings: welding merges them.
    pub fn issues(&self, mesh_name: &str, triangle_count: usize) -> Vec<QualityIssue> {
        let mut out = Vec::new();
        let mut push = |severity, message: String| out.push(QualityIssue { severity, message });
        if self.zero_area_triangles > 0 {
            let severity = if self.zero_area_triangles >= triangle_count {
                Severity::Error
            } else {
                Severity::Warning
            };
            push(
                severity,
                format!(
                    "mesh '{mesh_name}': {} of {triangle_count} triangles have zero area; \
                     they are skipped (remove them in the modelling tool)",
                    self.zero_area_triangles
                ),
            );
        }
        if self.non_manifold_edges > 0 {
            push(
                Severity::Warning,
                format!(
                    "mesh '{mesh_name}': {} edges are shared by more than two triangles; \
                     no bending acts across them (split the pieces or remove inner faces)",
                    self.non_manifold_edges
                ),
            );
        }
        if self.duplicate_vertices > 0 {
            push(
                Severity::Warning,
                format!(
                    "mesh '{mesh_name}': {} duplicate vertices (UV seams) were welded",
                    self.duplicate_vertices
                ),
            );
        }
        if self.massless_vertices > 0 {
            push(
                Severity::Warning,
                format!(
                    "mesh '{mesh_name}': {} vertices touch only zero-area triangles; they have no \
                     mass and stay where they are",
                    self.massless_vertices
                ),
            );
        }
        if self.unused_vertices > 0 {
            push(
                Severity::Warning,
                format!(
                    "mesh '{mesh_name}': {} vertices belong to no triangle and are ignored",
                    self.unused_vertices
                ),
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two triangles forming a unit square in the XZ plane, split along a UV seam so the
    /// diagonal's two vertices are duplicated.
    fn seamed_square() -> Mesh {
        let p = |x: f32, z: f32| Vec3::new(x, 0.0, z);
        Mesh::new(
            "square",
            vec![
                p(0.0, 0.0),
                p(1.0, 0.0),
                p(1.0, 1.0),
                p(0.0, 0.0),
                p(1.0, 1.0),
                p(0.0, 1.0),
            ],
            vec![[0, 2, 1], [3, 5, 4]],
        )
    }

    #[test]
    fn weld_merges_seam_duplicates() {
        let w = weld(&seamed_square(), 1e-5);
        assert_eq!(w.mesh.positions.len(), 4);
        assert_eq!(w.merged, 2);
        assert_eq!(w.original_to_welded[0], w.original_to_welded[3]);
        assert_eq!(w.original_to_welded[2], w.original_to_welded[4]);
        let topo = Topology::new(&w.mesh);
        assert_eq!(topo.edges.len(), 5);
        assert_eq!(topo.bend_pairs.len(), 1);
        assert_eq!(topo.boundary_edges.len(), 4);
    }

    #[test]
    fn unwelded_seam_has_no_bend_pair() {
        let topo = Topology::new(&seamed_square());
        assert_eq!(topo.bend_pairs.len(), 0);
        assert_eq!(topo.boundary_edges.len(), 6);
    }

    #[test]
    fn bend_pair_edge_runs_as_in_first_triangle() {
        let w = weld(&seamed_square(), 1e-5).mesh;
        let topo = Topology::new(&w);
        let bp = topo.bend_pairs[0];
        let t0 = w.indices[0];
        let k = t0.iter().position(|&v| v == bp.edge[0]).unwrap();
        assert_eq!(t0[(k + 1) % 3], bp.edge[1]);
        assert!(t0.contains(&bp.opposite[0]));
        assert!(w.indices[1].contains(&bp.opposite[1]));
    }

    #[test]
    fn quality_report_finds_defects() {
        let mut m = seamed_square();
        // A zero-area sliver and a third triangle on the diagonal (non-manifold).
        m.positions.push(Vec3::new(0.5, 0.0, 0.5));
        m.positions.push(Vec3::new(0.5, 1.0, 0.5));
        m.indices.push([0, 2, 6]);
        m.indices.push([0, 2, 7]);
        let w = weld(&m, 1e-5).mesh;
        let q = QualityReport::new(&w, 1e-5);
        assert_eq!(q.zero_area_triangles, 1);
        assert_eq!(
            q.massless_vertices, 1,
            "the sliver's apex has no other triangle"
        );
        assert_eq!(q.non_manifold_edges, 1);
        let q0 = QualityReport::new(&m, 1e-5);
        assert_eq!(q0.duplicate_vertices, 2);
        let issues = q.issues("square", w.indices.len());
        assert!(issues.iter().all(|i| i.severity == Severity::Warning));
        assert!(issues.iter().any(|i| i.message.contains("zero area")));
    }

    #[test]
    fn vertex_of_only_zero_area_triangles_is_reported_massless() {
        let mut m = seamed_square();
        // A sliver whose apex lies on the diagonal: that apex has no other triangle.
        m.positions.push(Vec3::new(0.5, 0.0, 0.5));
        m.indices.push([0, 2, 6]);
        let w = weld(&m, 1e-5).mesh;
        let q = QualityReport::new(&w, 1e-5);
        assert_eq!(q.massless_vertices, 1);
        let issues = q.issues("square", w.indices.len());
        assert!(issues.iter().any(|i| i.message.contains("no mass")));
    }

    #[test]
    fn validate_names_the_problem() {
        let mut m = seamed_square();
        m.indices.push([0, 1, 99]);
        let err = m.validate().unwrap_err();
        assert!(err.to_string().contains("vertex 99"));
        let mut far = seamed_square();
        far.positions[2].x = 1.0e30;
        assert!(matches!(
            far.validate(),
            Err(MeshError::TooFar { vertex: 2, .. })
        ));
        assert!(Mesh::new("e", vec![], vec![]).validate().is_err());
    }
}
