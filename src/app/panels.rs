//! The window's layout: menu bar, outliner, properties, timeline, status bar, the viewport
//! and the dialogs.

use eframe::egui;

use super::camera::{drag_target, pick_nearest};
use super::{DrapeApp, FileAction, Pending, Selection};
use crate::preset::{Origin, PresetKind};
use crate::scene::{PinTarget, ProxySpec, Scene};

/// Draws the whole window.
pub fn show(app: &mut DrapeApp, ui: &mut egui::Ui) {
    egui::Panel::top("menu").show(ui, |ui| menu_bar(app, ui));
    egui::Panel::bottom("status").show(ui, |ui| status_bar(app, ui));
    egui::Panel::bottom("timeline").show(ui, |ui| timeline(app, ui));
    egui::Panel::left("outliner")
        .default_size(200.0)
        .resizable(true)
        .show(ui, |ui| outliner(app, ui));
    egui::Panel::right("properties")
        .default_size(300.0)
        .resizable(true)
        .show(ui, |ui| {
            egui::ScrollArea::vertical().show(ui, |ui| properties(app, ui));
        });
    egui::CentralPanel::default().show(ui, |ui| viewport(app, ui));
    let ctx = ui.ctx().clone();
    presets_window(app, &ctx);
    super::pattern_window::show(app, &ctx);
    errors_window(app, &ctx);
    unsaved_dialog(app, &ctx);
}

fn menu_bar(app: &mut DrapeApp, ui: &mut egui::Ui) {
    egui::MenuBar::new().ui(ui, |ui| {
        ui.menu_button("File", |ui| {
            if ui.button("New").clicked() {
                app.request(Pending::New);
            }
            if ui.button("Open scene…").clicked() {
                app.start_dialog(FileAction::OpenScene);
            }
            ui.menu_button("Recent files", |ui| {
                if app.recent.is_empty() {
                    ui.label("(none)");
                }
                for p in app.recent.clone() {
                    if ui.button(p.display().to_string()).clicked() {
                        app.request(Pending::Open(p));
                    }
                }
            });
            ui.separator();
            if ui.button("Import garment…").clicked() {
                app.start_dialog(FileAction::ImportGarment);
            }
            if ui.button("Import body…").clicked() {
                app.start_dialog(FileAction::ImportBody);
            }
            if ui
                .button("Import pattern…")
                .on_hover_text("A sewing pattern (.ron beside its SVG), to sew on the body")
                .clicked()
            {
                app.start_dialog(FileAction::ImportPattern);
            }
            ui.separator();
            if ui.button("Save").clicked() {
                app.save();
            }
            if ui.button("Save As…").clicked() {
                app.start_dialog(FileAction::SaveAs);
            }
            ui.separator();
            ui.add_enabled_ui(app.baked.is_some(), |ui| {
                ui.menu_button("Export bake", |ui| {
                    if ui.button("glTF binary (.glb)…").clicked() {
                        app.start_dialog(FileAction::ExportGlb);
                    }
                    if ui.button("PC2 point cache (.pc2)…").clicked() {
                        app.start_dialog(FileAction::ExportPc2);
                    }
                    if ui.button("MDD point cache (.mdd)…").clicked() {
                        app.start_dialog(FileAction::ExportMdd);
                    }
                    if ui.button("USD stage (.usda)…").clicked() {
                        app.start_dialog(FileAction::ExportUsd);
                    }
                });
            });
            ui.separator();
            if ui.button("Quit").clicked() {
                app.request(Pending::Close);
            }
        });
        ui.menu_button("Edit", |ui| {
            if ui
                .add_enabled(app.doc.can_undo(), egui::Button::new("Undo"))
                .clicked()
            {
                app.undo();
            }
            if ui
                .add_enabled(app.doc.can_redo(), egui::Button::new("Redo"))
                .clicked()
            {
                app.redo();
            }
        });
        ui.menu_button("View", |ui| {
            let mut v = app.view;
            ui.checkbox(&mut v.proxy, "Show proxy (simulation mesh)");
            ui.checkbox(&mut v.wireframe, "Wireframe overlay");
            ui.checkbox(&mut v.heat_map, "Stretch heat map");
            if ui.button("Frame selected (F)").clicked() {
                app.frame_selected();
            }
            if ui.button("Frame all").clicked() {
                app.frame_all();
            }
            ui.separator();
            if ui.button("Preset library…").clicked() {
                app.show_presets = true;
            }
            if v != app.view {
                app.view = v;
                app.refresh_view();
            }
        });
    });
}

fn outliner(app: &mut DrapeApp, ui: &mut egui::Ui) {
    ui.heading("Scene");
    if ui
        .selectable_label(app.selection == Selection::Scene, "Solver & timeline")
        .clicked()
    {
        app.selection = Selection::Scene;
    }
    ui.separator();
    let mut v = app.view;
    if let Some(body) = &app.doc.scene.body {
        ui.horizontal(|ui| {
            ui.checkbox(&mut v.show_body, "");
            let name = body
                .path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "body".into());
            if ui
                .selectable_label(app.selection == Selection::Body, format!("Body: {name}"))
                .clicked()
            {
                app.selection = Selection::Body;
            }
        });
    } else {
        ui.weak("No body");
    }
    let mut hidden = app.hidden_garments.clone();
    for (i, g) in app.doc.scene.garments.iter().enumerate() {
        ui.horizontal(|ui| {
            let mut shown = !hidden.contains(&i);
            if ui.checkbox(&mut shown, "").changed() {
                if shown {
                    hidden.remove(&i);
                } else {
                    hidden.insert(i);
                }
            }
            if ui
                .selectable_label(app.selection == Selection::Garment(i), &g.name)
                .clicked()
            {
                app.selection = Selection::Garment(i);
            }
        });
    }
    if app.doc.scene.garments.is_empty() {
        ui.weak("No garment: File > Import garment, or drop a .glb here");
    }
    if v != app.view || hidden != app.hidden_garments {
        app.view = v;
        app.hidden_garments = hidden;
        app.refresh_view();
    }
}

fn properties(app: &mut DrapeApp, ui: &mut egui::Ui) {
    let mut scene = app.doc.scene.clone();
    match app.selection {
        Selection::Garment(i) if i < scene.garments.len() => {
            garment_properties(app, ui, &mut scene, i)
        }
        Selection::Body if scene.body.is_some() => {
            ui.heading("Body");
            if let Some(b) = &app.loaded.as_ref().and_then(|l| l.body.clone()) {
                ui.label(format!("File: {}", b.path.display()));
                ui.label(format!(
                    "{} vertices, {} triangles",
                    b.mesh().positions.len(),
                    b.mesh().indices.len()
                ));
                match b.animation_range_s() {
                    Some((s, e)) => ui.label(format!("Animation: {s:.2}–{e:.2} s")),
                    None => ui.label("Not animated"),
                };
                if let Some(spec) = scene.body.as_mut() {
                    exclusion_properties(ui, spec, b);
                }
            }
            if ui.button("Remove body").clicked() {
                scene.body = None;
                app.selection = Selection::Scene;
            }
        }
        _ => {}
    }
    ui.separator();
    solver_properties(ui, &mut scene);
    ui.separator();
    timeline_properties(ui, &mut scene);
    // A value dragged with the mouse applies live, frame by frame, as one undo step.
    let dragging = ui.input(|i| i.pointer.any_down());
    app.edit_merging(scene, dragging);
}

/// The body's collision exclusions: a checkbox per joint of its skins (a joint excludes its
/// descendants too) and the skin weight above which a triangle follows them. Edits go through
/// the scene, so each is one undo step.
fn exclusion_properties(
    ui: &mut egui::Ui,
    spec: &mut crate::scene::BodySpec,
    body: &crate::bake::LoadedBody,
) {
    let labels = body.rig.joint_labels();
    if labels.is_empty() {
        return;
    }
    ui.add_space(4.0);
    let excluded = body.excluded_triangles();
    egui::CollapsingHeader::new(format!(
        "Collision exclusions ({} of {} triangles)",
        excluded,
        body.mesh().indices.len()
    ))
    .id_salt("exclusions")
    .show(ui, |ui| {
        ui.label("Body parts that follow these joints do not collide: hands that should pass through a skirt rather than pinch it.");
        ui.horizontal(|ui| {
            ui.label("Above skin weight");
            ui.add(
                egui::DragValue::new(&mut spec.exclude_weight)
                    .range(0.05..=1.0)
                    .speed(0.01),
            );
        });
        egui::ScrollArea::vertical()
            .max_height(160.0)
            .show(ui, |ui| {
                for label in &labels {
                    let mut on = spec.exclude_joints.contains(label);
                    if ui.checkbox(&mut on, label.as_str()).changed() {
                        if on {
                            spec.exclude_joints.push(label.clone());
                        } else {
                            spec.exclude_joints.retain(|j| j != label);
                        }
                    }
                }
            });
    });
}

fn garment_properties(app: &mut DrapeApp, ui: &mut egui::Ui, scene: &mut Scene, i: usize) {
    let g = &mut scene.garments[i];
    ui.heading(format!("Garment: {}", g.name));
    ui.label(format!("File: {}", g.path.display()));
    // An Arc clone: the panel reads the loaded garment without copying its meshes.
    let loaded = app.loaded.clone();
    let loaded_garment = loaded.as_deref().and_then(|l| l.garments.get(i));
    if let Some(lg) = loaded_garment {
        ui.label(format!(
            "Render mesh: {} vertices; simulated: {} vertices, {} triangles",
            lg.render.positions.len(),
            lg.sim_mesh().positions.len(),
            lg.sim_mesh().indices.len()
        ));
        ui.label(format!(
            "Pins: {} hard, {} soft",
            lg.pinned.len(),
            lg.soft_pins.len()
        ));
    }
    ui.add_space(4.0);
    ui.strong("Proxy");
    let mut use_proxy = g.proxy.is_some();
    if ui
        .checkbox(&mut use_proxy, "Simulate a proxy")
        .on_hover_text("Simulate a simplified mesh and bind the render mesh to it")
        .changed()
    {
        g.proxy = use_proxy.then_some(ProxySpec::Vertices(app.proxy_draft));
    }
    if use_proxy {
        ui.horizontal(|ui| {
            ui.label("Target vertices");
            ui.add(egui::DragValue::new(&mut app.proxy_draft).range(3..=200_000));
            if ui.button("Rebuild proxy").clicked() {
                g.proxy = Some(ProxySpec::Vertices(app.proxy_draft));
            }
        });
        if let Some(p) = loaded_garment.and_then(|lg| lg.proxy.as_ref()) {
            ui.label(format!(
                "{} vertices; smallest angle {:.1}°, largest aspect ratio {:.2}",
                p.quality.vertices, p.quality.min_angle_deg, p.quality.max_aspect_ratio
            ));
        }
    } else {
        ui.weak("The render mesh itself is simulated (seams welded).");
    }
    ui.add_space(4.0);
    let fabrics: Vec<String> = (app.preset_entries.iter())
        .filter(|e| e.kind == PresetKind::Fabric)
        .map(|e| e.name.clone())
        .collect();
    let current = if g.fabric_override.is_some() {
        format!("{} (edited)", g.fabric)
    } else {
        g.fabric.clone()
    };
    egui::ComboBox::from_label("Fabric")
        .selected_text(current)
        .show_ui(ui, |ui| {
            for name in &fabrics {
                if ui.selectable_label(&g.fabric == name, name).clicked() {
                    g.fabric = name.clone();
                    g.fabric_override = None;
                }
            }
        });
    // The fabric as loaded (resolving the preset reads the library: not every frame).
    let resolved = match (&g.fabric_override, loaded_garment) {
        (None, Some(lg)) if lg.spec.fabric == g.fabric => Ok(lg.fabric.clone()),
        _ => g.resolve_fabric_in(Some(&app.presets)),
    };
    if let Ok(mut fabric) = resolved {
        let before = fabric.clone();
        ui.horizontal(|ui| {
            ui.label("Friction");
            ui.add(
                egui::DragValue::new(&mut fabric.friction)
                    .range(0.0..=2.0)
                    .speed(0.01),
            );
        });
        ui.label(format!(
            "{:.3} kg/m², stretch {:.0}/{:.0} N/m, bend {:.1e}/{:.1e} N·m",
            fabric.density_kg_per_m2,
            fabric.stretch_warp_n_per_m,
            fabric.stretch_weft_n_per_m,
            fabric.bend_warp_n_m,
            fabric.bend_weft_n_m
        ));
        if fabric != before {
            g.fabric_override = Some(fabric);
        }
    }
    ui.horizontal(|ui| {
        ui.label("Pins follow");
        egui::ComboBox::from_id_salt("pin_target")
            .selected_text(match g.pin_target {
                PinTarget::Auto => "the body when near it",
                PinTarget::Body => "the body",
                PinTarget::World => "world space",
            })
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut g.pin_target, PinTarget::Auto, "the body when near it");
                ui.selectable_value(&mut g.pin_target, PinTarget::Body, "the body");
                ui.selectable_value(&mut g.pin_target, PinTarget::World, "world space");
            });
    });
    if ui.button("Remove garment").clicked() {
        scene.garments.remove(i);
        app.selection = Selection::Scene;
    }
}

/// The solver's settings: the quality preset and the few settings artists change, then the
/// rest under "Advanced" (closed by default).
fn solver_properties(ui: &mut egui::Ui, scene: &mut Scene) {
    ui.heading("Solver");
    let s = &mut scene.solver;
    egui::Grid::new("solver").num_columns(2).show(ui, |ui| {
        let label = ui.label("Quality");
        // The built-in solver preset these settings are, if any.
        let presets: Vec<(&str, crate::solver::SolverSettings)> = (crate::preset::BUILTIN_SOLVERS
            .iter())
        .filter_map(|(name, _)| Some((*name, crate::preset::builtin_solver(name).ok()?)))
        .collect();
        let current = presets.iter().find(|(_, p)| p == s).map(|(n, _)| *n);
        egui::ComboBox::from_id_salt("solver_quality")
            .selected_text(current.unwrap_or("custom"))
            .show_ui(ui, |ui| {
                for (name, preset) in &presets {
                    if ui.selectable_label(current == Some(*name), *name).clicked() {
                        *s = preset.clone();
                    }
                }
            })
            .response
            .labelled_by(label.id)
            .on_hover_text(
                "A built-in solver preset: preview (fast, for blocking), production (the \
                 default) or final (more substeps and iterations). Replaces every solver \
                 setting; \"custom\" when they match none (docs/presets.md).",
            );
        ui.end_row();
        ui.label("Substeps");
        ui.add(egui::DragValue::new(&mut s.substeps).range(1..=crate::solver::MAX_SUBSTEPS));
        ui.end_row();
        ui.label("Iterations");
        ui.add(egui::DragValue::new(&mut s.iterations).range(1..=crate::solver::MAX_ITERATIONS));
        ui.end_row();
        ui.label("Thickness (mm)");
        let mut mm = s.collision_thickness_m * 1000.0;
        if ui
            .add(egui::DragValue::new(&mut mm).range(0.1..=50.0).speed(0.1))
            .changed()
        {
            s.collision_thickness_m = mm / 1000.0;
        }
        ui.end_row();
        ui.label("Self-collision");
        ui.checkbox(&mut s.self_collision, "Cloth against itself")
            .on_hover_text(
                "Keep layers of the cloth apart (folds, a skirt's pleats): slower, off by \
                 default (docs/solver.md, Self-collision).",
            );
        ui.end_row();
    });
    egui::CollapsingHeader::new("Advanced")
        .id_salt("solver_advanced")
        .show(ui, |ui| advanced_solver_properties(ui, s));
}

/// The solver settings under "Advanced": how the stretch is solved, span limits, body-vertex
/// contacts.
fn advanced_solver_properties(ui: &mut egui::Ui, s: &mut crate::solver::SolverSettings) {
    egui::Grid::new("solver_advanced_grid")
        .num_columns(2)
        .show(ui, |ui| {
            ui.label("Stretch solve");
            ui.horizontal(|ui| {
                use crate::solver::StretchSolve;
                ui.selectable_value(&mut s.stretch_solve, StretchSolve::Lines, "By line")
                .on_hover_text(
                    "Each straight line of edges solved exactly in every sweep: a stiff fabric \
                     keeps its real stretch at few substeps, at the cost of one pass edge by \
                     edge (docs/solver.md, Line solves of the stretch). The default.",
                );
                ui.selectable_value(&mut s.stretch_solve, StretchSolve::Sweep, "By edge")
                .on_hover_text(
                    "One pass edge by edge per sweep: a load moves about one edge per pass, so \
                     large pieces stretch at few substeps. For the span limits, the warm start \
                     and the pipelined sweeps.",
                );
                ui.selectable_value(&mut s.stretch_solve, StretchSolve::Global, "Global")
                    .on_hover_text(
                        "All edges together by conjugate gradients in every sweep: converged, and \
                     several times slower (docs/solver.md, Global stretch solve).",
                    );
            });
            ui.end_row();
            let label = ui.label("Line passes");
            ui.add_enabled(
                s.stretch_solve == crate::solver::StretchSolve::Lines,
                egui::DragValue::new(&mut s.line_passes).range(0..=crate::solver::MAX_LINE_PASSES),
            )
            .labelled_by(label.id)
            .on_hover_text(
                "More passes of the line solves in each sweep, after the shear and bending, so \
             that they do not undo the stretch: less stretch for 15–20 % more time per pass \
             (docs/solver.md, Line passes after the shear and bending). Default 2.",
            );
            ui.end_row();
            ui.label("Adaptive iterations");
            let mut adaptive = s.adaptive_iterations.is_some();
            if ui
                .checkbox(&mut adaptive, "Per frame, from the stretch")
                .on_hover_text(
                    "Choose the iterations per substep on every frame from the stretch the last                  one left and how much the body contacts changed: quiet frames run the fewest,                  impacts get more, up to the most (docs/solver.md, Adaptive iterations).",
                )
                .changed()
            {
                s.adaptive_iterations = adaptive.then(|| crate::solver::AdaptiveIterations {
                    min_iterations: s.iterations.min(crate::solver::MAX_ITERATIONS),
                    max_iterations: (4 * s.iterations).clamp(8, crate::solver::MAX_ITERATIONS),
                    ..Default::default()
                });
            }
            ui.end_row();
            if let Some(a) = &mut s.adaptive_iterations {
                let max = crate::solver::MAX_ITERATIONS;
                let label = ui.label("Fewest iterations");
                ui.add(egui::DragValue::new(&mut a.min_iterations).range(1..=max))
                    .labelled_by(label.id);
                ui.end_row();
                let label = ui.label("Most iterations");
                ui.add(egui::DragValue::new(&mut a.max_iterations).range(a.min_iterations..=max))
                    .labelled_by(label.id);
                ui.end_row();
                let label = ui.label("Stretch tolerance (%)");
                let mut percent = a.stretch_tolerance * 100.0;
                if ui
                    .add(
                        egui::DragValue::new(&mut percent)
                            .range(0.1..=50.0)
                            .speed(0.05)
                            .fixed_decimals(1),
                    )
                    .labelled_by(label.id)
                    .on_hover_text("The largest edge stretch aimed at, length / rest − 1.")
                    .changed()
                {
                    a.stretch_tolerance = percent / 100.0;
                }
                ui.end_row();
                a.max_iterations = a.max_iterations.max(a.min_iterations);
            }
            hybrid_properties(ui, s);
            ui.label("Backend");
            ui.horizontal(|ui| {
                use crate::solver::Backend;
                ui.selectable_value(&mut s.backend, Backend::Cpu, "CPU")
                    .on_hover_text("The reference solver, with every constraint kind and check.");
                ui.selectable_value(&mut s.backend, Backend::Gpu, "GPU").on_hover_text(
                    "The substeps on the GPU (wgpu compute): stretch, shear, bending, pins, \
                     tethers and a static body. A scene with what it lacks (a moving body, \
                     attachments, span limits, self-collision), or a machine without a GPU, \
                     runs on the CPU, and the status bar says why (docs/solver.md, The GPU \
                     backend).",
                );
            });
            ui.end_row();
            ui.label("Span limits");
            let mut on = s.span_limit_slack >= 0.0;
            if ui
                .checkbox(&mut on, "Limit long-range stretch")
                .on_hover_text(
                    "Hold every pair of vertices, near and far, within its rest distance along \
                 the cloth: removes the stretch that few substeps leave in large pieces, \
                 without changing a fabric that stays within it (docs/solver.md, Span limits).",
                )
                .changed()
            {
                s.span_limit_slack = if on { 0.0 } else { -1.0 };
            }
            ui.end_row();
            ui.label("Body vertices");
            ui.checkbox(&mut s.body_vertex_contacts, "Keep fingers out of the cloth")
                .on_hover_text(
                    "The body's sharp vertices (fingers, hands: surfaces curved tighter than the \
                 cloth's edges) push the cloth's triangles, so they cannot pass between its \
                 vertices and catch it (docs/solver.md, Body-vertex contacts).",
                );
            ui.end_row();
        });
}

/// The hybrid solver's rows of the advanced solver grid: the network on or off, its model, its
/// fallback (docs/solver.md, "The hybrid solver").
fn hybrid_properties(ui: &mut egui::Ui, s: &mut crate::solver::SolverSettings) {
    ui.label("Hybrid solver");
    let mut on = s.neural.is_some();
    if ui
        .checkbox(&mut on, "Network before the projection")
        .on_hover_text(
            "A graph network trained by `drape train` on Drape's own converged bakes corrects \
             each substep's prediction before the XPBD projection; the projection and its \
             checks are unchanged. Measured: on two cores it costs more than the iterations \
             it saves (docs/solver.md, The hybrid solver).",
        )
        .changed()
    {
        s.neural = on.then(|| crate::solver::neural::NeuralSettings {
            model: "default".into(),
            ..Default::default()
        });
    }
    ui.end_row();
    if let Some(n) = &mut s.neural {
        let label = ui.label("Model");
        ui.text_edit_singleline(&mut n.model)
            .labelled_by(label.id)
            .on_hover_text(
                "A model's name in the preset library's models/ folder (drape train --out \
                 NAME), or a .ron file relative to the scene.",
            );
        ui.end_row();
        ui.label("Fallback");
        ui.checkbox(&mut n.fallback, "Classical step when the network fails")
            .on_hover_text(
                "Refuse predictions that are not finite or move a vertex more than half an \
                 edge, and run a substep that fails with the network again classically.",
            );
        ui.end_row();
        let label = ui.label("Prediction every");
        ui.add(
            egui::DragValue::new(&mut n.reuse_substeps)
                .range(1..=crate::solver::neural::MAX_REUSE_SUBSTEPS)
                .suffix(" substeps"),
        )
        .labelled_by(label.id)
        .on_hover_text(
            "Run the network on one substep in this many and apply its prediction again on              the substeps between: 1 predicts every substep, the substeps per frame once per              frame.",
        );
        ui.end_row();
    }
}

fn timeline_properties(ui: &mut egui::Ui, scene: &mut Scene) {
    ui.heading("Timeline");
    let t = &mut scene.timeline;
    egui::Grid::new("timeline_props")
        .num_columns(2)
        .show(ui, |ui| {
            ui.label("fps");
            ui.add(egui::DragValue::new(&mut t.fps).range(1.0..=240.0));
            ui.end_row();
            ui.label("Start frame");
            ui.add(egui::DragValue::new(&mut t.start_frame));
            ui.end_row();
            ui.label("End frame");
            let mut has_end = t.end_frame.is_some();
            ui.horizontal(|ui| {
                if ui.checkbox(&mut has_end, "").changed() {
                    t.end_frame =
                        has_end.then_some(t.start_frame + crate::scene::DEFAULT_FRAMES as i32 - 1);
                }
                if let Some(end) = t.end_frame.as_mut() {
                    ui.add(egui::DragValue::new(end).range(
                        t.start_frame..=t.start_frame + crate::scene::MAX_FRAMES as i32 - 1,
                    ));
                } else {
                    ui.weak("animation's end");
                }
            });
            ui.end_row();
            ui.label("Pre-roll frames");
            ui.add(egui::DragValue::new(&mut t.preroll_frames).range(0..=240));
            ui.end_row();
        });
}

fn timeline(app: &mut DrapeApp, ui: &mut egui::Ui) {
    ui.horizontal(|ui| {
        let idle = app.baking.is_none();
        if ui.add_enabled(idle, egui::Button::new("Reset")).clicked() {
            app.reset();
        }
        let play = if app.playing { "Pause" } else { "Play" };
        if ui.add_enabled(idle, egui::Button::new(play)).clicked() {
            app.toggle_play();
        }
        if ui.add_enabled(idle, egui::Button::new("Step")).clicked() {
            app.step();
        }
        app.follow_paint_target();
        let mut paint = app.paint.is_some();
        if ui
            .toggle_value(&mut paint, "Paint")
            .on_hover_text("Paint a map of the garment selected in the outliner (else the first)")
            .changed()
        {
            app.set_paint_mode(paint);
        }
        paint_tools(app, ui);
        ui.separator();
        let frames = app.timeline_frames();
        let baked = app.baked.as_ref().map_or(0, |b| b.frames.len());
        match baked {
            n if n > 0 => {
                let mut k = app.scrub.unwrap_or(0);
                let slider = egui::Slider::new(&mut k, 0..=n - 1).text("baked frame");
                if ui.add(slider).changed() {
                    app.scrub_to(k);
                }
                ui.label(format!("{n} frames baked"));
            }
            _ => {
                let shown = app.shown_frame().unwrap_or(0);
                ui.label(format!("frame {shown} (simulating; {frames} to bake)"));
            }
        }
        ui.separator();
        match app.baking {
            Some(p) => {
                let fraction = p.done as f32 / p.total.max(1) as f32;
                ui.add(
                    egui::ProgressBar::new(fraction)
                        .desired_width(200.0)
                        .text(format!(
                            "{}/{} frames, ETA {:.0} s",
                            p.done, p.total, p.eta_s
                        )),
                );
                if ui.button("Cancel bake").clicked() {
                    app.cancel_bake();
                }
            }
            None => {
                if ui
                    .add_enabled(app.loaded.is_some(), egui::Button::new("Bake"))
                    .on_hover_text("Simulate the frame range and keep every frame")
                    .clicked()
                {
                    app.bake();
                }
            }
        }
    });
}

fn status_bar(app: &mut DrapeApp, ui: &mut egui::Ui) {
    ui.horizontal(|ui| {
        let s = app.live_stats();
        ui.label(format!("{:.1} ms/frame", s.ms_per_frame));
        ui.separator();
        ui.label(format!("max stretch {:.1} %", s.max_stretch * 100.0));
        ui.separator();
        ui.label(format!("penetrations {}", s.penetrations));
        ui.separator();
        ui.label(format!("rollbacks {}", s.rollbacks));
        ui.separator();
        if let Some(backend) = &app.solver_backend {
            ui.label(format!("solver on {backend}"));
            ui.separator();
        }
        ui.label(&app.status);
    });
}

fn viewport(app: &mut DrapeApp, ui: &mut egui::Ui) {
    let (rect, response) =
        ui.allocate_exact_size(ui.available_size(), egui::Sense::click_and_drag());
    app.viewport_rect = Some(rect);
    let size = [rect.width(), rect.height()];
    let local = |p: egui::Pos2| [p.x - rect.left(), p.y - rect.top()];
    let mut camera = app.camera();
    let shift = ui.input(|i| i.modifiers.shift);
    let painting = app.paint.is_some() && !shift;
    if response.drag_started_by(egui::PointerButton::Primary) && !shift && !painting {
        // Pick where the button went down: the drag starts only once the pointer has moved.
        let origin = ui.input(|i| i.pointer.press_origin());
        if let (Some(p), Some(loaded)) = (origin, &app.loaded) {
            let positions = app.garment_positions();
            if let Some(v) = pick_nearest(&camera, &positions, local(p), size, 12.0) {
                // The drawn mesh is the proxy (particles) only in the live proxy view; a
                // baked frame is drawn on the render mesh.
                let particle = if app.view.proxy && app.scrub.is_none() {
                    Some(v as u32)
                } else {
                    let offsets = particle_offsets(loaded);
                    loaded.render_to_particle(&offsets).get(v).copied()
                };
                app.grab = particle.map(|pt| (v, pt));
            }
        }
    }
    let filling = app.paint.as_ref().is_some_and(|p| p.fill);
    if painting && filling {
        // One fill per press, where the button went down.
        if response.clicked_by(egui::PointerButton::Primary)
            || response.drag_started_by(egui::PointerButton::Primary)
        {
            let at = ui
                .input(|i| i.pointer.press_origin())
                .or(response.interact_pointer_pos());
            if let Some(p) = at {
                app.fill_at(&camera, local(p), size);
            }
        }
    } else if painting {
        if response.dragged_by(egui::PointerButton::Primary) {
            if let Some(p) = response.interact_pointer_pos() {
                app.paint_at(&camera, local(p), size);
            }
        }
        if response.drag_stopped() || (app.painting() && !response.dragged()) {
            app.end_stroke();
        }
    } else if let Some((v, particle)) = app.grab {
        if response.dragged() {
            if let Some(p) = response.interact_pointer_pos() {
                if let Some(anchor) = app.garment_vertex(v) {
                    let target = drag_target(&camera, anchor, local(p), size);
                    app.drag_particle(Some((particle, target)));
                }
            }
        } else {
            app.grab = None;
            app.drag_particle(None);
        }
    } else if response.dragged_by(egui::PointerButton::Primary) && !shift {
        let d = response.drag_delta();
        camera.orbit(d.x, d.y);
    } else if response.dragged_by(egui::PointerButton::Middle)
        || response.dragged_by(egui::PointerButton::Secondary)
        || (response.dragged_by(egui::PointerButton::Primary) && shift)
    {
        let d = response.drag_delta();
        camera.pan(d.x, d.y, rect.height());
    }
    if response.hovered() {
        let scroll = ui.input(|i| i.smooth_scroll_delta.y);
        if scroll != 0.0 {
            camera.zoom(scroll);
        }
    }
    // The brush circle follows the pointer over the painted garment, also during a stroke.
    let pointer = response.hover_pos().or_else(|| {
        response
            .dragged()
            .then(|| response.interact_pointer_pos())?
    });
    app.hover_brush(&camera, pointer.map(local), size);
    app.set_camera(camera);
    super::viewport::paint(ui, rect, &app.draw);
    if app.doc.scene.garments.is_empty() {
        ui.put(
            rect,
            egui::Label::new("Drop a garment (.glb) or a scene (.ron) here"),
        );
    }
}

fn particle_offsets(loaded: &crate::bake::LoadedScene) -> Vec<u32> {
    let mut offsets = Vec::with_capacity(loaded.garments.len());
    let mut base = 0u32;
    for g in &loaded.garments {
        offsets.push(base);
        base += g.sim_mesh().positions.len() as u32;
    }
    offsets
}

fn presets_window(app: &mut DrapeApp, ctx: &egui::Context) {
    let mut open = app.show_presets;
    egui::Window::new("Preset library")
        .open(&mut open)
        .default_pos([230.0, 60.0])
        .default_width(360.0)
        .show(ctx, |ui| preset_library(app, ui));
    app.show_presets = open && app.show_presets;
}

fn preset_library(app: &mut DrapeApp, ui: &mut egui::Ui) {
    ui.horizontal(|ui| {
        ui.label(format!(
            "User presets: {}",
            app.presets.user_dir().display()
        ));
        if ui.small_button("Refresh").clicked() {
            app.refresh_presets();
        }
    });
    let entries = app.preset_entries.clone();
    egui::ScrollArea::vertical()
        .max_height(240.0)
        .show(ui, |ui| {
            for kind in [PresetKind::Fabric, PresetKind::Solver] {
                ui.strong(if kind == PresetKind::Fabric {
                    "Fabrics"
                } else {
                    "Solver"
                });
                for e in entries.iter().filter(|e| e.kind == kind) {
                    let key = (e.name.clone(), kind == PresetKind::Solver);
                    let tag = match e.origin {
                        Origin::Builtin => "built-in",
                        Origin::User => "user",
                    };
                    let selected = app.preset_selected.as_ref() == Some(&key);
                    if ui
                        .selectable_label(selected, format!("{}  ({tag})", e.name))
                        .clicked()
                    {
                        app.preset_name = e.name.clone();
                        app.preset_selected = Some(key);
                    }
                }
            }
        });
    ui.separator();
    ui.horizontal(|ui| {
        ui.label("Name");
        ui.text_edit_singleline(&mut app.preset_name);
    });
    let selected = app.preset_selected.clone();
    let kind_of = |solver: bool| {
        if solver {
            PresetKind::Solver
        } else {
            PresetKind::Fabric
        }
    };
    let builtin = selected.as_ref().is_some_and(|(n, s)| {
        entries
            .iter()
            .any(|e| &e.name == n && e.kind == kind_of(*s) && e.origin == Origin::Builtin)
    });
    ui.horizontal_wrapped(|ui| {
        if ui
            .add_enabled(selected.is_some(), egui::Button::new("Apply"))
            .clicked()
        {
            if let Some((name, solver)) = &selected {
                app.apply_preset(name, *solver);
            }
        }
        if ui.button("Save current fabric").clicked() {
            let name = app.preset_name.clone();
            app.save_current_fabric(&name);
        }
        if ui.button("Save current solver").clicked() {
            let name = app.preset_name.clone();
            app.save_current_solver(&name);
        }
        if ui
            .add_enabled(selected.is_some(), egui::Button::new("Duplicate"))
            .clicked()
        {
            if let Some((name, solver)) = &selected {
                let to = app.preset_name.clone();
                let r = app.presets.duplicate(kind_of(*solver), name, &to);
                app.preset_result(r.map(|_| format!("duplicated {name} as {to}")));
            }
        }
        if ui
            .add_enabled(selected.is_some() && !builtin, egui::Button::new("Rename"))
            .on_disabled_hover_text("Built-in presets are read-only")
            .clicked()
        {
            if let Some((name, solver)) = &selected {
                let to = app.preset_name.clone();
                let r = app.presets.rename(kind_of(*solver), name, &to);
                if r.is_ok() {
                    app.preset_selected = Some((to.clone(), *solver));
                }
                app.preset_result(r.map(|_| format!("renamed {name} to {to}")));
            }
        }
        if ui
            .add_enabled(selected.is_some() && !builtin, egui::Button::new("Delete"))
            .on_disabled_hover_text("Built-in presets are read-only")
            .clicked()
        {
            if let Some((name, solver)) = &selected {
                let r = app.presets.remove(kind_of(*solver), name);
                if r.is_ok() {
                    app.preset_selected = None;
                }
                app.preset_result(r.map(|_| format!("deleted preset {name}")));
            }
        }
        if ui.button("Import…").clicked() {
            app.start_dialog(FileAction::ImportPreset);
        }
        if ui
            .add_enabled(selected.is_some(), egui::Button::new("Export…"))
            .clicked()
        {
            app.start_dialog(FileAction::ExportPreset);
        }
    });
}

fn errors_window(app: &mut DrapeApp, ctx: &egui::Context) {
    if app.errors.is_empty() {
        return;
    }
    let mut open = true;
    egui::Window::new("Problems")
        .open(&mut open)
        .default_width(480.0)
        .anchor(egui::Align2::CENTER_TOP, [0.0, 40.0])
        .show(ctx, |ui| {
            for e in &app.errors {
                ui.colored_label(ui.visuals().error_fg_color, e);
            }
            if ui.button("Dismiss").clicked() {
                app.errors.clear();
            }
        });
    if !open {
        app.errors.clear();
    }
}

fn unsaved_dialog(app: &mut DrapeApp, ctx: &egui::Context) {
    let Some(pending) = app.pending.clone() else {
        return;
    };
    let mut answer = None;
    egui::Modal::new(egui::Id::unique("unsaved")).show(ctx, |ui| {
        ui.heading("Unsaved changes");
        ui.label(format!(
            "{} has changes that are not saved.",
            app.doc.title()
        ));
        ui.horizontal(|ui| {
            if ui.button("Save").clicked() {
                answer = Some(0);
            }
            if ui.button("Discard").clicked() {
                answer = Some(1);
            }
            if ui.button("Cancel").clicked() {
                answer = Some(2);
            }
        });
    });
    match answer {
        Some(0) => {
            app.pending = None;
            app.save_then(pending);
        }
        Some(1) => {
            // Discard: the edits are dropped only once New or Open has replaced the scene
            // (a failed Open keeps them, still unsaved).
            app.pending = None;
            app.continue_pending(pending);
        }
        Some(_) => app.pending = None,
        None => {}
    }
}

/// Paint mode's settings in the timeline bar: the map, its colour legend, the brush and the
/// Fill tool.
fn paint_tools(app: &mut DrapeApp, ui: &mut egui::Ui) {
    use super::paint_mode::map_label;
    use crate::paint::{BrushMode, Falloff, MapKind};
    let Some(p) = &app.paint else {
        return;
    };
    let mut kind = p.kind;
    egui::ComboBox::from_id_salt("paint_map")
        .selected_text(map_label(kind))
        .show_ui(ui, |ui| {
            for k in MapKind::ALL {
                ui.selectable_value(&mut kind, k, map_label(k));
            }
        })
        .response
        .on_hover_text("Map to paint");
    app.set_paint_kind(kind);
    let Some(p) = &mut app.paint else {
        return;
    };
    map_legend(ui, p.kind);
    let b = &mut p.brush;
    ui.add(
        egui::DragValue::new(&mut b.radius_m)
            .range(0.005..=1.0)
            .speed(0.002)
            .suffix(" m"),
    )
    .on_hover_text("Brush radius");
    ui.add(
        egui::DragValue::new(&mut b.strength)
            .range(0.0..=1.0)
            .speed(0.01),
    )
    .on_hover_text("Brush strength");
    egui::ComboBox::from_id_salt("brush_mode")
        .selected_text(format!("{:?}", b.mode))
        .show_ui(ui, |ui| {
            for m in [
                BrushMode::Add,
                BrushMode::Subtract,
                BrushMode::Replace,
                BrushMode::Smooth,
            ] {
                ui.selectable_value(&mut b.mode, m, format!("{m:?}"));
            }
        });
    egui::ComboBox::from_id_salt("brush_falloff")
        .selected_text(format!("{:?}", b.falloff))
        .show_ui(ui, |ui| {
            for f in [Falloff::Smooth, Falloff::Linear, Falloff::Constant] {
                ui.selectable_value(&mut b.falloff, f, format!("{f:?}"));
            }
        })
        .response
        .on_hover_text("Brush falloff");
    let (lo, hi) = p.kind.range();
    ui.add(egui::DragValue::new(&mut b.value).range(lo..=hi).speed(
        if p.kind == MapKind::Attachment {
            0.01
        } else {
            0.05
        },
    ))
    .on_hover_text("Amount added or subtracted, or the value replaced towards");
    ui.toggle_value(&mut b.mirror_x, "X-mirror");
    ui.toggle_value(&mut p.fill, "Fill").on_hover_text(
        "A click fills the connected piece under the cursor with the mode, value and strength",
    );
}

/// The legend of the paint-mode colour ramp of map `kind`: weight 0 to 1, or a scale from
/// 1/max to max in log scale (1 in the middle).
fn map_legend(ui: &mut egui::Ui, kind: crate::paint::MapKind) {
    let max = kind.range().1;
    let (low, high) = match kind {
        crate::paint::MapKind::Attachment => ("weight 0".to_string(), "1".to_string()),
        _ => (format!("1/{max}"), format!("{max} (log)")),
    };
    ui.label(low);
    let (rect, _) = ui.allocate_exact_size(egui::vec2(80.0, 12.0), egui::Sense::hover());
    let steps = 16;
    for k in 0..steps {
        let c = super::viewport::weight_color((k as f32 + 0.5) / steps as f32);
        let to_byte = |v: f32| (v.clamp(0.0, 1.0).powf(1.0 / 2.2) * 255.0) as u8;
        let w = rect.width() / steps as f32;
        let r = egui::Rect::from_min_size(
            rect.min + egui::vec2(w * k as f32, 0.0),
            egui::vec2(w, rect.height()),
        );
        ui.painter().rect_filled(
            r,
            0.0,
            egui::Color32::from_rgb(to_byte(c[0]), to_byte(c[1]), to_byte(c[2])),
        );
    }
    ui.label(high);
}
