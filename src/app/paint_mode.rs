//! Paint mode: brushing a garment's attachment weights in the viewport.
//!
//! The brush hits the garment's **rest** render mesh (a parry3d ray cast on the GUI thread,
//! [`PaintMesh::ray_cast`]); every dab paints a working copy of the maps, and the end of the
//! stroke commits them to the scene as one undo step. The loaded scene is then patched (no
//! file is read) and the worker rebuilds the constraint set, keeping the simulation's state.

use crate::math::Real;
use crate::paint::{
    Brush, GarmentMaps, MapKind, PaintMesh, Stroke, VertexMaps, DEFAULT_MIRROR_TOLERANCE_M,
};

use super::camera::OrbitCamera;
use super::DrapeApp;

/// The state of paint mode.
pub struct PaintMode {
    /// The painted garment (index into the scene's garments).
    pub garment: usize,
    /// The painted map.
    pub kind: MapKind,
    /// The brush.
    pub brush: Brush,
    /// The garment's rest render mesh, prepared for brushing.
    mesh: PaintMesh,
    /// The stroke in progress and the maps it paints.
    stroke: Option<(Stroke, VertexMaps)>,
}

impl DrapeApp {
    /// Enters paint mode on the first garment (painting its attachment weight), or leaves it.
    pub fn set_paint_mode(&mut self, on: bool) {
        self.paint = None;
        if !on {
            self.refresh_view();
            return;
        }
        let Some(loaded) = &self.loaded else {
            self.fail("nothing to paint: the scene has no loaded garment".into());
            return;
        };
        let Some(g) = loaded.garments.first() else {
            return;
        };
        self.paint = Some(PaintMode {
            garment: 0,
            kind: MapKind::Attachment,
            brush: Brush {
                radius_m: 0.08,
                strength: 1.0,
                ..Brush::default()
            },
            mesh: PaintMesh::new(&g.render, DEFAULT_MIRROR_TOLERANCE_M),
            stroke: None,
        });
        self.refresh_view();
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
        let n = p.mesh.vertex_count();
        let (stroke, maps) = p.stroke.get_or_insert_with(|| {
            let maps = self
                .doc
                .scene
                .garments
                .get(p.garment)
                .and_then(|g| g.maps.as_ref())
                .map(|m| m.values.clone())
                .filter(|v| v.len() == n)
                .unwrap_or_else(|| VertexMaps::new(n));
            (Stroke::new(p.kind), maps)
        });
        match stroke.dab(&p.mesh, maps, &p.brush, hit.point_m) {
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

    /// The attachment weights to show on the first garment's render vertices in paint mode:
    /// the stroke's working copy, else the scene's, else zeros; `None` outside paint mode.
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
