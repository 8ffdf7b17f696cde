//! The preset library: built-ins, the versioned format, validation messages, the user folder
//! and the `drape preset` commands (issue 4, part 5).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use drape::garment::material::{Fabric, BUILTIN_FABRICS, DEFAULT_FABRIC};
use drape::math::Real;
use drape::preset::builtin_fabric;
use drape::preset::{
    Library, Origin, Preset, PresetError, PresetKind, BUILTIN_SOLVERS, DEFAULT_SOLVER,
    PRESET_VERSION,
};
use drape::scene::GarmentSpec;
use drape::solver::SolverSettings;

fn library() -> (tempfile::TempDir, Library) {
    let dir = tempfile::tempdir().unwrap();
    let lib = Library::with_user_dir(dir.path().join("presets"));
    (dir, lib)
}

fn write(path: &Path, text: &str) -> PathBuf {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
    path.to_path_buf()
}

fn denim_text() -> &'static str {
    PresetKind::Fabric.builtin_text("denim").unwrap()
}

/// Denim as a version 1 file: as it was before the schema version (no `version` field).
fn denim_v1() -> String {
    let v1 = denim_text()
        .replace("    // Preset format version (docs/presets.md).\n", "")
        .replace("    version: 2,\n", "");
    assert!(!v1.contains("version"), "{v1}");
    v1
}

#[test]
fn every_builtin_loads_validates_and_is_current() {
    let (_dir, lib) = library();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("presets");
    for kind in PresetKind::ALL {
        let on_disk = fs::read_dir(root.join(kind.folder())).unwrap().count();
        assert_eq!(
            on_disk,
            kind.builtins().len(),
            "{kind}: every file is built in"
        );
        for (name, text) in kind.builtins() {
            let stored = lib.get(kind, name).unwrap();
            assert_eq!(stored.entry.origin, Origin::Builtin);
            assert_eq!(stored.version, PRESET_VERSION, "{name}");
            assert_eq!(stored.preset.kind(), kind);
            assert!(text.contains("version: 2,"), "{name}");
            assert!(text.starts_with("// "), "{name}: comments first");
            // The file on disk is the compiled-in text.
            let file = root.join(kind.folder()).join(format!("{name}.ron"));
            assert_eq!(fs::read_to_string(&file).unwrap(), *text);
            assert_eq!(Library::validate_file(&file).unwrap().preset, stored.preset);
        }
    }
    assert_eq!(BUILTIN_FABRICS.len(), 8);
    assert_eq!(
        lib.fabric(DEFAULT_FABRIC).unwrap(),
        builtin_fabric(DEFAULT_FABRIC).unwrap()
    );
}

#[test]
fn solver_presets_scale_from_preview_to_final() {
    let (_dir, lib) = library();
    let names: Vec<&str> = BUILTIN_SOLVERS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["preview", "production", "final"]);
    let preview = lib.solver("preview").unwrap();
    let production = lib.solver(DEFAULT_SOLVER).unwrap();
    let fin = lib.solver("final").unwrap();
    assert_eq!(production, SolverSettings::default());
    assert_eq!((preview.substeps, preview.iterations), (8, 1));
    assert_eq!((preview.line_passes, production.line_passes), (0, 2));
    assert_eq!((fin.substeps, fin.iterations), (40, 2));
    let work = |s: &SolverSettings| s.substeps * s.iterations;
    assert!(work(&preview) < work(&production) && work(&production) < work(&fin));
    // Every value carries a comment: one `//` line per setting at least.
    for (name, text) in BUILTIN_SOLVERS {
        let comments = text
            .lines()
            .filter(|l| l.trim_start().starts_with("//"))
            .count();
        assert!(comments >= 10, "{name}: {comments} comment lines");
    }
}

#[test]
fn fabric_round_trip_save_load_equal() {
    let (_dir, lib) = library();
    let fabric = Fabric {
        name: "Heavy linen, \"washed\"".into(),
        source: "test: made-up values with awkward digits".into(),
        density_kg_per_m2: 0.2345678,
        bend_warp_n_m: 1.234_567e-5,
        bend_weft_n_m: 0.0,
        thickness_m: 0.000_333,
        ..builtin_fabric("denim").unwrap()
    };
    let path = lib.save_fabric("heavy_linen", &fabric, false).unwrap();
    assert_eq!(path, lib.user_dir().join("fabrics/heavy_linen.ron"));
    assert_eq!(lib.fabric("heavy_linen").unwrap(), fabric);
    let stored = lib.get(PresetKind::Fabric, "heavy_linen").unwrap();
    assert_eq!(stored.version, PRESET_VERSION);
    assert_eq!(stored.entry.origin, Origin::User);
    assert_eq!(stored.entry.path.as_deref(), Some(path.as_path()));
    // No temporary file is left beside it.
    let files: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().collect();
    assert_eq!(files.len(), 1);
}

#[test]
fn solver_round_trip_save_load_equal() {
    let (_dir, lib) = library();
    let settings = SolverSettings {
        substeps: 33,
        iterations: 3,
        gravity_m_per_s2: [0.1, -9.80665, 0.0],
        tether_slack: 0.05,
        collision_thickness_m: 0.0025,
        ..SolverSettings::default()
    };
    lib.save_solver("moon_walk", &settings, false).unwrap();
    assert_eq!(lib.solver("moon_walk").unwrap(), settings);
    let listed = lib.list();
    let entry = listed.iter().find(|e| e.name == "moon_walk").unwrap();
    assert_eq!(
        (entry.kind, entry.origin),
        (PresetKind::Solver, Origin::User)
    );
    // A solver preset is not a fabric.
    let e = lib.fabric("moon_walk").unwrap_err();
    assert!(matches!(e, PresetError::Unknown { .. }), "{e}");
}

#[test]
fn invalid_presets_name_the_field_range_version_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let check = |file: &str, text: &str, wants: &[&str]| {
        let path = write(&dir.path().join(file), text);
        let e = Library::validate_file(&path).unwrap_err().to_string();
        assert!(e.contains(&path.display().to_string()), "{e}");
        for w in wants {
            assert!(e.contains(w), "missing '{w}' in: {e}");
        }
    };
    check(
        "negative.ron",
        &denim_text().replace("density_kg_per_m2: 0.324", "density_kg_per_m2: -1.0"),
        &["density_kg_per_m2 = -1: must be in (0, 10] kg/m²"],
    );
    check(
        "stiff.ron",
        &denim_text().replace("bend_warp_n_m: 1.0e-4", "bend_warp_n_m: 5.0"),
        &["bend_warp_n_m = 5: must be in (0, 1] N·m"],
    );
    check(
        "unknown.ron",
        &denim_text().replace("friction: 0.4,", "friction: 0.4,\n    colour: \"blue\","),
        &["colour"],
    );
    check(
        "future.ron",
        &denim_text().replace("version: 2,", "version: 3,"),
        &["version 3", "versions 1 to 2"],
    );
    check(
        "zero_substeps.ron",
        "(version: 2, settings: (substeps: 0))",
        &["substeps", "from 1 to 1000"],
    );
    check(
        "typo_setting.ron",
        "(version: 2, settings: (substep: 10))",
        &["substep"],
    );
    check("not_ron.ron", "density = 3", &["not a valid preset"]);
    // An invalid file is not imported.
    let (_d, lib) = library();
    assert!(lib.import(&dir.path().join("negative.ron"), false).is_err());
    assert!(!lib.user_dir().exists());
    // Nor saved.
    let bad = Fabric {
        friction: Real::NAN,
        ..Fabric::default()
    };
    let e = lib.save_fabric("nan", &bad, false).unwrap_err().to_string();
    assert!(e.contains("friction = NaN") && e.contains("nan.ron"), "{e}");
}

#[test]
fn version_one_file_without_version_loads() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir.path().join("old_denim.ron"), &denim_v1());
    let parsed = Library::validate_file(&path).unwrap();
    assert_eq!(parsed.version, 1);
    assert_eq!(
        parsed.preset,
        Preset::Fabric(builtin_fabric("denim").unwrap())
    );
    // Imported as it is, it still loads, and says it is version 1.
    let (_d, lib) = library();
    let entry = lib.import(&path, false).unwrap();
    assert_eq!(
        (entry.name.as_str(), entry.kind),
        ("old_denim", PresetKind::Fabric)
    );
    assert_eq!(lib.get(PresetKind::Fabric, "old_denim").unwrap().version, 1);
    // Saving writes the current version.
    let f = lib.fabric("old_denim").unwrap();
    lib.save_fabric("old_denim", &f, true).unwrap();
    assert_eq!(
        lib.get(PresetKind::Fabric, "old_denim").unwrap().version,
        PRESET_VERSION
    );
}

#[test]
fn user_presets_never_shadow_or_overwrite_builtins() {
    let (dir, lib) = library();
    let denim = builtin_fabric("denim").unwrap();
    let read_only = |r: Result<PathBuf, PresetError>| {
        let e = r.unwrap_err();
        assert!(matches!(e, PresetError::ReadOnly { .. }), "{e}");
        assert!(e.to_string().contains("read-only"), "{e}");
    };
    read_only(lib.save_fabric("denim", &denim, false));
    read_only(lib.save_fabric("denim", &denim, true));
    // Across kinds too: a fabric may not be called like a built-in solver preset.
    read_only(lib.save_fabric("final", &denim, true));
    read_only(lib.save_solver("denim", &SolverSettings::default(), true));
    read_only(lib.duplicate(PresetKind::Fabric, "chiffon", "denim"));
    lib.save_fabric("mine", &denim, false).unwrap();
    read_only(lib.rename(PresetKind::Fabric, "mine", "leather"));
    read_only(lib.rename(PresetKind::Fabric, "leather", "mine2"));
    let e = lib.remove(PresetKind::Fabric, "denim").unwrap_err();
    assert!(e.to_string().contains("read-only"), "{e}");
    let imported = write(&dir.path().join("in/production.ron"), denim_text());
    let e = lib.import(&imported, true).unwrap_err();
    assert!(matches!(e, PresetError::ReadOnly { .. }), "{e}");
    // A file put there by hand under a built-in name is ignored, and said to be.
    let hand = write(
        &lib.user_dir().join("fabrics/denim.ron"),
        &denim_text().replace("density_kg_per_m2: 0.324", "density_kg_per_m2: 0.9"),
    );
    assert_eq!(lib.fabric("denim").unwrap(), denim);
    // Nor across kinds: a fabric file named like the built-in solver preset `final`.
    let cross = write(&lib.user_dir().join("fabrics/final.ron"), denim_text());
    assert!(matches!(
        lib.fabric("final"),
        Err(PresetError::Unknown { .. })
    ));
    assert_eq!(lib.kinds_of("final"), [PresetKind::Solver]);
    let scan = lib.scan();
    let denims: Vec<_> = scan.entries.iter().filter(|e| e.name == "denim").collect();
    assert_eq!(denims.len(), 1);
    assert_eq!(denims[0].origin, Origin::Builtin);
    assert!(
        scan.warnings
            .iter()
            .any(|w| w.path == hand && w.message.contains("built-in")),
        "{:?}",
        scan.warnings
    );
    assert!(
        scan.warnings
            .iter()
            .any(|w| w.path == cross && w.message.contains("built-in solver preset")),
        "{:?}",
        scan.warnings
    );
}

#[test]
fn existing_user_preset_is_replaced_only_when_asked() {
    let (dir, lib) = library();
    let a = builtin_fabric("denim").unwrap();
    let b = builtin_fabric("chiffon").unwrap();
    lib.save_fabric("jeans", &a, false).unwrap();
    let e = lib.save_fabric("jeans", &b, false).unwrap_err();
    assert!(matches!(e, PresetError::Exists { .. }), "{e}");
    assert!(e.to_string().contains("already exists"), "{e}");
    assert_eq!(lib.fabric("jeans").unwrap(), a);
    lib.save_fabric("jeans", &b, true).unwrap();
    assert_eq!(lib.fabric("jeans").unwrap(), b);
    let file = write(&dir.path().join("in/jeans.ron"), denim_text());
    assert!(matches!(
        lib.import(&file, false),
        Err(PresetError::Exists { .. })
    ));
    lib.import(&file, true).unwrap();
    assert_eq!(lib.fabric("jeans").unwrap(), a);
    lib.save_fabric("fast", &a, false).unwrap();
    // The same name in the other kind is another preset.
    lib.save_solver("fast", &SolverSettings::default(), false)
        .unwrap();
    assert_eq!(
        lib.kinds_of("fast"),
        [PresetKind::Fabric, PresetKind::Solver]
    );
}

#[test]
fn duplicate_rename_and_remove() {
    let (_dir, lib) = library();
    let path = lib
        .duplicate(PresetKind::Fabric, "denim", "my_denim")
        .unwrap();
    let text = fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("// Duplicated from the built-in fabric preset 'denim'."));
    assert!(
        text.contains("Wang, O'Brien & Ramamoorthi 2011"),
        "sources kept"
    );
    assert_eq!(
        lib.fabric("my_denim").unwrap(),
        builtin_fabric("denim").unwrap()
    );
    // From a user preset too, and a solver preset.
    lib.duplicate(PresetKind::Fabric, "my_denim", "my_denim_2")
        .unwrap();
    lib.duplicate(PresetKind::Solver, "preview", "quick")
        .unwrap();
    assert_eq!(lib.solver("quick").unwrap().substeps, 8);
    assert!(matches!(
        lib.duplicate(PresetKind::Fabric, "denim", "my_denim"),
        Err(PresetError::Exists { .. })
    ));
    assert!(matches!(
        lib.duplicate(PresetKind::Fabric, "velvet", "v2"),
        Err(PresetError::Unknown { .. })
    ));

    let new = lib.rename(PresetKind::Fabric, "my_denim", "jeans").unwrap();
    assert!(new.is_file() && !path.exists());
    assert_eq!(
        lib.fabric("jeans").unwrap(),
        builtin_fabric("denim").unwrap()
    );
    assert!(matches!(
        lib.rename(PresetKind::Fabric, "jeans", "my_denim_2"),
        Err(PresetError::Exists { .. })
    ));
    assert!(matches!(
        lib.rename(PresetKind::Fabric, "nothing", "x"),
        Err(PresetError::NotUser { .. })
    ));

    lib.remove(PresetKind::Fabric, "jeans").unwrap();
    assert!(!new.exists());
    let e = lib.remove(PresetKind::Fabric, "jeans").unwrap_err();
    assert!(matches!(e, PresetError::NotUser { .. }), "{e}");
    // Removing a fabric leaves a solver preset of the same name alone.
    lib.remove(PresetKind::Solver, "quick").unwrap();
    let names: Vec<String> = lib
        .list()
        .into_iter()
        .filter(|e| e.origin == Origin::User)
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["my_denim_2"]);
}

#[test]
fn names_that_are_paths_are_rejected() {
    let (dir, lib) = library();
    let denim = builtin_fabric("denim").unwrap();
    for bad in ["../x", "..", "a/b", "/tmp/x", "Denim", "", "x y"] {
        let e = lib.save_fabric(bad, &denim, true).unwrap_err();
        assert!(matches!(e, PresetError::BadName { .. }), "{bad}: {e}");
        assert!(matches!(lib.fabric(bad), Err(PresetError::BadName { .. })));
        assert!(matches!(
            lib.remove(PresetKind::Fabric, bad),
            Err(PresetError::BadName { .. })
        ));
    }
    assert!(!dir.path().join("x.ron").exists());
    assert!(!lib.user_dir().exists(), "nothing was written");
    let file = write(&dir.path().join("My Denim.ron"), denim_text());
    let e = lib.import(&file, false).unwrap_err().to_string();
    assert!(
        e.contains("'My Denim'") && e.contains("rename the file"),
        "{e}"
    );
}

#[test]
fn broken_user_files_are_warnings_not_failures() {
    let (_dir, lib) = library();
    lib.save_fabric("good", &Fabric::default(), false).unwrap();
    lib.save_solver("good_solver", &SolverSettings::default(), false)
        .unwrap();
    let fabrics = lib.user_dir().join("fabrics");
    let broken = write(&fabrics.join("broken.ron"), "(density_kg_per_m2: ");
    let wrong_kind = write(&fabrics.join("a_solver.ron"), "(version: 2, settings: ())");
    let bad_name = write(&fabrics.join("Bad Name.ron"), denim_text());
    let future = write(
        &lib.user_dir().join("solver/future.ron"),
        "(version: 9, settings: ())",
    );
    // Ignored silently: hidden (temporary) files, other extensions, folders.
    write(&fabrics.join(".x.ron.123.tmp"), "garbage");
    write(&fabrics.join("notes.txt"), "garbage");
    fs::create_dir_all(fabrics.join("sub.ron")).unwrap();

    let scan = lib.scan();
    let user: Vec<(&str, PresetKind)> = scan
        .entries
        .iter()
        .filter(|e| e.origin == Origin::User)
        .map(|e| (e.name.as_str(), e.kind))
        .collect();
    assert_eq!(
        user,
        [
            ("good", PresetKind::Fabric),
            ("good_solver", PresetKind::Solver)
        ]
    );
    let mut warned: Vec<&Path> = scan.warnings.iter().map(|w| w.path.as_path()).collect();
    warned.sort();
    let mut expected = vec![
        broken.as_path(),
        wrong_kind.as_path(),
        bad_name.as_path(),
        future.as_path(),
    ];
    expected.sort();
    assert_eq!(warned, expected, "{:#?}", scan.warnings);
    assert_eq!(lib.warnings(), scan.warnings);
    assert_eq!(lib.list(), scan.entries);
    // Loading one of them by name is a clear error.
    let e = lib.fabric("broken").unwrap_err().to_string();
    assert!(
        e.contains("broken.ron") && e.contains("not a valid preset"),
        "{e}"
    );
}

#[test]
fn listing_puts_builtins_first_then_sorted_user_presets() {
    let (_dir, lib) = library();
    assert!(lib.warnings().is_empty(), "a missing folder is no warning");
    for name in ["zeta", "alpha", "mid"] {
        lib.save_fabric(name, &Fabric::default(), false).unwrap();
    }
    lib.save_solver("b_solver", &SolverSettings::default(), false)
        .unwrap();
    lib.save_solver("a_solver", &SolverSettings::default(), false)
        .unwrap();
    let names: Vec<String> = lib.list().into_iter().map(|e| e.name).collect();
    let mut expected: Vec<String> = BUILTIN_FABRICS
        .iter()
        .chain(BUILTIN_SOLVERS)
        .map(|(n, _)| n.to_string())
        .collect();
    expected.extend(["alpha", "mid", "zeta", "a_solver", "b_solver"].map(String::from));
    assert_eq!(names, expected);
}

#[test]
fn export_then_import_elsewhere_gives_the_same_preset() {
    let (dir, lib) = library();
    let out = dir.path().join("out");
    fs::create_dir_all(&out).unwrap();
    lib.export(PresetKind::Fabric, "wool_suiting", &out.join("wool.ron"))
        .unwrap();
    assert_eq!(
        fs::read_to_string(out.join("wool.ron")).unwrap(),
        PresetKind::Fabric.builtin_text("wool_suiting").unwrap()
    );
    lib.export(PresetKind::Solver, "final", &out.join("slow.ron"))
        .unwrap();
    let other = Library::with_user_dir(dir.path().join("other"));
    let wool = other.import(&out.join("wool.ron"), false).unwrap();
    let slow = other.import(&out.join("slow.ron"), false).unwrap();
    assert_eq!(
        (wool.kind, slow.kind),
        (PresetKind::Fabric, PresetKind::Solver)
    );
    assert_eq!(
        other.fabric("wool").unwrap(),
        builtin_fabric("wool_suiting").unwrap()
    );
    assert_eq!(other.solver("slow").unwrap(), lib.solver("final").unwrap());
    let e = lib
        .export(PresetKind::Fabric, "velvet", &out.join("v.ron"))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("velvet") && e.contains("built-in presets: "),
        "{e}"
    );
}

#[test]
fn scenes_find_user_fabrics_by_name() {
    let (_dir, lib) = library();
    let stiff = Fabric {
        bend_warp_n_m: 1.0e-3,
        ..builtin_fabric("leather").unwrap()
    };
    lib.save_fabric("stiff_leather", &stiff, false).unwrap();
    let spec = GarmentSpec {
        fabric: "stiff_leather".into(),
        ..GarmentSpec::default()
    };
    assert_eq!(spec.resolve_fabric_in(Some(&lib)).unwrap(), stiff);
    let missing = GarmentSpec {
        fabric: "velvet".into(),
        ..GarmentSpec::default()
    };
    let e = missing
        .resolve_fabric_in(Some(&lib))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no fabric preset named 'velvet'")
            && e.contains("denim")
            && e.contains("stiff_leather"),
        "{e}"
    );
    // Without a user folder, built-ins still resolve.
    let denim = GarmentSpec {
        fabric: "denim".into(),
        ..GarmentSpec::default()
    };
    assert_eq!(
        denim.resolve_fabric_in(None).unwrap(),
        builtin_fabric("denim").unwrap()
    );
}

// ---- The command line, on a temporary user folder ----

fn drape(preset_dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_drape"))
        .arg("preset")
        .args(args)
        .env("DRAPE_PRESET_DIR", preset_dir)
        .output()
        .unwrap()
}

fn ok(out: &Output) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "exit {:?}\nstdout: {stdout}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

fn failed(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "should have failed: {stderr}");
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    stderr
}

#[test]
fn cli_list_and_show() {
    let dir = tempfile::tempdir().unwrap();
    let list = ok(&drape(dir.path(), &["list"]));
    for name in ["cotton_shirting", "denim", "chiffon", "preview", "final"] {
        assert!(list.contains(name), "{name} in:\n{list}");
    }
    assert!(list.contains("built-in"));
    let solvers = ok(&drape(dir.path(), &["list", "--kind", "solver"]));
    assert!(solvers.contains("production") && !solvers.contains("denim"));

    let show = ok(&drape(dir.path(), &["show", "denim"]));
    assert!(
        show.starts_with("// fabric preset 'denim': built-in"),
        "{show}"
    );
    assert!(show.contains(denim_text()));
    let show = ok(&drape(dir.path(), &["show", "final"]));
    assert!(
        show.starts_with("// solver preset 'final': built-in") && show.contains("substeps: 40")
    );
    let e = failed(&drape(dir.path(), &["show", "velvet"]));
    assert!(e.contains("no fabric preset named 'velvet'"), "{e}");
    let e = failed(&drape(dir.path(), &["show", "final", "--kind", "fabric"]));
    assert!(e.contains("no fabric preset named 'final'"), "{e}");
}

#[test]
fn cli_new_export_import_validate_remove() {
    let dir = tempfile::tempdir().unwrap();
    let lib_dir = dir.path().join("library");
    let out = dir.path().join("out");
    fs::create_dir_all(&out).unwrap();
    let user_denim = lib_dir.join("fabrics/my_denim.ron");

    ok(&drape(&lib_dir, &["new", "my_denim", "--from", "denim"]));
    assert!(user_denim.is_file());
    let list = ok(&drape(&lib_dir, &["list"]));
    let row = list.lines().find(|l| l.contains("my_denim")).unwrap();
    assert!(row.contains("user") && row.contains("fabric"), "{row}");
    let show = ok(&drape(&lib_dir, &["show", "my_denim"]));
    assert!(show.contains(&user_denim.display().to_string()) && show.contains("user"));
    assert!(
        failed(&drape(&lib_dir, &["new", "my_denim", "--from", "denim"]))
            .contains("already exists")
    );
    assert!(failed(&drape(&lib_dir, &["new", "denim", "--from", "chiffon"])).contains("read-only"));

    // Solver presets, by kind.
    ok(&drape(&lib_dir, &["new", "quick", "--from", "preview"]));
    assert!(lib_dir.join("solver/quick.ron").is_file());
    ok(&drape(&lib_dir, &["--kind", "solver", "new", "slow"]));
    assert!(ok(&drape(&lib_dir, &["show", "slow"])).contains("substeps: 20"));

    let exported = out.join("jeans.ron");
    ok(&drape(
        &lib_dir,
        &["export", "my_denim", exported.to_str().unwrap()],
    ));
    let v = ok(&drape(&lib_dir, &["validate", exported.to_str().unwrap()]));
    assert!(v.contains("valid fabric preset, format version 2"), "{v}");
    ok(&drape(&lib_dir, &["import", exported.to_str().unwrap()]));
    assert!(lib_dir.join("fabrics/jeans.ron").is_file());
    let e = failed(&drape(&lib_dir, &["import", exported.to_str().unwrap()]));
    assert!(e.contains("already exists") && e.contains("--force"), "{e}");
    ok(&drape(
        &lib_dir,
        &["import", exported.to_str().unwrap(), "--force"],
    ));

    ok(&drape(&lib_dir, &["rename", "jeans", "blue_jeans"]));
    assert!(lib_dir.join("fabrics/blue_jeans.ron").is_file());
    ok(&drape(&lib_dir, &["remove", "my_denim"]));
    assert!(!user_denim.exists());
    assert!(failed(&drape(&lib_dir, &["remove", "my_denim"])).contains("no user fabric preset"));
    assert!(failed(&drape(&lib_dir, &["remove", "denim"])).contains("read-only"));
    assert!(failed(&drape(&lib_dir, &["remove", "../x"])).contains("not a valid preset name"));
    let lib = Library::with_user_dir(&lib_dir);
    assert_eq!(
        lib.fabric("blue_jeans").unwrap(),
        builtin_fabric("denim").unwrap()
    );
}

#[test]
fn cli_validate_reports_bad_files() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        &dir.path().join("bad.ron"),
        &denim_text().replace("density_kg_per_m2: 0.324", "density_kg_per_m2: -1.0"),
    );
    let e = failed(&drape(dir.path(), &["validate", bad.to_str().unwrap()]));
    assert!(
        e.contains("bad.ron") && e.contains("density_kg_per_m2 = -1: must be in (0, 10] kg/m²"),
        "{e}"
    );
    let e = failed(&drape(dir.path(), &["import", bad.to_str().unwrap()]));
    assert!(e.contains("bad.ron"), "{e}");
    assert!(!dir.path().join("fabrics/bad.ron").exists());
    let missing = dir.path().join("missing.ron");
    let e = failed(&drape(dir.path(), &["validate", missing.to_str().unwrap()]));
    assert!(e.contains("missing.ron"), "{e}");
    let old = write(&dir.path().join("old.ron"), &denim_v1());
    let v = ok(&drape(dir.path(), &["validate", old.to_str().unwrap()]));
    assert!(
        v.contains("format version 1") && v.contains("upgraded"),
        "{v}"
    );
}
