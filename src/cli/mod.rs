//! The `drape` command line's subcommands that are more than a call into the library.

pub mod cusick;
pub mod preset;
