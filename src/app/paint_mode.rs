//! Paint mode: brushing one map (attachment, stretch, bend or mass scale) of the garment
//! selected in the outliner, in the viewport.
//!
//! The brush hits the garment's **rest** render mesh (a parry3d ray cast on the GUI thread,
//! [`PaintMesh::ray_cast`]); every dab paints a working copy of the maps, and the end of the
//! stroke commits them to the scene as one undo step. A flood fill (the Fill tool) is one
//! click and one undo step. The loaded scene is then patched (no file is read) and the worker
//! rebuilds the constraint set, keeping the simulation's state.

use crate::math::{Real, Vec3};
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
    /// Where the pointer hits the garment, while it hovers over it in the viewport.
    hover: Option<Hover>,
}

/// The pointer's hit on the painted garment's rest mesh.
#[derive(Clone, Copy, Debug)]
struct Hover {
    /// The hit point (m).
    point_m: Vec3,
    /// The hit triangle's unit normal.
    normal: Vec3,
    /// The drawn ring's width (m): a few points on screen at the hit's distance.
    ring_width_m: Real,
}

/// How far the drawn brush ring is lifted off the surface, along the normal (m).
pub const BRUSH_RING_LIFT_M: Real = 0.001;
/// The number of segments of the drawn brush ring.
pub const BRUSH_RING_SEGMENTS: usize = 48;
/// The drawn brush ring's colour (linear RGBA): near white.
pub const BRUSH_RING_COLOR: [f32; 4] = [0.95, 0.95, 0.95, 1.0];

/// The brush shown on the surface under the pointer: a circle of the brush radius around the
/// picked point, in the plane perpendicular to the hit triangle's normal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BrushCircle {
    /// The picked point on the garment's rest surface (m).
    pub centre_m: Vec3,
    /// The hit triangle's unit normal (facing the camera).
    pub normal: Vec3,
    /// The brush radius (m).
    pub radius_m: Real,
}

impl BrushCircle {
    /// `segments` points of the circle, lifted [`BRUSH_RING_LIFT_M`] along the normal (m).
    pub fn points(&self, segments: usize) -> Vec<Vec3> {
        self.ring(segments, self.radius_m)
    }

    /// The drawn ring: an annulus of `width_m` centred on the circle, lifted like
    /// [`Self::points`]; vertices `2k` (inner) and `2k + 1` (outer) for segment `k`.
    pub fn ring_mesh(&self, segments: usize, width_m: Real) -> (Vec<Vec3>, Vec<[u32; 3]>) {
        let half = 0.5 * width_m.min(self.radius_m);
        let inner = self.ring(segments, self.radius_m - half);
        let outer = self.ring(segments, self.radius_m + half);
        let positions = inner
            .into_iter()
            .zip(outer)
            .flat_map(|(a, b)| [a, b])
            .collect();
        let n = segments as u32;
        let indices = (0..n)
            .flat_map(|k| {
                let (i0, o0) = (2 * k, 2 * k + 1);
                let (i1, o1) = (2 * ((k + 1) % n), 2 * ((k + 1) % n) + 1);
                [[i0, o0, o1], [i0, o1, i1]]
            })
            .collect();
        (positions, indices)
    }

    fn ring(&self, segments: usize, radius_m: Real) -> Vec<Vec3> {
        let (u, v) = self.normal.any_orthonormal_pair();
        let centre = self.centre_m + BRUSH_RING_LIFT_M * self.normal;
        (0..segments)
            .map(|k| {
                let a = std::f32::consts::TAU * k as Real / segments.max(1) as Real;
                let (s, c) = a.sin_cos();
                centre + radius_m * (c * u + s * v)
            })
            .collect()
    }
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
        self.upload_brush_ring();
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
            hover: None,
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
            p.hover = None;
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
                p.hover = None;
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

    /// Follows the pointer at viewport point `at` (points, from the viewport's top left; `None`
    /// when the pointer is not over the viewport) of a viewport of `size`: where its ray hits
    /// the painted garment's rest mesh, the brush circle is shown there (see
    /// [`Self::brush_circle`]). Only the view changes: no edit, no undo step.
    pub fn hover_brush(&mut self, camera: &OrbitCamera, at: Option<[Real; 2]>, size: [Real; 2]) {
        let triangles = self.loaded.as_ref().and_then(|l| {
            let p = self.paint.as_ref()?;
            Some(&l.garments.get(p.garment)?.render.indices)
        });
        let hover = match (&self.paint, at, triangles) {
            (Some(p), Some(at), Some(triangles)) => {
                let (origin, dir) = camera.ray(at, size);
                p.mesh.ray_cast(origin, dir).and_then(|hit| {
                    let positions = p.mesh.positions();
                    let [a, b, c] = triangles
                        .get(hit.triangle as usize)?
                        .map(|i| positions.get(i as usize).copied());
                    let (a, b, c) = (a?, b?, c?);
                    let n = (b - a).cross(c - a).try_normalize()?;
                    // Towards the camera, whichever way the triangle winds.
                    let normal = if n.dot(dir) > 0.0 { -n } else { n };
                    let per_point =
                        2.0 * hit.distance_m * (0.5 * camera.fov_y_rad).tan() / size[1].max(1.0);
                    Some(Hover {
                        point_m: hit.point_m,
                        normal,
                        ring_width_m: 2.5 * per_point,
                    })
                })
            }
            _ => None,
        };
        if let Some(p) = &mut self.paint {
            p.hover = hover;
        }
        self.upload_brush_ring();
    }

    /// The brush circle shown on the surface: around the point the pointer hits on the painted
    /// garment, of the brush radius; `None` when the pointer is off the garment or paint mode
    /// is off.
    pub fn brush_circle(&self) -> Option<BrushCircle> {
        let p = self.paint.as_ref()?;
        let h = p.hover?;
        Some(BrushCircle {
            centre_m: h.point_m,
            normal: h.normal,
            radius_m: p.brush.radius_m,
        })
    }

    /// Puts the brush ring (or none) into the viewport's draw data.
    pub(super) fn upload_brush_ring(&self) {
        let hover = self.paint.as_ref().and_then(|p| p.hover);
        let ring = self.brush_circle().zip(hover).map(|(c, h)| {
            // At least 2.5 % of the radius wide, and a few points on screen.
            c.ring_mesh(BRUSH_RING_SEGMENTS, h.ring_width_m.max(0.025 * c.radius_m))
        });
        let Ok(mut d) = self.draw.lock() else {
            return;
        };
        match ring {
            Some((positions, indices)) => {
                if d.brush.indices != indices {
                    let colors = vec![BRUSH_RING_COLOR; positions.len()];
                    d.brush.set(positions, indices, colors);
                } else if d.brush.positions != positions {
                    let colors = d.brush.colors.clone();
                    d.brush.update(positions, colors);
                }
            }
            None if !d.brush.is_empty() => d.brush.set(Vec::new(), Vec::new(), Vec::new()),
            None => {}
        }
    }

    /// Whether a stroke is in progress.
    pub fn painting(&self) -> bool {
        self.paint.as_ref().is_some_and(|p| p.stroke.is_some())
    }
}
