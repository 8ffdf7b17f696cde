//! Atomic file writes: a temporary file in the target's directory, `fsync`, then a rename.
//!
//! A rename within one directory (one file system) replaces the target in a single step, so a
//! reader sees either the old file or the complete new one, never a truncated mix. If writing
//! fails, the temporary file is removed and the old target is left untouched.
//!
//! The steps: create `.NAME.PID-COUNTER-NANOS.tmp` beside the target (hidden, and never taken
//! for the file itself), write through a buffer, flush, `fsync` the file, rename it over the
//! target, then `fsync` the folder so the rename itself is on disk. A process killed at any
//! point leaves the old file or the complete new one, and at worst a stray temporary file
//! (`tests/crash_safe.rs` kills the `drape` binary mid-save to check this).

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Counter that makes temporary names unique within this process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` atomically (see the [module docs](self)).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// Writes to `path` atomically through `write`, which receives a buffered writer.
///
/// `write` may be called once; whatever it writes becomes the new content of `path` only if it
/// returns `Ok` and the data reaches the disk.
pub fn write_atomic_with<F>(path: &Path, write: F) -> io::Result<()>
where
    F: FnOnce(&mut dyn Write) -> io::Result<()>,
{
    let file_name = path.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("'{}' does not name a file", path.display()),
        )
    })?;
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (tmp_path, file) = create_temp(&dir, &file_name.to_string_lossy())?;
    let result = (|| {
        let mut w = BufWriter::new(file);
        write(&mut w)?;
        let file = w.into_inner().map_err(io::IntoInnerError::into_error)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp_path, path)
    })();
    if let Err(e) = result {
        // Best effort: the original error is the one worth reporting.
        let _ = fs::remove_file(&tmp_path);
        return Err(e);
    }
    sync_dir(&dir);
    Ok(())
}

/// Renames `from` to `to` (one step, as [`write_atomic`] does its last step), then flushes
/// the folder entries of both to disk, so the rename survives a power cut.
pub fn rename(from: &Path, to: &Path) -> io::Result<()> {
    fs::rename(from, to)?;
    let dir = |p: &Path| match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let (a, b) = (dir(from), dir(to));
    sync_dir(&b);
    if a != b {
        sync_dir(&a);
    }
    Ok(())
}

/// Creates a new, uniquely named, hidden temporary file in `dir`.
fn create_temp(dir: &Path, file_name: &str) -> io::Result<(PathBuf, File)> {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut last_err = None;
    for _ in 0..16 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(
            ".{file_name}.{}-{n}-{nanos:08x}.tmp",
            std::process::id()
        ));
        match OpenOptions::new().write(true).create_new(true).open(&tmp) {
            Ok(f) => return Ok((tmp, f)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or_else(|| io::Error::other("no unique temporary file name")))
}

/// Flushes the directory entry of the rename to disk (Unix; a no-op elsewhere).
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        // Best effort: the data itself is already synced, and some file systems refuse this.
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn atomic_write_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.bin");
        write_atomic(&path, b"first").unwrap();
        write_atomic(&path, b"second, longer").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second, longer");
        assert_eq!(entries(dir.path()), vec!["out.bin".to_string()]);
    }

    #[test]
    fn failed_write_keeps_old_file_and_removes_temp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.bin");
        write_atomic(&path, b"good").unwrap();
        let err = write_atomic_with(&path, |w| {
            w.write_all(b"half")?;
            Err(io::Error::other("disk full"))
        })
        .unwrap_err();
        assert_eq!(err.to_string(), "disk full");
        assert_eq!(fs::read(&path).unwrap(), b"good");
        assert_eq!(entries(dir.path()), vec!["out.bin".to_string()]);
    }

    #[test]
    fn missing_directory_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/dir/out.bin");
        assert!(write_atomic(&path, b"x").is_err());
    }
}
