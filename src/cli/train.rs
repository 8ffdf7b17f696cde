//! `drape train`: bake the training scenes with the converged classical solver, train the
//! hybrid solver's network on them, and write the model into the library (or a file).

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Args;
use drape::train::{train, TrainSettings};

/// `drape train`'s arguments.
#[derive(Args)]
pub struct TrainArgs {
    /// The model's name in the library's `models/` folder (a scene's `neural.model`, or
    /// `drape bake --neural NAME`), or a .ron path.
    #[arg(long)]
    out: String,
    /// A tiny run (two small drops, a narrow network, 400 steps): seconds, for a first look.
    #[arg(long)]
    quick: bool,
    /// Optimiser steps, instead of the default (1500, quick: 400).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    epochs: Option<u32>,
    /// Network width, 1 to 64 (default 16, quick: 8).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    hidden: Option<u32>,
    /// Message-passing steps, 0 to 8 (default 2, quick: 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=8))]
    steps: Option<u32>,
    /// Iterations per substep of the converged teacher bakes (default 32, quick: 16).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=100))]
    teacher_iterations: Option<u32>,
    /// Let the network read the history input (the previous substep's whole move); off by
    /// default (measured worse).
    #[arg(long)]
    history: bool,
    /// A network without world edges (cloth–cloth pairs close in space, far on the mesh): mesh
    /// and body edges only, as version-1 models.
    #[arg(long)]
    no_world_edges: bool,
    /// Where the teacher bakes' scenes are written (default: a folder beside the model).
    #[arg(long)]
    work_dir: Option<PathBuf>,
}

/// Runs `drape train`.
pub fn run(args: TrainArgs) -> Result<(), String> {
    let mut settings = if args.quick {
        TrainSettings::quick()
    } else {
        TrainSettings::default()
    };
    if let Some(e) = args.epochs {
        settings.epochs = e as usize;
    }
    if let Some(h) = args.hidden {
        settings.hidden = h as usize;
    }
    if let Some(s) = args.steps {
        settings.steps = s as usize;
    }
    settings.history = args.history;
    if args.no_world_edges {
        settings.world = None;
    }
    if let Some(t) = args.teacher_iterations {
        settings.teacher_iterations = t;
    }
    let out = drape::train::model_out_path(&args.out).map_err(|e| e.to_string())?;
    let work = args
        .work_dir
        .unwrap_or_else(|| out.with_extension("training"));
    let bar = std::io::stderr().is_terminal().then(|| {
        let bar = indicatif::ProgressBar::new(settings.epochs as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template(
                "training [{bar:40}] {pos}/{len} steps, loss {msg}, ETA {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let say = |line: &str| match &bar {
        Some(bar) => bar.println(line),
        None => eprintln!("{line}"),
    };
    let progress = |step: usize, total: usize, loss: f32| {
        if let Some(bar) = &bar {
            bar.set_position(step as u64);
            bar.set_message(format!("{loss:.4e}"));
        } else if step == total || step % 100 == 0 {
            eprintln!("step {step}/{total}: loss {loss:.4e}");
        }
    };
    let model = train(&settings, &work, &out, &say, &progress).map_err(|e| e.to_string())?;
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    let t = &model.training;
    println!(
        "wrote {} ({} weights, {} samples from {} scenes, data {})",
        out.display(),
        model.network.parameter_count(),
        t.samples,
        t.scenes.len(),
        model.data_hash
    );
    for (name, l) in [
        ("before", &t.initial),
        ("after", &t.final_losses),
        ("held out, before", &t.held_out_initial),
        ("held out, after", &t.held_out),
    ] {
        println!(
            "  {name:17} total {:.4e}  supervised {:.4e}  stretch {:.4e}  bending {:.4e}  collision {:.4e}  inertia {:.4e}",
            l.total, l.supervised, l.stretch, l.bending, l.collision, l.inertia
        );
    }
    Ok(())
}
