//! The desktop app: eframe + egui for the panels, three-d for the 3D viewport (DESIGN §5).
//!
//! [`DrapeApp`] is the whole application state; `drape` with no arguments runs it on the
//! built-in default scene ([`run`]), and the egui_kittest tests drive the same type. The
//! simulation runs on a worker thread ([`worker`]), so the window never waits for it.

pub mod camera;
pub mod document;
pub mod paint_mode;
mod panels;
pub mod pattern_window;
pub mod recovery;
pub mod viewport;
pub mod worker;

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use eframe::egui;

use crate::bake::{BakeResult, LoadedScene};
use crate::math::{Real, Vec3};
use crate::preset::Library;
use crate::scene::demo::{write_demo, DemoScene};
use crate::scene::{GarmentSpec, Scene};
use camera::OrbitCamera;
use document::Document;
use viewport::{SceneDraw, SharedDraw, BODY_COLOR, GARMENT_COLOR};
use worker::{Event, FrameView, LiveStats, Worker};

/// Most recent files remembered.
const RECENT_LIMIT: usize = 10;

/// What is selected in the outliner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Selection {
    /// The scene itself (solver and timeline).
    Scene,
    /// The body.
    Body,
    /// A garment, by index.
    Garment(usize),
}

/// A file dialog's purpose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileAction {
    /// Open a scene.
    OpenScene,
    /// Add a garment.
    ImportGarment,
    /// Set the body.
    ImportBody,
    /// Open a sewing pattern in the pattern window.
    ImportPattern,
    /// Save the scene under a new name.
    SaveAs,
    /// Export the bake as glTF binary.
    ExportGlb,
    /// Export the bake as a PC2 point cache.
    ExportPc2,
    /// Export the bake as an MDD point cache.
    ExportMdd,
    /// Export the bake as a USD text stage.
    ExportUsd,
    /// Import a preset file into the user library.
    ImportPreset,
    /// Export the selected preset.
    ExportPreset,
}

/// Something waiting for the artist's answer about unsaved changes.
#[derive(Clone, Debug, PartialEq)]
pub enum Pending {
    /// Start a new scene.
    New,
    /// Open this scene.
    Open(PathBuf),
    /// Close the window.
    Close,
}

/// A bake in progress.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BakeProgress {
    /// Frames baked.
    pub done: usize,
    /// Frames asked for.
    pub total: usize,
    /// Estimated time left (s).
    pub eta_s: f64,
}

/// What the viewport shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ViewOptions {
    /// Draw the proxy (simulation mesh) instead of the render mesh.
    pub proxy: bool,
    /// Colour the garment by stretch.
    pub heat_map: bool,
    /// Overlay edges.
    pub wireframe: bool,
    /// Draw the body.
    pub show_body: bool,
    /// Draw the garments.
    pub show_garments: bool,
}

impl Default for ViewOptions {
    fn default() -> Self {
        Self {
            proxy: false,
            heat_map: false,
            wireframe: false,
            show_body: true,
            show_garments: true,
        }
    }
}

/// Settings fixed when the app starts.
#[derive(Clone, Debug)]
pub struct AppOptions {
    /// The folder for recovery files (None: [`recovery::default_dir`]).
    pub recovery_dir: Option<PathBuf>,
    /// How often unsaved changes are autosaved to the recovery file.
    pub autosave_interval: Duration,
}

impl Default for AppOptions {
    fn default() -> Self {
        Self {
            recovery_dir: None,
            autosave_interval: recovery::DEFAULT_AUTOSAVE_INTERVAL,
        }
    }
}

/// The application.
pub struct DrapeApp {
    /// The scene being edited.
    pub doc: Document,
    /// The scene with its files read, as the worker simulates it.
    pub loaded: Option<Arc<LoadedScene>>,
    /// The latest simulated frame.
    pub live: Option<Box<FrameView>>,
    /// The last bake (possibly cancelled part-way), scrubbed on the timeline.
    pub baked: Option<Box<BakeResult>>,
    /// The baked frame shown, when scrubbing.
    pub scrub: Option<usize>,
    /// The bake running now.
    pub baking: Option<BakeProgress>,
    /// Whether the simulation plays.
    pub playing: bool,
    /// Outliner selection.
    pub selection: Selection,
    /// Viewport toggles.
    pub view: ViewOptions,
    /// Garments hidden in the viewport (by index).
    pub hidden_garments: std::collections::BTreeSet<usize>,
    /// Error messages not yet dismissed, each naming the file and the problem.
    pub errors: Vec<String>,
    /// The last status message.
    pub status: String,
    /// Recently opened or saved scenes, newest first.
    pub recent: Vec<PathBuf>,
    /// The preset library (built-in and user presets).
    pub presets: Library,
    /// The library's presets, as last listed (the panels read this, not the folder, every
    /// frame); see [`DrapeApp::refresh_presets`].
    pub preset_entries: Vec<crate::preset::PresetEntry>,
    /// Proxy vertex count typed in the properties panel, applied by "Rebuild proxy".
    pub proxy_draft: u32,
    /// The preset selected in the library panel: `(name, is_solver)`.
    pub preset_selected: Option<(String, bool)>,
    /// Name typed for a new, duplicated or renamed preset.
    pub preset_name: String,
    /// Show the preset library window.
    pub show_presets: bool,
    /// The sewing pattern open in the pattern window (File > Import pattern…).
    pub pattern: Option<pattern_window::PatternView>,
    /// The solver's mean stretch compliance (m/N), as the worker last reported it.
    pub solver_stretch_compliance_m_per_n: Option<Real>,
    /// How many span limits the solver holds, as the worker last reported it.
    pub solver_span_limits: Option<usize>,
    /// Where the live solver's substeps run ("CPU", or "GPU: " and the adapter), once the
    /// worker has built it.
    pub solver_backend: Option<String>,
    /// Waiting for an answer about unsaved changes.
    pub pending: Option<Pending>,
    /// Where the 3D viewport was last laid out (points).
    pub viewport_rect: Option<egui::Rect>,
    /// Paint mode, when it is on.
    pub paint: Option<paint_mode::PaintMode>,
    /// Unsaved changes left by an app that did not close normally, offered at start-up.
    pub recovery: Option<recovery::Offer>,
    /// Writes the unsaved changes to this app's recovery file.
    pub autosave: recovery::Autosave,
    /// Set once the window may close.
    allow_close: bool,
    worker: Worker,
    draw: SharedDraw,
    dialog: Option<(FileAction, Receiver<Option<PathBuf>>)>,
    /// A garment vertex being dragged: (render vertex, particle).
    grab: Option<(usize, u32)>,
    /// The untitled default scene's folder.
    scratch: Option<PathBuf>,
    /// Counts the scenes sent to the worker; see [`worker::Command::Load`].
    generation: u64,
    /// The worker thread died once (it is restarted once, not in a loop).
    worker_lost: bool,
    /// Whether the drawn garment mesh has the render mesh's triangles (else the proxy's).
    render_mesh_drawn: bool,
    /// An action to carry out once the Save As dialog (asked for by the unsaved-changes
    /// dialog's Save) has saved the scene.
    after_save: Option<Pending>,
    egui_ctx: egui::Context,
}

/// Where the built-in default scene is written for an untitled session.
fn scratch_dir() -> PathBuf {
    std::env::temp_dir().join(format!("drape-untitled-{}", std::process::id()))
}

impl DrapeApp {
    /// The app on the built-in default scene (`scene = None`) or on a scene file.
    pub fn new(ctx: &egui::Context, scene: Option<&Path>) -> Self {
        Self::with_options(ctx, scene, AppOptions::default())
    }

    /// [`DrapeApp::new`] with `options`. At start-up, unsaved changes that another Drape left
    /// in the recovery folder are offered ([`recovery::find`]): those for `scene`, or those
    /// for any scene when the app starts on the default scene.
    pub fn with_options(ctx: &egui::Context, scene: Option<&Path>, options: AppOptions) -> Self {
        let recovery_dir = options.recovery_dir.or_else(recovery::default_dir);
        if recovery_dir.is_none() {
            log::warn!(
                "no folder for recovery files (is HOME set?): autosave is off; set {} to a folder",
                recovery::RECOVERY_DIR_ENV
            );
        }
        let repaint_ctx = ctx.clone();
        let worker = Worker::spawn(move || repaint_ctx.request_repaint());
        let (presets, preset_error) = match Library::open_default() {
            Ok(lib) => (lib, None),
            Err(e) => (
                Library::with_user_dir(std::env::temp_dir().join("drape-presets")),
                Some(format!("preset library: {e}")),
            ),
        };
        let mut app = Self {
            doc: Document::new(Scene::default(), scratch_dir().join("scene.ron"), false),
            loaded: None,
            live: None,
            baked: None,
            scrub: None,
            baking: None,
            playing: false,
            selection: Selection::Scene,
            view: ViewOptions::default(),
            hidden_garments: Default::default(),
            errors: preset_error.into_iter().collect(),
            status: String::new(),
            recent: load_recent(),
            preset_entries: presets.list(),
            presets,
            proxy_draft: 1000,
            preset_selected: None,
            preset_name: String::new(),
            show_presets: false,
            pattern: None,
            solver_stretch_compliance_m_per_n: None,
            solver_span_limits: None,
            solver_backend: None,
            pending: None,
            viewport_rect: None,
            paint: None,
            recovery: recovery_dir
                .as_deref()
                .and_then(|d| recovery::find(d, scene)),
            autosave: recovery::Autosave::new(recovery_dir, options.autosave_interval),
            allow_close: false,
            worker,
            draw: Arc::new(Mutex::new(SceneDraw {
                show_body: true,
                show_garment: true,
                ..Default::default()
            })),
            dialog: None,
            grab: None,
            scratch: None,
            generation: 0,
            worker_lost: false,
            render_mesh_drawn: true,
            after_save: None,
            egui_ctx: ctx.clone(),
        };
        match scene {
            Some(path) => app.open(path),
            None => app.open_default(),
        }
        app
    }

    /// Writes the built-in default scene into a scratch folder and opens it, untitled.
    pub fn open_default(&mut self) {
        let dir = scratch_dir();
        match write_demo(&dir, DemoScene::Default, None) {
            Ok(path) => {
                self.scratch = Some(dir);
                if self.open_file(&path) {
                    self.doc.titled = false;
                    self.status = "the built-in default scene".into();
                }
            }
            Err(e) => self.fail(format!("{}: {e}", dir.display())),
        }
    }

    /// Opens a scene file; errors are shown and the current scene is kept.
    pub fn open(&mut self, path: &Path) {
        if self.open_file(path) {
            self.remember(path);
        }
    }

    fn open_file(&mut self, path: &Path) -> bool {
        let (scene, retired) = match Scene::load_with_warnings(path) {
            Ok(s) => s,
            Err(e) => {
                self.fail(e.to_string());
                return false;
            }
        };
        match LoadedScene::from_scene(scene.clone(), path) {
            Ok(mut loaded) => {
                loaded.warnings.splice(0..0, retired.iter().cloned());
                // The changes of the scene replaced were saved or discarded.
                self.autosave.clear();
                self.doc = Document::new(scene, path.to_path_buf(), true);
                self.set_loaded(loaded, true);
                self.frame_all();
                self.status = match retired.first() {
                    // A retired setting: the artist should know the file asks for something
                    // this version ignores (saving drops it).
                    Some(w) => format!("opened {} (warning: {w})", path.display()),
                    None => format!("opened {}", path.display()),
                };
                true
            }
            Err(e) => {
                self.fail(e.to_string());
                false
            }
        }
    }

    /// A new, empty scene (untitled).
    pub fn new_scene(&mut self) {
        self.autosave.clear();
        self.doc = Document::new(Scene::default(), scratch_dir().join("scene.ron"), false);
        self.loaded = None;
        self.live = None;
        self.baked = None;
        self.scrub = None;
        self.playing = false;
        self.selection = Selection::Scene;
        self.paint = None;
        if let Ok(mut d) = self.draw.lock() {
            d.garment = Default::default();
            d.body = Default::default();
        }
        self.status = "new scene: import a garment (File > Import garment) or drop a .glb".into();
    }

    fn set_loaded(&mut self, loaded: LoadedScene, restart: bool) {
        for w in &loaded.warnings {
            log::warn!("{w}");
        }
        let loaded = Arc::new(loaded);
        self.loaded = Some(loaded.clone());
        if restart {
            self.live = None;
            self.baked = None;
            self.scrub = None;
            self.playing = false;
            self.grab = None;
            if self.baking.take().is_some() {
                // A bake of the replaced scene: stop it; its result will be dropped.
                self.worker.cancel_bake();
            }
            self.reload_paint_mesh();
            self.upload_topology(&loaded);
            self.generation += 1;
            self.worker
                .send(worker::Command::Load(loaded, self.generation));
        } else {
            self.worker.send(worker::Command::Update(loaded));
        }
    }

    /// Applies an edited scene: records it for undo, and updates the running simulation
    /// (reloading files only when the garments or body changed). An edit whose files cannot
    /// be read is refused with an error and leaves the scene as it was.
    pub fn edit(&mut self, edited: Scene) {
        self.edit_merging(edited, false);
    }

    /// [`DrapeApp::edit`] for a value being dragged: while `merge` stays true the edits are
    /// one undo step.
    pub fn edit_merging(&mut self, edited: Scene, merge: bool) {
        if edited == self.doc.scene {
            self.doc.commit_merging(edited, merge);
            return;
        }
        if self.apply(&edited) {
            self.doc.commit_merging(edited, merge);
        }
    }

    fn apply(&mut self, scene: &Scene) -> bool {
        if scene.garments.is_empty() {
            // Nothing to simulate: stop the worker and forget this scene's frames and bake.
            self.loaded = None;
            self.paint = None;
            self.live = None;
            self.baked = None;
            self.scrub = None;
            self.playing = false;
            self.grab = None;
            if self.baking.take().is_some() {
                self.worker.cancel_bake();
            }
            self.generation += 1;
            self.worker.send(worker::Command::Unload);
            if let Ok(mut d) = self.draw.lock() {
                d.garment = Default::default();
                d.body = Default::default();
            }
            return true;
        }
        let reload = self
            .loaded
            .as_ref()
            .is_none_or(|l| needs_reload(&l.scene, scene));
        let result = if reload {
            LoadedScene::from_scene(scene.clone(), &self.doc.path)
        } else {
            self.loaded
                .as_ref()
                .map(|l| patch(l, scene))
                .unwrap_or_else(|| LoadedScene::from_scene(scene.clone(), &self.doc.path))
        };
        match result {
            Ok(loaded) => {
                self.set_loaded(loaded, reload);
                true
            }
            Err(e) => {
                self.fail(e.to_string());
                false
            }
        }
    }

    /// Undoes the last edit.
    pub fn undo(&mut self) {
        if self.doc.undo() {
            let scene = self.doc.scene.clone();
            if self.apply(&scene) {
                self.status = "undone".into();
            } else {
                // The earlier scene's files cannot be read (any more): stay where we were.
                self.doc.redo();
            }
        }
    }

    /// Redoes the last undone edit.
    pub fn redo(&mut self) {
        if self.doc.redo() {
            let scene = self.doc.scene.clone();
            if self.apply(&scene) {
                self.status = "redone".into();
            } else {
                self.doc.undo();
            }
        }
    }

    /// Saves to the scene's file, or asks where for an untitled scene.
    pub fn save(&mut self) {
        if self.doc.titled {
            let path = self.doc.path.clone();
            self.save_to(&path);
        } else {
            self.start_dialog(FileAction::SaveAs);
        }
    }

    /// Saves the scene to `path` (atomically); files it refers to keep resolving.
    pub fn save_to(&mut self, path: &Path) -> bool {
        match self.doc.save_as(path, self.scratch.as_deref()) {
            Ok(()) => {
                self.autosave.clear();
                self.remember(path);
                self.status = format!("saved {}", path.display());
                // Paths were rewritten; the loaded meshes are the same files.
                if let Some(l) = &self.loaded {
                    let mut l = (**l).clone();
                    l.scene = self.doc.scene.clone();
                    l.path = path.to_path_buf();
                    self.loaded = Some(Arc::new(l));
                }
                true
            }
            Err(e) => {
                self.fail(e.to_string());
                false
            }
        }
    }

    /// The recovery dialog's Recover: the offered scene, with its unsaved changes, replaces
    /// the open one. Its recovery file is kept until this app's own autosave has the changes.
    /// A scene whose files cannot be read any more is refused with an error, and the recovery
    /// file is kept.
    pub fn recover(&mut self) {
        let Some(offer) = self.recovery.take() else {
            return;
        };
        let scene = offer.scene.clone();
        let loaded = if scene.garments.is_empty() {
            None
        } else {
            match LoadedScene::from_scene(scene.clone(), &offer.scene_path) {
                Ok(l) => Some(l),
                Err(e) => {
                    return self.fail(format!(
                        "cannot recover the unsaved changes in {}: {e}; the file is kept",
                        offer.file.display()
                    ));
                }
            }
        };
        self.new_scene();
        let mut doc = Document::new(scene, offer.scene_path.clone(), offer.titled);
        doc.dirty = true;
        self.doc = doc;
        if !offer.titled {
            // An untitled scene's files are in the scratch folder of the app that stopped:
            // Save As copies them from there.
            self.scratch = offer.scene_path.parent().map(Path::to_path_buf);
        }
        if let Some(loaded) = loaded {
            self.set_loaded(loaded, true);
            self.frame_all();
        }
        self.autosave.adopt(offer.file);
        self.status = format!("recovered the unsaved changes of {}", self.doc.title());
    }

    /// The recovery dialog's Discard: removes the offered recovery file.
    pub fn discard_recovery(&mut self) {
        let Some(offer) = self.recovery.take() else {
            return;
        };
        match std::fs::remove_file(&offer.file) {
            Ok(()) => self.status = "discarded the unsaved changes found at start-up".into(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => self.fail(format!("{}: cannot remove: {e}", offer.file.display())),
        }
    }

    /// Autosaves unsaved changes when due (see [`recovery`]).
    fn autosave_tick(&mut self, ctx: &egui::Context) {
        let Self { doc, autosave, .. } = self;
        if let Some(e) = autosave.tick(&doc.scene, &doc.path, doc.titled, doc.dirty) {
            log::warn!("{e}");
            self.status = e;
        }
        if self.doc.dirty {
            ctx.request_repaint_after(self.autosave.due_in().max(Duration::from_millis(50)));
        }
    }

    /// Adds the garment in a glTF file to the scene.
    pub fn import_garment(&mut self, path: &Path) {
        let mut scene = self.doc.scene.clone();
        let name = unique_name(
            &scene,
            &path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "garment".into()),
        );
        scene.garments.push(GarmentSpec {
            name,
            path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
            ..Default::default()
        });
        let index = scene.garments.len() - 1;
        let before = self.doc.scene.garments.len();
        self.edit(scene);
        if self.doc.scene.garments.len() > before {
            self.selection = Selection::Garment(index);
            self.status = format!("imported garment {}", path.display());
            self.frame_all();
        }
    }

    /// Makes the glTF file the scene's body.
    pub fn import_body(&mut self, path: &Path) {
        let mut scene = self.doc.scene.clone();
        scene.body = Some(crate::scene::BodySpec {
            path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
            ..Default::default()
        });
        if scene.garments.is_empty() {
            // Nothing to simulate yet: check the file now so a bad one is refused.
            if let Err(e) = crate::body::Rig::load(path, None) {
                self.fail(e.to_string());
                return;
            }
        }
        self.edit(scene);
        if self.doc.scene.body.is_some() {
            self.selection = Selection::Body;
            self.status = format!("imported body {}", path.display());
        }
    }

    /// Handles a file dropped on the window: scenes open, glTF files are imported (a skinned
    /// one as the body, others as garments).
    pub fn drop_file(&mut self, path: &Path) {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        match ext.as_str() {
            "ron" => self.request(Pending::Open(path.to_path_buf())),
            "glb" | "gltf" => match crate::body::Rig::load(path, None) {
                Ok(rig) if !rig.skins().is_empty() => self.import_body(path),
                Ok(_) => self.import_garment(path),
                Err(e) => self.fail(e.to_string()),
            },
            _ => self.fail(format!(
                "{}: not a scene (.ron) or glTF file (.glb, .gltf)",
                path.display()
            )),
        }
    }

    /// Starts `pending` now, or asks first when there are unsaved changes.
    pub fn request(&mut self, pending: Pending) {
        if self.doc.dirty {
            self.pending = Some(pending);
        } else {
            self.resolve_pending(pending);
        }
    }

    fn resolve_pending(&mut self, pending: Pending) {
        match pending {
            Pending::New => self.new_scene(),
            Pending::Open(p) => self.open(&p),
            Pending::Close => {
                // Saved or discarded: nothing left to recover.
                self.autosave.clear();
                self.allow_close = true;
                self.egui_ctx
                    .send_viewport_cmd(egui::ViewportCommand::Close);
            }
        }
    }

    /// Goes on with an action the artist confirmed (after saving or discarding changes).
    pub fn continue_pending(&mut self, pending: Pending) {
        self.resolve_pending(pending);
    }

    /// The unsaved-changes dialog's Save: saves, then goes on with `pending` — at once for a
    /// titled scene, after the Save As dialog for an untitled one (not at all if the artist
    /// cancels that dialog or the save fails).
    pub fn save_then(&mut self, pending: Pending) {
        if self.doc.titled {
            self.save();
            if !self.doc.dirty {
                self.resolve_pending(pending);
            }
        } else {
            self.after_save = Some(pending);
            self.start_dialog(FileAction::SaveAs);
        }
    }

    /// Triangles of the drawn garment mesh (hidden garments draw none).
    pub fn garment_triangles(&self) -> usize {
        self.draw.lock().map_or(0, |d| d.garment.indices.len())
    }

    /// A garment vertex of the drawn mesh (m), without copying the mesh.
    pub fn garment_vertex(&self, v: usize) -> Option<Vec3> {
        self.draw
            .lock()
            .ok()
            .and_then(|d| d.garment.positions.get(v).copied())
    }

    /// Drags a particle toward a target (m) in the running simulation, or lets go.
    pub fn drag_particle(&mut self, drag: Option<(u32, Vec3)>) {
        self.worker.send(worker::Command::Drag(drag));
    }

    /// Moves the viewport camera.
    pub fn set_camera(&mut self, camera: OrbitCamera) {
        if let Ok(mut d) = self.draw.lock() {
            d.camera = camera;
        }
    }

    /// The garments a fabric action applies to: the selected one, or all.
    fn target_garments(&self) -> Vec<usize> {
        match self.selection {
            Selection::Garment(i) if i < self.doc.scene.garments.len() => vec![i],
            _ => (0..self.doc.scene.garments.len()).collect(),
        }
    }

    /// Applies a preset: a fabric to the selected garment (all garments when none is
    /// selected), or solver settings to the scene. Undoable.
    pub fn apply_preset(&mut self, name: &str, solver: bool) {
        let mut scene = self.doc.scene.clone();
        if solver {
            match self.presets.solver(name) {
                Ok(settings) => scene.solver = settings,
                Err(e) => return self.fail(e.to_string()),
            }
        } else {
            if let Err(e) = self.presets.fabric(name) {
                return self.fail(e.to_string());
            }
            for i in self.target_garments() {
                scene.garments[i].fabric = name.to_string();
                scene.garments[i].fabric_override = None;
            }
        }
        self.edit(scene);
        self.status = format!("applied preset {name}");
    }

    /// Saves the selected garment's fabric (the first garment's when none is selected) as a
    /// new user preset.
    pub fn save_current_fabric(&mut self, name: &str) {
        let Some(&i) = self.target_garments().first() else {
            return self.fail("no garment: its fabric is what a fabric preset saves".into());
        };
        let r = self.doc.scene.garments[i]
            .resolve_fabric()
            .map_err(|e| e.to_string())
            .and_then(|f| {
                self.presets
                    .save_fabric(name, &f, false)
                    .map_err(|e| e.to_string())
            });
        match r {
            Ok(path) => self.status = format!("saved fabric preset {name} ({})", path.display()),
            Err(e) => self.fail(e),
        }
        self.refresh_presets();
    }

    /// Saves the scene's solver settings as a new user preset.
    pub fn save_current_solver(&mut self, name: &str) {
        let r = self
            .presets
            .save_solver(name, &self.doc.scene.solver, false);
        self.preset_result(r.map(|p| format!("saved solver preset {name} ({})", p.display())));
    }

    /// Lists the preset library again (after a change to it).
    pub fn refresh_presets(&mut self) {
        self.preset_entries = self.presets.list();
    }

    fn preset_result<T: std::fmt::Display>(&mut self, r: Result<String, T>) {
        self.refresh_presets();
        match r {
            Ok(message) => self.status = message,
            Err(e) => self.fail(e.to_string()),
        }
    }

    /// Plays or pauses the simulation.
    pub fn toggle_play(&mut self) {
        if self.playing {
            self.pause();
        } else {
            self.play();
        }
    }

    /// Runs the simulation in real time.
    pub fn play(&mut self) {
        if self.loaded.is_some() && self.baking.is_none() {
            self.leave_scrub();
            self.playing = true;
            self.worker.send(worker::Command::Play);
        }
    }

    /// Stops the simulation.
    pub fn pause(&mut self) {
        self.playing = false;
        self.worker.send(worker::Command::Pause);
    }

    /// Simulates one frame.
    pub fn step(&mut self) {
        if self.loaded.is_some() && self.baking.is_none() {
            self.leave_scrub();
            self.playing = false;
            self.worker.send(worker::Command::Step);
        }
    }

    /// Back to the rest state.
    pub fn reset(&mut self) {
        self.playing = false;
        self.leave_scrub();
        self.worker.send(worker::Command::Reset);
    }

    /// Back from showing a baked frame to the live simulation: the viewport's mesh is the
    /// live one again (a baked frame is drawn on the render mesh even in the proxy view).
    fn leave_scrub(&mut self) {
        if self.scrub.take().is_some() {
            self.refresh_view();
        }
    }

    /// Bakes the timeline's frame range.
    pub fn bake(&mut self) {
        let Some(loaded) = &self.loaded else {
            self.fail("nothing to bake: the scene has no garment".into());
            return;
        };
        let frames = loaded.frame_count();
        self.playing = false;
        self.baking = Some(BakeProgress {
            done: 0,
            total: frames as usize,
            eta_s: 0.0,
        });
        self.worker.send(worker::Command::Bake(frames));
    }

    /// Stops the running bake after its current frame; the frames baked so far are kept.
    pub fn cancel_bake(&mut self) {
        self.worker.cancel_bake();
    }

    /// The number of frames on the timeline now: the bake's, or the range to bake.
    pub fn timeline_frames(&self) -> usize {
        match (&self.baked, &self.loaded) {
            (Some(b), _) => b.frames.len(),
            (None, Some(l)) => l.frame_count() as usize,
            _ => 0,
        }
    }

    /// Shows baked frame `k` (clamped).
    pub fn scrub_to(&mut self, k: usize) {
        if let Some(b) = &self.baked {
            if !b.frames.is_empty() {
                let k = k.min(b.frames.len() - 1);
                self.pause();
                self.scrub = Some(k);
                self.upload_baked(k);
            }
        }
    }

    fn fail(&mut self, message: String) {
        log::error!("{message}");
        self.status = message.clone();
        self.errors.push(message);
    }

    fn remember(&mut self, path: &Path) {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        self.recent.retain(|p| p != &path);
        self.recent.insert(0, path);
        self.recent.truncate(RECENT_LIMIT);
        save_recent(&self.recent);
    }

    /// Starts a native file dialog on its own thread, so the window keeps drawing.
    pub fn start_dialog(&mut self, action: FileAction) {
        if self.dialog.is_some() {
            return;
        }
        let (tx, rx) = mpsc::channel();
        let dir = self.doc.path.parent().map(Path::to_path_buf);
        let ctx = self.egui_ctx.clone();
        std::thread::spawn(move || {
            let mut d = rfd::FileDialog::new();
            if let Some(dir) = dir {
                d = d.set_directory(dir);
            }
            let picked = match action {
                FileAction::OpenScene => d.add_filter("Drape scene", &["ron"]).pick_file(),
                FileAction::ImportGarment | FileAction::ImportBody => {
                    d.add_filter("glTF", &["glb", "gltf"]).pick_file()
                }
                FileAction::ImportPreset => d.add_filter("Drape preset", &["ron"]).pick_file(),
                FileAction::ImportPattern => d.add_filter("Sewing pattern", &["ron"]).pick_file(),
                FileAction::SaveAs => d
                    .add_filter("Drape scene", &["ron"])
                    .set_file_name("scene.ron")
                    .save_file(),
                FileAction::ExportGlb => d
                    .add_filter("glTF binary", &["glb"])
                    .set_file_name("bake.glb")
                    .save_file(),
                FileAction::ExportPc2 => d
                    .add_filter("PC2 point cache", &["pc2"])
                    .set_file_name("bake.pc2")
                    .save_file(),
                FileAction::ExportMdd => d
                    .add_filter("MDD point cache", &["mdd"])
                    .set_file_name("bake.mdd")
                    .save_file(),
                FileAction::ExportUsd => d
                    .add_filter("USD text stage", &["usda"])
                    .set_file_name("bake.usda")
                    .save_file(),
                FileAction::ExportPreset => d
                    .add_filter("Drape preset", &["ron"])
                    .set_file_name("preset.ron")
                    .save_file(),
            };
            let _ = tx.send(picked);
            ctx.request_repaint();
        });
        self.dialog = Some((action, rx));
    }

    /// Carries out a file action on `path` (what a dialog's answer does).
    pub fn file_action(&mut self, action: FileAction, path: &Path) {
        match action {
            FileAction::OpenScene => self.request(Pending::Open(path.to_path_buf())),
            FileAction::ImportGarment => self.import_garment(path),
            FileAction::ImportBody => self.import_body(path),
            FileAction::ImportPattern => self.import_pattern(path),
            FileAction::SaveAs => {
                if self.save_to(path) {
                    if let Some(p) = self.after_save.take() {
                        self.resolve_pending(p);
                    }
                }
            }
            FileAction::ExportGlb
            | FileAction::ExportPc2
            | FileAction::ExportMdd
            | FileAction::ExportUsd => self.export(action, path),
            FileAction::ImportPreset => {
                match self.presets.import(path, false) {
                    Ok(entry) => self.status = format!("imported preset {}", entry.name),
                    Err(e) => self.fail(e.to_string()),
                }
                self.refresh_presets();
            }
            FileAction::ExportPreset => self.export_preset(path),
        }
    }

    fn export(&mut self, action: FileAction, path: &Path) {
        let (Some(baked), Some(loaded)) = (&self.baked, &self.loaded) else {
            self.fail("nothing to export: bake first (Bake on the timeline)".into());
            return;
        };
        let result = match action {
            FileAction::ExportGlb => {
                crate::bake::write_glb(loaded, baked, path).map_err(|e| e.to_string())
            }
            FileAction::ExportPc2 => crate::io::cache::write_pc2(
                path,
                &baked.frames,
                baked.fps,
                baked.start_frame as f32,
            )
            .map_err(|e| e.to_string()),
            FileAction::ExportUsd => {
                crate::bake::write_usd(loaded, baked, path).map_err(|e| e.to_string())
            }
            _ => crate::io::cache::write_mdd(path, &baked.frames, baked.fps)
                .map_err(|e| e.to_string()),
        };
        match result {
            Ok(()) => self.status = format!("exported {}", path.display()),
            Err(e) => self.fail(e),
        }
    }

    fn export_preset(&mut self, path: &Path) {
        let Some((name, solver)) = self.preset_selected.clone() else {
            self.fail("select a preset to export".into());
            return;
        };
        let kind = if solver {
            crate::preset::PresetKind::Solver
        } else {
            crate::preset::PresetKind::Fabric
        };
        match self.presets.export(kind, &name, path) {
            Ok(()) => self.status = format!("exported preset {name} to {}", path.display()),
            Err(e) => self.fail(e.to_string()),
        }
    }

    /// The particle being dragged in the viewport, if any.
    pub fn grabbed_particle(&self) -> Option<u32> {
        self.grab.map(|(_, p)| p)
    }

    /// Frames the whole scene in the viewport.
    pub fn frame_all(&mut self) {
        self.frame_where(None);
    }

    /// Frames the selection in the viewport: the selected garment or the body (everything
    /// when the scene itself is selected).
    pub fn frame_selected(&mut self) {
        self.frame_where(Some(self.selection));
    }

    fn frame_where(&mut self, selection: Option<Selection>) {
        // The drawn garment mesh holds the garments one after another.
        let garment_range = |i: usize| -> Option<std::ops::Range<usize>> {
            let loaded = self.loaded.as_ref()?;
            let count = |g: &crate::bake::LoadedGarment| {
                if self.view.proxy && self.scrub.is_none() {
                    g.sim_mesh().positions.len()
                } else {
                    g.render.positions.len()
                }
            };
            let start: usize = loaded.garments.iter().take(i).map(count).sum();
            Some(start..start + count(loaded.garments.get(i)?))
        };
        let range = match selection {
            Some(Selection::Garment(i)) => garment_range(i),
            _ => None,
        };
        let Ok(mut d) = self.draw.lock() else {
            return;
        };
        let points: Vec<Vec3> = match (selection, range) {
            (Some(Selection::Garment(_)), Some(r)) => {
                d.garment.positions.get(r).unwrap_or_default().to_vec()
            }
            (Some(Selection::Body), _) if !d.body.positions.is_empty() => d.body.positions.clone(),
            _ => d
                .garment
                .positions
                .iter()
                .chain(&d.body.positions)
                .copied()
                .collect(),
        };
        let mut min = Vec3::splat(Real::INFINITY);
        let mut max = Vec3::splat(Real::NEG_INFINITY);
        for p in &points {
            min = min.min(*p);
            max = max.max(*p);
        }
        if min.x.is_finite() {
            d.camera.frame(min, max);
        }
    }

    /// The camera.
    pub fn camera(&self) -> OrbitCamera {
        self.draw.lock().map(|d| d.camera).unwrap_or_default()
    }

    /// The garment positions drawn now (m): the shown mesh's vertices.
    pub fn garment_positions(&self) -> Vec<Vec3> {
        self.draw
            .lock()
            .map(|d| d.garment.positions.clone())
            .unwrap_or_default()
    }

    /// The garment colours drawn now (linear RGBA), one per drawn vertex.
    pub fn garment_colors_drawn(&self) -> Vec<[f32; 4]> {
        self.draw
            .lock()
            .map(|d| d.garment.colors.clone())
            .unwrap_or_default()
    }

    /// The brush ring drawn now (m): the vertices of the annulus around the
    /// [brush circle](Self::brush_circle), empty when none is shown.
    pub fn brush_ring_drawn(&self) -> Vec<Vec3> {
        self.draw
            .lock()
            .map(|d| d.brush.positions.clone())
            .unwrap_or_default()
    }

    fn garment_colors(&self, stretch: Option<&[Real]>, n: usize) -> Vec<[f32; 4]> {
        if !self.view.proxy {
            if let (Some(w), Some(p), Some(l)) = (self.painted_weights(), &self.paint, &self.loaded)
            {
                // The painted garment's vertices start after the earlier garments' render
                // vertices; the other garments keep their colour.
                let start: usize = l
                    .garments
                    .iter()
                    .take(p.garment)
                    .map(|g| g.render.positions.len())
                    .sum();
                let mut colors = vec![GARMENT_COLOR; start.min(n)];
                colors.extend(
                    w.iter()
                        .take(n - colors.len())
                        .map(|&v| viewport::map_color(p.kind, v)),
                );
                colors.resize(n, GARMENT_COLOR);
                return colors;
            }
        }
        match stretch {
            Some(s) if self.view.heat_map && s.len() == n => {
                s.iter().map(|&v| viewport::stretch_color(v)).collect()
            }
            _ => vec![GARMENT_COLOR; n],
        }
    }

    /// The garment mesh the viewport shows: the render mesh, or the proxy meshes.
    /// Hidden garments keep their vertices (so the frames still fit) but lose their
    /// triangles.
    fn garment_topology(&self, loaded: &LoadedScene, proxy: bool) -> (Vec<Vec3>, Vec<[u32; 3]>) {
        let mut positions = Vec::new();
        let mut indices = Vec::new();
        for (i, g) in loaded.garments.iter().enumerate() {
            let mesh = if proxy { g.sim_mesh() } else { &g.render };
            let base = positions.len() as u32;
            positions.extend_from_slice(&mesh.positions);
            if !self.hidden_garments.contains(&i) {
                indices.extend(mesh.indices.iter().map(|t| t.map(|i| i + base)));
            }
        }
        (positions, indices)
    }

    fn upload_topology(&mut self, loaded: &LoadedScene) {
        let (positions, indices) = self.garment_topology(loaded, self.view.proxy);
        self.render_mesh_drawn = !self.view.proxy;
        let colors = self.garment_colors(None, positions.len());
        let body = loaded.body.as_ref().map(|b| b.mesh().clone());
        if let Ok(mut d) = self.draw.lock() {
            d.garment.set(positions, indices, colors);
            match body {
                Some(m) => {
                    let n = m.positions.len();
                    d.body.set(m.positions, m.indices, vec![BODY_COLOR; n]);
                }
                None => d.body = Default::default(),
            }
        }
    }

    /// Uploads the live frame's positions (no rebuild).
    fn upload_live(&mut self) {
        let Some(f) = &self.live else {
            return;
        };
        let (positions, stretch) = if self.view.proxy {
            (f.particles.clone(), &f.particle_stretch)
        } else {
            (f.render.clone(), &f.stretch)
        };
        let colors = self.garment_colors(Some(stretch), positions.len());
        let body = f.body.clone();
        if let Ok(mut d) = self.draw.lock() {
            d.garment.update(positions, colors);
            if !body.is_empty() && body.len() == d.body.positions.len() {
                let n = body.len();
                d.body.update(body, vec![BODY_COLOR; n]);
            }
        }
    }

    fn upload_baked(&mut self, k: usize) {
        let (Some(b), Some(l)) = (&self.baked, &self.loaded) else {
            return;
        };
        let Some(frame) = b.frames.get(k) else {
            return;
        };
        if frame.len() != l.render_vertices() {
            return;
        }
        let positions = frame.clone();
        let mut body = Vec::new();
        if let (Some(pose), Some(lb)) = (b.body_poses.get(k), &l.body) {
            lb.rig.skin(pose, &mut body);
        }
        // The heat map needs the proxy's edges; a baked frame holds render positions only,
        // so it is drawn in the garment's colour.
        let colors = vec![GARMENT_COLOR; positions.len()];
        if let Ok(mut d) = self.draw.lock() {
            if !self.render_mesh_drawn {
                // The bake stores render positions: show them on the render mesh (rebuilt
                // once, when scrubbing starts in the proxy view).
                let (_, indices) = self.garment_topology(l, false);
                d.garment.set(positions, indices, colors);
                self.render_mesh_drawn = true;
            } else {
                d.garment.update(positions, colors);
            }
            if body.len() == d.body.positions.len() && !body.is_empty() {
                let n = body.len();
                d.body.update(body, vec![BODY_COLOR; n]);
            }
        }
    }

    /// Re-uploads the garment after a view toggle (proxy / heat map).
    pub fn refresh_view(&mut self) {
        if let Some(l) = self.loaded.clone() {
            self.upload_topology(&l);
        }
        match self.scrub {
            Some(k) => self.upload_baked(k),
            None => self.upload_live(),
        }
        if let Ok(mut d) = self.draw.lock() {
            d.wireframe = self.view.wireframe;
            d.show_body = self.view.show_body;
            d.show_garment = self.view.show_garments;
        }
    }

    /// Handles the worker's events and finished dialogs; called every frame (and by tests).
    pub fn poll(&mut self) {
        for event in self.worker.poll() {
            match event {
                // A frame of a scene replaced since (still in the channel) is dropped: its
                // vertices may not match the meshes drawn now.
                Event::Frame(f) if f.generation != self.generation => {}
                Event::Frame(f) => {
                    self.live = Some(f);
                    if self.scrub.is_none() {
                        self.upload_live();
                    }
                }
                Event::Model {
                    mean_stretch_compliance_m_per_n,
                    span_limits,
                    backend,
                    backend_notes,
                    ..
                } => {
                    self.solver_stretch_compliance_m_per_n = Some(mean_stretch_compliance_m_per_n);
                    self.solver_span_limits = Some(span_limits);
                    if let Some(note) = backend_notes.last() {
                        self.status = note.clone();
                    }
                    self.solver_backend = Some(backend);
                }
                Event::BakeProgress { generation, .. } | Event::BakeFinished(generation, _)
                    if generation != self.generation => {}
                Event::BakeProgress {
                    done, total, eta_s, ..
                } => self.baking = Some(BakeProgress { done, total, eta_s }),
                Event::BakeFinished(_, result) => {
                    self.baking = None;
                    match result {
                        Ok(b) => {
                            self.status = if b.cancelled {
                                format!("bake cancelled: {} frames kept", b.frames.len())
                            } else {
                                format!(
                                    "baked {} frames, {:.1} ms/frame",
                                    b.frames.len(),
                                    b.stats.sim_ms_per_frame
                                )
                            };
                            let last = b.frames.len().saturating_sub(1);
                            self.baked = Some(b);
                            self.scrub_to(last);
                        }
                        Err(e) => self.fail(e),
                    }
                }
                Event::Error(e) => {
                    self.playing = false;
                    self.fail(e);
                }
            }
        }
        if let Some((action, rx)) = &self.dialog {
            match rx.try_recv() {
                Ok(picked) => {
                    let action = *action;
                    self.dialog = None;
                    match picked {
                        Some(path) => self.file_action(action, &path),
                        None => self.after_save = None,
                    }
                }
                Err(mpsc::TryRecvError::Disconnected) => self.dialog = None,
                Err(mpsc::TryRecvError::Empty) => {}
            }
        }
        if !self.worker.alive() && !self.worker_lost {
            self.fail("the simulation thread stopped; it was restarted (save your scene)".into());
            self.baking = None;
            self.playing = false;
            self.grab = None;
            self.worker_lost = true;
            self.worker = Worker::spawn({
                let ctx = self.egui_ctx.clone();
                move || ctx.request_repaint()
            });
            if let Some(l) = self.loaded.clone() {
                self.generation += 1;
                self.worker.send(worker::Command::Load(l, self.generation));
            }
        }
    }

    /// The live figures shown in the status bar.
    pub fn live_stats(&self) -> LiveStats {
        self.live
            .as_ref()
            .map(|f| f.stats.clone())
            .unwrap_or_default()
    }

    /// The frame number shown on the timeline.
    pub fn shown_frame(&self) -> Option<u32> {
        match self.scrub {
            Some(k) => Some(k as u32),
            None => self.live.as_ref().map(|f| f.frame),
        }
    }

    fn shortcuts(&mut self, ctx: &egui::Context) {
        if ctx.egui_wants_keyboard_input() {
            return;
        }
        use egui::{Key, KeyboardShortcut, Modifiers};
        let undo = KeyboardShortcut::new(Modifiers::COMMAND, Key::Z);
        let redo = KeyboardShortcut::new(Modifiers::COMMAND | Modifiers::SHIFT, Key::Z);
        let redo_y = KeyboardShortcut::new(Modifiers::COMMAND, Key::Y);
        let save = KeyboardShortcut::new(Modifiers::COMMAND, Key::S);
        let (r, r2, u, s, space, f) = ctx.input_mut(|i| {
            (
                i.consume_shortcut(&redo),
                i.consume_shortcut(&redo_y),
                i.consume_shortcut(&undo),
                i.consume_shortcut(&save),
                i.consume_key(Modifiers::NONE, Key::Space),
                i.consume_key(Modifiers::NONE, Key::F),
            )
        });
        if r || r2 {
            self.redo();
        } else if u {
            self.undo();
        }
        if s {
            self.save();
        }
        if space {
            self.toggle_play();
        }
        if f {
            self.frame_selected();
        }
    }

    fn handle_drops(&mut self, ctx: &egui::Context) {
        let dropped: Vec<PathBuf> = ctx.input(|i| {
            i.raw
                .dropped_files
                .iter()
                .map(|f| f.path().to_path_buf())
                .collect()
        });
        for p in dropped {
            self.drop_file(&p);
        }
    }

    fn handle_close(&mut self, ctx: &egui::Context) {
        if ctx.input(|i| i.viewport().close_requested()) && !self.allow_close && self.doc.dirty {
            ctx.send_viewport_cmd(egui::ViewportCommand::CancelClose);
            self.pending = Some(Pending::Close);
        }
    }
}

/// Whether going from `old` to `new` changes which files or vertices are simulated (so the
/// meshes must be read again and the simulation restarted), rather than only material,
/// solver or timeline values.
fn needs_reload(old: &Scene, new: &Scene) -> bool {
    if old.body != new.body || old.garments.len() != new.garments.len() {
        return true;
    }
    old.garments.iter().zip(&new.garments).any(|(a, b)| {
        let mut b = b.clone();
        b.fabric = a.fabric.clone();
        b.fabric_override = a.fabric_override.clone();
        b.name = a.name.clone();
        // Painted maps apply without re-reading files: see `patch`.
        b.maps = a.maps.clone();
        &b != a
    })
}

/// `loaded` with the values of `scene` that need no file reading: fabrics, solver, timeline
/// and painted maps.
fn patch(loaded: &LoadedScene, scene: &Scene) -> Result<LoadedScene, crate::bake::BakeError> {
    let mut out = loaded.clone();
    for (i, (g, spec)) in out.garments.iter_mut().zip(&scene.garments).enumerate() {
        g.fabric = spec
            .resolve_fabric()
            .map_err(|e| crate::scene::SceneError::Field {
                path: loaded.path.clone(),
                field: format!("garments[{i}].fabric"),
                problem: e.to_string(),
            })?;
        let repaint = g.spec.maps != spec.maps;
        g.spec = spec.clone();
        if repaint {
            g.repaint(&loaded.path)?;
        }
    }
    scene.validate(&loaded.path)?;
    out.scene = scene.clone();
    // A hybrid model named or changed in the solver panel is read now, so that the live
    // simulation and the bake use it (and a model that cannot be used is an error here).
    if scene.solver.neural != loaded.scene.solver.neural
        || scene.solver.substeps != loaded.scene.solver.substeps
        || scene.timeline.fps != loaded.scene.timeline.fps
    {
        out.reload_network()?;
    }
    Ok(out)
}

fn unique_name(scene: &Scene, stem: &str) -> String {
    let taken = |n: &str| scene.garments.iter().any(|g| g.name == n);
    if !taken(stem) {
        return stem.to_string();
    }
    (2..)
        .map(|k| format!("{stem}_{k}"))
        .find(|n| !taken(n))
        .unwrap_or_else(|| stem.to_string())
}

/// The file listing recent scenes, beside the user preset library.
fn recent_file() -> Option<PathBuf> {
    Library::open_default()
        .ok()
        .and_then(|l| l.user_dir().parent().map(|p| p.join("recent.txt")))
}

fn load_recent() -> Vec<PathBuf> {
    recent_file()
        .and_then(|f| std::fs::read_to_string(f).ok())
        .map(|text| {
            text.lines()
                .filter(|l| !l.trim().is_empty())
                .map(PathBuf::from)
                .take(RECENT_LIMIT)
                .collect()
        })
        .unwrap_or_default()
}

fn save_recent(recent: &[PathBuf]) {
    let Some(file) = recent_file() else {
        return;
    };
    let text: String = recent
        .iter()
        .map(|p| format!("{}\n", p.display()))
        .collect();
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Err(e) = crate::file::atomic::write_atomic(&file, text.as_bytes()) {
        log::warn!("{}: cannot save the recent files: {e}", file.display());
    }
}

impl eframe::App for DrapeApp {
    fn ui(&mut self, ui: &mut egui::Ui, _frame: &mut eframe::Frame) {
        let ctx = ui.ctx().clone();
        self.poll();
        self.handle_close(&ctx);
        self.handle_drops(&ctx);
        self.shortcuts(&ctx);
        ctx.send_viewport_cmd(egui::ViewportCommand::Title(format!(
            "Drape — {}",
            self.doc.title()
        )));
        panels::show(self, ui);
        recovery::dialog(self, &ctx);
        self.autosave_tick(&ctx);
        if self.playing || self.baking.is_some() || self.dialog.is_some() {
            ctx.request_repaint_after(std::time::Duration::from_millis(30));
        }
    }
}

impl Drop for DrapeApp {
    /// A normal exit (no unsaved changes, or the artist answered the unsaved-changes dialog)
    /// removes the recovery file; a panic, or an exit that skipped the dialog, keeps it.
    fn drop(&mut self) {
        if !std::thread::panicking() && (!self.doc.dirty || self.allow_close) {
            self.autosave.clear();
        } else {
            self.autosave.wait();
        }
    }
}

/// Runs the desktop app (blocks until the window closes) on `scene` (or the built-in default
/// scene), with the sewing pattern `pattern` open in the pattern window if given.
pub fn run(scene: Option<PathBuf>, pattern: Option<PathBuf>) -> Result<(), String> {
    let _ = env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info"))
        .try_init();
    let options = eframe::NativeOptions {
        renderer: eframe::Renderer::Glow,
        depth_buffer: 24,
        viewport: egui::ViewportBuilder::default()
            .with_inner_size([1280.0, 800.0])
            .with_min_inner_size([640.0, 400.0])
            .with_drag_and_drop(true)
            .with_title("Drape"),
        ..Default::default()
    };
    eframe::run_native(
        "Drape",
        options,
        Box::new(move |cc| {
            let mut app = DrapeApp::new(&cc.egui_ctx, scene.as_deref());
            if let Some(p) = &pattern {
                app.import_pattern(p);
            }
            Ok(Box::new(app))
        }),
    )
    .map_err(|e| format!("cannot open the window: {e}"))
}
