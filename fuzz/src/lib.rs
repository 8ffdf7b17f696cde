//! Entry points of Drape's fuzz targets; see docs/fuzzing.md.
//!
//! The functions live in `entry.rs`, which `tests/fuzz_regressions.rs` also includes, so the
//! regression tests run the corpus through exactly the code the fuzzers run.

mod entry;

pub use entry::{gltf_import, preset_load, scene_load, Outcome};
