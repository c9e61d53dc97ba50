//! PyTorch state_dicts (safetensors) imported into a model of a small config of any preset:
//! arbitrary bytes, and valid files with edited names, shapes, dtypes and values: the reference
//! layout (q/k/v/o_proj.weight) of the one-layer models, and for Garg et al.'s GPT-2 presets the
//! `TransformerModel.state_dict()` icl exports (with or without transformers 4.17's buffers). An
//! error or a model of the config's spec, never a panic.
#![no_main]
use arbitrary::Arbitrary;
use icl_core_run::checkpoint::{encode, Raw};
use icl_core_run::torch::{export_state_dict, import_torch_bytes};
use icl_fuzz::{edited, small_preset, Edit};
use libfuzzer_sys::fuzz_target;
use std::path::Path;

#[derive(Arbitrary, Debug)]
enum Input<'a> {
    Raw(&'a [u8]),
    Edited(Vec<Edit<'a>>),
}

fuzz_target!(|input: (u8, u8, bool, Input)| {
    let (preset, heads, f64, input) = input;
    let mut cfg = small_preset(preset);
    // the reference layout is the full parametrisation; other params must be refused cleanly
    if preset % 4 != 0 {
        let _ = cfg.set("model.param", "full");
    }
    let gpt2 = cfg.model.arch == icl_core::config::Arch::Gpt2;
    if !gpt2 {
        let _ = cfg.set("model.heads", &(1 + heads % 4).to_string());
    }
    let _ = cfg.set("train.dtype", if f64 { "f64" } else { "f32" });
    if !icl_fuzz::harness_sized(&cfg) {
        return;
    }
    let bytes = match input {
        Input::Raw(b) => b.to_vec(),
        Input::Edited(edits) => {
            // a valid state_dict of the config's spec (F32, as torch saves it)
            let Ok(spec) = icl_core::ModelSpec::from_config(&cfg) else {
                return;
            };
            let base = if let icl_core::model::Net::Gpt2(sp) = &spec.net {
                let params: Vec<f64> = (0..sp.n_params())
                    .map(|i| (i as f64 * 0.37).sin())
                    .collect();
                let shape = icl_core_run::torch::Gpt2Shape::from(sp);
                export_state_dict(&params, &shape, heads % 2 == 1).ok()
            } else {
                let tensors: Vec<Raw> = spec
                    .tensors()
                    .into_iter()
                    .map(|t| {
                        let xs: Vec<f32> = (0..t.len()).map(|i| (i as f32 * 0.37).sin()).collect();
                        Raw::new(t.name, t.shape.clone(), &xs)
                    })
                    .collect();
                encode(&tensors, &Default::default()).ok()
            };
            match base.and_then(|b| edited(&b, &edits)) {
                Some(b) => b,
                None => return,
            }
        }
    };
    if let Ok(m) = import_torch_bytes(Path::new("fuzz"), &bytes, &cfg) {
        assert_eq!(m.spec(), &icl_core::ModelSpec::from_config(&cfg).unwrap());
        assert_eq!(m.dtype(), cfg.train.dtype);
        assert!(m.params_f64().iter().all(|x| x.is_finite()));
    }
});
