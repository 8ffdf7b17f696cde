//! Per-vertex maps of one garment's render mesh, their settings, validation and compact
//! encoding (see the [module docs](super) for the maths and `docs/painting.md` for the files).

use std::io::Read;
use std::path::{Path, PathBuf};

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::math::Real;

/// Which per-vertex map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum MapKind {
    /// Attachment weight, 0–1 (dimensionless): 0 free, at or above the garment's threshold a
    /// hard pin, in between a soft attachment (see [`attachment_compliance_m_per_n`]).
    Attachment,
    /// Factor on the compliance of the stretch and shear constraints (dimensionless): 10 makes
    /// the region ten times as stretchy.
    StretchScale,
    /// Factor on the compliance of the bending constraints (dimensionless).
    BendScale,
    /// Factor on the particle masses (dimensionless).
    MassScale,
}

impl MapKind {
    /// Every kind, in storage order.
    pub const ALL: [MapKind; 4] = [
        MapKind::Attachment,
        MapKind::StretchScale,
        MapKind::BendScale,
        MapKind::MassScale,
    ];

    /// The value of an unpainted vertex: 0 for the attachment weight, 1 for the scales.
    pub fn default_value(self) -> Real {
        match self {
            MapKind::Attachment => 0.0,
            _ => 1.0,
        }
    }

    /// The allowed values `(min, max)`, both inclusive. Brushes clamp to it; files outside it
    /// are refused.
    pub fn range(self) -> (Real, Real) {
        match self {
            MapKind::Attachment => (0.0, 1.0),
            MapKind::StretchScale | MapKind::BendScale => (0.0, MAX_COMPLIANCE_SCALE),
            MapKind::MassScale => (MIN_MASS_SCALE, MAX_MASS_SCALE),
        }
    }

    /// The name used in files, errors and the app.
    pub fn name(self) -> &'static str {
        match self {
            MapKind::Attachment => "attachment",
            MapKind::StretchScale => "stretch_scale",
            MapKind::BendScale => "bend_scale",
            MapKind::MassScale => "mass_scale",
        }
    }

    /// The glTF vertex attribute the map is exported as (application-specific, so it starts
    /// with an underscore; FLOAT SCALAR).
    pub fn gltf_attribute(self) -> &'static str {
        match self {
            MapKind::Attachment => "_DRAPE_PIN",
            MapKind::StretchScale => "_DRAPE_STRETCH_SCALE",
            MapKind::BendScale => "_DRAPE_BEND_SCALE",
            MapKind::MassScale => "_DRAPE_MASS_SCALE",
        }
    }

    fn index(self) -> usize {
        match self {
            MapKind::Attachment => 0,
            MapKind::StretchScale => 1,
            MapKind::BendScale => 2,
            MapKind::MassScale => 3,
        }
    }
}

/// Largest compliance scale (dimensionless): three orders of magnitude softer.
pub const MAX_COMPLIANCE_SCALE: Real = 1000.0;
/// Smallest mass scale (dimensionless).
pub const MIN_MASS_SCALE: Real = 0.01;
/// Largest mass scale (dimensionless).
pub const MAX_MASS_SCALE: Real = 100.0;

/// A map that cannot be used; every variant names the garment.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum MapError {
    /// A map does not have one value per render vertex.
    #[error("garment '{garment}': the {map} map has {got} values but the render mesh has {expected} vertices; repaint or re-import the map for this mesh")]
    Length {
        /// Garment name.
        garment: String,
        /// Map name.
        map: &'static str,
        /// Values given.
        got: usize,
        /// Render vertices.
        expected: usize,
    },
    /// A value is NaN or infinite.
    #[error(
        "garment '{garment}': the {map} map has a non-finite value ({value}) at vertex {vertex}"
    )]
    NonFinite {
        /// Garment name.
        garment: String,
        /// Map name.
        map: &'static str,
        /// Render vertex.
        vertex: usize,
        /// The value.
        value: Real,
    },
    /// A value is outside the map's range ([`MapKind::range`]).
    #[error(
        "garment '{garment}': the {map} map has {value} at vertex {vertex}, outside [{min}, {max}]"
    )]
    OutOfRange {
        /// Garment name.
        garment: String,
        /// Map name.
        map: &'static str,
        /// Render vertex.
        vertex: usize,
        /// The value.
        value: Real,
        /// Smallest allowed value.
        min: Real,
        /// Largest allowed value.
        max: Real,
    },
    /// A setting of the maps is out of range.
    #[error("garment '{garment}': maps.{field}: {problem}")]
    Setting {
        /// Garment name.
        garment: String,
        /// The field, e.g. `pin_threshold`.
        field: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// Encoded map data cannot be decoded.
    #[error("garment '{garment}': the stored maps are damaged: {problem}")]
    Corrupt {
        /// Garment name.
        garment: String,
        /// What is wrong.
        problem: String,
    },
    /// A sidecar map file cannot be read or written.
    #[error("garment '{garment}': {}: {message}", path.display())]
    File {
        /// Garment name.
        garment: String,
        /// The sidecar file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// The per-vertex maps of one render mesh: one value per vertex in each map.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VertexMaps {
    maps: [Vec<Real>; 4],
}

impl VertexMaps {
    /// Unpainted maps (every value at its [`MapKind::default_value`]) for `vertices` vertices.
    pub fn new(vertices: usize) -> Self {
        Self {
            maps: MapKind::ALL.map(|k| vec![k.default_value(); vertices]),
        }
    }

    /// Number of vertices (0 for maps stored in a sidecar file not read yet).
    pub fn len(&self) -> usize {
        self.maps[0].len()
    }

    /// Whether the maps have no vertices.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// One map.
    pub fn get(&self, kind: MapKind) -> &[Real] {
        &self.maps[kind.index()]
    }

    /// One map, to edit. Keep its length; [`VertexMaps::validate`] checks it.
    pub fn get_mut(&mut self, kind: MapKind) -> &mut [Real] {
        &mut self.maps[kind.index()]
    }

    /// Replaces one map (its length is checked by [`VertexMaps::validate`]).
    pub fn set(&mut self, kind: MapKind, values: Vec<Real>) {
        self.maps[kind.index()] = values;
    }

    /// Whether a map holds its default value everywhere (nothing painted on it).
    pub fn is_default(&self, kind: MapKind) -> bool {
        let d = kind.default_value();
        self.get(kind).iter().all(|&v| v == d)
    }

    /// Checks that every map has `vertices` values, all finite and in range; the error names
    /// `garment`, the map and the vertex.
    pub fn validate(&self, garment: &str, vertices: usize) -> Result<(), MapError> {
        for kind in MapKind::ALL {
            let m = self.get(kind);
            if m.len() != vertices {
                return Err(MapError::Length {
                    garment: garment.into(),
                    map: kind.name(),
                    got: m.len(),
                    expected: vertices,
                });
            }
            let (min, max) = kind.range();
            for (vertex, &value) in m.iter().enumerate() {
                if !value.is_finite() {
                    return Err(MapError::NonFinite {
                        garment: garment.into(),
                        map: kind.name(),
                        vertex,
                        value,
                    });
                }
                if !(min..=max).contains(&value) {
                    return Err(MapError::OutOfRange {
                        garment: garment.into(),
                        map: kind.name(),
                        vertex,
                        value,
                        min,
                        max,
                    });
                }
            }
        }
        Ok(())
    }

    /// The maps in the compact binary form of a sidecar file (see [`encode_map`]).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(SIDECAR_MAGIC);
        out.extend_from_slice(&SIDECAR_VERSION.to_le_bytes());
        out.extend_from_slice(&(self.len() as u64).to_le_bytes());
        for kind in MapKind::ALL {
            let bytes = encode_map(self.get(kind));
            out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            out.extend_from_slice(&bytes);
        }
        out
    }

    /// Reads [`VertexMaps::to_bytes`]; `garment` names it in errors. The values are decoded,
    /// not validated: call [`VertexMaps::validate`].
    pub fn from_bytes(bytes: &[u8], garment: &str) -> Result<Self, MapError> {
        let corrupt = |problem: &str| MapError::Corrupt {
            garment: garment.into(),
            problem: problem.into(),
        };
        let mut r = bytes;
        let mut magic = [0u8; 8];
        r.read_exact(&mut magic)
            .map_err(|_| corrupt("shorter than its header"))?;
        if &magic != SIDECAR_MAGIC {
            return Err(corrupt("not a Drape map file (wrong magic bytes)"));
        }
        let version = read_u32(&mut r).ok_or_else(|| corrupt("no version"))?;
        if version != SIDECAR_VERSION {
            return Err(corrupt(&format!(
                "format version {version}; this build reads version {SIDECAR_VERSION}"
            )));
        }
        let n = read_u64(&mut r).ok_or_else(|| corrupt("no vertex count"))? as usize;
        let mut maps = Self::default();
        for kind in MapKind::ALL {
            let len = read_u64(&mut r).ok_or_else(|| corrupt("truncated"))? as usize;
            if len > r.len() {
                return Err(corrupt("truncated"));
            }
            let (data, rest) = r.split_at(len);
            maps.set(
                kind,
                decode_map(data, n).map_err(|p| corrupt(&format!("{}: {p}", kind.name())))?,
            );
            r = rest;
        }
        if !r.is_empty() {
            return Err(corrupt("trailing bytes after the last map"));
        }
        Ok(maps)
    }
}

fn read_u32(r: &mut &[u8]) -> Option<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b).ok()?;
    Some(u32::from_le_bytes(b))
}

fn read_u64(r: &mut &[u8]) -> Option<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b).ok()?;
    Some(u64::from_le_bytes(b))
}

/// The first bytes of a sidecar map file.
pub const SIDECAR_MAGIC: &[u8; 8] = b"DRAPEMAP";
/// The sidecar format version this build writes and reads.
pub const SIDECAR_VERSION: u32 = 1;
/// Extension of sidecar map files.
pub const SIDECAR_EXTENSION: &str = "drapemaps";
/// Maps whose inline text would be longer than this are written to a sidecar file (bytes).
pub const INLINE_LIMIT_BYTES: usize = 16 * 1024;

/// Encodes one map losslessly as runs: a LEB128 header `h`, then for `h` even a literal run of
/// `h/2 + 1` values, for `h` odd one value repeated `(h−1)/2 + 1` times; every value as its
/// 4 little-endian `f32` bytes. A constant map is 5–9 bytes; an unrepetitive one costs 4 bytes
/// a value plus a header per 2⁶³ values.
pub fn encode_map(values: &[Real]) -> Vec<u8> {
    let mut out = Vec::with_capacity(8 + values.len() / 4);
    let mut i = 0;
    while i < values.len() {
        let v = values[i].to_bits();
        let mut run = 1;
        while i + run < values.len() && values[i + run].to_bits() == v {
            run += 1;
        }
        if run >= 2 {
            write_leb(&mut out, ((run as u64 - 1) << 1) | 1);
            out.extend_from_slice(&values[i].to_le_bytes());
            i += run;
            continue;
        }
        // A literal run: until the next pair of equal values.
        let start = i;
        i += 1;
        while i < values.len()
            && !(i + 1 < values.len() && values[i].to_bits() == values[i + 1].to_bits())
        {
            i += 1;
        }
        write_leb(&mut out, (i - start - 1) as u64 * 2);
        for v in &values[start..i] {
            out.extend_from_slice(&v.to_le_bytes());
        }
    }
    out
}

/// Most vertices a painted map may have: far more than any garment, and a bound on what a few
/// bytes of run-length data can make a loader allocate (64 MiB per map).
pub const MAX_MAP_VERTICES: usize = 1 << 24;

/// Decodes [`encode_map`]'s output, which must hold exactly `n` values (at most
/// [`MAX_MAP_VERTICES`]).
pub fn decode_map(bytes: &[u8], n: usize) -> Result<Vec<Real>, String> {
    if n > MAX_MAP_VERTICES {
        return Err(format!(
            "{n} vertices announced; a map may have at most {MAX_MAP_VERTICES}"
        ));
    }
    let mut out = Vec::with_capacity(n);
    let mut r = bytes;
    let value = |r: &mut &[u8]| -> Result<Real, String> {
        read_u32(r)
            .map(f32::from_bits)
            .ok_or_else(|| "a run ends early".to_string())
    };
    while !r.is_empty() {
        let h = read_leb(&mut r).ok_or("a run header ends early")?;
        let count = usize::try_from((h >> 1) + 1).map_err(|_| "a run is too long")?;
        if count > n - out.len() {
            return Err(format!("more than the {n} values the header announces"));
        }
        if h & 1 == 1 {
            let v = value(&mut r)?;
            out.extend(std::iter::repeat_n(v, count));
        } else {
            for _ in 0..count {
                out.push(value(&mut r)?);
            }
        }
    }
    if out.len() != n {
        return Err(format!("{} values where {n} were announced", out.len()));
    }
    Ok(out)
}

fn write_leb(out: &mut Vec<u8>, mut v: u64) {
    loop {
        let byte = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn read_leb(r: &mut &[u8]) -> Option<u64> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&b, rest) = r.split_first()?;
        *r = rest;
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
    }
    None
}

/// A garment's painted maps and how they act on the simulation, as stored in the scene
/// (`GarmentSpec::maps`).
///
/// In the scene file the values are written compactly: each map as base64 of
/// [`encode_map`] inline, or, when that text would pass [`INLINE_LIMIT_BYTES`], all of them in
/// a binary sidecar file beside the scene (`<scene>.<garment index>.drapemaps`), which
/// [`crate::scene::Scene::save`] writes and [`crate::scene::Scene::load`] reads back. In memory
/// the values are always loaded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GarmentMaps {
    /// Attachment weights at or above this become hard pins (dimensionless, in (0, 1]).
    pub pin_threshold: Real,
    /// Compliance of a soft attachment as its weight approaches 1 (m/N).
    pub soft_compliance_m_per_n: Real,
    /// Compliance of a soft attachment as its weight approaches 0 (m/N); weight 0 itself is
    /// no attachment.
    pub free_compliance_m_per_n: Real,
    /// The values, one per render-mesh vertex.
    #[serde(with = "inline_values")]
    pub values: VertexMaps,
    /// The sidecar file holding the values (relative to the scene file) when they are too
    /// large to write inline; set only in a file being written or read, never in a loaded
    /// scene.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
}

/// Default [`GarmentMaps::pin_threshold`].
pub const DEFAULT_PIN_THRESHOLD: Real = 0.99;
/// Default [`GarmentMaps::soft_compliance_m_per_n`] (m/N).
pub const DEFAULT_SOFT_COMPLIANCE_M_PER_N: Real = 1.0e-4;
/// Default [`GarmentMaps::free_compliance_m_per_n`] (m/N).
pub const DEFAULT_FREE_COMPLIANCE_M_PER_N: Real = 1.0;

impl Default for GarmentMaps {
    fn default() -> Self {
        Self {
            pin_threshold: DEFAULT_PIN_THRESHOLD,
            soft_compliance_m_per_n: DEFAULT_SOFT_COMPLIANCE_M_PER_N,
            free_compliance_m_per_n: DEFAULT_FREE_COMPLIANCE_M_PER_N,
            values: VertexMaps::default(),
            file: None,
        }
    }
}

/// What an attachment weight does to its vertex.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Attach {
    /// No attachment (weight 0).
    Free,
    /// A soft attachment to the target with this compliance (m/N).
    Soft(Real),
    /// A hard pin (weight at or above the threshold).
    Hard,
}

/// The attachment of weight `w` (module docs, "From weight to compliance"):
///
/// ```text
/// w ≤ 0            free
/// w ≥ threshold    hard pin
/// otherwise        α(w) = α₁ · (α₀ / α₁)^(1 − w)     (m/N)
/// ```
///
/// with `α₁` = `soft_compliance_m_per_n` and `α₀` = `free_compliance_m_per_n`: the compliance
/// is interpolated geometrically, so equal steps of weight are equal factors of stiffness.
pub fn attachment_compliance_m_per_n(w: Real, maps: &GarmentMaps) -> Attach {
    if w.is_nan() || w <= 0.0 {
        Attach::Free
    } else if w >= maps.pin_threshold {
        Attach::Hard
    } else {
        let a1 = maps.soft_compliance_m_per_n;
        let a0 = maps.free_compliance_m_per_n;
        Attach::Soft(a1 * (a0 / a1).powf(1.0 - w))
    }
}

impl GarmentMaps {
    /// Unpainted maps for a render mesh of `vertices` vertices, with the default settings.
    pub fn new(vertices: usize) -> Self {
        Self {
            values: VertexMaps::new(vertices),
            ..Self::default()
        }
    }

    /// Checks the settings, and the values against a render mesh of `vertices` vertices; the
    /// error names `garment`.
    pub fn validate(&self, garment: &str, vertices: usize) -> Result<(), MapError> {
        self.validate_settings(garment)?;
        self.values.validate(garment, vertices)
    }

    /// Checks the settings alone (the mesh is not known yet).
    pub fn validate_settings(&self, garment: &str) -> Result<(), MapError> {
        let setting = |field, problem: String| MapError::Setting {
            garment: garment.into(),
            field,
            problem,
        };
        if !(self.pin_threshold > 0.0 && self.pin_threshold <= 1.0) {
            return Err(setting(
                "pin_threshold",
                format!(
                    "{} must be greater than 0 and at most 1",
                    self.pin_threshold
                ),
            ));
        }
        let a1 = self.soft_compliance_m_per_n;
        let a0 = self.free_compliance_m_per_n;
        if !(a1.is_finite() && a1 > 0.0) {
            return Err(setting(
                "soft_compliance_m_per_n",
                format!("{a1} must be a finite compliance greater than 0 m/N"),
            ));
        }
        if !(a0.is_finite() && a0 >= a1) {
            return Err(setting(
                "free_compliance_m_per_n",
                format!("{a0} must be finite and at least soft_compliance_m_per_n ({a1} m/N)"),
            ));
        }
        Ok(())
    }

    /// The sidecar file name for garment `index` of the scene file `scene_path`.
    pub fn sidecar_name(scene_path: &Path, index: usize) -> PathBuf {
        let stem = scene_path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "scene".into());
        PathBuf::from(format!("{stem}.{index}.{SIDECAR_EXTENSION}"))
    }

    /// Whether the values are too large to write inline ([`INLINE_LIMIT_BYTES`]).
    pub fn wants_sidecar(&self) -> bool {
        let bytes: usize = MapKind::ALL
            .iter()
            .map(|&k| encode_map(self.values.get(k)).len())
            .sum();
        bytes * 4 / 3 > INLINE_LIMIT_BYTES
    }

    /// Writes the values to the sidecar `file` (relative to `scene_path`) and returns a copy
    /// that refers to it, with no inline values, as the scene file stores it.
    pub fn to_sidecar(
        &self,
        garment: &str,
        scene_path: &Path,
        file: PathBuf,
    ) -> Result<Self, MapError> {
        let full = crate::file::resolve(scene_path, &file);
        crate::file::atomic::write_atomic(&full, &self.values.to_bytes()).map_err(|e| {
            MapError::File {
                garment: garment.into(),
                path: full.clone(),
                message: e.to_string(),
            }
        })?;
        Ok(Self {
            values: VertexMaps::default(),
            file: Some(file),
            ..self.clone()
        })
    }

    /// Reads the values from the sidecar file named in `file` (relative to `scene_path`), if
    /// any, and clears `file`. Maps without a sidecar are left as they are.
    pub fn load_sidecar(&mut self, garment: &str, scene_path: &Path) -> Result<(), MapError> {
        let Some(file) = self.file.take() else {
            return Ok(());
        };
        let full = crate::file::resolve(scene_path, &file);
        let file_err = |message: String| MapError::File {
            garment: garment.into(),
            path: full.clone(),
            message,
        };
        let mut bytes = Vec::new();
        std::fs::File::open(&full)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .map_err(|e| file_err(e.to_string()))?;
        self.values = VertexMaps::from_bytes(&bytes, garment)?;
        Ok(())
    }
}

/// One map as base64 text of [`encode_map`].
pub fn encode_text(values: &[Real]) -> String {
    base64::engine::general_purpose::STANDARD_NO_PAD.encode(encode_map(values))
}

/// Serde for [`GarmentMaps::values`]: a vertex count and one base64 string per map.
mod inline_values {
    use super::*;

    #[derive(Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Inline {
        vertices: u64,
        attachment: String,
        stretch_scale: String,
        bend_scale: String,
        mass_scale: String,
    }

    pub fn serialize<S: serde::Serializer>(v: &VertexMaps, s: S) -> Result<S::Ok, S::Error> {
        Inline {
            vertices: v.len() as u64,
            attachment: encode_text(v.get(MapKind::Attachment)),
            stretch_scale: encode_text(v.get(MapKind::StretchScale)),
            bend_scale: encode_text(v.get(MapKind::BendScale)),
            mass_scale: encode_text(v.get(MapKind::MassScale)),
        }
        .serialize(s)
    }

    pub fn deserialize<'de, D: serde::Deserializer<'de>>(d: D) -> Result<VertexMaps, D::Error> {
        use serde::de::Error;
        let i = Inline::deserialize(d)?;
        let n = usize::try_from(i.vertices).map_err(D::Error::custom)?;
        let mut out = VertexMaps::default();
        for (kind, text) in MapKind::ALL.into_iter().zip([
            &i.attachment,
            &i.stretch_scale,
            &i.bend_scale,
            &i.mass_scale,
        ]) {
            let bytes = base64::engine::general_purpose::STANDARD_NO_PAD
                .decode(text.trim_end_matches('='))
                .map_err(|e| D::Error::custom(format!("{}: not base64: {e}", kind.name())))?;
            let values = decode_map(&bytes, n)
                .map_err(|e| D::Error::custom(format!("{}: {e}", kind.name())))?;
            out.set(kind, values);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_is_lossless_and_compact() {
        let mut v = vec![0.0; 10_000];
        for (i, x) in v.iter_mut().enumerate().take(3000).skip(1000) {
            *x = (i as Real * 0.001).sin().abs();
        }
        v[5000] = 1.0;
        v[5001] = 1.0;
        v[9999] = -0.0;
        let e = encode_map(&v);
        let back = decode_map(&e, v.len()).unwrap();
        assert!(v.iter().zip(&back).all(|(a, b)| a.to_bits() == b.to_bits()));
        assert!(e.len() < 2000 * 4 + 64, "{} bytes", e.len());
        assert!(encode_map(&[1.0; 50_000]).len() <= 9);
        assert!(decode_map(&e, v.len() + 1).is_err());
        assert!(decode_map(&e[..e.len() - 1], v.len()).is_err());
        assert_eq!(decode_map(&[], 0).unwrap(), Vec::<Real>::new());
        // One run of a billion values is a few bytes; it is refused before anything is
        // allocated (found by the scene_load fuzz target).
        let bomb = encode_map(&[0.5]);
        assert!(decode_map(&bomb, 1_000_000_000)
            .unwrap_err()
            .contains("at most"));
    }

    #[test]
    fn sidecar_bytes_round_trip_and_reject_damage() {
        let mut m = VertexMaps::new(100);
        m.get_mut(MapKind::Attachment)[3] = 0.25;
        m.get_mut(MapKind::BendScale)[99] = 7.0;
        let b = m.to_bytes();
        assert_eq!(VertexMaps::from_bytes(&b, "g").unwrap(), m);
        let e = VertexMaps::from_bytes(&b[..b.len() - 2], "shirt").unwrap_err();
        assert!(e.to_string().contains("shirt"), "{e}");
        let mut bad = b.clone();
        bad[0] = b'X';
        assert!(VertexMaps::from_bytes(&bad, "g").is_err());
    }

    #[test]
    fn validation_names_garment_map_and_vertex() {
        let mut m = VertexMaps::new(4);
        m.get_mut(MapKind::Attachment)[2] = Real::NAN;
        let e = m.validate("skirt", 4).unwrap_err().to_string();
        assert!(
            e.contains("skirt") && e.contains("attachment") && e.contains("vertex 2"),
            "{e}"
        );
        let e = VertexMaps::new(3).validate("skirt", 4).unwrap_err();
        assert!(
            matches!(
                e,
                MapError::Length {
                    got: 3,
                    expected: 4,
                    ..
                }
            ),
            "{e}"
        );
        let mut m = VertexMaps::new(4);
        m.get_mut(MapKind::MassScale)[0] = 0.0;
        assert!(matches!(
            m.validate("g", 4),
            Err(MapError::OutOfRange { .. })
        ));
        let bad = GarmentMaps {
            pin_threshold: 1.5,
            ..GarmentMaps::new(4)
        };
        assert!(bad
            .validate("g", 4)
            .unwrap_err()
            .to_string()
            .contains("pin_threshold"));
    }

    #[test]
    fn weight_curve_is_geometric_between_the_two_compliances() {
        let m = GarmentMaps::default();
        assert_eq!(attachment_compliance_m_per_n(0.0, &m), Attach::Free);
        assert_eq!(attachment_compliance_m_per_n(0.99, &m), Attach::Hard);
        assert_eq!(attachment_compliance_m_per_n(1.0, &m), Attach::Hard);
        let Attach::Soft(a) = attachment_compliance_m_per_n(0.5, &m) else {
            panic!("0.5 is a soft attachment")
        };
        // α₁·(α₀/α₁)^0.5 = 1e-4 · 100 = 1e-2 m/N.
        approx::assert_relative_eq!(a, 1.0e-2, max_relative = 1e-5);
        let Attach::Soft(a75) = attachment_compliance_m_per_n(0.75, &m) else {
            panic!()
        };
        approx::assert_relative_eq!(a / a75, 10.0, max_relative = 1e-4);
    }
}
