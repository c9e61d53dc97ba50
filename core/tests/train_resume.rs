//! The one trainer resumes bit for bit: N steps, take the state, rebuild a trainer from it and run
//! M more, and the parameters, optimiser state and log equal N + M uninterrupted steps. Online
//! (he2025) and full-batch (zhang2025, with the cubic twin) objectives, f32 and f64.
use icl_core::presets::preset;
use icl_core::train::{Options, Trainer};
use icl_core::{Config, Model, Scalar, ScalarFactory};

fn check<T: Scalar>(cfg: &Config, n: u64, m: u64) {
    let opts = Options::default();
    let mut full =
        Trainer::<T>::with_model(cfg, Model::init(cfg).unwrap(), &ScalarFactory, &opts).unwrap();
    for _ in 0..n + m {
        full.step().unwrap();
    }
    let mut first =
        Trainer::<T>::with_model(cfg, Model::init(cfg).unwrap(), &ScalarFactory, &opts).unwrap();
    for _ in 0..n {
        first.step().unwrap();
    }
    let state = first.state();
    drop(first);
    let mut second = Trainer::<T>::from_state(cfg, state, &ScalarFactory, &opts).unwrap();
    for _ in 0..m {
        second.step().unwrap();
    }
    let (a, b) = (full.state(), second.state());
    assert_eq!(a.step, n + m);
    assert!(a.params == b.params, "{}: parameters differ", T::NAME);
    assert!(a.opt == b.opt, "optimiser state differs");
    assert_eq!(a.log, b.log, "logs differ");
    assert_eq!(a.snapshots, b.snapshots);
    assert_eq!(a.probes, b.probes, "probe states differ");
    assert!(!a.log.is_empty());
}

#[test]
fn online_he2025_resumes_bit_for_bit() {
    let mut cfg = preset("quick").unwrap();
    cfg.set("train.batch", "16").unwrap();
    cfg.set("train.log_every", "7").unwrap();
    cfg.set("train.snapshot_every", "5").unwrap();
    check::<f32>(&cfg, 13, 11);
    check::<f64>(&cfg, 13, 11);
}

#[test]
fn fixed_set_zhang2025_resumes_bit_for_bit() {
    // ATTN_M with its cubic twin (a probe with state), sufficient statistics
    let mut cfg = preset("zhang2025-fig1").unwrap();
    cfg.set("task.P", "300").unwrap();
    cfg.set("train.log_every", "4").unwrap();
    check::<f64>(&cfg, 9, 10);
    check::<f32>(&cfg, 9, 10);
    // token level (softmax), fixed set
    let mut cfg = preset("zhang2025-fig5-merged").unwrap();
    cfg.set("task.P", "40").unwrap();
    cfg.set("train.log_every", "3").unwrap();
    check::<f64>(&cfg, 5, 4);
}

#[test]
fn a_state_of_another_config_is_an_error() {
    let cfg = preset("quick").unwrap();
    let tr = Trainer::<f32>::new(&cfg, &ScalarFactory).unwrap();
    let mut other = cfg.clone();
    other.set("model.heads", "3").unwrap();
    let r = Trainer::<f32>::from_state(&other, tr.state(), &ScalarFactory, &Options::default());
    assert!(r.is_err());
}
