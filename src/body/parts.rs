//! Reading the body's mesh instances: triangle primitives merged per instance, morph targets,
//! and skin joints and weights, checked and normalised.
//!
//! Every attribute's count is checked against POSITION's before it is read. NaN or infinite
//! positions and out-of-range indices are errors naming the mesh, the primitive and the
//! accessor. Repairs, each counted and reported once per file in [`crate::body::Rig::warnings`]:
//!
//! ```text
//! w_k < 0 or not finite  →  w_k = 0            (then renormalised like any other vertex)
//! Σ w_k ≠ 1              →  w_k = w_k / Σ w     (when Σ w ≥ ZERO_WEIGHT_SUM)
//! Σ w_k ≈ 0              →  w = (1, 0, 0, 0)    (bound to the vertex's first listed joint)
//! |n| ≈ 0 or not finite  →  n = area-weighted normal of the vertex's faces
//! ```

use gltf::mesh::Mode;
use gltf::Semantic;

use crate::body::{BodyError, BodyPart, Ctx, Node, Skin};
use crate::file::gltf::{self as gltf_common, GltfFile, REEXPORT};
use crate::math::{Vec2, Vec3};
use crate::mesh::Mesh;

/// Skin weights whose sum is further than this from 1 are reported as not normalised.
const WEIGHT_SUM_TOLERANCE: f32 = 1e-3;

/// Weight sum below which a vertex counts as unweighted.
const ZERO_WEIGHT_SUM: f32 = 1e-6;

/// The name of a mesh instance: the mesh name, else the node name, else `mesh{index}`.
fn instance_name(mesh: &gltf::Mesh, node: &Node) -> String {
    mesh.name()
        .map(str::to_string)
        .or_else(|| node.name.clone())
        .unwrap_or_else(|| format!("mesh{}", mesh.index()))
}

/// Reads the selected mesh instances; repairs the skin weights, with one warning for the file.
pub(super) fn read_parts(
    ctx: &Ctx,
    file: &GltfFile,
    nodes: &[Node],
    skins: &[Skin],
    instances: &[usize],
    mesh_name: Option<&str>,
    warnings: &mut Vec<String>,
) -> Result<Vec<BodyPart>, BodyError> {
    let mut named = Vec::new();
    for &n in instances {
        let Some(mesh) = nodes[n].mesh.and_then(|m| file.doc.meshes().nth(m)) else {
            continue;
        };
        named.push((n, instance_name(&mesh, &nodes[n]), mesh));
    }
    if let Some(want) = mesh_name {
        if !named.iter().any(|(_, name, _)| name == want) {
            let mut available: Vec<String> =
                named.iter().map(|(_, name, _)| name.clone()).collect();
            available.dedup();
            return Err(BodyError::MeshNotFound {
                path: ctx.path(),
                name: want.to_string(),
                available,
            });
        }
        named.retain(|(_, name, _)| name == want);
    }
    let mut parts = Vec::new();
    let mut repair = WeightRepair::default();
    for (node, name, mesh) in named {
        if let Some(part) = read_part(ctx, file, nodes, skins, node, name, &mesh, &mut repair)? {
            parts.push(part);
        }
    }
    if parts.is_empty() {
        return Err(BodyError::NoMeshes { path: ctx.path() });
    }
    repair.report(&ctx.label, warnings);
    Ok(parts)
}

/// Counts of skin-weight and normal repairs over the whole file.
#[derive(Default)]
struct WeightRepair {
    /// Vertices with a negative or non-finite weight, set to 0 before normalising.
    negative: usize,
    /// Vertices whose weights did not sum to 1.
    normalised: usize,
    /// Vertices with no weight at all, bound to their first joint.
    unweighted: usize,
    /// Mesh names with a `JOINTS_1` set, which is ignored.
    extra_sets: Vec<String>,
    /// Zero-length or non-finite normals, recomputed from the faces: `(mesh, primitive,
    /// accessor, count)`.
    normals: Vec<(String, usize, usize, usize)>,
}

impl WeightRepair {
    fn report(&self, label: &str, warnings: &mut Vec<String>) {
        if self.negative > 0 {
            warnings.push(format!(
                "{label}: {} vertices have negative or non-finite skin weights; those weights \
                 are set to 0 and the rest renormalised (check the weight painting)",
                self.negative
            ));
        }
        if self.normalised > 0 {
            warnings.push(format!(
                "{label}: skin weights of {} vertices did not sum to 1; normalised",
                self.normalised
            ));
        }
        if self.unweighted > 0 {
            warnings.push(format!(
                "{label}: {} vertices have no skin weight; each is bound fully to its first joint",
                self.unweighted
            ));
        }
        if !self.extra_sets.is_empty() {
            warnings.push(format!(
                "{label}: meshes {:?} have more than 4 joint influences per vertex (JOINTS_1); \
                 only JOINTS_0 and WEIGHTS_0 are used",
                self.extra_sets
            ));
        }
        for (mesh, p, acc, count) in &self.normals {
            warnings.push(format!(
                "{label}: mesh '{mesh}', primitive {p}: {count} normals in NORMAL (accessor \
                 {acc}) are zero-length or not finite; recomputed from the faces"
            ));
        }
    }
}

/// Reads one mesh instance: its triangle primitives merged, in mesh space. `None` when the mesh
/// has no triangle primitive.
#[allow(clippy::too_many_arguments)]
fn read_part(
    ctx: &Ctx,
    file: &GltfFile,
    nodes: &[Node],
    skins: &[Skin],
    node: usize,
    name: String,
    mesh: &gltf::Mesh,
    repair: &mut WeightRepair,
) -> Result<Option<BodyPart>, BodyError> {
    let bad = |reason: String| ctx.malformed(format!("mesh '{name}': {reason}"));
    let skin = nodes[node].skin;
    let skin_data = match skin {
        Some(s) => Some(
            skins
                .get(s)
                .ok_or_else(|| bad(format!("node {node} names missing skin {s}")))?,
        ),
        None => None,
    };
    let targets = nodes[node].weights.len();
    let buffers = &file.buffers;
    let mut part = BodyPart {
        name: name.clone(),
        node,
        mesh: mesh.index(),
        skin,
        positions: Vec::new(),
        normals: Some(Vec::new()),
        uvs: Some(Vec::new()),
        indices: Vec::new(),
        joints: Vec::new(),
        weights: Vec::new(),
        morph_targets: vec![Vec::new(); targets],
        vertices: 0..0,
    };
    let mut any = false;
    for prim in mesh.primitives() {
        // Where this primitive's normals start in `part.normals`, and their accessor.
        let mut normals_at = None;
        let p = prim.index();
        if !matches!(
            prim.mode(),
            Mode::Triangles | Mode::TriangleStrip | Mode::TriangleFan
        ) {
            continue;
        }
        any = true;
        let err = |e: String| bad(format!("primitive {p}: {e}"));
        let pos_acc = prim
            .get(&Semantic::Positions)
            .ok_or_else(|| err(format!("no POSITION attribute; {REEXPORT}")))?;
        let positions = gltf_common::read_vec3(&pos_acc, buffers, "POSITION").map_err(err)?;
        let n = positions.len();
        if let Some(v) = positions.iter().position(|x| !x.is_finite()) {
            return Err(err(format!(
                "POSITION (accessor {}) element {v} is {:?}; positions must be finite numbers: \
                 fix or delete that vertex in the modelling tool and export the file again",
                pos_acc.index(),
                positions[v].to_array()
            )));
        }
        let base = part.positions.len();
        // Every attribute has one entry per vertex: checked before it is read.
        let check_len = |what: &str, len: usize| {
            if len == n {
                Ok(())
            } else {
                Err(err(format!(
                    "{what} has {len} entries but POSITION has {n}"
                )))
            }
        };
        match (prim.get(&Semantic::Normals), part.normals.as_mut()) {
            (Some(acc), Some(all)) => {
                gltf_common::check_count(&acc, n, "NORMAL").map_err(err)?;
                let v = gltf_common::read_vec3(&acc, buffers, "NORMAL").map_err(err)?;
                check_len("NORMAL", v.len())?;
                let start = all.len();
                all.extend(v);
                normals_at = Some((start, acc.index()));
            }
            _ => part.normals = None,
        }
        match (prim.get(&Semantic::TexCoords(0)), part.uvs.as_mut()) {
            (Some(acc), Some(all)) => {
                gltf_common::check_count(&acc, n, "TEXCOORD_0").map_err(err)?;
                let v: Vec<Vec2> =
                    gltf_common::read_vec2(&acc, buffers, "TEXCOORD_0").map_err(err)?;
                check_len("TEXCOORD_0", v.len())?;
                all.extend(v);
            }
            _ => part.uvs = None,
        }
        let indices: Vec<u32> = match prim.indices() {
            Some(acc) => gltf_common::read_indices(&acc, buffers).map_err(err)?,
            None => (0..n as u32).collect(),
        };
        let triangles = triangulate(prim.mode(), &indices).map_err(err)?;
        if let Some(entry) = indices.iter().position(|&i| i as usize >= n) {
            return Err(err(format!(
                "indices (accessor {}) entry {entry} refers to vertex {}, but POSITION \
                 (accessor {}) has {n} vertices; the file is damaged: {REEXPORT}",
                prim.indices().map_or(0, |a| a.index()),
                indices[entry],
                pos_acc.index()
            )));
        }
        if let Some((start, acc)) = normals_at {
            if let Some(ns) = part.normals.as_mut().and_then(|all| all.get_mut(start..)) {
                let bad: Vec<usize> = (0..ns.len())
                    .filter(|&v| !ns[v].is_finite() || ns[v].length_squared() < 1e-24)
                    .collect();
                if !bad.is_empty() {
                    let faces = Mesh::new(name.clone(), Vec::new(), triangles.clone());
                    let computed = faces.vertex_normals_for(&positions);
                    for &v in &bad {
                        ns[v] = computed[v];
                    }
                    repair.normals.push((name.clone(), p, acc, bad.len()));
                }
            }
        }
        let offset = u32::try_from(base)
            .ok()
            .filter(|b| b.checked_add(n as u32).is_some())
            .ok_or_else(|| err("more than 4 billion vertices".into()))?;
        part.indices
            .extend(triangles.iter().map(|t| t.map(|i| i + offset)));
        let prim_targets: Vec<_> = prim.morph_targets().collect();
        if prim_targets.len() != targets {
            return Err(err(format!(
                "{} morph targets, but the mesh's first primitive has {targets}",
                prim_targets.len()
            )));
        }
        for (k, target) in prim_targets.iter().enumerate() {
            let deltas = match target.positions() {
                Some(acc) => {
                    gltf_common::check_count(&acc, n, "morph target POSITION").map_err(err)?;
                    let d = gltf_common::read_vec3(&acc, buffers, "morph target POSITION")
                        .map_err(err)?;
                    check_len(&format!("morph target {k} POSITION"), d.len())?;
                    d
                }
                None => vec![Vec3::ZERO; n],
            };
            part.morph_targets[k].extend(deltas);
        }
        if let Some(skin_data) = skin_data {
            let s = skin.unwrap_or(0);
            let acc = prim.get(&Semantic::Joints(0)).ok_or_else(|| {
                err(format!(
                    "skinned by skin {s} but has no JOINTS_0; {REEXPORT}"
                ))
            })?;
            gltf_common::check_count(&acc, n, "JOINTS_0").map_err(err)?;
            let joints = gltf_common::read_joints(&acc, buffers, "JOINTS_0").map_err(err)?;
            check_len("JOINTS_0", joints.len())?;
            let acc = prim.get(&Semantic::Weights(0)).ok_or_else(|| {
                err(format!(
                    "skinned by skin {s} but has no WEIGHTS_0; {REEXPORT}"
                ))
            })?;
            gltf_common::check_count(&acc, n, "WEIGHTS_0").map_err(err)?;
            let weights = gltf_common::read_float_or_normalized(&acc, buffers, 4, "WEIGHTS_0")
                .map_err(err)?;
            check_len("WEIGHTS_0", weights.len() / 4)?;
            let count = skin_data.joints.len();
            for (v, (j, w)) in joints.iter().zip(weights.chunks_exact(4)).enumerate() {
                if let Some(&joint) = j.iter().find(|&&j| usize::from(j) >= count) {
                    return Err(BodyError::JointOutOfRange {
                        path: ctx.path(),
                        mesh: name.clone(),
                        vertex: base + v,
                        joint,
                        skin: s,
                        joints: count,
                    });
                }
                let mut w = [w[0], w[1], w[2], w[3]];
                if w.iter().any(|x| !x.is_finite() || *x < 0.0) {
                    repair.negative += 1;
                    w = w.map(|x| if x.is_finite() && x > 0.0 { x } else { 0.0 });
                }
                let sum: f32 = w.iter().sum();
                if sum < ZERO_WEIGHT_SUM {
                    repair.unweighted += 1;
                    w = [1.0, 0.0, 0.0, 0.0];
                } else {
                    if (sum - 1.0).abs() > WEIGHT_SUM_TOLERANCE {
                        repair.normalised += 1;
                    }
                    w = w.map(|x| x / sum);
                }
                part.weights.push(w);
            }
            part.joints.extend(joints);
            if prim.get(&Semantic::Joints(1)).is_some() && !repair.extra_sets.contains(&name) {
                repair.extra_sets.push(name.clone());
            }
        }
        part.positions.extend(positions);
    }
    Ok(any.then_some(part))
}

/// A primitive's index list as triangles (strips: triangle `i` is `i, i+1+i%2, i+2−i%2`,
/// degenerate joining triangles dropped; fans: `i+1, i+2, 0`).
fn triangulate(mode: Mode, idx: &[u32]) -> Result<Vec<[u32; 3]>, String> {
    Ok(match mode {
        Mode::Triangles => {
            if idx.len() % 3 != 0 {
                return Err(format!(
                    "{} indices for TRIANGLES, not a multiple of 3",
                    idx.len()
                ));
            }
            idx.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect()
        }
        Mode::TriangleStrip => (0..idx.len().saturating_sub(2))
            .map(|i| {
                let odd = i % 2;
                [idx[i], idx[i + 1 + odd], idx[i + 2 - odd]]
            })
            .filter(|t| t[0] != t[1] && t[1] != t[2] && t[0] != t[2])
            .collect(),
        Mode::TriangleFan => (0..idx.len().saturating_sub(2))
            .map(|i| [idx[i + 1], idx[i + 2], idx[0]])
            .collect(),
        _ => Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_and_fans_become_triangles() {
        let strip = triangulate(Mode::TriangleStrip, &[0, 1, 2, 3, 4]).unwrap();
        assert_eq!(strip, vec![[0, 1, 2], [1, 3, 2], [2, 3, 4]]);
        let fan = triangulate(Mode::TriangleFan, &[0, 1, 2, 3]).unwrap();
        assert_eq!(fan, vec![[1, 2, 0], [2, 3, 0]]);
        assert!(triangulate(Mode::Triangles, &[0, 1]).is_err());
    }
}
