//! One run of a benchmark scene, its frame time split by stage, with a hash of the final
//! positions: the tool for A/B pairs (issue 8). The development machine's speed drifts by tens
//! of percent within an hour, so two builds compare only in runs interleaved back to back, and
//! a change meant to give the same bake must give the same hash.
//!
//! ```sh
//! cargo bench --bench stage_split -- walk 64 160 24      # the walking mannequin, a 64 × 160 skirt
//! cargo bench --bench stage_split -- sphere 64 60 0      # the standard scene, N = 64, span limits 0
//! cargo bench --bench stage_split -- sphere 64 60 0 unpipelined # the same, without pipelined sweeps
//! ```
//!
//! `walk RINGS SEGMENTS FRAMES` steps the walk's skirt (`drape demo --scene walk`) for FRAMES
//! frames after its pre-roll; `sphere N FRAMES SLACK` steps the standard scene (`drape demo
//! --scene sphere-drop --grid N`) for FRAMES frames from the start, with `span_limit_slack`
//! SLACK (negative: no span limits), and with `unpipelined` after SLACK without the pipelined
//! sweeps (`SolverSettings::pipelined_sweeps`, on by default). Both at 10 substeps. Prints one line: ms per frame, each
//! stage and each projected kind in ms per frame, the largest edge stretch at the end (%) and
//! the FNV-1a hash of the positions' bits. Build the same file at two commits and alternate.

use std::time::{Duration, Instant};

use drape::bake::LoadedScene;
use drape::mesh::shapes::SkirtParams;
use drape::scene::demo::{write_demo, write_walk, DemoScene};
use drape::solver::{Solver, StageTimes};

const SUBSTEPS: u32 = 10;

fn main() {
    // `cargo bench` passes `--bench`; the rest are ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let number = |k: usize, default: f64| -> f64 {
        args.get(k)
            .map(|s| {
                s.parse()
                    .unwrap_or_else(|_| usage(&format!("not a number: {s}")))
            })
            .unwrap_or(default)
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut solver, frames, fps) = match args.first().map(String::as_str).unwrap_or("walk") {
        "walk" => {
            let params = SkirtParams {
                rings: number(1, 64.0) as u32,
                segments: number(2, 160.0) as u32,
                ..SkirtParams::default()
            };
            let loaded = load(write_walk(dir.path(), &params), |_| {});
            let mut solver = loaded.build_solver().expect("solver").solver;
            let fps = loaded.scene.timeline.fps;
            solver.set_settling(Some(loaded.scene.timeline.settle_push_speed_m_per_s));
            for _ in 0..loaded.scene.timeline.preroll_frames {
                solver.step_frame(1.0 / fps).expect("pre-roll frame");
            }
            solver.set_settling(None);
            (solver, number(3, 24.0) as u32, fps)
        }
        "sphere" => {
            let n = number(1, 64.0) as u32;
            let slack = number(3, 0.0) as f32;
            let scene = write_demo(dir.path(), DemoScene::SphereDrop, Some(n));
            let unpipelined = args.get(4).map(String::as_str) == Some("unpipelined");
            let loaded = load(scene, |l| {
                l.scene.solver.span_limit_slack = slack;
                if unpipelined {
                    l.scene.solver.pipelined_sweeps = false;
                }
            });
            let solver = loaded.build_solver().expect("solver").solver;
            (solver, number(2, 60.0) as u32, loaded.scene.timeline.fps)
        }
        other => usage(&format!("unknown scene {other}")),
    };
    let before = solver.stage_times();
    let wall = Instant::now();
    for _ in 0..frames {
        solver.step_frame(1.0 / fps).expect("frame");
    }
    let per_frame = |d: Duration| d.as_secs_f64() * 1000.0 / frames.max(1) as f64;
    let frame = per_frame(wall.elapsed());
    print_split(frame, &before, &solver.stage_times(), per_frame, &solver);
}

/// The scene a demo writer wrote, at [`SUBSTEPS`], changed by `edit`.
fn load(
    scene: Result<std::path::PathBuf, drape::scene::demo::DemoError>,
    edit: impl FnOnce(&mut LoadedScene),
) -> LoadedScene {
    let mut loaded = LoadedScene::load(&scene.expect("scene")).expect("scene loads");
    loaded.scene.solver.substeps = SUBSTEPS;
    edit(&mut loaded);
    loaded
}

fn print_split(
    frame: f64,
    a: &StageTimes,
    b: &StageTimes,
    ms: impl Fn(Duration) -> f64,
    solver: &Solver,
) {
    let (ka, kb) = (&a.project_kinds, &b.project_kinds);
    let x = &solver.particles().x;
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for p in x {
        for c in p.to_array() {
            hash ^= u64::from(c.to_bits());
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    let edges = (solver.model().stretch.iter()).map(|c| (c.particles, c.rest_length_m));
    let (worst, _) = drape::bake::stats::edge_stretch(x, edges);
    let span = |pairs: &[(&str, Duration, Duration)]| -> String {
        (pairs.iter())
            .map(|(name, a, b)| format!("{name} {:.1}", ms(*b - *a)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let stages = span(&[
        ("kinematics", a.kinematics, b.kinematics),
        ("predict", a.predict, b.predict),
        ("contacts", a.contacts, b.contacts),
        ("project", a.project, b.project),
    ]);
    let kinds = span(&[
        ("attachments", ka.attachments, kb.attachments),
        ("span", ka.span_limits, kb.span_limits),
        ("stretch", ka.stretch, kb.stretch),
        ("shear", ka.shear, kb.shear),
        ("bend", ka.bend, kb.bend),
        ("contacts", ka.contacts, kb.contacts),
        ("pipelined", ka.pipelined, kb.pipelined),
    ]);
    let after = span(&[
        ("velocities", a.velocities, b.velocities),
        ("check", a.check, b.check),
    ]);
    println!(
        "frame {frame:.1} ms | {stages} ({kinds}) {after} | max stretch {:.2} % | hash \
         {hash:016x}",
        worst * 100.0,
    );
}

fn usage(problem: &str) -> ! {
    eprintln!(
        "stage_split: {problem}\nusage: cargo bench --bench stage_split -- walk [RINGS SEGMENTS \
         FRAMES] | sphere [N FRAMES SPAN_SLACK [unpipelined]]"
    );
    std::process::exit(2);
}
