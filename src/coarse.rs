//! Experiment (stop 31): a coarse cloth of patches joined by pull-only distance limits between
//! their centres, projected after each sweep's membrane and interpolated back.

use crate::collide::Contact;
use crate::constraints::Distance;
use crate::math::{Real, Vec3};

pub const SUPPORT: usize = 4;
pub const RADIUS: usize = 4;

#[derive(Clone, Debug)]
pub struct CoarseCloth {
    weights: Vec<[(u32, f64); SUPPORT]>,
    cells: usize,
    /// Coarse links (A, B, rest distance between centres, m).
    links: Vec<(u32, u32, f64)>,
    /// Per link: the particles of the rest edge path between the two cells' seeds, and its rest length (m).
    paths: Vec<(Vec<u32>, f64)>,
    mass: Vec<f64>,
    centre: Vec<[f64; 3]>,
    moved: Vec<[f64; 3]>,
    pinned: Vec<bool>,
    heavy: Vec<f64>,
}

impl CoarseCloth {
    pub fn new(
        positions: &[Vec3],
        edges: &[Distance],
        mass_kg: &[Real],
        inv_mass: &[Real],
    ) -> Option<Self> {
        let n = positions.len();
        if n == 0 || edges.is_empty() {
            return None;
        }
        let radius: usize = std::env::var("DRAPE_RADIUS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(RADIUS);
        let (start, adj) = adjacency(n, edges);
        let (cell, cells) = voronoi(positions, &start, &adj, radius);
        if cells < 2 {
            return None;
        }
        let weights = smooth(&cell, &start, &adj, radius);
        let mut s = Self {
            weights,
            cells,
            links: Vec::new(),
            paths: Vec::new(),
            mass: vec![0.0; cells],
            centre: vec![[0.0; 3]; cells],
            moved: vec![[0.0; 3]; cells],
            pinned: vec![false; cells],
            heavy: vec![1.0; cells],
        };
        for i in 0..n {
            for &(a, v) in s.weights[i].iter().filter(|w| w.1 != 0.0) {
                s.mass[a as usize] += v * f64::from(mass_kg[i]);
                if inv_mass[i] <= 0.0 && v > 0.25 {
                    s.pinned[a as usize] = true;
                }
            }
        }
        let rest = s.centres(positions);
        // Links between cells that share an edge, and (optionally) their neighbours' neighbours.
        let mut pairs = std::collections::BTreeSet::new();
        for e in edges {
            let (a, b) = (cell[e.particles[0] as usize], cell[e.particles[1] as usize]);
            if a != b {
                pairs.insert((a.min(b), a.max(b)));
            }
        }
        if std::env::var("DRAPE_LINK2").is_ok() {
            let first: Vec<(u32, u32)> = pairs.iter().copied().collect();
            let mut nb = vec![Vec::new(); cells];
            for &(a, b) in &first {
                nb[a as usize].push(b);
                nb[b as usize].push(a);
            }
            for a in 0..cells {
                for &b in &nb[a] {
                    for &c in &nb[b as usize] {
                        if c as usize != a {
                            pairs.insert(((a as u32).min(c), (a as u32).max(c)));
                        }
                    }
                }
            }
        }
        for (a, b) in pairs {
            let (p, q) = (rest[a as usize], rest[b as usize]);
            let d = ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2)).sqrt();
            s.links.push((a, b, d));
        }
        // Seeds: each cell's particle of largest weight.
        let mut seed = vec![(0usize, -1.0f64); cells];
        for i in 0..n {
            for &(a, v) in s.weights[i].iter().filter(|w| w.1 != 0.0) {
                if v > seed[a as usize].1 {
                    seed[a as usize] = (i, v);
                }
            }
        }
        let links = s.links.clone();
        for &(a, b, _) in &links {
            let (from, to) = (seed[a as usize].0, seed[b as usize].0);
            // BFS path.
            let mut prev = vec![usize::MAX; n];
            let mut q = std::collections::VecDeque::new();
            prev[from] = from;
            q.push_back(from);
            while let Some(i) = q.pop_front() {
                if i == to {
                    break;
                }
                for &j in &adj[start[i]..start[i + 1]] {
                    let j = j as usize;
                    if prev[j] == usize::MAX {
                        prev[j] = i;
                        q.push_back(j);
                    }
                }
            }
            let mut path = vec![to as u32];
            let mut k = to;
            while k != from && prev[k] != usize::MAX {
                k = prev[k];
                path.push(k as u32);
            }
            path.reverse();
            let l0: f64 = path
                .windows(2)
                .map(|p| f64::from((positions[p[1] as usize] - positions[p[0] as usize]).length()))
                .sum();
            s.paths.push((path, l0));
        }
        Some(s)
    }

    fn centres(&self, x: &[Vec3]) -> Vec<[f64; 3]> {
        let mut c = vec![[0.0; 3]; self.cells];
        let mut m = vec![0.0; self.cells];
        for (i, p) in x.iter().enumerate() {
            for &(a, v) in self.weights[i].iter().filter(|w| w.1 != 0.0) {
                let k = a as usize;
                c[k][0] += v * f64::from(p.x);
                c[k][1] += v * f64::from(p.y);
                c[k][2] += v * f64::from(p.z);
                m[k] += v;
            }
        }
        for (ck, mk) in c.iter_mut().zip(&m) {
            for v in ck.iter_mut() {
                *v /= mk;
            }
        }
        c
    }

    fn correct_paths(&mut self, x: &mut [Vec3], w: &[Real]) {
        let slack: f64 = std::env::var("DRAPE_PSLACK")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        let iterations: usize = std::env::var("DRAPE_CIT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(4);
        let inv: Vec<f64> = (0..self.cells)
            .map(|k| {
                if self.pinned[k] {
                    0.0
                } else {
                    1.0 / self.mass[k]
                }
            })
            .collect();
        // Linearise each stretched path: length, and its gradient per cell.
        let mut rows: Vec<(f64, Vec<(u32, [f64; 3])>)> = Vec::new();
        for (path, l0) in &self.paths {
            let mut l = 0.0;
            let mut g: Vec<(u32, [f64; 3])> = Vec::new();
            for p in path.windows(2) {
                let (a, b) = (p[0] as usize, p[1] as usize);
                let d = x[b] - x[a];
                let len = d.length();
                if len == 0.0 {
                    continue;
                }
                l += f64::from(len);
                let nrm = d / len;
                let nrm = [f64::from(nrm.x), f64::from(nrm.y), f64::from(nrm.z)];
                for (i, sign) in [(b, 1.0), (a, -1.0)] {
                    for &(c, v) in self.weights[i].iter().filter(|s| s.1 != 0.0) {
                        let add = [sign * v * nrm[0], sign * v * nrm[1], sign * v * nrm[2]];
                        match g.iter_mut().find(|e| e.0 == c) {
                            Some(e) => {
                                for k in 0..3 {
                                    e.1[k] += add[k];
                                }
                            }
                            None => g.push((c, add)),
                        }
                    }
                }
            }
            let c = l - l0 * (1.0 + slack);
            if c > 0.0 {
                rows.push((c, g));
            }
        }
        let mut t = vec![[0.0f64; 3]; self.cells];
        for it in 0..iterations {
            let n = rows.len();
            for r in 0..n {
                let r = if it % 2 == 0 { r } else { n - 1 - r };
                let (c0, g) = &rows[r];
                let mut c = *c0;
                let mut den = 0.0;
                for (a, ga) in g {
                    let ta = t[*a as usize];
                    c += ga[0] * ta[0] + ga[1] * ta[1] + ga[2] * ta[2];
                    den += inv[*a as usize] * (ga[0] * ga[0] + ga[1] * ga[1] + ga[2] * ga[2]);
                }
                if c <= 0.0 || den <= 0.0 {
                    continue;
                }
                let s = c / den;
                for (a, ga) in g {
                    let wa = inv[*a as usize];
                    for k in 0..3 {
                        t[*a as usize][k] -= wa * s * ga[k];
                    }
                }
            }
        }
        if std::env::var("DRAPE_DBG").is_ok() {
            let tm = t
                .iter()
                .map(|v| (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt())
                .fold(0.0, f64::max);
            let cm = rows.iter().map(|r| r.0).fold(0.0, f64::max);
            eprintln!(
                "rows {} of {} max c {cm:.2e} max t {tm:.2e}",
                rows.len(),
                self.paths.len()
            );
        }
        for (i, xi) in x.iter_mut().enumerate() {
            if w[i] <= 0.0 {
                continue;
            }
            let mut d = [0.0; 3];
            for &(a, v) in self.weights[i].iter().filter(|s| s.1 != 0.0) {
                for k in 0..3 {
                    d[k] += v * t[a as usize][k];
                }
            }
            *xi += Vec3::new(d[0] as Real, d[1] as Real, d[2] as Real);
        }
    }

    pub fn cells(&self) -> usize {
        self.cells
    }

    pub fn correct(&mut self, x: &mut [Vec3], w: &[Real], contacts: &[Contact]) {
        if std::env::var("DRAPE_PATH").is_ok() {
            return self.correct_paths(x, w);
        }
        let c0 = self.centres(x);
        self.centre.clone_from(&c0);
        self.heavy.fill(1.0);
        let hv: f64 = std::env::var("DRAPE_HEAVY")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0);
        if hv > 0.0 {
            for c in contacts {
                for &(a, v) in self.weights[c.particle as usize]
                    .iter()
                    .filter(|s| s.1 > 0.25)
                {
                    let _ = v;
                    self.heavy[a as usize] = 1.0 + hv;
                }
            }
        }
        let iterations: usize = std::env::var("DRAPE_CIT")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(4);
        let inv: Vec<f64> = (0..self.cells)
            .map(|k| {
                if self.pinned[k] {
                    0.0
                } else {
                    1.0 / (self.mass[k] * self.heavy[k])
                }
            })
            .collect();
        for it in 0..iterations {
            let order: Box<dyn Iterator<Item = usize>> = if it % 2 == 0 {
                Box::new(0..self.links.len())
            } else {
                Box::new((0..self.links.len()).rev())
            };
            for l in order {
                let (a, b, rest) = self.links[l];
                let (a, b) = (a as usize, b as usize);
                let (wa, wb) = (inv[a], inv[b]);
                if wa + wb == 0.0 {
                    continue;
                }
                let (p, q) = (self.centre[a], self.centre[b]);
                let d = [p[0] - q[0], p[1] - q[1], p[2] - q[2]];
                let len = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
                if len <= rest || len == 0.0 {
                    continue;
                }
                let s = (len - rest) / (len * (wa + wb));
                for k in 0..3 {
                    self.centre[a][k] -= wa * s * d[k];
                    self.centre[b][k] += wb * s * d[k];
                }
            }
        }
        for k in 0..self.cells {
            for c in 0..3 {
                self.moved[k][c] = self.centre[k][c] - c0[k][c];
            }
        }
        for (i, xi) in x.iter_mut().enumerate() {
            if w[i] <= 0.0 {
                continue;
            }
            let mut d = [0.0; 3];
            for &(a, v) in self.weights[i].iter().filter(|s| s.1 != 0.0) {
                for c in 0..3 {
                    d[c] += v * self.moved[a as usize][c];
                }
            }
            *xi += Vec3::new(d[0] as Real, d[1] as Real, d[2] as Real);
        }
    }
}

fn adjacency(n: usize, edges: &[Distance]) -> (Vec<usize>, Vec<u32>) {
    let mut start = vec![0usize; n + 1];
    for e in edges {
        for &p in &e.particles {
            start[p as usize + 1] += 1;
        }
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut adj = vec![0u32; start[n]];
    for e in edges {
        let [a, b] = e.particles;
        adj[fill[a as usize]] = b;
        fill[a as usize] += 1;
        adj[fill[b as usize]] = a;
        fill[b as usize] += 1;
    }
    (start, adj)
}

/// Geodesic Voronoi cells (along the rest edges) of seeds at least `radius` edges apart,
/// picked greedily in index order; a particle no seed reaches is its own seed. Returns each
/// particle's cell and the number of cells.
fn voronoi(positions: &[Vec3], start: &[usize], adj: &[u32], radius: usize) -> (Vec<u32>, usize) {
    let n = positions.len();
    let mut hops = vec![usize::MAX; n];
    let mut seeds = Vec::new();
    let mut queue = std::collections::VecDeque::new();
    for seed in 0..n {
        if hops[seed] <= radius {
            continue;
        }
        seeds.push(seed);
        hops[seed] = 0;
        queue.push_back(seed);
        while let Some(i) = queue.pop_front() {
            if hops[i] >= radius {
                continue;
            }
            for &j in &adj[start[i]..start[i + 1]] {
                let j = j as usize;
                if hops[j] > hops[i] + 1 {
                    hops[j] = hops[i] + 1;
                    queue.push_back(j);
                }
            }
        }
    }
    let mut cell = vec![u32::MAX; n];
    let mut dist = vec![f64::INFINITY; n];
    let mut heap = std::collections::BinaryHeap::new();
    for (k, &s) in seeds.iter().enumerate() {
        dist[s] = 0.0;
        cell[s] = k as u32;
        heap.push((std::cmp::Reverse(Metres(0.0)), s));
    }
    while let Some((std::cmp::Reverse(Metres(d)), i)) = heap.pop() {
        if d > dist[i] {
            continue;
        }
        for &j in &adj[start[i]..start[i + 1]] {
            let j = j as usize;
            let nd = d + f64::from((positions[i] - positions[j]).length());
            if nd < dist[j] {
                dist[j] = nd;
                cell[j] = cell[i];
                heap.push((std::cmp::Reverse(Metres(nd)), j));
            }
        }
    }
    (cell, seeds.len())
}

/// A distance (m) ordered by `total_cmp`, for the heap.
#[derive(Clone, Copy, Debug)]
struct Metres(f64);

impl PartialEq for Metres {
    fn eq(&self, other: &Self) -> bool {
        self.0.total_cmp(&other.0).is_eq()
    }
}
impl Eq for Metres {}
impl PartialOrd for Metres {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Metres {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The cells' indicators smoothed `steps` times over the edges, each particle's cut to its
/// [`SUPPORT`] largest and renormalised to sum to 1.
fn smooth(cell: &[u32], start: &[usize], adj: &[u32], steps: usize) -> Vec<[(u32, f64); SUPPORT]> {
    const OMEGA: f64 = 2.0 / 3.0;
    let n = cell.len();
    let mut phi: Vec<Vec<(u32, f64)>> = cell.iter().map(|&a| vec![(a, 1.0)]).collect();
    for _ in 0..steps {
        let next = (0..n)
            .map(|i| {
                let nb = &adj[start[i]..start[i + 1]];
                if nb.is_empty() {
                    return phi[i].clone();
                }
                let mut acc: Vec<(u32, f64)> = phi[i]
                    .iter()
                    .map(|&(a, v)| (a, (1.0 - OMEGA) * v))
                    .collect();
                let share = OMEGA / nb.len() as f64;
                for &j in nb {
                    for &(a, v) in &phi[j as usize] {
                        match acc.iter_mut().find(|s| s.0 == a) {
                            Some(slot) => slot.1 += share * v,
                            None => acc.push((a, share * v)),
                        }
                    }
                }
                acc
            })
            .collect();
        phi = next;
    }
    phi.into_iter()
        .map(|mut p| {
            p.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            p.truncate(SUPPORT);
            let sum: f64 = p.iter().map(|s| s.1).sum();
            let mut w = [(0u32, 0.0f64); SUPPORT];
            for (slot, (a, v)) in w.iter_mut().zip(p) {
                *slot = (a, v / sum);
            }
            w
        })
        .collect()
}
