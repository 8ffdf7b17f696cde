//! The render mesh bound to the simulation proxy.
//!
//! Each render vertex is attached to one proxy triangle: the closest point of that triangle
//! (barycentric coordinates) plus an offset from it in the triangle's local frame. Each frame,
//! [`Binding::deform`] rebuilds the render mesh from the simulated proxy:
//!
//! ```text
//! triangle a b c (proxy positions, m), barycentric (u, v, w), offset (o_t, o_b, o_n) (m):
//!     q = u·a + v·b + w·c                        the foot point on the triangle
//!     t = (b − a) / |b − a|                      tangent, along the first edge
//!     n = (b − a) × (c − a) / |(b − a) × (c − a)| normal
//!     s = n × t                                  bitangent
//!     p = q + o_t·t + o_b·s + o_n·n              the render vertex
//! ```
//!
//! At binding time `(u, v, w)` are those of the closest point of the proxy to the render vertex
//! (parry3d's BVH query), and the offset is `p − q` expressed in `(t, s, n)`. So:
//!
//! - at rest the render mesh is reproduced (to rounding: 1e-7 of the coordinates);
//! - a rigid motion of the proxy moves `q` and the frame rigidly, so the render mesh moves
//!   rigidly;
//! - a render vertex outside the proxy (past a hem, or on thickness geometry) binds to the
//!   nearest triangle, with clamped barycentric coordinates; the rest of the distance is in the
//!   offset, tangential part included;
//! - render vertices at the same position (within [`DEFAULT_SEAM_TOLERANCE_M`]: the duplicates
//!   of a UV seam) share one query, made for the lowest-numbered of them, so they bind to the
//!   same triangle with the same barycentric coordinates. Duplicates at bitwise equal positions
//!   get bitwise equal offsets and so stay bitwise equal in every frame: seams never crack;
//! - degenerate proxy triangles (area below [`DEGENERATE_AREA_M2`]) are never bound to. If a
//!   triangle degenerates while simulating, the frame falls back to any orthonormal frame
//!   (no NaN for finite input).
//!
//! Painted maps move between the two meshes with [`Binding::proxy_to_render`] (barycentric
//! interpolation) and [`Binding::render_to_proxy`] (for each proxy vertex, the average of the
//! render values bound to its triangles, weighted by their barycentric coordinate of that
//! vertex; proxy vertices that no render vertex reaches take the value of the nearest render
//! vertex). Both results are clamped to the range of the values they average, so a constant map
//! comes out exactly constant.

use parry3d::query::PointQueryWithLocation;
use parry3d::shape::{TriMesh, TriMeshFlags};
use rayon::prelude::*;

use crate::math::{triangle_area, Real, Vec3, DEGENERATE_AREA_M2};
use crate::mesh::{weld, Mesh, MeshError};

/// Render vertices closer than this share one binding query (m): the scene's weld tolerance.
pub const DEFAULT_SEAM_TOLERANCE_M: Real = 1.0e-5;

/// How one render vertex hangs on the proxy (36 bytes).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoundVertex {
    /// Proxy vertices of the triangle `[a, b, c]`.
    pub triangle: [u32; 3],
    /// Barycentric coordinates of the foot point, in `[0, 1]`, summing to 1.
    pub barycentric: [Real; 3],
    /// Offset from the foot point (m), along the tangent, the bitangent and the normal of the
    /// triangle's frame (module docs).
    pub offset_m: [Real; 3],
}

/// Why a binding could not be built or used.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum BindingError {
    /// The render mesh is invalid.
    #[error("render mesh: {0}")]
    Render(MeshError),
    /// The proxy mesh is invalid.
    #[error("proxy mesh: {0}")]
    Proxy(MeshError),
    /// Every proxy triangle has zero area: there is nothing to bind to.
    #[error("proxy mesh '{0}' has no triangle with a non-zero area to bind the render mesh to")]
    NoUsableTriangle(String),
    /// parry3d refused to build the query structure.
    #[error("building the query structure of '{name}' failed: {reason}")]
    Query {
        /// Mesh name.
        name: String,
        /// parry3d's message.
        reason: String,
    },
    /// A slice passed in has the wrong length.
    #[error("{what} has {got} entries; the binding expects {expected}")]
    Length {
        /// Which argument.
        what: &'static str,
        /// Entries given.
        got: usize,
        /// Entries expected.
        expected: usize,
    },
    /// A map value is NaN or infinite.
    #[error("{what}: value {index} is not finite")]
    NonFinite {
        /// Which map.
        what: &'static str,
        /// Index of the value.
        index: usize,
    },
}

/// The render mesh bound to a proxy (module docs).
#[derive(Clone, Debug)]
pub struct Binding {
    /// One entry per render vertex.
    vertices: Vec<BoundVertex>,
    /// Number of proxy vertices.
    proxy_vertex_count: usize,
    /// Proxy vertices that no render vertex is bound to (with a non-zero weight), and the
    /// render vertex nearest to each: the source of [`Binding::render_to_proxy`] there.
    nearest_render: Vec<(u32, u32)>,
}

/// Render vertices per task of [`Binding::deform`] on rayon's threads (below twice this, one
/// loop).
const DEFORM_CHUNK: usize = 4096;

/// The local frame `[t, s, n]` of triangle `abc` (module docs); any orthonormal frame when the
/// triangle is degenerate, so the result is always finite for finite input.
#[inline]
fn frame(a: Vec3, b: Vec3, c: Vec3) -> [Vec3; 3] {
    let (e0, e1) = (b - a, c - a);
    let t = e0
        .try_normalize()
        .or_else(|| e1.try_normalize())
        .unwrap_or(Vec3::X);
    let n = e0
        .cross(e1)
        .try_normalize()
        .unwrap_or_else(|| t.any_orthonormal_vector());
    [t, n.cross(t), n]
}

/// The foot point `u·a + v·b + w·c`, computed the same way at binding time and every frame.
#[inline]
fn foot(a: Vec3, b: Vec3, c: Vec3, [u, v, w]: [Real; 3]) -> Vec3 {
    a * u + b * v + c * w
}

impl Binding {
    /// Binds `render` to `proxy`, treating render vertices closer than
    /// [`DEFAULT_SEAM_TOLERANCE_M`] as seam duplicates.
    pub fn new(render: &Mesh, proxy: &Mesh) -> Result<Self, BindingError> {
        Self::with_seam_tolerance(render, proxy, DEFAULT_SEAM_TOLERANCE_M)
    }

    /// Binds `render` to `proxy`; render vertices closer than `seam_tolerance_m` (m) bind to
    /// the same triangle with the same barycentric coordinates.
    pub fn with_seam_tolerance(
        render: &Mesh,
        proxy: &Mesh,
        seam_tolerance_m: Real,
    ) -> Result<Self, BindingError> {
        render.validate().map_err(BindingError::Render)?;
        proxy.validate().map_err(BindingError::Proxy)?;
        let usable: Vec<[u32; 3]> = proxy
            .indices
            .iter()
            .copied()
            .filter(|t| {
                let [a, b, c] = t.map(|i| proxy.positions[i as usize]);
                triangle_area(a, b, c) >= DEGENERATE_AREA_M2
            })
            .collect();
        if usable.is_empty() {
            return Err(BindingError::NoUsableTriangle(proxy.name.clone()));
        }
        let query = TriMesh::with_flags(proxy.positions.clone(), usable, TriMeshFlags::empty())
            .map_err(|e| BindingError::Query {
                name: proxy.name.clone(),
                reason: e.to_string(),
            })?;

        // One query per group of coincident render vertices, for its first member.
        let groups = weld(render, seam_tolerance_m).original_to_welded;
        let group_count = groups.iter().map(|&g| g as usize + 1).max().unwrap_or(0);
        let mut group_binding: Vec<Option<([u32; 3], [Real; 3])>> = vec![None; group_count];
        let mut vertices = Vec::with_capacity(render.positions.len());
        for (i, &p) in render.positions.iter().enumerate() {
            let g = groups[i] as usize;
            let (triangle, barycentric) = match group_binding[g] {
                Some(b) => b,
                None => {
                    let b = closest_on(&query, p);
                    group_binding[g] = Some(b);
                    b
                }
            };
            let [a, b, c] = triangle.map(|k| proxy.positions[k as usize]);
            let q = foot(a, b, c, barycentric);
            let d = p - q;
            let offset_m = frame(a, b, c).map(|e| e.dot(d));
            vertices.push(BoundVertex {
                triangle,
                barycentric,
                offset_m,
            });
        }

        let mut weight = vec![0.0 as Real; proxy.positions.len()];
        for v in &vertices {
            for k in 0..3 {
                weight[v.triangle[k] as usize] += v.barycentric[k];
            }
        }
        let lonely: Vec<u32> = (0..proxy.positions.len() as u32)
            .filter(|&i| weight[i as usize] <= 0.0)
            .collect();
        let nearest_render = if lonely.is_empty() {
            Vec::new()
        } else {
            let render_query = TriMesh::with_flags(
                render.positions.clone(),
                render.indices.clone(),
                TriMeshFlags::empty(),
            )
            .map_err(|e| BindingError::Query {
                name: render.name.clone(),
                reason: e.to_string(),
            })?;
            lonely
                .into_iter()
                .map(|i| {
                    let p = proxy.positions[i as usize];
                    let (_, (t, _)) = render_query.project_local_point_and_get_location(p, false);
                    let tri = render_query.indices()[t as usize];
                    let nearest = tri
                        .into_iter()
                        .min_by(|&x, &y| {
                            let dx = render.positions[x as usize].distance_squared(p);
                            let dy = render.positions[y as usize].distance_squared(p);
                            dx.total_cmp(&dy).then(x.cmp(&y))
                        })
                        .unwrap_or(tri[0]);
                    (i, nearest)
                })
                .collect()
        };
        Ok(Self {
            vertices,
            proxy_vertex_count: proxy.positions.len(),
            nearest_render,
        })
    }

    /// Number of render vertices.
    pub fn render_vertex_count(&self) -> usize {
        self.vertices.len()
    }

    /// Number of proxy vertices.
    pub fn proxy_vertex_count(&self) -> usize {
        self.proxy_vertex_count
    }

    /// How each render vertex is bound, in render-vertex order.
    pub fn vertices(&self) -> &[BoundVertex] {
        &self.vertices
    }

    /// Largest distance of a render vertex from its foot point on the proxy at binding time (m):
    /// how far the render surface strays from the proxy.
    pub fn max_offset_m(&self) -> Real {
        self.vertices
            .iter()
            .map(|v| Vec3::from(v.offset_m).length())
            .fold(0.0, Real::max)
    }

    /// Writes the render-vertex positions (m) for the proxy at `proxy_positions` (m) into `out`.
    /// Allocates nothing.
    pub fn deform(&self, proxy_positions: &[Vec3], out: &mut [Vec3]) -> Result<(), BindingError> {
        self.check_len(
            "proxy positions",
            proxy_positions.len(),
            self.proxy_vertex_count,
        )?;
        self.check_len("output positions", out.len(), self.vertices.len())?;
        let deform = |out: &mut [Vec3], vertices: &[BoundVertex]| {
            for (o, v) in out.iter_mut().zip(vertices) {
                let [a, b, c] = v.triangle.map(|i| proxy_positions[i as usize]);
                let [t, s, n] = frame(a, b, c);
                let [dt, ds, dn] = v.offset_m;
                *o = foot(a, b, c, v.barycentric) + t * dt + s * ds + n * dn;
            }
        };
        // Each render vertex depends only on its own proxy triangle, so chunks of them go to
        // rayon's threads with the same result, bit for bit, as one loop.
        if out.len() >= 2 * DEFORM_CHUNK {
            out.par_chunks_mut(DEFORM_CHUNK)
                .zip(self.vertices.par_chunks(DEFORM_CHUNK))
                .for_each(|(o, v)| deform(o, v));
        } else {
            deform(out, &self.vertices);
        }
        Ok(())
    }

    /// The render-vertex positions (m) for the proxy at `proxy_positions` (m).
    pub fn deformed(&self, proxy_positions: &[Vec3]) -> Result<Vec<Vec3>, BindingError> {
        let mut out = vec![Vec3::ZERO; self.vertices.len()];
        self.deform(proxy_positions, &mut out)?;
        Ok(out)
    }

    /// A per-proxy-vertex map interpolated to the render vertices (barycentric interpolation).
    pub fn proxy_to_render(&self, proxy_map: &[Real]) -> Result<Vec<Real>, BindingError> {
        self.check_len("proxy map", proxy_map.len(), self.proxy_vertex_count)?;
        check_finite("proxy map", proxy_map)?;
        Ok(self
            .vertices
            .iter()
            .map(|v| {
                let m = v.triangle.map(|i| proxy_map[i as usize]);
                let (mut lo, mut hi, mut sum) = (Real::INFINITY, Real::NEG_INFINITY, 0.0);
                for (&w, &value) in v.barycentric.iter().zip(&m) {
                    if w > 0.0 {
                        lo = lo.min(value);
                        hi = hi.max(value);
                        sum += w * value;
                    }
                }
                if lo <= hi {
                    sum.clamp(lo, hi)
                } else {
                    m[0]
                }
            })
            .collect())
    }

    /// A per-render-vertex map carried to the proxy vertices (module docs).
    pub fn render_to_proxy(&self, render_map: &[Real]) -> Result<Vec<Real>, BindingError> {
        self.check_len("render map", render_map.len(), self.vertices.len())?;
        check_finite("render map", render_map)?;
        let n = self.proxy_vertex_count;
        let mut sum = vec![0.0f64; n];
        let mut weight = vec![0.0f64; n];
        let mut lo = vec![Real::INFINITY; n];
        let mut hi = vec![Real::NEG_INFINITY; n];
        for (v, &value) in self.vertices.iter().zip(render_map) {
            for k in 0..3 {
                let w = v.barycentric[k];
                if w > 0.0 {
                    let i = v.triangle[k] as usize;
                    sum[i] += f64::from(w) * f64::from(value);
                    weight[i] += f64::from(w);
                    lo[i] = lo[i].min(value);
                    hi[i] = hi[i].max(value);
                }
            }
        }
        let mut out: Vec<Real> = (0..n)
            .map(|i| {
                if weight[i] > 0.0 {
                    ((sum[i] / weight[i]) as Real).clamp(lo[i], hi[i])
                } else {
                    0.0
                }
            })
            .collect();
        for &(p, r) in &self.nearest_render {
            out[p as usize] = render_map[r as usize];
        }
        Ok(out)
    }

    fn check_len(
        &self,
        what: &'static str,
        got: usize,
        expected: usize,
    ) -> Result<(), BindingError> {
        if got == expected {
            Ok(())
        } else {
            Err(BindingError::Length {
                what,
                got,
                expected,
            })
        }
    }
}

/// Rejects NaN and infinite map values.
fn check_finite(what: &'static str, map: &[Real]) -> Result<(), BindingError> {
    match map.iter().position(|x| !x.is_finite()) {
        Some(index) => Err(BindingError::NonFinite { what, index }),
        None => Ok(()),
    }
}

/// The closest proxy triangle to `p` (as proxy vertex indices) and the clamped, normalised
/// barycentric coordinates of the closest point on it.
fn closest_on(query: &TriMesh, p: Vec3) -> ([u32; 3], [Real; 3]) {
    let (proj, (t, location)) = query.project_local_point_and_get_location(p, false);
    let triangle = query.indices()[t as usize];
    let bary = location.barycentric_coordinates().unwrap_or_else(|| {
        let [a, b, c] = triangle.map(|i| query.vertices()[i as usize]);
        crate::collide::barycentric(proj.point, a, b, c)
    });
    let bary = bary.map(|x| {
        if x.is_finite() {
            x.clamp(0.0, 1.0)
        } else {
            0.0
        }
    });
    let sum: Real = bary.iter().sum();
    let bary = if sum > 0.0 {
        bary.map(|x| x / sum)
    } else {
        [1.0 / 3.0; 3]
    };
    (triangle, bary)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square() -> Mesh {
        Mesh::new(
            "square",
            vec![
                Vec3::new(0.0, 0.0, 0.0),
                Vec3::new(1.0, 0.0, 0.0),
                Vec3::new(1.0, 0.0, 1.0),
                Vec3::new(0.0, 0.0, 1.0),
            ],
            vec![[0, 2, 1], [0, 3, 2]],
        )
    }

    /// A render mesh big enough for the parallel deform (about 20k vertices on a 30 × 30
    /// proxy): the same positions, bit for bit, as the per-vertex formula in one loop.
    #[test]
    fn parallel_deform_matches_the_serial_loop() {
        let grid = |n: u32| {
            let mut m = crate::mesh::shapes::grid_cloth(1.0, n, 0.0);
            for p in &mut m.positions {
                p.y = 0.05 * (3.0 * p.x).sin() * (2.0 * p.z).cos();
            }
            m
        };
        let (render, proxy) = (grid(143), grid(30));
        let b = Binding::new(&render, &proxy).unwrap();
        assert!(render.positions.len() >= 2 * DEFORM_CHUNK);
        let moved: Vec<Vec3> = (proxy.positions.iter().enumerate())
            .map(|(i, p)| *p + Vec3::new(0.01 * (i as Real).sin(), 0.1, 0.0))
            .collect();
        let out = b.deformed(&moved).unwrap();
        for (o, v) in out.iter().zip(b.vertices()) {
            let [a, bb, c] = v.triangle.map(|i| moved[i as usize]);
            let [t, s, n] = frame(a, bb, c);
            let [dt, ds, dn] = v.offset_m;
            assert_eq!(*o, foot(a, bb, c, v.barycentric) + t * dt + s * ds + n * dn);
        }
    }

    #[test]
    fn frame_is_orthonormal_and_finite_when_degenerate() {
        for [a, b, c] in [
            [Vec3::ZERO, Vec3::X, Vec3::Z],
            [Vec3::ZERO, Vec3::ZERO, Vec3::ZERO],
            [Vec3::ZERO, Vec3::X, Vec3::X * 2.0],
            [Vec3::ZERO, Vec3::ZERO, Vec3::Y],
        ] {
            let [t, s, n] = frame(a, b, c);
            for e in [t, s, n] {
                assert!((e.length() - 1.0).abs() < 1e-6);
            }
            assert!(t.dot(s).abs() < 1e-6 && t.dot(n).abs() < 1e-6 && s.dot(n).abs() < 1e-6);
        }
    }

    #[test]
    fn point_above_the_proxy_keeps_its_normal_offset() {
        let proxy = square();
        let render = Mesh::new(
            "r",
            vec![
                Vec3::new(0.25, 0.1, 0.5),
                Vec3::new(0.75, 0.1, 0.5),
                Vec3::new(0.5, 0.1, 0.75),
            ],
            vec![[0, 2, 1]],
        );
        let b = Binding::new(&render, &proxy).unwrap();
        for v in b.vertices() {
            // Triangles wind clockwise seen from +Y here, so the normal is −Y.
            assert!((v.offset_m[2].abs() - 0.1).abs() < 1e-6);
            assert!(v.offset_m[0].abs() < 1e-6 && v.offset_m[1].abs() < 1e-6);
        }
        let lifted: Vec<Vec3> = proxy.positions.iter().map(|p| *p + Vec3::Y).collect();
        let out = b.deformed(&lifted).unwrap();
        for (o, p) in out.iter().zip(&render.positions) {
            assert!((*o - (*p + Vec3::Y)).length() < 1e-6);
        }
    }

    #[test]
    fn degenerate_proxy_triangles_are_not_bound_to() {
        let mut proxy = square();
        // A zero-area triangle on top of the first one.
        proxy.positions.push(Vec3::new(0.5, 0.0, 0.5));
        proxy.indices.insert(0, [0, 4, 2]);
        let render = Mesh::new("r", vec![Vec3::new(0.5, 0.0, 0.5); 3], vec![[0, 1, 2]]);
        let b = Binding::new(&render, &proxy).unwrap();
        assert!(b.vertices().iter().all(|v| !v.triangle.contains(&4)));
        // Collapse the proxy to a point: still no NaN.
        let out = b.deformed(&[Vec3::ONE; 5]).unwrap();
        assert!(out.iter().all(|p| p.is_finite()));
        let flat = Mesh::new("flat", vec![Vec3::ZERO; 3], vec![[0, 1, 2]]);
        assert!(matches!(
            Binding::new(&render, &flat),
            Err(BindingError::NoUsableTriangle(_))
        ));
    }

    #[test]
    fn wrong_lengths_and_non_finite_maps_are_errors() {
        let b = Binding::new(&square(), &square()).unwrap();
        let mut out = vec![Vec3::ZERO; 3];
        assert!(matches!(
            b.deform(&square().positions, &mut out),
            Err(BindingError::Length { got: 3, .. })
        ));
        assert!(b.proxy_to_render(&[1.0; 5]).is_err());
        assert!(matches!(
            b.render_to_proxy(&[1.0, Real::NAN, 1.0, 1.0]),
            Err(BindingError::NonFinite { index: 1, .. })
        ));
    }

    #[test]
    fn lonely_proxy_vertex_takes_the_nearest_render_value() {
        // The render mesh covers only a corner of the first proxy triangle, so proxy vertex 3
        // (only in the second triangle) has no render vertex bound to it.
        let render = Mesh::new(
            "r",
            vec![
                Vec3::new(0.9, 0.0, 0.05),
                Vec3::new(0.95, 0.0, 0.05),
                Vec3::new(0.95, 0.0, 0.02),
            ],
            vec![[0, 2, 1]],
        );
        let b = Binding::new(&render, &square()).unwrap();
        let m = b.render_to_proxy(&[1.0, 2.0, 3.0]).unwrap();
        assert_eq!(m[3], 1.0, "nearest render vertex to (0, 0, 1) is the first");
        assert!(m.iter().all(|x| (1.0..=3.0).contains(x)));
        let back = b.proxy_to_render(&[5.0; 4]).unwrap();
        assert_eq!(back, vec![5.0; 3]);
    }
}
