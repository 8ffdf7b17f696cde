//! The 3D viewport: three-d draws into eframe's GL context through an egui paint callback
//! (DESIGN §5).
//!
//! The UI thread fills a [`SceneDraw`] (meshes, colours, camera, toggles) behind a mutex; the
//! paint callback keeps the GPU meshes in a thread-local and, when only the positions changed,
//! uploads positions, normals and colours into the existing buffers instead of rebuilding.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use eframe::{egui, egui_glow, glow};
use three_d::{
    AmbientLight, Camera, ClearState, ColorMaterial, Context, CpuMaterial, CpuMesh, DepthTest,
    DirectionalLight, Gm, Indices, Mesh, PhysicalMaterial, Positions, RenderStates, RenderTarget,
    ScissorBox, Srgba, Viewport,
};

use super::camera::{OrbitCamera, FAR_M, NEAR_M};
use crate::math::{Real, Vec3};
use crate::paint::MapKind;

/// A mesh to draw: positions (m), triangles, RGBA colours per vertex (linear, 0–1).
#[derive(Clone, Debug, Default)]
pub struct DrawMesh {
    /// Vertex positions (m).
    pub positions: Vec<Vec3>,
    /// Triangles.
    pub indices: Vec<[u32; 3]>,
    /// Vertex colours (linear RGBA).
    pub colors: Vec<[f32; 4]>,
    /// Bumped when the triangles change: the GPU mesh is rebuilt.
    pub topology_version: u64,
    /// Bumped when positions or colours change: they are uploaded.
    pub data_version: u64,
}

impl DrawMesh {
    /// Replaces the whole mesh.
    pub fn set(&mut self, positions: Vec<Vec3>, indices: Vec<[u32; 3]>, colors: Vec<[f32; 4]>) {
        self.positions = positions;
        self.indices = indices;
        self.colors = colors;
        self.topology_version += 1;
        self.data_version += 1;
    }

    /// Replaces positions and colours, same triangles. Data of another vertex count does not
    /// fit these triangles and is ignored.
    pub fn update(&mut self, positions: Vec<Vec3>, colors: Vec<[f32; 4]>) {
        if positions.len() != self.positions.len() || colors.len() != self.colors.len() {
            log::debug!(
                "viewport: {} positions for a mesh of {}: not drawn",
                positions.len(),
                self.positions.len()
            );
            return;
        }
        self.positions = positions;
        self.colors = colors;
        self.data_version += 1;
    }

    /// Whether there is nothing to draw.
    pub fn is_empty(&self) -> bool {
        self.indices.is_empty()
    }
}

/// Everything the viewport draws.
#[derive(Clone, Debug, Default)]
pub struct SceneDraw {
    /// The garments (render mesh or proxy).
    pub garment: DrawMesh,
    /// The body.
    pub body: DrawMesh,
    /// Draw the body.
    pub show_body: bool,
    /// Draw the garments.
    pub show_garment: bool,
    /// Overlay the garments' edges.
    pub wireframe: bool,
    /// The brush ring of paint mode, drawn on top in [`BRUSH_RING_COLOR`](super::paint_mode::BRUSH_RING_COLOR)
    /// (empty when none is shown).
    pub brush: DrawMesh,
    /// The camera.
    pub camera: OrbitCamera,
}

/// Shared between the UI (writes) and the paint callback (reads).
pub type SharedDraw = Arc<Mutex<SceneDraw>>;

/// The garment's colour when no map is shown (linear RGBA): a muted teal.
pub const GARMENT_COLOR: [f32; 4] = [0.10, 0.42, 0.55, 1.0];
/// The body's colour (linear RGBA).
pub const BODY_COLOR: [f32; 4] = [0.62, 0.58, 0.55, 1.0];
/// The background colour (sRGB bytes).
pub const BACKGROUND: [u8; 3] = [38, 40, 46];

/// The heat-map colour of a stretch `s` (length / rest − 1): blue at 0, green at 2.5 %, red
/// at 5 % and beyond (linear RGBA).
pub fn stretch_color(s: Real) -> [f32; 4] {
    let t = (s / 0.05).clamp(0.0, 1.0);
    if t < 0.5 {
        let u = t * 2.0;
        [0.05, 0.2 + 0.6 * u, 0.8 * (1.0 - u) + 0.1, 1.0]
    } else {
        let u = (t - 0.5) * 2.0;
        [0.05 + 0.85 * u, 0.8 * (1.0 - u) + 0.1, 0.1, 1.0]
    }
}

/// The paint-mode colour of value `v` of map `kind`: the attachment weight on the
/// [`weight_color`] ramp; a scale on the same ramp in log scale ([`scale_ramp`]), so 1 (the
/// unpainted value) is yellow, smaller values bluer and larger values redder.
pub fn map_color(kind: MapKind, v: Real) -> [f32; 4] {
    match kind {
        MapKind::Attachment => weight_color(v),
        _ => weight_color(scale_ramp(kind, v)),
    }
}

/// Where scale `v` of map `kind` sits on the paint-mode ramp (0–1): `½ + ½·log₁₀ v / log₁₀ max`,
/// `max` the largest value of the map's range, so `1/max` maps to 0, 1 to ½ and `max` to 1;
/// 0 and below (or NaN) map to 0.
pub fn scale_ramp(kind: MapKind, v: Real) -> Real {
    let decades = kind.range().1.log10().max(1.0);
    if v.is_nan() || v <= 0.0 {
        return 0.0;
    }
    (0.5 + 0.5 * v.log10() / decades).clamp(0.0, 1.0)
}

/// The paint-mode colour of an attachment weight `w` (0–1): dark blue at 0 through yellow to
/// red at 1 (linear RGBA); the legend in the timeline bar shows the same ramp.
pub fn weight_color(w: Real) -> [f32; 4] {
    let t = w.clamp(0.0, 1.0);
    if t < 0.5 {
        let u = t * 2.0;
        [0.05 + 0.85 * u, 0.1 + 0.7 * u, 0.5 * (1.0 - u), 1.0]
    } else {
        let u = (t - 0.5) * 2.0;
        [0.9, 0.8 * (1.0 - u), 0.0, 1.0]
    }
}

/// Adds the viewport's paint callback for `rect`.
pub fn paint(ui: &egui::Ui, rect: egui::Rect, draw: &SharedDraw) {
    let draw = draw.clone();
    let callback = egui::PaintCallback {
        rect,
        callback: Arc::new(egui_glow::CallbackFn::new(move |info, painter| {
            let Ok(scene) = draw.lock() else {
                return;
            };
            with_gpu(painter.gl(), |gpu| gpu.render(&scene, &info, painter));
        })),
    };
    // Through a painter clipped to the viewport, so three-d's clear stays inside it.
    ui.painter_at(rect).add(callback);
}

fn with_gpu(gl: &Arc<glow::Context>, f: impl FnOnce(&mut Gpu)) {
    thread_local! {
        static GPU: RefCell<Option<Gpu>> = const { RefCell::new(None) };
    }
    GPU.with(|cell| {
        let mut cell = cell.borrow_mut();
        if cell.is_none() {
            match Context::from_gl_context(gl.clone()) {
                Ok(context) => *cell = Some(Gpu::new(context)),
                Err(e) => {
                    log::error!("viewport: cannot use the GL context: {e}");
                    return;
                }
            }
        }
        if let Some(gpu) = cell.as_mut() {
            f(gpu);
        }
    });
}

/// A GPU mesh and the versions of the data it holds.
struct GpuMesh {
    model: Gm<Mesh, PhysicalMaterial>,
    wire: Gm<Mesh, ColorMaterial>,
    topology_version: u64,
    data_version: u64,
}

/// The GPU brush ring and the versions of the data it holds.
struct GpuRing {
    model: Gm<Mesh, ColorMaterial>,
    topology_version: u64,
    data_version: u64,
}

struct Gpu {
    context: Context,
    garment: Option<GpuMesh>,
    body: Option<GpuMesh>,
    brush: Option<GpuRing>,
    grid: Gm<Mesh, ColorMaterial>,
}

fn v3(p: Vec3) -> three_d::Vec3 {
    three_d::vec3(p.x, p.y, p.z)
}

fn normals(positions: &[Vec3], indices: &[[u32; 3]]) -> Vec<three_d::Vec3> {
    let mut n = vec![Vec3::ZERO; positions.len()];
    for t in indices {
        let [a, b, c] = t.map(|i| i as usize);
        let face = (positions[b] - positions[a]).cross(positions[c] - positions[a]);
        for i in [a, b, c] {
            n[i] += face;
        }
    }
    n.into_iter()
        .map(|v| v3(v.try_normalize().unwrap_or(Vec3::Y)))
        .collect()
}

fn cpu_mesh(mesh: &DrawMesh) -> CpuMesh {
    CpuMesh {
        positions: Positions::F32(mesh.positions.iter().map(|&p| v3(p)).collect()),
        indices: Indices::U32(mesh.indices.iter().flatten().copied().collect()),
        normals: Some(normals(&mesh.positions, &mesh.indices)),
        colors: Some(mesh.colors.iter().map(|c| srgba(*c)).collect()),
        ..Default::default()
    }
}

fn srgba(c: [f32; 4]) -> Srgba {
    let to = |x: f32| {
        let s = if x <= 0.003_130_8 {
            12.92 * x
        } else {
            1.055 * x.powf(1.0 / 2.4) - 0.055
        };
        (s.clamp(0.0, 1.0) * 255.0).round() as u8
    };
    Srgba::new(to(c[0]), to(c[1]), to(c[2]), to(c[3]))
}

/// A ground grid: 1 m squares, 10 m across, as thin quads on y = 0.
fn grid_mesh() -> CpuMesh {
    let mut positions = Vec::new();
    let mut indices = Vec::new();
    let half = 5.0f32;
    let w = 0.004f32;
    for k in -5..=5 {
        let c = k as f32;
        for quad in [
            [(c - w, -half), (c + w, -half), (c + w, half), (c - w, half)],
            [(-half, c - w), (half, c - w), (half, c + w), (-half, c + w)],
        ] {
            let base = positions.len() as u32;
            positions.extend(quad.iter().map(|&(x, z)| three_d::vec3(x, 0.0, z)));
            indices.extend([base, base + 1, base + 2, base, base + 2, base + 3]);
        }
    }
    CpuMesh {
        positions: Positions::F32(positions),
        indices: Indices::U32(indices),
        ..Default::default()
    }
}

impl Gpu {
    fn new(context: Context) -> Self {
        let grid = Gm::new(
            Mesh::new(&context, &grid_mesh()),
            ColorMaterial {
                color: Srgba::new(90, 94, 104, 255),
                ..Default::default()
            },
        );
        Self {
            context,
            garment: None,
            body: None,
            brush: None,
            grid,
        }
    }

    /// Keeps the brush ring in step with `mesh`: a flat colour (its first vertex colour),
    /// drawn over everything so the surface does not hide it.
    fn sync_ring(context: &Context, slot: &mut Option<GpuRing>, mesh: &DrawMesh) {
        if mesh.is_empty() {
            *slot = None;
            return;
        }
        match slot {
            Some(r) if r.topology_version == mesh.topology_version => {
                if r.data_version != mesh.data_version {
                    let positions: Vec<_> = mesh.positions.iter().map(|&p| v3(p)).collect();
                    let _ = r.model.geometry.set_positions(&positions);
                    r.data_version = mesh.data_version;
                }
            }
            _ => {
                let cpu = CpuMesh {
                    positions: Positions::F32(mesh.positions.iter().map(|&p| v3(p)).collect()),
                    indices: Indices::U32(mesh.indices.iter().flatten().copied().collect()),
                    ..Default::default()
                };
                let color = mesh.colors.first().map_or(Srgba::WHITE, |c| srgba(*c));
                *slot = Some(GpuRing {
                    model: Gm::new(
                        Mesh::new(context, &cpu),
                        ColorMaterial {
                            color,
                            render_states: RenderStates {
                                depth_test: DepthTest::Always,
                                ..Default::default()
                            },
                            ..Default::default()
                        },
                    ),
                    topology_version: mesh.topology_version,
                    data_version: mesh.data_version,
                });
            }
        }
    }

    fn sync(context: &Context, slot: &mut Option<GpuMesh>, mesh: &DrawMesh, roughness: f32) {
        if mesh.is_empty() {
            *slot = None;
            return;
        }
        match slot {
            Some(g) if g.topology_version == mesh.topology_version => {
                if g.data_version != mesh.data_version {
                    let positions: Vec<_> = mesh.positions.iter().map(|&p| v3(p)).collect();
                    let normals = normals(&mesh.positions, &mesh.indices);
                    let colors: Vec<three_d::Vec4> = mesh
                        .colors
                        .iter()
                        .map(|c| {
                            let s = srgba(*c);
                            three_d::vec4(
                                s.r as f32 / 255.0,
                                s.g as f32 / 255.0,
                                s.b as f32 / 255.0,
                                s.a as f32 / 255.0,
                            )
                        })
                        .collect();
                    let _ = g.model.geometry.set_positions(&positions);
                    let _ = g.model.geometry.set_normals(&normals);
                    let _ = g.model.geometry.set_colors(&colors);
                    let _ = g.wire.geometry.set_positions(&positions);
                    g.data_version = mesh.data_version;
                }
            }
            _ => {
                let cpu = cpu_mesh(mesh);
                let material = PhysicalMaterial::new_opaque(
                    context,
                    &CpuMaterial {
                        albedo: Srgba::WHITE,
                        roughness,
                        metallic: 0.0,
                        ..Default::default()
                    },
                );
                let wire = Gm::new(
                    Mesh::new(context, &cpu),
                    ColorMaterial {
                        color: Srgba::new(15, 15, 18, 255),
                        ..Default::default()
                    },
                );
                *slot = Some(GpuMesh {
                    model: Gm::new(Mesh::new(context, &cpu), material),
                    wire,
                    topology_version: mesh.topology_version,
                    data_version: mesh.data_version,
                });
            }
        }
    }

    fn render(
        &mut self,
        scene: &SceneDraw,
        info: &egui::PaintCallbackInfo,
        painter: &egui_glow::Painter,
    ) {
        use glow::HasContext as _;
        let context = self.context.clone();
        Self::sync(&context, &mut self.garment, &scene.garment, 0.8);
        Self::sync(&context, &mut self.body, &scene.body, 0.6);
        Self::sync_ring(&context, &mut self.brush, &scene.brush);

        // SAFETY: plain GL state calls on the context egui is painting with, on its thread.
        #[allow(unsafe_code)]
        unsafe {
            context.disable(glow::FRAMEBUFFER_SRGB);
        }
        let vp = info.viewport_in_pixels();
        let viewport = Viewport {
            x: vp.left_px,
            y: vp.from_bottom_px,
            width: vp.width_px.max(1) as u32,
            height: vp.height_px.max(1) as u32,
        };
        let clip = info.clip_rect_in_pixels();
        let scissor = ScissorBox {
            x: clip.left_px,
            y: clip.from_bottom_px,
            width: clip.width_px.max(0) as u32,
            height: clip.height_px.max(0) as u32,
        };
        let (w, h) = (info.screen_size_px[0].max(1), info.screen_size_px[1].max(1));
        let target = match painter.intermediate_fbo() {
            Some(fbo) => RenderTarget::from_framebuffer(&context, w, h, fbo),
            None => RenderTarget::screen(&context, w, h),
        };
        let cam = &scene.camera;
        let camera = Camera::new_perspective(
            viewport,
            v3(cam.eye()),
            v3(cam.target_m),
            three_d::vec3(0.0, 1.0, 0.0),
            three_d::radians(cam.fov_y_rad),
            NEAR_M,
            FAR_M,
        );
        let ambient = AmbientLight::new(&context, 0.35, Srgba::WHITE);
        let key =
            DirectionalLight::new(&context, 2.2, Srgba::WHITE, three_d::vec3(-0.5, -1.0, -0.6));
        let fill = DirectionalLight::new(
            &context,
            0.8,
            Srgba::new(200, 210, 255, 255),
            three_d::vec3(0.6, -0.3, 0.8),
        );
        let [r, g, b] = BACKGROUND;
        target.clear_partially(
            scissor,
            ClearState::color_and_depth(
                r as f32 / 255.0,
                g as f32 / 255.0,
                b as f32 / 255.0,
                1.0,
                1.0,
            ),
        );
        let lights: [&dyn three_d::Light; 3] = [&ambient, &key, &fill];
        target.render_partially(scissor, &camera, &self.grid, &[]);
        if scene.show_body {
            if let Some(body) = &self.body {
                target.render_partially(scissor, &camera, &body.model, &lights);
            }
        }
        if scene.show_garment {
            if let Some(garment) = &self.garment {
                target.render_partially(scissor, &camera, &garment.model, &lights);
                if scene.wireframe {
                    // SAFETY: as above; line mode is turned off again right after.
                    #[allow(unsafe_code)]
                    unsafe {
                        context.polygon_mode(glow::FRONT_AND_BACK, glow::LINE);
                        context.enable(glow::POLYGON_OFFSET_LINE);
                        context.polygon_offset(-1.0, -1.0);
                    }
                    target.render_partially(scissor, &camera, &garment.wire, &[]);
                    #[allow(unsafe_code)]
                    unsafe {
                        context.polygon_mode(glow::FRONT_AND_BACK, glow::FILL);
                        context.disable(glow::POLYGON_OFFSET_LINE);
                    }
                }
            }
        }
        if let Some(ring) = &self.brush {
            target.render_partially(scissor, &camera, &ring.model, &[]);
        }
        // three-d takes the framebuffer back; egui goes on drawing into it.
        let _ = target.into_framebuffer();
    }
}
