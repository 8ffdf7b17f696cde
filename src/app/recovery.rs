//! Autosave and crash recovery.
//!
//! While the open scene has unsaved changes, the app writes it every
//! [`AppOptions::autosave_interval`](super::AppOptions::autosave_interval) to a *recovery
//! file* of its own in the recovery folder ([`default_dir`]), atomically
//! ([`crate::file::atomic`]) and on a background thread. The file is removed when the scene is
//! saved, when another scene replaces it (after the artist saved or discarded the changes) and
//! when the app closes normally. A crash leaves it behind; the next start-up finds it
//! ([`find`]) and asks "Recover unsaved changes from HH:MM?".
//!
//! The recovery folder is the platform's local data folder, not the scene's folder: an
//! untitled scene has no folder of its own, the scene's folder may be read-only, synced or
//! under version control (a hidden file appearing there every 30 s would be noise), and one
//! folder is one place to look at start-up.
//!
//! A recovery file is RON: the scene (painted maps inline, no sidecar files) with the file it
//! belongs to, whether that file is the artist's (titled) or a scratch scene, when it was
//! written and by which process. Its name is `PID-INSTANCE-NONCE.drape-recovery.ron`, one per
//! running app, so two windows never write the same file.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use eframe::egui;
use serde::{Deserialize, Serialize};

use super::DrapeApp;
use crate::scene::Scene;

/// Environment variable naming the recovery folder (read when an app starts; tests and
/// portable set-ups use it).
pub const RECOVERY_DIR_ENV: &str = "DRAPE_RECOVERY_DIR";

/// How recovery files end.
pub const RECOVERY_SUFFIX: &str = ".drape-recovery.ron";

/// Autosave period by default.
pub const DEFAULT_AUTOSAVE_INTERVAL: Duration = Duration::from_secs(30);

/// Recovery files larger than this are not read (a scene with its maps inline is far smaller).
const MAX_RECOVERY_BYTES: u64 = 512 * 1024 * 1024;

/// Format version of the recovery file.
const RECOVERY_FORMAT: u32 = 1;

/// The recovery folder when none is given: `DRAPE_RECOVERY_DIR` when set and not empty; else
/// `recovery` beside the user preset folder when `DRAPE_PRESET_DIR` moves that (so a test or
/// portable set-up that moves the app's user files moves this one too, as it does the recent
/// files list); else the platform's local data folder: `$XDG_DATA_HOME/drape/recovery`
/// (default `~/.local/share/drape/recovery`) on Linux, `~/Library/Application
/// Support/Drape/recovery` on macOS, `%LOCALAPPDATA%\Drape\data\recovery` on Windows.
pub fn default_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var(RECOVERY_DIR_ENV) {
        return Some(PathBuf::from(dir));
    }
    if let Some(presets) = var(crate::preset::PRESET_DIR_ENV) {
        let parent = Path::new(&presets).parent().unwrap_or(Path::new(""));
        return Some(parent.join("recovery"));
    }
    directories::ProjectDirs::from("", "", "Drape").map(|d| d.data_local_dir().join("recovery"))
}

/// What a recovery file holds.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct RecoveryFile {
    /// [`RECOVERY_FORMAT`].
    format: u32,
    /// The writing process's id.
    pid: u32,
    /// The writing process's start token ([`process_token`]), telling a reused id apart.
    process: u64,
    /// The scene file the scene's relative paths resolve against.
    scene_path: PathBuf,
    /// Whether `scene_path` is the artist's file (else a scratch scene, untitled).
    titled: bool,
    /// When it was written (ms since the Unix epoch).
    saved_unix_ms: u64,
    /// The scene with the unsaved changes.
    scene: Scene,
}

/// A token for this process: its start time (ns since the epoch), fixed at first use.
fn process_token() -> u64 {
    static TOKEN: OnceLock<u64> = OnceLock::new();
    *TOKEN.get_or_init(|| {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    })
}

fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Unsaved changes found at start-up, left by an app that did not close normally.
#[derive(Clone, Debug, PartialEq)]
pub struct Offer {
    /// The recovery file.
    pub file: PathBuf,
    /// The scene file the changes belong to (a scratch file for an untitled scene).
    pub scene_path: PathBuf,
    /// Whether `scene_path` is the artist's file.
    pub titled: bool,
    /// When the changes were autosaved.
    pub saved: SystemTime,
    /// The scene with the changes.
    pub scene: Scene,
}

impl Offer {
    /// The question the dialog asks: "Recover unsaved changes from HH:MM?" (UTC: the app has
    /// no time zone database).
    pub fn question(&self) -> String {
        let s = self
            .saved
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let (h, m) = ((s / 3600) % 24, (s / 60) % 60);
        format!("Recover unsaved changes from {h:02}:{m:02} UTC?")
    }

    /// What the changes belong to and how old they are, for the dialog.
    pub fn details(&self, now: SystemTime) -> String {
        let age_min = now
            .duration_since(self.saved)
            .map_or(0, |d| d.as_secs() / 60);
        let what = if self.titled {
            self.scene_path.display().to_string()
        } else {
            format!("{} (untitled)", self.scene.name)
        };
        format!("{what}, autosaved {age_min} min ago, was not saved before Drape stopped.")
    }
}

/// Whether `a` and `b` name the same file (compared canonically where both exist).
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => std::path::absolute(a).ok() == std::path::absolute(b).ok(),
    }
}

fn read(file: &Path) -> Result<RecoveryFile, String> {
    let len = std::fs::metadata(file).map_err(|e| e.to_string())?.len();
    if len > MAX_RECOVERY_BYTES {
        return Err(format!("{len} bytes, larger than any recovery file"));
    }
    let text = std::fs::read_to_string(file).map_err(|e| e.to_string())?;
    let r: RecoveryFile = ron::from_str(&text).map_err(|e| e.to_string())?;
    if r.format > RECOVERY_FORMAT {
        return Err(format!(
            "format {} was written by a newer Drape (this one reads {RECOVERY_FORMAT})",
            r.format
        ));
    }
    r.scene.validate(&r.scene_path).map_err(|e| e.to_string())?;
    Ok(r)
}

/// The newest recovery file in `dir` that another process left: for the scene file `scene`
/// when one is given, else for any scene. Files of this process (its other windows, live) are
/// never offered. A titled scene's recovery file older than the scene file is stale (the
/// scene was saved since) and is removed. Unreadable files are skipped with a warning and kept.
pub fn find(dir: &Path, scene: Option<&Path>) -> Option<Offer> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut best: Option<Offer> = None;
    for entry in entries.flatten() {
        let file = entry.path();
        let is_recovery = file
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.ends_with(RECOVERY_SUFFIX) && !n.starts_with('.'));
        if !is_recovery {
            continue;
        }
        let r = match read(&file) {
            Ok(r) => r,
            Err(e) => {
                log::warn!("{}: not a usable recovery file: {e}", file.display());
                continue;
            }
        };
        if r.pid == std::process::id() && r.process == process_token() {
            continue;
        }
        if scene.is_some_and(|s| !(r.titled && same_file(&r.scene_path, s))) {
            continue;
        }
        let saved = UNIX_EPOCH + Duration::from_millis(r.saved_unix_ms);
        if r.titled {
            let modified = std::fs::metadata(&r.scene_path).and_then(|m| m.modified());
            if modified.is_ok_and(|m| m > saved) {
                log::info!(
                    "{}: older than {}, which was saved since; removed",
                    file.display(),
                    r.scene_path.display()
                );
                let _ = std::fs::remove_file(&file);
                continue;
            }
        }
        if best.as_ref().is_none_or(|b| saved > b.saved) {
            best = Some(Offer {
                file,
                scene_path: r.scene_path,
                titled: r.titled,
                saved,
                scene: r.scene,
            });
        }
    }
    best
}

/// Counts the autosavers of this process, so each app writes its own file.
static INSTANCE: AtomicU64 = AtomicU64::new(0);

/// The autosaver of one app: what it wrote last, and the write in progress.
pub struct Autosave {
    /// This app's recovery file (None: autosave is off, there is no folder for it).
    file: Option<PathBuf>,
    interval: Duration,
    /// When the scene was last autosaved (or found unchanged), or the autosaver reset; None:
    /// due at once.
    last: Option<Instant>,
    /// The scene as last written, with its file and title state.
    written: Option<(Scene, PathBuf, bool)>,
    /// The write in progress, on its own thread.
    in_flight: Option<JoinHandle<Result<(), String>>>,
    /// Another session's recovery file whose changes this session took over: removed once
    /// this session's own file has them, or when they are saved or discarded.
    adopted: Option<PathBuf>,
}

impl Autosave {
    /// An autosaver writing into `dir` every `interval` while there are unsaved changes.
    pub fn new(dir: Option<PathBuf>, interval: Duration) -> Self {
        let n = INSTANCE.fetch_add(1, Ordering::Relaxed);
        let file = dir.map(|d| {
            d.join(format!(
                "{}-{n}-{:x}{RECOVERY_SUFFIX}",
                std::process::id(),
                process_token()
            ))
        });
        Self {
            file,
            interval,
            last: Some(Instant::now()),
            written: None,
            in_flight: None,
            adopted: None,
        }
    }

    /// This app's recovery file (whether or not it exists now).
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Time until the next autosave is due, for a document with unsaved changes.
    pub fn due_in(&self) -> Duration {
        self.last.map_or(Duration::ZERO, |l| {
            self.interval.saturating_sub(l.elapsed())
        })
    }

    /// Makes the next [`Autosave::tick`] write at once.
    pub fn write_soon(&mut self) {
        self.written = None;
        self.last = None;
    }

    /// Takes over the changes in another session's recovery file (see [`Autosave::adopted`]).
    pub fn adopt(&mut self, file: PathBuf) {
        self.adopted = Some(file);
        self.write_soon();
    }

    /// Called every frame: collects a finished write, and starts one when changes are due.
    /// Returns the error of a failed write.
    pub fn tick(
        &mut self,
        scene: &Scene,
        path: &Path,
        titled: bool,
        dirty: bool,
    ) -> Option<String> {
        let mut error = None;
        if self.in_flight.as_ref().is_some_and(|h| h.is_finished()) {
            if let Some(h) = self.in_flight.take() {
                match h.join() {
                    Ok(Ok(())) => {
                        if let Some(old) = self.adopted.take() {
                            let _ = std::fs::remove_file(old);
                        }
                    }
                    Ok(Err(e)) => {
                        self.written = None;
                        error = Some(e);
                    }
                    Err(_) => {
                        self.written = None;
                        error = Some("the autosave thread stopped".into());
                    }
                }
            }
        }
        let Some(file) = self.file.clone() else {
            return error;
        };
        let waiting = self.last.is_some_and(|l| l.elapsed() < self.interval);
        if !dirty || self.in_flight.is_some() || waiting {
            return error;
        }
        self.last = Some(Instant::now());
        let unchanged = self
            .written
            .as_ref()
            .is_some_and(|(s, p, t)| s == scene && p == path && *t == titled);
        // Rewritten when it went missing (another window's Discard, a clean-up).
        if unchanged && file.exists() {
            return error;
        }
        let record = RecoveryFile {
            format: RECOVERY_FORMAT,
            pid: std::process::id(),
            process: process_token(),
            scene_path: std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()),
            titled,
            saved_unix_ms: unix_ms(SystemTime::now()),
            scene: scene.clone(),
        };
        self.written = Some((scene.clone(), path.to_path_buf(), titled));
        let spawned = std::thread::Builder::new()
            .name("autosave".into())
            .spawn(move || write(&file, &record));
        match spawned {
            Ok(h) => self.in_flight = Some(h),
            Err(e) => {
                self.written = None;
                error = Some(format!("cannot start the autosave: {e}"));
            }
        }
        error
    }

    /// Waits for the write in progress, if any.
    pub fn wait(&mut self) {
        if let Some(h) = self.in_flight.take() {
            if !matches!(h.join(), Ok(Ok(()))) {
                self.written = None;
            }
        }
    }

    /// The changes are saved or given up: removes this app's recovery file (after the write in
    /// progress) and the adopted one.
    pub fn clear(&mut self) {
        self.wait();
        self.written = None;
        self.last = Some(Instant::now());
        for f in [self.file.clone(), self.adopted.take()]
            .into_iter()
            .flatten()
        {
            match std::fs::remove_file(&f) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => log::warn!("{}: cannot remove the recovery file: {e}", f.display()),
            }
        }
    }
}

/// Writes a recovery file atomically, creating its folder.
fn write(file: &Path, record: &RecoveryFile) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("autosave to {}: {e}", file.display());
    let config = ron::ser::PrettyConfig::new().struct_names(false);
    let body = ron::ser::to_string_pretty(record, config).map_err(|e| fail(&e))?;
    let text = format!(
        "// Drape recovery file: unsaved changes of {}. Drape offers them at start-up; \
         delete this file to drop them.\n{body}\n",
        record.scene_path.display()
    );
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| fail(&e))?;
    }
    crate::file::atomic::write_atomic(file, text.as_bytes()).map_err(|e| fail(&e))
}

/// The start-up dialog offering a recovery file: Recover or Discard.
pub(super) fn dialog(app: &mut DrapeApp, ctx: &egui::Context) {
    let Some(offer) = &app.recovery else {
        return;
    };
    let (question, details) = (offer.question(), offer.details(SystemTime::now()));
    let mut answer = None;
    egui::Modal::new(egui::Id::unique("recovery")).show(ctx, |ui| {
        ui.heading("Unsaved changes found");
        ui.label(question);
        ui.label(details);
        ui.horizontal(|ui| {
            if ui.button("Recover").clicked() {
                answer = Some(true);
            }
            if ui.button("Discard").clicked() {
                answer = Some(false);
            }
        });
    });
    match answer {
        Some(true) => app.recover(),
        Some(false) => app.discard_recovery(),
        None => {}
    }
}
