//! Maps in and out of a scene through glTF: a garment's render mesh with its painted maps as
//! `_DRAPE_*` vertex attributes (and `COLOR_0`), so the maps round-trip with other tools
//! (`drape maps export` / `drape maps import`).

use std::path::{Path, PathBuf};

use crate::io::gltf_export::{write_painted_glb, GltfExportError, PaintedMesh};
use crate::io::gltf_import::{load_mesh, load_mesh_with_maps, GltfImportError};
use crate::math::Real;
use crate::paint::{GarmentMaps, MapError, VertexMaps};
use crate::scene::{Scene, SceneError};

/// How far (m) an imported vertex may lie from the garment's render vertex of the same index:
/// the glTF must be the garment's own mesh (same vertices, same order), as an export writes it.
pub const IMPORT_POSITION_TOLERANCE_M: Real = 1.0e-4;

/// Why maps could not be exported or imported.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// The scene could not be read or written.
    #[error(transparent)]
    Scene(#[from] SceneError),
    /// The garment's render mesh or the imported glTF could not be read.
    #[error(transparent)]
    Import(#[from] GltfImportError),
    /// The glTF could not be written.
    #[error(transparent)]
    Export(#[from] GltfExportError),
    /// No garment of that name.
    #[error("{}: no garment named '{name}' (garments: {known})", scene.display())]
    NoGarment {
        /// The scene file.
        scene: PathBuf,
        /// The name asked for.
        name: String,
        /// The scene's garment names, comma-separated.
        known: String,
    },
    /// The imported glTF carries no `_DRAPE_*` attributes.
    #[error("{}: the mesh has no painted maps (_DRAPE_PIN, _DRAPE_STRETCH_SCALE, ...)", path.display())]
    NoMaps {
        /// The glTF file.
        path: PathBuf,
    },
    /// The imported mesh is not the garment's render mesh.
    #[error("{}: {problem}; maps can only be imported onto the mesh they were painted on", path.display())]
    Mismatch {
        /// The glTF file.
        path: PathBuf,
        /// What differs.
        problem: String,
    },
    /// The imported values are out of range or not finite.
    #[error("{}: {source}", path.display())]
    Maps {
        /// The glTF file.
        path: PathBuf,
        /// What is wrong with them.
        source: MapError,
    },
}

fn garment_index(scene: &Scene, scene_path: &Path, name: &str) -> Result<usize, ExchangeError> {
    scene
        .garments
        .iter()
        .position(|g| g.name == name)
        .ok_or_else(|| ExchangeError::NoGarment {
            scene: scene_path.to_path_buf(),
            name: name.into(),
            known: scene
                .garments
                .iter()
                .map(|g| g.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Writes garment `garment` of the scene at `scene_path` to `out` (.glb): its render mesh with
/// its painted maps (unpainted values where it has none). Returns the vertex count.
pub fn export_garment_maps(
    scene_path: &Path,
    garment: &str,
    out: &Path,
) -> Result<usize, ExchangeError> {
    let scene = Scene::load(scene_path)?;
    let g = &scene.garments[garment_index(&scene, scene_path, garment)?];
    let mut mesh = load_mesh(&Scene::resolve(scene_path, &g.path), g.mesh.as_deref())?;
    mesh.name = g.name.clone();
    let n = mesh.vertex_count();
    let unpainted = VertexMaps::new(n);
    let maps = g.maps.as_ref().map_or(&unpainted, |m| &m.values);
    write_painted_glb(
        out,
        &[PaintedMesh {
            mesh: &mesh,
            maps: Some(maps),
        }],
    )?;
    Ok(n)
}

/// Reads the maps of the mesh named `garment` in `input`, or of its only mesh (a glTF written
/// by [`export_garment_maps`] or by another tool that kept the vertices and their order) onto garment `garment` of the scene at `scene_path`,
/// and saves the scene (atomically). The garment's other map settings are kept. Returns the
/// vertex count.
pub fn import_garment_maps(
    scene_path: &Path,
    garment: &str,
    input: &Path,
) -> Result<usize, ExchangeError> {
    let mut scene = Scene::load(scene_path)?;
    let i = garment_index(&scene, scene_path, garment)?;
    let g = &scene.garments[i];
    let render = load_mesh(&Scene::resolve(scene_path, &g.path), g.mesh.as_deref())?;
    // The mesh named after the garment (as an export names it), else the file's only mesh.
    let (mesh, maps) =
        load_mesh_with_maps(input, Some(garment)).or_else(|_| load_mesh_with_maps(input, None))?;
    let values = maps.ok_or_else(|| ExchangeError::NoMaps {
        path: input.to_path_buf(),
    })?;
    let mismatch = |problem: String| ExchangeError::Mismatch {
        path: input.to_path_buf(),
        problem,
    };
    if mesh.vertex_count() != render.vertex_count() {
        return Err(mismatch(format!(
            "{} vertices, garment '{garment}' has {}",
            mesh.vertex_count(),
            render.vertex_count()
        )));
    }
    if let Some((k, d)) = mesh
        .positions
        .iter()
        .zip(&render.positions)
        .map(|(a, b)| a.distance(*b))
        .enumerate()
        .find(|(_, d)| d.is_nan() || *d > IMPORT_POSITION_TOLERANCE_M)
    {
        return Err(mismatch(format!(
            "vertex {k} lies {d} m from garment '{garment}''s vertex {k}"
        )));
    }
    values
        .validate(garment, render.vertex_count())
        .map_err(|source| ExchangeError::Maps {
            path: input.to_path_buf(),
            source,
        })?;
    let n = render.vertex_count();
    let g = &mut scene.garments[i];
    let mut maps = g.maps.take().unwrap_or_else(|| GarmentMaps::new(n));
    maps.values = values;
    // A sidecar named by the old maps would now be stale: save decides anew.
    maps.file = None;
    g.maps = Some(maps);
    scene.save(scene_path)?;
    Ok(n)
}
