//! Config texts and `--set` values: parse, set, validate, write back and read again.
#![no_main]
use icl_core::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (&str, &str, &str)| {
    let (text, key, value) = input;
    if let Ok(c) = Config::from_toml(text) {
        // what was read writes back and reads again to the same config
        let back = Config::from_toml(&c.to_toml()).expect("a config's own TOML reads back");
        assert_eq!(back, c);
    }
    let mut c = Config::default();
    if c.set(key, value).is_ok() {
        let _ = c.validate();
    }
});
