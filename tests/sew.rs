//! Sewing delfem2's T-shirt pattern (`../shared/data/patterns/ltshirt.svg`, MIT) on the
//! mannequin: placement, closing, weld and settle, measured against the issue's checks; and
//! Drape's own drafted T-shirt through `drape demo --scene tshirt`, `drape sew` and a bake.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use drape::garment::pattern::Pattern;
use drape::solver::SolverSettings;

fn shared(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/patterns")
        .join(name)
}

/// delfem2's T-shirt at 2 mm per SVG unit (0.93 m round the chest under the arms, 8 cm more
/// than the mannequin's; at 1.75 mm it is 4 cm less and cannot close without stretching), its
/// four panels placed and its ten seams sewn.
fn tshirt(dir: &Path) -> PathBuf {
    tshirt_with(dir, "")
}

fn tshirt_with(dir: &Path, sewing: &str) -> PathBuf {
    let path = dir.join("tshirt.ron");
    let text = format!(
        r#"(version: 1, svg: {:?}, unit_m: Some(0.002), edge_length_m: 0.03,
    max_length_mismatch: 0.2, {sewing}
    panels: [
        (name: "back", path: 0, place: Some(Back)),
        (name: "front", path: 1, place: Some(Front)),
        (name: "sleeve_l", path: 2, place: Some(LeftArm)),
        (name: "sleeve_r", path: 3, place: Some(RightArm)),
    ],
    seams: [
        (a: ("back", 2), b: ("front", 1), flip: true),
        (a: ("back", 4), b: ("front", 3), flip: true),
        (a: ("back", 0), b: ("front", 7), flip: true),
        (a: ("back", 6), b: ("front", 5), flip: true),
        (a: ("sleeve_l", 0), b: ("sleeve_l", 3)),
        (a: ("sleeve_r", 0), b: ("sleeve_r", 3)),
        (a: ("back", 5), b: ("sleeve_l", 1), flip: true),
        (a: ("front", 4), b: ("sleeve_l", 2)),
        (a: ("back", 1), b: ("sleeve_r", 1)),
        (a: ("front", 0), b: ("sleeve_r", 2), flip: true),
    ],
)"#,
        shared("ltshirt.svg").display().to_string()
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn the_tshirt_sews_on_the_mannequin() {
    let dir = tempfile::tempdir().unwrap();
    let pattern = Pattern::load(&tshirt(dir.path())).unwrap();
    let body = drape::mesh::shapes::mannequin();
    let fabric = drape::preset::builtin_fabric("cotton_shirting").unwrap();
    let mut last = 0.0;
    let sewn = drape::sew::sew(
        &pattern,
        &body,
        &fabric,
        &SolverSettings::default(),
        &mut |f| {
            assert!(f >= last && f <= 1.0, "progress {f} after {last}");
            last = f;
        },
    )
    .unwrap();
    let r = &sewn.report;
    eprintln!("{r:#?}");
    if let Ok(out) = std::env::var("DRAPE_SEW_OUT") {
        let out = Path::new(&out);
        drape::io::gltf_export::write_static_glb(out, &[&sewn.mesh, &body]).unwrap();
        let placed = out.with_extension("placed.glb");
        drape::io::gltf_export::write_static_glb(&placed, &[&sewn.placed, &body]).unwrap();
    }
    assert_eq!(last, 1.0);
    assert_eq!((r.panels, r.seam_pairs), (4, 125));
    // Every seam closed to within 1 mm, every one of the ten measured.
    assert_eq!(r.seam_gaps_m.len(), 10);
    assert!(r.max_seam_gap_m <= 1.0e-3, "{r:?}");
    assert!(
        r.seam_gaps_m.iter().all(|&g| g > 0.0 && g <= 1.0e-3),
        "{r:?}"
    );
    // Clear of the body and of itself when the seams were welded, and after the settle.
    assert_eq!(
        (r.penetrations_at_weld, r.self_intersections_at_weld),
        (0, 0),
        "{r:?}"
    );
    assert_eq!((r.penetrations, r.self_intersections), (0, 0), "{r:?}");
    assert!(r.max_stretch <= 0.03, "{r:?}");
    // One closed garment: the seams' copies welded, the render mesh's copies at one point.
    let n = pattern
        .panels
        .iter()
        .map(|p| p.mesh.positions.len())
        .sum::<usize>();
    assert_eq!(sewn.mesh.positions.len(), n);
    assert!(r.vertices < n && r.vertices > n - r.seam_pairs - 1, "{r:?}");
    for (i, &w) in sewn.welded_of.iter().enumerate() {
        assert_eq!(sewn.mesh.positions[i], sewn.welded.positions[w as usize]);
    }
    // Worn, not dropped: the collar near the neck, the hem below the waist.
    let (lo, hi) = bounds(&sewn.welded.positions);
    let frame = drape::garment::place::BodyFrame::measure(&body).unwrap();
    assert!(
        (hi.y - frame.neck_y_m).abs() < 0.08,
        "top {hi:?}, neck {}",
        frame.neck_y_m
    );
    assert!(lo.y < frame.shoulder_y_m - 0.5, "hem at {lo:?}");
}

fn bounds(x: &[drape::math::Vec3]) -> (drape::math::Vec3, drape::math::Vec3) {
    x.iter().fold(
        (
            drape::math::Vec3::splat(f32::MAX),
            drape::math::Vec3::splat(f32::MIN),
        ),
        |(lo, hi), &p| (lo.min(p), hi.max(p)),
    )
}

#[test]
fn bad_sewing_settings_and_unplaced_patterns_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let body = drape::mesh::shapes::mannequin();
    let fabric = drape::preset::builtin_fabric("cotton_shirting").unwrap();
    let sew = |p: &Pattern| {
        drape::sew::sew(p, &body, &fabric, &SolverSettings::default(), &mut |_| {})
            .unwrap_err()
            .to_string()
    };
    let p = Pattern::load(&tshirt_with(dir.path(), "sewing: (closing_s: -1.0),")).unwrap();
    let e = sew(&p);
    assert!(e.contains("closing_s") && e.contains("-1"), "{e}");
    // No panel placed: nothing to sew.
    let mut p = Pattern::load(&tshirt(dir.path())).unwrap();
    for panel in &mut p.file.panels {
        panel.place = None;
    }
    let e = sew(&p);
    assert!(e.contains("no panel has a place"), "{e}");
    // A body that is no standing figure: named, with what the measuring missed.
    let p = Pattern::load(&tshirt(dir.path())).unwrap();
    let e = drape::sew::sew(
        &p,
        &drape::mesh::shapes::uv_sphere(0.3, 24, 16),
        &fabric,
        &SolverSettings::default(),
        &mut |_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("'sphere'") && e.contains("no shoulders"), "{e}");
}

fn drape(args: &[&std::ffi::OsStr]) -> (bool, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_drape"))
        .args(args)
        .output()
        .unwrap();
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn the_tshirt_demo_sews_on_the_walking_mannequin_and_bakes() {
    use drape::sew::tshirt::{write_tshirt, TSHIRT_GARMENT, TSHIRT_PATTERN, TSHIRT_SVG};
    let dir = tempfile::tempdir().unwrap();
    let (scene, r) = write_tshirt(dir.path(), None, &mut |_| {}).unwrap();
    eprintln!("{r:#?}");
    for f in [
        TSHIRT_SVG,
        TSHIRT_PATTERN,
        TSHIRT_GARMENT,
        "walking-mannequin.glb",
    ] {
        assert!(dir.path().join(f).is_file(), "{f}");
    }
    assert_eq!(r.panels, 4);
    assert!(r.max_seam_gap_m <= 1.0e-3, "{r:?}");
    assert_eq!(
        (r.penetrations_at_weld, r.self_intersections_at_weld),
        (0, 0),
        "{r:?}"
    );
    assert_eq!((r.penetrations, r.self_intersections), (0, 0), "{r:?}");
    // Measured 3.45 % (one edge at the armpit; 2.1 % on the static mannequin): a regression
    // bound, not the issue's 3 %, which the delfem2 T-shirt above meets.
    assert!(r.max_stretch <= 0.05, "{r:?}");
    // The sewn garment is an ordinary one: the scene loads and bakes it (two frames), valid.
    let pattern = Pattern::load(&dir.path().join(TSHIRT_PATTERN)).unwrap();
    let garment = drape::io::load_meshes(&dir.path().join(TSHIRT_GARMENT)).unwrap();
    let n: usize = pattern.panels.iter().map(|p| p.mesh.positions.len()).sum();
    assert_eq!(garment[0].positions.len(), n);
    let out = dir.path().join("bake.glb");
    let (ok, stdout, stderr) = drape(&[
        "bake".as_ref(),
        scene.as_os_str(),
        "--out".as_ref(),
        out.as_os_str(),
        "--frames".as_ref(),
        "2".as_ref(),
    ]);
    assert!(ok, "{stdout}{stderr}");
    let report = common::validate_gltf(&out);
    assert_eq!(report.errors, 0, "{:?}", report.messages);
}

#[test]
fn drape_sew_writes_the_sewn_garment_and_refuses_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let pattern = drape::sew::tshirt::write_tshirt_pattern(dir.path(), "shirt.ron").unwrap();
    let out = dir.path().join("shirt.glb");
    let preview = dir.path().join("preview.glb");
    let p = pattern.as_os_str();
    // Refused before any sewing.
    let (ok, _, e) = drape(&["sew".as_ref(), p, "--out".as_ref(), "shirt.obj".as_ref()]);
    assert!(!ok && e.contains("shirt.obj") && e.contains(".glb"), "{e}");
    let (ok, _, e) = drape(&[
        "sew".as_ref(),
        p,
        "--out".as_ref(),
        out.as_os_str(),
        "--fabric".as_ref(),
        "velvet".as_ref(),
    ]);
    assert!(!ok && e.contains("velvet"), "{e}");
    let (ok, _, e) = drape(&[
        "sew".as_ref(),
        p,
        "--out".as_ref(),
        out.as_os_str(),
        "--body".as_ref(),
        dir.path().join("none.glb").as_os_str(),
    ]);
    assert!(!ok && e.contains("none.glb"), "{e}");
    // A body that is no standing figure: the error names the body file, not the pattern.
    let ball = dir.path().join("ball.glb");
    let mut sphere = drape::mesh::shapes::uv_sphere(0.3, 24, 16);
    sphere.name = "ball".into();
    drape::io::write_static_glb(&ball, &[&sphere]).unwrap();
    let (ok, _, e) = drape(&[
        "sew".as_ref(),
        p,
        "--out".as_ref(),
        out.as_os_str(),
        "--body".as_ref(),
        ball.as_os_str(),
    ]);
    assert!(!ok && e.contains("ball.glb: body mesh 'ball'"), "{e}");
    assert!(!out.exists());
    // Sewn on the mannequin: the report per seam, the garment and the preview.
    let (ok, stdout, e) = drape(&[
        "sew".as_ref(),
        p,
        "--out".as_ref(),
        out.as_os_str(),
        "--preview".as_ref(),
        preview.as_os_str(),
    ]);
    assert!(ok, "{stdout}{e}");
    assert!(
        stdout.contains("sewn 4 panels")
            && stdout.contains("seam 9: 'front' edge 1 to 'sleeve_r' edge 2"),
        "{stdout}"
    );
    let gap: f64 = stdout
        .split("largest seam gap at the weld ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|s| s.parse().ok())
        .unwrap();
    assert!(gap <= 1.0, "{stdout}");
    let report = common::validate_gltf(&out);
    assert_eq!(report.errors, 0, "{:?}", report.messages);
    assert_eq!(drape::io::load_meshes(&out).unwrap().len(), 1);
    assert_eq!(drape::io::load_meshes(&preview).unwrap().len(), 4);
}
