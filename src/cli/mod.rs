//! The `drape` command line's subcommands, one module each; `main.rs` holds only the command
//! list and the dispatch.
//!
//! May import: the library (`drape::…`), clap and indicatif; nothing here is used by the
//! library.

pub mod bake;
pub mod cusick;
pub mod demo;
pub mod maps;
pub mod pattern;
pub mod preset;
pub mod sew;
pub mod train;
