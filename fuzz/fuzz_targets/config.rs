//! Config texts and `--set` values: parse (on the defaults and on every preset), set any key to any
//! text, validate, write back and read again. Whatever the input: an error or a config that
//! validates and round-trips through its own TOML bit for bit; a key that was set reads back as
//! the value that sets it again to the same config.
#![no_main]
use arbitrary::Arbitrary;
use icl_core::config::{keys, Config};
use icl_core::presets::PRESETS;
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input<'a> {
    text: &'a str,
    preset: u8,
    sets: Vec<(icl_fuzz::Name<'a>, &'a str)>,
}

fn round_trips(c: &Config) {
    c.validate().expect("an accepted config validates");
    let back = Config::from_toml(&c.to_toml()).expect("a config's own TOML reads back");
    assert_eq!(&back, c);
}

fuzz_target!(|input: Input| {
    let Input { text, preset, sets } = input;
    if let Ok(c) = Config::from_toml(text) {
        round_trips(&c);
    }
    let (name, _, _) = PRESETS[preset as usize % PRESETS.len()];
    let mut c = icl_core::presets::preset(name).expect("presets are valid");
    if c.apply_toml(text).is_ok() {
        round_trips(&c);
    }
    let known: Vec<String> = keys().map(|k| k.dotted()).collect();
    for (k, v) in sets.iter().take(8) {
        let key = k.pick(&known);
        let before = c.clone();
        match c.set(&key, v) {
            Ok(()) => {
                // the value reads back as text that sets the same config again
                let got = c
                    .get(&key)
                    .expect("a key that was set has a value")
                    .to_string();
                let mut again = before.clone();
                again.set(&key, &got).expect("a key's own value sets again");
                assert_eq!(again, c, "{key} = {v:?} read back as {got:?}");
            }
            Err(_) => assert_eq!(c, before, "a failed set leaves the config unchanged"),
        }
    }
    if c.validate().is_ok() {
        round_trips(&c);
        let _ = c.memory_estimate();
    }
});
