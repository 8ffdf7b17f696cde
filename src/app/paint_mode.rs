//! Paint mode: brushing one map (attachment, stretch, bend or mass scale) of the garment
//! selected in the outliner, in the viewport.
//!
//! The brush hits the garment's **rest** render mesh (a parry3d ray cast on the GUI thread,
//! [`PaintMesh::ray_cast`]); every dab paints a working copy of the maps, and the end of the
//! stroke commits them to the scene as one undo step. A flood fill (the Fill tool) is one
//! click and one undo step. The loaded scene is then patched (no file is read) and the worker
//! rebuilds the constraint set, keeping the simulation's state.

use crate::math::Real;
use crate::paint::{
    Brush, GarmentMaps, MapKind, PaintMesh, Stroke, VertexMaps, DEFAULT_MIRROR_TOLERANCE_M,
};

use super::camera::OrbitCamera;
use super::{DrapeApp, Selection};

/// The name of a map in the app.
pub fn map_label(kind: MapKind) -> &'static str {
    match kind {
        MapKind::Attachment => "Attachment",
        MapKind::StretchScale => "Stretch scale",
        MapKind::BendScale => "Bend scale",
        MapKind::MassScale => "Mass scale",
    }
}

/// The state of paint mode.
pub struct PaintMode {
    /// The painted garment (index into the scene's garments).
    pub garment: usize,
    /// The painted map.
    pub kind: MapKind,
    /// The brush.
    pub brush: Brush,
    /// A click fills the connected piece under the cursor instead of brushing.
    pub fill: bool,
    /// The garment's rest render mesh, prepared for brushing.
    mesh: PaintMesh,
    /// The stroke in progress and the maps it paints.
    stroke: Option<(Stroke, VertexMaps)>,
}

impl DrapeApp {
    /// The garment paint mode paints: the one selected in the outliner, else the first.
    pub fn paint_target(&self) -> usize {
        let count = self.loaded.as_ref().map_or(0, |l| l.garments.len());
        match self.selection {
            Selection::Garment(i) if i < count => i,
            _ => 0,
        }
    }

    /// Enters paint mode on the [target garment](Self::paint_target) (painting its
    /// attachment weight), or leaves it.
    pub fn set_paint_mode(&mut self, on: bool) {
        self.paint = None;
        if !on {
            self.refresh_view();
            return;
        }
        let garment = self.paint_target();
        let Some(loaded) = &self.loaded else {
            self.fail("nothing to paint: the scene has no loaded garment".into());
            return;
        };
        let Some(g) = loaded.garments.get(garment) else {
            return;
        };
        self.paint = Some(PaintMode {
            garment,
            kind: MapKind::Attachment,
            brush: Brush {
                radius_m: 0.08,
                strength: 1.0,
                ..Brush::default()
            },
            fill: false,
            mesh: PaintMesh::new(&g.render, DEFAULT_MIRROR_TOLERANCE_M),
            stroke: None,
        });
        self.refresh_view();
    }

    /// Moves paint mode to the [target garment](Self::paint_target) when the outliner's
    /// selection changed, keeping the brush and the map; a stroke in progress is ended first.
    pub fn follow_paint_target(&mut self) {
        let target = self.paint_target();
        let Some(p) = &self.paint else {
            return;
        };
        if p.garment == target {
            return;
        }
        let Some(g) = self.loaded.as_ref().and_then(|l| l.garments.get(target)) else {
            return;
        };
        let mesh = PaintMesh::new(&g.render, DEFAULT_MIRROR_TOLERANCE_M);
        self.end_stroke();
        if let Some(p) = &mut self.paint {
            p.garment = target;
            p.mesh = mesh;
        }
        self.refresh_view();
    }

    /// After the loaded scene was replaced (its meshes read again): paint mode moves to the
    /// [target garment](Self::paint_target)'s new rest mesh, keeping the brush and the map and
    /// dropping a stroke in progress (its maps fit the old mesh); it is left when there is no
    /// garment.
    pub(super) fn reload_paint_mesh(&mut self) {
        if self.paint.is_none() {
            return;
        }
        let target = self.paint_target();
        let mesh = self
            .loaded
            .as_ref()
            .and_then(|l| l.garments.get(target))
            .map(|g| PaintMesh::new(&g.render, DEFAULT_MIRROR_TOLERANCE_M));
        match (mesh, &mut self.paint) {
            (Some(mesh), Some(p)) => {
                p.garment = target;
                p.mesh = mesh;
                p.stroke = None;
            }
            _ => self.paint = None,
        }
    }

    /// Paints map `kind` from now on (a stroke in progress is ended first); the brush value
    /// is clamped to the map's range.
    pub fn set_paint_kind(&mut self, kind: MapKind) {
        if self.paint.as_ref().is_none_or(|p| p.kind == kind) {
            return;
        }
        self.end_stroke();
        if let Some(p) = &mut self.paint {
            p.kind = kind;
            let (lo, hi) = kind.range();
            p.brush.value = p.brush.value.clamp(lo, hi);
        }
        self.refresh_view();
    }

    /// Flood fill under the viewport point `at` (as in [`Self::paint_at`]): the brush's mode,
    /// value and strength over the connected piece of the garment the ray hits, stored as one
    /// undo step. Returns whether the ray hit the garment.
    pub fn fill_at(&mut self, camera: &OrbitCamera, at: [Real; 2], size: [Real; 2]) -> bool {
        self.end_stroke();
        let Some(p) = &mut self.paint else {
            return false;
        };
        let (origin, dir) = camera.ray(at, size);
        let Some(hit) = p.mesh.ray_cast(origin, dir) else {
            return false;
        };
        let mut maps = self.stored_maps();
        let Some(p) = &mut self.paint else {
            return false;
        };
        let mut stroke = Stroke::new(p.kind);
        if let Err(e) = stroke.flood(&p.mesh, &mut maps, &p.brush, hit.vertex) {
            self.fail(e.to_string());
            return true;
        }
        p.stroke = Some((stroke, maps));
        self.end_stroke();
        self.refresh_view();
        true
    }

    /// The painted garment's maps in the scene (unpainted maps when it has none, or none that
    /// fit its render mesh).
    fn stored_maps(&self) -> VertexMaps {
        let Some(p) = &self.paint else {
            return VertexMaps::default();
        };
        let n = p.mesh.vertex_count();
        self.doc
            .scene
            .garments
            .get(p.garment)
            .and_then(|g| g.maps.as_ref())
            .map(|m| m.values.clone())
            .filter(|v| v.len() == n)
            .unwrap_or_else(|| VertexMaps::new(n))
    }

    /// One dab under the viewport point `at` (points, from the viewport's top left) of a
    /// viewport of `size`; starts a stroke if none is in progress. Returns whether the brush
    /// hit the garment.
    pub fn paint_at(&mut self, camera: &OrbitCamera, at: [Real; 2], size: [Real; 2]) -> bool {
        let Some(p) = &mut self.paint else {
            return false;
        };
        let (origin, dir) = camera.ray(at, size);
        let Some(hit) = p.mesh.ray_cast(origin, dir) else {
            return false;
        };
        let point_m = hit.point_m;
        if p.stroke.is_none() {
            let maps = self.stored_maps();
            if let Some(p) = &mut self.paint {
                p.stroke = Some((Stroke::new(p.kind), maps));
            }
        }
        let Some(p) = &mut self.paint else {
            return false;
        };
        let Some((stroke, maps)) = &mut p.stroke else {
            return false;
        };
        match stroke.dab(&p.mesh, maps, &p.brush, point_m) {
            Ok(_) => {
                self.refresh_view();
                true
            }
            Err(e) => {
                let message = e.to_string();
                self.fail(message);
                false
            }
        }
    }

    /// Ends the stroke in progress: its maps go into the scene as one undo step.
    pub fn end_stroke(&mut self) {
        let Some(p) = &mut self.paint else {
            return;
        };
        let Some((stroke, maps)) = p.stroke.take() else {
            return;
        };
        if stroke.finish(&maps).is_empty() {
            return;
        }
        let mut scene = self.doc.scene.clone();
        let Some(g) = scene.garments.get_mut(p.garment) else {
            return;
        };
        let n = maps.len();
        g.maps.get_or_insert_with(|| GarmentMaps::new(n)).values = maps;
        self.edit(scene);
    }

    /// The painted map's values to show on the painted garment's render vertices in paint
    /// mode: the stroke's working copy, else the scene's, else the map's default value;
    /// `None` outside paint mode.
    pub fn painted_weights(&self) -> Option<Vec<Real>> {
        let p = self.paint.as_ref()?;
        let n = p.mesh.vertex_count();
        if let Some((_, maps)) = &p.stroke {
            return Some(maps.get(p.kind).to_vec());
        }
        let stored = self
            .doc
            .scene
            .garments
            .get(p.garment)
            .and_then(|g| g.maps.as_ref())
            .filter(|m| m.values.len() == n)
            .map(|m| m.values.get(p.kind).to_vec());
        Some(stored.unwrap_or_else(|| vec![p.kind.default_value(); n]))
    }

    /// Whether a stroke is in progress.
    pub fn painting(&self) -> bool {
        self.paint.as_ref().is_some_and(|p| p.stroke.is_some())
    }
}
