//! The preset library: fabric and solver presets, built in and in the user's folder.
//!
//! A preset is a small RON file. A **fabric preset** holds a [`Fabric`] (its fields at the top
//! level); a **solver preset** holds [`SolverSettings`] under `settings`:
//!
//! ```text
//! (                                   (
//!     version: 2,                         version: 2,
//!     name: "denim",                      settings: (
//!     source: "Wang 2011 (denim)",            substeps: 20,
//!     density_kg_per_m2: 0.324,               iterations: 1,
//!     ...                                     ...
//! )                                       ),
//!                                     )
//! ```
//!
//! - **Versions.** [`PRESET_VERSION`] is the version this build writes. A file without
//!   `version` is version 1 (the fabric files from before the schema version); versions 1 to
//!   [`PRESET_VERSION`] load and are upgraded, any other is an error naming the file and the
//!   supported versions. A file's kind is told from its content: a top-level `settings` field
//!   makes it a solver preset.
//! - **Strict fields.** Unknown fields are errors (a typo never becomes a silently ignored
//!   value). Every numeric fabric field must be given; `name` and `source` may be left out.
//!   Missing solver settings take their defaults, as in a scene's `solver`.
//! - **Validation** names the file, the field, the value and the allowed range (fabric ranges in
//!   [`crate::garment::material::FABRIC_RANGES`], solver ranges in [`SolverSettings::validate`]).
//! - **Built-ins** are compiled in from `presets/fabrics/` ([`BUILTIN_FABRICS`]) and
//!   `presets/solver/` ([`BUILTIN_SOLVERS`]) and are read-only.
//! - **The user library** ([`Library`]) is a folder: `DRAPE_PRESET_DIR` when set, else
//!   `presets/` in the platform's config folder (see [`Library::open_default`]), holding
//!   `fabrics/NAME.ron` and `solver/NAME.ron`. Names are 1 to 64 characters from `a-z`, `0-9`,
//!   `_` and `-`. Writes are atomic ([`crate::file::atomic`]). A user preset can never take the
//!   name of a built-in one (of either kind), and never replaces another user preset unless
//!   asked to overwrite.
//!
//! The file format, the folders per platform and the `drape preset` commands are described in
//! `docs/presets.md`.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use crate::garment::material::BUILTIN_FABRICS;
use crate::garment::material::{Fabric, FabricError};
use crate::math::Real;
use crate::solver::{SimError, SolverSettings};

mod library;
pub use library::Library;

/// The preset format version this build writes.
pub const PRESET_VERSION: u32 = 2;
/// The oldest preset format version this build reads (a file without `version`).
pub const OLDEST_PRESET_VERSION: u32 = 1;
/// The environment variable that replaces the platform's user preset folder.
pub const PRESET_DIR_ENV: &str = "DRAPE_PRESET_DIR";
/// The longest preset name, in characters.
pub const MAX_NAME_LEN: usize = 64;
/// The largest preset file read, in bytes (a preset is a few hundred bytes).
const MAX_FILE_BYTES: u64 = 1 << 20;

/// The built-in solver presets: `(name, RON text)`, compiled in from `presets/solver/`.
pub const BUILTIN_SOLVERS: &[(&str, &str)] = &[
    ("preview", include_str!("../../presets/solver/preview.ron")),
    (
        "production",
        include_str!("../../presets/solver/production.ron"),
    ),
    ("final", include_str!("../../presets/solver/final.ron")),
];

/// The name of the default solver preset (equal to [`SolverSettings::default`]).
pub const DEFAULT_SOLVER: &str = "production";

/// What a preset holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PresetKind {
    /// A fabric ([`Fabric`]).
    Fabric,
    /// Solver settings ([`SolverSettings`]).
    Solver,
}

impl PresetKind {
    /// Both kinds, in listing order.
    pub const ALL: [PresetKind; 2] = [PresetKind::Fabric, PresetKind::Solver];

    /// The sub-folder of `presets/` and of the user library that holds this kind.
    pub fn folder(self) -> &'static str {
        match self {
            PresetKind::Fabric => "fabrics",
            PresetKind::Solver => "solver",
        }
    }

    /// The built-in presets of this kind: `(name, RON text)`.
    pub fn builtins(self) -> &'static [(&'static str, &'static str)] {
        match self {
            PresetKind::Fabric => BUILTIN_FABRICS,
            PresetKind::Solver => BUILTIN_SOLVERS,
        }
    }

    /// The RON text of the built-in preset `name` of this kind, if there is one.
    pub fn builtin_text(self, name: &str) -> Option<&'static str> {
        self.builtins()
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, text)| *text)
    }
}

impl fmt::Display for PresetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PresetKind::Fabric => "fabric",
            PresetKind::Solver => "solver",
        })
    }
}

/// Where a preset lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    /// Compiled into Drape from `presets/`; read-only.
    Builtin,
    /// A file in the user library.
    User,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::Builtin => "built-in",
            Origin::User => "user",
        })
    }
}

/// One preset of a library listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PresetEntry {
    /// Preset name: what scenes and the command line call it (the file name without `.ron`).
    pub name: String,
    /// Fabric or solver.
    pub kind: PresetKind,
    /// Built in or the user's.
    pub origin: Origin,
    /// The user preset's file; `None` for a built-in.
    pub path: Option<PathBuf>,
}

impl PresetEntry {
    /// Where the preset comes from, for display: the user file, or the built-in's source file.
    pub fn location(&self) -> String {
        match &self.path {
            Some(p) => p.display().to_string(),
            None => format!(
                "built in, from presets/{}/{}.ron",
                self.kind.folder(),
                self.name
            ),
        }
    }
}

/// A preset's content.
#[derive(Clone, Debug, PartialEq)]
pub enum Preset {
    /// A fabric.
    Fabric(Fabric),
    /// Solver settings.
    Solver(SolverSettings),
}

impl Preset {
    /// Fabric or solver.
    pub fn kind(&self) -> PresetKind {
        match self {
            Preset::Fabric(_) => PresetKind::Fabric,
            Preset::Solver(_) => PresetKind::Solver,
        }
    }
}

/// A parsed and validated preset file.
#[derive(Clone, Debug, PartialEq)]
pub struct ParsedPreset {
    /// The content, upgraded to the current format.
    pub preset: Preset,
    /// The format version the file was written in (1 for a file without `version`).
    pub version: u32,
}

/// A preset found in a library, with its text as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredPreset {
    /// Name, kind, origin and file.
    pub entry: PresetEntry,
    /// The RON text, comments included, as compiled in or as in the user file.
    pub text: String,
    /// The format version of the text (1 for a file without `version`).
    pub version: u32,
    /// The parsed and validated content.
    pub preset: Preset,
}

/// A user preset file that [`Library::list`] skipped, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PresetWarning {
    /// The file (or folder) concerned.
    pub path: PathBuf,
    /// What is wrong with it and how to fix it.
    pub message: String,
}

impl fmt::Display for PresetWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

/// A library listing: the presets, and the user files that could not be listed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scan {
    /// Built-in presets first (fabrics, then solver presets, in their built-in order), then the
    /// user's (fabrics, then solver presets, each sorted by name).
    pub entries: Vec<PresetEntry>,
    /// User files skipped: unreadable, invalid, badly named, or named like a built-in.
    pub warnings: Vec<PresetWarning>,
}

/// A preset that cannot be found, read, written or used. Each message names the preset or the
/// file, and says what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum PresetError {
    /// No preset has this name.
    #[error("no {kind} preset named '{name}'; {available}")]
    Unknown {
        /// Fabric or solver.
        kind: PresetKind,
        /// The requested name.
        name: String,
        /// The presets there are, e.g. `built-in presets: denim, …; user presets in DIR: …`.
        available: String,
    },
    /// No user preset has this name (for operations on user presets only).
    #[error("no user {kind} preset named '{name}' in {}", dir.display())]
    NotUser {
        /// Fabric or solver.
        kind: PresetKind,
        /// The requested name.
        name: String,
        /// The folder searched.
        dir: PathBuf,
    },
    /// The text is not valid RON for a preset (syntax, types, unknown or missing fields).
    #[error("{file}: not a valid preset: {message}")]
    Parse {
        /// The file (or preset name) read.
        file: String,
        /// What is wrong, with the line and column where the parser gives them.
        message: String,
    },
    /// The file's format version is not one this build reads.
    #[error("{file}: preset format version {found} is not supported; this build reads versions {OLDEST_PRESET_VERSION} to {PRESET_VERSION} (a file without `version` is version 1); was it written by a newer Drape?")]
    Version {
        /// The file.
        file: String,
        /// The version found, as written.
        found: String,
    },
    /// A fabric value is out of range.
    #[error("{file}: {source}")]
    Fabric {
        /// The file (or preset name).
        file: String,
        /// The field, its value and the allowed range.
        source: FabricError,
    },
    /// A fabric given inline (not from a file) is out of range.
    #[error(transparent)]
    Invalid(#[from] FabricError),
    /// A solver setting is out of range.
    #[error("{file}: {source}")]
    Solver {
        /// The file (or preset name).
        file: String,
        /// The field, its value and the allowed range.
        source: SimError,
    },
    /// A file or folder cannot be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The name is not a valid preset name.
    #[error("'{name}' is not a valid preset name: use 1 to {MAX_NAME_LEN} characters from a-z, 0-9, '_' and '-'{hint}")]
    BadName {
        /// The name.
        name: String,
        /// Where the name came from, when that helps (e.g. the imported file's name).
        hint: &'static str,
    },
    /// The name belongs to a built-in preset, which cannot be replaced, renamed or removed.
    #[error("'{name}' is a built-in {kind} preset and read-only: a user preset cannot replace, rename or remove it, nor take its name; choose another name (copy it with `drape preset new NEW_NAME --from {name}`)")]
    ReadOnly {
        /// The built-in's kind.
        kind: PresetKind,
        /// The built-in's name.
        name: String,
    },
    /// A user preset of this name exists and overwriting was not asked for.
    #[error("{}: a user {kind} preset named '{name}' already exists; choose another name, remove it first, or overwrite it (`--force`)", path.display())]
    Exists {
        /// Fabric or solver.
        kind: PresetKind,
        /// The name.
        name: String,
        /// The existing file.
        path: PathBuf,
    },
    /// There is no platform config folder for the user library.
    #[error("no config folder for the user preset library (is HOME set?); set {PRESET_DIR_ENV} to a folder")]
    NoConfigDir,
}

/// Checks a preset name: 1 to [`MAX_NAME_LEN`] characters from `a-z`, `0-9`, `_` and `-`. So a
/// name is always one plain file name, never a path.
pub fn check_name(name: &str) -> Result<(), PresetError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(PresetError::BadName {
            name: name.into(),
            hint: "",
        })
    }
}

/// The kind of the built-in preset called `name`, if any (names are unique across kinds).
pub fn builtin_kind(name: &str) -> Option<PresetKind> {
    PresetKind::ALL
        .into_iter()
        .find(|k| k.builtin_text(name).is_some())
}

/// The file label of a built-in preset in errors: its source file in the repository.
fn builtin_label(kind: PresetKind, name: &str) -> String {
    format!("presets/{}/{name}.ron", kind.folder())
}

/// A fabric preset file, as written: [`Fabric`]'s fields plus `version`.
///
/// Kept apart from [`Fabric`] so that a scene's inline `fabric_override` stays a plain fabric;
/// the conversions below destructure every field, so a new [`Fabric`] field fails to compile
/// here until the file format has it.
#[derive(Serialize, Deserialize)]
#[serde(rename = "Fabric", deny_unknown_fields)]
struct FabricFile {
    #[serde(default = "version_one")]
    version: u32,
    #[serde(default)]
    name: String,
    #[serde(default)]
    source: String,
    density_kg_per_m2: Real,
    stretch_warp_n_per_m: Real,
    stretch_weft_n_per_m: Real,
    shear_n_per_m: Real,
    bend_warp_n_m: Real,
    bend_weft_n_m: Real,
    thickness_m: Real,
    friction: Real,
    damping_per_s: Real,
}

impl From<FabricFile> for Fabric {
    fn from(f: FabricFile) -> Self {
        let FabricFile {
            version: _,
            name,
            source,
            density_kg_per_m2,
            stretch_warp_n_per_m,
            stretch_weft_n_per_m,
            shear_n_per_m,
            bend_warp_n_m,
            bend_weft_n_m,
            thickness_m,
            friction,
            damping_per_s,
        } = f;
        Fabric {
            name,
            source,
            density_kg_per_m2,
            stretch_warp_n_per_m,
            stretch_weft_n_per_m,
            shear_n_per_m,
            bend_warp_n_m,
            bend_weft_n_m,
            thickness_m,
            friction,
            damping_per_s,
        }
    }
}

impl From<&Fabric> for FabricFile {
    fn from(f: &Fabric) -> Self {
        let Fabric {
            name,
            source,
            density_kg_per_m2,
            stretch_warp_n_per_m,
            stretch_weft_n_per_m,
            shear_n_per_m,
            bend_warp_n_m,
            bend_weft_n_m,
            thickness_m,
            friction,
            damping_per_s,
        } = f.clone();
        FabricFile {
            version: PRESET_VERSION,
            name,
            source,
            density_kg_per_m2,
            stretch_warp_n_per_m,
            stretch_weft_n_per_m,
            shear_n_per_m,
            bend_warp_n_m,
            bend_weft_n_m,
            thickness_m,
            friction,
            damping_per_s,
        }
    }
}

/// A solver preset file, as written.
#[derive(Serialize, Deserialize)]
#[serde(rename = "SolverPreset", deny_unknown_fields)]
struct SolverFile {
    #[serde(default = "version_one")]
    version: u32,
    settings: SolverSettings,
}

fn version_one() -> u32 {
    OLDEST_PRESET_VERSION
}

/// Parses and validates preset text of either kind; `file` labels it in errors.
///
/// The version is checked first, so a file from a newer Drape gets a version error rather than
/// one about fields this build does not know.
pub fn parse(text: &str, file: &str) -> Result<ParsedPreset, PresetError> {
    let parse_error = |message: String| PresetError::Parse {
        file: file.into(),
        message,
    };
    let value: ron::Value = ron::from_str(text).map_err(|e| parse_error(e.to_string()))?;
    let ron::Value::Map(map) = value else {
        return Err(parse_error(
            "expected a preset: `( ... )` with named fields".into(),
        ));
    };
    let version = match map.get(&ron::Value::String("version".into())) {
        None => OLDEST_PRESET_VERSION,
        Some(v) => v
            .clone()
            .into_rust::<u32>()
            .ok()
            .filter(|v| (OLDEST_PRESET_VERSION..=PRESET_VERSION).contains(v))
            .ok_or_else(|| PresetError::Version {
                file: file.into(),
                found: ron::to_string(v).unwrap_or_else(|_| format!("{v:?}")),
            })?,
    };
    let preset = if map.get(&ron::Value::String("settings".into())).is_some() {
        let mut f: SolverFile = ron::from_str(text).map_err(|e| parse_error(e.to_string()))?;
        for w in f.settings.take_retired() {
            log::warn!("{file}: field `settings`: {w}");
        }
        f.settings
            .validate()
            .map_err(|source| PresetError::Solver {
                file: file.into(),
                source,
            })?;
        Preset::Solver(f.settings)
    } else {
        let f: FabricFile = ron::from_str(text).map_err(|e| parse_error(e.to_string()))?;
        let fabric = Fabric::from(f);
        fabric.validate().map_err(|source| PresetError::Fabric {
            file: file.into(),
            source,
        })?;
        Preset::Fabric(fabric)
    };
    Ok(ParsedPreset { preset, version })
}

/// Parses preset text that must be of `kind`; `file` labels it in errors.
pub fn parse_kind(kind: PresetKind, text: &str, file: &str) -> Result<ParsedPreset, PresetError> {
    let parsed = parse(text, file)?;
    if parsed.preset.kind() != kind {
        return Err(PresetError::Parse {
            file: file.into(),
            message: format!(
                "this is a {} preset, not a {kind} preset (a solver preset has a `settings` field)",
                parsed.preset.kind()
            ),
        });
    }
    Ok(parsed)
}

/// Parses and validates a fabric preset's text; `file` labels it in errors.
pub fn parse_fabric(text: &str, file: &str) -> Result<Fabric, PresetError> {
    match parse_kind(PresetKind::Fabric, text, file)?.preset {
        Preset::Fabric(f) => Ok(f),
        Preset::Solver(_) => Err(wrong_kind(file, PresetKind::Fabric)),
    }
}

/// Parses and validates a solver preset's text; `file` labels it in errors.
pub fn parse_solver(text: &str, file: &str) -> Result<SolverSettings, PresetError> {
    match parse_kind(PresetKind::Solver, text, file)?.preset {
        Preset::Solver(s) => Ok(s),
        Preset::Fabric(_) => Err(wrong_kind(file, PresetKind::Solver)),
    }
}

fn wrong_kind(file: &str, kind: PresetKind) -> PresetError {
    PresetError::Parse {
        file: file.into(),
        message: format!("not a {kind} preset"),
    }
}

/// The RON text of a preset in the current format, with a header comment naming it.
pub fn to_ron(preset: &Preset, name: &str) -> Result<String, PresetError> {
    let config = ron::ser::PrettyConfig::new().struct_names(false);
    let body = match preset {
        Preset::Fabric(f) => ron::ser::to_string_pretty(&FabricFile::from(f), config),
        Preset::Solver(s) => ron::ser::to_string_pretty(
            &SolverFile {
                version: PRESET_VERSION,
                settings: s.clone(),
            },
            config,
        ),
    }
    .map_err(|e| PresetError::Parse {
        file: name.into(),
        message: format!("cannot be written: {e}"),
    })?;
    Ok(format!(
        "// Drape {} preset '{name}', format version {PRESET_VERSION} (see docs/presets.md).\n{body}\n",
        preset.kind()
    ))
}

/// A built-in fabric preset by name.
pub fn builtin_fabric(name: &str) -> Result<Fabric, PresetError> {
    match PresetKind::Fabric.builtin_text(name) {
        Some(text) => parse_fabric(text, &builtin_label(PresetKind::Fabric, name)),
        None => Err(unknown(PresetKind::Fabric, name, &[], None)),
    }
}

/// A built-in solver preset by name.
pub fn builtin_solver(name: &str) -> Result<SolverSettings, PresetError> {
    match PresetKind::Solver.builtin_text(name) {
        Some(text) => parse_solver(text, &builtin_label(PresetKind::Solver, name)),
        None => Err(unknown(PresetKind::Solver, name, &[], None)),
    }
}

fn unknown(kind: PresetKind, name: &str, user: &[String], dir: Option<&Path>) -> PresetError {
    let builtin: Vec<&str> = kind.builtins().iter().map(|(n, _)| *n).collect();
    let mut available = format!("built-in presets: {}", builtin.join(", "));
    if let (false, Some(dir)) = (user.is_empty(), dir) {
        available += &format!("; user presets in {}: {}", dir.display(), user.join(", "));
    }
    PresetError::Unknown {
        kind,
        name: name.into(),
        available,
    }
}

/// Reads a preset file, refusing anything larger than a preset could be.
fn read_text(path: &Path) -> Result<String, PresetError> {
    let io = |source| PresetError::Io {
        path: path.to_path_buf(),
        source,
    };
    let len = fs::metadata(path).map_err(io)?.len();
    if len > MAX_FILE_BYTES {
        return Err(PresetError::Parse {
            file: path.display().to_string(),
            message: format!("the file is {len} bytes, larger than any preset"),
        });
    }
    fs::read_to_string(path).map_err(io)
}

/// Reads, parses and validates a preset file of either kind (what `drape preset validate`
/// does).
pub fn validate_file(file: &Path) -> Result<ParsedPreset, PresetError> {
    let text = read_text(file)?;
    parse(&text, &file.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_plain_file_names() {
        for ok in ["denim", "my_denim-2", "a", &"x".repeat(MAX_NAME_LEN)] {
            assert!(check_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "",
            "../x",
            "a/b",
            "a\\b",
            ".hidden",
            "Denim",
            "my denim",
            "déjà",
            "x.ron",
            &"x".repeat(MAX_NAME_LEN + 1),
        ] {
            let e = check_name(bad).unwrap_err();
            assert!(matches!(e, PresetError::BadName { .. }), "{bad}: {e}");
            assert!(e.to_string().contains("a-z, 0-9"), "{e}");
        }
    }

    #[test]
    fn builtin_names_are_unique_across_kinds() {
        for (name, _) in BUILTIN_FABRICS {
            assert_eq!(builtin_kind(name), Some(PresetKind::Fabric));
            check_name(name).unwrap();
        }
        for (name, _) in BUILTIN_SOLVERS {
            assert_eq!(builtin_kind(name), Some(PresetKind::Solver));
            check_name(name).unwrap();
        }
    }

    #[test]
    fn kind_is_told_from_content_and_version_defaults_to_one() {
        let fabric = to_ron(&Preset::Fabric(Fabric::default()), "f").unwrap();
        let p = parse(&fabric, "f.ron").unwrap();
        assert_eq!(p.version, PRESET_VERSION);
        assert_eq!(p.preset, Preset::Fabric(Fabric::default()));
        let solver = to_ron(&Preset::Solver(SolverSettings::default()), "s").unwrap();
        let p = parse(&solver, "s.ron").unwrap();
        assert_eq!(p.preset, Preset::Solver(SolverSettings::default()));
        // Without `version`: version 1, same content.
        let v1 = fabric.replace("    version: 2,\n", "");
        assert_ne!(v1, fabric);
        let p = parse(&v1, "f.ron").unwrap();
        assert_eq!(p.version, 1);
        assert_eq!(p.preset, Preset::Fabric(Fabric::default()));
        // A solver preset where a fabric is expected.
        let e = parse_fabric(&solver, "s.ron").unwrap_err().to_string();
        assert!(e.contains("s.ron") && e.contains("solver preset"), "{e}");
    }

    #[test]
    fn versions_out_of_range_are_refused_before_the_fields() {
        for v in ["0", "3", "-1", "\"2\"", "2.5"] {
            let text = format!("(version: {v}, a_field_from_the_future: 1)");
            let e = parse(&text, "new.ron").unwrap_err();
            assert!(matches!(e, PresetError::Version { .. }), "{v}: {e}");
            let m = e.to_string();
            assert!(
                m.contains("new.ron") && m.contains("versions 1 to 2"),
                "{m}"
            );
        }
        let e = parse("[1, 2]", "list.ron").unwrap_err().to_string();
        assert!(e.contains("list.ron") && e.contains("named fields"), "{e}");
    }

    #[test]
    fn missing_fabric_value_is_an_error() {
        let e = parse("(version: 2, name: \"x\", density_kg_per_m2: 0.1)", "m.ron")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("m.ron") && e.contains("stretch_warp_n_per_m"),
            "{e}"
        );
    }
}
