//! The open scene as the app edits it: the file, unsaved changes, undo and redo, and saving
//! a scene somewhere else without losing the files it refers to.

use std::path::{Path, PathBuf};

use crate::scene::{Scene, SceneError};

/// Most undo steps kept.
pub const UNDO_LIMIT: usize = 200;

/// The scene being edited.
#[derive(Clone, Debug)]
pub struct Document {
    /// The scene.
    pub scene: Scene,
    /// The file its relative paths resolve against: the saved file, or a scratch folder's
    /// scene file for an untitled scene.
    pub path: PathBuf,
    /// Whether `path` is the artist's file (else the scene is untitled and Save asks where).
    pub titled: bool,
    /// Unsaved changes.
    pub dirty: bool,
    undo: Vec<Scene>,
    redo: Vec<Scene>,
    /// The last edit may absorb the next one (a value being dragged).
    merge_open: bool,
}

impl Document {
    /// A document for `scene`, read from (or to be resolved against) `path`.
    pub fn new(scene: Scene, path: PathBuf, titled: bool) -> Self {
        Self {
            scene,
            path,
            titled,
            dirty: false,
            undo: Vec::new(),
            redo: Vec::new(),
            merge_open: false,
        }
    }

    /// The name shown in the title bar.
    pub fn title(&self) -> String {
        let name = if self.titled {
            self.path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| self.scene.name.clone())
        } else {
            format!("{} (untitled)", self.scene.name)
        };
        if self.dirty {
            format!("{name} •")
        } else {
            name
        }
    }

    /// Records the scene before an edit that turned it into `edited`; returns whether anything
    /// changed.
    pub fn commit(&mut self, edited: Scene) -> bool {
        self.commit_merging(edited, false)
    }

    /// [`Document::commit`] for a continuous edit (a value dragged with the mouse): while
    /// `merge` stays true, the edits after the first one replace the scene without adding
    /// undo steps, so one drag is one undo.
    pub fn commit_merging(&mut self, edited: Scene, merge: bool) -> bool {
        let absorb = merge && self.merge_open && !self.undo.is_empty();
        self.merge_open = merge;
        if edited == self.scene {
            return false;
        }
        if absorb {
            self.scene = edited;
            self.redo.clear();
            self.dirty = true;
            return true;
        }
        let before = std::mem::replace(&mut self.scene, edited);
        self.undo.push(before);
        if self.undo.len() > UNDO_LIMIT {
            self.undo.remove(0);
        }
        self.redo.clear();
        self.dirty = true;
        true
    }

    /// Whether there is an edit to undo.
    pub fn can_undo(&self) -> bool {
        !self.undo.is_empty()
    }

    /// Whether there is an undone edit to redo.
    pub fn can_redo(&self) -> bool {
        !self.redo.is_empty()
    }

    /// Undoes the last edit; returns whether there was one.
    pub fn undo(&mut self) -> bool {
        self.merge_open = false;
        match self.undo.pop() {
            Some(before) => {
                let now = std::mem::replace(&mut self.scene, before);
                self.redo.push(now);
                self.dirty = true;
                true
            }
            None => false,
        }
    }

    /// Redoes the last undone edit; returns whether there was one.
    pub fn redo(&mut self) -> bool {
        match self.redo.pop() {
            Some(after) => {
                let now = std::mem::replace(&mut self.scene, after);
                self.undo.push(now);
                self.dirty = true;
                true
            }
            None => false,
        }
    }

    /// Saves to `to` (atomically). Files the scene refers to keep working: paths are rewritten
    /// relative to the new folder, or made absolute, and files that live in `scratch` (the
    /// untitled scene's temporary folder) are copied beside the saved scene first.
    ///
    /// The undo and redo history is rewritten the same way, so an undo after a Save As still
    /// finds its files.
    pub fn save_as(&mut self, to: &Path, scratch: Option<&Path>) -> Result<(), SceneError> {
        let mut copies = Vec::new();
        let scene = relocate(&self.scene, &self.path, to, scratch, &mut copies)?;
        let undo = (self.undo.iter())
            .map(|s| relocate(s, &self.path, to, scratch, &mut copies))
            .collect::<Result<Vec<_>, _>>()?;
        let redo = (self.redo.iter())
            .map(|s| relocate(s, &self.path, to, scratch, &mut copies))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(dir) = to.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| SceneError::Io {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        scene.save(to)?;
        self.undo = undo;
        self.redo = redo;
        self.scene = scene;
        self.path = to.to_path_buf();
        self.titled = true;
        self.dirty = false;
        Ok(())
    }
}

/// The scene with its file paths rewritten for a scene file at `to` (see
/// [`Document::save_as`]). `copies` lists the scratch files already copied, and their names
/// beside `to`: a file there that is not the same is never overwritten, the copy gets a free
/// name instead.
fn relocate(
    scene: &Scene,
    from: &Path,
    to: &Path,
    scratch: Option<&Path>,
    copies: &mut Vec<(PathBuf, PathBuf)>,
) -> Result<Scene, SceneError> {
    let to_dir = to.parent().unwrap_or(Path::new("."));
    let io = |path: &Path, e: std::io::Error| SceneError::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let mut moved = |p: &PathBuf| -> Result<PathBuf, SceneError> {
        let resolved = Scene::resolve(from, p);
        if scratch.is_some_and(|s| resolved.starts_with(s)) {
            if let Some((_, name)) = copies.iter().find(|(src, _)| *src == resolved) {
                return Ok(name.clone());
            }
            let bytes = std::fs::read(&resolved).map_err(|e| io(&resolved, e))?;
            let stem = resolved
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| "asset".into());
            let ext = resolved
                .extension()
                .map(|e| format!(".{}", e.to_string_lossy()))
                .unwrap_or_default();
            // The plain name, unless a different file already has it: then name_2, name_3…
            let name = (1..)
                .map(|k| match k {
                    1 => PathBuf::from(format!("{stem}{ext}")),
                    k => PathBuf::from(format!("{stem}_{k}{ext}")),
                })
                .find(|n| {
                    let dest = to_dir.join(n);
                    dest == resolved
                        || std::fs::read(&dest).map_or(true, |existing| existing == bytes)
                })
                .unwrap_or_else(|| PathBuf::from(format!("{stem}{ext}")));
            let dest = to_dir.join(&name);
            if dest != resolved {
                std::fs::create_dir_all(to_dir).map_err(|e| io(to_dir, e))?;
                crate::file::atomic::write_atomic(&dest, &bytes).map_err(|e| io(&dest, e))?;
            }
            copies.push((resolved, name.clone()));
            return Ok(name);
        }
        Ok(match resolved.strip_prefix(to_dir) {
            Ok(rel) if !to_dir.as_os_str().is_empty() => rel.to_path_buf(),
            _ => std::path::absolute(&resolved).unwrap_or(resolved),
        })
    };
    let mut out = scene.clone();
    if let Some(b) = out.body.as_mut() {
        b.path = moved(&b.path)?;
    }
    for g in &mut out.garments {
        g.path = moved(&g.path)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::GarmentSpec;

    fn doc() -> Document {
        Document::new(Scene::default(), PathBuf::from("/tmp/a/scene.ron"), true)
    }

    #[test]
    fn undo_and_redo_walk_the_history_exactly() {
        let mut d = doc();
        let original = d.scene.clone();
        let mut edited = original.clone();
        edited.solver.substeps = 7;
        assert!(d.commit(edited.clone()));
        assert!(!d.commit(edited.clone()), "an unchanged scene is no edit");
        assert!(d.dirty && d.can_undo() && !d.can_redo());
        assert!(d.undo());
        assert_eq!(d.scene, original);
        assert!(d.redo());
        assert_eq!(d.scene, edited);
        assert!(!d.redo());
        // A new edit after an undo drops the redo branch.
        d.undo();
        let mut other = original.clone();
        other.solver.iterations = 3;
        d.commit(other);
        assert!(!d.can_redo());
    }

    #[test]
    fn a_dragged_value_is_one_undo_step() {
        let mut d = doc();
        let original = d.scene.clone();
        for substeps in 21..30 {
            let mut s = d.scene.clone();
            s.solver.substeps = substeps;
            d.commit_merging(s, true);
        }
        d.commit_merging(d.scene.clone(), false);
        assert_eq!(d.scene.solver.substeps, 29);
        assert!(d.undo());
        assert_eq!(d.scene, original);
        assert!(!d.can_undo());
    }

    #[test]
    fn saving_elsewhere_copies_scratch_files_and_keeps_other_paths_valid() {
        let tmp = tempfile::tempdir().unwrap();
        let scratch = tmp.path().join("scratch");
        let other = tmp.path().join("assets");
        std::fs::create_dir_all(&scratch).unwrap();
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(scratch.join("garment.glb"), b"g").unwrap();
        std::fs::write(other.join("body.glb"), b"b").unwrap();
        let mut scene = Scene::default();
        scene.garments.push(GarmentSpec {
            path: "garment.glb".into(),
            ..Default::default()
        });
        scene.body = Some(crate::scene::BodySpec {
            path: other.join("body.glb"),
            ..Default::default()
        });
        let mut d = Document::new(scene, scratch.join("scene.ron"), false);
        d.dirty = true;
        let to = tmp.path().join("out").join("shot.ron");
        d.save_as(&to, Some(&scratch)).unwrap();
        assert!(d.titled && !d.dirty);
        assert_eq!(d.scene.garments[0].path, PathBuf::from("garment.glb"));
        assert_eq!(
            std::fs::read(to.with_file_name("garment.glb")).unwrap(),
            b"g"
        );
        let body = &d.scene.body.as_ref().unwrap().path;
        assert_eq!(Scene::resolve(&to, body), other.join("body.glb"));
        assert_eq!(Scene::load(&to).unwrap(), d.scene);
    }

    #[test]
    fn save_as_rewrites_the_history_and_never_overwrites_a_different_file() {
        let tmp = tempfile::tempdir().unwrap();
        let scratch = tmp.path().join("scratch");
        let out = tmp.path().join("out");
        std::fs::create_dir_all(&scratch).unwrap();
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(scratch.join("garment.glb"), b"new").unwrap();
        std::fs::write(out.join("garment.glb"), b"the artist's own file").unwrap();
        let mut scene = Scene::default();
        scene.garments.push(GarmentSpec {
            path: "garment.glb".into(),
            ..Default::default()
        });
        let mut d = Document::new(scene.clone(), scratch.join("scene.ron"), false);
        let mut edited = scene.clone();
        edited.solver.substeps = 9;
        d.commit(edited);
        let to = out.join("shot.ron");
        d.save_as(&to, Some(&scratch)).unwrap();
        assert_eq!(
            std::fs::read(out.join("garment.glb")).unwrap(),
            b"the artist's own file"
        );
        assert_eq!(d.scene.garments[0].path, PathBuf::from("garment_2.glb"));
        assert_eq!(std::fs::read(out.join("garment_2.glb")).unwrap(), b"new");
        // Undo after Save As: the earlier scene points at the copied file too.
        assert!(d.undo());
        assert_eq!(d.scene.garments[0].path, PathBuf::from("garment_2.glb"));
        assert_eq!(d.scene.solver.substeps, scene.solver.substeps);
    }
}
