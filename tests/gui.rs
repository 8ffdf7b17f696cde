//! The desktop app, driven headless by egui_kittest: the real `DrapeApp`, its worker thread
//! and its panels, clicked by label. (egui_kittest does not run glow paint callbacks, so the
//! 3D viewport itself is checked by the Xvfb screenshot script, `.ci/screenshot.sh`.)
#![cfg(feature = "gui")]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use drape::app::DrapeApp;
use drape::scene::demo::{write_demo, DemoScene};
use drape::scene::Scene;
use drape::solver::StretchSolve;
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;

/// One user preset folder for the whole test binary, so no test writes into the real
/// configuration folder (and no two tests race on the variable).
fn isolate_user_config() {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let d = tempfile::tempdir().unwrap().keep();
        d.join("presets")
    });
    // SAFETY: every test sets the same value before any thread reads it.
    unsafe { std::env::set_var("DRAPE_PRESET_DIR", dir) };
}

fn harness(scene: Option<&Path>) -> Harness<'static, DrapeApp> {
    isolate_user_config();
    let scene = scene.map(Path::to_path_buf);
    Harness::builder()
        .with_size([1280.0, 800.0])
        .build_eframe(move |cc| DrapeApp::new(&cc.egui_ctx, scene.as_deref()))
}

/// Steps the app until `done` holds; fails the test after 120 s.
fn wait_until(h: &mut Harness<'static, DrapeApp>, what: &str, done: impl Fn(&DrapeApp) -> bool) {
    let start = Instant::now();
    loop {
        h.step();
        if done(h.state()) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "timed out waiting for {what}; errors: {:?}",
            h.state().errors
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn loaded(h: &mut Harness<'static, DrapeApp>) {
    wait_until(h, "the first frame", |a| a.live.is_some());
    assert!(h.state().errors.is_empty(), "{:?}", h.state().errors);
}

#[test]
fn play_ten_frames_and_the_garment_moves() {
    let mut h = harness(None);
    loaded(&mut h);
    let before = h.state().garment_positions();
    assert!(!before.is_empty());
    h.get_by_label("Play").click();
    wait_until(&mut h, "10 frames", |a| {
        a.live.as_ref().is_some_and(|f| f.frame >= 10)
    });
    h.get_by_label("Pause").click();
    h.step();
    h.step();
    let after = h.state().garment_positions();
    assert_eq!(before.len(), after.len());
    let moved = before
        .iter()
        .zip(&after)
        .map(|(a, b)| (*a - *b).length())
        .fold(0.0f32, f32::max);
    assert!(moved > 1e-3, "largest move {moved} m");
    assert!(after.iter().all(|p| p.is_finite()));
    assert!(!h.state().playing);
}

#[test]
fn changing_the_fabric_preset_changes_the_solver_compliance() {
    let mut h = harness(None);
    loaded(&mut h);
    wait_until(&mut h, "the model report", |a| {
        a.solver_stretch_compliance_m_per_n.is_some()
    });
    let cotton = h.state().solver_stretch_compliance_m_per_n.unwrap();
    h.get_by_label("skirt").click();
    h.step();
    h.get_by_label("Fabric").click();
    h.run_steps(3);
    h.get_by_label("chiffon").click();
    h.step();
    assert_eq!(h.state().doc.scene.garments[0].fabric, "chiffon");
    wait_until(&mut h, "the rebuilt model", |a| {
        a.solver_stretch_compliance_m_per_n != Some(cotton)
    });
    let chiffon = h.state().solver_stretch_compliance_m_per_n.unwrap();
    // Chiffon is far less stiff in stretch than cotton shirting: a larger compliance.
    assert!(chiffon > cotton, "chiffon {chiffon} vs cotton {cotton} m/N");
    assert!(h.state().doc.dirty);
}

#[test]
fn bake_twenty_frames_and_the_timeline_shows_twenty() {
    let mut h = harness(None);
    loaded(&mut h);
    let mut scene = h.state().doc.scene.clone();
    scene.timeline.end_frame = Some(scene.timeline.start_frame + 19);
    h.state_mut().edit(scene);
    assert_eq!(h.state().timeline_frames(), 20);
    h.get_by_label("Bake").click();
    wait_until(&mut h, "the bake", |a| {
        a.baked.is_some() && a.baking.is_none()
    });
    let app = h.state();
    let baked = app.baked.as_ref().unwrap();
    assert_eq!(baked.frames.len(), 20);
    assert!(!baked.cancelled);
    assert_eq!(app.timeline_frames(), 20);
    assert_eq!(app.scrub, Some(19));
    h.step();
    h.get_by_label("20 frames baked");
}

#[test]
fn cancelling_a_bake_keeps_the_scene_and_the_frames_so_far() {
    let mut h = harness(None);
    loaded(&mut h);
    let mut scene = h.state().doc.scene.clone();
    scene.timeline.end_frame = Some(scene.timeline.start_frame + 5000);
    h.state_mut().edit(scene);
    let before = h.state().doc.scene.clone();
    h.get_by_label("Bake").click();
    wait_until(&mut h, "bake progress", |a| {
        a.baking.is_some_and(|p| p.done >= 2)
    });
    h.get_by_label("Cancel bake").click();
    wait_until(&mut h, "the cancelled bake", |a| a.baking.is_none());
    let app = h.state();
    let baked = app
        .baked
        .as_ref()
        .expect("the frames baked so far are kept");
    assert!(baked.cancelled);
    assert!(baked.frames.len() >= 2 && baked.frames.len() < 5001);
    assert_eq!(app.doc.scene, before, "the scene is intact");
    assert!(app.loaded.is_some() && app.errors.is_empty());
    // The simulation goes on after the cancelled bake.
    let frame = app.live.as_ref().map_or(0, |f| f.frame);
    h.get_by_label("Step").click();
    wait_until(&mut h, "a step after the bake", |a| {
        a.live.as_ref().is_some_and(|f| f.frame > frame) || a.scrub.is_none()
    });
    assert!(h.state().scrub.is_none(), "back to the live simulation");
}

#[test]
fn undo_restores_a_property_change() {
    let mut h = harness(None);
    loaded(&mut h);
    let original = h.state().doc.scene.clone();
    let mut edited = original.clone();
    edited.solver.substeps = 7;
    h.state_mut().edit(edited);
    assert_eq!(h.state().doc.scene.solver.substeps, 7);
    wait_until(&mut h, "the rebuilt solver", |a| a.live.is_some());
    h.get_by_label("Edit").click();
    h.run_steps(3);
    h.get_by_label("Undo").click();
    h.step();
    assert_eq!(h.state().doc.scene, original);
    h.get_by_label("Edit").click();
    h.run_steps(3);
    h.get_by_label("Redo").click();
    h.step();
    assert_eq!(h.state().doc.scene.solver.substeps, 7);
}

/// Opens the solver panel's "Advanced" section (closed by default).
fn open_advanced(h: &mut Harness<'static, DrapeApp>) {
    assert!(
        h.query_by_label("Line passes").is_none(),
        "the advanced settings show before \"Advanced\" is opened"
    );
    h.get_by_label("Advanced").click();
    h.run_steps(2);
}

/// The short solver panel: the quality preset replaces the settings with a built-in solver
/// preset's (undoable), and the self-collision check box is there without opening "Advanced".
#[test]
fn the_quality_preset_and_self_collision_edit_the_scene_and_undo_restores_them() {
    let mut h = harness(None);
    loaded(&mut h);
    let production = drape::preset::builtin_solver("production").unwrap();
    let preview = drape::preset::builtin_solver("preview").unwrap();
    assert_eq!(h.state().doc.scene.solver, production);
    h.get_by_label("Quality").click();
    h.run_steps(2);
    h.get_by_label("preview").click();
    h.run_steps(2);
    assert_eq!(h.state().doc.scene.solver, preview);
    assert_eq!(h.state().doc.scene.solver.substeps, 8);
    assert!(h.state().doc.dirty);
    wait_until(&mut h, "the rebuilt solver", |a| a.live.is_some());
    h.state_mut().undo();
    h.run_steps(2);
    assert_eq!(h.state().doc.scene.solver, production);
    assert!(!h.state().doc.scene.solver.self_collision);
    h.get_by_label("Cloth against itself").click();
    h.run_steps(2);
    assert!(h.state().doc.scene.solver.self_collision);
    wait_until(&mut h, "the rebuilt solver", |a| a.live.is_some());
    h.state_mut().undo();
    h.run_steps(2);
    assert!(!h.state().doc.scene.solver.self_collision);
}

#[test]
fn the_span_limits_check_box_rebuilds_the_solver_with_them_and_undo_takes_them_away() {
    let mut h = harness(None);
    loaded(&mut h);
    open_advanced(&mut h);
    wait_until(&mut h, "the first model", |a| {
        a.solver_span_limits == Some(0)
    });
    assert!(h.state().doc.scene.solver.span_limit_slack < 0.0);
    h.get_by_label("Limit long-range stretch").click();
    h.run_steps(2);
    assert_eq!(h.state().doc.scene.solver.span_limit_slack, 0.0);
    wait_until(&mut h, "a model with span limits", |a| {
        a.solver_span_limits.is_some_and(|n| n > 0)
    });
    h.state_mut().undo();
    assert!(h.state().doc.scene.solver.span_limit_slack < 0.0);
    wait_until(&mut h, "the model without them", |a| {
        a.solver_span_limits == Some(0)
    });
}

#[test]
fn the_adaptive_iterations_check_box_edits_the_scene_and_undo_restores_it() {
    let mut h = harness(None);
    loaded(&mut h);
    open_advanced(&mut h);
    assert_eq!(h.state().doc.scene.solver.adaptive_iterations, None);
    assert!(h.query_by_label("Fewest iterations").is_none());
    h.get_by_label("Per frame, from the stretch").click();
    h.run_steps(2);
    let iterations = h.state().doc.scene.solver.iterations;
    let a = h
        .state()
        .doc
        .scene
        .solver
        .adaptive_iterations
        .expect("adaptive iterations on");
    assert_eq!(a.min_iterations, iterations);
    assert!(a.max_iterations >= 8.max(a.min_iterations), "{a:?}");
    assert_eq!(a.stretch_tolerance, 0.02);
    assert!(h.state().doc.dirty);
    // Its bounds are shown, and the rebuilt solver runs with them.
    assert!(h.query_by_label("Fewest iterations").is_some());
    assert!(h.query_by_label("Stretch tolerance (%)").is_some());
    wait_until(&mut h, "the rebuilt solver", |a| a.live.is_some());
    h.state_mut().undo();
    h.run_steps(2);
    assert_eq!(h.state().doc.scene.solver.adaptive_iterations, None);
    assert!(h.query_by_label("Fewest iterations").is_none());
}

#[test]
fn the_hybrid_check_box_names_a_missing_model_then_runs_a_trained_one_and_undo_turns_it_off() {
    let mut h = harness(None);
    loaded(&mut h);
    open_advanced(&mut h);
    assert_eq!(h.state().doc.scene.solver.neural, None);
    assert!(h.query_by_label("Model").is_none());
    let library = drape::preset::Library::open_default().unwrap();
    let model = library.model_path("default");
    let _ = std::fs::remove_file(&model);

    // No model trained yet: the error names the file it looked for, and the edit is not
    // taken (the scene keeps the classical solver).
    h.get_by_label("Network before the projection").click();
    h.run_steps(2);
    assert!(
        h.state().errors.iter().any(|e| e.contains("default.ron")),
        "{:?}",
        h.state().errors
    );
    assert_eq!(h.state().doc.scene.solver.neural, None);

    // With a model in the library (one that predicts nothing), the live solver runs with it.
    let substeps = h.state().doc.scene.solver.substeps;
    drape::neural::ModelFile {
        format_version: drape::neural::MODEL_FORMAT_VERSION,
        drape_version: drape::VERSION.into(),
        trained_for: drape::neural::TrainedFor {
            substeps,
            fps: h.state().doc.scene.timeline.fps,
        },
        data_hash: "gui test".into(),
        training: Default::default(),
        network: drape::neural::Gnn::zeros(4, 1),
    }
    .save(&model)
    .unwrap();
    let errors = h.state().errors.len();
    h.get_by_label("Network before the projection").click();
    h.run_steps(2);
    let n = h
        .state()
        .doc
        .scene
        .solver
        .neural
        .clone()
        .expect("the network on");
    assert_eq!(n.model, "default");
    assert!(n.fallback);
    assert!(h.query_by_label("Model").is_some());
    assert!(h
        .query_by_label("Classical step when the network fails")
        .is_some());
    assert_eq!(h.state().errors.len(), errors, "{:?}", h.state().errors);
    assert!(h
        .state()
        .loaded
        .as_ref()
        .is_some_and(|l| l.network.as_ref().is_some_and(|n| n.path == model)));
    wait_until(&mut h, "the rebuilt solver", |a| a.live.is_some());
    h.state_mut().undo();
    h.run_steps(2);
    assert_eq!(h.state().doc.scene.solver.neural, None);
    assert!(h.query_by_label("Model").is_none());
    let _ = std::fs::remove_file(&model);
}

#[test]
fn the_gpu_backend_button_rebuilds_the_solver_says_where_it_runs_and_undo_restores_the_cpu() {
    let mut h = harness(None);
    loaded(&mut h);
    open_advanced(&mut h);
    wait_until(&mut h, "the first solver", |a| a.solver_backend.is_some());
    assert_eq!(h.state().solver_backend.as_deref(), Some("CPU"));
    assert_eq!(
        h.state().doc.scene.solver.backend,
        drape::solver::Backend::Cpu
    );
    h.state_mut().solver_backend = None;
    h.get_by_label("GPU").click();
    h.run_steps(2);
    assert_eq!(
        h.state().doc.scene.solver.backend,
        drape::solver::Backend::Gpu
    );
    // The rebuilt solver runs on the GPU, or on the CPU with the reason in the status bar (the
    // default scene's body moves, which the GPU path does not handle yet).
    wait_until(&mut h, "the rebuilt solver", |a| a.solver_backend.is_some());
    let backend = h.state().solver_backend.clone().unwrap();
    let status = h.state().status.clone();
    assert!(
        backend.starts_with("GPU: ") || (backend == "CPU" && status.contains("runs on the CPU")),
        "backend {backend}, status {status}"
    );
    let shown = format!("solver on {backend}");
    assert!(
        h.query_by_label(&shown).is_some(),
        "the status bar shows {shown}"
    );
    h.state_mut().undo();
    h.run_steps(2);
    assert_eq!(
        h.state().doc.scene.solver.backend,
        drape::solver::Backend::Cpu
    );
}

#[test]
fn the_stretch_solve_buttons_edit_the_scene_and_undo_restores_it() {
    let mut h = harness(None);
    loaded(&mut h);
    open_advanced(&mut h);
    assert_eq!(
        h.state().doc.scene.solver.stretch_solve,
        StretchSolve::Lines
    );
    h.get_by_label("By edge").click();
    h.run_steps(2);
    assert_eq!(
        h.state().doc.scene.solver.stretch_solve,
        StretchSolve::Sweep
    );
    assert!(h.state().doc.dirty);
    h.get_by_label("Global").click();
    h.run_steps(2);
    assert_eq!(
        h.state().doc.scene.solver.stretch_solve,
        StretchSolve::Global
    );
    wait_until(&mut h, "the rebuilt solver", |a| a.live.is_some());
    h.state_mut().undo();
    h.run_steps(2);
    assert_eq!(
        h.state().doc.scene.solver.stretch_solve,
        StretchSolve::Sweep
    );
    h.state_mut().undo();
    h.run_steps(2);
    assert_eq!(
        h.state().doc.scene.solver.stretch_solve,
        StretchSolve::Lines
    );
}

#[test]
fn the_line_passes_edit_the_scene_only_with_the_line_solves_and_undo_restores_them() {
    use egui_kittest::kittest::NodeT;
    let mut h = harness(None);
    loaded(&mut h);
    open_advanced(&mut h);
    assert_eq!(h.state().doc.scene.solver.line_passes, 2);
    let passes = h.get_by_label("Line passes");
    assert_eq!(passes.accesskit_node().numeric_value(), Some(2.0));
    passes.set_value_accesskit(4.0);
    h.run_steps(2);
    assert_eq!(h.state().doc.scene.solver.line_passes, 4);
    assert!(h.state().doc.dirty);
    wait_until(&mut h, "the rebuilt solver", |a| a.live.is_some());
    h.state_mut().undo();
    h.run_steps(2);
    assert_eq!(h.state().doc.scene.solver.line_passes, 2);
    // The passes are the line solves': greyed out with the others.
    assert!(!h.get_by_label("Line passes").accesskit_node().is_disabled());
    h.get_by_label("By edge").click();
    h.run_steps(2);
    assert!(h.get_by_label("Line passes").accesskit_node().is_disabled());
}

#[test]
fn the_body_vertex_check_box_edits_the_scene_and_undo_restores_it() {
    let mut h = harness(None);
    loaded(&mut h);
    open_advanced(&mut h);
    assert!(h.state().doc.scene.solver.body_vertex_contacts);
    h.get_by_label("Keep fingers out of the cloth").click();
    h.run_steps(2);
    assert!(!h.state().doc.scene.solver.body_vertex_contacts);
    assert!(h.state().doc.dirty);
    h.state_mut().undo();
    h.run_steps(2);
    assert!(h.state().doc.scene.solver.body_vertex_contacts);
}

#[test]
fn save_and_reopen_gives_the_same_scene() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write_demo(tmp.path(), DemoScene::Default, None).unwrap();
    let mut h = harness(Some(&path));
    loaded(&mut h);
    assert!(h.state().doc.titled);
    let mut edited = h.state().doc.scene.clone();
    edited.solver.iterations = 2;
    edited.garments[0].fabric = "denim".into();
    h.state_mut().edit(edited.clone());
    assert!(h.state().doc.dirty);
    h.get_by_label("File").click();
    h.run_steps(3);
    h.get_by_label("Save").click();
    h.step();
    assert!(!h.state().doc.dirty, "errors: {:?}", h.state().errors);
    let on_disk = Scene::load(&path).unwrap();
    assert_eq!(on_disk, edited);
    let mut again = harness(Some(&path));
    loaded(&mut again);
    assert_eq!(again.state().doc.scene, edited);
}

/// A file dropped on the window, as the windowing integration hands it to egui.
#[derive(Debug)]
struct Dropped(PathBuf);

impl eframe::egui::DroppedFile for Dropped {
    fn path(&self) -> &Path {
        &self.0
    }

    fn bytes(&self) -> Result<Vec<u8>, String> {
        std::fs::read(&self.0).map_err(|e| e.to_string())
    }
}

#[test]
fn a_bad_file_dropped_on_the_window_is_reported_and_the_app_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("not_a_model.glb");
    std::fs::write(&bad, "this is a text file, renamed").unwrap();
    let mut h = harness(None);
    loaded(&mut h);
    let scene = h.state().doc.scene.clone();
    h.input_mut()
        .dropped_files
        .push(std::sync::Arc::new(Dropped(bad.clone())));
    h.step();
    h.step();
    let app = h.state();
    assert_eq!(app.errors.len(), 1, "{:?}", app.errors);
    assert!(
        app.errors[0].contains("not_a_model.glb"),
        "{}",
        app.errors[0]
    );
    assert_eq!(app.doc.scene, scene);
    assert!(h.get_all_by_label_contains("not_a_model.glb").count() >= 1);
    // Still working: it plays on.
    h.get_by_label("Dismiss").click();
    h.step();
    h.get_by_label("Step").click();
    wait_until(&mut h, "a step after the error", |a| {
        a.live.as_ref().is_some_and(|f| f.frame >= 1)
    });
}

#[test]
fn dragging_a_cloth_vertex_pulls_it_while_the_simulation_runs() {
    let mut h = harness(None);
    loaded(&mut h);
    h.step();
    let app = h.state();
    let rect = app.viewport_rect.expect("the viewport was laid out");
    let camera = app.camera();
    let positions = app.garment_positions();
    // The hem's front-most vertex: free to move, and drawn in front of the body.
    let eye = camera.eye();
    let lowest = positions.iter().map(|p| p.y).fold(f32::INFINITY, f32::min);
    let (v, p) = positions
        .iter()
        .enumerate()
        .filter(|(_, p)| p.y < lowest + 0.01)
        .min_by(|a, b| (*a.1 - eye).length().total_cmp(&(*b.1 - eye).length()))
        .map(|(i, p)| (i, *p))
        .unwrap();
    let size = [rect.width(), rect.height()];
    let s = camera.project(p, size).unwrap();
    let at = rect.min + eframe::egui::vec2(s[0], s[1]);
    h.get_by_label("Play").click();
    h.step();
    h.drag_at(at);
    h.step();
    // Pull it 80 points up the screen, and hold it there while the cloth simulates.
    let up = at - eframe::egui::vec2(0.0, 80.0);
    for k in 1..=8 {
        h.hover_at(at - eframe::egui::vec2(0.0, 10.0 * k as f32));
        h.step();
    }
    assert!(
        h.state().grabbed_particle().is_some(),
        "the hem vertex is grabbed"
    );
    let start = h.state().live.as_ref().map_or(0, |f| f.frame);
    wait_until(&mut h, "frames under the drag", |a| {
        a.live.as_ref().is_some_and(|f| f.frame >= start + 12)
    });
    let pulled = h.state().garment_positions()[v];
    assert!(
        pulled.y > p.y + 0.05,
        "the dragged vertex rose from {} to {} m",
        p.y,
        pulled.y
    );
    h.drop_at(up);
    h.step();
    assert!(h.state().grabbed_particle().is_none(), "released");
}

#[test]
fn keyboard_shortcuts_play_and_undo() {
    let mut h = harness(None);
    loaded(&mut h);
    h.key_press(eframe::egui::Key::Space);
    h.step();
    assert!(h.state().playing, "space plays");
    h.key_press(eframe::egui::Key::Space);
    h.step();
    assert!(!h.state().playing, "space pauses");
    let original = h.state().doc.scene.clone();
    let mut edited = original.clone();
    edited.solver.collision_thickness_m = 0.008;
    h.state_mut().edit(edited);
    h.key_press_modifiers(eframe::egui::Modifiers::COMMAND, eframe::egui::Key::Z);
    h.step();
    assert_eq!(h.state().doc.scene, original, "Ctrl+Z undoes");
}

#[test]
fn new_asks_about_unsaved_changes() {
    let mut h = harness(None);
    loaded(&mut h);
    let mut edited = h.state().doc.scene.clone();
    edited.solver.iterations = 3;
    h.state_mut().edit(edited.clone());
    h.get_by_label("File").click();
    h.run_steps(3);
    h.get_by_label("New").click();
    h.run_steps(3);
    h.get_by_label("Unsaved changes");
    h.get_by_label("Cancel").click();
    h.run_steps(2);
    assert_eq!(h.state().doc.scene, edited, "cancel keeps the scene");
    assert!(h.state().pending.is_none());
    h.get_by_label("File").click();
    h.run_steps(3);
    h.get_by_label("New").click();
    h.run_steps(3);
    h.get_by_label("Discard").click();
    h.run_steps(2);
    assert!(
        h.state().doc.scene.garments.is_empty(),
        "discard starts a new scene"
    );
    assert!(!h.state().doc.dirty);
}

#[test]
fn a_bake_exports_to_gltf_and_point_caches() {
    let tmp = tempfile::tempdir().unwrap();
    let mut h = harness(None);
    loaded(&mut h);
    let mut scene = h.state().doc.scene.clone();
    scene.timeline.end_frame = Some(scene.timeline.start_frame + 4);
    h.state_mut().edit(scene);
    h.get_by_label("Bake").click();
    wait_until(&mut h, "the bake", |a| {
        a.baked.is_some() && a.baking.is_none()
    });
    use drape::app::FileAction;
    for (action, name) in [
        (FileAction::ExportGlb, "bake.glb"),
        (FileAction::ExportPc2, "bake.pc2"),
        (FileAction::ExportMdd, "bake.mdd"),
        (FileAction::ExportUsd, "bake.usda"),
    ] {
        let path = tmp.path().join(name);
        h.state_mut().file_action(action, &path);
        assert!(h.state().errors.is_empty(), "{:?}", h.state().errors);
        assert!(std::fs::metadata(&path).unwrap().len() > 100, "{name}");
    }
    let frames = drape::io::cache::read_pc2(&tmp.path().join("bake.pc2")).unwrap();
    assert_eq!(frames.frames.len(), 5);
    let usd = std::fs::read_to_string(tmp.path().join("bake.usda")).unwrap();
    let first = frames.start_frame;
    assert!(
        usd.contains(&format!("startTimeCode = {first}\n")),
        "{usd:.400}"
    );
    assert!(
        usd.contains(&format!("endTimeCode = {}\n", first + 4.0)),
        "{usd:.400}"
    );
    // A name the USD writer refuses is an error in the status bar, and nothing is written.
    let bad = tmp.path().join("bake.usdc");
    h.state_mut().file_action(FileAction::ExportUsd, &bad);
    assert!(
        h.state()
            .errors
            .iter()
            .any(|e| e.contains("bake.usdc") && e.contains(".usda")),
        "{:?}",
        h.state().errors
    );
    assert!(!bad.exists());
}

#[test]
fn a_proxy_is_built_from_the_properties_panel_and_the_view_toggles_to_it() {
    let mut h = harness(None);
    loaded(&mut h);
    let render_n = h.state().garment_positions().len();
    h.get_by_label("skirt").click();
    h.run_steps(2);
    h.get_by_label("Simulate a proxy").click();
    h.run_steps(2);
    h.state_mut().proxy_draft = 300;
    h.get_by_label("Rebuild proxy").click();
    h.run_steps(2);
    let app = h.state();
    let proxy = app.loaded.as_ref().unwrap().garments[0].proxy.as_ref();
    let n = proxy.expect("the proxy was built").mesh.positions.len();
    assert!((270..=330).contains(&n), "{n} proxy vertices");
    wait_until(&mut h, "a frame of the proxy", |a| {
        a.live.as_ref().is_some_and(|f| f.particles.len() == n)
    });
    // The render mesh is still what is drawn, until the view shows the proxy.
    assert_eq!(h.state().garment_positions().len(), render_n);
    h.get_by_label("View").click();
    h.run_steps(3);
    h.get_by_label("Show proxy (simulation mesh)").click();
    h.run_steps(2);
    assert_eq!(h.state().garment_positions().len(), n);
    // Two edits (the check box, at the default 1000 vertices, then the rebuild): two undos
    // take the proxy away again.
    h.state_mut().undo();
    assert_eq!(
        h.state().doc.scene.garments[0].proxy,
        Some(drape::scene::ProxySpec::Vertices(1000))
    );
    h.state_mut().undo();
    assert_eq!(h.state().doc.scene.garments[0].proxy, None);
    wait_until(&mut h, "the render mesh simulated again", |a| {
        a.live.as_ref().is_some_and(|f| f.render.len() == render_n)
            && a.loaded.as_ref().unwrap().garments[0].proxy.is_none()
    });
}

#[test]
fn f_frames_the_selected_garment() {
    let mut h = harness(None);
    loaded(&mut h);
    h.get_by_label("skirt").click();
    h.run_steps(2);
    h.key_press(eframe::egui::Key::F);
    h.run_steps(2);
    let app = h.state();
    let skirt = &app.loaded.as_ref().unwrap().garments[0].render.positions;
    let (mut lo, mut hi) = (skirt[0], skirt[0]);
    for p in skirt {
        lo = lo.min(*p);
        hi = hi.max(*p);
    }
    let camera = app.camera();
    let centre = 0.5 * (lo + hi);
    assert!(
        (camera.target_m - centre).length() < 0.02,
        "camera looks at {} instead of the skirt's centre {centre}",
        camera.target_m
    );
    // The whole skirt is in view, and closer than when the whole scene was framed.
    assert!(camera.distance_m < 2.0, "{}", camera.distance_m);
}

#[test]
fn undo_after_save_as_keeps_a_scene_that_opens() {
    let tmp = tempfile::tempdir().unwrap();
    let a = write_demo(&tmp.path().join("a"), DemoScene::Default, None).unwrap();
    let mut h = harness(Some(&a));
    loaded(&mut h);
    let mut edited = h.state().doc.scene.clone();
    edited.solver.iterations = 2;
    h.state_mut().edit(edited);
    let b = tmp.path().join("b").join("scene.ron");
    h.state_mut()
        .file_action(drape::app::FileAction::SaveAs, &b);
    assert!(h.state().errors.is_empty(), "{:?}", h.state().errors);
    h.state_mut().undo();
    assert_eq!(h.state().doc.scene.solver.iterations, 1);
    h.state_mut().save();
    assert!(!h.state().doc.dirty);
    // The undone scene, saved in b/, still finds its meshes.
    drape::bake::LoadedScene::load(&b).expect("the saved scene opens");
}

#[test]
fn removing_the_last_garment_stops_the_simulation() {
    let mut h = harness(None);
    loaded(&mut h);
    h.get_by_label("Play").click();
    wait_until(&mut h, "a few frames", |a| {
        a.live.as_ref().is_some_and(|f| f.frame >= 2)
    });
    let mut empty = h.state().doc.scene.clone();
    empty.garments.clear();
    h.state_mut().edit(empty);
    for _ in 0..20 {
        h.step();
        std::thread::sleep(Duration::from_millis(10));
    }
    let app = h.state();
    assert!(
        app.live.is_none(),
        "no frames of the removed garment arrive"
    );
    assert!(!app.playing && app.loaded.is_none());
    assert!(app.garment_positions().is_empty());
}

#[test]
fn opening_another_scene_during_a_bake_drops_that_bake() {
    let tmp = tempfile::tempdir().unwrap();
    let other = write_demo(tmp.path(), DemoScene::SphereDrop, Some(12)).unwrap();
    let mut h = harness(None);
    loaded(&mut h);
    let mut scene = h.state().doc.scene.clone();
    scene.timeline.end_frame = Some(scene.timeline.start_frame + 3000);
    h.state_mut().edit(scene);
    h.get_by_label("Bake").click();
    wait_until(&mut h, "bake progress", |a| {
        a.baking.is_some_and(|p| p.done >= 1)
    });
    h.state_mut().open(&other);
    wait_until(&mut h, "the other scene", |a| {
        a.live.as_ref().is_some_and(|f| f.render.len() == 144)
    });
    for _ in 0..20 {
        h.step();
        std::thread::sleep(Duration::from_millis(10));
    }
    let app = h.state();
    assert!(app.baking.is_none(), "the old bake is not shown as running");
    assert!(
        app.baked.is_none(),
        "the old bake's frames are not kept for the new scene"
    );
    assert_eq!(app.garment_positions().len(), 144);
}

#[test]
fn the_outliner_hides_and_shows_a_garment() {
    let mut h = harness(None);
    loaded(&mut h);
    let triangles = h.state().garment_triangles();
    assert!(triangles > 0);
    // The outliner's check boxes: the body's, then the skirt's.
    let boxes: Vec<_> = h
        .get_all_by_role(eframe::egui::accesskit::Role::CheckBox)
        .collect();
    assert!(boxes.len() >= 2, "{} check boxes", boxes.len());
    boxes[1].click();
    h.run_steps(2);
    assert_eq!(h.state().garment_triangles(), 0, "the skirt is hidden");
    assert_eq!(
        h.state().garment_positions().len(),
        1536,
        "its frames still fit"
    );
    let boxes: Vec<_> = h
        .get_all_by_role(eframe::egui::accesskit::Role::CheckBox)
        .collect();
    boxes[1].click();
    h.run_steps(2);
    assert_eq!(h.state().garment_triangles(), triangles);
}

#[test]
fn paint_mode_paints_attachment_with_a_stroke_and_undo_removes_it() {
    use drape::paint::MapKind;
    let mut h = harness(None);
    loaded(&mut h);
    h.step();
    h.get_by_label("Paint").click();
    h.step();
    assert!(h.state().paint.is_some(), "paint mode is on");
    let app = h.state();
    let rect = app.viewport_rect.expect("the viewport was laid out");
    let camera = app.camera();
    let size = [rect.width(), rect.height()];
    let render = &app.loaded.as_ref().unwrap().garments[0].render;
    // The render vertex nearest the camera: the brush's ray hits the garment there.
    let eye = camera.eye();
    let p = render
        .positions
        .iter()
        .min_by(|a, b| (**a - eye).length().total_cmp(&(**b - eye).length()))
        .copied()
        .unwrap();
    let s = camera.project(p, size).unwrap();
    let at = rect.min + eframe::egui::vec2(s[0], s[1]);
    let before = h.state().doc.scene.garments[0].maps.clone();
    assert!(before.is_none());
    h.drag_at(at);
    h.step();
    for k in 1..=6 {
        h.hover_at(at + eframe::egui::vec2(4.0 * k as f32, 0.0));
        h.step();
    }
    h.drop_at(at + eframe::egui::vec2(28.0, 0.0));
    h.step();
    h.step();
    let maps = h.state().doc.scene.garments[0]
        .maps
        .clone()
        .expect("the stroke stored maps in the scene");
    let painted = maps
        .values
        .get(MapKind::Attachment)
        .iter()
        .filter(|&&w| w > 0.0)
        .count();
    assert!(painted > 0, "the stroke painted attachment weights");
    // The viewport colours the weights the scene now holds.
    let shown = h
        .state()
        .painted_weights()
        .expect("paint mode shows the weights");
    assert_eq!(shown, maps.values.get(MapKind::Attachment));
    assert!(h.state().errors.is_empty(), "{:?}", h.state().errors);
    // One stroke is one undo step.
    h.state_mut().undo();
    h.step();
    assert_eq!(h.state().doc.scene.garments[0].maps, None);
}

/// The viewport point (from the window's top left) of the render vertex of garment `garment`
/// nearest the camera, where a brush ray hits that garment.
fn nearest_vertex_on_screen(app: &DrapeApp, garment: usize) -> (eframe::egui::Pos2, usize) {
    let rect = app.viewport_rect.expect("the viewport was laid out");
    let camera = app.camera();
    let size = [rect.width(), rect.height()];
    let render = &app.loaded.as_ref().unwrap().garments[garment].render;
    let eye = camera.eye();
    let (v, p) = render
        .positions
        .iter()
        .enumerate()
        .min_by(|a, b| (*a.1 - eye).length().total_cmp(&(*b.1 - eye).length()))
        .unwrap();
    let s = camera.project(*p, size).unwrap();
    (rect.min + eframe::egui::vec2(s[0], s[1]), v)
}

/// A primary-button stroke from `at` 28 points to the right.
fn stroke(h: &mut Harness<'static, DrapeApp>, at: eframe::egui::Pos2) {
    h.drag_at(at);
    h.step();
    for k in 1..=6 {
        h.hover_at(at + eframe::egui::vec2(4.0 * k as f32, 0.0));
        h.step();
    }
    h.drop_at(at + eframe::egui::vec2(28.0, 0.0));
    h.step();
    h.step();
}

#[test]
fn paint_mode_paints_the_stretch_scale_chosen_in_the_map_box_and_undo_restores_it() {
    use drape::paint::MapKind;
    let mut h = harness(None);
    loaded(&mut h);
    h.step();
    h.get_by_label("Paint").click();
    h.step();
    let (at, nearest) = nearest_vertex_on_screen(h.state(), 0);
    // An attachment stroke first, so there is an attachment map to keep.
    stroke(&mut h, at);
    let attached = h.state().doc.scene.garments[0]
        .maps
        .clone()
        .expect("the attachment stroke stored maps");
    assert!(attached.values.get(MapKind::Attachment)[nearest] > 0.0);
    assert!(attached.values.is_default(MapKind::StretchScale));
    // The map box: open it, choose the stretch scale.
    h.get_by_label("Map to paint").click();
    h.run_steps(2);
    h.get_by_label("Stretch scale").click();
    h.run_steps(2);
    assert_eq!(
        h.state().paint.as_ref().map(|p| p.kind),
        Some(MapKind::StretchScale)
    );
    stroke(&mut h, at);
    let app = h.state();
    assert!(app.errors.is_empty(), "{:?}", app.errors);
    let maps = app.doc.scene.garments[0].maps.clone().unwrap();
    let stretch = maps.values.get(MapKind::StretchScale);
    // Each dab adds up to 1 at full strength: the scale under the stroke's start went up
    // from 1 by more than half a dab, and stays in the map's range.
    assert!(
        stretch[nearest] > 1.5 && stretch[nearest] <= MapKind::StretchScale.range().1,
        "stretch scale {} under the stroke",
        stretch[nearest]
    );
    assert!(stretch.iter().filter(|&&v| v != 1.0).count() > 1);
    assert_eq!(
        maps.values.get(MapKind::Attachment),
        attached.values.get(MapKind::Attachment),
        "the attachment map is unchanged"
    );
    // The loaded scene (what the worker simulates) was patched with the same maps, and its
    // simulation-mesh maps carry the stretch scale.
    let loaded = &app.loaded.as_ref().unwrap().garments[0];
    assert_eq!(loaded.spec.maps, Some(maps.clone()));
    let sim = loaded.maps.as_ref().expect("the loaded garment has maps");
    assert!(sim
        .values
        .get(MapKind::StretchScale)
        .iter()
        .any(|&v| v > 1.0));
    // The viewport shows the stretch scale now, on the log ramp.
    assert_eq!(app.painted_weights().unwrap(), stretch);
    assert_eq!(
        app.garment_colors_drawn()[nearest],
        drape::app::viewport::map_color(MapKind::StretchScale, stretch[nearest])
    );
    // The stretch stroke is one undo step: the attachment-only maps come back exactly.
    h.state_mut().undo();
    h.step();
    assert_eq!(h.state().doc.scene.garments[0].maps, Some(attached.clone()));
    assert_eq!(
        h.state().loaded.as_ref().unwrap().garments[0].spec.maps,
        Some(attached)
    );
}

#[test]
fn paint_mode_fill_covers_the_piece_under_the_cursor_in_one_undo_step() {
    use drape::paint::{Falloff, MapKind};
    let mut h = harness(None);
    loaded(&mut h);
    h.step();
    h.get_by_label("Paint").click();
    h.step();
    // The falloff box.
    h.get_by_label("Brush falloff").click();
    h.run_steps(2);
    h.get_by_label("Constant").click();
    h.run_steps(2);
    assert_eq!(
        h.state().paint.as_ref().map(|p| p.brush.falloff),
        Some(Falloff::Constant)
    );
    h.get_by_label("Fill").click();
    h.step();
    assert!(h.state().paint.as_ref().is_some_and(|p| p.fill));
    let (at, nearest) = nearest_vertex_on_screen(h.state(), 0);
    h.hover_at(at);
    h.step();
    h.drag_at(at);
    h.step();
    h.drop_at(at);
    h.step();
    h.step();
    let app = h.state();
    assert!(app.errors.is_empty(), "{:?}", app.errors);
    let maps = app.doc.scene.garments[0]
        .maps
        .clone()
        .expect("the fill stored maps");
    let w = maps.values.get(MapKind::Attachment);
    let filled = w.iter().filter(|&&v| v == 1.0).count();
    assert_eq!(w[nearest], 1.0);
    // Far more than any brush dab reaches: the piece under the cursor, every vertex at 1.
    assert!(
        filled * 2 > w.len(),
        "{filled} of {} vertices filled",
        w.len()
    );
    assert!(w.iter().all(|&v| v == 0.0 || v == 1.0));
    h.state_mut().undo();
    h.step();
    assert_eq!(h.state().doc.scene.garments[0].maps, None);
}

#[test]
fn paint_mode_paints_the_garment_selected_in_the_outliner() {
    use drape::paint::MapKind;
    let mut h = harness(None);
    loaded(&mut h);
    // A second skirt, a copy of the first on a higher layer.
    let mut scene = h.state().doc.scene.clone();
    let mut second = scene.garments[0].clone();
    second.name = "skirt_2".into();
    second.layer = 1;
    scene.garments.push(second);
    h.state_mut().edit(scene);
    wait_until(&mut h, "the two-garment scene", |a| {
        a.loaded.as_ref().is_some_and(|l| l.garments.len() == 2) && a.live.is_some()
    });
    h.get_by_label("skirt_2").click();
    h.run_steps(2);
    h.get_by_label("Paint").click();
    h.step();
    assert_eq!(h.state().paint.as_ref().map(|p| p.garment), Some(1));
    let (at, nearest) = nearest_vertex_on_screen(h.state(), 1);
    stroke(&mut h, at);
    let app = h.state();
    assert!(app.errors.is_empty(), "{:?}", app.errors);
    assert_eq!(
        app.doc.scene.garments[0].maps, None,
        "the first skirt is untouched"
    );
    let maps = app.doc.scene.garments[1]
        .maps
        .clone()
        .expect("the stroke painted the second skirt");
    assert!(maps.values.get(MapKind::Attachment)[nearest] > 0.0);
    assert_eq!(
        app.loaded.as_ref().unwrap().garments[1].spec.maps,
        Some(maps.clone())
    );
    // The viewport colours the second skirt's vertices (after the first skirt's) by their
    // weight and leaves the first skirt in the garment colour.
    let first = app.loaded.as_ref().unwrap().garments[0]
        .render
        .positions
        .len();
    let colors = app.garment_colors_drawn();
    assert_eq!(colors.len(), 2 * first);
    use drape::app::viewport::{weight_color, GARMENT_COLOR};
    assert!(colors[..first].iter().all(|c| *c == GARMENT_COLOR));
    let w = maps.values.get(MapKind::Attachment);
    assert_eq!(colors[first + nearest], weight_color(w[nearest]));
    // Selecting the first skirt moves paint mode to it.
    h.get_by_label("skirt").click();
    h.run_steps(2);
    assert_eq!(h.state().paint.as_ref().map(|p| p.garment), Some(0));
}

#[test]
fn the_scale_maps_colour_ramp_is_logarithmic_with_one_in_the_middle() {
    use approx::assert_relative_eq;
    use drape::app::viewport::{map_color, scale_ramp, weight_color};
    use drape::paint::MapKind;
    for kind in [MapKind::StretchScale, MapKind::BendScale] {
        assert_relative_eq!(scale_ramp(kind, 1.0), 0.5);
        assert_relative_eq!(scale_ramp(kind, 1000.0), 1.0);
        assert_relative_eq!(scale_ramp(kind, 0.001), 0.0, epsilon = 1e-6);
        assert_relative_eq!(scale_ramp(kind, 10.0), 0.5 + 0.5 / 3.0, epsilon = 1e-6);
        assert_eq!(scale_ramp(kind, 0.0), 0.0);
    }
    assert_relative_eq!(scale_ramp(MapKind::MassScale, 100.0), 1.0);
    assert_relative_eq!(scale_ramp(MapKind::MassScale, 0.01), 0.0, epsilon = 1e-6);
    // The attachment weight keeps its linear ramp.
    assert_eq!(map_color(MapKind::Attachment, 0.25), weight_color(0.25));
    assert_eq!(map_color(MapKind::MassScale, 1.0), weight_color(0.5));
}

#[test]
fn paint_mode_paints_the_new_mesh_after_another_scene_is_opened() {
    use drape::paint::MapKind;
    let tmp = tempfile::tempdir().unwrap();
    let other = write_demo(tmp.path(), DemoScene::SphereDrop, Some(12)).unwrap();
    let mut h = harness(None);
    loaded(&mut h);
    h.step();
    h.get_by_label("Paint").click();
    h.step();
    h.state_mut().open(&other);
    wait_until(&mut h, "the other scene", |a| {
        a.live.as_ref().is_some_and(|f| f.render.len() == 144)
    });
    h.step();
    assert!(h.state().paint.is_some(), "paint mode stays on");
    // The flat cloth's corner nearest the camera is on its rim, where a ray can slip past:
    // aim at the vertex a fifth of the way from that corner to the cloth's centre.
    let (at, nearest) = {
        let app = h.state();
        let r = &app.loaded.as_ref().unwrap().garments[0].render.positions;
        let centre = r.iter().copied().sum::<drape::math::Vec3>() / r.len() as f32;
        let eye = app.camera().eye();
        let corner = r
            .iter()
            .copied()
            .min_by(|a, b| (*a - eye).length().total_cmp(&(*b - eye).length()))
            .unwrap();
        let aim = corner + 0.2 * (centre - corner);
        let (v, p) = r
            .iter()
            .enumerate()
            .min_by(|a, b| (*a.1 - aim).length().total_cmp(&(*b.1 - aim).length()))
            .unwrap();
        let rect = app.viewport_rect.unwrap();
        let s = app
            .camera()
            .project(*p, [rect.width(), rect.height()])
            .unwrap();
        (rect.min + eframe::egui::vec2(s[0], s[1]), v)
    };
    stroke(&mut h, at);
    let app = h.state();
    assert!(app.errors.is_empty(), "{:?}", app.errors);
    let maps = app.doc.scene.garments[0]
        .maps
        .clone()
        .expect("the stroke painted the sphere-drop cloth");
    assert_eq!(maps.values.len(), 144);
    assert!(maps.values.get(MapKind::Attachment)[nearest] > 0.0);
}

#[test]
fn paint_mode_shows_the_brush_circle_on_the_surface_under_the_pointer() {
    use drape::app::paint_mode::BRUSH_RING_SEGMENTS;
    use drape::paint::{PaintMesh, DEFAULT_MIRROR_TOLERANCE_M};
    let mut h = harness(None);
    loaded(&mut h);
    h.step();
    h.get_by_label("Paint").click();
    h.step();
    assert!(h.state().paint.is_some(), "paint mode is on");
    let (at, _) = nearest_vertex_on_screen(h.state(), 0);
    // Off the garment (the viewport's top left corner, above the skirt): no circle.
    let corner = h.state().viewport_rect.unwrap().min + eframe::egui::vec2(5.0, 5.0);
    h.hover_at(corner);
    h.step();
    assert_eq!(h.state().brush_circle(), None);
    assert!(h.state().brush_ring_drawn().is_empty());

    let history = (h.state().doc.can_undo(), h.state().doc.dirty);
    let scene = h.state().doc.scene.clone();
    h.hover_at(at);
    h.step();
    h.step();
    let app = h.state();
    let circle = app.brush_circle().expect("a circle over the garment");
    // The picked point: the same ray cast on the rest mesh, done here.
    let rect = app.viewport_rect.unwrap();
    let size = [rect.width(), rect.height()];
    let mesh = PaintMesh::new(
        &app.loaded.as_ref().unwrap().garments[0].render,
        DEFAULT_MIRROR_TOLERANCE_M,
    );
    let (origin, dir) = app
        .camera()
        .ray([at.x - rect.left(), at.y - rect.top()], size);
    let hit = mesh
        .ray_cast(origin, dir)
        .expect("the ray hits the garment");
    assert!(
        (circle.centre_m - hit.point_m).length() < 1e-3,
        "centre {:?}, picked {:?}",
        circle.centre_m,
        hit.point_m
    );
    assert!((circle.normal.length() - 1.0).abs() < 1e-4);
    assert!(circle.normal.dot(dir) < 0.0, "the normal faces the camera");
    let radius = app.paint.as_ref().unwrap().brush.radius_m;
    assert_eq!(circle.radius_m, radius);
    let check_ring = |app: &DrapeApp, radius: f32| {
        let c = app.brush_circle().unwrap();
        let points = c.points(BRUSH_RING_SEGMENTS);
        assert_eq!(points.len(), BRUSH_RING_SEGMENTS);
        for p in &points {
            let d = (*p - c.centre_m).length();
            assert!((d - radius).abs() <= 0.02 * radius, "{d} m from the centre");
            // In the plane perpendicular to the normal, a little off the surface.
            let lift = (*p - c.centre_m).dot(c.normal);
            assert!(lift > 0.0 && lift < 3e-3, "lifted {lift} m");
        }
        // The drawn ring: an annulus around the same circle, as thin as a few pixels.
        let drawn = app.brush_ring_drawn();
        assert_eq!(drawn.len(), 2 * BRUSH_RING_SEGMENTS);
        let mean = drawn
            .iter()
            .map(|p| (*p - c.centre_m).length())
            .sum::<f32>()
            / drawn.len() as f32;
        assert!((mean - radius).abs() <= 0.02 * radius, "mean {mean} m");
        for p in &drawn {
            let d = (*p - c.centre_m).length();
            assert!((d - radius).abs() <= 0.2 * radius, "{d} m from the centre");
        }
    };
    check_ring(app, radius);
    // Hovering is not an edit.
    assert_eq!((app.doc.can_undo(), app.doc.dirty), history);
    assert_eq!(app.doc.scene, scene);

    // A larger brush: the ring follows.
    h.state_mut().paint.as_mut().unwrap().brush.radius_m = 0.15;
    h.step();
    assert_eq!(h.state().brush_circle().unwrap().radius_m, 0.15);
    check_ring(h.state(), 0.15);

    // During a stroke the circle stays.
    h.drag_at(at);
    h.step();
    for k in 1..=6 {
        h.hover_at(at + eframe::egui::vec2(4.0 * k as f32, 0.0));
        h.step();
        assert!(h.state().brush_circle().is_some(), "shown while dragging");
    }
    assert!(h.state().painting(), "a stroke is in progress");
    h.drop_at(at + eframe::egui::vec2(28.0, 0.0));
    h.step();

    // Off the garment again, then paint mode off: no circle.
    h.hover_at(corner);
    h.step();
    assert_eq!(h.state().brush_circle(), None);
    assert!(h.state().brush_ring_drawn().is_empty());
    h.hover_at(at);
    h.step();
    assert!(h.state().brush_circle().is_some());
    h.state_mut().set_paint_mode(false);
    h.step();
    assert_eq!(h.state().brush_circle(), None);
    assert!(h.state().brush_ring_drawn().is_empty());
}

#[test]
fn a_pattern_is_imported_shown_and_sewn_on_the_body_into_a_new_garment() {
    use drape::app::FileAction;
    let tmp = tempfile::tempdir().unwrap();
    let pattern = drape::sew::tshirt::write_tshirt_pattern(tmp.path(), "shirt.ron").unwrap();
    let mut h = harness(None);
    loaded(&mut h);
    // A broken pattern is an error naming the file; no window opens.
    let bad = tmp.path().join("bad.ron");
    std::fs::write(&bad, "(version: 1, svg: \"missing.svg\", panels: [])").unwrap();
    h.state_mut().file_action(FileAction::ImportPattern, &bad);
    assert!(h.state().pattern.is_none());
    assert!(
        h.state().errors.iter().any(|e| e.contains("bad.ron")),
        "{:?}",
        h.state().errors
    );
    h.state_mut().errors.clear();
    h.state_mut()
        .file_action(FileAction::ImportPattern, &pattern);
    h.run_steps(2);
    // The window lists the panels with their places and the seams with their lengths.
    h.get_by_label_contains("Pattern: shirt.ron");
    h.get_by_label_contains("sleeve_l: LeftArm");
    h.get_by_label_contains("seam 9: front 1 (265 mm) to sleeve_r 2 (273 mm)");
    let garments = h.state().doc.scene.garments.len();
    h.get_by_label("Sew on the body").click();
    h.run_steps(2);
    assert!(h.state().pattern.as_ref().unwrap().sewing.is_some());
    wait_until(&mut h, "the sewing", |a| {
        a.doc.scene.garments.len() > garments || !a.errors.is_empty()
    });
    assert!(h.state().errors.is_empty(), "{:?}", h.state().errors);
    let added = h.state().doc.scene.garments.last().unwrap().clone();
    assert_eq!(added.name, "shirt.sewn");
    let file = tmp.path().join("shirt.sewn.glb");
    assert_eq!(added.path, file);
    let sewn = drape::io::load_meshes(&file).unwrap();
    let p = drape::garment::pattern::Pattern::load(&pattern).unwrap();
    let n: usize = p.panels.iter().map(|p| p.mesh.positions.len()).sum();
    assert_eq!(sewn[0].positions.len(), n);
    let r = h.state().pattern.as_ref().unwrap().report.clone().unwrap();
    assert!(r.max_seam_gap_m <= 1.0e-3, "{r:?}");
    h.run_steps(2);
    h.get_by_label_contains("Sewn: largest seam gap");
    // One undo step takes the garment out again.
    h.state_mut().undo();
    assert_eq!(h.state().doc.scene.garments.len(), garments);
    // Closing the window forgets the pattern.
    h.state_mut().pattern = None;
    h.run_steps(2);
    assert!(h.query_by_label_contains("Pattern: shirt.ron").is_none());
}

/// Issue 35: the body's collision exclusions in the properties panel: ticking a joint excludes
/// the triangles that follow it (the loaded body reports them), and undo brings them back.
#[test]
fn a_joint_ticked_in_the_body_panel_is_excluded_from_collision_and_undo_restores_it() {
    let dir = tempfile::tempdir().unwrap();
    let scene = write_demo(dir.path(), DemoScene::Walk, None).unwrap();
    let mut h = harness(Some(&scene));
    loaded(&mut h);
    h.get_by_label("Body: walking-mannequin.glb").click();
    h.run_steps(2);
    h.get_by_label_contains("Collision exclusions (0 of")
        .click();
    h.run_steps(2);
    h.get_by_label("shoulder_left").click();
    h.run_steps(2);
    let body = h.state().doc.scene.body.clone().unwrap();
    assert_eq!(body.exclude_joints, ["shoulder_left"]);
    wait_until(&mut h, "the body reloaded with its exclusions", |a| {
        (a.loaded.as_ref().and_then(|l| l.body.as_ref()))
            .is_some_and(|b| b.excluded_triangles() > 0)
    });
    let excluded = (h.state().loaded.as_ref().and_then(|l| l.body.as_ref()))
        .map(|b| (b.excluded_triangles(), b.mesh().indices.len()))
        .unwrap();
    // One arm of the mannequin's parts: some, far from all, of its triangles.
    assert!(
        excluded.0 > 0 && excluded.0 < excluded.1 / 3,
        "{excluded:?}"
    );
    h.get_by_label("Edit").click();
    h.run_steps(3);
    h.get_by_label("Undo").click();
    h.step();
    assert!(h
        .state()
        .doc
        .scene
        .body
        .as_ref()
        .unwrap()
        .exclude_joints
        .is_empty());
    wait_until(&mut h, "the body reloaded without exclusions", |a| {
        (a.loaded.as_ref().and_then(|l| l.body.as_ref())).is_some_and(|b| b.exclusion.is_none())
    });
}
