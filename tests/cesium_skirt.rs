//! Issue 3's end-to-end scene: a skirt fitted (by Drape's own code) to the real, skinned and
//! animated CesiumMan (`../shared/data/khronos/CesiumMan.glb`, see its LICENSES.md), baked
//! through two walk cycles and exported with the body's skin and animation.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use drape::bake::{bake, BakeOptions, BakeResult, LoadedScene};
use drape::body::Playback;
use drape::collide::BodyCollider;
use drape::math::Real;
use drape::scene::demo::{fitted_skirt_params, write_fitted_skirt};

fn cesium_man() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/khronos/CesiumMan.glb")
}

/// The waistband height used for CesiumMan (m, rest pose): on its hips, where the skin moves
/// most rigidly (see the note on `FITTED_SKIRT_PIN_STRIDE`).
const WAIST_M: Real = 0.76;

/// Writes the scene into `dir` and bakes two walk cycles (4 s at 24 fps).
fn bake_two_cycles(dir: &Path) -> (LoadedScene, BakeResult) {
    let scene = write_fitted_skirt(dir, &cesium_man(), &fitted_skirt_params(), Some(WAIST_M))
        .expect("scene written");
    let mut loaded = LoadedScene::load(&scene).expect("scene loads");
    // The timeline defaults to the animation's range: a 2 s loop at 24 fps is 48 frames
    // (t = 0 … 47/24 s; t = 2 s is the first pose again).
    assert_eq!(loaded.frame_count(), 48);
    loaded.scene.timeline.end_frame = Some(loaded.scene.timeline.start_frame + 96);
    let result = bake(&loaded, &BakeOptions::default()).expect("the bake completes");
    let s = &result.stats;
    println!(
        "CesiumMan skirt: {} proxy vertices, {:.1} ms/frame (stages, ms over the bake: {:?}), \
         max stretch {:.3}, penetrating vertex-frames {}, rollbacks {} (settle {})",
        s.proxy_vertices,
        s.sim_ms_per_frame,
        s.stage_ms,
        s.summary.max_stretch,
        s.per_frame
            .iter()
            .map(|f| f.body_penetrations)
            .sum::<usize>(),
        s.summary.rollbacks,
        s.settle_rollbacks,
    );
    (loaded, result)
}

/// Pins follow the skinned body with no lag, the bake stays finite, and the export carries the
/// body's skin and animation in sync with the garment's morph animation.
#[test]
fn skirt_on_walking_cesium_man_tracks_pins_and_exports() {
    let dir = tempfile::tempdir().unwrap();
    let (loaded, result) = bake_two_cycles(dir.path());
    assert_eq!(result.frames.len(), 97);
    assert_eq!(result.body_poses.len(), 97);
    for f in &result.stats.per_frame {
        assert_eq!(f.non_finite, 0, "frame {}", f.frame);
    }
    assert_eq!(result.stats.preroll_frames, 24);

    // Pinned vertices sit on their body-bound targets at every frame: re-derive the targets
    // from the rig at each frame's animation time (frame k is t = k/24 s, looping).
    let body = loaded.body.as_ref().unwrap();
    let rig = &body.rig;
    let rest = BodyCollider::new(rig.rest_mesh()).unwrap();
    let mut posed_collider = BodyCollider::new(rig.rest_mesh()).unwrap();
    let garment = &loaded.garments[0];
    let pinned: Vec<usize> = (0..garment.render.positions.len())
        .filter(|&i| {
            garment
                .pinned
                .contains(&garment.welded.original_to_welded[i])
        })
        .collect();
    assert_eq!(pinned.len(), 6);
    let anchors: Vec<_> = pinned
        .iter()
        .map(|&i| rest.anchor(garment.render.positions[i]))
        .collect();
    let mut posed = Vec::new();
    let mut worst: Real = 0.0;
    for (k, frame) in result.frames.iter().enumerate() {
        let pose = rig.sample(body.animation.unwrap(), k as f64 / 24.0, Playback::Loop);
        rig.skin(&pose, &mut posed);
        posed_collider.set_pose(&posed).unwrap();
        for (&i, a) in pinned.iter().zip(&anchors) {
            worst = worst.max(frame[i].distance(a.evaluate(&posed_collider)));
            // The pins sit where the body leaves them room (`demo::write_fitted_skirt` picks
            // the pin set whose targets stay clear over the walk): CesiumMan's forearm, which
            // brushes its hip, never swallows one.
            let depth = posed_collider.penetration_depth(frame[i]);
            assert!(
                depth == 0.0,
                "frame {k}: pinned vertex {i} is {depth} m inside the body"
            );
        }
    }
    assert!(worst < 1e-4, "a pin is {worst} m off its body-bound target");

    // Export through the CLI's own path, validate, and inspect.
    let out = dir.path().join("cesium.glb");
    common::write_animated_bake(&out, &result, rig);
    let report = common::validate_gltf(&out);
    assert_eq!(report.errors, 0, "{:?}", report.messages);
    let inspect = Command::new(env!("CARGO_BIN_EXE_drape"))
        .arg("inspect")
        .arg(&out)
        .output()
        .unwrap();
    assert!(inspect.status.success());
    let text = String::from_utf8_lossy(&inspect.stdout);
    println!("{text}");
    let info = drape::io::inspect::inspect(&out).unwrap();
    assert_eq!(info.skins.len(), 1);
    assert_eq!(info.skins[0].joints, 19);
    let anim = &info.animations[0];
    let body_keys = anim.transforms.key_range_s.unwrap();
    let garment_keys = anim.morph_weights.key_range_s.unwrap();
    assert_eq!(body_keys, garment_keys);
    assert!((garment_keys.1 - 4.0).abs() < 1e-4, "{garment_keys:?}");
    assert!(text.contains("19 joints"), "{text}");
}

/// Issue 3's acceptance figures for this scene, as issue 35 restates them for pinches: no
/// vertex inside the body where it leaves room, no rollback after the settle, and a largest
/// stretch of 2 % on every frame without a pinched vertex and again within 3 frames after each
/// pinch. They do not hold yet. Measured (stop 47, 20 substeps × 1 iteration, the pinch
/// handling of `docs/solver.md`): 0 rollbacks, 12 pinched frames, the largest stretch 33 % (at
/// the pinches; 103 % before the pinch handling), 1 vertex inside the body where it leaves room
/// on 5 frames (≤ 1.7 mm), and 41 frames without a pinch above 2 % (2–9 %: the hand sweeping
/// the skirt before it pinches, the waistband between pins on the moving hips, the hem's
/// swing). At 4 iterations 38 frames. Run it with `cargo test --release --test cesium_skirt --
/// --ignored`.
#[test]
#[ignore = "open: 2 % stretch on the frames without a pinch (issue 35 note)"]
fn skirt_on_walking_cesium_man_meets_issue_3_figures() {
    let dir = tempfile::tempdir().unwrap();
    let (_, result) = bake_two_cycles(dir.path());
    let frames = &result.stats.per_frame;
    for (k, f) in frames.iter().enumerate() {
        assert_eq!(
            f.body_penetrations, 0,
            "frame {}: vertices inside the body where it leaves room",
            f.frame
        );
        assert_eq!(
            f.rollbacks, 0,
            "frame {}: rollbacks after the settle",
            f.frame
        );
        let pinched_lately = frames[k.saturating_sub(3)..=k]
            .iter()
            .any(|f| f.pinched_vertices > 0);
        assert!(
            pinched_lately || f.max_stretch <= 0.02,
            "frame {}: stretch {} with no pinch in the last 3 frames",
            f.frame,
            f.max_stretch
        );
    }
}

/// Why the figures above do not hold: CesiumMan's hands touch its thighs. Over one walk cycle
/// (48 poses), the smallest distance from a forearm or hand vertex below the hips (under
/// 0.75 m) to the rest of the body (torso and legs, arms left out) is under 1 mm, so no cloth
/// of any thickness fits between them there, and a skirt that covers the thigh at that height
/// is pinched. Arm joints are found by the skeleton's geometry at rest: joints above 0.8 m and
/// more than 8 cm to the side of the body's mid-plane (shoulders, elbows, hands).
#[test]
fn cesium_man_hands_touch_its_thighs() {
    use parry3d::query::PointQuery;
    let rig = drape::body::Rig::load(&cesium_man(), None).unwrap();
    let skin = &rig.skins()[0];
    let rest = rig.world_transforms(&rig.rest_pose());
    let arm_joint: Vec<bool> = (skin.joints.iter())
        .map(|&node| {
            let p = rest[node].w_axis;
            p.y > 0.8 && p.z.abs() > 0.08
        })
        .collect();
    assert_eq!(arm_joint.iter().filter(|&&a| a).count(), 6);
    let part = &rig.parts()[0];
    let is_arm: Vec<bool> = (part.joints.iter().zip(&part.weights))
        .map(|(j, w)| {
            let dominant = (0..4).max_by(|&a, &b| w[a].total_cmp(&w[b])).unwrap();
            arm_joint[j[dominant] as usize]
        })
        .collect();
    let mesh = rig.rest_mesh();
    assert_eq!(is_arm.len(), mesh.positions.len());
    let torso_and_legs: Vec<[u32; 3]> = (mesh.indices.iter().copied())
        .filter(|t| t.iter().all(|&v| !is_arm[v as usize]))
        .collect();
    let mut posed = Vec::new();
    let mut closest = Real::MAX;
    for k in 0..48 {
        rig.skin(&rig.sample(0, k as f64 / 24.0, Playback::Loop), &mut posed);
        let body = parry3d::shape::TriMesh::new(posed.clone(), torso_and_legs.clone()).unwrap();
        for (p, _) in posed.iter().zip(&is_arm).filter(|(p, &a)| a && p.y < 0.75) {
            closest = closest.min(body.distance_to_local_point(*p, false));
        }
    }
    println!("closest hand/forearm–thigh distance over the cycle: {closest} m");
    assert!(closest < 1.0e-3, "{closest} m");
}

/// CesiumMan's hand joints, found by the skeleton's geometry at rest (its joints have no
/// names): the arm joints (above 0.8 m, more than 8 cm to the side of the mid-plane, as in
/// `cesium_man_hands_touch_its_thighs`) with no arm joint below them in the hierarchy, the
/// last of each arm's chain.
fn cesium_hand_joints(rig: &drape::body::Rig) -> Vec<String> {
    let skin = &rig.skins()[0];
    let rest = rig.world_transforms(&rig.rest_pose());
    let is_arm = |node: usize| {
        let p = rest[node].w_axis;
        skin.joints.contains(&node) && p.y > 0.8 && p.z.abs() > 0.08
    };
    (skin.joints.iter().copied())
        .filter(|&j| is_arm(j) && !rig.nodes()[j].children.iter().any(|&c| is_arm(c)))
        .map(|j| rig.node_label(j))
        .collect()
}

/// Issue 35: the walk of [`bake_two_cycles`] with `joints` (and their descendants) excluded
/// from collision (`body.exclude_joints`), checked for: no rollback, no non-finite vertex, at
/// most `max_inside` vertex-frames inside the rest of the body, a largest stretch under
/// `max_stretch`, and the excluded parts passing through the skirt (vertices inside the whole
/// body, which are then inside an excluded part). The holes the exclusion cuts are capped
/// (`HoleCaps`), so the rest of the body stays closed.
fn check_walk_excluding(
    joints: impl Fn(&drape::body::Rig) -> Vec<String>,
    max_inside: usize,
    max_stretch: Real,
) {
    let dir = tempfile::tempdir().unwrap();
    let scene = write_fitted_skirt(
        dir.path(),
        &cesium_man(),
        &fitted_skirt_params(),
        Some(WAIST_M),
    )
    .expect("scene written");
    let mut loaded = LoadedScene::load(&scene).expect("scene loads");
    loaded.scene.timeline.end_frame = Some(loaded.scene.timeline.start_frame + 96);
    let rig = loaded.body.as_ref().unwrap().rig.clone();
    let joints = joints(&rig);
    assert_eq!(joints.len(), 2, "{joints:?}");
    loaded.set_exclusions(joints.clone(), 0.5).unwrap();
    let body = loaded.body.as_ref().unwrap();
    let (excluded, all) = (body.excluded_triangles(), body.mesh().indices.len());
    let capped = body.collider().unwrap().capped_holes();
    println!("{joints:?}: {excluded} of {all} triangles excluded, {capped} holes capped");
    assert!(excluded > 50 && excluded < all / 5, "{excluded} of {all}");
    assert!(capped >= 2, "{capped} holes capped");
    let result = bake(&loaded, &BakeOptions::default()).expect("the bake completes");
    let s = &result.stats;
    println!(
        "{:.1} ms/frame, max stretch {:.3}, pinched frames {}, rollbacks {}",
        s.sim_ms_per_frame, s.summary.max_stretch, s.summary.pinched_frames, s.summary.rollbacks
    );
    let inside: Vec<(i32, usize, Real)> = (s.per_frame.iter())
        .filter(|f| f.body_penetrations > 0)
        .map(|f| (f.frame, f.body_penetrations, f.max_penetration_m))
        .collect();
    println!("frames with vertices inside the rest of the body: {inside:?}");
    for f in &s.per_frame {
        assert_eq!(f.non_finite, 0);
        assert_eq!(
            f.rollbacks, 0,
            "frame {}: rollbacks after the settle",
            f.frame
        );
    }
    assert!(
        s.summary.max_stretch < max_stretch,
        "{}",
        s.summary.max_stretch
    );
    let vertex_frames: usize = inside.iter().map(|f| f.1).sum();
    assert!(vertex_frames <= max_inside, "{inside:?}");
    // Against the whole body, excluded parts included, some vertices are inside: where an
    // excluded part passed through the skirt.
    let mut whole = BodyCollider::new(rig.rest_mesh()).unwrap();
    let mut posed = Vec::new();
    let mut inside_excluded = 0;
    for (k, frame) in result.frames.iter().enumerate() {
        let pose = rig.sample(0, k as f64 / 24.0, Playback::Loop);
        rig.skin(&pose, &mut posed);
        whole.set_pose(&posed).unwrap();
        inside_excluded += frame
            .iter()
            .filter(|&&p| whole.penetration_depth(p) > 0.0)
            .count();
    }
    println!("vertex-frames inside an excluded part: {inside_excluded}");
    assert!(
        inside_excluded > 0,
        "the excluded parts never passed through the skirt"
    );
}

/// Issue 35's check: the hands excluded by their joints. Measured: 0 rollbacks, 5
/// vertex-frames inside the rest of the body (1 each, where a forearm pinches the skirt against
/// a hip), a largest stretch of 32 %. Before the holes at the wrists were capped this bake
/// rolled back 9 times and stretched 282 %: cloth was caught inside the open stumps.
#[test]
fn skirt_on_walking_cesium_man_with_the_hands_excluded() {
    check_walk_excluding(cesium_hand_joints, 6, 0.45);
}

/// The forearms and hands excluded (the elbows and their descendants). Measured: 0
/// rollbacks, 1 vertex-frame inside the rest of the body (0.7 mm, at the capped stump of an
/// upper arm; 3 before the caps), a largest stretch of 29 % where a stump's cap sweeps the
/// skirt (13 % before, when the cloth slipped into the open stump instead).
#[test]
fn skirt_on_walking_cesium_man_with_the_forearms_excluded() {
    check_walk_excluding(
        |rig| {
            (cesium_hand_joints(rig).iter())
                .map(|h| {
                    let node = (0..rig.nodes().len())
                        .find(|&i| rig.node_label(i) == *h)
                        .unwrap();
                    rig.node_label(rig.nodes()[node].parent.expect("a hand has a parent"))
                })
                .collect()
        },
        2,
        0.40,
    );
}
