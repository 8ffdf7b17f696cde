//! Painted maps acting on the simulation (issue 7: "Pins act on the simulation", "Compliance
//! scale acts on the simulation") and their storage in the scene.

use std::path::{Path, PathBuf};

use drape::bake::{bake, BakeOptions, LoadedScene};
use drape::io::gltf_export::write_static_glb;
use drape::math::{Real, Vec3};
use drape::mesh::shapes::grid_cloth;
use drape::mesh::Mesh;
use drape::paint::{GarmentMaps, MapKind, VertexMaps};
use drape::scene::{GarmentSpec, PinTarget, Scene};

/// Writes `mesh` as `g.glb` in `dir` and returns a scene (file `dir/scene.ron`, not written)
/// with that one garment and `maps`, no body.
fn scene_with(dir: &Path, mesh: &Mesh, maps: VertexMaps) -> (Scene, PathBuf) {
    write_static_glb(&dir.join("g.glb"), &[mesh]).unwrap();
    let scene = Scene {
        name: "paint".into(),
        garments: vec![GarmentSpec {
            name: "sheet".into(),
            path: "g.glb".into(),
            pin_target: PinTarget::World,
            maps: Some(GarmentMaps {
                values: maps,
                ..GarmentMaps::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    };
    (scene, dir.join("scene.ron"))
}

/// Bakes `frames` frames (frame 0 the rest state) and returns the render positions per frame.
fn run(scene: Scene, path: &Path, frames: u32) -> Vec<Vec<Vec3>> {
    let loaded = LoadedScene::from_scene(scene, path).unwrap();
    bake(
        &loaded,
        &BakeOptions {
            frames: Some(frames),
            ..Default::default()
        },
    )
    .unwrap()
    .frames
}

/// The largest distance of the `band` vertices from their rest positions over all frames (m).
fn band_drift(frames: &[Vec<Vec3>], band: &[usize]) -> Real {
    frames
        .iter()
        .flat_map(|f| band.iter().map(move |&i| f[i].distance(frames[0][i])))
        .fold(0.0, Real::max)
}

fn banded(mesh: &Mesh, weight: Real) -> (VertexMaps, Vec<usize>) {
    let mut maps = VertexMaps::new(mesh.positions.len());
    let band: Vec<usize> = (0..mesh.positions.len())
        .filter(|&i| mesh.positions[i].z < -0.39)
        .collect();
    for &i in &band {
        maps.get_mut(MapKind::Attachment)[i] = weight;
    }
    (maps, band)
}

#[test]
fn a_band_of_weight_one_holds_its_vertices_and_weight_half_holds_softer() {
    let tmp = tempfile::tempdir().unwrap();
    // 1 m sheet, 11 × 11 vertices, level at 1 m: the band is the first two rows (z ≤ −0.4).
    let mesh = grid_cloth(1.0, 11, 1.0);
    let (maps, band) = banded(&mesh, 1.0);
    assert_eq!(band.len(), 22);
    let (scene, path) = scene_with(tmp.path(), &mesh, maps);
    let frames = run(scene, &path, 49);
    assert_eq!(frames.len(), 49);
    let hard = band_drift(&frames, &band);
    assert!(hard <= 1e-4, "weight 1 band drifted {hard} m");
    // The rest of the sheet fell: the pins held it, the cloth was not stuck.
    let far = (0..mesh.positions.len()).filter(|i| !band.contains(i));
    let fall = far
        .map(|i| frames[0][i].y - frames[48][i].y)
        .fold(0.0, Real::max);
    assert!(fall > 0.3, "the free part fell only {fall} m");

    let (maps, band) = banded(&mesh, 0.5);
    let (scene, path) = scene_with(tmp.path(), &mesh, maps);
    let soft = band_drift(&run(scene, &path, 49), &band);
    println!("band drift over 48 frames: weight 1 {hard:.3e} m, weight 0.5 {soft:.3e} m");
    assert!(
        soft > 1e-4 && soft > 10.0 * hard.max(1e-6),
        "weight 0.5 drifted {soft} m, weight 1 {hard} m"
    );
    assert!(soft < 0.1, "weight 0.5 still holds: drift {soft} m");
}

#[test]
fn a_region_painted_to_ten_times_stretch_compliance_stretches_more() {
    let tmp = tempfile::tempdir().unwrap();
    // Two 0.2 m × 1 m strips side by side, level at 1 m, each hanging from its z = −0.5 end.
    let strip = |dx: Real| {
        let mut m = grid_cloth(1.0, 11, 1.0);
        for p in &mut m.positions {
            p.x = p.x * 0.2 + dx;
        }
        m
    };
    let mut mesh = strip(-0.3);
    mesh.append(&strip(0.3));
    let (mut maps, _) = banded(&mesh, 1.0);
    for (i, p) in mesh.positions.iter().enumerate() {
        if p.x > 0.0 {
            maps.get_mut(MapKind::StretchScale)[i] = 10.0;
        }
    }
    let (mut scene, path) = scene_with(tmp.path(), &mesh, maps);
    // Tethers would cap both strips at their rest length; measure the edges alone.
    scene.solver.tether_slack = -1.0;
    let frames = run(scene, &path, 49);
    let mut edges: Vec<[u32; 2]> = mesh
        .indices
        .iter()
        .flat_map(|t| [[t[0], t[1]], [t[1], t[2]], [t[2], t[0]]])
        .map(|[a, b]| [a.min(b), a.max(b)])
        .collect();
    edges.sort_unstable();
    edges.dedup();
    let mean_stretch = |right: bool| -> Real {
        let mut sum = 0.0;
        let mut n = 0;
        for f in &frames[24..] {
            for &[a, b] in &edges {
                let (a, b) = (a as usize, b as usize);
                if (mesh.positions[a].x > 0.0) == right {
                    let rest = mesh.positions[a].distance(mesh.positions[b]);
                    sum += f[a].distance(f[b]) / rest - 1.0;
                    n += 1;
                }
            }
        }
        sum / n as Real
    };
    let plain = mean_stretch(false);
    let painted = mean_stretch(true);
    println!(
        "mean edge stretch, frames 24-48: unpainted {plain:.3e}, 10x compliance {painted:.3e}"
    );
    assert!(
        painted > 2.0 * plain && painted > 0.0,
        "painted strip stretched {painted}, unpainted {plain}"
    );
}

#[test]
fn maps_of_the_wrong_length_or_with_nan_are_errors_naming_the_garment() {
    let tmp = tempfile::tempdir().unwrap();
    let mesh = grid_cloth(1.0, 5, 1.0);
    let (scene, path) = scene_with(tmp.path(), &mesh, VertexMaps::new(7));
    let e = LoadedScene::from_scene(scene, &path)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("sheet") && e.contains("7 values") && e.contains("25 vertices"),
        "{e}"
    );
    let mut maps = VertexMaps::new(25);
    maps.get_mut(MapKind::Attachment)[4] = Real::NAN;
    let (scene, path) = scene_with(tmp.path(), &mesh, maps);
    let e = LoadedScene::from_scene(scene, &path)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("sheet") && e.contains("non-finite") && e.contains("vertex 4"),
        "{e}"
    );
    let (mut scene, path) = scene_with(tmp.path(), &mesh, VertexMaps::new(25));
    if let Some(m) = &mut scene.garments[0].maps {
        m.pin_threshold = 0.0;
    }
    let e = LoadedScene::from_scene(scene, &path)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("garments[0].maps") && e.contains("pin_threshold"),
        "{e}"
    );
}

#[test]
fn maps_save_inline_when_small_and_in_a_sidecar_when_large() {
    let tmp = tempfile::tempdir().unwrap();
    for (n, sidecar) in [(5u32, false), (60, true)] {
        let mesh = grid_cloth(1.0, n, 1.0);
        let mut maps = VertexMaps::new(mesh.positions.len());
        for (i, v) in maps.get_mut(MapKind::StretchScale).iter_mut().enumerate() {
            *v = 1.0 + (i as Real * 0.731).sin().abs();
        }
        for (i, v) in maps.get_mut(MapKind::Attachment).iter_mut().enumerate() {
            *v = (i as Real * 0.117).cos().abs();
        }
        let (scene, path) = scene_with(tmp.path(), &mesh, maps);
        scene.save(&path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let file = tmp.path().join("scene.0.drapemaps");
        assert_eq!(
            file.exists(),
            sidecar,
            "{n}×{n}: {} bytes of RON",
            text.len()
        );
        assert!(text.len() < 20_000, "{} bytes of RON", text.len());
        let back = Scene::load(&path).unwrap();
        assert_eq!(back, scene, "{n}×{n} maps come back bit for bit");
        assert!(back.garments[0].maps.as_ref().unwrap().file.is_none());
        LoadedScene::from_scene(back, &path).unwrap();
        let _ = std::fs::remove_file(&file);
    }
    // A scene written before maps existed loads with none.
    let old = Scene::from_ron("(garments: [(path: \"g.glb\")])", Path::new("old.ron")).unwrap();
    assert_eq!(old.garments[0].maps, None);
}

mod common;

#[test]
fn maps_round_trip_through_gltf_attributes_and_the_export_passes_the_validator() {
    use drape::io::gltf_export::{scale_to_colour, write_painted_glb, PaintedMesh};
    use drape::io::gltf_import::{load_mesh, load_mesh_with_maps};
    let tmp = tempfile::tempdir().unwrap();
    let mesh = grid_cloth(1.0, 9, 1.0);
    let mut maps = VertexMaps::new(mesh.positions.len());
    for (i, v) in maps.get_mut(MapKind::Attachment).iter_mut().enumerate() {
        *v = (i as Real * 0.37).sin().abs();
    }
    maps.get_mut(MapKind::StretchScale)[3] = 10.0;
    maps.get_mut(MapKind::BendScale)[7] = 0.001;
    maps.get_mut(MapKind::MassScale)[8] = 2.5;
    let mut plain = grid_cloth(0.5, 3, 0.0);
    plain.name = "plain".into();
    let path = tmp.path().join("painted.glb");
    write_painted_glb(
        &path,
        &[
            PaintedMesh {
                mesh: &mesh,
                maps: Some(&maps),
            },
            PaintedMesh {
                mesh: &plain,
                maps: None,
            },
        ],
    )
    .unwrap();
    let (back, back_maps) = load_mesh_with_maps(&path, Some(&mesh.name)).unwrap();
    assert_eq!(back.positions, mesh.positions);
    let back_maps = back_maps.expect("the maps come back");
    for kind in MapKind::ALL {
        let a: Vec<u32> = maps.get(kind).iter().map(|v| v.to_bits()).collect();
        let b: Vec<u32> = back_maps.get(kind).iter().map(|v| v.to_bits()).collect();
        assert_eq!(a, b, "{kind:?}");
    }
    assert_eq!(load_mesh_with_maps(&path, Some("plain")).unwrap().1, None);
    assert_eq!(load_mesh(&path, Some(&mesh.name)).unwrap(), back);
    assert_eq!(scale_to_colour(1.0), 0.5);
    assert_eq!(scale_to_colour(1000.0), 1.0);
    assert_eq!(scale_to_colour(0.0), 0.0);
    let report = common::validate_gltf(&path);
    println!(
        "validator: {} errors, {} warnings, {} infos: {:?}",
        report.errors, report.warnings, report.infos, report.messages
    );
    assert_eq!(report.errors, 0, "{:?}", report.messages);
    // A map of the wrong length is an error naming the mesh, and no file is written.
    let short = VertexMaps::new(3);
    let bad = tmp.path().join("bad.glb");
    let e = write_painted_glb(
        &bad,
        &[PaintedMesh {
            mesh: &mesh,
            maps: Some(&short),
        }],
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains(&mesh.name) && e.contains("bad.glb"), "{e}");
    assert!(!bad.exists());
}

#[test]
fn painted_weights_carry_through_a_proxy_binding() {
    use drape::scene::ProxySpec;
    let tmp = tempfile::tempdir().unwrap();
    let mesh = grid_cloth(1.0, 21, 1.0);
    let (maps, band) = banded(&mesh, 1.0);
    let (mut scene, path) = scene_with(tmp.path(), &mesh, maps);
    scene.garments[0].proxy = Some(ProxySpec::Vertices(120));
    let loaded = LoadedScene::from_scene(scene.clone(), &path).unwrap();
    let g = &loaded.garments[0];
    let proxy = g.proxy.as_ref().expect("a proxy");
    assert!(proxy.mesh.positions.len() < mesh.positions.len());
    let sim = g.maps.as_ref().expect("maps on the proxy");
    assert_eq!(sim.values.len(), proxy.mesh.positions.len());
    assert!(!g.pinned.is_empty(), "the band pins proxy vertices");
    // Every hard pin lies in (or within one proxy edge of) the painted band.
    for &i in &g.pinned {
        let z = proxy.mesh.positions[i as usize].z;
        assert!(z < -0.2, "proxy vertex {i} at z = {z} pinned");
    }
    let frames = run(scene, &path, 25);
    let top: Vec<usize> = band
        .iter()
        .copied()
        .filter(|&i| mesh.positions[i].z < -0.49)
        .collect();
    let drift = band_drift(&frames, &top);
    let fall = (0..mesh.positions.len())
        .map(|i| frames[0][i].y - frames[24][i].y)
        .fold(0.0, Real::max);
    println!("proxy: top row drift {drift:.3e} m, largest fall {fall:.3} m");
    assert!(
        fall > 0.2 && drift <= 1e-4,
        "drift {drift} m, fall {fall} m"
    );
}

#[test]
fn repainting_a_loaded_garment_updates_its_pins_without_reloading() {
    let tmp = tempfile::tempdir().unwrap();
    let mesh = grid_cloth(1.0, 11, 1.0);
    let (scene, path) = scene_with(tmp.path(), &mesh, VertexMaps::new(mesh.positions.len()));
    let mut loaded = LoadedScene::from_scene(scene, &path).unwrap();
    let g = &mut loaded.garments[0];
    assert!(g.pinned.is_empty() && g.soft_pins.is_empty());
    let (maps, band) = banded(&mesh, 1.0);
    g.spec.maps.as_mut().unwrap().values = maps;
    g.spec
        .maps
        .as_mut()
        .unwrap()
        .values
        .get_mut(MapKind::Attachment)[60] = 0.5;
    g.repaint(&path).unwrap();
    assert_eq!(g.pinned.len(), band.len());
    assert_eq!(g.soft_pins.len(), 1);
    // The rebuilt model has the pins and the soft attachment.
    let (model, _) = loaded.build_model(None);
    assert_eq!(model.pins.len(), band.len());
    assert_eq!(model.attach.len(), 1);
    // A bad map is an error, and names the garment.
    let g = &mut loaded.garments[0];
    g.spec.maps.as_mut().unwrap().values = VertexMaps::new(2);
    let e = g.repaint(&path).unwrap_err().to_string();
    assert!(e.contains("sheet"), "{e}");
}

/// `drape maps export` writes a garment's maps as glTF attributes (validator-clean) and
/// `drape maps import` reads them back onto the scene bit for bit; a wrong garment, a mesh
/// that is not the garment's and a glTF without maps are errors naming the file, and leave
/// the scene untouched.
#[test]
fn maps_export_and_import_through_the_command_line() {
    use drape::io::gltf_export::{write_painted_glb, PaintedMesh};
    let tmp = tempfile::tempdir().unwrap();
    let mesh = grid_cloth(1.0, 9, 1.0);
    let n = mesh.positions.len();
    let mut maps = VertexMaps::new(n);
    for (i, v) in maps.get_mut(MapKind::Attachment).iter_mut().enumerate() {
        *v = (i as Real * 0.61).sin().abs();
    }
    maps.get_mut(MapKind::StretchScale)[5] = 7.5;
    maps.get_mut(MapKind::MassScale)[9] = 0.5;
    let (scene, path) = scene_with(tmp.path(), &mesh, maps.clone());
    scene.save(&path).unwrap();
    let drape = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_drape"))
            .args(args)
            .current_dir(tmp.path())
            .output()
            .unwrap()
    };
    let out = drape(&["maps", "export", "scene.ron", "sheet", "sheet-maps.glb"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = common::validate_gltf(&tmp.path().join("sheet-maps.glb"));
    assert_eq!(report.errors, 0, "{:?}", report.messages);

    // Clear the scene's maps, then import them back.
    let mut cleared = Scene::load(&path).unwrap();
    cleared.garments[0].maps = None;
    cleared.save(&path).unwrap();
    let out = drape(&["maps", "import", "scene.ron", "sheet", "sheet-maps.glb"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let back = Scene::load(&path).unwrap();
    let back = &back.garments[0]
        .maps
        .as_ref()
        .expect("maps imported")
        .values;
    for kind in MapKind::ALL {
        let a: Vec<u32> = maps.get(kind).iter().map(|v| v.to_bits()).collect();
        let b: Vec<u32> = back.get(kind).iter().map(|v| v.to_bits()).collect();
        assert_eq!(a, b, "{kind:?}");
    }
    let before = std::fs::read(&path).unwrap();

    // Errors: each names the file or the garment, exits non-zero and leaves the scene alone.
    let e = drape(&["maps", "import", "scene.ron", "coat", "sheet-maps.glb"]);
    let msg = String::from_utf8_lossy(&e.stderr).to_string();
    assert!(
        !e.status.success() && msg.contains("coat") && msg.contains("sheet"),
        "{msg}"
    );
    let other = grid_cloth(1.0, 5, 1.0);
    write_painted_glb(
        &tmp.path().join("other.glb"),
        &[PaintedMesh {
            mesh: &other,
            maps: Some(&VertexMaps::new(other.positions.len())),
        }],
    )
    .unwrap();
    let e = drape(&["maps", "import", "scene.ron", "sheet", "other.glb"]);
    let msg = String::from_utf8_lossy(&e.stderr).to_string();
    assert!(
        !e.status.success() && msg.contains("other.glb") && msg.contains("25 vertices"),
        "{msg}"
    );
    let mut moved = mesh.clone();
    moved.positions[4].y += 0.01;
    write_painted_glb(
        &tmp.path().join("moved.glb"),
        &[PaintedMesh {
            mesh: &moved,
            maps: Some(&maps),
        }],
    )
    .unwrap();
    let e = drape(&["maps", "import", "scene.ron", "sheet", "moved.glb"]);
    let msg = String::from_utf8_lossy(&e.stderr).to_string();
    assert!(!e.status.success() && msg.contains("vertex 4"), "{msg}");
    let e = drape(&["maps", "import", "scene.ron", "sheet", "g.glb"]);
    let msg = String::from_utf8_lossy(&e.stderr).to_string();
    assert!(
        !e.status.success() && msg.contains("g.glb") && msg.contains("no painted maps"),
        "{msg}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "a failed import changed the scene"
    );
}
