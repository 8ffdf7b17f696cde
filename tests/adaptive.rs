//! Adaptive iterations (issue 36, `SolverSettings::adaptive_iterations`): a quiet cloth runs the
//! fewest iterations, an impact raises them, the bake's stretch stays within the tolerance, and
//! with the setting off the bake is the fixed count's, bit for bit.

use drape::bake::{bake, BakeOptions, BakeResult, LoadedScene};
use drape::scene::demo::{write_demo, DemoScene};
use drape::solver::AdaptiveIterations;

/// The standard scene (a cloth dropped on a sphere) at 32 × 32, baked with `adaptive`.
fn sphere_drop(adaptive: Option<AdaptiveIterations>) -> BakeResult {
    let dir = tempfile::tempdir().unwrap();
    let path = write_demo(dir.path(), DemoScene::SphereDrop, Some(32)).unwrap();
    let mut loaded = LoadedScene::load(&path).unwrap();
    assert_eq!(loaded.scene.solver.iterations, 1);
    loaded.scene.solver.adaptive_iterations = adaptive;
    loaded.scene.solver.validate().unwrap();
    bake(&loaded, &BakeOptions::default()).expect("the bake completes")
}

#[test]
fn a_quiet_cloth_runs_the_minimum_an_impact_raises_it_and_the_stretch_stays_in_tolerance() {
    let tolerance = 0.03;
    let adaptive = AdaptiveIterations {
        min_iterations: 1,
        max_iterations: 16,
        stretch_tolerance: tolerance,
    };
    let result = sphere_drop(Some(adaptive));
    let frames = &result.stats.per_frame;
    let line: Vec<String> = (frames.iter())
        .map(|f| format!("{}:{}/{:.2}%", f.frame, f.iterations, f.max_stretch * 100.0))
        .collect();
    println!("frame:iterations/max stretch: {}", line.join(" "));
    // The first frame is the rest shape (not simulated); every simulated frame runs within the
    // bounds.
    assert_eq!(frames[0].iterations, 0);
    for f in &frames[1..] {
        assert!((1..=16).contains(&f.iterations), "frame {}", f.frame);
    }
    // Falling free (no contact, no stretch) it runs the minimum.
    let touch = (frames.iter())
        .position(|f| f.max_stretch > 0.005)
        .expect("the cloth lands on the sphere");
    assert!(touch >= 3, "the cloth touched at frame index {touch}");
    assert!(frames[1..touch].iter().all(|f| f.iterations == 1));
    // The impact raises it.
    let peak = frames.iter().map(|f| f.iterations).max().unwrap();
    assert!(peak >= 3, "the impact ran at most {peak} iterations");
    // Resting on the sphere, the last 20 frames are back at the minimum.
    assert!(
        frames[frames.len() - 20..]
            .iter()
            .all(|f| f.iterations == 1),
        "{}",
        line.join(" ")
    );
    // And the stretch stays within the tolerance on every frame, with nothing rolled back and
    // nothing inside the sphere.
    let s = &result.stats.summary;
    assert!(s.max_stretch <= tolerance, "max stretch {}", s.max_stretch);
    assert_eq!(s.rollbacks, 0);
    assert_eq!(s.body_penetrations, 0);
    assert!(
        s.mean_iterations > 1.0 && s.mean_iterations < 4.0,
        "{}",
        s.mean_iterations
    );

    // The fixed minimum leaves more stretch than the tolerance on the same scene: the
    // adaptation is what keeps it in.
    let fixed = sphere_drop(None);
    let f = &fixed.stats.summary;
    assert!(f.max_stretch > tolerance, "fixed: {}", f.max_stretch);
    assert!(fixed.stats.per_frame[1..].iter().all(|f| f.iterations == 1));
    assert_eq!(f.mean_iterations, 1.0);
}

/// With bounds that leave one count, the adaptive bake is the fixed bake, bit for bit.
#[test]
fn adaptive_bounds_of_one_count_give_the_fixed_bake_bit_for_bit() {
    let pinned = AdaptiveIterations {
        min_iterations: 1,
        max_iterations: 1,
        stretch_tolerance: 0.001,
    };
    let a = sphere_drop(Some(pinned));
    let b = sphere_drop(None);
    assert_eq!(a.frames.len(), b.frames.len());
    for (fa, fb) in a.frames.iter().zip(&b.frames) {
        let bits = |f: &Vec<drape::math::Vec3>| -> Vec<u32> {
            f.iter()
                .flat_map(|p| p.to_array())
                .map(f32::to_bits)
                .collect()
        };
        assert_eq!(bits(fa), bits(fb));
    }
}
