//! USD export of a bake: the garment and the body as `UsdGeomMesh` prims with time-sampled
//! points, written as USD text (`.usda`).
//!
//! The stage:
//!
//! ```text
//! #usda 1.0
//! (   defaultPrim = "Drape"   upAxis = "Y"   metersPerUnit = 1
//!     timeCodesPerSecond = fps   framesPerSecond = fps
//!     startTimeCode = first frame   endTimeCode = last frame )
//! def Xform "Drape"
//!     def Mesh "Garment"   points, normals ("vertex"), extent: one time sample per baked frame
//!                          faceVertexCounts, faceVertexIndices, primvars:st (when it has UVs)
//!     def Mesh "Body"      the same, time-sampled when the body moves, else static
//! ```
//!
//! Time codes are the timeline's frame numbers: baked frame `k` is at `start_frame + k`, so a
//! DCC's frame 12 shows Drape's frame 12. Distances are metres, Y is up, triangles are
//! counter-clockwise seen from the front (USD's default `rightHanded` orientation), and
//! `subdivisionScheme = "none"`, so the written normals are used instead of a subdivision
//! surface's. Normals are smooth across UV seams, as in the glTF export.
//!
//! Why text written here, not a USD crate: `openusd` 0.7 and later need a newer Rust than the
//! project's 1.95; 0.6's binary writer gives `.usdc` files that Pixar's USD 26.11 rejects
//! ("Invalid children found in primChildren field", its own `write_usdc` example included),
//! and its text writer prints every `f32` through `f64` (17 digits), files about 2.5× as large
//! as the shortest round-trip digits written here. `.usdc` is therefore refused with an error
//! that says how to convert (`usdcat bake.usda -o bake.usdc`).
//!
//! May import: [`crate::body`] (to skin the body per frame), [`crate::mesh`], [`crate::file`],
//! [`crate::math`], and the glTF export's [`BodyExport`] and seam normals.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::gltf_export::{BodyExport, SeamNormals};
use crate::math::Vec3;
use crate::mesh::Mesh;

/// A baked garment animation, ready to export as USD.
#[derive(Clone, Copy, Debug)]
pub struct UsdBake<'a> {
    /// The garment render mesh (its triangles, UVs and rest positions).
    pub garment: &'a Mesh,
    /// Garment positions for each baked frame, one per garment vertex (m).
    pub frames: &'a [Vec<Vec3>],
    /// Playback rate (frames per second): the stage's `timeCodesPerSecond`.
    pub fps: f32,
    /// Timeline number of the first baked frame: its time code.
    pub start_frame: i32,
    /// The body, if any: static, or skinned per frame from its poses (one per baked frame).
    pub body: Option<BodyExport<'a>>,
}

/// What can go wrong writing a USD file; every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum UsdExportError {
    /// The file could not be written.
    #[error("{}: cannot write the file: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file name does not end in `.usda`.
    #[error("{}: {why}", path.display())]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong and what to do instead.
        why: String,
    },
    /// The bake cannot be written as it is.
    #[error("{}: {why}", path.display())]
    Bake {
        /// The file.
        path: PathBuf,
        /// What is wrong with the bake.
        why: String,
    },
}

/// Writes a bake as a USD text stage (see the [module docs](self)), atomically.
///
/// `path` must end in `.usda`; `.usdc` and other names are refused before anything is written.
pub fn write_bake_usd(path: &Path, bake: &UsdBake) -> Result<(), UsdExportError> {
    check_path(path)?;
    let bake_error = |why: String| UsdExportError::Bake {
        path: path.to_path_buf(),
        why,
    };
    check_frames("garment", bake.garment, bake.frames).map_err(bake_error)?;
    if !(bake.fps.is_finite() && bake.fps > 0.0) {
        return Err(bake_error(format!(
            "the frame rate is {} frames/s; it must be positive",
            bake.fps
        )));
    }
    let body_frames: Option<(&Mesh, Vec<Vec<Vec3>>)> = match bake.body {
        None => None,
        Some(BodyExport::Static(mesh)) => {
            check_frames("body", mesh, std::slice::from_ref(&mesh.positions))
                .map_err(bake_error)?;
            Some((mesh, Vec::new()))
        }
        Some(BodyExport::Animated { rig, poses }) => {
            if poses.len() != bake.frames.len() {
                return Err(bake_error(format!(
                    "the body has {} poses for {} garment frames",
                    poses.len(),
                    bake.frames.len()
                )));
            }
            let frames: Vec<Vec<Vec3>> = poses
                .iter()
                .map(|pose| {
                    let mut out = Vec::new();
                    rig.skin(pose, &mut out);
                    out
                })
                .collect();
            check_frames("body", rig.rest_mesh(), &frames).map_err(bake_error)?;
            Some((rig.rest_mesh(), frames))
        }
    };

    let first = bake.start_frame;
    let last = first + bake.frames.len() as i32 - 1;
    crate::file::atomic::write_atomic_with(path, |w| {
        let mut s = String::with_capacity(1 << 16);
        let fps = num(bake.fps);
        let _ = write!(
            s,
            "#usda 1.0\n(\n    defaultPrim = \"Drape\"\n    doc = \"Baked by Drape {}\"\n    \
             endTimeCode = {last}\n    framesPerSecond = {fps}\n    metersPerUnit = 1\n    \
             startTimeCode = {first}\n    timeCodesPerSecond = {fps}\n    upAxis = \"Y\"\n)\n\n\
             def Xform \"Drape\"\n{{\n",
            env!("CARGO_PKG_VERSION")
        );
        w.write_all(s.as_bytes())?;
        write_mesh(w, "Garment", bake.garment, Some(bake.frames), first)?;
        if let Some((mesh, frames)) = &body_frames {
            w.write_all(b"\n")?;
            let frames = (!frames.is_empty()).then_some(frames.as_slice());
            write_mesh(w, "Body", mesh, frames, first)?;
        }
        w.write_all(b"}\n")
    })
    .map_err(|source| UsdExportError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Checks that [`write_bake_usd`] takes this file name (it ends in `.usda`), so that a caller
/// can refuse a bad name before a long bake rather than after it.
pub fn check_path(path: &Path) -> Result<(), UsdExportError> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let why = match ext.as_deref() {
        Some("usda") => return Ok(()),
        Some("usdc") | Some("usd") | Some("usdz") => format!(
            "Drape writes USD as text: name the file .usda (USD's own `usdcat bake.usda -o \
             bake.{}` converts it)",
            ext.unwrap_or_default()
        ),
        _ => "a USD file's name must end in .usda".to_owned(),
    };
    Err(UsdExportError::Format {
        path: path.to_path_buf(),
        why,
    })
}

/// Checks that every frame has one finite position per vertex of `mesh`, and that the mesh's
/// indices fit USD's `int`.
fn check_frames(what: &str, mesh: &Mesh, frames: &[Vec<Vec3>]) -> Result<(), String> {
    if frames.is_empty() {
        return Err("the bake has no frames; bake at least one frame".to_owned());
    }
    let n = mesh.positions.len();
    if n == 0 || mesh.indices.is_empty() {
        return Err(format!("the {what} mesh has no triangles"));
    }
    if n > i32::MAX as usize {
        return Err(format!(
            "the {what} mesh has {n} vertices, more than USD's int indexes"
        ));
    }
    if let Some(t) = mesh
        .indices
        .iter()
        .position(|t| t.iter().any(|&i| i as usize >= n))
    {
        return Err(format!(
            "{what} triangle {t} refers to a vertex it does not have"
        ));
    }
    for (k, frame) in frames.iter().enumerate() {
        if frame.len() != n {
            return Err(format!(
                "{what} frame {k} has {} positions, but the mesh has {n} vertices",
                frame.len()
            ));
        }
        if let Some(v) = frame.iter().position(|p| !p.is_finite()) {
            return Err(format!("{what} frame {k}, vertex {v} is not finite"));
        }
    }
    Ok(())
}

/// Writes one `def Mesh` prim: the topology once, then the points, normals and extent, one time
/// sample per frame from time code `first` on; `frames: None` writes `mesh`'s own positions as
/// static default values instead.
fn write_mesh(
    w: &mut dyn std::io::Write,
    name: &str,
    mesh: &Mesh,
    frames: Option<&[Vec<Vec3>]>,
    first: i32,
) -> std::io::Result<()> {
    let (frames, animated) = match frames {
        Some(f) => (f, true),
        None => (std::slice::from_ref(&mesh.positions), false),
    };
    let mut s = String::with_capacity(1 << 16);
    let _ = write!(s, "    def Mesh \"{name}\"\n    {{\n");
    s.push_str("        uniform bool doubleSided = 1\n");
    let _ = write!(s, "        int[] faceVertexCounts = [");
    join(&mut s, mesh.indices.iter().map(|_| "3"));
    s.push_str("]\n        int[] faceVertexIndices = [");
    for (i, t) in mesh.indices.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "{}, {}, {}", t[0], t[1], t[2]);
    }
    s.push_str("]\n");
    w.write_all(s.as_bytes())?;

    let seams = SeamNormals::new(mesh);
    let sampled = |w: &mut dyn std::io::Write,
                   decl: &str,
                   meta: &str,
                   value: &dyn Fn(&[Vec3], &mut String)|
     -> std::io::Result<()> {
        let mut s = String::with_capacity(1 << 16);
        if !animated {
            // A default value comes before the attribute's metadata.
            let _ = write!(s, "        {decl} = ");
            value(&frames[0], &mut s);
            s.push_str(meta);
            s.push('\n');
            return w.write_all(s.as_bytes());
        }
        if !meta.is_empty() {
            let _ = writeln!(s, "        {decl}{meta}");
        }
        let _ = writeln!(s, "        {decl}.timeSamples = {{");
        w.write_all(s.as_bytes())?;
        for (k, frame) in frames.iter().enumerate() {
            s.clear();
            let _ = write!(s, "            {}: ", first + k as i32);
            value(frame, &mut s);
            s.push_str(",\n");
            w.write_all(s.as_bytes())?;
        }
        w.write_all(b"        }\n")
    };
    sampled(w, "float3[] extent", "", &|p, s| {
        let (lo, hi) = p.iter().fold(
            (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY)),
            |(lo, hi), &x| (lo.min(x), hi.max(x)),
        );
        s.push('[');
        vec3s(s, [lo, hi].iter());
        s.push(']');
    })?;
    sampled(
        w,
        "normal3f[] normals",
        " (\n            interpolation = \"vertex\"\n        )",
        &|p, s| {
            s.push('[');
            vec3s(s, seams.normals(p).iter());
            s.push(']');
        },
    )?;
    sampled(w, "point3f[] points", "", &|p, s| {
        s.push('[');
        vec3s(s, p.iter());
        s.push(']');
    })?;

    let mut s = String::new();
    if let Some(uvs) = &mesh.uvs {
        // USD's texture space has v up, glTF's has it down.
        s.push_str("        texCoord2f[] primvars:st = [");
        for (i, uv) in uvs.iter().enumerate() {
            if i > 0 {
                s.push_str(", ");
            }
            let _ = write!(s, "({}, {})", num(uv.x), num(1.0 - uv.y));
        }
        s.push_str("] (\n            interpolation = \"vertex\"\n        )\n");
    }
    s.push_str("        uniform token subdivisionScheme = \"none\"\n    }\n");
    w.write_all(s.as_bytes())
}

fn join<'a>(s: &mut String, items: impl Iterator<Item = &'a str>) {
    for (i, item) in items.enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        s.push_str(item);
    }
}

fn vec3s<'a>(s: &mut String, v: impl Iterator<Item = &'a Vec3>) {
    for (i, p) in v.enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        let _ = write!(s, "({}, {}, {})", num(p.x), num(p.y), num(p.z));
    }
}

/// The shortest digits that read back as the same `f32` (Rust's `Debug`, which switches to
/// exponent notation for very small and large values); finite input only.
fn num(x: f32) -> String {
    let s = format!("{x:?}");
    s.strip_suffix(".0").map(str::to_owned).unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn triangle() -> Mesh {
        Mesh {
            name: "t".into(),
            positions: vec![Vec3::ZERO, Vec3::X, Vec3::Z],
            indices: vec![[0, 2, 1]],
            normals: None,
            uvs: None,
        }
    }

    #[test]
    fn numbers_are_the_shortest_round_trip_digits() {
        assert_eq!(num(1.0), "1");
        assert_eq!(num(0.1), "0.1");
        assert_eq!(num(-2.5), "-2.5");
        assert_eq!(num(1.0e-7), "1e-7");
        for x in [0.1_f32, 1.0 / 3.0, 123.456, 1.0e-7, -7.25e12] {
            assert_eq!(num(x).parse::<f32>().unwrap(), x);
        }
    }

    #[test]
    fn a_stage_has_one_time_sample_per_frame_on_the_timeline_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bake.usda");
        let m = triangle();
        let frames: Vec<Vec<Vec3>> = (0..3)
            .map(|k| {
                m.positions
                    .iter()
                    .map(|p| *p + Vec3::Y * k as f32 * 0.1)
                    .collect()
            })
            .collect();
        write_bake_usd(
            &path,
            &UsdBake {
                garment: &m,
                frames: &frames,
                fps: 24.0,
                start_frame: 5,
                body: Some(BodyExport::Static(&m)),
            },
        )
        .unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("#usda 1.0\n"));
        assert!(text.contains("startTimeCode = 5\n"), "{text}");
        assert!(text.contains("endTimeCode = 7\n"), "{text}");
        assert!(text.contains("timeCodesPerSecond = 24\n"), "{text}");
        assert!(text.contains("upAxis = \"Y\""));
        // Garment: points, normals and extent are sampled at 5, 6, 7; the static body is not.
        assert_eq!(text.matches(".timeSamples = {").count(), 3);
        assert!(text.contains("            7: [(0, 0.2, 0), (1, 0.2, 0), (0, 0.2, 1)],\n"));
        assert!(text.contains("        point3f[] points = [(0, 0, 0), (1, 0, 0), (0, 0, 1)]\n"));
        assert_eq!(text.matches("def Mesh").count(), 2);
        // Braces balance (a cheap syntax check; the pxr test in tests/usd.rs reads it for real).
        assert_eq!(text.matches('{').count(), text.matches('}').count());
    }

    #[test]
    fn bad_names_and_bad_bakes_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let m = triangle();
        let frames = vec![m.positions.clone()];
        let bake = UsdBake {
            garment: &m,
            frames: &frames,
            fps: 24.0,
            start_frame: 1,
            body: None,
        };
        for name in ["bake.usdc", "bake.usd", "bake.glb", "bake"] {
            let path = dir.path().join(name);
            let e = write_bake_usd(&path, &bake).unwrap_err().to_string();
            assert!(e.contains(name) && e.contains(".usda"), "{e}");
            assert!(!path.exists());
        }
        let path = dir.path().join("bake.usda");
        let nan = vec![vec![Vec3::ZERO, Vec3::NAN, Vec3::Z]];
        let e = write_bake_usd(
            &path,
            &UsdBake {
                frames: &nan,
                ..bake
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("bake.usda") && e.contains("vertex 1"), "{e}");
        let short = vec![vec![Vec3::ZERO]];
        let e = write_bake_usd(
            &path,
            &UsdBake {
                frames: &short,
                ..bake
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("1 positions"), "{e}");
        let e = write_bake_usd(
            &path,
            &UsdBake {
                frames: &[],
                ..bake
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("no frames"), "{e}");
        assert!(!path.exists(), "nothing is written for a bad bake");
    }
}
