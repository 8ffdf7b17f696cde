//! A walking mannequin made by Drape's own code: the mannequin of [`crate::mesh::shapes`], skinned to
//! seven joints and walking in place, for the tests and benchmarks that need an animated
//! character whose limbs leave room for cloth.
//!
//! # Why
//!
//! The real test character, CesiumMan, presses its hands against its thighs and its elbows
//! against its torso in every step of its walk (a gap of 46 µm): no cloth of any thickness fits
//! there, and a skirt caught between a swinging hand and a thigh is squeezed until its edges
//! tear (docs/benchmarks.md). Real animations do that, and Drape has to survive it, but a
//! benchmark of the solver's speed on an animated body, and the checks of a garment's quality,
//! need a body whose parts stay apart. This one keeps its arms 25° out from its sides (its hands
//! pass about 0.2 m outside its thighs) and swings them and its legs in a walk.
//!
//! # Rig
//!
//! Seven joints, one per [`crate::mesh::shapes::MannequinPart`] (in that order, so part `j` follows
//! joint `j`): the pelvis (the root: torso, neck and head), each hip (the thigh), each knee
//! (shin, calf and foot) and each shoulder (the whole arm). The skin weights come from the
//! parts' distances:
//!
//! ```text
//! w_j ∝ exp(−(d_j − d_min) / σ),   σ = SKIN_BLEND_M
//! ```
//!
//! over the parts of the vertex's own side (the four largest kept, normalised), so a vertex
//! on one part follows its joint and the seams between parts (hip, knee, shoulder) blend over a
//! few centimetres. The thighs never share a vertex: each side only sees its own limbs.
//!
//! # Gait
//!
//! With `s = 2π t / WALK_PERIOD_S` ([`steady_rotations`]; a bake's pre-roll blends the body
//! from its rest pose into the first of these poses):
//!
//! ```text
//! hip flexion (left)      = HIP_SWING · sin s            (right: −sin s)
//! knee flexion (left)     = KNEE_FLEX · ((1 + cos s)/2)²  (right: ((1 − cos s)/2)²)
//! shoulder swing (left)   = −ARM_SWING · sin s            (right: +sin s)
//! ```
//!
//! Flexion swings the thigh forward (+Z), the shin backward relative to it, and a swing the arm
//! forward; all turn about the X axis through the joint. The knee bends most when its hip swings
//! forward through the vertical (mid-swing), as in a human walk. The pelvis stays put (a walk
//! on a treadmill): the cloth only sees the motion relative to the body.

use std::f32::consts::TAU;

use crate::body::Quat;
use crate::io::gltf_export::{write_skinned_glb, GltfExportError, SkinJoint, SkinnedMesh};
use crate::math::{Real, Vec3};
use crate::mesh::shapes::{
    mannequin_hip, mannequin_knee, mannequin_part_distances, mannequin_shoulder,
    mannequin_with_cell, MANNEQUIN_PARTS,
};
use crate::mesh::Mesh;

/// One step cycle (left foot forward, back, forward again) (s).
pub const WALK_PERIOD_S: f32 = 1.2;
/// Largest hip flexion, forward and back (degrees).
pub const HIP_SWING_DEG: f32 = 15.0;
/// Largest knee flexion (degrees).
pub const KNEE_FLEX_DEG: f32 = 40.0;
/// Largest arm swing, forward and back (degrees).
pub const ARM_SWING_DEG: f32 = 15.0;
/// Grid cell of the walking mannequin's mesh (m): 7,734 vertices and 15,464 triangles, about
/// twice CesiumMan's. (The standard mannequin's 2 cm cells give 35,576 triangles, and a bake of
/// the walk then spends half its time posing and refitting the body.)
pub const WALK_CELL_M: Real = 0.03;
/// Width of the blend between parts in the skin weights (m).
pub const SKIN_BLEND_M: Real = 0.01;

/// Joints of the rig.
pub const WALK_JOINT_COUNT: usize = MANNEQUIN_PARTS;

/// One joint of the rig: its name, its parent and its position at the rest pose (m).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WalkJoint {
    /// Node name in the exported glTF.
    pub name: &'static str,
    /// The parent joint, `None` for the root.
    pub parent: Option<usize>,
    /// Where the joint is at the rest pose (m, world space).
    pub origin_m: Vec3,
}

/// The rig's joints, in the order of [`crate::mesh::shapes::MannequinPart`]; every parent before its
/// children.
pub const WALK_JOINTS: [WalkJoint; WALK_JOINT_COUNT] = [
    WalkJoint {
        name: "pelvis",
        parent: None,
        origin_m: Vec3::new(0.0, 0.92, 0.0),
    },
    WalkJoint {
        name: "hip_left",
        parent: Some(0),
        origin_m: mannequin_hip(1.0),
    },
    WalkJoint {
        name: "knee_left",
        parent: Some(1),
        origin_m: mannequin_knee(1.0),
    },
    WalkJoint {
        name: "hip_right",
        parent: Some(0),
        origin_m: mannequin_hip(-1.0),
    },
    WalkJoint {
        name: "knee_right",
        parent: Some(3),
        origin_m: mannequin_knee(-1.0),
    },
    WalkJoint {
        name: "shoulder_left",
        parent: Some(0),
        origin_m: mannequin_shoulder(1.0),
    },
    WalkJoint {
        name: "shoulder_right",
        parent: Some(0),
        origin_m: mannequin_shoulder(-1.0),
    },
];

/// The walking mannequin: its rest mesh and skin weights.
#[derive(Clone, Debug)]
pub struct WalkingMannequin {
    /// The mesh at the rest pose (the mannequin on [`WALK_CELL_M`] cells, named
    /// `"walking mannequin"`).
    pub mesh: Mesh,
    /// Per vertex, four joint indices into [`WALK_JOINTS`] …
    pub joints: Vec<[u16; 4]>,
    /// … and their weights (sum 1, largest first).
    pub weights: Vec<[f32; 4]>,
}

impl Default for WalkingMannequin {
    fn default() -> Self {
        Self::new()
    }
}

impl WalkingMannequin {
    /// The mannequin polygonised on [`WALK_CELL_M`] cells ([`mannequin_with_cell`]) with its
    /// skin weights.
    ///
    /// Its hands may self-intersect a little at this resolution ([`mannequin_with_cell`]); they
    /// stay far from any garment's path.
    pub fn new() -> Self {
        Self::with_cell(WALK_CELL_M)
    }

    /// The mannequin polygonised on cells of `cell_m` (m) with its skin weights.
    pub fn with_cell(cell_m: Real) -> Self {
        let mut mesh = mannequin_with_cell(cell_m);
        mesh.name = "walking mannequin".into();
        let (joints, weights) = mesh.positions.iter().map(|&p| skin_weights(p)).unzip();
        Self {
            mesh,
            joints,
            weights,
        }
    }

    /// Writes the mesh's vertices with the joints at `local` (rotations relative to their
    /// parents) into `out`: linear blend skinning.
    pub fn skin(&self, local: &[Quat; WALK_JOINT_COUNT], out: &mut Vec<Vec3>) {
        let world = world_transforms(local);
        out.clear();
        out.extend(
            (self.mesh.positions.iter())
                .zip(self.joints.iter().zip(&self.weights))
                .map(|(&p, (j, w))| {
                    let mut q = Vec3::ZERO;
                    for k in 0..4 {
                        if w[k] > 0.0 {
                            let (rotation, at) = world[j[k] as usize];
                            let origin = WALK_JOINTS[j[k] as usize].origin_m;
                            q += (rotation * (p - origin) + at) * w[k];
                        }
                    }
                    q
                }),
        );
    }
}

/// Key frames of the steady walk per cycle in [`write_walking_mannequin`]'s animation (plus
/// one closing the loop).
pub const WALK_KEYS_PER_CYCLE: usize = 48;

/// Name of the walk animation in the glTF file.
pub const WALK_ANIMATION: &str = "walk";

/// Writes the walking mannequin as a skinned glTF binary (`.glb`) at `path`: the rest mesh, the
/// seven joints and one animation, the steady walk's cycle ([`steady_rotations`]) at
/// [`WALK_KEYS_PER_CYCLE`] keys plus the closing one, LINEAR. The file loops seamlessly.
pub fn write_walking_mannequin(
    path: &std::path::Path,
    body: &WalkingMannequin,
) -> Result<(), GltfExportError> {
    let joints: Vec<SkinJoint> = (WALK_JOINTS.iter())
        .map(|j| SkinJoint {
            name: j.name,
            parent: j.parent,
            origin_m: j.origin_m,
        })
        .collect();
    let times_s: Vec<f32> = (0..=WALK_KEYS_PER_CYCLE)
        .map(|k| WALK_PERIOD_S * k as f32 / WALK_KEYS_PER_CYCLE as f32)
        .collect();
    let rotations: Vec<Vec<Quat>> = (times_s.iter())
        .map(|&t| steady_rotations(t).to_vec())
        .collect();
    write_skinned_glb(
        path,
        &SkinnedMesh {
            mesh: &body.mesh,
            joints: &joints,
            vertex_joints: &body.joints,
            vertex_weights: &body.weights,
            animation: WALK_ANIMATION,
            times_s: &times_s,
            rotations: &rotations,
        },
    )
}

/// A vertex's four joints and weights ([`SKIN_BLEND_M`]; see the module docs); influences under
/// a thousandth of the largest are left out, and unused slots hold joint 0 with weight 0.
fn skin_weights(p: Vec3) -> ([u16; 4], [f32; 4]) {
    let d = mannequin_part_distances(p);
    let nearest = d.iter().copied().fold(Real::INFINITY, Real::min);
    let mut ranked: Vec<(f32, u16)> = (d.iter().enumerate())
        .filter(|(_, d)| d.is_finite())
        .map(|(j, &dj)| ((-(dj - nearest) / SKIN_BLEND_M).exp(), j as u16))
        .collect();
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    ranked.truncate(4);
    // Influences under a thousandth of the largest are dropped (glTF readers warn of joints
    // listed with a zero weight).
    let largest = ranked.first().map_or(1.0, |r| r.0);
    ranked.retain(|r| r.0 >= 1.0e-3 * largest);
    let total: f32 = ranked.iter().map(|r| r.0).sum();
    let mut joints = [0u16; 4];
    let mut weights = [0.0f32; 4];
    for (k, &(w, j)) in ranked.iter().enumerate() {
        joints[k] = j;
        weights[k] = w / total;
    }
    (joints, weights)
}

/// Each joint's rotation relative to its parent at time `t_s` (s) of the walk (module docs): the
/// cycle the glTF animation holds ([`write_walking_mannequin`]).
pub fn steady_rotations(t_s: f32) -> [Quat; WALK_JOINT_COUNT] {
    let s = TAU * t_s / WALK_PERIOD_S;
    let (sin, cos) = s.sin_cos();
    let deg = |a: f32| a.to_radians();
    let flex = |a: f32| Quat::from_rotation_x(-a);
    let hip_l = deg(HIP_SWING_DEG) * sin;
    let knee_l = deg(KNEE_FLEX_DEG) * (0.5 * (1.0 + cos)).powi(2);
    let knee_r = deg(KNEE_FLEX_DEG) * (0.5 * (1.0 - cos)).powi(2);
    let arm_l = -deg(ARM_SWING_DEG) * sin;
    [
        Quat::IDENTITY,
        flex(hip_l),
        Quat::from_rotation_x(knee_l),
        flex(-hip_l),
        Quat::from_rotation_x(knee_r),
        flex(arm_l),
        flex(-arm_l),
    ]
}

/// Each joint's rotation and position in world space, from the rotations relative to the
/// parents ([`steady_rotations`]).
fn world_transforms(local: &[Quat; WALK_JOINT_COUNT]) -> [(Quat, Vec3); WALK_JOINT_COUNT] {
    let mut world = [(Quat::IDENTITY, Vec3::ZERO); WALK_JOINT_COUNT];
    for (j, joint) in WALK_JOINTS.iter().enumerate() {
        world[j] = match joint.parent {
            None => (local[j], joint.origin_m),
            Some(parent) => {
                let (rotation, at) = world[parent];
                let offset = joint.origin_m - WALK_JOINTS[parent].origin_m;
                (rotation * local[j], at + rotation * offset)
            }
        };
    }
    world
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The joint a vertex follows most.
    fn main_joint(w: &WalkingMannequin, v: usize) -> usize {
        w.joints[v][0] as usize
    }

    #[test]
    fn weights_are_normalised_and_each_part_follows_its_joint() {
        let w = WalkingMannequin::new();
        assert_eq!(w.joints.len(), w.mesh.positions.len());
        for (v, (js, ws)) in w.joints.iter().zip(&w.weights).enumerate() {
            let sum: f32 = ws.iter().sum();
            assert!((sum - 1.0).abs() < 1.0e-5, "vertex {v}: weights {ws:?}");
            assert!(
                ws.windows(2).all(|p| p[0] >= p[1]),
                "vertex {v}: {ws:?} not sorted"
            );
            assert!(js.iter().all(|&j| (j as usize) < WALK_JOINT_COUNT));
            for k in 0..4 {
                assert!(
                    ws[k] > 0.0 || js[k] == 0,
                    "vertex {v}: joint {} with no weight",
                    js[k]
                );
            }
        }
        // Far from every seam a vertex follows one joint alone: the top of the head the
        // pelvis, the feet their knees, the hands their shoulders.
        let nearest = |p: Vec3| {
            (0..w.mesh.positions.len())
                .min_by(|&a, &b| {
                    (w.mesh.positions[a].distance(p)).total_cmp(&w.mesh.positions[b].distance(p))
                })
                .unwrap()
        };
        for (p, joint) in [
            (Vec3::new(0.0, 1.7, 0.0), 0),
            (Vec3::new(0.135, 0.0, 0.1), 2),
            (Vec3::new(-0.135, 0.0, 0.1), 4),
            (Vec3::new(0.48, 0.65, 0.0), 5),
            (Vec3::new(-0.48, 0.65, 0.0), 6),
        ] {
            let v = nearest(p);
            assert_eq!(main_joint(&w, v), joint, "vertex near {p:?}");
            assert!(
                w.weights[v][0] > 0.999,
                "vertex near {p:?}: {:?}",
                w.weights[v]
            );
        }
        // The thighs never share a vertex.
        for js in &w.joints {
            let has = |j: u16| js.contains(&j);
            assert!(!((has(1) || has(2)) && (has(3) || has(4))), "{js:?}");
        }
    }

    #[test]
    fn bind_pose_is_the_rest_mesh_and_limbs_move_by_their_joints() {
        let w = WalkingMannequin::new();
        let mut out = Vec::new();
        w.skin(&[Quat::IDENTITY; WALK_JOINT_COUNT], &mut out);
        let rest_error = (out.iter().zip(&w.mesh.positions))
            .map(|(a, b)| a.distance(*b))
            .fold(0.0, Real::max);
        assert!(rest_error < 1.0e-6, "{rest_error}");
        // A quarter cycle into the steady walk the left hip is flexed fully: a vertex on the
        // left foot, rigidly on the knee joint, sits where the two rotations put it.
        let t = 0.25 * WALK_PERIOD_S;
        w.skin(&steady_rotations(t), &mut out);
        let foot = (0..w.mesh.positions.len())
            .filter(|&v| w.joints[v][0] == 2 && w.weights[v][0] == 1.0)
            .min_by(|&a, &b| w.mesh.positions[a].y.total_cmp(&w.mesh.positions[b].y))
            .unwrap();
        let (hip, knee) = (WALK_JOINTS[1].origin_m, WALK_JOINTS[2].origin_m);
        let hip_angle = HIP_SWING_DEG.to_radians();
        let knee_angle = KNEE_FLEX_DEG.to_radians() * 0.25;
        let thigh = Quat::from_rotation_x(-hip_angle);
        let expected = hip
            + thigh * (knee - hip)
            + thigh * (Quat::from_rotation_x(knee_angle) * (w.mesh.positions[foot] - knee));
        assert!(
            out[foot].distance(expected) < 1.0e-5,
            "{:?} vs {expected:?}",
            out[foot]
        );
        // The left foot swings forward then, the right one back.
        assert!(out[foot].z > w.mesh.positions[foot].z + 0.05);
    }

    #[test]
    fn hands_stay_clear_of_the_body_through_the_walk() {
        let w = WalkingMannequin::new();
        let arm = |v: usize| matches!(main_joint(&w, v), 5 | 6) && w.weights[v][0] > 0.99;
        let hands: Vec<usize> = (0..w.mesh.positions.len())
            .filter(|&v| arm(v) && w.mesh.positions[v].y < 0.9)
            .collect();
        let others: Vec<usize> = (0..w.mesh.positions.len())
            .filter(|&v| !matches!(main_joint(&w, v), 5 | 6))
            .collect();
        assert!(hands.len() > 100);
        let mut out = Vec::new();
        let mut gap = Real::INFINITY;
        for k in 0..24 {
            w.skin(&steady_rotations(WALK_PERIOD_S * k as f32 / 24.0), &mut out);
            for &h in &hands {
                for &o in &others {
                    gap = gap.min(out[h].distance(out[o]));
                }
            }
        }
        // CesiumMan's hands come within 46 µm of its thighs.
        assert!(gap > 0.15, "the hands come within {gap} m of the body");
    }
}
