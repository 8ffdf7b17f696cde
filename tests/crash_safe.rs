//! Kill mid-save (issue 9, item 5): the real `drape` binary is killed (SIGKILL on Unix) at
//! many moments while it writes a large file over an older one, and every file it writes is
//! found either byte-identical to the old one or complete and new, never partial. Temporary
//! files left by a killed writer are allowed, but they are hidden, named after the file, the
//! writer's process id and `.tmp`, so they cannot be taken for the file.
//!
//! The writer is `drape demo DIR --scene sphere-drop --grid N`: `sphere.glb`, then `cloth.glb`
//! (N² vertices, tens of MB), then `scene.ron`, over the same three files written before with
//! a small grid. One run is watched first to find when `cloth.glb`'s temporary file appears
//! and when it replaces the file; the kills are then spread over that write and either side of
//! it.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Cloth vertices per side of the large write: 768² vertices, a `cloth.glb` of about 33 MB.
const GRID: u32 = 768;
/// The files the writer writes, in its order.
const TARGETS: [&str; 3] = ["sphere.glb", "cloth.glb", "scene.ron"];
/// Kills spread over the measured write.
const KILLS: usize = 20;
/// Most extra kills aimed at the write, when none of the first ones landed in it.
const EXTRA_KILLS: usize = 12;

fn demo(dir: &Path, grid: u32) -> Child {
    Command::new(env!("CARGO_BIN_EXE_drape"))
        .arg("demo")
        .arg(dir)
        .args(["--scene", "sphere-drop", "--grid", &grid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn read_all(dir: &Path) -> Vec<Vec<u8>> {
    TARGETS
        .iter()
        .map(|t| fs::read(dir.join(t)).unwrap())
        .collect()
}

/// The old files back in `dir`, and nothing else.
fn restore(dir: &Path, old: &[Vec<u8>]) {
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if !TARGETS.iter().any(|t| p.file_name().unwrap() == *t) {
            fs::remove_file(p).unwrap();
        }
    }
    for (t, bytes) in TARGETS.iter().zip(old) {
        fs::write(dir.join(t), bytes).unwrap();
    }
}

/// Whether `name` is a temporary file of `target` made by process `pid`:
/// `.TARGET.PID-COUNTER-NANOS.tmp` (see `drape::file::atomic`).
fn is_temp_of(name: &str, target: &str, pid: u32) -> bool {
    let Some(rest) = name
        .strip_prefix(&format!(".{target}.{pid}-"))
        .and_then(|r| r.strip_suffix(".tmp"))
    else {
        return false;
    };
    match rest.split_once('-') {
        Some((n, nanos)) => {
            !n.is_empty()
                && n.bytes().all(|b| b.is_ascii_digit())
                && nanos.len() == 8
                && nanos.bytes().all(|b| b.is_ascii_hexdigit())
        }
        None => false,
    }
}

/// What a kill left.
#[derive(Debug, Default)]
struct Outcome {
    /// Per target: 0 old, 1 new.
    state: [u8; 3],
    /// Targets with a temporary file left (the kill fell inside their write).
    temps: Vec<&'static str>,
}

/// Checks the folder after the writer `pid` was killed: every target old or new, every other
/// entry a temporary file of a target by that writer.
fn check(dir: &Path, pid: u32, old: &[Vec<u8>], new: &[Vec<u8>], delay: Duration) -> Outcome {
    let mut out = Outcome::default();
    for (i, t) in TARGETS.iter().enumerate() {
        let bytes = fs::read(dir.join(t))
            .unwrap_or_else(|e| panic!("{t} missing after a kill at {delay:?}: {e}"));
        out.state[i] = if bytes == old[i] {
            0
        } else if bytes == new[i] {
            1
        } else {
            panic!(
                "{t} is neither the old file ({} bytes) nor the new one ({} bytes) after a kill \
                 at {delay:?}: {} bytes",
                old[i].len(),
                new[i].len(),
                bytes.len()
            );
        };
    }
    for e in fs::read_dir(dir).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if TARGETS.contains(&name.as_str()) {
            continue;
        }
        let target = TARGETS
            .iter()
            .find(|t| is_temp_of(&name, t, pid))
            .unwrap_or_else(|| panic!("unexpected file {name} after a kill at {delay:?}"));
        out.temps.push(target);
    }
    // The writer writes cloth.glb before scene.ron: the scene is never newer than the cloth.
    // (sphere.glb's old and new bytes are the same sphere.)
    assert!(
        out.state[1] >= out.state[2],
        "files written out of order: {:?} at {delay:?}",
        out.state
    );
    out
}

/// When `cloth.glb`'s temporary file first appeared and when the new file replaced the old
/// one, after the writer started; and how long the whole run took.
struct Timeline {
    temp: Duration,
    renamed: Duration,
    exit: Duration,
}

fn watch(dir: &Path, old_cloth_len: u64) -> Timeline {
    let start = Instant::now();
    let mut child = demo(dir, GRID);
    let pid = child.id();
    let (mut temp, mut renamed) = (None, None);
    loop {
        if temp.is_none()
            && fs::read_dir(dir)
                .unwrap()
                .flatten()
                .any(|e| is_temp_of(&e.file_name().to_string_lossy(), "cloth.glb", pid))
        {
            temp = Some(start.elapsed());
        }
        if renamed.is_none()
            && fs::metadata(dir.join("cloth.glb")).is_ok_and(|m| m.len() != old_cloth_len)
        {
            renamed = Some(start.elapsed());
        }
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "drape demo failed: {status}");
            break;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    let exit = start.elapsed();
    let renamed = renamed.expect("cloth.glb was not replaced");
    Timeline {
        // A write too quick to be seen is taken to start 20 ms before the rename.
        temp: temp.unwrap_or_else(|| renamed.saturating_sub(Duration::from_millis(20))),
        renamed,
        exit,
    }
}

fn kill_at(dir: &Path, delay: Duration, old: &[Vec<u8>], new: &[Vec<u8>]) -> Outcome {
    restore(dir, old);
    let start = Instant::now();
    let mut child = demo(dir, GRID);
    let pid = child.id();
    if let Some(rest) = delay.checked_sub(start.elapsed()) {
        std::thread::sleep(rest);
    }
    // Fails only when the child has already exited (a delay past the end), which is fine.
    let _ = child.kill();
    child.wait().unwrap();
    check(dir, pid, old, new, delay)
}

#[test]
fn killing_a_writer_mid_save_leaves_the_old_file_or_the_complete_new_one() {
    let tmp = tempfile::tempdir().unwrap();
    let dir: PathBuf = tmp.path().join("scene");
    // The old files: a small grid, written by drape itself.
    assert!(demo(&dir, 8).wait().unwrap().success());
    let old = read_all(&dir);

    // One full run, watched: it also gives the new files.
    let t = watch(&dir, old[1].len() as u64);
    let new = read_all(&dir);
    assert_ne!(old[1], new[1]);
    assert_ne!(old[2], new[2]);
    let cloth = drape::io::load_mesh(&dir.join("cloth.glb"), None).unwrap();
    assert_eq!(cloth.positions.len(), (GRID * GRID) as usize);
    let scene = drape::scene::Scene::load(&dir.join("scene.ron")).unwrap();
    assert_eq!(scene.garments.len(), 1);
    let window = t
        .renamed
        .saturating_sub(t.temp)
        .max(Duration::from_millis(5));
    eprintln!(
        "cloth.glb: {} bytes; temporary file at {:?}, renamed at {:?} (write {:?}), exit at {:?}",
        new[1].len(),
        t.temp,
        t.renamed,
        window,
        t.exit
    );

    // Kills from one write-length before the temporary file to one after the rename.
    let from = t.temp.saturating_sub(window);
    let span = t.renamed + window - from;
    let mut outcomes = Vec::new();
    for k in 0..KILLS {
        let delay = from + span.mul_f64(k as f64 / (KILLS - 1) as f64);
        outcomes.push((delay, kill_at(&dir, delay, &old, &new)));
    }
    // Timing varies from run to run (a busy machine): if no kill fell inside cloth.glb's
    // write, bisect for it: a kill that left the old cloth.glb and no temporary file was too
    // early, one that left the new cloth.glb too late.
    let mid_write = |o: &[(Duration, Outcome)]| {
        o.iter()
            .filter(|(_, o)| o.temps.contains(&"cloth.glb"))
            .count()
    };
    let (mut early, mut late) = (from, (t.exit + window) * 2);
    let mut extra = 0;
    while mid_write(&outcomes) == 0 && extra < EXTRA_KILLS {
        let delay = (early + late) / 2;
        let o = kill_at(&dir, delay, &old, &new);
        if o.state[1] == 1 {
            late = delay;
        } else {
            early = delay;
        }
        outcomes.push((delay, o));
        extra += 1;
    }
    for (delay, o) in &outcomes {
        eprintln!(
            "kill at {delay:?}: {:?}, temporary files of {:?}",
            o.state, o.temps
        );
    }
    let inside = mid_write(&outcomes);
    let cloth_old = outcomes.iter().filter(|(_, o)| o.state[1] == 0).count();
    let cloth_new = outcomes.len() - cloth_old;
    eprintln!(
        "{} kills: cloth.glb old {cloth_old}, new {cloth_new}; {inside} inside its write",
        outcomes.len()
    );
    assert!(
        inside > 0,
        "no kill fell inside cloth.glb's write ({:?} to {:?})",
        t.temp,
        t.renamed
    );
    // A kill inside the write always leaves the old file.
    for (delay, o) in &outcomes {
        if o.temps.contains(&"cloth.glb") {
            assert_eq!(o.state[1], 0, "kill at {delay:?}");
        }
    }
}

#[test]
fn temporary_names_are_recognised_exactly() {
    assert!(is_temp_of(
        ".cloth.glb.123-0-0a1b2c3d.tmp",
        "cloth.glb",
        123
    ));
    assert!(!is_temp_of(
        ".cloth.glb.124-0-0a1b2c3d.tmp",
        "cloth.glb",
        123
    ));
    assert!(!is_temp_of(
        "cloth.glb.123-0-0a1b2c3d.tmp",
        "cloth.glb",
        123
    ));
    assert!(!is_temp_of(".cloth.glb.123-0-0a1b2c3d", "cloth.glb", 123));
    assert!(!is_temp_of(
        ".cloth.glb.123-x-0a1b2c3d.tmp",
        "cloth.glb",
        123
    ));
    assert!(!is_temp_of(
        ".scene.ron.123-0-0a1b2c3d.tmp",
        "cloth.glb",
        123
    ));
}
