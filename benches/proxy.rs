//! Proxy building and render binding for a production-sized garment (issue 4): a generated,
//! gently curved 224 × 224 render grid (50 176 vertices, plus a UV-seam column and row of
//! duplicates: 50 624 render vertices) reduced to a 4k-vertex proxy.
//!
//! Groups: `build_proxy` (weld, simplify, improve), `bind` (binding the render mesh to the
//! proxy), `build_and_bind` (both: the set-up cost of one garment), and `deform` (rebuilding the
//! render mesh from the proxy, the per-frame cost). The proxy's quality is printed once.
//!
//! Run: `cargo bench --bench proxy` (add `-- --quick` for a short run).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use drape::garment::binding::Binding;
use drape::garment::proxy::{build_proxy, ProxyTarget};
use drape::math::{Real, Vec3};
use drape::mesh::Mesh;

const N: usize = 224;
const TARGET: usize = 4000;

/// A curved `n × n` grid, 1.2 m across, with a seam column and row: the vertices on them are
/// duplicated and the triangles past them use the copies.
fn render_mesh(n: usize) -> Mesh {
    let s = 1.2 / (n - 1) as Real;
    let at = |i: usize, j: usize| {
        let (x, z) = (i as Real * s, j as Real * s);
        Vec3::new(x, 0.08 * (2.5 * x).sin() * (1.5 * z).cos(), z)
    };
    let mut positions: Vec<Vec3> = (0..n * n).map(|k| at(k % n, k / n)).collect();
    let (si, sj) = (n / 2, n / 3);
    let col: Vec<u32> = (0..n)
        .map(|j| {
            positions.push(at(si, j));
            (positions.len() - 1) as u32
        })
        .collect();
    let row: Vec<u32> = (0..n)
        .map(|i| {
            positions.push(at(i, sj));
            (positions.len() - 1) as u32
        })
        .collect();
    positions.push(at(si, sj));
    let both = (positions.len() - 1) as u32;
    let mut indices = Vec::with_capacity(2 * (n - 1) * (n - 1));
    for cj in 0..n - 1 {
        for ci in 0..n - 1 {
            let v = |i: usize, j: usize| match (ci >= si && i == si, cj >= sj && j == sj) {
                (true, true) => both,
                (true, false) => col[j],
                (false, true) => row[i],
                (false, false) => (j * n + i) as u32,
            };
            indices.push([v(ci, cj), v(ci, cj + 1), v(ci + 1, cj)]);
            indices.push([v(ci + 1, cj), v(ci, cj + 1), v(ci + 1, cj + 1)]);
        }
    }
    Mesh::new("bench garment", positions, indices)
}

fn proxy(c: &mut Criterion) {
    let render = render_mesh(N);
    let built = build_proxy(&render, ProxyTarget::Vertices(TARGET)).expect("proxy");
    eprintln!(
        "render {} vertices ({} welded) -> proxy: {}",
        render.positions.len(),
        built.welded_vertices,
        built.quality
    );
    eprintln!("straight from simplification: {}", built.simplified_quality);
    let binding = Binding::new(&render, &built.mesh).expect("binding");
    eprintln!(
        "binding: max offset from the proxy {:.2} mm",
        binding.max_offset_m() * 1000.0
    );

    let mut group = c.benchmark_group("proxy_50k_to_4k");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("build_proxy", |b| {
        b.iter(|| build_proxy(black_box(&render), ProxyTarget::Vertices(TARGET)).expect("proxy"))
    });
    group.bench_function("bind", |b| {
        b.iter(|| Binding::new(black_box(&render), &built.mesh).expect("binding"))
    });
    group.bench_function("build_and_bind", |b| {
        b.iter(|| {
            let p = build_proxy(black_box(&render), ProxyTarget::Vertices(TARGET)).expect("proxy");
            Binding::new(&render, &p.mesh).expect("binding")
        })
    });
    let mut out = vec![Vec3::ZERO; render.positions.len()];
    group.bench_function("deform", |b| {
        b.iter(|| {
            binding
                .deform(black_box(&built.mesh.positions), &mut out)
                .expect("deform")
        })
    });
    group.finish();
}

criterion_group!(benches, proxy);
criterion_main!(benches);
