//! Issue 9, odd geometry: garments with zero-area triangles, non-manifold edges, duplicate
//! vertices, isolated vertices and thin slivers simulate 48 frames without a non-finite value.
//!
//! Each garment is a 0.5 m grid of 9 × 9 vertices, 1 m up and pinned along one edge (it swings
//! down like a curtain released sideways), spoiled in one way, written to glTF and baked through
//! the whole pipeline (import, weld, quality checks, pins, solver) over a box it hits.

use std::path::Path;

use drape::bake::{bake, collapse_short_edges, BakeOptions, LoadedScene, SHORT_EDGE_FRACTION};
use drape::io::gltf_export::write_static_glb;
use drape::math::{Real, Vec3};
use drape::mesh::shapes::{cuboid, grid_cloth};
use drape::mesh::{weld, Mesh};
use drape::scene::{BodySpec, GarmentSpec, Pins, Scene, Timeline};

/// Vertices per side of the test grid.
const N: u32 = 9;

/// The unspoiled grid (vertex `j · N + i`), without UVs or normals so that every spoiled
/// variant can add vertices freely.
fn grid() -> Mesh {
    let mut m = grid_cloth(0.5, N, 1.0);
    m.uvs = None;
    m.normals = None;
    m
}

/// The grid's first row (z = −0.25), pinned.
fn pinned_row() -> Vec<u32> {
    (0..N).collect()
}

/// Bakes `mesh` as the only garment, pinned at `pins`, over a box below it, with `weld_m` as
/// the weld tolerance; checks 48 finite frames and returns the bake's warnings.
fn bake_finite(dir: &Path, mesh: &Mesh, pins: Vec<u32>, weld_m: Real) -> Vec<String> {
    write_static_glb(&dir.join("garment.glb"), &[mesh]).unwrap();
    let body = cuboid("box", Vec3::new(-0.2, 0.0, -0.1), Vec3::new(0.2, 0.7, 0.3));
    write_static_glb(&dir.join("box.glb"), &[&body]).unwrap();
    let scene = Scene {
        name: "degenerate".into(),
        body: Some(BodySpec {
            path: "box.glb".into(),
            ..Default::default()
        }),
        garments: vec![GarmentSpec {
            name: "spoiled".into(),
            path: "garment.glb".into(),
            pins: Pins::Vertices(pins),
            weld_tolerance_m: weld_m,
            ..Default::default()
        }],
        timeline: Timeline {
            end_frame: Some(48),
            ..Default::default()
        },
        ..Default::default()
    };
    let path = dir.join("scene.ron");
    scene.save(&path).unwrap();
    let loaded = LoadedScene::load(&path).expect("the spoiled garment loads");
    let result = bake(&loaded, &BakeOptions::default()).expect("the spoiled garment bakes");
    assert_eq!(result.frames.len(), 48);
    for (k, frame) in result.frames.iter().enumerate() {
        assert_eq!(frame.len(), mesh.positions.len());
        if let Some(i) = frame.iter().position(|p| !p.is_finite()) {
            panic!("frame {k}: vertex {i} is {}", frame[i]);
        }
    }
    assert!(result.stats.per_frame.iter().all(|f| f.non_finite == 0));
    // The free edge swung down: the cloth moved (a solver that froze would pass the rest).
    let last = result.frames.last().unwrap();
    let lowest = last.iter().map(|p| p.y).fold(Real::MAX, Real::min);
    assert!(
        lowest < 0.8,
        "the cloth did not fall: lowest point {lowest} m"
    );
    println!(
        "max stretch {:.3}, rollbacks {}; warnings: {:?}",
        result.stats.summary.max_stretch, result.stats.summary.rollbacks, result.stats.warnings
    );
    result.stats.warnings
}

fn has(warnings: &[String], text: &str) {
    assert!(
        warnings.iter().any(|w| w.contains(text)),
        "no warning with '{text}' in {warnings:?}"
    );
}

#[test]
fn zero_area_triangles_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = grid();
    let id = |i: u32, j: u32| j * N + i;
    // Three collinear vertices of a row, a triangle with a repeated vertex, and one whose
    // three corners are the same vertex.
    m.indices.push([id(2, 4), id(3, 4), id(4, 4)]);
    m.indices.push([id(5, 5), id(5, 5), id(6, 5)]);
    m.indices.push([id(7, 7), id(7, 7), id(7, 7)]);
    // A new vertex on an edge's midpoint, used only by a flat triangle on that edge.
    let mid = (m.positions[id(1, 1) as usize] + m.positions[id(2, 1) as usize]) * 0.5;
    m.positions.push(mid);
    let k = m.positions.len() as u32 - 1;
    m.indices.push([id(1, 1), k, id(2, 1)]);
    let w = bake_finite(dir.path(), &m, pinned_row(), 1e-5);
    has(&w, "zero area");
}

#[test]
fn non_manifold_edges_simulate() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = grid();
    let id = |i: u32, j: u32| j * N + i;
    // Fins: a third and a fourth triangle on interior edges, hanging below the sheet.
    for (a, b) in [(id(3, 3), id(4, 3)), (id(5, 6), id(5, 7))] {
        let below = (m.positions[a as usize] + m.positions[b as usize]) * 0.5 - Vec3::Y * 0.05;
        m.positions.push(below);
        let k = m.positions.len() as u32 - 1;
        m.indices.push([a, b, k]);
        m.indices.push([b, a, k]);
    }
    // A triangle listed twice.
    let t = m.indices[10];
    m.indices.push(t);
    let w = bake_finite(dir.path(), &m, pinned_row(), 1e-5);
    has(&w, "more than two triangles");
}

#[test]
fn duplicate_vertices_are_welded() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = grid();
    // Every triangle of the lower half gets its own copy of its corners (a mesh exported
    // with split faces).
    let half = m.indices.len() / 2;
    for t in half..m.indices.len() {
        let tri = m.indices[t];
        m.indices[t] = tri.map(|i| {
            m.positions.push(m.positions[i as usize]);
            m.positions.len() as u32 - 1
        });
    }
    let w = bake_finite(dir.path(), &m, pinned_row(), 1e-5);
    has(&w, "welded");
}

#[test]
fn near_duplicates_beyond_the_weld_tolerance_simulate_as_a_cut() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = grid();
    // The lower half's corners copied 20 µm aside, twice the weld tolerance: the copies weld
    // with each other but not with the upper half, so the sheet is cut across its middle into
    // two pieces whose edges lie 20 µm apart (the original lower vertices are left unused).
    let half = m.indices.len() / 2;
    let aside = Vec3::new(2e-5, 0.0, 0.0);
    for t in half..m.indices.len() {
        let tri = m.indices[t];
        m.indices[t] = tri.map(|i| {
            m.positions.push(m.positions[i as usize] + aside);
            m.positions.len() as u32 - 1
        });
    }
    let w = bake_finite(dir.path(), &m, pinned_row(), 1e-5);
    has(&w, "belong to no triangle");
}

#[test]
fn isolated_vertices_are_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = grid();
    // Loose points: one in the sheet's plane, one far off, one pinned.
    m.positions.push(Vec3::new(0.01, 1.0, 0.01));
    m.positions.push(Vec3::new(40.0, -30.0, 55.0));
    m.positions.push(Vec3::new(0.1, 1.2, 0.1));
    let mut pins = pinned_row();
    pins.push(m.positions.len() as u32 - 1);
    let w = bake_finite(dir.path(), &m, pins, 1e-5);
    has(&w, "3 vertices belong to no triangle");
    // The stray vertex 80 m away does not make the garment look like centimetres.
    assert!(w.iter().all(|x| !x.contains("unit_scale")), "{w:?}");
}

#[test]
fn thin_slivers_simulate() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = grid();
    let id = |i: u32, j: u32| j * N + i;
    // Row 4 squashed onto row 3, 10 µm away: a strip of 1:6000 needles.
    for i in 0..N {
        let above = m.positions[id(i, 3) as usize];
        m.positions[id(i, 4) as usize] = above + Vec3::new(0.0, 0.0, 1e-5);
    }
    // And a fan of slivers: a vertex nudged 1 µm off the middle of an edge, splitting
    // its two triangles' neighbour into needles.
    let a = m.positions[id(6, 6) as usize];
    let b = m.positions[id(7, 6) as usize];
    m.positions.push((a + b) * 0.5 + Vec3::new(0.0, 0.0, 1e-6));
    let k = m.positions.len() as u32 - 1;
    m.indices.push([id(6, 6), k, id(7, 6)]);
    let w = bake_finite(dir.path(), &m, pinned_row(), 1e-6);
    has(&w, "9 edges shorter than");
}

/// The sliver repair on its own: the 10 µm edges of a squashed row are collapsed onto the
/// row beside it, every render vertex still has a particle, and nothing else changes.
#[test]
fn short_edges_collapse_onto_their_lowest_vertex() {
    let mut m = grid();
    let id = |i: u32, j: u32| j * N + i;
    for i in 0..N {
        let above = m.positions[id(i, 3) as usize];
        m.positions[id(i, 4) as usize] = above + Vec3::new(0.0, 0.0, 1e-5);
    }
    let welded = weld(&m, 1e-6);
    assert_eq!(welded.mesh.positions.len(), 81);
    let (fixed, info) = collapse_short_edges(welded.clone(), SHORT_EDGE_FRACTION);
    let info = info.expect("the squashed row is found");
    assert_eq!((info.edges, info.vertices), (9, 9));
    assert!((info.median_m - 0.0625).abs() < 1e-6, "{info:?}");
    assert_eq!(fixed.mesh.positions.len(), 72);
    // The two triangles of each squashed quad are gone; the rest remain.
    assert_eq!(
        fixed.mesh.indices.len(),
        m.indices.len() - 2 * (N as usize - 1)
    );
    assert_eq!(fixed.merged, 9);
    for i in 0..N {
        let (a, b) = (id(i, 3) as usize, id(i, 4) as usize);
        assert_eq!(fixed.original_to_welded[a], fixed.original_to_welded[b]);
        assert_eq!(
            fixed.mesh.positions[fixed.original_to_welded[b] as usize],
            m.positions[a]
        );
    }
    for (v, &w) in fixed.original_to_welded.iter().enumerate() {
        assert!((fixed.mesh.positions[w as usize] - m.positions[v]).length() < 2e-5);
    }
    // A clean grid is left alone.
    let clean = weld(&grid(), 1e-5);
    let (same, none) = collapse_short_edges(clean.clone(), SHORT_EDGE_FRACTION);
    assert!(none.is_none());
    assert_eq!(same.mesh, clean.mesh);
}
