//! The simulation worker: a thread that owns the solver, so the window never waits for it.
//!
//! The UI sends [`Command`]s; the worker answers with [`Event`]s and asks egui to repaint. It
//! plays the scene in real time (never faster than the timeline's fps), steps one frame on
//! request, rebuilds the solver in place when a parameter changes (keeping the cloth's state
//! and the simulated time), and bakes with progress and cancel.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::bake::{bake, BakeOptions, BakeResult, LoadedScene};
use crate::constraints::Attachment;
use crate::math::{Real, Vec3};
use crate::solver::{Solver, SolverSettings};

/// Compliance of the artist's drag attachment (m/N): a 1 N pull stretches it by 1 mm,
/// stiff enough to lead the cloth, soft enough not to tear it.
pub const DRAG_COMPLIANCE_M_PER_N: Real = 1.0e-3;

/// What the UI asks of the worker.
pub enum Command {
    /// A new scene: the simulation restarts from its rest state. The number tags every frame
    /// simulated from it, so the UI can drop frames of a scene it has replaced.
    Load(Arc<LoadedScene>, u64),
    /// The same scene with edited parameters: the solver is rebuilt, the cloth keeps its
    /// positions and velocities, and the time goes on.
    Update(Arc<LoadedScene>),
    /// No scene: stop and drop the simulation.
    Unload,
    /// Run in real time.
    Play,
    /// Stop running.
    Pause,
    /// Simulate one frame.
    Step,
    /// Back to the rest state at frame 0.
    Reset,
    /// Drag a particle toward a target (m), or release it.
    Drag(Option<(u32, Vec3)>),
    /// Bake this many frames of the loaded scene.
    Bake(u32),
    /// End the thread.
    Shutdown,
}

/// Live figures of the interactive simulation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveStats {
    /// Wall time of the last simulated frame (ms).
    pub ms_per_frame: f64,
    /// Largest edge stretch (length / rest − 1) at the shown frame.
    pub max_stretch: Real,
    /// Render vertices inside the body.
    pub penetrations: usize,
    /// Substeps rolled back since the last reset.
    pub rollbacks: u32,
}

/// One simulated frame, ready to draw.
#[derive(Clone, Debug)]
pub struct FrameView {
    /// Frames simulated since the last reset (0 is the rest state).
    pub frame: u32,
    /// The number of the [`Command::Load`] this frame was simulated from.
    pub generation: u64,
    /// Simulated time (s).
    pub time_s: f64,
    /// Solver particle positions (m): the proxy meshes' vertices, garment after garment.
    pub particles: Vec<Vec3>,
    /// Stretch per particle: the largest of its edges (length / rest − 1).
    pub particle_stretch: Vec<Real>,
    /// Merged render mesh positions (m).
    pub render: Vec<Vec3>,
    /// Stretch per render vertex: the largest of its proxy edges (length / rest − 1).
    pub stretch: Vec<Real>,
    /// Body mesh vertices at this time (m); empty for a static body.
    pub body: Vec<Vec3>,
    /// Figures.
    pub stats: LiveStats,
}

/// What the worker tells the UI.
pub enum Event {
    /// A frame of the interactive simulation.
    Frame(Box<FrameView>),
    /// The solver was (re)built: its settings and mean stretch compliance (m/N).
    Model {
        /// The settings in use.
        settings: SolverSettings,
        /// Mean compliance of the stretch constraints (m/N).
        mean_stretch_compliance_m_per_n: Real,
        /// How many span limits the model holds.
        span_limits: usize,
        /// Where the substeps run: "CPU", or "GPU: " and the adapter.
        backend: String,
        /// Why the solver does not run where the settings ask (empty when it does).
        backend_notes: Vec<String>,
    },
    /// Bake progress.
    BakeProgress {
        /// The scene's [`Command::Load`] number.
        generation: u64,
        /// Frames baked.
        done: usize,
        /// Frames asked for.
        total: usize,
        /// Estimated time left (s).
        eta_s: f64,
    },
    /// The bake ended: the scene's [`Command::Load`] number, and the result (cancelled or
    /// not) or why it failed.
    BakeFinished(u64, Result<Box<BakeResult>, String>),
    /// Something failed; the message names the scene and the problem.
    Error(String),
}

/// The UI's handle on the worker thread.
pub struct Worker {
    tx: Sender<Command>,
    rx: Receiver<Event>,
    cancel: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts the thread; `repaint` is called whenever an event is sent.
    pub fn spawn(repaint: impl Fn() + Send + 'static) -> Self {
        let (tx, commands) = mpsc::channel();
        let (events, rx) = mpsc::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let flag = cancel.clone();
        let thread = std::thread::Builder::new()
            .name("drape-sim".into())
            .spawn(move || {
                let mut state = State {
                    events,
                    repaint: Box::new(repaint),
                    cancel: flag,
                    sim: None,
                    playing: false,
                    generation: 0,
                };
                state.run(commands);
            })
            .ok();
        Self {
            tx,
            rx,
            cancel,
            thread,
        }
    }

    /// Sends a command; a dead worker is reported by [`Self::alive`].
    pub fn send(&self, command: Command) {
        if let Command::Bake(_) = command {
            self.cancel.store(false, Ordering::Relaxed);
        }
        let _ = self.tx.send(command);
    }

    /// Asks a running bake to stop after its current frame.
    pub fn cancel_bake(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// Events received so far.
    pub fn poll(&self) -> Vec<Event> {
        self.rx.try_iter().collect()
    }

    /// Whether the thread is still running.
    pub fn alive(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
        let _ = self.tx.send(Command::Shutdown);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The interactive simulation of one loaded scene.
struct Sim {
    loaded: Arc<LoadedScene>,
    solver: Solver,
    offsets: Vec<u32>,
    render_to_particle: Vec<u32>,
    frame: u32,
    rollbacks: u32,
    drag: Option<(u32, Vec3)>,
    generation: u64,
}

struct State {
    events: Sender<Event>,
    repaint: Box<dyn Fn() + Send>,
    cancel: Arc<AtomicBool>,
    sim: Option<Sim>,
    playing: bool,
    /// The number of the last [`Command::Load`].
    generation: u64,
}

impl State {
    fn send(&self, event: Event) {
        let _ = self.events.send(event);
        (self.repaint)();
    }

    fn error(&mut self, message: String) {
        self.playing = false;
        self.send(Event::Error(message));
    }

    fn run(&mut self, commands: Receiver<Command>) {
        let mut next_frame = Instant::now();
        loop {
            let command = if self.playing {
                let wait = next_frame.saturating_duration_since(Instant::now());
                match commands.recv_timeout(wait) {
                    Ok(c) => Some(c),
                    Err(RecvTimeoutError::Timeout) => None,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            } else {
                match commands.recv() {
                    Ok(c) => Some(c),
                    Err(_) => return,
                }
            };
            match command {
                Some(Command::Shutdown) => return,
                Some(c) => {
                    if !self.playing {
                        next_frame = Instant::now();
                    }
                    self.handle(c);
                }
                None => {
                    let fps = self
                        .sim
                        .as_ref()
                        .map_or(24.0, |s| s.loaded.scene.timeline.fps);
                    next_frame += Duration::from_secs_f64(1.0 / fps.max(1.0) as f64);
                    // Behind by more than a frame (a slow scene): do not try to catch up.
                    if next_frame < Instant::now() {
                        next_frame = Instant::now();
                    }
                    self.step();
                }
            }
        }
    }

    fn handle(&mut self, command: Command) {
        match command {
            Command::Load(loaded, generation) => {
                self.playing = false;
                self.sim = None;
                self.generation = generation;
                match build(&loaded, None) {
                    Ok(mut sim) => {
                        sim.generation = generation;
                        self.sim = Some(sim);
                        self.announce_model();
                        self.publish();
                    }
                    Err(e) => self.error(e),
                }
            }
            Command::Update(loaded) => {
                let previous = self.sim.take();
                match build(&loaded, previous.as_ref()) {
                    Ok(mut sim) => {
                        sim.generation = self.generation;
                        self.sim = Some(sim);
                        self.announce_model();
                        self.publish();
                    }
                    Err(e) => {
                        self.sim = previous;
                        self.error(e);
                    }
                }
            }
            Command::Unload => {
                self.playing = false;
                self.sim = None;
            }
            Command::Play => self.playing = self.sim.is_some(),
            Command::Pause => self.playing = false,
            Command::Step => {
                self.playing = false;
                self.step();
            }
            Command::Reset => {
                self.playing = false;
                if let Some(sim) = self.sim.take() {
                    match build(&sim.loaded, None) {
                        Ok(mut s) => {
                            s.generation = sim.generation;
                            self.sim = Some(s);
                            self.publish();
                        }
                        Err(e) => self.error(e),
                    }
                }
            }
            Command::Drag(drag) => {
                if let Some(sim) = self.sim.as_mut() {
                    sim.drag = drag;
                    let attachment = drag.map(|(particle, target_m)| Attachment {
                        particle,
                        target_m,
                        compliance_m_per_n: DRAG_COMPLIANCE_M_PER_N,
                    });
                    if let Err(e) = sim.solver.set_drag(attachment) {
                        self.error(format!("drag: {e}"));
                    }
                }
            }
            Command::Bake(frames) => self.bake(frames),
            Command::Shutdown => {}
        }
    }

    fn announce_model(&mut self) {
        if let Some(sim) = self.sim.as_mut() {
            let stretch = &sim.solver.model().stretch;
            let mean = stretch.iter().map(|c| c.compliance_m_per_n).sum::<Real>()
                / stretch.len().max(1) as Real;
            let event = Event::Model {
                settings: sim.solver.settings().clone(),
                mean_stretch_compliance_m_per_n: mean,
                span_limits: sim.solver.model().span_limits.len(),
                backend: sim.solver.backend_name(),
                backend_notes: sim.solver.take_backend_notes(),
            };
            self.send(event);
        }
    }

    fn step(&mut self) {
        let Some(sim) = self.sim.as_mut() else {
            self.playing = false;
            return;
        };
        let dt = 1.0 / sim.loaded.scene.timeline.fps;
        let t = Instant::now();
        match sim.solver.step_frame(dt) {
            Ok(report) => {
                sim.frame += 1;
                sim.rollbacks += report.rollbacks;
                let ms = t.elapsed().as_secs_f64() * 1000.0;
                self.publish_with(ms);
            }
            Err(e) => {
                let message = format!("{}: frame {}: {e}", sim.loaded.path.display(), sim.frame);
                self.error(message);
            }
        }
    }

    fn publish(&mut self) {
        self.publish_with(0.0);
    }

    fn publish_with(&mut self, ms_per_frame: f64) {
        let Some(sim) = self.sim.as_ref() else {
            return;
        };
        let x = &sim.solver.particles().x;
        let render = sim.loaded.render_positions(&sim.offsets, x);
        let mut particle_stretch = vec![0.0 as Real; x.len()];
        for c in &sim.solver.model().stretch {
            let [a, b] = c.particles.map(|i| i as usize);
            if c.rest_length_m > 0.0 {
                let s = (x[a] - x[b]).length() / c.rest_length_m - 1.0;
                particle_stretch[a] = particle_stretch[a].max(s);
                particle_stretch[b] = particle_stretch[b].max(s);
            }
        }
        let stretch: Vec<Real> = (sim.render_to_particle.iter())
            .map(|&p| particle_stretch[p as usize])
            .collect();
        let max_stretch = particle_stretch.iter().copied().fold(0.0, Real::max);
        let penetrations = sim
            .solver
            .body()
            .map(|b| {
                let gap = 2.0 * sim.solver.settings().collision_thickness_m;
                crate::collide::measure_penetrations(b, &render, gap).count
            })
            .unwrap_or(0);
        let view = FrameView {
            frame: sim.frame,
            generation: sim.generation,
            time_s: sim.solver.time_s(),
            particles: x.clone(),
            particle_stretch,
            render,
            stretch,
            body: sim.solver.body_positions().to_vec(),
            stats: LiveStats {
                ms_per_frame,
                max_stretch,
                penetrations,
                rollbacks: sim.rollbacks,
            },
        };
        self.send(Event::Frame(Box::new(view)));
    }

    fn bake(&mut self, frames: u32) {
        self.playing = false;
        let Some(loaded) = self.sim.as_ref().map(|s| s.loaded.clone()) else {
            let generation = self.generation;
            self.send(Event::BakeFinished(
                generation,
                Err("no scene to bake".into()),
            ));
            return;
        };
        let generation = self.generation;
        let started = Instant::now();
        let events = self.events.clone();
        let progress = |done: usize, total: usize| {
            let elapsed = started.elapsed().as_secs_f64();
            let eta_s = if done > 0 {
                elapsed / done as f64 * (total - done) as f64
            } else {
                0.0
            };
            let _ = events.send(Event::BakeProgress {
                generation,
                done,
                total,
                eta_s,
            });
            (self.repaint)();
        };
        let options = BakeOptions {
            frames: Some(frames),
            progress: Some(&progress),
            cancel: Some(&self.cancel),
        };
        let result = bake(&loaded, &options)
            .map(Box::new)
            .map_err(|e| e.to_string());
        self.send(Event::BakeFinished(generation, result));
    }
}

/// Builds the interactive simulation of `loaded`; with `previous`, carries its time, cloth
/// state and drag over (a live parameter edit on the same meshes).
fn build(loaded: &Arc<LoadedScene>, previous: Option<&Sim>) -> Result<Sim, String> {
    let name = loaded.path.display();
    let body = loaded.body_collider().map_err(|e| e.to_string())?;
    let (model, offsets) = loaded.build_model(body.as_ref());
    let mut solver = Solver::new(loaded.scene.solver.clone(), model, body)
        .map_err(|e| format!("{name}: {e}"))?;
    loaded
        .attach_network(&mut solver)
        .map_err(|e| format!("{name}: {e}"))?;
    let dt = 1.0 / loaded.scene.timeline.fps as f64;
    let preroll_s = loaded.scene.timeline.preroll_frames as f64 * dt;
    if let Some(b) = &loaded.body {
        if b.rig.is_animated() {
            solver
                .set_body_motion(Box::new(b.clock(preroll_s)))
                .map_err(|e| format!("{name}: {e}"))?;
        }
    }
    let mut sim = Sim {
        render_to_particle: loaded.render_to_particle(&offsets),
        loaded: loaded.clone(),
        solver,
        offsets,
        frame: 0,
        rollbacks: 0,
        drag: None,
        generation: 0,
    };
    if let Some(prev) = previous {
        if prev.solver.particles().len() == sim.solver.particles().len() {
            sim.solver
                .restore(prev.solver.time_s(), prev.solver.particles())
                .map_err(|e| format!("{name}: {e}"))?;
            sim.frame = prev.frame;
            sim.rollbacks = prev.rollbacks;
            if let Some((particle, target_m)) = prev.drag {
                sim.solver
                    .set_drag(Some(Attachment {
                        particle,
                        target_m,
                        compliance_m_per_n: DRAG_COMPLIANCE_M_PER_N,
                    }))
                    .map_err(|e| format!("{name}: {e}"))?;
                sim.drag = prev.drag;
            }
        }
    }
    Ok(sim)
}
