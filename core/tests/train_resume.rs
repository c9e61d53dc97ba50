//! The one trainer resumes bit for bit: N steps, take the state, rebuild a trainer from it and run
//! M more, and the parameters, optimiser state and log equal N + M uninterrupted steps. Online
//! (he2025) and full-batch (zhang2025, with the cubic twin) objectives, multi-layer transformers
//! (looped and not, softmax and linear) and the IV models (two-block and TF Ref), f32 and f64.
use icl_core::presets::preset;
use icl_core::train::{Options, Trainer};
use icl_core::{Config, Model, Scalar, ScalarEngine};

fn check<T: Scalar>(cfg: &Config, n: u64, m: u64) {
    let opts = Options::default();
    let mut full =
        Trainer::<T>::with_model(cfg, Model::init(cfg).unwrap(), &ScalarEngine, &opts).unwrap();
    for _ in 0..n + m {
        full.step().unwrap();
    }
    let mut first =
        Trainer::<T>::with_model(cfg, Model::init(cfg).unwrap(), &ScalarEngine, &opts).unwrap();
    for _ in 0..n {
        first.step().unwrap();
    }
    let state = first.state();
    drop(first);
    let mut second = Trainer::<T>::from_state(cfg, state, &ScalarEngine, &opts).unwrap();
    for _ in 0..m {
        second.step().unwrap();
    }
    let (a, b) = (full.state(), second.state());
    assert_eq!(a.step, n + m);
    assert!(a.params == b.params, "{}: parameters differ", T::NAME);
    assert!(a.opt == b.opt, "optimiser state differs");
    assert_eq!(a.log, b.log, "logs differ");
    assert_eq!(a.early, b.early, "early rows differ");
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

/// `preset` at a small size: L = 8, batch 4, logs every 3 steps, snapshots every 4.
fn small(name: &str, sets: &[(&str, &str)]) -> Config {
    let mut cfg = preset(name).unwrap();
    for (k, v) in [
        ("task.L", "8"),
        ("train.batch", "4"),
        ("train.log_every", "3"),
        ("train.snapshot_every", "4"),
    ]
    .iter()
    .chain(sets)
    {
        cfg.set(k, v).unwrap();
    }
    cfg
}

#[test]
fn multilayer_transformers_resume_bit_for_bit() {
    let looped = small("multilayer-t2", &[]);
    check::<f32>(&looped, 7, 6);
    check::<f64>(&looped, 7, 6);
    check::<f32>(&small("multilayer-nonlooped-t2", &[]), 5, 4);
    check::<f32>(&small("multilayer-linear-t2", &[]), 5, 4);
}

#[test]
fn iv_models_resume_bit_for_bit() {
    let two_stage = small("iv-2stage", &[]);
    check::<f32>(&two_stage, 7, 6);
    check::<f64>(&two_stage, 7, 6);
    check::<f32>(&small("iv-tf-ref", &[]), 5, 4);
}

#[test]
fn a_state_of_another_config_is_an_error() {
    let cfg = preset("quick").unwrap();
    let tr = Trainer::<f32>::new(&cfg, &ScalarEngine).unwrap();
    let mut other = cfg.clone();
    other.set("model.heads", "3").unwrap();
    let r = Trainer::<f32>::from_state(&other, tr.state(), &ScalarEngine, &Options::default());
    assert!(r.is_err());
}

/// A step that diverges (an update that overflows) fails with a numerical error and leaves the
/// trainer exactly as the previous step left it: parameters, optimiser state, log, window and
/// step, so the state stays finite and resumable.
#[test]
fn a_diverging_step_is_undone() {
    for (key, value) in [("train.lr", "1e300"), ("train.eps", "1e-300")] {
        let mut cfg = preset("quick").unwrap();
        cfg.set("train.batch", "8").unwrap();
        cfg.set("train.log_every", "2").unwrap();
        if key == "train.lr" {
            cfg.set("train.optimizer", "sgd").unwrap();
        }
        cfg.set("task.L", "10").unwrap();
        cfg.set(key, value).unwrap();
        let mut t = Trainer::<f32>::with_model(
            &cfg,
            Model::init(&cfg).unwrap(),
            &ScalarEngine,
            &Options::default(),
        )
        .unwrap();
        // the first step that diverges (lr 1e300: the first; eps 0: the first with a gradient
        // entry whose square underflows)
        let (before, e) = loop {
            let before = t.state();
            match t.step() {
                Ok(_) => assert!(t.step < 50, "{key} = {value}: no step diverged"),
                Err(e) => break (before, e),
            }
        };
        assert!(
            matches!(e, icl_core::Error::Numerical(ref m) if m.contains("diverged at step")),
            "{key}: {e}"
        );
        assert_eq!(
            t.state(),
            before,
            "{key} = {value}: the failing step left a trace"
        );
        assert!(t.model.params.iter().all(|p| p.is_finite()));
    }
    // a few good steps, then one that diverges: the good ones are kept
    let mut cfg = preset("quick").unwrap();
    cfg.set("train.batch", "8").unwrap();
    let mut t = Trainer::<f32>::new(&cfg, &ScalarEngine).unwrap();
    for _ in 0..3 {
        t.step().unwrap();
    }
    let kept = t.state();
    t.opt = icl_core::optim::Optimizer::new(
        &{
            let mut c = cfg.train.clone();
            c.lr = 1e300;
            c.optimizer = icl_core::config::OptimizerKind::Sgd;
            c
        },
        t.model.params.len(),
    );
    let opt = t.opt.clone();
    assert!(t.step().is_err());
    assert_eq!(
        (t.step, &t.model.params, &t.log, &t.opt),
        (3, &kept.params, &kept.log, &opt)
    );
}

/// The full-batch objective's final row (the parameters after the update that completes
/// `train.steps`) is logged by that step, so the log is the same however the steps are grouped
/// and whether or not `finish` is called (`icl train` calls it; the C trainer steps).
#[test]
fn the_final_full_batch_row_does_not_depend_on_grouping() {
    let mut cfg = preset("zhang2025-fig1").unwrap();
    cfg.set("task.P", "50").unwrap();
    cfg.set("train.steps", "5").unwrap();
    cfg.set("train.log_every", "2").unwrap();
    let opts = Options::default();
    let mut run =
        Trainer::<f64>::with_model(&cfg, Model::init(&cfg).unwrap(), &ScalarEngine, &opts).unwrap();
    run.run(&mut |_, _| true).unwrap();
    let steps: Vec<u64> = run.log.iter().map(|r| r.step).collect();
    assert_eq!(steps, [0, 2, 4, 5]);
    let mut stepped =
        Trainer::<f64>::with_model(&cfg, Model::init(&cfg).unwrap(), &ScalarEngine, &opts).unwrap();
    for _ in 0..7 {
        stepped.step().unwrap();
    }
    assert_eq!(stepped.log[..4], run.log[..], "rows of steps 0..=5");
    let steps: Vec<u64> = stepped.log.iter().map(|r| r.step).collect();
    assert_eq!(steps, [0, 2, 4, 5, 6], "an extended run goes on logging");
}

/// Early rows: the 1-2-5 steps below `train.log_every`, apart from the regular rows, which keep
/// their steps and values (plateau detection and the outputs read only them).
#[test]
fn early_rows_fill_the_first_decades_and_leave_the_regular_rows_alone() {
    use icl_core::train::early_row;
    let every: Vec<u64> = (0..2000)
        .filter(|&s| early_row(s, 1000, 2000, false))
        .collect();
    assert_eq!(every, [2, 5, 10, 20, 50, 100, 200, 500]);
    let full: Vec<u64> = (0..2000)
        .filter(|&s| early_row(s, 1000, 2000, true))
        .collect();
    assert_eq!(full, [1, 2, 5, 10, 20, 50, 100, 200, 500]);
    assert!(!early_row(5, 5, 100, false) && !early_row(20, 1000, 20, false));
    // online: the early rows change no regular row (the window of the mean loss included)
    let mut cfg = preset("quick").unwrap();
    cfg.set("train.batch", "8").unwrap();
    cfg.set("train.steps", "120").unwrap();
    cfg.set("train.log_every", "60").unwrap();
    let opts = Options::default();
    let mut run =
        Trainer::<f64>::with_model(&cfg, Model::init(&cfg).unwrap(), &ScalarEngine, &opts).unwrap();
    let mut losses = Vec::new();
    run.run(&mut |_, l| {
        losses.push(l);
        true
    })
    .unwrap();
    let steps =
        |rows: &[icl_core::train::LogRow]| -> Vec<u64> { rows.iter().map(|r| r.step).collect() };
    assert_eq!(steps(&run.log), [1, 60, 120]);
    assert_eq!(steps(&run.early), [2, 5, 10, 20, 50]);
    let all: Vec<u64> = run.rows().iter().map(|r| r.step).collect();
    assert_eq!(all, [1, 2, 5, 10, 20, 50, 60, 120]);
    // an early row's loss is its step's batch loss; the regular row of step 60 the mean of 2..=60
    assert_eq!(run.early[1].loss, losses[4]);
    let mean = losses[1..60].iter().sum::<f64>() / 59.0;
    assert!((run.log[1].loss - mean).abs() <= 1e-12 * mean.abs());
    assert_eq!(run.curve().len(), 3, "the curve is the regular rows'");
    use icl_core::train::row_window;
    assert_eq!(
        [
            row_window(1, 60),
            row_window(60, 60),
            row_window(120, 60),
            row_window(130, 60)
        ],
        [(1, 1), (2, 60), (61, 120), (121, 130)]
    );
}
