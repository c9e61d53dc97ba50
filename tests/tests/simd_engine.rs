//! The SIMD engine against the scalar reference: the fused data generator reproduces the
//! reference streams, every model option gives the same loss, circuit gradients and predictions
//! (f64 to 1e-10 relative, f32 to 1e-5 relative, norm-wise), results are bit-identical for 1, 2
//! and 16 threads, the gradient matches finite differences, and training follows the reference.
use icl_core::config::Config;
use icl_core::engine::{Engine, ScalarEngine};
use icl_core::fd::rel_error;
use icl_core::model::{Circuits, Model};
use icl_core::rng::{self, Domain};
use icl_core::task::Task;
use icl_core::train::{loss_and_grad, Trainer};
use icl_core::Scalar;
use icl_simd::gauss::{fill_normal4, fill_normal8, Xoshiro4};
use icl_simd::{SimdEngine, SimdScalar};
use rand_core::RngCore;

fn config(sets: &[(&str, &str)]) -> Config {
    let mut cfg = Config::default();
    cfg.set("task.L", "13").unwrap();
    cfg.set("model.init", "gaussian").unwrap();
    cfg.set("model.init_scale", "0.5").unwrap();
    cfg.set("train.seed", "7").unwrap();
    for (k, v) in sets {
        cfg.set(k, v).unwrap();
    }
    cfg.validate().unwrap();
    cfg
}

/// Norm-wise relative difference ||a - b|| / max(||b||, 1e-30).
fn rel(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let num: f64 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
    let den: f64 = b.iter().map(|y| y * y).sum();
    (num / den.max(1e-300)).sqrt()
}

fn flat<T: Scalar>(c: &Circuits<T>) -> Vec<f64> {
    c.kq.iter().chain(&c.ov).map(|x| x.to_f64()).collect()
}

/// Worst relative differences (loss, gradient, predictions) between the engines for one config.
fn compare<T: SimdScalar>(cfg: &Config, n: usize, step: u64) -> (f64, f64, f64) {
    let task = Task::new(cfg).unwrap();
    let model = Model::<T>::init(cfg).unwrap();
    let spec = &model.spec;
    let circ = model.circuits();
    let len = cfg.task.len;
    let (mut sc, mut si) = (ScalarEngine::<T>::new(), SimdEngine::<T>::new());
    let (mut g1, mut g2) = (Circuits::zeros(spec), Circuits::zeros(spec));
    // fused data generation
    let l1 = sc
        .sampled_loss_grad(spec, &circ, &task, cfg.train.seed, step, n, len, &mut g1)
        .unwrap()
        .to_f64();
    let l2 = si
        .sampled_loss_grad(spec, &circ, &task, cfg.train.seed, step, n, len, &mut g2)
        .unwrap()
        .to_f64();
    let (mut el, mut eg) = (((l1 - l2) / l1).abs(), rel(&flat(&g2), &flat(&g1)));
    // a caller's batch (eval stream), twice through the same engine (scratch reuse)
    let batch = task.sample_batch::<T>(cfg.train.seed, Domain::Eval, step, n + 3, len);
    for _ in 0..2 {
        let l1 = sc.loss_grad(spec, &circ, &batch, &mut g1).unwrap().to_f64();
        let l2 = si.loss_grad(spec, &circ, &batch, &mut g2).unwrap().to_f64();
        el = el.max(((l1 - l2) / l1).abs());
        eg = eg.max(rel(&flat(&g2), &flat(&g1)));
    }
    let no = spec.n_out;
    let (mut p1, mut p2) = (vec![T::zero(); batch.n * no], vec![T::zero(); batch.n * no]);
    sc.predict(spec, &circ, &batch, &mut p1).unwrap();
    si.predict(spec, &circ, &batch, &mut p2).unwrap();
    let f = |v: &[T]| v.iter().map(|x| x.to_f64()).collect::<Vec<_>>();
    let ep = rel(&f(&p2), &f(&p1));
    (el, eg, ep)
}

/// Every option the foundation issue lists, with heads 1 and 3 and batch sizes that leave partial
/// lane groups and partial chunks.
fn options() -> Vec<Vec<(&'static str, &'static str)>> {
    let mut v: Vec<Vec<(&str, &str)>> = Vec::new();
    for p in ["full", "merged", "reduced"] {
        for h in ["1", "3"] {
            v.push(vec![("model.param", p), ("model.heads", h)]);
        }
        v.push(vec![
            ("model.param", p),
            ("model.self_attend", "true"),
            ("model.scale", "0.7"),
        ]);
        for a in ["affine", "square", "tanh"] {
            v.push(vec![
                ("model.param", p),
                ("model.activation", a),
                ("model.c", "0.5"),
                ("model.heads", "2"),
            ]);
        }
        v.push(vec![
            ("model.param", p),
            ("model.attention", "linear"),
            ("model.heads", "2"),
        ]);
        v.push(vec![
            ("model.param", p),
            ("model.attention", "linear"),
            ("model.self_attend", "false"),
        ]);
    }
    v.push(vec![("task.kind", "anisotropic"), ("task.rho", "0.5")]);
    v.push(vec![
        ("task.kind", "multitask"),
        ("task.d", "6"),
        ("task.supports", "1,2,3,4;3,4,5,6"),
        ("task.variant", "paper"),
    ]);
    v.push(vec![
        ("task.kind", "multitask"),
        ("task.d", "6"),
        ("task.supports", "1,2,3,4;3,4,5,6"),
        ("task.variant", "code"),
    ]);
    v.push(vec![
        ("task.query_noise", "false"),
        ("task.d", "3"),
        ("task.sigma2", "0.5"),
    ]);
    v
}

fn check_all<T: SimdScalar>(tol: f64) {
    for sets in options() {
        let cfg = config(&sets);
        for (n, step) in [(70, 3), (256, 11), (5, 0)] {
            let (el, eg, ep) = compare::<T>(&cfg, n, step);
            assert!(
                el < tol && eg < tol && ep < tol,
                "{} {sets:?} n={n}: loss {el:e} grad {eg:e} pred {ep:e}",
                T::NAME
            );
        }
    }
}

#[test]
fn every_option_matches_the_scalar_engine_f64() {
    check_all::<f64>(1e-10);
}

#[test]
fn every_option_matches_the_scalar_engine_f32() {
    check_all::<f32>(1e-5);
}

#[test]
fn streams_and_normals_match_the_reference() {
    let mut x4 = Xoshiro4::train(9, 4, 100);
    let mut refs: Vec<_> = (0..4)
        .map(|k| rng::stream(9, Domain::Train, 4, 100 + k))
        .collect();
    for _ in 0..1000 {
        let v = x4.next_u64x4().to_array();
        for (k, r) in refs.iter_mut().enumerate() {
            assert_eq!(v[k], r.next_u64());
        }
    }
    for len in [251, 250, 1] {
        let mut out = vec![wide::f64x4::ZERO; len];
        fill_normal4(&mut Xoshiro4::train(1, 2, 8), &mut out);
        for k in 0..4 {
            let mut want = vec![0.0; len];
            rng::fill_normal(
                &mut rng::stream(1, Domain::Train, 2, 8 + k as u64),
                &mut want,
            );
            for (i, w) in want.iter().enumerate() {
                let got = out[i].to_array()[k];
                // vectorised ln/sin_cos vs libm: a few ulp of values up to ~6
                assert!(
                    (got - w).abs() < 1e-13 * (1.0 + w.abs()),
                    "normal {i} lane {k}: {got} vs {w}"
                );
            }
        }
    }
}

#[test]
fn f32_normals_match_the_reference_to_f32_rounding() {
    // the f32 generator: exact uniforms, f32 ln and sin/cos after an exact quadrant reduction
    let len = 20_001;
    let mut out = vec![wide::f32x8::ZERO; len];
    fill_normal8(
        &mut Xoshiro4::train(3, 1, 16),
        &mut Xoshiro4::train(3, 1, 20),
        &mut out,
    );
    let mut worst: f64 = 0.0;
    for k in 0..8 {
        let mut want = vec![0.0; len];
        rng::fill_normal(
            &mut rng::stream(3, Domain::Train, 1, 16 + k as u64),
            &mut want,
        );
        for (i, w) in want.iter().enumerate() {
            let got = out[i].to_array()[k] as f64;
            // a few f32 ulp of max(|w|, 1): r = sqrt(-2 ln u1) up to ~8.5
            worst = worst.max((got - w).abs() / w.abs().max(1.0));
        }
    }
    assert!(
        worst < 8.0 * f32::EPSILON as f64,
        "worst relative error {worst:e}"
    );
}

fn run_in<T: SimdScalar>(threads: usize, cfg: &Config, n: usize) -> (T, Circuits<T>, Vec<T>) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let task = Task::new(cfg).unwrap();
        let model = Model::<T>::init(cfg).unwrap();
        let circ = model.circuits();
        let mut eng = SimdEngine::<T>::new();
        let mut g = Circuits::zeros(&model.spec);
        let loss = eng
            .sampled_loss_grad(&model.spec, &circ, &task, 3, 5, n, cfg.task.len, &mut g)
            .unwrap();
        let batch = task.sample_batch::<T>(3, Domain::Eval, 0, n, cfg.task.len);
        let mut p = vec![T::zero(); n * model.spec.n_out];
        eng.predict(&model.spec, &circ, &batch, &mut p).unwrap();
        (loss, g, p)
    })
}

fn check_threads<T: SimdScalar>() {
    for sets in [
        vec![("model.heads", "2")],
        vec![("model.activation", "tanh")],
        vec![("task.kind", "anisotropic")],
    ] {
        let cfg = config(&sets);
        for n in [256, 100] {
            let base = run_in::<T>(1, &cfg, n);
            for t in [2, 16] {
                let r = run_in::<T>(t, &cfg, n);
                assert!(
                    r.0 == base.0 && r.1 == base.1 && r.2 == base.2,
                    "{} {sets:?} n={n}: {t} threads differ from 1",
                    T::NAME
                );
            }
        }
    }
}

#[test]
fn bit_identical_for_1_2_16_threads() {
    check_threads::<f32>();
    check_threads::<f64>();
}

#[test]
fn simd_gradient_matches_finite_differences() {
    for sets in [
        vec![("model.heads", "2")],
        vec![("model.activation", "tanh"), ("model.param", "merged")],
        vec![("model.attention", "linear")],
    ] {
        let cfg = config(&sets);
        let task = Task::new(&cfg).unwrap();
        let batch = task.sample_batch::<f64>(5, Domain::Train, 0, 9, cfg.task.len);
        let model = Model::<f64>::init(&cfg).unwrap();
        let mut g = vec![0.0; model.params.len()];
        loss_and_grad(&mut SimdEngine::<f64>::new(), &model, &batch, &mut g).unwrap();
        let mut f = |p: &[f64]| {
            let m = Model::from_params(model.spec.clone(), p.to_vec()).unwrap();
            let mut gg = vec![0.0; p.len()];
            loss_and_grad(&mut SimdEngine::<f64>::new(), &m, &batch, &mut gg).unwrap()
        };
        let e = rel_error(&mut f, &model.params, &g, 1e-6, 1e-8);
        assert!(e < 1e-6, "{sets:?}: rel err {e}");
    }
}

#[test]
fn training_follows_the_scalar_engine() {
    let mut cfg = config(&[("train.batch", "64"), ("task.L", "40")]);
    cfg.set("model.init", "torch").unwrap();
    let mut a = Trainer::<f64>::new(&cfg).unwrap();
    let mut b = Trainer::<f64>::new(&cfg).unwrap();
    let (mut sc, mut si) = (ScalarEngine::<f64>::new(), SimdEngine::<f64>::new());
    for _ in 0..40 {
        let la = a.step(&mut sc).unwrap();
        let lb = b.step(&mut si).unwrap();
        assert!(((la - lb) / la).abs() < 1e-9, "loss {la} vs {lb}");
    }
    let e = rel(&b.model.params, &a.model.params);
    assert!(e < 1e-9, "parameters after 40 Adam steps differ by {e:e}");
}

#[test]
fn bad_input_is_an_error() {
    let cfg = config(&[]);
    let task = Task::new(&cfg).unwrap();
    let model = Model::<f32>::init(&cfg).unwrap();
    let circ = model.circuits();
    let mut g = Circuits::zeros(&model.spec);
    let mut eng = SimdEngine::<f32>::new();
    assert!(eng
        .sampled_loss_grad(&model.spec, &circ, &task, 0, 0, 0, 13, &mut g)
        .is_err());
    let other = Task::new(&config(&[("task.d", "3")])).unwrap();
    assert!(eng
        .sampled_loss_grad(&model.spec, &circ, &other, 0, 0, 8, 13, &mut g)
        .is_err());
    let batch = other.sample_batch::<f32>(0, Domain::Eval, 0, 4, 13);
    assert!(eng.loss_grad(&model.spec, &circ, &batch, &mut g).is_err());
    let good = task.sample_batch::<f32>(0, Domain::Eval, 0, 4, 13);
    assert!(eng
        .predict(&model.spec, &circ, &good, &mut [0.0; 3])
        .is_err());
}
