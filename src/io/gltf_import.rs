//! Reading triangle meshes from glTF 2.0 files (`.gltf` with its buffers, or `.glb`).
//!
//! Which meshes: those instanced by the nodes of the default scene, or of the first scene when
//! none is marked default; a file without scenes gives every mesh, untransformed. Each instance
//! becomes one [`Mesh`], in the scene's depth-first node order, with the node's world transform
//! `M = M_root · … · M_node` applied:
//!
//! ```text
//! x_world = A · x + t            A: the 3×3 part of M, t: its translation (m)
//! n_world = normalise(A⁻ᵀ · n)   the inverse transpose keeps normals perpendicular to the
//!                                surface under non-uniform scale
//! ```
//!
//! When `det A < 0` (a mirroring transform) the triangle winding is reversed, so the front face
//! stays counter-clockwise. All triangle primitives of one mesh are merged; strips and fans are
//! converted to triangles (dropping degenerate strip triangles); points and lines are skipped.
//! The mesh is named after the glTF mesh, else its node, else `mesh{index}`.
//!
//! A damaged file (truncated, garbage, indices or offsets out of range) is an error naming the
//! file, never a panic: accessors are read with every bound checked (see `gltf_common`), and
//! every attribute's count is checked against POSITION's before it is read. Errors name the
//! file, the mesh, the primitive and the accessor, and say what to do. NaN or infinite
//! positions and out-of-range indices are errors; zero-length or non-finite normals are
//! recomputed from the faces, with a warning ([`load_mesh_with_warnings`]; the other loaders
//! log it).

use std::path::Path;

use gltf::mesh::Mode;
use gltf::Semantic;

use crate::file::gltf::{self as gltf_common, Affine, GltfFile};
use crate::math::{Vec2, Vec3};
use crate::mesh::{Mesh, MeshError};
use crate::paint::{MapKind, VertexMaps};

pub use crate::file::gltf::GltfImportError;

/// Loads every triangle mesh of the file's scene, transformed to world space and validated.
///
/// Repairs (normals recomputed) are logged as warnings.
pub fn load_meshes(path: &Path) -> Result<Vec<Mesh>, GltfImportError> {
    let instances = read_instances(path)?;
    let mut out = Vec::new();
    for inst in instances {
        match inst.built? {
            Built::Triangles(m, _, warnings) => {
                warnings.iter().for_each(|w| log::warn!("{w}"));
                out.push(*m)
            }
            Built::NonTriangle(_) => {}
        }
    }
    if out.is_empty() {
        return Err(GltfImportError::NoMeshes {
            path: path.to_path_buf(),
        });
    }
    Ok(out)
}

/// Loads one mesh by name, or the only mesh of the file when `name` is `None`.
///
/// With several instances of the same name, the first (in scene order) is returned. Repairs
/// (normals recomputed) are logged as warnings; [`load_mesh_with_warnings`] returns them.
pub fn load_mesh(path: &Path, name: Option<&str>) -> Result<Mesh, GltfImportError> {
    load_mesh_with_maps(path, name).map(|(m, _)| m)
}

/// [`load_mesh`], with the repairs made while reading, each naming the file, the mesh, the
/// primitive and the accessor, e.g. `shirt.gltf: mesh 'shirt', primitive 0: 3 of 120 normals
/// in NORMAL (accessor 1) are zero-length or not finite; recomputed from the faces`.
pub fn load_mesh_with_warnings(
    path: &Path,
    name: Option<&str>,
) -> Result<(Mesh, Vec<String>), GltfImportError> {
    load_chosen(path, name).map(|(m, _, w)| (m, w))
}

/// [`load_mesh`], with the painted maps stored in the mesh's `_DRAPE_PIN`,
/// `_DRAPE_STRETCH_SCALE`, `_DRAPE_BEND_SCALE` and `_DRAPE_MASS_SCALE` attributes (FLOAT
/// SCALAR, see [`crate::paint::MapKind::gltf_attribute`]); `None` when no primitive has any
/// of them. A map missing from some primitives takes its unpainted value there. The values are
/// not validated: see [`crate::paint::VertexMaps::validate`].
pub fn load_mesh_with_maps(
    path: &Path,
    name: Option<&str>,
) -> Result<(Mesh, Option<VertexMaps>), GltfImportError> {
    let (mesh, maps, warnings) = load_chosen(path, name)?;
    warnings.iter().for_each(|w| log::warn!("{w}"));
    Ok((mesh, maps))
}

/// The mesh [`load_mesh`] picks, with its maps and its repair warnings.
fn load_chosen(
    path: &Path,
    name: Option<&str>,
) -> Result<(Mesh, Option<VertexMaps>, Vec<String>), GltfImportError> {
    let instances = read_instances(path)?;
    let (candidates, others): (Vec<Instance>, Vec<Instance>) = instances
        .into_iter()
        .partition(|i| !matches!(i.built, Ok(Built::NonTriangle(_))));
    let unsupported = |inst: Instance| match inst.built {
        Ok(Built::NonTriangle(mode)) => GltfImportError::UnsupportedMode {
            path: path.to_path_buf(),
            mesh: inst.name,
            mode,
        },
        _ => GltfImportError::NoMeshes {
            path: path.to_path_buf(),
        },
    };
    let chosen = match name {
        None => {
            if candidates.len() > 1 {
                return Err(GltfImportError::SeveralMeshes {
                    path: path.to_path_buf(),
                    available: candidates.into_iter().map(|i| i.name).collect(),
                });
            }
            match candidates.into_iter().next() {
                Some(c) => c,
                None => {
                    return Err(match others.into_iter().next() {
                        Some(o) => unsupported(o),
                        None => GltfImportError::NoMeshes {
                            path: path.to_path_buf(),
                        },
                    })
                }
            }
        }
        Some(name) => {
            let available: Vec<String> = candidates.iter().map(|i| i.name.clone()).collect();
            match candidates.into_iter().find(|i| i.name == name) {
                Some(c) => c,
                None => {
                    return Err(match others.into_iter().find(|i| i.name == name) {
                        Some(o) => unsupported(o),
                        None => GltfImportError::MeshNotFound {
                            path: path.to_path_buf(),
                            name: name.to_string(),
                            available,
                        },
                    })
                }
            }
        }
    };
    match chosen.built? {
        Built::Triangles(m, maps, warnings) => Ok((*m, maps, warnings)),
        Built::NonTriangle(mode) => Err(GltfImportError::UnsupportedMode {
            path: path.to_path_buf(),
            mesh: chosen.name,
            mode,
        }),
    }
}

/// One mesh instance of the scene, read (or failed) independently of the others.
struct Instance {
    name: String,
    built: Result<Built, GltfImportError>,
}

enum Built {
    /// A validated triangle mesh in world space, its painted maps if it has any, and the
    /// warnings about repairs made while reading it.
    Triangles(Box<Mesh>, Option<VertexMaps>, Vec<String>),
    /// A mesh with no triangle primitives; the mode of its first primitive, e.g. `LINES`.
    NonTriangle(String),
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Points => "POINTS",
        Mode::Lines => "LINES",
        Mode::LineLoop => "LINE_LOOP",
        Mode::LineStrip => "LINE_STRIP",
        Mode::Triangles => "TRIANGLES",
        Mode::TriangleStrip => "TRIANGLE_STRIP",
        Mode::TriangleFan => "TRIANGLE_FAN",
    }
}

/// Reads the file and every mesh instance of its scene.
fn read_instances(path: &Path) -> Result<Vec<Instance>, GltfImportError> {
    let file = gltf_common::open(path)?;
    let mut placed: Vec<(gltf::Mesh, Option<String>, Affine)> = Vec::new();
    let scene = file
        .doc
        .default_scene()
        .or_else(|| file.doc.scenes().next());
    match scene {
        Some(scene) => {
            let mut visited = vec![false; file.doc.nodes().len()];
            // Depth-first, in file order: push children reversed.
            let mut stack: Vec<(gltf::Node, Affine)> = scene
                .nodes()
                .map(|n| (n, Affine::IDENTITY))
                .collect::<Vec<_>>();
            stack.reverse();
            while let Some((node, parent)) = stack.pop() {
                let seen =
                    visited
                        .get_mut(node.index())
                        .ok_or_else(|| GltfImportError::Malformed {
                            path: path.to_path_buf(),
                            reason: format!("node {} does not exist", node.index()),
                        })?;
                if *seen {
                    return Err(GltfImportError::Malformed {
                        path: path.to_path_buf(),
                        reason: format!(
                            "node {} is reached twice from scene {}; glTF nodes must form trees",
                            node.index(),
                            scene.index()
                        ),
                    });
                }
                *seen = true;
                let world = parent.then_child(&Affine::from_cols(node.transform().matrix()));
                if let Some(mesh) = node.mesh() {
                    placed.push((mesh, node.name().map(str::to_string), world));
                }
                let children: Vec<gltf::Node> = node.children().collect();
                stack.extend(children.into_iter().rev().map(|c| (c, world)));
            }
        }
        None => placed.extend(file.doc.meshes().map(|m| (m, None, Affine::IDENTITY))),
    }
    Ok(placed
        .into_iter()
        .map(|(mesh, node_name, world)| {
            let name = mesh
                .name()
                .map(str::to_string)
                .or(node_name)
                .unwrap_or_else(|| format!("mesh{}", mesh.index()));
            let built = build(path, &file, &mesh, &name, &world);
            Instance { name, built }
        })
        .collect())
}

/// One triangle primitive, in world space, its indices checked.
struct Part {
    positions: Vec<Vec3>,
    normals: Option<Vec<Vec3>>,
    uvs: Option<Vec<Vec2>>,
    triangles: Vec<[u32; 3]>,
    /// The painted maps found, in [`MapKind::ALL`] order.
    maps: [Option<Vec<f32>>; 4],
}

/// Reads, transforms and merges the triangle primitives of one mesh instance.
fn build(
    path: &Path,
    file: &GltfFile,
    mesh: &gltf::Mesh,
    name: &str,
    world: &Affine,
) -> Result<Built, GltfImportError> {
    let label = path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let malformed = |reason: String| GltfImportError::Malformed {
        path: path.to_path_buf(),
        reason: format!("mesh '{name}': {reason}"),
    };
    let invalid = |source: MeshError, location: String| GltfImportError::InvalidMesh {
        path: path.to_path_buf(),
        source,
        location,
    };
    let det = world.linear.determinant();
    let mirrored = det < 0.0;
    // Normals transform with the inverse transpose; a singular transform flattens the mesh, so
    // its normals are recomputed from the flattened positions instead.
    let normal_matrix =
        (det.is_finite() && det.abs() > 1e-20).then(|| world.linear.inverse().transpose());
    let mut parts: Vec<Part> = Vec::new();
    let mut warnings = Vec::new();
    let mut first_mode = None;
    let mut triangle_base = 0usize;
    let mut vertex_base = 0usize;
    for prim in mesh.primitives() {
        let p = prim.index();
        let mode = prim.mode();
        if !matches!(
            mode,
            Mode::Triangles | Mode::TriangleStrip | Mode::TriangleFan
        ) {
            first_mode.get_or_insert(mode);
            continue;
        }
        let err = |reason: String| malformed(format!("primitive {p}: {reason}"));
        let buffers = &file.buffers;
        let pos_acc = prim
            .get(&Semantic::Positions)
            .ok_or_else(|| err(format!("no POSITION attribute; {}", gltf_common::REEXPORT)))?;
        let positions = gltf_common::read_vec3(&pos_acc, buffers, "POSITION").map_err(err)?;
        let n = positions.len();
        if let Some(v) = positions.iter().position(|x| !x.is_finite()) {
            return Err(invalid(
                MeshError::NonFinite {
                    name: name.to_string(),
                    vertex: vertex_base + v,
                },
                format!(
                    "primitive {p}, POSITION (accessor {}) element {v} is {:?}",
                    pos_acc.index(),
                    positions[v].to_array()
                ),
            ));
        }
        // Every attribute must have one entry per vertex: checked before it is read.
        let read_attr = |semantic: Semantic, what: &str| match prim.get(&semantic) {
            Some(acc) => gltf_common::check_count(&acc, n, what).map(|()| Some(acc)),
            None => Ok(None),
        };
        let normals = match read_attr(Semantic::Normals, "NORMAL").map_err(err)? {
            Some(acc) => Some((
                gltf_common::read_vec3(&acc, buffers, "NORMAL").map_err(err)?,
                acc.index(),
            )),
            None => None,
        };
        let uvs = match read_attr(Semantic::TexCoords(0), "TEXCOORD_0").map_err(err)? {
            Some(acc) => Some(gltf_common::read_vec2(&acc, buffers, "TEXCOORD_0").map_err(err)?),
            None => None,
        };
        let mut maps: [Option<Vec<f32>>; 4] = Default::default();
        for (slot, kind) in maps.iter_mut().zip(MapKind::ALL) {
            let attr = kind.gltf_attribute();
            let semantic = Semantic::Extras(attr.trim_start_matches('_').to_string());
            if let Some(acc) = read_attr(semantic, attr).map_err(err)? {
                let (values, width) = gltf_common::read_f32(&acc, buffers).map_err(err)?;
                if width != 1 || values.len() != n {
                    return Err(err(format!(
                        "{attr} (accessor {}) must be one SCALAR per vertex ({n}), not {} values \
                         of {width} components; {}",
                        acc.index(),
                        values.len() / width.max(1),
                        gltf_common::REEXPORT
                    )));
                }
                *slot = Some(values);
            }
        }
        let indices: Vec<u32> = match prim.indices() {
            Some(acc) => gltf_common::read_indices(&acc, buffers).map_err(err)?,
            None => {
                let n32 = u32::try_from(n)
                    .map_err(|_| err("more than 4 billion vertices".to_string()))?;
                (0..n32).collect()
            }
        };
        let mut triangles = triangulate(mode, &indices).map_err(|reason| {
            err(format!(
                "{reason} (indices: {}); {}",
                prim.indices()
                    .map_or("none".to_string(), |a| format!("accessor {}", a.index())),
                gltf_common::REEXPORT
            ))
        })?;
        // Check every index before any array is indexed with it.
        if let Some(entry) = indices.iter().position(|&i| i as usize >= n) {
            let index = indices[entry];
            let t = triangles
                .iter()
                .position(|tri| tri.contains(&index))
                .unwrap_or(0);
            return Err(invalid(
                MeshError::IndexOutOfRange {
                    name: name.to_string(),
                    triangle: triangle_base + t,
                    index,
                    count: n,
                },
                format!(
                    "primitive {p}, indices (accessor {}) entry {entry} is {index}, but POSITION \
                     (accessor {}) has {n} vertices",
                    prim.indices().map_or(0, |a| a.index()),
                    pos_acc.index()
                ),
            ));
        }
        // Zero-length or non-finite normals: recomputed from the faces.
        let normals = normals.map(|(mut ns, acc)| {
            let bad: Vec<usize> = (0..ns.len())
                .filter(|&v| !ns[v].is_finite() || ns[v].length_squared() < 1e-24)
                .collect();
            if !bad.is_empty() {
                let faces = Mesh::new(name, Vec::new(), triangles.clone());
                let computed = faces.vertex_normals_for(&positions);
                for &v in &bad {
                    ns[v] = computed[v];
                }
                warnings.push(format!(
                    "{label}: mesh '{name}', primitive {p}: {} of {n} normals in NORMAL \
                     (accessor {acc}) are zero-length or not finite; recomputed from the faces",
                    bad.len()
                ));
            }
            ns
        });
        triangle_base += triangles.len();
        vertex_base += n;
        if mirrored {
            for t in &mut triangles {
                t.swap(1, 2);
            }
        }
        let positions: Vec<Vec3> = positions.into_iter().map(|x| world.point(x)).collect();
        let normals = match (normals, normal_matrix) {
            (Some(ns), Some(nm)) => Some(
                ns.into_iter()
                    .map(|v| (nm * v).try_normalize().unwrap_or(Vec3::Y))
                    .collect(),
            ),
            _ => None,
        };
        parts.push(Part {
            positions,
            normals,
            uvs,
            triangles,
            maps,
        });
    }
    if parts.is_empty() {
        if let Some(mode) = first_mode {
            return Ok(Built::NonTriangle(mode_name(mode).to_string()));
        }
    }
    let maps = merge_maps(&parts);
    let merged = merge(name, parts).map_err(malformed)?;
    merged.validate().map_err(|source| {
        invalid(
            source,
            "the mesh placed in the scene, its node transforms applied".to_string(),
        )
    })?;
    Ok(Built::Triangles(Box::new(merged), maps, warnings))
}

/// The painted maps of merged primitives (in the order [`merge`] appends them); `None` when
/// no primitive has any.
fn merge_maps(parts: &[Part]) -> Option<VertexMaps> {
    if parts.iter().all(|p| p.maps.iter().all(Option::is_none)) {
        return None;
    }
    let total = parts.iter().map(|p| p.positions.len()).sum();
    let mut out = VertexMaps::new(total);
    let mut base = 0;
    for part in parts {
        let n = part.positions.len();
        for (kind, values) in MapKind::ALL.into_iter().zip(&part.maps) {
            if let Some(values) = values {
                out.get_mut(kind)[base..base + n].copy_from_slice(values);
            }
        }
        base += n;
    }
    Some(out)
}

/// Merges primitives into one mesh. Normals are kept if any primitive has them (the others get
/// computed ones); UVs only if every primitive has them.
fn merge(name: &str, parts: Vec<Part>) -> Result<Mesh, String> {
    let any_normals = parts.iter().any(|p| p.normals.is_some());
    let all_uvs = !parts.is_empty() && parts.iter().all(|p| p.uvs.is_some());
    let mut mesh = Mesh::new(name, Vec::new(), Vec::new());
    let mut normals = Vec::new();
    let mut uvs = Vec::new();
    for part in parts {
        let base = u32::try_from(mesh.positions.len())
            .map_err(|_| "more than 4 billion vertices".to_string())?;
        let sub = Mesh::new(name, part.positions, part.triangles);
        if any_normals {
            // Indices were checked against this part's positions by the caller.
            let n = part
                .normals
                .unwrap_or_else(|| sub.vertex_normals_for(&sub.positions));
            normals.extend(n);
        }
        if all_uvs {
            uvs.extend(part.uvs.unwrap_or_default());
        }
        mesh.positions.extend_from_slice(&sub.positions);
        for t in &sub.indices {
            let shifted = t.map(|i| i.checked_add(base));
            match shifted {
                [Some(a), Some(b), Some(c)] => mesh.indices.push([a, b, c]),
                _ => return Err("more than 4 billion vertices".into()),
            }
        }
    }
    if any_normals {
        mesh.normals = Some(normals);
    }
    if all_uvs {
        mesh.uvs = Some(uvs);
    }
    Ok(mesh)
}

/// Converts a primitive's index list to triangles.
///
/// Strips follow the glTF rule (triangle `i` is `i, i+1+i%2, i+2−i%2`) and drop the degenerate
/// triangles used to join strips; fans are `i+1, i+2, 0`.
fn triangulate(mode: Mode, idx: &[u32]) -> Result<Vec<[u32; 3]>, String> {
    match mode {
        Mode::Triangles => {
            if idx.len() % 3 != 0 {
                return Err(format!(
                    "{} indices for TRIANGLES, not a multiple of 3",
                    idx.len()
                ));
            }
            Ok(idx.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect())
        }
        Mode::TriangleStrip => Ok((0..idx.len().saturating_sub(2))
            .map(|i| {
                let odd = i % 2;
                [idx[i], idx[i + 1 + odd], idx[i + 2 - odd]]
            })
            .filter(|t| t[0] != t[1] && t[1] != t[2] && t[0] != t[2])
            .collect()),
        Mode::TriangleFan => Ok((0..idx.len().saturating_sub(2))
            .map(|i| [idx[i + 1], idx[i + 2], idx[0]])
            .collect()),
        other => Err(format!("{} is not a triangle mode", mode_name(other))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::gltf::name_list;

    #[test]
    fn strips_and_fans_become_counter_clockwise_triangles() {
        let strip = triangulate(Mode::TriangleStrip, &[0, 1, 2, 3, 4]).unwrap();
        assert_eq!(strip, vec![[0, 1, 2], [1, 3, 2], [2, 3, 4]]);
        // A degenerate joining triangle is dropped.
        let joined = triangulate(Mode::TriangleStrip, &[0, 1, 2, 2, 3]).unwrap();
        assert_eq!(joined, vec![[0, 1, 2]]);
        let fan = triangulate(Mode::TriangleFan, &[0, 1, 2, 3]).unwrap();
        assert_eq!(fan, vec![[1, 2, 0], [2, 3, 0]]);
        assert!(triangulate(Mode::Triangles, &[0, 1]).is_err());
    }

    #[test]
    fn name_list_quotes_names() {
        assert_eq!(name_list(&["a".into(), "b c".into()]), "'a', 'b c'");
        assert_eq!(name_list(&[]), "(none)");
    }
}
