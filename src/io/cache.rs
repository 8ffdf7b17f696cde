//! Point caches for Blender's Mesh Cache modifier: PC2 and MDD.
//!
//! Both store every vertex position of every frame, in the vertex order of the mesh they are
//! applied to (the garment render mesh). The layouts are exactly what Blender reads
//! (`source/blender/modifiers/intern/MOD_meshcache_pc2.cc` and `MOD_meshcache_mdd.cc`):
//!
//! ```text
//! PC2, little-endian                     MDD, big-endian
//! char[12]  "POINTCACHE2\0"              i32       frame count F
//! i32       version = 1                  i32       point count N
//! i32       point count N                f32[F]    time of each frame (s)
//! f32       start frame                  f32[F·N·3] x y z per point, per frame
//! f32       sample rate (frames per sample, 1.0)
//! i32       sample count F
//! f32[F·N·3] x y z per point, per sample
//! ```
//!
//! Writes are atomic ([`write_atomic`]). The readers check the header against the file length
//! before allocating, so a damaged file is an error, never a panic or a huge allocation.

use std::fs;
use std::path::{Path, PathBuf};

use crate::file::atomic::write_atomic;
use crate::math::Vec3;

/// The 12-byte signature at the start of a PC2 file.
const PC2_MAGIC: &[u8; 12] = b"POINTCACHE2\0";
/// Size of the PC2 header (bytes).
const PC2_HEADER: usize = 32;
/// Size of the MDD header, without the frame times (bytes).
const MDD_HEADER: usize = 8;

/// Problems writing or reading a point cache; every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    /// The file could not be written or read.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// There is nothing to write.
    #[error("{}: no frames to write; bake at least one frame", path.display())]
    NoFrames {
        /// The file.
        path: PathBuf,
    },
    /// The frames do not all have the same number of points.
    #[error("{}: frame {frame} has {got} points, but frame 0 has {expected}; every frame must have one position per render vertex", path.display())]
    FrameLength {
        /// The file.
        path: PathBuf,
        /// The frame number (from 0).
        frame: usize,
        /// Points in that frame.
        got: usize,
        /// Points in frame 0.
        expected: usize,
    },
    /// A position is NaN or infinite.
    #[error("{}: frame {frame}, point {point} is not finite; the simulation diverged", path.display())]
    NonFinite {
        /// The file.
        path: PathBuf,
        /// The frame number (from 0).
        frame: usize,
        /// The point number.
        point: usize,
    },
    /// The frame rate or start frame is unusable.
    #[error("{}: {what} is {value}; fps must be finite and positive, start_frame finite", path.display())]
    BadTiming {
        /// The file.
        path: PathBuf,
        /// Which parameter: `"fps"` or `"start_frame"`.
        what: &'static str,
        /// Its value.
        value: f32,
    },
    /// The counts do not fit the format's 32-bit header fields.
    #[error("{}: {frames} frames of {points} points do not fit a 32-bit cache header", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Frame count.
        frames: usize,
        /// Point count.
        points: usize,
    },
    /// The file is not a valid cache of this format.
    #[error("{}: not a valid {format} file: {reason}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// `"PC2"` or `"MDD"`.
        format: &'static str,
        /// What is wrong.
        reason: String,
    },
}

/// The contents of a PC2 file.
#[derive(Clone, Debug, PartialEq)]
pub struct Pc2 {
    /// Frame of the first sample (frames).
    pub start_frame: f32,
    /// Frames between two samples (frames per sample; 1.0 for one sample per frame).
    pub sample_rate: f32,
    /// Positions of every point, one `Vec` per sample (m).
    pub frames: Vec<Vec<Vec3>>,
}

/// The contents of an MDD file.
#[derive(Clone, Debug, PartialEq)]
pub struct Mdd {
    /// Time of each frame (s).
    pub times: Vec<f32>,
    /// Positions of every point, one `Vec` per frame (m).
    pub frames: Vec<Vec<Vec3>>,
}

/// Checks that `frames` is non-empty, rectangular, finite and fits 32-bit counts.
///
/// Returns the point count.
fn check_frames(path: &Path, frames: &[Vec<Vec3>]) -> Result<usize, CacheError> {
    let first = frames.first().ok_or_else(|| CacheError::NoFrames {
        path: path.to_path_buf(),
    })?;
    let points = first.len();
    for (frame, f) in frames.iter().enumerate() {
        if f.len() != points {
            return Err(CacheError::FrameLength {
                path: path.to_path_buf(),
                frame,
                got: f.len(),
                expected: points,
            });
        }
        if let Some(point) = f.iter().position(|p| !p.is_finite()) {
            return Err(CacheError::NonFinite {
                path: path.to_path_buf(),
                frame,
                point,
            });
        }
    }
    let fits = i32::try_from(points).is_ok()
        && i32::try_from(frames.len()).is_ok()
        && points
            .checked_mul(frames.len())
            .and_then(|n| n.checked_mul(12))
            .is_some();
    if !fits {
        return Err(CacheError::TooLarge {
            path: path.to_path_buf(),
            frames: frames.len(),
            points,
        });
    }
    Ok(points)
}

fn check_fps(path: &Path, fps: f32) -> Result<(), CacheError> {
    if fps.is_finite() && fps > 0.0 {
        Ok(())
    } else {
        Err(CacheError::BadTiming {
            path: path.to_path_buf(),
            what: "fps",
            value: fps,
        })
    }
}

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> CacheError + '_ {
    move |source| CacheError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Writes a PC2 point cache (little-endian), one sample per frame.
///
/// `start_frame` is the frame of the first sample (Blender's frame numbering). PC2 counts time in
/// frames, so `fps` is not stored; it is checked to be positive and finite, like [`write_mdd`]'s.
pub fn write_pc2(
    path: &Path,
    frames: &[Vec<Vec3>],
    fps: f32,
    start_frame: f32,
) -> Result<(), CacheError> {
    check_fps(path, fps)?;
    if !start_frame.is_finite() {
        return Err(CacheError::BadTiming {
            path: path.to_path_buf(),
            what: "start_frame",
            value: start_frame,
        });
    }
    let points = check_frames(path, frames)?;
    let mut out = Vec::with_capacity(PC2_HEADER + frames.len() * points * 12);
    out.extend_from_slice(PC2_MAGIC);
    out.extend_from_slice(&1i32.to_le_bytes());
    // `check_frames` proved both counts fit an i32.
    out.extend_from_slice(&(points as i32).to_le_bytes());
    out.extend_from_slice(&start_frame.to_le_bytes());
    out.extend_from_slice(&1.0f32.to_le_bytes());
    out.extend_from_slice(&(frames.len() as i32).to_le_bytes());
    for p in frames.iter().flatten() {
        for c in p.to_array() {
            out.extend_from_slice(&c.to_le_bytes());
        }
    }
    write_atomic(path, &out).map_err(io_error(path))
}

/// Writes an MDD point cache (big-endian) with frame `k` at time `k / fps` seconds.
pub fn write_mdd(path: &Path, frames: &[Vec<Vec3>], fps: f32) -> Result<(), CacheError> {
    check_fps(path, fps)?;
    let points = check_frames(path, frames)?;
    let mut out = Vec::with_capacity(MDD_HEADER + frames.len() * (4 + points * 12));
    out.extend_from_slice(&(frames.len() as i32).to_be_bytes());
    out.extend_from_slice(&(points as i32).to_be_bytes());
    for k in 0..frames.len() {
        out.extend_from_slice(&(k as f32 / fps).to_be_bytes());
    }
    for p in frames.iter().flatten() {
        for c in p.to_array() {
            out.extend_from_slice(&c.to_be_bytes());
        }
    }
    write_atomic(path, &out).map_err(io_error(path))
}

/// Reads 4-byte words from a byte slice whose length the caller has checked.
struct Words<'a> {
    bytes: &'a [u8],
    big_endian: bool,
}

impl Words<'_> {
    fn next(&mut self) -> [u8; 4] {
        let mut w = [0u8; 4];
        if let Some((head, rest)) = self.bytes.split_first_chunk::<4>() {
            w = *head;
            self.bytes = rest;
        }
        if self.big_endian {
            w.reverse();
        }
        w
    }
    fn i32(&mut self) -> i32 {
        i32::from_le_bytes(self.next())
    }
    fn f32(&mut self) -> f32 {
        f32::from_le_bytes(self.next())
    }
    fn frames(&mut self, frames: usize, points: usize) -> Vec<Vec<Vec3>> {
        (0..frames)
            .map(|_| {
                (0..points)
                    .map(|_| {
                        let x = self.f32();
                        let y = self.f32();
                        let z = self.f32();
                        Vec3::new(x, y, z)
                    })
                    .collect()
            })
            .collect()
    }
}

/// Converts a header count to `usize`, rejecting negative values.
fn count(path: &Path, format: &'static str, what: &str, v: i32) -> Result<usize, CacheError> {
    usize::try_from(v).map_err(|_| CacheError::Malformed {
        path: path.to_path_buf(),
        format,
        reason: format!("negative {what} ({v})"),
    })
}

/// Checks that the file is exactly `expected` bytes long (`None`: the sizes overflow).
fn check_len(
    path: &Path,
    format: &'static str,
    actual: usize,
    expected: Option<usize>,
    frames: usize,
    points: usize,
) -> Result<(), CacheError> {
    if expected == Some(actual) {
        return Ok(());
    }
    let expected = expected.map_or_else(|| "more than addressable".to_string(), |e| e.to_string());
    Err(CacheError::Malformed {
        path: path.to_path_buf(),
        format,
        reason: format!(
            "the header declares {frames} frames of {points} points ({expected} bytes), \
             but the file has {actual} bytes (truncated or not a cache file)"
        ),
    })
}

/// Reads a PC2 file, checking its header against its length.
pub fn read_pc2(path: &Path) -> Result<Pc2, CacheError> {
    const FORMAT: &str = "PC2";
    let bytes = fs::read(path).map_err(io_error(path))?;
    if bytes.len() < PC2_HEADER || &bytes[..12] != PC2_MAGIC {
        return Err(CacheError::Malformed {
            path: path.to_path_buf(),
            format: FORMAT,
            reason: "missing the \"POINTCACHE2\" signature".into(),
        });
    }
    let mut w = Words {
        bytes: &bytes[12..],
        big_endian: false,
    };
    let version = w.i32();
    if version != 1 {
        return Err(CacheError::Malformed {
            path: path.to_path_buf(),
            format: FORMAT,
            reason: format!("version {version}, expected 1"),
        });
    }
    let points = count(path, FORMAT, "point count", w.i32())?;
    let start_frame = w.f32();
    let sample_rate = w.f32();
    let frames = count(path, FORMAT, "sample count", w.i32())?;
    // With no points the length says nothing about the sample count, which would then size
    // an empty frame list of any length.
    if points == 0 && frames > 0 {
        return Err(CacheError::Malformed {
            path: path.to_path_buf(),
            format: FORMAT,
            reason: format!("{frames} samples of no points"),
        });
    }
    let expected = points
        .checked_mul(frames)
        .and_then(|n| n.checked_mul(12))
        .and_then(|n| n.checked_add(PC2_HEADER));
    check_len(path, FORMAT, bytes.len(), expected, frames, points)?;
    Ok(Pc2 {
        start_frame,
        sample_rate,
        frames: w.frames(frames, points),
    })
}

/// Reads an MDD file, checking its header against its length.
pub fn read_mdd(path: &Path) -> Result<Mdd, CacheError> {
    const FORMAT: &str = "MDD";
    let bytes = fs::read(path).map_err(io_error(path))?;
    if bytes.len() < MDD_HEADER {
        return Err(CacheError::Malformed {
            path: path.to_path_buf(),
            format: FORMAT,
            reason: format!("only {} bytes, shorter than the header", bytes.len()),
        });
    }
    let mut w = Words {
        bytes: &bytes,
        big_endian: true,
    };
    let frames = count(path, FORMAT, "frame count", w.i32())?;
    let points = count(path, FORMAT, "point count", w.i32())?;
    let expected = points
        .checked_mul(12)
        .and_then(|n| n.checked_add(4))
        .and_then(|n| n.checked_mul(frames))
        .and_then(|n| n.checked_add(MDD_HEADER));
    check_len(path, FORMAT, bytes.len(), expected, frames, points)?;
    let times = (0..frames).map(|_| w.f32()).collect();
    Ok(Mdd {
        times,
        frames: w.frames(frames, points),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames() -> Vec<Vec<Vec3>> {
        (0..5)
            .map(|k| {
                (0..7)
                    .map(|i| Vec3::new(i as f32 * 0.1, k as f32 * -0.37, 1.0 / (1 + i + k) as f32))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn pc2_round_trip_is_exact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.pc2");
        let f = frames();
        write_pc2(&path, &f, 24.0, 3.0).unwrap();
        let bytes = fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 32 + 5 * 7 * 12);
        assert_eq!(&bytes[..12], b"POINTCACHE2\0");
        assert_eq!(i32::from_le_bytes(bytes[16..20].try_into().unwrap()), 7);
        let pc2 = read_pc2(&path).unwrap();
        assert_eq!(pc2.start_frame, 3.0);
        assert_eq!(pc2.sample_rate, 1.0);
        assert_eq!(pc2.frames, f);
    }

    #[test]
    fn mdd_round_trip_is_exact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.mdd");
        let f = frames();
        write_mdd(&path, &f, 30.0).unwrap();
        let bytes = fs::read(&path).unwrap();
        assert_eq!(bytes.len(), 8 + 5 * 4 + 5 * 7 * 12);
        assert_eq!(i32::from_be_bytes(bytes[0..4].try_into().unwrap()), 5);
        assert_eq!(i32::from_be_bytes(bytes[4..8].try_into().unwrap()), 7);
        let mdd = read_mdd(&path).unwrap();
        let times: Vec<f32> = (0..5).map(|k| k as f32 / 30.0).collect();
        assert_eq!(mdd.times, times);
        assert_eq!(mdd.frames, f);
    }

    #[test]
    fn malformed_caches_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let pc2 = dir.path().join("bad.pc2");
        let mdd = dir.path().join("bad.mdd");
        write_pc2(&pc2, &frames(), 24.0, 0.0).unwrap();
        write_mdd(&mdd, &frames(), 24.0).unwrap();

        // Truncated.
        let bytes = fs::read(&pc2).unwrap();
        fs::write(&pc2, &bytes[..bytes.len() - 5]).unwrap();
        let e = read_pc2(&pc2).unwrap_err();
        assert!(e.to_string().contains("bad.pc2"), "{e}");
        let bytes = fs::read(&mdd).unwrap();
        fs::write(&mdd, &bytes[..bytes.len() / 2]).unwrap();
        let e = read_mdd(&mdd).unwrap_err();
        assert!(e.to_string().contains("bad.mdd"), "{e}");

        // Headers that promise gigantic data must not allocate it.
        let mut huge = PC2_MAGIC.to_vec();
        for v in [1i32, i32::MAX, 0, 0, i32::MAX] {
            huge.extend_from_slice(&v.to_le_bytes());
        }
        fs::write(&pc2, &huge).unwrap();
        assert!(matches!(read_pc2(&pc2), Err(CacheError::Malformed { .. })));
        // No points and 2³¹ − 1 samples: the length (the bare header) matches, so the count
        // itself is refused, before a list of empty frames is built.
        let mut empty_frames = PC2_MAGIC.to_vec();
        for v in [1i32, 0, 0, 0, i32::MAX] {
            empty_frames.extend_from_slice(&v.to_le_bytes());
        }
        fs::write(&pc2, &empty_frames).unwrap();
        let e = read_pc2(&pc2).unwrap_err();
        assert!(e.to_string().contains("samples of no points"), "{e}");
        let mut huge = Vec::new();
        for v in [i32::MAX, i32::MAX] {
            huge.extend_from_slice(&v.to_be_bytes());
        }
        fs::write(&mdd, &huge).unwrap();
        assert!(matches!(read_mdd(&mdd), Err(CacheError::Malformed { .. })));

        // Negative counts, garbage, empty.
        let mut neg = Vec::new();
        neg.extend_from_slice(&(-1i32).to_be_bytes());
        neg.extend_from_slice(&3i32.to_be_bytes());
        fs::write(&mdd, &neg).unwrap();
        assert!(read_mdd(&mdd).is_err());
        fs::write(&pc2, b"garbage, not a cache at all, more garbage").unwrap();
        assert!(read_pc2(&pc2).is_err());
        fs::write(&mdd, b"").unwrap();
        assert!(read_mdd(&mdd).is_err());
        assert!(matches!(
            read_pc2(&dir.path().join("missing.pc2")),
            Err(CacheError::Io { .. })
        ));
    }

    #[test]
    fn bad_inputs_are_rejected_before_writing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.mdd");
        assert!(matches!(
            write_mdd(&path, &[], 24.0),
            Err(CacheError::NoFrames { .. })
        ));
        let mut f = frames();
        f[2].pop();
        assert!(matches!(
            write_mdd(&path, &f, 24.0),
            Err(CacheError::FrameLength { frame: 2, .. })
        ));
        let mut f = frames();
        f[1][3].y = f32::NAN;
        assert!(matches!(
            write_pc2(&path, &f, 24.0, 1.0),
            Err(CacheError::NonFinite {
                frame: 1,
                point: 3,
                ..
            })
        ));
        assert!(matches!(
            write_mdd(&path, &frames(), 0.0),
            Err(CacheError::BadTiming { what: "fps", .. })
        ));
        assert!(!path.exists());
    }
}
