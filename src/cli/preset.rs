//! `drape preset`: list, show, create, import, export, validate, rename and remove presets.
//!
//! The library does the work ([`drape::preset::Library`]); this module parses the command line
//! and prints. A name given without `--kind` is looked up as a fabric preset, then as a solver
//! preset; when both kinds have it, the fabric is taken and a warning says so.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use drape::garment::material::DEFAULT_FABRIC;
use drape::preset::{Library, PresetError, PresetKind, DEFAULT_SOLVER, PRESET_VERSION};

/// `drape preset` and its options.
#[derive(Args)]
pub struct PresetArgs {
    #[command(subcommand)]
    command: PresetCommand,
    /// The kind of preset, where a name could be either (default: fabric, then solver).
    #[arg(long, value_enum, global = true)]
    kind: Option<KindArg>,
}

#[derive(Subcommand)]
enum PresetCommand {
    /// List the built-in and user presets (with --kind, only that kind).
    List,
    /// Print a preset's RON text, after a comment line with its origin and file.
    Show {
        /// The preset name.
        name: String,
    },
    /// Create a user preset as a copy of another (built-in or user) preset.
    New {
        /// The new preset's name: 1 to 64 characters from a-z, 0-9, '_' and '-'.
        name: String,
        /// The preset to copy (default: cotton_shirting, or production with --kind solver).
        #[arg(long)]
        from: Option<String>,
    },
    /// Add a preset file to the user library, named after the file (my_denim.ron → my_denim).
    Import {
        /// The preset file (.ron), fabric or solver.
        file: PathBuf,
        /// Replace a user preset of the same name (built-ins can never be replaced).
        #[arg(long)]
        force: bool,
    },
    /// Write a preset (built-in or user) to a file.
    Export {
        /// The preset name.
        name: String,
        /// The file to write (.ron).
        file: PathBuf,
    },
    /// Check a preset file: syntax, fields, format version and value ranges.
    Validate {
        /// The preset file (.ron).
        file: PathBuf,
    },
    /// Rename a user preset.
    Rename {
        /// The current name.
        from: String,
        /// The new name.
        to: String,
    },
    /// Remove a user preset (built-ins are read-only).
    Remove {
        /// The preset name.
        name: String,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum KindArg {
    /// A fabric preset.
    Fabric,
    /// A solver preset.
    Solver,
}

impl From<KindArg> for PresetKind {
    fn from(k: KindArg) -> Self {
        match k {
            KindArg::Fabric => PresetKind::Fabric,
            KindArg::Solver => PresetKind::Solver,
        }
    }
}

/// Runs `drape preset …`; the error is the message for stderr.
pub fn run(args: PresetArgs) -> Result<(), String> {
    let library = Library::open_default().map_err(|e| e.to_string())?;
    let kind = args.kind.map(PresetKind::from);
    let err = |e: PresetError| e.to_string();
    match args.command {
        PresetCommand::List => {
            let scan = library.scan();
            let rows: Vec<_> = scan
                .entries
                .iter()
                .filter(|e| kind.is_none_or(|k| k == e.kind))
                .collect();
            let width = rows.iter().map(|e| e.name.len()).max().unwrap_or(4).max(4);
            println!("{:<6}  {:<8}  {:<width$}  file", "kind", "origin", "name");
            for e in rows {
                println!(
                    "{:<6}  {:<8}  {:<width$}  {}",
                    e.kind.to_string(),
                    e.origin.to_string(),
                    e.name,
                    e.location()
                );
            }
            for w in &scan.warnings {
                eprintln!("warning: {w}");
            }
            eprintln!("user presets: {}", library.user_dir().display());
            Ok(())
        }
        PresetCommand::Show { name } => {
            let kind = resolve(&library, kind, &name);
            let stored = library.get(kind, &name).map_err(err)?;
            println!(
                "// {} preset '{}': {}, {}",
                stored.entry.kind,
                stored.entry.name,
                stored.entry.origin,
                stored.entry.location()
            );
            print!("{}", stored.text);
            if !stored.text.ends_with('\n') {
                println!();
            }
            if stored.version < PRESET_VERSION {
                eprintln!(
                    "note: written in preset format version {}; it loads and is upgraded to version {PRESET_VERSION} when saved",
                    stored.version
                );
            }
            Ok(())
        }
        PresetCommand::New { name, from } => {
            let (kind, from) = match (kind, from) {
                (Some(k), Some(f)) => (k, f),
                (None, Some(f)) => (resolve(&library, None, &f), f),
                (Some(PresetKind::Solver), None) => (PresetKind::Solver, DEFAULT_SOLVER.into()),
                (_, None) => (PresetKind::Fabric, DEFAULT_FABRIC.into()),
            };
            let path = library.duplicate(kind, &from, &name).map_err(err)?;
            eprintln!(
                "created {kind} preset '{name}' from '{from}': {}",
                path.display()
            );
            Ok(())
        }
        PresetCommand::Import { file, force } => {
            let entry = library.import(&file, force).map_err(err)?;
            eprintln!(
                "imported {} preset '{}': {}",
                entry.kind,
                entry.name,
                entry.location()
            );
            Ok(())
        }
        PresetCommand::Export { name, file } => {
            let kind = resolve(&library, kind, &name);
            library.export(kind, &name, &file).map_err(err)?;
            eprintln!("wrote {kind} preset '{name}' to {}", file.display());
            Ok(())
        }
        PresetCommand::Validate { file } => {
            let parsed = Library::validate_file(&file).map_err(err)?;
            let upgrade = if parsed.version < PRESET_VERSION {
                format!(" (loads, and is upgraded to version {PRESET_VERSION} when saved)")
            } else {
                String::new()
            };
            println!(
                "{}: valid {} preset, format version {}{upgrade}",
                file.display(),
                parsed.preset.kind(),
                parsed.version
            );
            Ok(())
        }
        PresetCommand::Rename { from, to } => {
            let kind = resolve(&library, kind, &from);
            let path = library.rename(kind, &from, &to).map_err(err)?;
            eprintln!(
                "renamed {kind} preset '{from}' to '{to}': {}",
                path.display()
            );
            Ok(())
        }
        PresetCommand::Remove { name } => {
            let kind = resolve(&library, kind, &name);
            library.remove(kind, &name).map_err(err)?;
            eprintln!("removed {kind} preset '{name}'");
            Ok(())
        }
    }
}

/// The kind of preset `name`: the one asked for, else the first kind that has it (fabric,
/// then solver), with a warning when both do. A name no kind has is looked up as a fabric, so
/// the error lists the fabric presets.
fn resolve(library: &Library, kind: Option<PresetKind>, name: &str) -> PresetKind {
    if let Some(k) = kind {
        return k;
    }
    let kinds = library.kinds_of(name);
    if kinds.len() > 1 {
        eprintln!(
            "warning: '{name}' is both a fabric and a solver preset; taking the fabric (pass --kind solver for the other)"
        );
    }
    kinds.first().copied().unwrap_or(PresetKind::Fabric)
}
