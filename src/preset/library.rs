//! The user library on disk: listing, loading, saving, copying, renaming, removing, importing
//! and exporting presets (see the [parent module](super) for the rules).

use std::fs;
use std::path::{Path, PathBuf};

use super::{
    builtin_kind, builtin_label, check_name, parse, parse_kind, read_text, to_ron, unknown,
    wrong_kind, Origin, ParsedPreset, Preset, PresetEntry, PresetError, PresetKind, PresetWarning,
    Scan, StoredPreset, PRESET_DIR_ENV,
};
use crate::garment::material::Fabric;
use crate::solver::SolverSettings;

/// The preset library: the built-in presets and the user's folder.
///
/// Every method reads the folder afresh, so changes made by another process (or by hand) are
/// seen at once; nothing is cached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Library {
    user_dir: PathBuf,
}

impl Library {
    /// The library in `DRAPE_PRESET_DIR` when that is set and not empty, else in the
    /// platform's config folder: `$XDG_CONFIG_HOME/drape/presets` (default
    /// `~/.config/drape/presets`) on Linux, `~/Library/Application Support/Drape/presets` on
    /// macOS, `%APPDATA%\Drape\config\presets` on Windows. The folder is created by the first
    /// write, not here.
    pub fn open_default() -> Result<Library, PresetError> {
        if let Some(dir) = std::env::var_os(PRESET_DIR_ENV).filter(|d| !d.is_empty()) {
            return Ok(Library::with_user_dir(dir));
        }
        directories::ProjectDirs::from("", "", "Drape")
            .map(|d| Library::with_user_dir(d.config_dir().join("presets")))
            .ok_or(PresetError::NoConfigDir)
    }

    /// A library whose user presets live in `dir` (created by the first write).
    pub fn with_user_dir(dir: impl Into<PathBuf>) -> Library {
        Library {
            user_dir: dir.into(),
        }
    }

    /// The user preset folder.
    pub fn user_dir(&self) -> &Path {
        &self.user_dir
    }

    /// The file a user preset of this kind and name has (whether or not it exists).
    pub fn user_path(&self, kind: PresetKind, name: &str) -> PathBuf {
        self.user_dir
            .join(kind.folder())
            .join(format!("{name}.ron"))
    }

    /// The file of the hybrid solver's model `name` (whether or not it exists): `models/NAME.ron`
    /// in the user folder, beside the presets (`drape train` writes there).
    pub fn model_path(&self, name: &str) -> PathBuf {
        self.user_dir.join("models").join(format!("{name}.ron"))
    }

    /// Every preset: built-ins first, then the user's, sorted (see [`Scan::entries`]). User
    /// files that cannot be listed are left out; [`Library::warnings`] or [`Library::scan`]
    /// say which and why.
    pub fn list(&self) -> Vec<PresetEntry> {
        self.scan().entries
    }

    /// The user files that [`Library::list`] leaves out, and why.
    pub fn warnings(&self) -> Vec<PresetWarning> {
        self.scan().warnings
    }

    /// Lists the library once: the presets and the warnings together. Every user file is
    /// parsed and validated; one that fails is a warning, never an error or a panic.
    pub fn scan(&self) -> Scan {
        let mut scan = Scan::default();
        for kind in PresetKind::ALL {
            for (name, _) in kind.builtins() {
                scan.entries.push(PresetEntry {
                    name: (*name).into(),
                    kind,
                    origin: Origin::Builtin,
                    path: None,
                });
            }
        }
        for kind in PresetKind::ALL {
            let mut user = Vec::new();
            for (name, path) in self.user_files(kind, &mut scan.warnings) {
                let warn = |message: String| PresetWarning {
                    path: path.clone(),
                    message,
                };
                if let Err(e) = check_name(&name) {
                    scan.warnings
                        .push(warn(format!("skipped: {e}; rename the file")));
                } else if let Some(k) = builtin_kind(&name) {
                    scan.warnings.push(warn(format!(
                        "skipped: '{name}' is the name of a built-in {k} preset, which always takes precedence; rename the file"
                    )));
                } else {
                    match read_text(&path)
                        .and_then(|t| parse_kind(kind, &t, &path.display().to_string()))
                    {
                        Ok(_) => user.push(PresetEntry {
                            name,
                            kind,
                            origin: Origin::User,
                            path: Some(path),
                        }),
                        Err(e) => {
                            // The warning names the file already; keep the reason only.
                            let full = e.to_string();
                            let prefix = format!("{}: ", path.display());
                            let reason = full.strip_prefix(&prefix).unwrap_or(&full);
                            scan.warnings.push(warn(format!("skipped: {reason}")));
                        }
                    }
                }
            }
            user.sort_by(|a, b| a.name.cmp(&b.name));
            scan.entries.extend(user);
        }
        scan
    }

    /// The `.ron` files in the user folder of `kind`: `(file stem, path)`. Hidden files (such
    /// as the temporary files of an atomic write), other extensions and sub-folders are
    /// ignored; a folder that cannot be read is a warning.
    fn user_files(
        &self,
        kind: PresetKind,
        warnings: &mut Vec<PresetWarning>,
    ) -> Vec<(String, PathBuf)> {
        let dir = self.user_dir.join(kind.folder());
        let entries = match fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            Err(e) => {
                warnings.push(PresetWarning {
                    path: dir,
                    message: format!("cannot be read: {e}"),
                });
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    warnings.push(PresetWarning {
                        path: dir.clone(),
                        message: format!("cannot be read: {e}"),
                    });
                    continue;
                }
            };
            let path = entry.path();
            let file_name = entry.file_name().to_string_lossy().into_owned();
            if file_name.starts_with('.')
                || path.extension().is_none_or(|e| e != "ron")
                || !path.is_file()
            {
                continue;
            }
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push((stem, path));
        }
        out
    }

    /// The names of the user presets of `kind` (files only; their content is not checked).
    fn user_names(&self, kind: PresetKind) -> Vec<String> {
        let mut names: Vec<String> = self
            .user_files(kind, &mut Vec::new())
            .into_iter()
            .map(|(n, _)| n)
            .filter(|n| check_name(n).is_ok() && builtin_kind(n).is_none())
            .collect();
        names.sort();
        names
    }

    /// Finds a preset by kind and name: a built-in first (built-in names are reserved), then
    /// the user's file. Returns its text as stored and its parsed, validated content.
    pub fn get(&self, kind: PresetKind, name: &str) -> Result<StoredPreset, PresetError> {
        if let Some(text) = kind.builtin_text(name) {
            let parsed = parse_kind(kind, text, &builtin_label(kind, name))?;
            return Ok(StoredPreset {
                entry: PresetEntry {
                    name: name.into(),
                    kind,
                    origin: Origin::Builtin,
                    path: None,
                },
                text: text.into(),
                version: parsed.version,
                preset: parsed.preset,
            });
        }
        check_name(name)?;
        let path = self.user_path(kind, name);
        // A built-in name is reserved in both kinds: a file placed by hand under it is ignored.
        if builtin_kind(name).is_some() || !path.is_file() {
            return Err(unknown(
                kind,
                name,
                &self.user_names(kind),
                Some(&self.user_dir),
            ));
        }
        let text = read_text(&path)?;
        let parsed = parse_kind(kind, &text, &path.display().to_string())?;
        Ok(StoredPreset {
            entry: PresetEntry {
                name: name.into(),
                kind,
                origin: Origin::User,
                path: Some(path),
            },
            text,
            version: parsed.version,
            preset: parsed.preset,
        })
    }

    /// The kinds that have a preset called `name` (built-in or user), fabric first.
    pub fn kinds_of(&self, name: &str) -> Vec<PresetKind> {
        PresetKind::ALL
            .into_iter()
            .filter(|&k| {
                k.builtin_text(name).is_some()
                    || (check_name(name).is_ok()
                        && builtin_kind(name).is_none()
                        && self.user_path(k, name).is_file())
            })
            .collect()
    }

    /// A fabric preset by name, the user's or built in.
    pub fn fabric(&self, name: &str) -> Result<Fabric, PresetError> {
        match self.get(PresetKind::Fabric, name)?.preset {
            Preset::Fabric(f) => Ok(f),
            Preset::Solver(_) => Err(wrong_kind(name, PresetKind::Fabric)),
        }
    }

    /// A solver preset by name, the user's or built in.
    pub fn solver(&self, name: &str) -> Result<SolverSettings, PresetError> {
        match self.get(PresetKind::Solver, name)?.preset {
            Preset::Solver(s) => Ok(s),
            Preset::Fabric(_) => Err(wrong_kind(name, PresetKind::Solver)),
        }
    }

    /// Saves a fabric as the user preset `name` (validated first); returns its file. An existing
    /// user preset of that name is an error unless `overwrite`; a built-in name always is.
    pub fn save_fabric(
        &self,
        name: &str,
        fabric: &Fabric,
        overwrite: bool,
    ) -> Result<PathBuf, PresetError> {
        let path = self.target(PresetKind::Fabric, name, overwrite)?;
        fabric.validate().map_err(|source| PresetError::Fabric {
            file: path.display().to_string(),
            source,
        })?;
        let text = to_ron(&Preset::Fabric(fabric.clone()), name)?;
        self.write(&path, &text)?;
        Ok(path)
    }

    /// Saves solver settings as the user preset `name` (validated first); returns its file.
    /// Same rules as [`Library::save_fabric`].
    pub fn save_solver(
        &self,
        name: &str,
        settings: &SolverSettings,
        overwrite: bool,
    ) -> Result<PathBuf, PresetError> {
        let path = self.target(PresetKind::Solver, name, overwrite)?;
        settings.validate().map_err(|source| PresetError::Solver {
            file: path.display().to_string(),
            source,
        })?;
        let text = to_ron(&Preset::Solver(settings.clone()), name)?;
        self.write(&path, &text)?;
        Ok(path)
    }

    /// Copies preset `from` (built-in or user) to the new user preset `to`; returns its file.
    /// The text is copied as it is, comments (and a built-in's sources) included, under a line
    /// saying where it came from. `to` must not exist yet.
    pub fn duplicate(
        &self,
        kind: PresetKind,
        from: &str,
        to: &str,
    ) -> Result<PathBuf, PresetError> {
        let source = self.get(kind, from)?;
        let path = self.target(kind, to, false)?;
        let text = format!(
            "// Duplicated from the {} {kind} preset '{from}'.\n{}",
            source.entry.origin, source.text
        );
        self.write(&path, &text)?;
        Ok(path)
    }

    /// Renames user preset `from` to `to`; returns the new file. Built-ins cannot be renamed,
    /// and `to` must not exist yet.
    pub fn rename(&self, kind: PresetKind, from: &str, to: &str) -> Result<PathBuf, PresetError> {
        let from_path = self.existing_user(kind, from)?;
        let to_path = self.target(kind, to, false)?;
        crate::file::atomic::rename(&from_path, &to_path).map_err(|source| PresetError::Io {
            path: from_path,
            source,
        })?;
        Ok(to_path)
    }

    /// Removes user preset `name`. Built-ins are read-only.
    pub fn remove(&self, kind: PresetKind, name: &str) -> Result<(), PresetError> {
        let path = self.existing_user(kind, name)?;
        fs::remove_file(&path).map_err(|source| PresetError::Io { path, source })
    }

    /// Imports a preset file into the user library: its content is validated, its kind told
    /// from the content and its name taken from the file name (`my_denim.ron` → `my_denim`).
    /// The text is copied as it is, comments included. An existing user preset of that name is
    /// an error unless `overwrite`; a built-in name always is.
    pub fn import(&self, file: &Path, overwrite: bool) -> Result<PresetEntry, PresetError> {
        let name = file
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        check_name(&name).map_err(|_| PresetError::BadName {
            name: name.clone(),
            hint: " (an imported preset takes its name from the file name: rename the file)",
        })?;
        let text = read_text(file)?;
        let parsed = parse(&text, &file.display().to_string())?;
        let kind = parsed.preset.kind();
        let path = self.target(kind, &name, overwrite)?;
        self.write(&path, &text)?;
        Ok(PresetEntry {
            name,
            kind,
            origin: Origin::User,
            path: Some(path),
        })
    }

    /// Writes preset `name` (built-in or user) to `file`, atomically, as its text is stored
    /// (comments included), so that [`Library::import`] reads it back.
    pub fn export(&self, kind: PresetKind, name: &str, file: &Path) -> Result<(), PresetError> {
        let stored = self.get(kind, name)?;
        crate::file::atomic::write_atomic(file, stored.text.as_bytes()).map_err(|source| {
            PresetError::Io {
                path: file.to_path_buf(),
                source,
            }
        })
    }

    /// Reads, parses and validates a preset file of either kind; the same as the free function
    /// [`validate_file`].
    pub fn validate_file(file: &Path) -> Result<ParsedPreset, PresetError> {
        super::validate_file(file)
    }

    /// The file of the existing user preset `name`, or why there is none.
    fn existing_user(&self, kind: PresetKind, name: &str) -> Result<PathBuf, PresetError> {
        if let Some(k) = builtin_kind(name) {
            return Err(PresetError::ReadOnly {
                kind: k,
                name: name.into(),
            });
        }
        check_name(name)?;
        let path = self.user_path(kind, name);
        if path.is_file() {
            Ok(path)
        } else {
            Err(PresetError::NotUser {
                kind,
                name: name.into(),
                dir: self.user_dir.join(kind.folder()),
            })
        }
    }

    /// The file for a new or replaced user preset `name`, after the checks: a valid name, not
    /// a built-in's (of either kind), and not an existing user preset unless `overwrite`.
    fn target(
        &self,
        kind: PresetKind,
        name: &str,
        overwrite: bool,
    ) -> Result<PathBuf, PresetError> {
        check_name(name)?;
        if let Some(k) = builtin_kind(name) {
            return Err(PresetError::ReadOnly {
                kind: k,
                name: name.into(),
            });
        }
        let path = self.user_path(kind, name);
        if !overwrite && fs::symlink_metadata(&path).is_ok() {
            return Err(PresetError::Exists {
                kind,
                name: name.into(),
                path,
            });
        }
        Ok(path)
    }

    /// Writes `text` to `path` atomically, creating the folder if needed.
    fn write(&self, path: &Path, text: &str) -> Result<(), PresetError> {
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(|source| PresetError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        crate::file::atomic::write_atomic(path, text.as_bytes()).map_err(|source| PresetError::Io {
            path: path.to_path_buf(),
            source,
        })
    }
}
