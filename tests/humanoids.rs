//! Issue 35: a fitted skirt on every rigged Khronos sample body in `../shared/data/khronos/`
//! (see its LICENSES.md) that is a standing humanoid, baked and exported validator-clean, and
//! a clear error, saying what was found, for those that are not.

mod common;

use std::path::{Path, PathBuf};

use drape::bake::{bake, BakeOptions, LoadedScene};
use drape::scene::demo::{fitted_skirt_params, write_fitted_skirt, write_fitted_skirt_scaled};

fn khronos(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/data/khronos")
        .join(name)
}

/// CesiumMan and RiggedFigure, at their detected waists (no height given): the scene bakes 24
/// frames after its pre-roll with no rollback, the pins stay on the body, and the export with
/// the body's skin and animation passes the Khronos validator.
#[test]
fn humanoids_get_a_fitted_skirt_that_bakes_and_validates() {
    for name in ["CesiumMan.glb", "RiggedFigure.glb"] {
        let dir = tempfile::tempdir().unwrap();
        let scene = write_fitted_skirt(dir.path(), &khronos(name), &fitted_skirt_params(), None)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut loaded = LoadedScene::load(&scene).unwrap();
        loaded.scene.timeline.end_frame = Some(loaded.scene.timeline.start_frame + 23);
        let result = bake(&loaded, &BakeOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        let s = &result.stats;
        println!(
            "{name}: {} particles, {:.1} ms/frame, max stretch {:.3}, penetrations {}, pinched frames {}",
            s.proxy_vertices,
            s.sim_ms_per_frame,
            s.summary.max_stretch,
            s.summary.body_penetrations,
            s.summary.pinched_frames
        );
        assert_eq!(result.frames.len(), 24, "{name}");
        assert_eq!(s.summary.rollbacks, 0, "{name}");
        assert!(s.per_frame.iter().all(|f| f.non_finite == 0), "{name}");
        let rig = &loaded.body.as_ref().unwrap().rig;
        let out = dir.path().join("bake.glb");
        common::write_animated_bake(&out, &result, rig);
        let report = common::validate_gltf(&out);
        assert_eq!(report.errors, 0, "{name}: {:?}", report.messages);
    }
}

/// The Fox stands on four legs: refused as lying along the ground, with its size, at its file's
/// units and in metres. RiggedSimple is a cylinder: refused for having no legs, with a unit
/// hint at its file's 9 m and none at a human size.
#[test]
fn other_bodies_get_an_error_that_says_what_was_found() {
    let dir = tempfile::tempdir().unwrap();
    let params = fitted_skirt_params();
    let err = |name: &str, scale: f32| {
        write_fitted_skirt_scaled(dir.path(), &khronos(name), &params, None, scale)
            .unwrap_err()
            .to_string()
    };
    let fox = err("Fox.glb", 0.01);
    assert!(
        fox.contains("Fox.glb") && fox.contains("lies along the ground"),
        "{fox}"
    );
    assert!(fox.contains("0.79 m tall and 1.55 m long"), "{fox}");
    let fox = err("Fox.glb", 1.0);
    assert!(fox.contains("quadruped"), "{fox}");
    let cylinder = err("RiggedSimple.glb", 1.0);
    assert!(
        cylinder.contains("found no crotch") && cylinder.contains("unit_scale"),
        "{cylinder}"
    );
    let cylinder = err("RiggedSimple.glb", 0.2);
    assert!(
        cylinder.contains("1.83 m tall") && !cylinder.contains("unit_scale"),
        "{cylinder}"
    );
    let bad = err("CesiumMan.glb", -1.0);
    assert!(bad.contains("unit scale -1"), "{bad}");
    // Nothing was written for any of them.
    assert!(!dir.path().join("scene.ron").exists());
}

/// `--unit-scale` reaches the scene: a CesiumMan read at a scale of 1 (it is in metres) writes
/// no `unit_scale`; the Fox refused at 0.01 names the flag's effect in metres (above).
#[test]
fn the_unit_scale_is_written_into_the_scene() {
    let dir = tempfile::tempdir().unwrap();
    let scene = write_fitted_skirt_scaled(
        dir.path(),
        &khronos("CesiumMan.glb"),
        &fitted_skirt_params(),
        None,
        1.0,
    )
    .unwrap();
    let text = std::fs::read_to_string(&scene).unwrap();
    assert!(!text.contains("unit_scale"), "{text}");
    let dir2 = tempfile::tempdir().unwrap();
    // CesiumMan at twice its size is a 3 m giant that still stands: fitted and scaled.
    let scene = write_fitted_skirt_scaled(
        dir2.path(),
        &khronos("CesiumMan.glb"),
        &fitted_skirt_params(),
        None,
        2.0,
    )
    .unwrap();
    let loaded = LoadedScene::load(&scene).unwrap();
    assert_eq!(loaded.scene.body.as_ref().unwrap().unit_scale, 2.0);
    let (lo, hi) = loaded.body.as_ref().unwrap().rig.rest_bounds().unwrap();
    assert!((hi.y - lo.y - 3.0).abs() < 0.1, "{lo} {hi}");
}
