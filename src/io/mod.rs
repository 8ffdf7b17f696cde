//! File formats: glTF in and out, vertex caches, and safe writes.
//!
//! - [`gltf_import`] reads triangle meshes from glTF 2.0 (`.gltf` or `.glb`), with node transforms
//!   applied, and never panics on a damaged file.
//! - [`gltf_export`] writes binary glTF by hand: static meshes ([`gltf_export::write_static_glb`])
//!   and the baked garment as one morph target per frame with a STEP `weights` animation
//!   ([`gltf_export::write_bake_glb`]), with the body static or skinned and animated in the same
//!   animation, the contract in `DESIGN.md` §3 ("Baked glTF").
//! - [`cache`] writes and reads the PC2 and MDD point caches of Blender's Mesh Cache modifier.
//! - [`usd`] writes a bake as a USD text stage (`.usda`): garment and body with time-sampled
//!   points.
//! - [`inspect`](mod@inspect) summarises a glTF file (`drape inspect FILE.glb`).
//!
//! Writes are atomic ([`crate::file::atomic`]); the glTF container itself is read by
//! `crate::file::gltf`. Every error of this module carries the path of the file it is about.
//!
//! May import: [`crate::paint`] (the painted maps' types), [`crate::body`] (to write its skin and
//! animation), [`crate::mesh`], [`crate::file`], [`crate::math`].

pub mod cache;
pub mod gltf_export;
pub mod gltf_import;
pub mod inspect;
pub mod usd;

pub use crate::file::atomic::{write_atomic, write_atomic_with};
pub use cache::{read_mdd, read_pc2, write_mdd, write_pc2, CacheError, Mdd, Pc2};
pub use gltf_export::{write_bake_glb, write_static_glb, BakeExport, BodyExport, GltfExportError};
pub use gltf_import::{load_mesh, load_meshes, GltfImportError};
pub use inspect::{inspect, AnimationInfo, ChannelGroup, InspectReport, MeshInfo, SkinInfo};
pub use usd::{write_bake_usd, UsdBake, UsdExportError};
