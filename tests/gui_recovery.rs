//! Autosave and crash recovery in the desktop app (issue 9, item 5), driven headless by
//! egui_kittest on the real `DrapeApp`.
//!
//! A crash is a real one: each test runs itself again in a child process (the same test, with
//! [`CHILD_SCENE_ENV`] set), which opens a scene, edits it, waits for the autosave and aborts.
//! The test then starts the app on what the child left. Every app here gets its own recovery
//! folder through [`AppOptions`], and the preset folder is moved, so nothing touches the real
//! user folders.
#![cfg(feature = "gui")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use drape::app::recovery::RECOVERY_SUFFIX;
use drape::app::{AppOptions, DrapeApp};
use drape::scene::demo::{write_demo, DemoScene};
use drape::scene::Scene;
use egui_kittest::kittest::Queryable;
use egui_kittest::Harness;

/// Set in the child process: the scene it opens and edits before it aborts.
const CHILD_SCENE_ENV: &str = "DRAPE_TEST_CRASH_SCENE";
/// Set in the child process: its recovery folder.
const CHILD_RECOVERY_ENV: &str = "DRAPE_TEST_CRASH_RECOVERY";

/// One user preset folder for the whole test binary, so no test writes into the real
/// configuration folder.
fn isolate_user_config() {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| tempfile::tempdir().unwrap().keep().join("presets"));
    // SAFETY: every test sets the same value before any thread reads it.
    unsafe { std::env::set_var("DRAPE_PRESET_DIR", dir) };
}

fn harness(scene: Option<&Path>, recovery: &Path, every: Duration) -> Harness<'static, DrapeApp> {
    isolate_user_config();
    let scene = scene.map(Path::to_path_buf);
    let options = AppOptions {
        recovery_dir: Some(recovery.to_path_buf()),
        autosave_interval: every,
    };
    Harness::builder()
        .with_size([1280.0, 800.0])
        .build_eframe(move |cc| DrapeApp::with_options(&cc.egui_ctx, scene.as_deref(), options))
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

/// The edit every crashed session makes.
fn edit(scene: &Scene) -> Scene {
    let mut edited = scene.clone();
    edited.solver.iterations = 3;
    edited.garments[0].fabric = "denim".into();
    edited
}

/// The recovery files in `dir`.
fn recovery_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(RECOVERY_SUFFIX))
        .collect();
    files.sort();
    files
}

/// In the child process, does the crashing session and never returns; in the test, returns.
fn crash_if_child() {
    let (Some(scene), Some(dir)) = (
        std::env::var_os(CHILD_SCENE_ENV),
        std::env::var_os(CHILD_RECOVERY_ENV),
    ) else {
        return;
    };
    let mut h = harness(Some(Path::new(&scene)), Path::new(&dir), Duration::ZERO);
    loaded(&mut h);
    let edited = edit(&h.state().doc.scene);
    h.state_mut().edit(edited);
    assert!(h.state().doc.dirty);
    wait_until(&mut h, "the autosave", |a| {
        a.autosave.file().is_some_and(Path::exists)
    });
    // A crash: no destructor runs, nothing is cleaned up.
    std::process::abort();
}

/// Runs test `name` in a child process that crashes with unsaved changes to `scene`; returns
/// the recovery file it left in `recovery`.
fn crashed_session(name: &str, scene: &Path, recovery: &Path) -> PathBuf {
    let status = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .stdout(std::process::Stdio::null())
        .env(CHILD_SCENE_ENV, scene)
        .env(CHILD_RECOVERY_ENV, recovery)
        .status()
        .unwrap();
    assert!(!status.success(), "the child should have aborted: {status}");
    let files = recovery_files(recovery);
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// A demo scene in a fresh folder, and a recovery folder beside it.
fn scene_and_folder() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let scene = write_demo(&tmp.path().join("scene"), DemoScene::Default, None).unwrap();
    let recovery = tmp.path().join("recovery");
    (tmp, scene, recovery)
}

#[test]
fn recover_after_a_crash_brings_back_the_unsaved_changes() {
    crash_if_child();
    let (_tmp, scene, recovery) = scene_and_folder();
    let original = Scene::load(&scene).unwrap();
    let left = crashed_session(
        "recover_after_a_crash_brings_back_the_unsaved_changes",
        &scene,
        &recovery,
    );

    let mut h = harness(Some(&scene), &recovery, Duration::from_secs(600));
    loaded(&mut h);
    assert_eq!(
        h.state().doc.scene,
        original,
        "the file as saved, until Recover"
    );
    h.get_by_label_contains("Recover unsaved changes from");
    h.get_by_label("Recover").click();
    h.run_steps(3);
    let state = h.state();
    assert!(state.recovery.is_none());
    assert_eq!(state.doc.scene, edit(&original));
    assert!(state.doc.dirty && state.doc.titled);
    assert_eq!(state.doc.path, scene);
    loaded(&mut h);

    // The changes move into this app's own recovery file at once (long before its 10-minute
    // autosave), and only then is the old one removed.
    let own = h.state().autosave.file().unwrap().to_path_buf();
    wait_until(&mut h, "the changes in this app's recovery file", |_| {
        recovery_files(&recovery) == vec![own.clone()]
    });
    assert!(!left.exists());

    // Saving writes the changes to the scene and leaves nothing to recover.
    h.get_by_label("File").click();
    h.run_steps(3);
    h.get_by_label("Save").click();
    h.step();
    assert!(!h.state().doc.dirty, "errors: {:?}", h.state().errors);
    assert_eq!(Scene::load(&scene).unwrap(), edit(&original));
    assert_eq!(recovery_files(&recovery), Vec::<PathBuf>::new());
}

#[test]
fn discard_removes_the_recovery_file_and_keeps_the_open_scene() {
    crash_if_child();
    let (_tmp, scene, recovery) = scene_and_folder();
    let left = crashed_session(
        "discard_removes_the_recovery_file_and_keeps_the_open_scene",
        &scene,
        &recovery,
    );

    // Started on the default scene, the app offers the changes of any scene.
    let mut h = harness(None, &recovery, Duration::from_secs(600));
    loaded(&mut h);
    h.get_by_label_contains("Recover unsaved changes from");
    h.get_by_label("Discard").click();
    h.run_steps(3);
    assert!(h.state().recovery.is_none());
    assert!(!left.exists());
    assert!(!h.state().doc.titled, "still the default scene");
    assert!(!h.state().doc.dirty);
    drop(h);

    // Nothing is offered any more.
    let mut again = harness(Some(&scene), &recovery, Duration::from_secs(600));
    loaded(&mut again);
    assert!(again.state().recovery.is_none());
    assert!(again
        .query_by_label_contains("Recover unsaved changes from")
        .is_none());
}

#[test]
fn a_recovery_file_older_than_the_scene_is_not_offered_and_is_removed() {
    crash_if_child();
    let (_tmp, scene, recovery) = scene_and_folder();
    let left = crashed_session(
        "a_recovery_file_older_than_the_scene_is_not_offered_and_is_removed",
        &scene,
        &recovery,
    );
    // The scene is saved after the crash (by another Drape, or by hand), a second later.
    std::thread::sleep(Duration::from_millis(1100));
    let on_disk = Scene::load(&scene).unwrap();
    on_disk.save(&scene).unwrap();

    let mut h = harness(Some(&scene), &recovery, Duration::from_secs(600));
    loaded(&mut h);
    assert!(h.state().recovery.is_none());
    assert!(!left.exists());
}

#[test]
fn changes_are_autosaved_only_while_unsaved_and_never_offered_to_the_same_process() {
    let (_tmp, scene, recovery) = scene_and_folder();
    let mut h = harness(Some(&scene), &recovery, Duration::from_millis(200));
    loaded(&mut h);
    let own = h.state().autosave.file().unwrap().to_path_buf();
    h.run_steps(3);
    std::thread::sleep(Duration::from_millis(300));
    h.run_steps(3);
    assert!(!own.exists(), "no unsaved changes, no autosave");

    let edited = edit(&h.state().doc.scene);
    h.state_mut().edit(edited.clone());
    wait_until(&mut h, "the autosave", |_| own.exists());
    let text = std::fs::read_to_string(&own).unwrap();
    assert!(text.starts_with("// Drape recovery file"), "{text}");

    // Another window of this process does not offer a live window's changes.
    let mut other = harness(Some(&scene), &recovery, Duration::from_secs(600));
    loaded(&mut other);
    assert!(other.state().recovery.is_none());
    drop(other);
    assert!(own.exists());

    // Saving removes the recovery file; closing normally would too.
    h.state_mut().save();
    assert!(!h.state().doc.dirty, "errors: {:?}", h.state().errors);
    assert!(!own.exists());
    assert_eq!(Scene::load(&scene).unwrap(), edited);
}
