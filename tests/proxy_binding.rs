//! Proxy building and the render binding (issue 4, parts 1 and 2).
//!
//! The render meshes are generated grids, gently curved, with UV seams: a column and a row of
//! vertices duplicated, the triangles on one side using the copies, as a glTF export has them.

use drape::garment::binding::{Binding, BindingError};
use drape::garment::proxy::{
    build_proxy, build_proxy_with, ProxyOptions, ProxyQuality, ProxyTarget,
};
use drape::math::{Real, Vec3};
use drape::mesh::Mesh;

/// A curved `n × n` grid of `size_m` with seams along column `n/2` and row `n/3`: the vertices
/// there are duplicated, and the triangles past them use the duplicates.
fn seamed_grid(n: usize, size_m: Real, origin: Vec3, bend: Real) -> Mesh {
    let s = size_m / (n - 1) as Real;
    let at = |i: usize, j: usize| {
        let (x, z) = (i as Real * s, j as Real * s);
        origin + Vec3::new(x, bend * (3.0 * x).sin() * (2.0 * z).cos(), z)
    };
    let mut positions: Vec<Vec3> = Vec::new();
    for j in 0..n {
        for i in 0..n {
            positions.push(at(i, j));
        }
    }
    let (seam_i, seam_j) = (n / 2, n / 3);
    // Copies of the seam column and row (the crossing vertex gets one copy per seam, and one
    // for both: four vertices at one position).
    let mut col_copy = vec![0u32; n];
    for (j, slot) in col_copy.iter_mut().enumerate() {
        *slot = positions.len() as u32;
        positions.push(at(seam_i, j));
    }
    let mut row_copy = vec![0u32; n];
    for (i, slot) in row_copy.iter_mut().enumerate() {
        *slot = positions.len() as u32;
        positions.push(at(i, seam_j));
    }
    let both = positions.len() as u32;
    positions.push(at(seam_i, seam_j));
    let index = |i: usize, j: usize, ci: usize, cj: usize| -> u32 {
        // Triangles in cell (ci, cj): past the seam column (ci ≥ seam_i) use the column copy,
        // past the seam row (cj ≥ seam_j) the row copy.
        let right = ci >= seam_i && i == seam_i;
        let below = cj >= seam_j && j == seam_j;
        match (right, below) {
            (true, true) => both,
            (true, false) => col_copy[j],
            (false, true) => row_copy[i],
            (false, false) => (j * n + i) as u32,
        }
    };
    let mut indices = Vec::new();
    for cj in 0..n - 1 {
        for ci in 0..n - 1 {
            let v = |di: usize, dj: usize| index(ci + di, cj + dj, ci, cj);
            indices.push([v(0, 0), v(0, 1), v(1, 0)]);
            indices.push([v(1, 0), v(0, 1), v(1, 1)]);
        }
    }
    Mesh::new("seamed grid", positions, indices)
}

/// Groups of render vertices at bitwise equal positions (more than one member).
fn duplicate_groups(mesh: &Mesh) -> Vec<Vec<usize>> {
    let mut map: std::collections::BTreeMap<[u32; 3], Vec<usize>> = Default::default();
    for (i, p) in mesh.positions.iter().enumerate() {
        map.entry(p.to_array().map(f32::to_bits))
            .or_default()
            .push(i);
    }
    map.into_values().filter(|g| g.len() > 1).collect()
}

fn rotation() -> drape::math::Mat3 {
    drape::math::Mat3::from_axis_angle(Vec3::new(0.3, 1.0, -0.5).normalize(), 0.7)
}

#[test]
fn dense_grid_proxy_hits_the_target_and_keeps_its_boundary() {
    let render = seamed_grid(100, 1.0, Vec3::ZERO, 0.05);
    assert_eq!(duplicate_groups(&render).len(), 199, "the seams are there");
    let before = ProxyQuality::measure(&drape::mesh::weld(&render, 1e-5).mesh);
    assert_eq!(before.vertices, 100 * 100);
    let proxy = build_proxy(&render, ProxyTarget::Vertices(1000)).unwrap();
    let q = proxy.quality;
    eprintln!("welded:     {before}");
    eprintln!("simplified: {}", proxy.simplified_quality);
    eprintln!("improved:   {q}");
    assert!(proxy.simplified);
    assert!(
        (900..=1100).contains(&q.vertices),
        "{} vertices for a target of 1000",
        q.vertices
    );
    // One piece, no hole: the seams were welded.
    assert_eq!(q.components, 1);
    assert_eq!(q.degenerate_triangles, 0);
    // The outline: the same corners (locked) and the same length (borders straight in x–z).
    let lo_hi = |m: &Mesh| drape::math::bounds(&m.positions).unwrap();
    let (lo0, hi0) = lo_hi(&drape::mesh::weld(&render, 1e-5).mesh);
    let (lo1, hi1) = lo_hi(&proxy.mesh);
    assert!((lo0 - lo1).abs().max_element() < 1e-3, "{lo0} vs {lo1}");
    assert!((hi0 - hi1).abs().max_element() < 1e-3, "{hi0} vs {hi1}");
    let rel = (q.boundary_length_m - before.boundary_length_m).abs() / before.boundary_length_m;
    assert!(
        rel < 0.01,
        "outline {} m vs {} m",
        q.boundary_length_m,
        before.boundary_length_m
    );
    assert!((q.area_m2 - before.area_m2).abs() / before.area_m2 < 0.01);
    // Triangle shape: the bound the improvement passes reach on this grid, with a margin.
    assert!(q.min_angle_deg >= 25.0, "min angle {}", q.min_angle_deg);
    assert!(q.min_angle_deg >= proxy.simplified_quality.min_angle_deg);
    assert!(q.max_aspect_ratio < 2.5, "aspect {}", q.max_aspect_ratio);
}

#[test]
fn lock_border_keeps_every_border_vertex() {
    let render = seamed_grid(60, 1.0, Vec3::ZERO, 0.05);
    let options = ProxyOptions {
        lock_border: true,
        ..ProxyOptions::default()
    };
    let proxy = build_proxy_with(&render, ProxyTarget::Vertices(600), &options).unwrap();
    let before = ProxyQuality::measure(&drape::mesh::weld(&render, 1e-5).mesh);
    assert_eq!(proxy.quality.boundary_edges, before.boundary_edges);
    assert!((proxy.quality.boundary_length_m - before.boundary_length_m).abs() < 1e-4);
}

#[test]
fn two_pieces_close_together_stay_separate() {
    // Two squares 5 mm apart, each 60 × 60 vertices.
    let mut render = seamed_grid(60, 0.5, Vec3::ZERO, 0.0);
    render.append(&seamed_grid(60, 0.5, Vec3::new(0.505, 0.0, 0.0), 0.0));
    let welded = drape::mesh::weld(&render, 1e-5).mesh;
    assert_eq!(ProxyQuality::measure(&welded).components, 2);
    let proxy = build_proxy(&render, ProxyTarget::Vertices(500)).unwrap();
    assert_eq!(proxy.quality.components, 2, "{}", proxy.quality);
    // No triangle spans the gap, and each piece got about half of the vertices.
    for t in &proxy.mesh.indices {
        let xs = t.map(|i| proxy.mesh.positions[i as usize].x);
        let left = xs.iter().filter(|x| **x <= 0.5 + 1e-6).count();
        assert!(left == 0 || left == 3, "a triangle spans the gap: {xs:?}");
    }
    let left = proxy
        .mesh
        .positions
        .iter()
        .filter(|p| p.x <= 0.5 + 1e-6)
        .count();
    let right = proxy.mesh.positions.len() - left;
    assert!(
        left.abs_diff(right) * 10 < left + right,
        "{left} vs {right} vertices"
    );
}

#[test]
fn proxy_is_deterministic() {
    let render = seamed_grid(50, 1.0, Vec3::ZERO, 0.05);
    let a = build_proxy(&render, ProxyTarget::Vertices(300)).unwrap();
    let b = build_proxy(&render, ProxyTarget::Vertices(300)).unwrap();
    assert_eq!(a.mesh, b.mesh);
}

/// The standard binding set-up: a curved, seamed 100 × 100 render grid on a 1k proxy.
fn bound() -> (Mesh, Mesh, Binding) {
    let render = seamed_grid(100, 1.0, Vec3::new(0.2, 1.0, -0.3), 0.05);
    let proxy = build_proxy(&render, ProxyTarget::Vertices(1000))
        .unwrap()
        .mesh;
    let binding = Binding::new(&render, &proxy).unwrap();
    (render, proxy, binding)
}

#[test]
fn binding_at_rest_reproduces_the_render_mesh() {
    let (render, proxy, binding) = bound();
    eprintln!("max offset from the proxy {} m", binding.max_offset_m());
    let out = binding.deformed(&proxy.positions).unwrap();
    let err = out
        .iter()
        .zip(&render.positions)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, Real::max);
    assert!(err <= 1e-6, "rest error {err} m");
}

#[test]
fn rigid_motion_of_the_proxy_moves_the_render_mesh_rigidly() {
    let (render, proxy, binding) = bound();
    let (r, t) = (rotation(), Vec3::new(0.3, -0.2, 0.5));
    let moved: Vec<Vec3> = proxy.positions.iter().map(|p| r * *p + t).collect();
    let mut out = vec![Vec3::ZERO; render.positions.len()];
    binding.deform(&moved, &mut out).unwrap();
    let err = out
        .iter()
        .zip(&render.positions)
        .map(|(a, b)| a.distance(r * *b + t))
        .fold(0.0, Real::max);
    assert!(err <= 1e-5, "rigid error {err} m");
}

#[test]
fn seam_duplicates_never_separate() {
    let (render, proxy, binding) = bound();
    let groups = duplicate_groups(&render);
    assert!(!groups.is_empty());
    // A non-rigid deformation: a twist plus a wave.
    let bent: Vec<Vec3> = proxy
        .positions
        .iter()
        .map(|p| {
            let a = 0.8 * p.x;
            Vec3::new(
                p.x,
                p.y * a.cos() - p.z * a.sin() + 0.1 * (5.0 * p.z).sin(),
                p.y * a.sin() + p.z * a.cos(),
            )
        })
        .collect();
    let out = binding.deformed(&bent).unwrap();
    let moved = out
        .iter()
        .zip(&render.positions)
        .map(|(a, b)| a.distance(*b))
        .fold(0.0, Real::max);
    assert!(moved > 0.05, "the deformation does something ({moved} m)");
    for g in groups {
        let first = out[g[0]].to_array().map(f32::to_bits);
        for &i in &g[1..] {
            assert_eq!(out[i].to_array().map(f32::to_bits), first, "group {g:?}");
        }
    }
}

#[test]
fn render_vertex_outside_the_proxy_follows() {
    // Proxy: the unit square; render: a grid reaching 5 cm past its +x (and +z) border. The
    // vertices past the +x border, beside the square, are checked.
    let proxy = Mesh::new(
        "proxy",
        vec![
            Vec3::new(0.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 0.0),
            Vec3::new(1.0, 0.0, 1.0),
            Vec3::new(0.0, 0.0, 1.0),
        ],
        vec![[0, 2, 1], [0, 3, 2]],
    );
    let mut render = seamed_grid(22, 1.05, Vec3::ZERO, 0.0);
    // Lift the render mesh 1 mm off the proxy, as thickness geometry would be.
    render.positions.iter_mut().for_each(|p| p.y += 0.001);
    let binding = Binding::new(&render, &proxy).unwrap();
    let outside: Vec<usize> = (0..render.positions.len())
        .filter(|&i| render.positions[i].x > 1.0 + 1e-4 && render.positions[i].z < 1.0 - 1e-4)
        .collect();
    assert!(!outside.is_empty());
    // At rest and after a translation it follows exactly.
    let t = Vec3::new(0.0, 0.4, 0.1);
    let moved: Vec<Vec3> = proxy.positions.iter().map(|p| *p + t).collect();
    let out = binding.deformed(&moved).unwrap();
    for &i in &outside {
        assert!(out[i].distance(render.positions[i] + t) < 1e-6);
    }
    // Stretched to twice its width, the proxy carries the outside vertices along: they stay
    // past the new border at their old distance from it.
    let stretched: Vec<Vec3> = proxy
        .positions
        .iter()
        .map(|p| Vec3::new(2.0 * p.x, p.y, p.z))
        .collect();
    let out = binding.deformed(&stretched).unwrap();
    for &i in &outside {
        let p = render.positions[i];
        let border = Vec3::new(2.0, 0.0, p.z);
        let was = p.distance(Vec3::new(1.0, 0.0, p.z));
        assert!(out[i].x > 2.0, "vertex {i} at {} left behind", out[i]);
        assert!(
            (out[i].distance(border) - was).abs() < 1e-5,
            "vertex {i}: {} m from the border, was {was} m",
            out[i].distance(border)
        );
    }
}

#[test]
fn maps_transfer_constant_exactly_and_linear_approximately() {
    let render = seamed_grid(100, 1.0, Vec3::ZERO, 0.0);
    let proxy = build_proxy(&render, ProxyTarget::Vertices(1000)).unwrap();
    let binding = Binding::new(&render, &proxy.mesh).unwrap();
    let (np, nr) = (proxy.mesh.positions.len(), render.positions.len());
    // Constant maps come out exactly.
    assert_eq!(
        binding.render_to_proxy(&vec![0.37; nr]).unwrap(),
        vec![0.37; np]
    );
    assert_eq!(
        binding.proxy_to_render(&vec![0.37; np]).unwrap(),
        vec![0.37; nr]
    );
    // A linear map: proxy → render interpolates it exactly on the (flat) proxy, up to rounding;
    // render → proxy averages it over each vertex's triangles, so it is off by at most about
    // the gradient times an edge length (at the border, where the average is one-sided).
    let f = |p: Vec3| 2.0 * p.x + 3.0 * p.z + 1.0;
    let on_proxy: Vec<Real> = proxy.mesh.positions.iter().map(|p| f(*p)).collect();
    let to_render = binding.proxy_to_render(&on_proxy).unwrap();
    for (v, p) in to_render.iter().zip(&render.positions) {
        assert!((v - f(*p)).abs() < 1e-4, "{v} vs {}", f(*p));
    }
    let on_render: Vec<Real> = render.positions.iter().map(|p| f(*p)).collect();
    let to_proxy = binding.render_to_proxy(&on_render).unwrap();
    let gradient = 13.0f32.sqrt();
    let h = proxy.quality.mean_edge_length_m;
    let mut sum = 0.0;
    for (v, p) in to_proxy.iter().zip(&proxy.mesh.positions) {
        let e = (v - f(*p)).abs();
        assert!(e < gradient * h, "{v} vs {} at {p}", f(*p));
        sum += e;
    }
    let mean = sum / np as Real;
    assert!(
        mean < 0.1 * gradient * h,
        "mean error {mean} (gradient × edge {})",
        gradient * h
    );
    assert!(matches!(
        binding.render_to_proxy(&[1.0]),
        Err(BindingError::Length { .. })
    ));
}
