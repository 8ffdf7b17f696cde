use drape::math::{Real, Vec3};
use drape::mesh::{Mesh, Topology};
use drape::proxy::{build_proxy_with, ProxyOptions, ProxyTarget};

fn grid(n: usize) -> Mesh {
    let s = 1.0 / (n - 1) as Real;
    let mut p = Vec::new();
    let mut idx = Vec::new();
    for j in 0..n {
        for i in 0..n {
            let (x, z) = (i as Real * s, j as Real * s);
            p.push(Vec3::new(x, 0.05 * (3.0 * x).sin() * (2.0 * z).cos(), z));
        }
    }
    for j in 0..n - 1 {
        for i in 0..n - 1 {
            let v = (j * n + i) as u32;
            let n = n as u32;
            idx.push([v, v + n, v + 1]);
            idx.push([v + 1, v + n, v + n + 1]);
        }
    }
    Mesh::new("g", p, idx)
}
fn ang(a: Vec3, b: Vec3, c: Vec3) -> Real {
    let f = |p: Vec3, q: Vec3, r: Vec3| {
        let (u, v) = (q - p, r - p);
        u.cross(v).length().atan2(u.dot(v))
    };
    f(a, b, c).min(f(b, c, a)).min(f(c, a, b)).to_degrees()
}

#[test]
fn debug() {
    let m = grid(100);
    for passes in [0u32, 4, 10] {
        let o = ProxyOptions {
            improve_passes: passes,
            ..Default::default()
        };
        let p = build_proxy_with(&m, ProxyTarget::Vertices(1000), &o).unwrap();
        eprintln!("passes {passes}: {}", p.quality);
        let topo = Topology::new(&p.mesh);
        let mut bnd = vec![false; p.mesh.positions.len()];
        for &e in &topo.boundary_edges {
            for v in topo.edges[e as usize] {
                bnd[v as usize] = true;
            }
        }
        let mut worst: Vec<(Real, [u32; 3])> = p
            .mesh
            .indices
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| p.mesh.positions[i as usize]);
                (ang(a, b, c), *t)
            })
            .collect();
        worst.sort_by(|a, b| a.0.total_cmp(&b.0));
        let below20 = worst.iter().filter(|w| w.0 < 20.0).count();
        let below30 = worst.iter().filter(|w| w.0 < 30.0).count();
        eprintln!("  <20°: {below20}, <30°: {below30}");
        for (a, t) in worst.iter().take(6) {
            let nb = t.iter().filter(|&&i| bnd[i as usize]).count();
            eprintln!(
                "  {a:.1}° boundary corners {nb}: {:?}",
                t.map(|i| {
                    let q = p.mesh.positions[i as usize];
                    (q.x * 100.0).round() / 100.0 + (q.z * 100.0).round() / 100.0 * 1000.0
                })
            );
        }
    }
}
