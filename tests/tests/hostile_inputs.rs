//! Property tests of every input surface (issue 15's fuzzing surfaces, in the normal test suite):
//! config texts and `--set` values, checkpoint and PyTorch files (random bytes and valid files with
//! random damage), and the C API's text entry points. Whatever the input: an `Ok` or a typed error,
//! never a panic or an abort. `fuzz/` runs the same surfaces under libFuzzer for longer
//! (`fuzz/run.sh SECONDS`).
use icl_core::config::Config;
use icl_ffi::*;
use proptest::prelude::*;
use std::ffi::CString;
use std::path::Path;
use std::ptr::{null, null_mut};

/// A valid checkpoint (the `quick` preset after 3 steps, trainer state included), built once: the
/// tests run in parallel.
fn valid_checkpoint() -> Vec<u8> {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES
        .get_or_init(|| {
            let dir = std::env::temp_dir().join(format!("icl-hostile-{}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("m.safetensors");
            let cfg = icl_core::presets::preset("quick").unwrap();
            let mut tr =
                icl_core::train::Trainer::<f32>::new(&cfg, &icl_core::ScalarEngine).unwrap();
            for _ in 0..3 {
                tr.step().unwrap();
            }
            let cols: Vec<String> = tr.columns().iter().map(|c| c.name.clone()).collect();
            icl_core_run::checkpoint::save(&path, &cfg, &tr.state(), &tr.model, &cols, None)
                .unwrap();
            let bytes = std::fs::read(&path).unwrap();
            std::fs::remove_dir_all(&dir).unwrap();
            bytes
        })
        .clone()
}

/// A valid PyTorch state_dict (the reference layout, F32) of the `quick` preset's model.
fn valid_torch() -> (Config, Vec<u8>) {
    let cfg = icl_core::presets::preset("quick").unwrap();
    let spec = icl_core::ModelSpec::from_config(&cfg).unwrap();
    let tensors: Vec<icl_core_run::checkpoint::Raw> = spec
        .tensors()
        .into_iter()
        .map(|t| {
            let xs: Vec<f32> = (0..t.len()).map(|i| (i as f32 * 0.37).sin()).collect();
            icl_core_run::checkpoint::Raw::new(t.name, t.shape.clone(), &xs)
        })
        .collect();
    let bytes = icl_core_run::checkpoint::encode(&tensors, &Default::default()).unwrap();
    (cfg, bytes)
}

/// A count for a C call: small, or anything (sizes that overflow or cannot fit included).
fn count() -> impl Strategy<Value = usize> {
    prop_oneof![
        0usize..6,
        any::<usize>(),
        Just(usize::MAX),
        1usize << 40..1usize << 62
    ]
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
        prop_assert!(icl_core_run::checkpoint::decode(p, &bytes).is_err());
        let cfg = Config::default();
        prop_assert!(icl_core_run::torch::import_torch_bytes(p, &bytes, &cfg).is_err());
    }

    #[test]
    fn damaged_checkpoints_never_panic(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8), cut in any::<usize>()) {
        let mut b = valid_checkpoint();
        for (i, v) in &edits {
            let n = b.len();
            b[i % n] = *v;
        }
        let _ = icl_core_run::checkpoint::decode(Path::new("damaged"), &b);
        let n = b.len();
        let _ = icl_core_run::checkpoint::decode(Path::new("truncated"), &b[..cut % n]);
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn damaged_torch_imports_never_panic(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..8), cut in any::<usize>()) {
        let (cfg, mut b) = valid_torch();
        let p = Path::new("torch");
        prop_assert!(icl_core_run::torch::import_torch_bytes(p, &b, &cfg).is_ok());
        for (i, v) in &edits {
            let n = b.len();
            b[i % n] = *v;
        }
        if let Ok(m) = icl_core_run::torch::import_torch_bytes(p, &b, &cfg) {
            prop_assert_eq!(m.spec(), &icl_core::ModelSpec::from_config(&cfg).unwrap());
            prop_assert!(m.params_f64().iter().all(|x| x.is_finite()));
        }
        let n = b.len();
        prop_assert!(icl_core_run::torch::import_torch_bytes(p, &b[..cut % n], &cfg).is_err());
    }

    /// Counts (n, L) and buffer lengths that disagree, overflow or cannot fit: a status, never an
    /// abort, and `ICL_OK` only when every length is the one the call needs.
    #[test]
    fn c_api_sizes_and_buffers_never_abort(n in count(), len in count(), extra in proptest::collection::vec(0usize..3, 4), fill in prop_oneof![Just(0.5f64), Just(f64::NAN), Just(1e300), any::<f64>()]) {
        let mut cfg = null_mut();
        check_ok(unsafe { icl_config_preset(c"quick".as_ptr(), &mut cfg) });
        let (mut task, mut model) = (null_mut(), null_mut());
        check_ok(unsafe { icl_task_new(cfg, &mut task) });
        check_ok(unsafe { icl_model_new(cfg, &mut model) });
        let mut dims = icl_dims::default();
        check_ok(unsafe { icl_model_dims(model, &mut dims) });
        let e = dims.d + dims.n_out;
        // the right length (when it fits in 2^16 values) plus 0..2, or a small wrong one
        let buf = |right: Option<usize>, k: usize| -> Vec<f64> {
            let len = match right {
                Some(r) if r <= 1 << 16 => r + extra[k] % 2,
                _ => extra[k],
            };
            vec![fill; len]
        };
        let z_right = n.checked_mul(len.saturating_add(1)).and_then(|x| x.checked_mul(e));
        let y_right = n.checked_mul(dims.n_out);
        let fits = |v: &Vec<f64>, r: Option<usize>| Some(v.len()) == r;
        let (mut z, mut y) = (buf(z_right, 0), buf(y_right, 1));
        let s = unsafe { icl_task_sample(task, 1, 0, 0, n, len, z.as_mut_ptr(), z.len(), y.as_mut_ptr(), y.len()) };
        prop_assert_ne!(s, icl_status::ICL_ERR_PANIC);
        prop_assert_eq!(s == icl_status::ICL_OK, n > 0 && len > 0 && fits(&z, z_right) && fits(&y, y_right));
        let mut out = buf(y_right, 2);
        let s = unsafe { icl_model_predict_batch(model, n, len, z.as_ptr(), z.len(), out.as_mut_ptr(), out.len()) };
        prop_assert_ne!(s, icl_status::ICL_ERR_PANIC);
        if s == icl_status::ICL_OK {
            prop_assert!(fits(&z, z_right) && fits(&out, y_right) && out.iter().all(|x| x.is_finite()));
        }
        let mut grad = buf(Some(dims.n_params), 3);
        let mut loss = 0.0;
        let s = unsafe { icl_model_loss_grad(model, n, len, z.as_ptr(), z.len(), y.as_ptr(), y.len(), &mut loss, grad.as_mut_ptr(), grad.len()) };
        prop_assert_ne!(s, icl_status::ICL_ERR_PANIC);
        if s == icl_status::ICL_OK {
            prop_assert!(grad.len() == dims.n_params && loss.is_finite());
        }
        let s = unsafe { icl_model_set_params(model, grad.as_ptr(), grad.len()) };
        prop_assert_ne!(s, icl_status::ICL_ERR_PANIC);
        let (mut r, mut se) = (0.0, 0.0);
        let s = unsafe { icl_model_risk(model, task, len, n.min(64), 3, &mut r, &mut se) };
        prop_assert_ne!(s, icl_status::ICL_ERR_PANIC);
        prop_assert!(s != icl_status::ICL_OK || (len < 1 << 12 && r.is_finite()));
        unsafe {
            icl_model_free(model);
            icl_task_free(task);
            icl_config_free(cfg);
        }
    }

    /// Damaged checkpoint files through `icl_model_load` and `icl_trainer_from_checkpoint`.
    #[test]
    fn c_api_loads_damaged_checkpoints(edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 0..6), cut in any::<usize>()) {
        let mut b = valid_checkpoint();
        for (i, v) in &edits {
            let n = b.len();
            b[i % n] = *v;
        }
        let n = b.len();
        let b = if cut % 4 == 0 { &b[..cut % n] } else { &b[..] };
        let path = std::env::temp_dir().join(format!("icl-hostile-load-{}.safetensors", std::process::id()));
        std::fs::write(&path, b).unwrap();
        let p = CString::new(path.to_str().unwrap()).unwrap();
        let mut m = null_mut();
        let s = unsafe { icl_model_load(p.as_ptr(), &mut m) };
        prop_assert_ne!(s, icl_status::ICL_ERR_PANIC);
        prop_assert_eq!(s == icl_status::ICL_OK, !m.is_null());
        unsafe { icl_model_free(m) };
        let mut t = null_mut();
        let s = unsafe { icl_trainer_from_checkpoint(p.as_ptr(), null(), &mut t) };
        prop_assert_ne!(s, icl_status::ICL_ERR_PANIC);
        if s == icl_status::ICL_OK {
            // a damaged value may make training diverge: an error, not a panic
            let s = unsafe { icl_trainer_train(t, 2, null_mut(), 0, null_mut()) };
            prop_assert_ne!(s, icl_status::ICL_ERR_PANIC);
        }
        unsafe { icl_trainer_free(t) };
        let _ = std::fs::remove_file(&path);
    }
}

fn check_ok(s: icl_status) {
    assert_eq!(s, icl_status::ICL_OK);
}
