//! A garment simulated on a proxy: the render mesh is bound to it, baked and exported whole.

use drape::bake::{bake, BakeOptions, LoadedScene};
use drape::scene::demo::{write_demo, DemoScene};
use drape::scene::{ProxySpec, Scene};

fn default_scene_with_proxy(dir: &std::path::Path, vertices: u32) -> LoadedScene {
    let path = write_demo(dir, DemoScene::Default, None).unwrap();
    let mut scene = Scene::load(&path).unwrap();
    scene.garments[0].proxy = Some(ProxySpec::Vertices(vertices));
    LoadedScene::from_scene(scene, &path).unwrap()
}

#[test]
fn a_proxy_is_simulated_and_the_render_mesh_is_baked_and_exported() {
    let tmp = tempfile::tempdir().unwrap();
    let loaded = default_scene_with_proxy(tmp.path(), 400);
    let g = &loaded.garments[0];
    let proxy = g.proxy.as_ref().expect("a proxy was built");
    let render_n = g.render.positions.len();
    assert!(
        (360..=440).contains(&proxy.mesh.positions.len()),
        "{} proxy vertices",
        proxy.mesh.positions.len()
    );
    assert!(proxy.mesh.positions.len() < g.welded.mesh.positions.len());
    assert_eq!(loaded.proxy_vertices(), proxy.mesh.positions.len());
    assert!(
        !g.pinned.is_empty(),
        "the waist pins carry over to the proxy"
    );

    let result = bake(
        &loaded,
        &BakeOptions {
            frames: Some(12),
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(result.stats.proxy_vertices, proxy.mesh.positions.len());
    assert_eq!(result.stats.render_vertices, render_n);
    assert_eq!(result.render_mesh.positions.len(), render_n);
    // Frame 0 is the rest state: the bound render mesh reproduces the original.
    for (a, b) in result.frames[0].iter().zip(&g.render.positions) {
        assert!((*a - *b).length() < 1e-5, "{a} vs {b}");
    }
    // Seam duplicates (render vertices at one rest position) never separate.
    let welded = &g.welded.original_to_welded;
    for frame in &result.frames {
        assert_eq!(frame.len(), render_n);
        assert!(frame.iter().all(|p| p.is_finite()));
        for i in 0..render_n {
            for j in i + 1..render_n {
                if welded[i] == welded[j] {
                    assert_eq!(frame[i], frame[j], "seam vertices {i} and {j} separated");
                }
            }
        }
    }
    // The cloth moved (it hangs from its waist under gravity).
    let moved = result.frames[11]
        .iter()
        .zip(&result.frames[0])
        .map(|(a, b)| (*a - *b).length())
        .fold(0.0f32, f32::max);
    assert!(moved > 1e-3, "largest move {moved} m");

    let out = tmp.path().join("bake.glb");
    drape::bake::write_glb(&loaded, &result, &out).unwrap();
    let report = drape::io::inspect::inspect(&out).unwrap();
    let report = report.to_string();
    let proxy_n = proxy.mesh.positions.len();
    assert!(
        report.contains(&format!("'skirt': {render_n} vertices")),
        "the export holds the {render_n}-vertex render mesh:\n{report}"
    );
    assert!(
        !report.contains(&format!("{proxy_n} vertices")),
        "the export holds no {proxy_n}-vertex proxy:\n{report}"
    );
}

#[test]
fn an_invalid_proxy_setting_is_an_error_naming_the_field() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_demo(tmp.path(), DemoScene::Default, None).unwrap();
    let mut scene = Scene::load(&path).unwrap();
    scene.garments[0].proxy = Some(ProxySpec::Vertices(2));
    let e = LoadedScene::from_scene(scene.clone(), &path)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("garments[0].proxy") && e.contains("scene.ron"),
        "{e}"
    );
    scene.garments[0].proxy = Some(ProxySpec::EdgeLength(f32::NAN));
    let e = LoadedScene::from_scene(scene, &path)
        .unwrap_err()
        .to_string();
    assert!(e.contains("garments[0].proxy"), "{e}");
}
