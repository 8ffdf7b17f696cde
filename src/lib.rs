//! Drape: authoring and baking garment simulation on animated characters.
//!
//! This library is the whole simulation core: meshes and topology ([`mesh`]), constraints in real
//! units ([`constraints`]), the XPBD solver ([`sim`]), collisions on parry3d ([`collide`]), scenes
//! ([`scene`]), baking ([`bake`]) and file formats ([`io`]). It has no GUI dependency, so the
//! `drape` command line, the tests and the benchmarks all run it headless.
//!
//! The design is in `docs/` and the solver's mathematics in the module docs of [`sim`] and
//! [`constraints`].
#![warn(missing_docs)]

/// The desktop app (eframe + three-d); the simulation core above never depends on it.
#[cfg(feature = "gui")]
pub mod app;
pub mod bake;
pub mod batch;
pub mod binding;
pub mod body;
pub mod body_points;
pub mod collide;
pub mod constraints;
pub mod cusick;
pub mod demo;
pub mod fit;
pub mod global_stretch;
pub mod io;
pub mod levels;
pub mod line_stretch;
pub mod material;
pub mod math;
pub mod mesh;
pub mod paint;
pub mod pipeline;
pub mod preset;
pub mod proxy;
pub mod scene;
pub mod self_collision;
pub mod shapes;
pub mod sim;
pub mod stats;
pub mod travel;
pub mod walk;

/// The crate version, as written into stats reports and exported files.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
