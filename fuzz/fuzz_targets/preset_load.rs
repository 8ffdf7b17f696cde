//! Bytes → the preset parser (`drape::preset::parse` and the typed parsers over it).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = drape_fuzz::preset_load(data);
});
