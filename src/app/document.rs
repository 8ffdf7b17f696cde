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
        if edited == self.scene {
            return false;
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
    pub fn save_as(&mut self, to: &Path, scratch: Option<&Path>) -> Result<(), SceneError> {
        let scene = relocate(&self.scene, &self.path, to, scratch)?;
        scene.save(to)?;
        self.scene = scene;
        self.path = to.to_path_buf();
        self.titled = true;
        self.dirty = false;
        Ok(())
    }
}

/// The scene with its file paths rewritten for a scene file at `to` (see
/// [`Document::save_as`]).
fn relocate(
    scene: &Scene,
    from: &Path,
    to: &Path,
    scratch: Option<&Path>,
) -> Result<Scene, SceneError> {
    let to_dir = to.parent().unwrap_or(Path::new("."));
    let io = |path: &Path, e: std::io::Error| SceneError::Io {
        path: path.to_path_buf(),
        source: e,
    };
    let moved = |p: &PathBuf| -> Result<PathBuf, SceneError> {
        let resolved = Scene::resolve(from, p);
        if scratch.is_some_and(|s| resolved.starts_with(s)) {
            let name = resolved.file_name().map(PathBuf::from).unwrap_or_default();
            let dest = to_dir.join(&name);
            if dest != resolved {
                std::fs::create_dir_all(to_dir).map_err(|e| io(to_dir, e))?;
                let bytes = std::fs::read(&resolved).map_err(|e| io(&resolved, e))?;
                crate::io::atomic::write_atomic(&dest, &bytes).map_err(|e| io(&dest, e))?;
            }
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
}
