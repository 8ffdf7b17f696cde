//! The pattern window (File > Import pattern…): a sewing pattern's panels drawn flat with
//! their seams, each seam's two edges in one colour, and **Sew on the body**, which sews the
//! pattern around the scene's body on a worker thread (with progress) and adds the sewn
//! garment to the scene, written beside the pattern file.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{mpsc, Arc};

use eframe::egui;

use crate::garment::pattern::Pattern;
use crate::sew::SewReport;

use super::DrapeApp;

/// A pattern open in the pattern window.
pub struct PatternView {
    /// The pattern file.
    pub path: PathBuf,
    /// The pattern, meshed.
    pub pattern: Pattern,
    /// The sewing in progress, if any.
    pub sewing: Option<SewJob>,
    /// What the last sewing measured.
    pub report: Option<SewReport>,
}

/// A sewing running on its own thread.
pub struct SewJob {
    /// Fraction done (0–1), as `f32` bits.
    progress: Arc<AtomicU32>,
    /// The garment file written and the report, or the error.
    done: mpsc::Receiver<Result<(PathBuf, SewReport), String>>,
    /// The scene file it was started for: a garment sewn for another scene is not added.
    scene: PathBuf,
}

impl SewJob {
    /// Fraction done (0–1).
    pub fn progress(&self) -> f32 {
        f32::from_bits(self.progress.load(Ordering::Relaxed))
    }
}

/// The file the sewn garment of the pattern `path` is written to: beside it, `NAME.sewn.glb`.
pub fn sewn_garment_path(path: &Path) -> PathBuf {
    let stem = path
        .file_stem()
        .map_or_else(|| "pattern".into(), |s| s.to_string_lossy().into_owned());
    path.with_file_name(format!("{stem}.sewn.glb"))
}

/// `path`, or the first of `NAME-2.EXT`, `NAME-3.EXT`, … that no file has, so that sewing
/// again never overwrites a garment the scene may name.
fn free_path(path: &Path) -> PathBuf {
    if !path.exists() {
        return path.to_path_buf();
    }
    let stem = path
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    let ext = path
        .extension()
        .map_or_else(String::new, |e| format!(".{}", e.to_string_lossy()));
    (2..)
        .map(|k| path.with_file_name(format!("{stem}-{k}{ext}")))
        .find(|p| !p.exists())
        .unwrap_or_else(|| path.to_path_buf())
}

/// Colours of the seams, in turn.
const SEAM_COLOURS: [egui::Color32; 8] = [
    egui::Color32::from_rgb(230, 80, 70),
    egui::Color32::from_rgb(70, 160, 230),
    egui::Color32::from_rgb(90, 200, 90),
    egui::Color32::from_rgb(240, 180, 40),
    egui::Color32::from_rgb(190, 100, 220),
    egui::Color32::from_rgb(40, 200, 190),
    egui::Color32::from_rgb(240, 120, 180),
    egui::Color32::from_rgb(160, 160, 60),
];

impl DrapeApp {
    /// Reads a sewing pattern and shows it in the pattern window (refused while a sewing
    /// runs, whose garment would be lost).
    pub fn import_pattern(&mut self, path: &Path) {
        if self.pattern.as_ref().is_some_and(|v| v.sewing.is_some()) {
            self.fail(format!(
                "{}: a pattern is being sewn; import another once its garment is added",
                path.display()
            ));
            return;
        }
        match Pattern::load(path) {
            Ok(pattern) => {
                self.status = format!(
                    "pattern {}: {} panels, {} seams",
                    path.display(),
                    pattern.panels.len(),
                    pattern.seams.len()
                );
                self.pattern = Some(PatternView {
                    path: path.to_path_buf(),
                    pattern,
                    sewing: None,
                    report: None,
                });
            }
            Err(e) => self.fail(e.to_string()),
        }
    }

    /// Sews the open pattern on the scene's body (its rest pose; Drape's mannequin when the
    /// scene has none) in the scene's default fabric, on a worker thread. The garment is
    /// written beside the pattern, under a name no file has yet.
    pub fn sew_pattern(&mut self) {
        let Some(view) = self.pattern.as_mut() else {
            return;
        };
        if view.sewing.is_some() {
            return;
        }
        // The body as loaded, or read on the worker (a scene without garments loads none).
        let loaded_body = (self.loaded.as_ref())
            .filter(|l| l.path == self.doc.path)
            .and_then(|l| l.body.as_ref())
            .map(|b| b.mesh().clone());
        let body_file = (self.doc.scene.body.as_ref())
            .map(|b| crate::scene::Scene::resolve(&self.doc.path, &b.path));
        let body_name = body_file.as_ref().map_or_else(
            || "Drape's mannequin".to_owned(),
            |p| p.display().to_string(),
        );
        let fabric = match crate::preset::Library::open_default()
            .and_then(|l| l.fabric(crate::garment::material::DEFAULT_FABRIC))
        {
            Ok(f) => f,
            Err(e) => {
                let message = e.to_string();
                self.fail(message);
                return;
            }
        };
        let pattern = view.pattern.clone();
        let out = free_path(&sewn_garment_path(&view.path));
        let pattern_path = view.path.clone();
        let progress = Arc::new(AtomicU32::new(0));
        let (tx, rx) = mpsc::channel();
        let ctx = self.egui_ctx.clone();
        let bar = progress.clone();
        std::thread::spawn(move || {
            let mut tick = |f: f32| {
                bar.store(f.to_bits(), Ordering::Relaxed);
                ctx.request_repaint();
            };
            let body = match (loaded_body, &body_file) {
                (Some(b), _) => Ok(b),
                (None, Some(file)) => crate::body::Rig::load(file, None)
                    .map(|rig| rig.rest_mesh().clone())
                    .map_err(|e| e.to_string()),
                (None, None) => Ok(crate::mesh::shapes::mannequin()),
            };
            let settings = crate::solver::SolverSettings::default();
            let result = body
                .and_then(|body| {
                    crate::sew::sew(&pattern, &body, &fabric, &settings, &mut tick)
                        .map_err(|e| format!("{} on {body_name}: {e}", pattern_path.display()))
                })
                .and_then(|sewn| {
                    let mut garment = sewn.mesh;
                    garment.name = out
                        .file_stem()
                        .map_or_else(|| "garment".into(), |s| s.to_string_lossy().into_owned());
                    crate::io::write_static_glb(&out, &[&garment])
                        .map_err(|e| e.to_string())
                        .map(|()| (out, sewn.report))
                });
            let _ = tx.send(result);
            ctx.request_repaint();
        });
        view.sewing = Some(SewJob {
            progress,
            done: rx,
            scene: self.doc.path.clone(),
        });
        self.status = "sewing…".into();
    }

    /// Collects a finished sewing: the garment joins the scene (one undo step).
    pub(super) fn poll_sewing(&mut self) {
        let Some(view) = self.pattern.as_mut() else {
            return;
        };
        let Some(job) = &view.sewing else {
            return;
        };
        let result = match job.done.try_recv() {
            Ok(r) => r,
            Err(mpsc::TryRecvError::Empty) => return,
            Err(mpsc::TryRecvError::Disconnected) => Err(format!(
                "{}: the sewing stopped unexpectedly",
                view.path.display()
            )),
        };
        let same_scene = job.scene == self.doc.path;
        view.sewing = None;
        match result {
            Ok((path, report)) => {
                view.report = Some(report);
                if same_scene {
                    self.import_garment(&path);
                } else {
                    self.status = format!(
                        "sewn garment written to {} (another scene is open now: add it with \
                         File > Import garment)",
                        path.display()
                    );
                }
            }
            Err(e) => self.fail(e),
        }
    }
}

/// The pattern window, while a pattern is open.
pub fn show(app: &mut DrapeApp, ctx: &egui::Context) {
    app.poll_sewing();
    let Some(view) = app.pattern.as_ref() else {
        return;
    };
    let title = format!(
        "Pattern: {}",
        view.path
            .file_name()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
    );
    let mut open = true;
    let mut sew = false;
    egui::Window::new(title)
        .default_pos([230.0, 60.0])
        .open(&mut open)
        .default_size([720.0, 460.0])
        .show(ctx, |ui| {
            let p = &view.pattern;
            ui.horizontal(|ui| {
                let busy = view.sewing.is_some();
                if ui
                    .add_enabled(!busy, egui::Button::new("Sew on the body"))
                    .on_hover_text(
                        "Place the panels around the scene's body, close the seams, weld and \
                         settle, then add the garment to the scene",
                    )
                    .clicked()
                {
                    sew = true;
                }
                if let Some(job) = &view.sewing {
                    ui.add(
                        egui::ProgressBar::new(job.progress())
                            .show_percentage()
                            .desired_width(200.0),
                    );
                }
            });
            if let Some(r) = &view.report {
                ui.label(format!("Sewn: {r}"));
            }
            ui.separator();
            ui.columns(2, |cols| {
                egui::ScrollArea::vertical()
                    .id_salt("pattern lists")
                    .show(&mut cols[0], |ui| {
                        ui.strong("Panels");
                        for (panel, spec) in p.panels.iter().zip(&p.file.panels) {
                            let place = spec
                                .place
                                .map_or("not placed".to_owned(), |a| format!("{a:?}"));
                            ui.label(format!(
                                "{}: {}, {} vertices, {} edges",
                                panel.name,
                                place,
                                panel.mesh.positions.len(),
                                panel.edges.len()
                            ));
                        }
                        ui.strong("Seams");
                        for (k, s) in p.seams.iter().enumerate() {
                            let name = |(i, e): (usize, usize)| {
                                format!(
                                    "{} {e} ({:.0} mm)",
                                    p.panels[i].name,
                                    p.panels[i].edge_lengths_m[e] * 1e3
                                )
                            };
                            ui.colored_label(
                                SEAM_COLOURS[k % SEAM_COLOURS.len()],
                                format!("seam {k}: {} to {}", name(s.a), name(s.b)),
                            );
                        }
                    });
                draw_panels(&mut cols[1], p);
            });
        });
    if sew {
        app.sew_pattern();
    }
    if !open {
        if app.pattern.as_ref().is_some_and(|v| v.sewing.is_some()) {
            // Closing would lose the garment being sewn: the window stays until it is added.
            app.status = "sewing: the pattern window closes once the garment is added".into();
        } else {
            app.pattern = None;
        }
    }
}

/// The panels, flat, fitted into the space left: outlines in grey, sewn edges in their seam's
/// colour, names at the centres.
fn draw_panels(ui: &mut egui::Ui, p: &Pattern) {
    let size = egui::vec2(ui.available_width().max(100.0), 360.0);
    let (rect, _) = ui.allocate_exact_size(size, egui::Sense::hover());
    let painter = ui.painter_at(rect);
    painter.rect_filled(rect, 4.0, ui.visuals().extreme_bg_color);
    let (mut lo, mut hi) = (
        egui::pos2(f32::MAX, f32::MAX),
        egui::pos2(f32::MIN, f32::MIN),
    );
    for panel in &p.panels {
        for v in &panel.mesh.positions {
            lo = lo.min(egui::pos2(v.x, v.y));
            hi = hi.max(egui::pos2(v.x, v.y));
        }
    }
    if !(hi.x > lo.x && hi.y > lo.y) {
        return;
    }
    let scale = ((rect.width() - 20.0) / (hi.x - lo.x)).min((rect.height() - 20.0) / (hi.y - lo.y));
    // Pattern y up, screen y down.
    let to_screen = |x: f32, y: f32| {
        egui::pos2(
            rect.center().x + (x - 0.5 * (lo.x + hi.x)) * scale,
            rect.center().y - (y - 0.5 * (lo.y + hi.y)) * scale,
        )
    };
    let mut colour_of = std::collections::HashMap::new();
    for (k, s) in p.seams.iter().enumerate() {
        colour_of.insert(s.a, SEAM_COLOURS[k % SEAM_COLOURS.len()]);
        colour_of.insert(s.b, SEAM_COLOURS[k % SEAM_COLOURS.len()]);
    }
    for (i, panel) in p.panels.iter().enumerate() {
        let x = &panel.mesh.positions;
        for (e, edge) in panel.edges.iter().enumerate() {
            let (colour, width) = match colour_of.get(&(i, e)) {
                Some(&c) => (c, 2.5),
                None => (egui::Color32::GRAY, 1.5),
            };
            let points: Vec<egui::Pos2> = edge
                .iter()
                .map(|&v| to_screen(x[v as usize].x, x[v as usize].y))
                .collect();
            painter.add(egui::Shape::line(points, egui::Stroke::new(width, colour)));
        }
        let n = x.len().max(1) as f32;
        let c = x.iter().fold((0.0, 0.0), |(a, b), v| (a + v.x, b + v.y));
        painter.text(
            to_screen(c.0 / n, c.1 / n),
            egui::Align2::CENTER_CENTER,
            &panel.name,
            egui::FontId::proportional(13.0),
            ui.visuals().text_color(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sewing_again_writes_beside_the_earlier_garment_not_over_it() {
        let dir = tempfile::tempdir().unwrap();
        let first = sewn_garment_path(&dir.path().join("shirt.ron"));
        assert_eq!(first, dir.path().join("shirt.sewn.glb"));
        assert_eq!(free_path(&first), first);
        std::fs::write(&first, b"x").unwrap();
        let second = free_path(&first);
        assert_eq!(second, dir.path().join("shirt.sewn-2.glb"));
        std::fs::write(&second, b"x").unwrap();
        assert_eq!(free_path(&first), dir.path().join("shirt.sewn-3.glb"));
    }
}
