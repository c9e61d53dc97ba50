//! Every model and option: the analytic gradient (circuit backward + parameter chain rule)
//! matches central finite differences of the loss in f64 (relative error < 1e-6).
use icl_core::config::Config;
use icl_core::data::Task;
use icl_core::engine::Runner;
use icl_core::fd::rel_error;
use icl_core::model::Model;
use icl_core::rng::Domain;
use icl_core::train::loss_and_grad;

fn check(sets: &[(&str, &str)]) -> f64 {
    let mut cfg = Config::default();
    cfg.set("task.L", "7").unwrap();
    cfg.set("model.init", "gaussian").unwrap();
    cfg.set("model.init_scale", "0.4").unwrap();
    cfg.set("train.seed", "11").unwrap();
    for (k, v) in sets {
        cfg.set(k, v).unwrap();
    }
    cfg.validate().unwrap();
    let task = Task::new(&cfg).unwrap();
    let batch = task.sample_batch::<f64>(5, Domain::Train, 0, 6, cfg.task.len);
    let model = Model::<f64>::init(&cfg).unwrap();
    let mut eng = Runner::<f64>::scalar();
    let mut g = vec![0.0; model.params.len()];
    loss_and_grad(&mut eng, &model, &batch, &mut g).unwrap();
    let mut f = |p: &[f64]| {
        let m = Model::from_params(model.spec.clone(), p.to_vec()).unwrap();
        let mut gg = vec![0.0; p.len()];
        loss_and_grad(&mut Runner::<f64>::scalar(), &m, &batch, &mut gg).unwrap()
    };
    rel_error(&mut f, &model.params, &g, 1e-6, 1e-8)
}

const PARAMS: &[&str] = &["full", "merged", "reduced"];

#[test]
fn softmax_all_params_strict_mask() {
    for p in PARAMS {
        for h in ["1", "3"] {
            let e = check(&[("model.param", p), ("model.heads", h)]);
            assert!(e < 1e-6, "{p} H={h}: rel err {e}");
        }
    }
}

#[test]
fn softmax_self_attending_query_and_custom_scale() {
    for p in PARAMS {
        let e = check(&[
            ("model.param", p),
            ("model.self_attend", "true"),
            ("model.scale", "0.7"),
        ]);
        assert!(e < 1e-6, "{p}: rel err {e}");
    }
}

#[test]
fn normalised_activations() {
    for act in ["affine", "square", "tanh"] {
        for p in PARAMS {
            // C small enough that every f(s) stays positive at this init
            let e = check(&[
                ("model.param", p),
                ("model.activation", act),
                ("model.c", "0.3"),
            ]);
            assert!(e < 1e-6, "{act}/{p}: rel err {e}");
        }
    }
}

#[test]
fn linear_attention() {
    for p in PARAMS {
        for sa in ["true", "false"] {
            let e = check(&[
                ("model.param", p),
                ("model.attention", "linear"),
                ("model.self_attend", sa),
            ]);
            assert!(e < 1e-6, "linear/{p} self_attend={sa}: rel err {e}");
        }
    }
}

#[test]
fn anisotropic_and_multitask_outputs() {
    for p in PARAMS {
        let e = check(&[("model.param", p), ("task.kind", "anisotropic")]);
        assert!(e < 1e-6, "aniso/{p}: rel err {e}");
        let e = check(&[
            ("model.param", p),
            ("task.kind", "multitask"),
            ("task.d", "6"),
            ("task.supports", "1,2,3,4;3,4,5,6"),
        ]);
        assert!(e < 1e-6, "multitask/{p}: rel err {e}");
    }
}

#[test]
fn checker_detects_a_wrong_gradient() {
    // the checker itself must fail on a wrong gradient
    let mut f = |x: &[f64]| x[0] * x[0] + 3.0 * x[1];
    assert!(rel_error(&mut f, &[1.0, 2.0], &[2.0, 3.0], 1e-6, 1e-8) < 1e-8);
    assert!(rel_error(&mut f, &[1.0, 2.0], &[2.0, 3.1], 1e-6, 1e-8) > 1e-2);
}
