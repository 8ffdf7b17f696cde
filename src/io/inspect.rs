//! A summary of a glTF file: what `drape inspect FILE.glb` prints.
//!
//! Lists the meshes (vertex and triangle counts, morph targets, whether skinned), skins (joint
//! counts) and animations, from the document itself: no mesh is transformed or merged, so the
//! counts are the file's own.
//!
//! An animation's channels are broken down by what they target: node transforms (translation,
//! rotation, scale) and morph `weights`, each with its key range. In a Drape bake with an
//! animated body the two groups are the body's skeleton and the garment's frames, and their key
//! ranges are equal: both play the whole shot.

use std::fmt;
use std::path::{Path, PathBuf};

use gltf::mesh::Mode;

use crate::file::gltf as gltf_common;
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
    /// Whether a primitive has skin joints (`JOINTS_0`).
    pub skinned: bool,
}

/// One glTF skin.
#[derive(Clone, Debug, PartialEq)]
pub struct SkinInfo {
    /// The skin name, or `skin{index}` when it has none.
    pub name: String,
    /// Number of joints.
    pub joints: usize,
    /// The joints' names as a scene's `body.exclude_joints` takes them: the node's name, or
    /// `node_N` (its glTF index) for an unnamed node.
    pub joint_labels: Vec<String>,
}

/// The channels of one animation that target one kind of property.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChannelGroup {
    /// Number of channels.
    pub channels: usize,
    /// Number of distinct nodes they target.
    pub nodes: usize,
    /// The earliest and the latest key time over their samplers' inputs (s); `None` without
    /// channels (or keys).
    pub key_range_s: Option<(f32, f32)>,
}

impl ChannelGroup {
    /// Counts one more channel, keyed from `keys.0` to `keys.1` (s) when it has keys.
    fn add(&mut self, keys: Option<(f32, f32)>) {
        self.channels += 1;
        if let Some((first, last)) = keys {
            self.key_range_s = Some(match self.key_range_s {
                Some((a, b)) => (a.min(first), b.max(last)),
                None => (first, last),
            });
        }
    }
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
    /// The channels on node translation, rotation and scale (a skeleton, or moving objects).
    pub transforms: ChannelGroup,
    /// The channels on morph target `weights` (e.g. a baked garment's frames).
    pub morph_weights: ChannelGroup,
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
                skinned: false,
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
                info.skinned |= p.get(&gltf::Semantic::Joints(0)).is_some();
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
            joint_labels: s
                .joints()
                .map(|j| match j.name() {
                    Some(n) if !n.is_empty() => n.to_string(),
                    _ => format!("node_{}", j.index()),
                })
                .collect(),
        })
        .collect();
    let mut animations = Vec::new();
    for a in doc.animations() {
        let malformed = |reason: String| GltfImportError::Malformed {
            path: path.to_path_buf(),
            reason: format!("animation {}: {reason}", a.index()),
        };
        // Per sampler, its first and last finite key time (s).
        let mut keys = Vec::new();
        for s in a.samplers() {
            let (times, _) =
                gltf_common::read_f32(&s.input(), &file.buffers).map_err(&malformed)?;
            let finite = times.into_iter().filter(|t| t.is_finite());
            keys.push(finite.fold(None, |r: Option<(f32, f32)>, t| {
                Some(r.map_or((t, t), |(a, b)| (a.min(t), b.max(t))))
            }));
        }
        let duration_s = keys
            .iter()
            .flatten()
            .fold(0.0f32, |d, &(_, last)| d.max(last));
        let mut transforms = ChannelGroup::default();
        let mut morph_weights = ChannelGroup::default();
        let mut transform_nodes = Vec::new();
        let mut weight_nodes = Vec::new();
        for c in a.channels() {
            let range = keys.get(c.sampler().index()).copied().flatten();
            let node = c.target().node().index();
            let (group, nodes) = match c.target().property() {
                gltf::animation::Property::MorphTargetWeights => {
                    (&mut morph_weights, &mut weight_nodes)
                }
                _ => (&mut transforms, &mut transform_nodes),
            };
            group.add(range);
            nodes.push(node);
        }
        for (group, mut nodes) in [
            (&mut transforms, transform_nodes),
            (&mut morph_weights, weight_nodes),
        ] {
            nodes.sort_unstable();
            nodes.dedup();
            group.nodes = nodes.len();
        }
        animations.push(AnimationInfo {
            name: a
                .name()
                .map_or_else(|| format!("animation{}", a.index()), str::to_string),
            channels: a.channels().count(),
            duration_s,
            transforms,
            morph_weights,
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

/// `"s"` unless `n` is 1.
fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
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
            if m.skinned {
                write!(f, ", skinned")?;
            }
            writeln!(f)?;
        }
        writeln!(f, "  skins: {}", self.skins.len())?;
        for s in &self.skins {
            writeln!(f, "    '{}': {} joints", s.name, s.joints)?;
            if !s.joint_labels.is_empty() {
                writeln!(f, "      joints: {}", s.joint_labels.join(", "))?;
            }
        }
        writeln!(f, "  animations: {}", self.animations.len())?;
        for a in &self.animations {
            writeln!(
                f,
                "    '{}': {} channels, {:.3} s",
                a.name, a.channels, a.duration_s
            )?;
            let groups = [
                ("node transforms", &a.transforms),
                ("morph weights", &a.morph_weights),
            ];
            for (what, g) in groups {
                if g.channels == 0 {
                    continue;
                }
                write!(
                    f,
                    "      {what}: {} channel{} on {} node{}",
                    g.channels,
                    plural(g.channels),
                    g.nodes,
                    plural(g.nodes)
                )?;
                if let Some((first, last)) = g.key_range_s {
                    write!(f, ", keys {first:.3} s to {last:.3} s")?;
                }
                writeln!(f)?;
            }
            if let (Some(t), Some(w)) = (a.transforms.key_range_s, a.morph_weights.key_range_s) {
                if t == w {
                    writeln!(
                        f,
                        "      node transforms and morph weights play over the same keys"
                    )?;
                } else {
                    writeln!(
                        f,
                        "      note: node transforms and morph weights cover different times"
                    )?;
                }
            }
        }
        Ok(())
    }
}
