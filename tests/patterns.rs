//! Sewing patterns from real SVG files (`../shared/data/patterns/`, delfem2's T-shirt and raglan
//! shirt, MIT): every panel meshes to the edge length with no hole or overlap, seams pair their
//! edges vertex for vertex, and bad patterns are errors naming the file and the panel or seam.

mod common;

use std::path::{Path, PathBuf};

use drape::garment::pattern::{Pattern, PatternError};

fn shared(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/patterns")
        .join(name)
}

/// Writes a pattern file for `svg` into `dir` (the SVG by absolute path, so nothing is copied).
fn pattern_file(dir: &Path, svg: &str, body: &str) -> PathBuf {
    let path = dir.join("pattern.ron");
    let text = format!(
        "(version: 1, svg: {:?}, edge_length_m: 0.02, {body})",
        shared(svg).display().to_string()
    );
    std::fs::write(&path, text).unwrap();
    path
}

const TSHIRT: &str = r#"unit_m: Some(0.001),
    panels: [(name: "back", path: 0), (name: "front", path: 1),
             (name: "sleeve_l", path: 2), (name: "sleeve_r", path: 3)],
    seams: [(a: ("back", 2), b: ("front", 1)), (a: ("back", 4), b: ("front", 3))]"#;

/// Shoelace area of a closed polygon in the xy plane (m², positive counter-clockwise).
fn polygon_area(p: &[drape::math::Vec3]) -> f64 {
    (0..p.len())
        .map(|i| {
            let (a, b) = (p[i], p[(i + 1) % p.len()]);
            f64::from(a.x) * f64::from(b.y) - f64::from(b.x) * f64::from(a.y)
        })
        .sum::<f64>()
        / 2.0
}

#[test]
fn the_tshirt_panels_mesh_without_holes_and_its_seams_pair_vertex_for_vertex() {
    let dir = tempfile::tempdir().unwrap();
    let h = 0.02;
    let pattern = Pattern::load(&pattern_file(dir.path(), "ltshirt.svg", TSHIRT)).unwrap();
    assert_eq!(pattern.panels.len(), 4);
    for panel in &pattern.panels {
        let m = &panel.mesh;
        m.validate().unwrap();
        // The boundary, edge after edge, is the outline; the triangles tile it exactly.
        let boundary: Vec<_> = panel
            .edges
            .iter()
            .flat_map(|e| e[..e.len() - 1].iter().map(|&v| m.positions[v as usize]))
            .collect();
        let outline = polygon_area(&boundary).abs();
        let area: f64 = m
            .indices
            .iter()
            .map(|t| {
                let [a, b, c] = t.map(|i| {
                    let p = m.positions[i as usize];
                    [f64::from(p.x), f64::from(p.y)]
                });
                ((b[0] - a[0]) * (c[1] - a[1]) - (c[0] - a[0]) * (b[1] - a[1])).abs() / 2.0
            })
            .sum();
        assert!(
            (area - outline).abs() < 1e-6 * outline.max(1e-3) + 1e-7,
            "{}: triangles cover {area} m², the outline holds {outline} m²",
            panel.name
        );
        // Boundary vertices about an edge length apart, interior ones too.
        for e in &panel.edges {
            for w in e.windows(2) {
                let d = m.positions[w[0] as usize].distance(m.positions[w[1] as usize]);
                assert!(
                    d > 0.4 * h && d < 1.3 * h,
                    "{}: boundary spacing {d} m",
                    panel.name
                );
            }
        }
        let mean_edge = m
            .indices
            .iter()
            .flat_map(|t| {
                [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])]
                    .map(|(a, b)| m.positions[a as usize].distance(m.positions[b as usize]))
            })
            .sum::<f32>()
            / (3 * m.indices.len()) as f32;
        assert!(
            (mean_edge - h).abs() < 0.25 * h,
            "{}: mean edge {mean_edge}",
            panel.name
        );
        // Corners are shared: each edge starts where the one before ends.
        for k in 0..panel.edges.len() {
            let next = &panel.edges[(k + 1) % panel.edges.len()];
            assert_eq!(panel.edges[k].last(), next.first());
        }
    }
    // The back's left side is `v237.1` in the SVG: 237.1 mm.
    assert!((pattern.panels[0].edge_lengths_m[2] - 0.2371).abs() < 1e-5);
    // Seams: one pair per vertex, the same count on both edges, a's start at b's end.
    for s in &pattern.seams {
        let (ea, eb) = (
            &pattern.panels[s.a.0].edges[s.a.1],
            &pattern.panels[s.b.0].edges[s.b.1],
        );
        assert_eq!(ea.len(), eb.len());
        assert_eq!(s.pairs.len(), ea.len());
        assert_eq!(s.pairs[0], (ea[0], *eb.last().unwrap()));
        assert_eq!(*s.pairs.last().unwrap(), (*ea.last().unwrap(), eb[0]));
    }
}

#[test]
fn the_raglan_shirt_meshes_every_panel() {
    let dir = tempfile::tempdir().unwrap();
    let svg = std::fs::read_to_string(shared("lraglan.svg")).unwrap();
    let paths = svg.matches("<path").count();
    let panels: Vec<String> = (0..paths)
        .map(|i| format!("(name: \"p{i}\", path: {i})"))
        .collect();
    let body = format!("unit_m: Some(0.001), panels: [{}]", panels.join(", "));
    let pattern = Pattern::load(&pattern_file(dir.path(), "lraglan.svg", &body)).unwrap();
    assert_eq!(pattern.panels.len(), paths);
    for p in &pattern.panels {
        p.mesh.validate().unwrap();
        assert!(
            p.mesh.indices.len() > 50,
            "{}: {} triangles",
            p.name,
            p.mesh.indices.len()
        );
    }
}

#[test]
fn drape_pattern_lists_the_panels_and_writes_them_as_a_valid_gltf() {
    let dir = tempfile::tempdir().unwrap();
    let file = pattern_file(dir.path(), "ltshirt.svg", TSHIRT);
    let out = dir.path().join("panels.glb");
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_drape"))
        .arg("pattern")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        stdout.contains("panel 'back'") && stdout.contains("edge 2: 237.1 mm"),
        "{stdout}"
    );
    assert!(
        stdout.contains("seam 1: 'back' edge 4 to 'front' edge 3, 13 vertex pairs"),
        "{stdout}"
    );
    let report = common::validate_gltf(&out);
    assert_eq!(report.errors, 0, "{:?}", report.messages);
    assert_eq!(drape::io::load_meshes(&out).unwrap().len(), 4);
}

#[test]
fn bad_patterns_name_the_file_and_the_panel_or_seam() {
    let dir = tempfile::tempdir().unwrap();
    let err = |body: &str| -> String {
        let e: PatternError =
            Pattern::load(&pattern_file(dir.path(), "ltshirt.svg", body)).unwrap_err();
        e.to_string()
    };
    // The T-shirt's SVG states no physical size.
    let e = err(r#"panels: [(name: "back", path: 0)]"#);
    assert!(
        e.contains("ltshirt.svg") && e.contains("units are unknown"),
        "{e}"
    );
    // The back's hem (285.5 mm) against the front's side (238.0 mm).
    let e = err(
        r#"unit_m: Some(0.001), panels: [(name: "back", path: 0), (name: "front", path: 1)],
        seams: [(a: ("back", 3), b: ("front", 1))]"#,
    );
    assert!(
        e.contains("pattern.ron") && e.contains("seam 0 ('back' edge 3 to 'front' edge 1)"),
        "{e}"
    );
    assert!(e.contains("285.5 mm") && e.contains("238.0 mm"), "{e}");
    // A crease past 170° would lay the seam's sides on each other.
    let e = err(
        r#"unit_m: Some(0.001), panels: [(name: "back", path: 0), (name: "front", path: 1)],
        seams: [(a: ("back", 2), b: ("front", 1), crease_deg: Some(200.0))]"#,
    );
    assert!(
        e.contains("seam 0 ('back' edge 2 to 'front' edge 1)") && e.contains("crease_deg 200"),
        "{e}"
    );
    let e = err(r#"unit_m: Some(0.001), panels: [(name: "back", path: 0)], colour: 3"#);
    assert!(e.contains("pattern.ron") && e.contains("colour"), "{e}");
    let e =
        err(r#"unit_m: Some(0.001), panels: [(name: "back", path: 0), (name: "back", path: 1)]"#);
    assert!(
        e.contains("panel 'back'") && e.contains("two panels"),
        "{e}"
    );
    let missing = dir.path().join("nothing.ron");
    let e = Pattern::load(&missing).unwrap_err().to_string();
    assert!(e.contains("nothing.ron"), "{e}");
}
