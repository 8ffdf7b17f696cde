//! A summary of a glTF file: what `drape inspect FILE.glb` prints.
//!
//! Lists the meshes (vertex and triangle counts, morph targets), skins (joint counts) and
//! animations (channels, duration), from the document itself: no mesh is transformed or merged,
//! so the counts are the file's own.

use std::fmt;
use std::path::{Path, PathBuf};

use gltf::mesh::Mode;

use crate::io::gltf_common;
use crate::io::gltf_import::GltfImportError;

/// One glTF mesh.
#[derive(Clone, Debug, PartialEq)]
pub struct MeshInfo {
    /// The mesh name, or `mesh{index}` when it has none.
    pub name: String,
    /// Number of primitives.
    pub primitives: usize,
    /// Vertices, summed over the primitives (`POSITION` accessor counts).
    pub vertices: usize,
    /// Triangles, summed over the triangle, strip and fan primitives.
    pub triangles: usize,
    /// Morph targets (the most of any primitive; glTF requires them to agree).
    pub morph_targets: usize,
}

/// One glTF skin.
#[derive(Clone, Debug, PartialEq)]
pub struct SkinInfo {
    /// The skin name, or `skin{index}` when it has none.
    pub name: String,
    /// Number of joints.
    pub joints: usize,
}

/// One glTF animation.
#[derive(Clone, Debug, PartialEq)]
pub struct AnimationInfo {
    /// The animation name, or `animation{index}` when it has none.
    pub name: String,
    /// Number of channels.
    pub channels: usize,
    /// The latest key time over its samplers' inputs (s).
    pub duration_s: f32,
}

/// The summary of a glTF file (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq)]
pub struct InspectReport {
    /// The file.
    pub path: PathBuf,
    /// The `asset.generator` string, if any.
    pub generator: Option<String>,
    /// Meshes, in file order.
    pub meshes: Vec<MeshInfo>,
    /// Skins, in file order.
    pub skins: Vec<SkinInfo>,
    /// Animations, in file order.
    pub animations: Vec<AnimationInfo>,
    /// Number of nodes.
    pub nodes: usize,
    /// Number of scenes.
    pub scenes: usize,
}

/// Reads a glTF file and summarises it.
pub fn inspect(path: &Path) -> Result<InspectReport, GltfImportError> {
    let file = gltf_common::open(path)?;
    let doc = &file.doc;
    let meshes = doc
        .meshes()
        .map(|m| {
            let mut info = MeshInfo {
                name: m
                    .name()
                    .map_or_else(|| format!("mesh{}", m.index()), str::to_string),
                primitives: 0,
                vertices: 0,
                triangles: 0,
                morph_targets: 0,
            };
            for p in m.primitives() {
                let vertices = p.get(&gltf::Semantic::Positions).map_or(0, |a| a.count());
                let elements = p.indices().map_or(vertices, |a| a.count());
                info.primitives += 1;
                info.vertices = info.vertices.saturating_add(vertices);
                info.triangles = info.triangles.saturating_add(match p.mode() {
                    Mode::Triangles => elements / 3,
                    Mode::TriangleStrip | Mode::TriangleFan => elements.saturating_sub(2),
                    _ => 0,
                });
                info.morph_targets = info.morph_targets.max(p.morph_targets().count());
            }
            info
        })
        .collect();
    let skins = doc
        .skins()
        .map(|s| SkinInfo {
            name: s
                .name()
                .map_or_else(|| format!("skin{}", s.index()), str::to_string),
            joints: s.joints().count(),
        })
        .collect();
    let mut animations = Vec::new();
    for a in doc.animations() {
        let mut duration_s = 0.0f32;
        for s in a.samplers() {
            let input = s.input();
            let max = gltf_common::read_f32(&input, &file.buffers)
                .map(|(v, _)| v.into_iter().filter(|t| t.is_finite()).fold(0.0, f32::max))
                .map_err(|reason| GltfImportError::Malformed {
                    path: path.to_path_buf(),
                    reason: format!("animation {}: {reason}", a.index()),
                })?;
            duration_s = duration_s.max(max);
        }
        animations.push(AnimationInfo {
            name: a
                .name()
                .map_or_else(|| format!("animation{}", a.index()), str::to_string),
            channels: a.channels().count(),
            duration_s,
        });
    }
    Ok(InspectReport {
        path: path.to_path_buf(),
        generator: doc.as_json().asset.generator.clone(),
        meshes,
        skins,
        animations,
        nodes: doc.nodes().count(),
        scenes: doc.scenes().count(),
    })
}

impl fmt::Display for InspectReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.path.display())?;
        if let Some(g) = &self.generator {
            writeln!(f, "  generator: {g}")?;
        }
        writeln!(f, "  scenes: {}, nodes: {}", self.scenes, self.nodes)?;
        writeln!(f, "  meshes: {}", self.meshes.len())?;
        for m in &self.meshes {
            write!(
                f,
                "    '{}': {} vertices, {} triangles",
                m.name, m.vertices, m.triangles
            )?;
            if m.primitives != 1 {
                write!(f, ", {} primitives", m.primitives)?;
            }
            if m.morph_targets > 0 {
                write!(f, ", {} morph targets", m.morph_targets)?;
            }
            writeln!(f)?;
        }
        writeln!(f, "  skins: {}", self.skins.len())?;
        for s in &self.skins {
            writeln!(f, "    '{}': {} joints", s.name, s.joints)?;
        }
        writeln!(f, "  animations: {}", self.animations.len())?;
        for a in &self.animations {
            writeln!(
                f,
                "    '{}': {} channels, {:.3} s",
                a.name, a.channels, a.duration_s
            )?;
        }
        Ok(())
    }
}
