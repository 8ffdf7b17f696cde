//! Bytes → `Scene::from_ron` (parse and validate).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(
    init: {
        // The scene's fabric names are looked up in the user preset library too: point it at
        // an empty folder so that runs do not depend on this machine's presets.
        let dir = std::env::temp_dir().join(format!("drape-fuzz-presets-{}", std::process::id()));
        std::env::set_var(drape::preset::PRESET_DIR_ENV, dir);
    },
    |data: &[u8]| {
        let _ = drape_fuzz::scene_load(data);
    }
);
