//! Reading a [`Rig`] from a glTF file: nodes, skins, mesh instances and animations, each checked.

use std::path::Path;
use std::sync::Mutex;

use gltf::animation::{Interpolation as GltfInterpolation, Property as GltfProperty};
use gltf::scene::Transform;

use crate::body::anim::{self, Channel, Clip, Interpolation, Property};
use crate::body::parts;
use crate::body::skin::{self, Scratch, SkinData};
use crate::body::{AnimationInfo, BodyError, BodyPart, Ctx, Mat4, Node, Quat, Rig, Skin};
use crate::file::gltf::{self as gltf_common, GltfFile};
use crate::math::{Mat3, Vec3};
use crate::mesh::Mesh;

/// Reads the file and everything the rig needs.
pub(super) fn load(path: &Path, mesh_name: Option<&str>) -> Result<Rig, BodyError> {
    let file = gltf_common::open(path)?;
    let ctx = Ctx {
        path,
        label: path.file_name().map_or_else(
            || path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        ),
    };
    let mut warnings = Vec::new();
    let nodes = read_nodes(&ctx, &file.doc, &mut warnings)?;
    let order = node_order(&ctx, &nodes)?;
    let skins = read_skins(&ctx, &file)?;
    let instances = scene_instances(&file.doc, &nodes, &order);
    let mut parts = parts::read_parts(
        &ctx,
        &file,
        &nodes,
        &skins,
        &instances,
        mesh_name,
        &mut warnings,
    )?;
    let mut start = 0;
    for part in &mut parts {
        part.vertices = start..start + part.positions.len();
        start = part.vertices.end;
    }
    let (clips, animations) = read_animations(&ctx, &file, &nodes, &mut warnings)?;
    let hot = SkinData::build(&parts, &skins);
    let animated = moves_vertices(&nodes, &skins, &parts, &clips);
    let mut rig = Rig {
        path: path.to_path_buf(),
        nodes,
        order,
        skins,
        parts,
        animations,
        clips,
        rest_mesh: Mesh::default(),
        warnings,
        animated,
        hot,
        scratch: Mutex::new(Scratch::default()),
    };
    rig.rest_mesh = rest_mesh(&rig)?;
    Ok(rig)
}

/// Decomposes a node matrix into translation, rotation and scale; `false` when `T · R · S`
/// does not reproduce it (shear, or a singular matrix).
fn decompose(m: [[f32; 4]; 4]) -> (Vec3, Quat, Vec3, bool) {
    let mat = Mat4::from_cols_array_2d(&m);
    let linear = Mat3::from_mat4(mat);
    let translation = mat.w_axis.truncate();
    let det = linear.determinant();
    let sign = if det < 0.0 { -1.0 } else { 1.0 };
    let scale = Vec3::new(
        linear.x_axis.length() * sign,
        linear.y_axis.length(),
        linear.z_axis.length(),
    );
    let smallest = scale.abs().min_element();
    if smallest.is_nan() || smallest <= 1e-12 {
        return (translation, Quat::IDENTITY, scale, false);
    }
    let r = Mat3::from_cols(
        linear.x_axis / scale.x,
        linear.y_axis / scale.y,
        linear.z_axis / scale.z,
    );
    let rotation = anim::normalize_quat(Quat::from_mat3(&r));
    let back = Mat4::from_scale_rotation_translation(scale, rotation, translation);
    let size = mat
        .to_cols_array()
        .iter()
        .fold(1.0f32, |a, v| a.max(v.abs()));
    let error = (back - mat)
        .to_cols_array()
        .iter()
        .fold(0.0f32, |a, v| a.max(v.abs()));
    (translation, rotation, scale, error <= 1e-4 * size)
}

/// Every node with its rest transform, parent and default morph weights.
fn read_nodes(
    ctx: &Ctx,
    doc: &gltf::Document,
    warnings: &mut Vec<String>,
) -> Result<Vec<Node>, BodyError> {
    let mut nodes = Vec::with_capacity(doc.nodes().len());
    let mut unnormalised = Vec::new();
    for node in doc.nodes() {
        let i = node.index();
        let (translation, rotation, scale) = match node.transform() {
            Transform::Matrix { matrix } => {
                let (t, r, s, exact) = decompose(matrix);
                if !exact {
                    warnings.push(format!(
                        "{}: node {i}'s matrix is not a translation, rotation and scale (shear, or \
                         a zero scale); the nearest one is used",
                        ctx.label
                    ));
                }
                (t, r, s)
            }
            Transform::Decomposed {
                translation,
                rotation,
                scale,
            } => {
                let q = Quat::from_array(rotation);
                if (q.length() - 1.0).abs() > 1e-3 {
                    unnormalised.push(i);
                }
                (
                    Vec3::from(translation),
                    anim::normalize_quat(q),
                    Vec3::from(scale),
                )
            }
        };
        if !(translation.is_finite() && rotation.is_finite() && scale.is_finite()) {
            return Err(ctx.malformed(format!("node {i} has a non-finite transform")));
        }
        let mesh = node.mesh();
        let targets = mesh
            .as_ref()
            .and_then(|m| m.primitives().next())
            .map_or(0, |p| p.morph_targets().len());
        let given = node
            .weights()
            .or_else(|| mesh.as_ref().and_then(|m| m.weights()));
        let mut weights = given.map(<[f32]>::to_vec).unwrap_or_default();
        if given.is_some() && weights.len() != targets {
            warnings.push(format!(
                "{}: node {i} gives {} morph weights for {targets} morph targets; the missing ones \
                 are 0",
                ctx.label,
                weights.len()
            ));
        }
        weights.resize(targets, 0.0);
        if weights.iter().any(|w| !w.is_finite()) {
            return Err(ctx.malformed(format!("node {i} has non-finite morph weights")));
        }
        nodes.push(Node {
            name: node.name().map(str::to_string),
            parent: None,
            children: node.children().map(|c| c.index()).collect(),
            translation,
            rotation,
            scale,
            mesh: mesh.map(|m| m.index()),
            skin: node.skin().map(|s| s.index()),
            weights,
        });
    }
    if !unnormalised.is_empty() {
        warnings.push(format!(
            "{}: the rotations of nodes {unnormalised:?} are not unit quaternions; normalised",
            ctx.label
        ));
    }
    for p in 0..nodes.len() {
        for k in 0..nodes[p].children.len() {
            let c = nodes[p].children[k];
            let Some(child) = nodes.get_mut(c) else {
                return Err(ctx.malformed(format!("node {p} has a missing child {c}")));
            };
            if let Some(other) = child.parent {
                return Err(ctx.malformed(format!(
                    "node {c} is a child of both node {other} and node {p}; glTF nodes must form trees"
                )));
            }
            child.parent = Some(p);
        }
    }
    Ok(nodes)
}

/// Node indices with every parent before its children: the roots in index order, each followed
/// by its subtree depth-first. Nodes in a cycle are never reached, which is an error.
fn node_order(ctx: &Ctx, nodes: &[Node]) -> Result<Vec<usize>, BodyError> {
    let mut order = Vec::with_capacity(nodes.len());
    let mut stack: Vec<usize> = (0..nodes.len())
        .rev()
        .filter(|&i| nodes[i].parent.is_none())
        .collect();
    while let Some(n) = stack.pop() {
        order.push(n);
        stack.extend(nodes[n].children.iter().rev());
    }
    if order.len() != nodes.len() {
        let mut seen = vec![false; nodes.len()];
        for &n in &order {
            seen[n] = true;
        }
        let cyclic = seen.iter().position(|s| !s).unwrap_or(0);
        return Err(ctx.malformed(format!(
            "node {cyclic} is its own ancestor; glTF nodes must form trees"
        )));
    }
    Ok(order)
}

/// Every skin, with its inverse bind matrices checked.
fn read_skins(ctx: &Ctx, file: &GltfFile) -> Result<Vec<Skin>, BodyError> {
    let mut skins = Vec::new();
    for skin in file.doc.skins() {
        let i = skin.index();
        let joints: Vec<usize> = skin.joints().map(|n| n.index()).collect();
        if joints.is_empty() {
            return Err(ctx.malformed(format!("skin {i} has no joints")));
        }
        if joints.len() > usize::from(u16::MAX) + 1 {
            return Err(ctx.malformed(format!("skin {i} has more than 65536 joints")));
        }
        let inverse_bind = match skin.inverse_bind_matrices() {
            None => vec![Mat4::IDENTITY; joints.len()],
            Some(acc) => {
                let m = gltf_common::read_mat4(&acc, &file.buffers, "inverseBindMatrices")
                    .map_err(|e| ctx.malformed(format!("skin {i}: {e}")))?;
                if m.len() < joints.len() {
                    return Err(ctx.malformed(format!(
                        "skin {i} has {} joints but only {} inverse bind matrices",
                        joints.len(),
                        m.len()
                    )));
                }
                if m.iter().flatten().any(|v| !v.is_finite()) {
                    return Err(
                        ctx.malformed(format!("skin {i} has a non-finite inverse bind matrix"))
                    );
                }
                m[..joints.len()]
                    .iter()
                    .map(Mat4::from_cols_array)
                    .collect()
            }
        };
        skins.push(Skin {
            name: skin.name().map(str::to_string),
            joints,
            inverse_bind,
            skeleton: skin.skeleton().map(|n| n.index()),
        });
    }
    Ok(skins)
}

/// The nodes with a mesh, in the scene's depth-first order: the default scene, else the first,
/// else every root node.
fn scene_instances(doc: &gltf::Document, nodes: &[Node], order: &[usize]) -> Vec<usize> {
    let scene = doc.default_scene().or_else(|| doc.scenes().next());
    let visit: Vec<usize> = match scene {
        Some(scene) => {
            // The hierarchy is a checked forest, so this terminates.
            let mut out = Vec::new();
            let mut stack: Vec<usize> = scene.nodes().map(|n| n.index()).collect();
            stack.reverse();
            while let Some(n) = stack.pop() {
                let Some(node) = nodes.get(n) else { continue };
                out.push(n);
                stack.extend(node.children.iter().rev());
            }
            out
        }
        None => order.to_vec(),
    };
    visit
        .into_iter()
        .filter(|&n| nodes.get(n).is_some_and(|n| n.mesh.is_some()))
        .collect()
}

/// Every animation's channels, with their samplers checked.
fn read_animations(
    ctx: &Ctx,
    file: &GltfFile,
    nodes: &[Node],
    warnings: &mut Vec<String>,
) -> Result<(Vec<Clip>, Vec<AnimationInfo>), BodyError> {
    let mut clips = Vec::new();
    let mut infos = Vec::new();
    for animation in file.doc.animations() {
        let a = animation.index();
        let label = match animation.name() {
            Some(n) => format!("#{a} '{n}'"),
            None => format!("#{a}"),
        };
        let mut clip = Clip::default();
        for channel in animation.channels() {
            let sampler = channel.sampler();
            let bad = |reason: String| BodyError::BadSampler {
                path: ctx.path(),
                animation: label.clone(),
                sampler: sampler.index(),
                reason,
            };
            let node = channel.target().node().index();
            let (property, width) = match channel.target().property() {
                GltfProperty::Translation => (Property::Translation, 3),
                GltfProperty::Rotation => (Property::Rotation, 4),
                GltfProperty::Scale => (Property::Scale, 3),
                GltfProperty::MorphTargetWeights => (
                    Property::Weights,
                    nodes.get(node).map_or(0, |n| n.weights.len()),
                ),
            };
            if width == 0 {
                warnings.push(format!(
                    "{}: animation {label} animates the morph weights of node {node}, which has \
                     no morph targets; that channel is ignored",
                    ctx.label
                ));
                continue;
            }
            let interpolation = match sampler.interpolation() {
                GltfInterpolation::Step => Interpolation::Step,
                GltfInterpolation::Linear => Interpolation::Linear,
                GltfInterpolation::CubicSpline => Interpolation::CubicSpline,
            };
            let input = sampler.input();
            if input.data_type() != gltf::accessor::DataType::F32
                || input.dimensions() != gltf::accessor::Dimensions::Scalar
            {
                return Err(bad(format!(
                    "its input (accessor {}) must be SCALAR float times",
                    input.index()
                )));
            }
            let (times, _) = gltf_common::read_f32(&input, &file.buffers).map_err(&bad)?;
            let times: Vec<f64> = times.into_iter().map(f64::from).collect();
            if times.is_empty() {
                return Err(bad("it has no keys".into()));
            }
            if let Some(k) = times.iter().position(|t| !t.is_finite()) {
                return Err(bad(format!("key time {k} is not finite")));
            }
            if let Some(k) = times.windows(2).position(|w| w[1] <= w[0]) {
                return Err(bad(format!(
                    "key times must be strictly increasing, but key {} ({} s) follows key {k} ({} s)",
                    k + 1,
                    times[k + 1],
                    times[k]
                )));
            }
            let output = sampler.output();
            let values = match property {
                Property::Translation | Property::Scale => {
                    gltf_common::read_vec3(&output, &file.buffers, "animation output")
                        .map(|v| v.iter().flat_map(|x| x.to_array()).collect())
                }
                Property::Rotation => gltf_common::read_float_or_normalized(
                    &output,
                    &file.buffers,
                    4,
                    "rotation output",
                ),
                Property::Weights => gltf_common::read_float_or_normalized(
                    &output,
                    &file.buffers,
                    1,
                    "weights output",
                ),
            }
            .map_err(&bad)?;
            let per_key = if interpolation == Interpolation::CubicSpline {
                3
            } else {
                1
            };
            let expected = times.len() * per_key * width;
            if values.len() != expected {
                return Err(bad(format!(
                    "{} keys with {interpolation:?} interpolation need {expected} output values, \
                     but the output has {}",
                    times.len(),
                    values.len()
                )));
            }
            if values.iter().any(|v| !v.is_finite()) {
                return Err(bad("an output value is not finite".into()));
            }
            clip.channels.push(Channel {
                node,
                property,
                interpolation,
                times,
                values,
                width,
            });
        }
        let start = clip
            .channels
            .iter()
            .filter_map(|c| c.times.first())
            .copied();
        let end = clip.channels.iter().filter_map(|c| c.times.last()).copied();
        let (start_s, end_s) = if clip.channels.is_empty() {
            (0.0, 0.0)
        } else {
            (
                start.fold(f64::INFINITY, f64::min),
                end.fold(f64::NEG_INFINITY, f64::max),
            )
        };
        infos.push(AnimationInfo {
            name: animation.name().map(str::to_string),
            start_s,
            end_s,
            channels: clip.channels.len(),
        });
        clips.push(clip);
    }
    Ok((clips, infos))
}

/// Whether some channel moves a vertex (see [`Rig::is_animated`]).
fn moves_vertices(nodes: &[Node], skins: &[Skin], parts: &[BodyPart], clips: &[Clip]) -> bool {
    // A node's transform matters when it is, or is an ancestor of, a used joint or the node of
    // a rigid part.
    let mut matters = vec![false; nodes.len()];
    let mut mark = |mut n: usize| {
        let mut guard = 0;
        while let Some(flag) = matters.get_mut(n) {
            if *flag || guard > nodes.len() {
                break;
            }
            *flag = true;
            guard += 1;
            match nodes[n].parent {
                Some(p) => n = p,
                None => break,
            }
        }
    };
    let mut morphed = vec![false; nodes.len()];
    for part in parts {
        match part.skin.and_then(|s| skins.get(s)) {
            Some(skin) => skin.joints.iter().for_each(|&j| mark(j)),
            None => mark(part.node),
        }
        if !part.morph_targets.is_empty() {
            if let Some(m) = morphed.get_mut(part.node) {
                *m = true;
            }
        }
    }
    clips
        .iter()
        .flat_map(|c| &c.channels)
        .any(|ch| match ch.property {
            Property::Weights => morphed.get(ch.node).copied().unwrap_or(false),
            _ => matters.get(ch.node).copied().unwrap_or(false),
        })
}

/// The world-space body at the rest pose, its triangles reversed where the rest transform
/// mirrors, validated.
fn rest_mesh(rig: &Rig) -> Result<Mesh, BodyError> {
    let pose = rig.rest_pose();
    let mut globals = Vec::new();
    skin::globals(&rig.nodes, &rig.order, &pose, &mut globals);
    let mut positions = Vec::new();
    let mut joints = Vec::new();
    rig.hot
        .run(&rig.parts, &globals, &pose, &mut joints, &mut positions);
    let mut indices = Vec::new();
    let mut uvs = Some(Vec::new());
    for (i, part) in rig.parts.iter().enumerate() {
        let mirrored = rig.hot.part_transform(i, &globals).determinant() < 0.0;
        let base = u32::try_from(part.vertices.end)
            .map(|_| part.vertices.start as u32)
            .map_err(|_| BodyError::Malformed {
                path: rig.path.clone(),
                reason: "the body has more than 4 billion vertices".into(),
            })?;
        indices.extend(part.indices.iter().map(|t| {
            let [a, b, c] = t.map(|v| v + base);
            if mirrored {
                [a, c, b]
            } else {
                [a, b, c]
            }
        }));
        match (&part.uvs, uvs.as_mut()) {
            (Some(u), Some(all)) => all.extend_from_slice(u),
            _ => uvs = None,
        }
    }
    let name = match rig.parts.as_slice() {
        [one] => one.name.clone(),
        _ => rig
            .path
            .file_stem()
            .map_or_else(|| "body".to_string(), |s| s.to_string_lossy().into_owned()),
    };
    let mut mesh = Mesh::new(name, positions, indices);
    mesh.uvs = uvs;
    mesh.validate().map_err(|source| BodyError::InvalidMesh {
        path: rig.path.clone(),
        source,
    })?;
    Ok(mesh)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matrices_decompose_into_trs() {
        let want = Mat4::from_scale_rotation_translation(
            Vec3::new(2.0, 0.5, 1.5),
            Quat::from_rotation_y(0.7) * Quat::from_rotation_x(-0.3),
            Vec3::new(1.0, -2.0, 3.0),
        );
        let (t, r, s, exact) = decompose(want.to_cols_array_2d());
        assert!(exact);
        let back = Mat4::from_scale_rotation_translation(s, r, t);
        assert!(back.abs_diff_eq(want, 1e-5), "{back:?}");
        // A mirror keeps its sign in the scale.
        let mirror = Mat4::from_scale(Vec3::new(-1.0, 1.0, 1.0));
        let (_, r, s, exact) = decompose(mirror.to_cols_array_2d());
        assert!(exact);
        assert!(Mat4::from_scale_rotation_translation(s, r, Vec3::ZERO).abs_diff_eq(mirror, 1e-6));
        // Shear and a zero scale are approximated.
        let mut shear = Mat4::IDENTITY.to_cols_array_2d();
        shear[1][0] = 0.5;
        assert!(!decompose(shear).3);
        assert!(!decompose(Mat4::from_scale(Vec3::new(1.0, 0.0, 1.0)).to_cols_array_2d()).3);
    }
}
