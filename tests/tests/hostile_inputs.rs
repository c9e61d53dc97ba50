//! Property tests of every input surface (issue 15's fuzzing surfaces, in the normal test suite):
//! config texts and `--set` values, checkpoint and PyTorch files (random bytes and valid files with
//! random damage), and the C API's text entry points. Whatever the input: an `Ok` or a typed error,
//! never a panic or an abort. `tests/fuzz` runs the same surfaces under libFuzzer for longer.
use icl_core::config::Config;
use icl_ffi::*;
use proptest::prelude::*;
use std::ffi::CString;
use std::path::Path;
use std::ptr::null_mut;

fn valid_checkpoint() -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("icl-hostile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.safetensors");
    let cfg = icl_core::presets::preset("quick").unwrap();
    let mut tr = icl_core::train::Trainer::<f32>::new(&cfg, &icl_core::ScalarFactory).unwrap();
    for _ in 0..3 {
        tr.step().unwrap();
    }
    let cols: Vec<String> = tr.columns().iter().map(|c| c.name.clone()).collect();
    icl_run::checkpoint::save(&path, &cfg, &tr.state(), &tr.model, &cols).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    bytes
}

/// Text from a small alphabet that TOML and the config keys care about.
fn toml_like() -> impl Strategy<Value = String> {
    proptest::string::string_regex(r#"(\[(task|model|train|x)\]\n|[a-zA-Z_.]{1,12} = ("[a-z0-9,;.+-]{0,12}"|-?[0-9]{1,12}(\.[0-9]{0,4})?(e-?[0-9]{1,3})?|\[[0-9., -]{0,20}\]|true|nan|inf)\n|#.*\n){0,12}"#)
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn config_texts_never_panic(text in toml_like(), raw in ".{0,200}") {
        let _ = Config::from_toml(&text);
        let _ = Config::from_toml(&raw);
    }

    #[test]
    fn set_values_never_panic(key in "(task|model|train)\\.[a-zA-Z_]{1,14}", value in ".{0,40}") {
        let mut c = Config::default();
        if c.set(&key, &value).is_ok() {
            let _ = c.validate();
        }
        for k in icl_core::config::keys() {
            let mut c = Config::default();
            if c.set(&k.dotted(), &value).is_ok() {
                let _ = c.validate();
            }
        }
    }

    #[test]
    fn random_bytes_are_not_checkpoints(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        let p = Path::new("random");
        prop_assert!(icl_run::checkpoint::decode(p, &bytes).is_err());
        let cfg = Config::default();
        prop_assert!(icl_run::checkpoint::import_torch_bytes(p, &bytes, &cfg).is_err());
    }

    #[test]
    fn damaged_checkpoints_never_panic(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8), cut in any::<usize>()) {
        let mut b = valid_checkpoint();
        for (i, v) in &edits {
            let n = b.len();
            b[i % n] = *v;
        }
        let _ = icl_run::checkpoint::decode(Path::new("damaged"), &b);
        let n = b.len();
        let _ = icl_run::checkpoint::decode(Path::new("truncated"), &b[..cut % n]);
    }

    #[test]
    fn c_api_text_entry_points_never_abort(text in toml_like(), key in "[a-z_.]{0,20}", value in "[^\u{0}]{0,30}") {
        let mut h = null_mut();
        let t = CString::new(text.replace('\0', "")).unwrap();
        let s = unsafe { icl_config_from_toml(t.as_ptr(), &mut h) };
        if s == icl_status::ICL_OK {
            unsafe { icl_config_free(h) };
        }
        check_ok(unsafe { icl_config_preset(c"quick".as_ptr(), &mut h) });
        let (k, v) = (CString::new(key.clone()).unwrap(), CString::new(value.clone()).unwrap());
        let _ = unsafe { icl_config_set(h, k.as_ptr(), v.as_ptr()) };
        let _ = unsafe { icl_config_validate(h) };
        unsafe { icl_config_free(h) };
        // theory quantities that are closed forms (no long simulations), with any parameter
        for name in [c"eta-star", c"mu-gamma", c"gd-risk", c"sigma-tilde", c"optimal-temperature", c"plateaus"] {
            let keys = [k.as_ptr()];
            let vals = [v.as_ptr()];
            let mut out = [0.0f64; 64];
            let _ = unsafe {
                icl_theory_value(name.as_ptr(), keys.as_ptr(), vals.as_ptr(), 1, out.as_mut_ptr(), out.len(), null_mut())
            };
        }
    }
}

fn check_ok(s: icl_status) {
    assert_eq!(s, icl_status::ICL_OK);
}
