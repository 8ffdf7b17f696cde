//! Bytes → the glTF importer: the garment loaders and the body (rig) loader on the same file.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = drape_fuzz::gltf_import(data);
});
