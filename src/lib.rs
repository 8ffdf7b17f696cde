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

// The layers, lowest first: a module may use the modules above it in this list and never one
// below it (`tests/architecture.rs` checks it; CONTRIBUTING.md explains it).
/// The desktop app (eframe + three-d); the simulation core above never depends on it.
#[cfg(feature = "gui")]
pub mod app;
pub mod bake;
pub mod body;
pub mod collide;
pub mod constraints;
pub mod cusick;
pub mod file;
pub mod garment;
pub mod io;
pub mod math;
pub mod mesh;
pub mod neural;
pub mod paint;
pub mod preset;
pub mod scene;
pub mod sew;
pub mod solver;
pub mod train;

/// The crate version, as written into stats reports and exported files.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
