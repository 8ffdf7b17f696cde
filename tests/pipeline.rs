//! End-to-end tests of the `drape` command line: demo scenes, bakes, exports, and bad input.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use drape::io::cache::{read_mdd, read_pc2};

fn drape(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_drape"));
    for a in args {
        cmd.arg(a);
    }
    cmd.output().expect("the drape binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs `drape` and asserts it failed cleanly: non-zero exit, an error line, no panic.
fn fails(args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let o = drape(args);
    let err = stderr(&o);
    assert!(
        !o.status.success(),
        "expected a failure, got success: {err}"
    );
    assert!(err.contains("error:"), "no error message: {err}");
    assert!(!err.contains("panicked"), "drape panicked: {err}");
    err
}

fn sphere_drop(dir: &Path, grid: u32) -> PathBuf {
    let o = drape(&[
        &"demo",
        &dir,
        &"--scene",
        &"sphere-drop",
        &"--grid",
        &grid.to_string(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    dir.join("scene.ron")
}

#[test]
fn bake_round_trips_through_gltf_pc2_mdd_and_passes_the_validator() {
    let dir = tempfile::tempdir().unwrap();
    let scene = sphere_drop(dir.path(), 16);
    let (out, stats, pc2, mdd) = (
        dir.path().join("bake.glb"),
        dir.path().join("stats.json"),
        dir.path().join("bake.pc2"),
        dir.path().join("bake.mdd"),
    );
    let o = drape(&[
        &"bake",
        &scene,
        &"--out",
        &out,
        &"--frames",
        &"12",
        &"--stats",
        &stats,
        &"--pc2",
        &pc2,
        &"--mdd",
        &mdd,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));

    // Stats: the contract of DESIGN §3.
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    for key in [
        "drape_version",
        "scene",
        "fps",
        "frames",
        "substeps",
        "iterations",
        "proxy_vertices",
        "render_vertices",
        "constraints",
        "wall_seconds",
        "sim_ms_per_frame",
        "per_frame",
        "summary",
    ] {
        assert!(s.get(key).is_some(), "stats lack `{key}`");
    }
    assert_eq!(s["frames"], 12);
    assert_eq!(s["render_vertices"], 256);
    // The projection by kind: the kinds this cloth has take time, and together no more than
    // the projection stage they are part of.
    let stage = &s["stage_ms"];
    let kinds = &stage["project_kinds"];
    let ms = |v: &serde_json::Value, key: &str| {
        v[key]
            .as_f64()
            .unwrap_or_else(|| panic!("stage_ms lacks `{key}`"))
    };
    for key in ["stretch", "shear", "bend", "contacts"] {
        assert!(ms(kinds, key) > 0.0, "no time for `{key}`: {kinds}");
    }
    let sum: f64 = [
        "attachments",
        "span_limits",
        "stretch",
        "shear",
        "bend",
        "body_vertices",
        "contacts",
        "self_contacts",
    ]
    .iter()
    .map(|k| ms(kinds, k))
    .sum();
    assert!(
        sum <= ms(stage, "project") + 1e-6,
        "kinds {sum} ms > project {} ms",
        ms(stage, "project")
    );
    let per_frame = s["per_frame"].as_array().unwrap();
    assert_eq!(per_frame.len(), 12);
    for f in per_frame {
        for key in [
            "frame",
            "max_stretch",
            "mean_stretch",
            "body_penetrations",
            "max_penetration_m",
            "self_intersections",
            "max_residual",
            "rollbacks",
            "non_finite",
        ] {
            assert!(f.get(key).is_some(), "frame stats lack `{key}`");
        }
        assert_eq!(f["non_finite"], 0);
    }
    // The cloth has fallen by the end (it starts at 0.5 m).
    let pc = read_pc2(&pc2).unwrap();
    assert_eq!(pc.frames.len(), 12);
    assert_eq!(pc.start_frame, 1.0);
    let first_y: f32 = pc.frames[0].iter().map(|p| p.y).sum::<f32>() / 256.0;
    let last_y: f32 = pc.frames[11].iter().map(|p| p.y).sum::<f32>() / 256.0;
    assert!((first_y - 0.5).abs() < 1e-6, "frame 0 is the rest pose");
    assert!(
        last_y < first_y - 0.05,
        "the cloth fell: {first_y} → {last_y}"
    );
    let md = read_mdd(&mdd).unwrap();
    assert_eq!(md.frames, pc.frames);
    for (k, t) in md.times.iter().enumerate() {
        assert!((t - k as f32 / 24.0).abs() < 1e-6);
    }

    // The glTF: morph target k reproduces baked frame k; one STEP key per frame at 1/fps.
    let (doc, buffers) = common::read_glb(&out);
    let mesh = doc
        .meshes()
        .find(|m| m.name() == Some("cloth"))
        .expect("the garment mesh is exported under its name");
    let prim = mesh.primitives().next().unwrap();
    let reader = prim.reader(|b| Some(&buffers[b.index()]));
    let base: Vec<[f32; 3]> = reader.read_positions().unwrap().collect();
    let targets: Vec<Vec<[f32; 3]>> = reader
        .read_morph_targets()
        .map(|(p, _, _)| p.unwrap().collect())
        .collect();
    assert_eq!(targets.len(), 12);
    for (k, target) in targets.iter().enumerate() {
        for (i, d) in target.iter().enumerate() {
            let p = [base[i][0] + d[0], base[i][1] + d[1], base[i][2] + d[2]];
            let want = pc.frames[k][i].to_array();
            for c in 0..3 {
                assert!(
                    (p[c] - want[c]).abs() <= 1e-5,
                    "frame {k} vertex {i}: {p:?} vs {want:?}"
                );
            }
        }
    }
    let anim = doc.animations().next().expect("an animation");
    let channel = anim.channels().next().unwrap();
    assert_eq!(
        channel.target().property(),
        gltf::animation::Property::MorphTargetWeights
    );
    let times: Vec<f32> = channel
        .reader(|b| Some(&buffers[b.index()]))
        .read_inputs()
        .unwrap()
        .collect();
    assert_eq!(times.len(), 12);
    for (k, t) in times.iter().enumerate() {
        assert!((t - k as f32 / 24.0).abs() < 1e-6, "key {k} at {t}");
    }
    // The body is in the file too.
    assert!(doc.meshes().any(|m| m.name() == Some("sphere")));

    let report = common::validate_gltf(&out);
    assert_eq!(report.errors, 0, "{:#?}", report.messages);

    // `drape inspect` reads it back.
    let o = drape(&[&"inspect", &out]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("cloth") && text.contains("12"), "{text}");
}

#[test]
fn malformed_inputs_give_errors_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let scene = sphere_drop(dir.path(), 8);
    let out = dir.path().join("out.glb");
    let text = std::fs::read_to_string(&scene).unwrap();

    // Invalid RON.
    let bad = dir.path().join("broken.ron");
    std::fs::write(&bad, "(garments: [(path: \"cloth.glb\"").unwrap();
    let err = fails(&[&"bake", &bad, &"--out", &out]);
    assert!(err.contains("broken.ron"), "{err}");

    // A mesh name that is not in the file.
    let missing = dir.path().join("missing.ron");
    std::fs::write(&missing, text.replace("Some(\"cloth\")", "Some(\"shirt\")")).unwrap();
    let err = fails(&[&"bake", &missing, &"--out", &out]);
    assert!(err.contains("cloth.glb") && err.contains("shirt"), "{err}");

    // A truncated .glb.
    let glb = std::fs::read(dir.path().join("cloth.glb")).unwrap();
    std::fs::write(dir.path().join("cut.glb"), &glb[..glb.len() / 2]).unwrap();
    let cut = dir.path().join("cut.ron");
    std::fs::write(&cut, text.replace("\"cloth.glb\"", "\"cut.glb\"")).unwrap();
    let err = fails(&[&"bake", &cut, &"--out", &out]);
    assert!(err.contains("cut.glb"), "{err}");

    // A negative frame rate and a negative compliance-like setting.
    let neg = dir.path().join("neg.ron");
    std::fs::write(&neg, text.replace("fps: 24.0", "fps: -24.0")).unwrap();
    let err = fails(&[&"bake", &neg, &"--out", &out]);
    assert!(
        err.contains("neg.ron") && err.contains("timeline.fps"),
        "{err}"
    );

    // A missing scene file.
    let err = fails(&[&"bake", &dir.path().join("nope.ron"), &"--out", &out]);
    assert!(err.contains("nope.ron"), "{err}");

    // Nothing was written by the failed bakes.
    assert!(!out.exists());
    // A bad grid size.
    fails(&[
        &"demo",
        &dir.path().join("g"),
        &"--scene",
        &"sphere-drop",
        &"--grid",
        &"1",
    ]);
}

#[test]
fn default_scene_drapes_the_skirt_without_penetrating_the_mannequin() {
    let dir = tempfile::tempdir().unwrap();
    let o = drape(&[&"demo", &dir.path()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let scene = dir.path().join("scene.ron");
    let (out, stats) = (dir.path().join("bake.glb"), dir.path().join("stats.json"));
    let o = drape(&[
        &"bake",
        &scene,
        &"--out",
        &out,
        &"--frames",
        &"16",
        &"--stats",
        &stats,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
    for f in s["per_frame"].as_array().unwrap() {
        assert_eq!(f["body_penetrations"], 0, "frame {}", f["frame"]);
        assert_eq!(f["non_finite"], 0);
        assert!(
            f["max_stretch"].as_f64().unwrap() < 0.2,
            "frame {}",
            f["frame"]
        );
    }
    assert_eq!(s["constraints"]["attach"], 64, "the waistband is pinned");
    assert!(s["constraints"]["tether"].as_u64().unwrap() > 1000);
    let report = common::validate_gltf(&out);
    assert_eq!(report.errors, 0, "{:#?}", report.messages);
}

/// The command line dresses an animated character: `drape demo --scene fitted-skirt` writes a
/// skirt fitted to CesiumMan, `drape bake` simulates it over the walk and exports the skinned
/// body with its animation beside the garment's morph targets, as a valid glTF.
#[test]
fn fitted_skirt_on_an_animated_character_bakes_from_the_cli() {
    let dir = tempfile::tempdir().unwrap();
    let body = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/khronos/CesiumMan.glb");
    let o = drape(&[
        &"demo",
        &dir.path(),
        &"--scene",
        &"fitted-skirt",
        &"--body",
        &body,
        &"--waist-height",
        &"0.76",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (out, stats) = (dir.path().join("walk.glb"), dir.path().join("stats.json"));
    let o = drape(&[
        &"bake",
        &dir.path().join("scene.ron"),
        &"--out",
        &out,
        &"--frames",
        &"6",
        &"--stats",
        &stats,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report = common::validate_gltf(&out);
    assert_eq!(report.errors, 0, "{:?}", report.messages);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(json["frames"], 6);
    assert_eq!(json["preroll_frames"], 24);
    let info = drape::io::inspect::inspect(&out).unwrap();
    assert_eq!(info.skins.len(), 1);
    let anim = &info.animations[0];
    assert_eq!(
        anim.transforms.key_range_s, anim.morph_weights.key_range_s,
        "body and garment play over the same keys"
    );

    // Misuse is a clear error, not a panic.
    let err = fails(&[&"demo", &dir.path(), &"--scene", &"fitted-skirt"]);
    assert!(err.contains("--body"), "{err}");
    let err = fails(&[&"demo", &dir.path(), &"--body", &body]);
    assert!(err.contains("fitted-skirt"), "{err}");
}

/// `drape bake --solver/--substeps/--iterations` bake with other solver settings than the
/// scene's, say so, record them in the stats, and leave the scene file as it was; bad values
/// are errors that name the option.
#[test]
fn bake_overrides_the_solver_settings_without_touching_the_scene() {
    let dir = tempfile::tempdir().unwrap();
    let scene = sphere_drop(dir.path(), 8);
    let before = std::fs::read(&scene).unwrap();
    let (out, stats) = (dir.path().join("o.glb"), dir.path().join("o.json"));
    let substeps_of = |args: &[&dyn AsRef<std::ffi::OsStr>]| {
        let mut all: Vec<&dyn AsRef<std::ffi::OsStr>> = vec![
            &"bake",
            &scene,
            &"--out",
            &out,
            &"--frames",
            &"2",
            &"--stats",
            &stats,
        ];
        all.extend_from_slice(args);
        let o = drape(&all);
        assert!(o.status.success(), "{}", stderr(&o));
        let s: serde_json::Value = serde_json::from_slice(&std::fs::read(&stats).unwrap()).unwrap();
        (
            s["substeps"].as_u64().unwrap(),
            s["iterations"].as_u64().unwrap(),
            stderr(&o),
        )
    };
    let scene_settings = drape::scene::Scene::load(&scene).unwrap().solver;
    let (s, i, err) = substeps_of(&[]);
    assert_eq!(
        (s, i),
        (
            scene_settings.substeps as u64,
            scene_settings.iterations as u64
        )
    );
    assert!(!err.contains("solver:"), "{err}");
    let (s, i, err) = substeps_of(&[&"--substeps", &"3", &"--iterations", &"2"]);
    assert_eq!((s, i), (3, 2));
    assert!(err.contains("3 substeps × 2 iterations"), "{err}");
    let preview = drape::preset::builtin_solver("preview").unwrap();
    assert_ne!(preview.substeps, scene_settings.substeps);
    let (s, i, err) = substeps_of(&[&"--solver", &"preview"]);
    assert_eq!((s, i), (preview.substeps as u64, preview.iterations as u64));
    assert!(err.contains("preset 'preview'"), "{err}");
    // --substeps wins over the preset's.
    let (s, _, _) = substeps_of(&[&"--solver", &"preview", &"--substeps", &"7"]);
    assert_eq!(s, 7);
    assert_eq!(std::fs::read(&scene).unwrap(), before);

    let err = fails(&[&"bake", &scene, &"--out", &out, &"--solver", &"nosuch"]);
    assert!(err.contains("--solver nosuch"), "{err}");
    let err = fails(&[&"bake", &scene, &"--out", &out, &"--substeps", &"0"]);
    assert!(err.contains("--substeps"), "{err}");
    let err = fails(&[&"bake", &scene, &"--out", &out, &"--iterations", &"101"]);
    assert!(err.contains("--iterations"), "{err}");
}

#[test]
fn walk_demo_takes_the_skirt_resolution_and_refuses_it_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let o = drape(&[
        &"demo",
        &dir.path(),
        &"--scene",
        &"walk",
        &"--rings",
        &"6",
        &"--segments",
        &"20",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let skirt = drape::io::gltf_import::load_meshes(&dir.path().join("skirt.glb")).unwrap();
    assert_eq!(skirt.len(), 1);
    assert_eq!(skirt[0].positions.len(), 6 * 20);
    // The scene bakes: a few frames of the walk in the coarse skirt.
    let stats = dir.path().join("stats.json");
    let o = drape(&[
        &"bake",
        &dir.path().join("scene.ron"),
        &"--out",
        &dir.path().join("bake.glb"),
        &"--frames",
        &"3",
        &"--stats",
        &stats,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).unwrap()).unwrap();
    assert_eq!(json["proxy_vertices"].as_u64(), Some(120), "{json}");
    assert_eq!(json["frames"].as_u64(), Some(3), "{json}");

    let other = tempfile::tempdir().unwrap();
    let err = fails(&[&"demo", &other.path(), &"--rings", &"6"]);
    assert!(err.contains("--scene walk only"), "{err}");
    let err = fails(&[
        &"demo",
        &other.path(),
        &"--scene",
        &"walk",
        &"--rings",
        &"1",
    ]);
    assert!(err.contains("--rings"), "{err}");
}

/// A scene written by an older version that sets a retired solver setting (issue 39:
/// `parallel_projection`) bakes, with a warning that names the file and the setting, and bakes
/// the same frames as the scene without it.
#[test]
fn a_scene_with_a_retired_setting_bakes_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let scene = sphere_drop(dir.path(), 8);
    let text = std::fs::read_to_string(&scene).unwrap();
    assert!(text.contains("solver: ("), "{text}");
    let old = dir.path().join("old.ron");
    std::fs::write(
        &old,
        text.replacen(
            "solver: (",
            "solver: (\n        parallel_projection: true,",
            1,
        ),
    )
    .unwrap();
    let (a, b) = (dir.path().join("a.pc2"), dir.path().join("b.pc2"));
    let o = drape(&[
        &"bake",
        &old,
        &"--out",
        &dir.path().join("a.glb"),
        &"--frames",
        &"3",
        &"--pc2",
        &a,
    ]);
    let err = stderr(&o);
    assert!(o.status.success(), "{err}");
    assert!(
        err.contains("warning:")
            && err.contains("old.ron")
            && err.contains("`parallel_projection`")
            && err.contains("ignored"),
        "{err}"
    );
    let o = drape(&[
        &"bake",
        &scene,
        &"--out",
        &dir.path().join("b.glb"),
        &"--frames",
        &"3",
        &"--pc2",
        &b,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("parallel_projection"));
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}
