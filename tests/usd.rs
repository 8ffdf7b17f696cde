//! USD export read back by Pixar's own library: `drape bake --usd` on the animated character,
//! checked with `pxr` (the `usd-core` package from PyPI, which `bash .ci/run` installs) against
//! the bake's PC2 cache and the body file.

use std::path::Path;
use std::process::Command;

fn drape(args: &[&dyn AsRef<std::ffi::OsStr>]) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_drape"));
    for a in args {
        cmd.arg(a);
    }
    cmd.output().expect("the drape binary runs")
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The Python with `pxr`: `$DRAPE_PYTHON`, else `python3`.
fn python() -> String {
    std::env::var("DRAPE_PYTHON").unwrap_or_else(|_| "python3".to_owned())
}

/// Runs tests/usd/check_stage.py on `stage` and parses what it prints.
fn read_with_pxr(stage: &Path, time: f64, vertex: usize) -> serde_json::Value {
    let py = python();
    let probe = Command::new(&py).args(["-c", "import pxr"]).output();
    match probe {
        Ok(o) if o.status.success() => {}
        _ => panic!(
            "Pixar's USD library is not importable by `{py}`: install it with `{py} -m pip \
             install usd-core` (bash .ci/run does), or point DRAPE_PYTHON at a Python that has it"
        ),
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/usd/check_stage.py");
    let o = Command::new(&py)
        .arg(&script)
        .arg(stage)
        .arg(time.to_string())
        .arg(vertex.to_string())
        .output()
        .expect("python runs");
    assert!(
        o.status.success(),
        "pxr could not read {}: {}",
        stage.display(),
        stderr(&o)
    );
    serde_json::from_slice(&o.stdout).expect("check_stage.py prints JSON")
}

fn f(v: &serde_json::Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// The fitted skirt on CesiumMan, baked for 4 frames, written as USD and as PC2: pxr opens the
/// stage, finds metres and Y up, one time sample per baked frame on the timeline's numbers for
/// the garment and the walking body, and the garment's sampled points equal the PC2 cache's.
#[test]
fn a_usd_bake_reads_back_in_pixars_library_and_matches_the_point_cache() {
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
    let (glb, pc2, usd) = (
        dir.path().join("walk.glb"),
        dir.path().join("walk.pc2"),
        dir.path().join("walk.usda"),
    );
    let o = drape(&[
        &"bake",
        &dir.path().join("scene.ron"),
        &"--out",
        &glb,
        &"--frames",
        &"4",
        &"--pc2",
        &pc2,
        &"--usd",
        &usd,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("walk.usda"), "{}", stderr(&o));

    let cache = drape::io::read_pc2(&pc2).unwrap();
    assert_eq!(cache.frames.len(), 4);
    let start = f64::from(cache.start_frame);
    let vertex = 17;
    let s = read_with_pxr(&usd, start + 2.0, vertex);

    assert_eq!(s["up_axis"], "Y");
    assert_eq!(f(&s["meters_per_unit"]), 1.0);
    assert_eq!(f(&s["time_codes_per_second"]), 24.0);
    assert_eq!(f(&s["start"]), start);
    assert_eq!(f(&s["end"]), start + 3.0);
    assert_eq!(s["default_prim"], "/Drape");

    let g = &s["meshes"]["/Drape/Garment"];
    let n = cache.frames[0].len();
    assert_eq!(g["points"].as_u64().unwrap() as usize, n);
    assert_eq!(g["normals"].as_u64().unwrap() as usize, n);
    assert_eq!(g["normals_interpolation"], "vertex");
    assert_eq!(g["subdivision"], "none");
    assert_eq!(
        g["indices"].as_u64().unwrap(),
        3 * g["faces"].as_u64().unwrap()
    );
    let samples: Vec<f64> = g["samples"].as_array().unwrap().iter().map(f).collect();
    assert_eq!(samples, [start, start + 1.0, start + 2.0, start + 3.0]);
    let want = cache.frames[2][vertex];
    let got: Vec<f64> = g["point"].as_array().unwrap().iter().map(f).collect();
    for (a, b) in got.iter().zip(want.to_array()) {
        assert_eq!(
            *a as f32, b,
            "garment vertex {vertex} at frame 2: {got:?} vs {want}"
        );
    }
    // The written extent is what pxr computes from the points.
    assert_eq!(g["extent"], g["computed_extent"]);

    let b = &s["meshes"]["/Drape/Body"];
    let rig = drape::body::Rig::load(&body, None).unwrap();
    assert_eq!(b["points"].as_u64().unwrap() as usize, rig.vertex_count());
    assert_eq!(
        b["samples"].as_array().unwrap().len(),
        4,
        "the walking body is time-sampled"
    );
    assert_ne!(
        b["point"], b["first_point"],
        "the body walks between the samples"
    );
    assert!(b["st"].as_u64().unwrap() > 0, "the body's UVs are written");

    // A binary or unknown name is refused before the bake, naming the option and the file.
    for name in ["walk.usdc", "walk.txt"] {
        let o = drape(&[
            &"bake",
            &dir.path().join("scene.ron"),
            &"--out",
            &glb,
            &"--usd",
            &dir.path().join(name),
        ]);
        let err = stderr(&o);
        assert!(!o.status.success());
        assert!(
            err.contains("--usd") && err.contains(name) && err.contains(".usda"),
            "{err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

/// The built-in default scene's mannequin does not move: pxr reads its body as a static mesh
/// (no time samples, normals per vertex), beside the time-sampled skirt.
#[test]
fn a_static_body_is_written_as_default_values_that_pxr_reads() {
    let dir = tempfile::tempdir().unwrap();
    let o = drape(&[&"demo", &dir.path()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (glb, usd) = (dir.path().join("bake.glb"), dir.path().join("bake.usda"));
    let o = drape(&[
        &"bake",
        &dir.path().join("scene.ron"),
        &"--out",
        &glb,
        &"--frames",
        &"2",
        &"--usd",
        &usd,
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = read_with_pxr(&usd, f64::from(i32::MAX), 3);
    let g = &s["meshes"]["/Drape/Garment"];
    assert_eq!(g["samples"].as_array().unwrap().len(), 2);
    let b = &s["meshes"]["/Drape/Body"];
    assert!(
        b["samples"].as_array().unwrap().is_empty(),
        "the static body has no samples"
    );
    assert!(b["points"].as_u64().unwrap() > 1000);
    assert_eq!(b["normals"], b["points"]);
    assert_eq!(b["normals_interpolation"], "vertex");
    assert_eq!(b["point"], b["first_point"]);
    assert_eq!(b["extent"], b["computed_extent"]);
}
