//! The SIMD engine: the engine conformance suite (one-layer attention and transformer stacks)
//! against the scalar reference (f64 to 1e-10 relative, f32 to 1e-5, norm-wise), plus what is particular to it: the fused data generator
//! reproduces the reference streams, and results are bit-identical for 1, 2 and 16 threads and
//! for every dispatch level. The suite runs at the process's level (the best the CPU has, or
//! `ICL_SIMD`) and again at each level forced; a level the CPU lacks is skipped, not run at the
//! CPU's best in its place, and every test of the levels prints which ran and which were skipped
//! (`simd levels run by ...`), failing when the CPU has a level it did not run.
use icl_core::conformance::attention::config;
use icl_core::data::Task;
use icl_core::engine::{Engine, Runner, Sampling};
use icl_core::model::{Circuits, Model};
use icl_core::rng::{self, Domain};
use icl_core::{Config, Scalar};
use icl_cpu_simd::dispatch::{self, LevelsRun};
use icl_cpu_simd::gauss::{fill_normal_f32, fill_normal_f64, Xoshiro};
use icl_cpu_simd::{Level, MlSimd, Simd, SimdEngine, SimdScalar};

/// The conformance suite's engine at a forced `level`: the SIMD engine where this CPU has the
/// level, else an engine that runs no family (each test then checks only the refusal), and a line
/// saying the level was skipped (`conformance_levels` prints which ran).
fn at<T: SimdScalar>(level: Level) -> Box<dyn Engine<T>> {
    if dispatch::has(level) {
        return Box::new(Simd::with_level(level));
    }
    // once per level and process, past the harness's capture
    static SAID: [std::sync::Once; 3] = [const { std::sync::Once::new() }; 3];
    SAID[level as usize].call_once(|| {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "simd conformance suite: skipped {} (CPU lacks it)",
            level.as_str()
        );
    });
    Box::new(Skipped)
}

/// The engine in place of a level the CPU lacks: it refuses every family.
struct Skipped;

impl<T: Scalar> Engine<T> for Skipped {
    fn name(&self) -> &str {
        "simd at a level this CPU lacks"
    }
}

icl_core::engine_conformance!(simd_f64, f64, 1e-10, || -> Box<dyn Engine<f64>> {
    Box::new(Simd::default())
});
icl_core::engine_conformance!(simd_f32, f32, 1e-5, || -> Box<dyn Engine<f32>> {
    Box::new(Simd::default())
});
icl_core::engine_conformance!(simd_f64_sse2, f64, 1e-10, || at::<f64>(Level::Base));
icl_core::engine_conformance!(simd_f32_sse2, f32, 1e-5, || at::<f32>(Level::Base));
icl_core::engine_conformance!(simd_f64_avx2, f64, 1e-10, || at::<f64>(Level::Avx2));
icl_core::engine_conformance!(simd_f32_avx2, f32, 1e-5, || at::<f32>(Level::Avx2));
icl_core::engine_conformance!(simd_f64_avx512, f64, 1e-10, || at::<f64>(Level::Avx512));
icl_core::engine_conformance!(simd_f32_avx512, f32, 1e-5, || at::<f32>(Level::Avx512));

/// The levels the `simd_*_{sse2,avx2,avx512}` instances above ran at: each level this CPU has is
/// handed to the suite, and the kernels of the families it runs (one-layer attention, stacks,
/// GPT-2) report that level, not a lower one.
#[test]
fn conformance_levels() {
    let mut report = LevelsRun::new("the conformance suite (simd_*_<level>)");
    for level in Level::ALL {
        let runs = !icl_core::conformance::refused(&at::<f32>(level).attention()).unwrap();
        assert_eq!(runs, dispatch::has(level), "{}", level.as_str());
        if runs {
            let levels = [
                SimdEngine::<f32>::with_level(level).level(),
                SimdEngine::<f64>::with_level(level).level(),
                MlSimd::<f32>::with_level(level).level(),
                MlSimd::<f64>::with_level(level).level(),
                icl_cpu_simd::Gpt2Simd::<f32>::with_level(level).level(),
                icl_cpu_simd::Gpt2Simd::<f64>::with_level(level).level(),
            ];
            assert!(levels.iter().all(|&l| l == level), "{levels:?}");
            report.ran(level);
        }
    }
    report.finish();
}

/// Data law 2: the SIMD generator's lanes (16 streams side by side, the square root vectorised;
/// where the CPU has AVX-512F also the Philox rounds in 512-bit registers, one to three groups of
/// 16 lanes) are the reference streams' normals bit for bit, including sequence indices past 2^32.
#[test]
fn law2_lanes_are_the_reference_streams_bit_for_bit() {
    use icl_core::rng::{law2, Law};
    use icl_cpu_simd::gauss::{law2_block, law2_blocks};
    let key = law2::key_of(rng::stream_base(9, Domain::Train, 4));
    #[cfg(target_arch = "x86_64")]
    let avx512 = std::arch::is_x86_feature_detected!("avx512f");
    #[cfg(not(target_arch = "x86_64"))]
    let avx512 = false;
    for native in [false, avx512] {
        for first in [0u64, 100, (1 << 32) - 3] {
            let refs: Vec<Vec<f64>> = (0..16)
                .map(|k| {
                    let mut v = vec![0.0; 4 * 42];
                    let mut r = rng::stream_in(Law::V2, 9, Domain::Train, 4, first + k);
                    rng::fill_normal(&mut r, &mut v);
                    v
                })
                .collect();
            // lane m of a call at block j: block j + m / 16 of stream first + m % 16
            let check = |j: usize, m: usize, got: [f32; 4]| {
                let (k, b) = (m % 16, j + m / 16);
                assert_eq!(
                    got.map(|x| x as f64)[..],
                    refs[k][4 * b..4 * b + 4],
                    "stream {first} + {k}, block {b}, native {native}"
                );
            };
            for j in 0..40 {
                let ((c, s), (c2, s2)) = law2_block::<16>(key, first, j as u64, native);
                (0..16).for_each(|m| check(j, m, [c[m], s[m], c2[m], s2[m]]));
            }
            for j in (0..40).step_by(2) {
                let ((c, s), (c2, s2)) = law2_blocks::<16, 32>(key, first, j as u64, native);
                (0..32).for_each(|m| check(j, m, [c[m], s[m], c2[m], s2[m]]));
            }
            for j in (0..40).step_by(3) {
                let ((c, s), (c2, s2)) = law2_blocks::<16, 48>(key, first, j as u64, native);
                (0..48).for_each(|m| check(j, m, [c[m], s[m], c2[m], s2[m]]));
            }
        }
    }
}

#[test]
#[allow(clippy::needless_range_loop)] // lane k of every vector
fn streams_and_normals_match_the_reference() {
    let mut x8 = Xoshiro::<8>::train(9, 4, 100);
    let mut refs: Vec<_> = (0..8)
        .map(|k| rng::stream(9, Domain::Train, 4, 100 + k))
        .collect();
    for _ in 0..1000 {
        let v = x8.next_u64s();
        for (k, r) in refs.iter_mut().enumerate() {
            assert_eq!(v[k], r.next_u64());
        }
    }
    for len in [251, 250, 1] {
        let mut out = vec![[0.0; 8]; len];
        fill_normal_f64(&mut Xoshiro::<8>::train(1, 2, 8), &mut out);
        for k in 0..8 {
            let mut want = vec![0.0; len];
            rng::fill_normal(
                &mut rng::stream(1, Domain::Train, 2, 8 + k as u64),
                &mut want,
            );
            for (i, w) in want.iter().enumerate() {
                let got = out[i][k];
                // the crate's ln/sin/cos vs libm: a few ulp of values up to ~8
                assert!(
                    (got - w).abs() < 1e-13 * (1.0 + w.abs()),
                    "normal {i} lane {k}: {got} vs {w}"
                );
            }
        }
    }
}

#[test]
#[allow(clippy::needless_range_loop)] // lane k of every vector
fn f32_normals_match_the_reference_to_f32_rounding() {
    // the f32 generator: exact uniforms, f32 ln and sin/cos after an exact quadrant reduction
    let len = 20_001;
    let mut out = vec![[0.0f32; 16]; len];
    fill_normal_f32(&mut Xoshiro::<16>::train(3, 1, 16), &mut out);
    let mut worst: f64 = 0.0;
    for k in 0..16 {
        let mut want = vec![0.0; len];
        rng::fill_normal(
            &mut rng::stream(3, Domain::Train, 1, 16 + k as u64),
            &mut want,
        );
        for (i, w) in want.iter().enumerate() {
            let got = out[i][k] as f64;
            // a few f32 ulp of max(|w|, 1): r = sqrt(-2 ln u1) up to ~8.5
            worst = worst.max((got - w).abs() / w.abs().max(1.0));
        }
    }
    assert!(
        worst < 8.0 * f32::EPSILON as f64,
        "worst relative error {worst:e}"
    );
}

type Out<T> = (T, Circuits<T>, Vec<T>);

fn run_in<T: SimdScalar>(threads: usize, cfg: &Config, n: usize) -> Out<T> {
    run_at(icl_cpu_simd::dispatch::level(), threads, cfg, n)
}

/// Sampled loss + gradient and predictions at `level` in a pool of `threads`.
fn run_at<T: SimdScalar>(level: Level, threads: usize, cfg: &Config, n: usize) -> Out<T> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let task = Task::new(cfg).unwrap();
        let model = Model::<T>::init(cfg).unwrap();
        let circ = model.circuits().unwrap();
        let mut eng = Runner::new(T::attention_kernels(Some(level)));
        let mut g = Circuits::zeros(model.attention().unwrap());
        let s = Sampling {
            seed: 3,
            step: 5,
            n,
            len: cfg.task.len,
        };
        let loss = eng
            .sampled_loss_grad(model.attention().unwrap(), &circ, &task, s, &mut g)
            .unwrap();
        let batch = task.sample_batch::<T>(3, Domain::Eval, 0, n, cfg.task.len);
        let mut p = vec![T::zero(); n * model.spec.n_out];
        eng.predict(model.attention().unwrap(), &circ, &batch, &mut p)
            .unwrap();
        (loss, g, p)
    })
}

fn check_threads<T: SimdScalar>() {
    for sets in [
        vec![("model.heads", "2")],
        vec![("model.activation", "tanh")],
        vec![("task.kind", "anisotropic")],
        vec![("model.heads", "2"), ("task.data_law", "2")],
        vec![
            ("task.kind", "multitask"),
            ("task.d", "6"),
            ("task.supports", "1,2,5;3,4,5,6"),
            ("task.variant", "code"),
        ],
    ] {
        let cfg = config(&sets).unwrap();
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

fn check_levels<T: SimdScalar>(report: &mut LevelsRun) {
    for sets in [
        vec![("model.heads", "2")],
        vec![("model.heads", "3"), ("model.activation", "tanh")],
        vec![("model.attention", "linear")],
        vec![("task.d", "13")],
        vec![("task.kind", "anisotropic")],
        vec![("model.heads", "2"), ("task.data_law", "2")],
        vec![("task.kind", "anisotropic"), ("task.data_law", "2")],
        vec![
            ("task.kind", "multitask"),
            ("task.d", "6"),
            ("task.supports", "1,2,3,4;3,4,5,6"),
            ("task.variant", "paper"),
        ],
        vec![
            ("task.kind", "multitask"),
            ("task.d", "6"),
            ("task.supports", "1,2,5;3,4,5,6"),
            ("task.variant", "code"),
        ],
        vec![("task.kind", "eigs"), ("task.eigs", "1,1,0.5,0.1")],
    ] {
        let cfg = config(&sets).unwrap();
        for n in [256, 37] {
            let base = run_at::<T>(Level::Base, 1, &cfg, n);
            report.ran(SimdEngine::<T>::with_level(Level::Base).level());
            for level in report.levels().into_iter().filter(|&l| l != Level::Base) {
                let r = run_at::<T>(level, 2, &cfg, n);
                report.ran(SimdEngine::<T>::with_level(level).level());
                assert!(
                    r.0 == base.0 && r.1 == base.1 && r.2 == base.2,
                    "{} {sets:?} n={n}: {} differs from sse2",
                    T::NAME,
                    level.as_str()
                );
            }
        }
    }
}

#[test]
fn bit_identical_at_every_dispatch_level() {
    let mut report = LevelsRun::new("bit_identical_at_every_dispatch_level");
    check_levels::<f32>(&mut report);
    check_levels::<f64>(&mut report);
    report.finish();
}

/// An engine reused across steps and batch sizes computes each step as a fresh engine does (the
/// per-chunk gradient accumulators start every step from zero), at every level.
fn check_reuse<T: SimdScalar>(report: &mut LevelsRun) {
    let cfg = config(&[("model.heads", "2")]).unwrap();
    let task = Task::new(&cfg).unwrap();
    let model = Model::<T>::init(&cfg).unwrap();
    let circ = model.circuits().unwrap();
    let len = cfg.task.len;
    for level in report.levels() {
        report.ran(SimdEngine::<T>::with_level(level).level());
        let mut reused = Runner::new(T::attention_kernels(Some(level)));
        for (step, n) in [(1, 256), (2, 100), (3, 256), (3, 256)] {
            let s = Sampling {
                seed: 4,
                step,
                n,
                len,
            };
            let mut g = Circuits::zeros(model.attention().unwrap());
            let l = reused
                .sampled_loss_grad(model.attention().unwrap(), &circ, &task, s, &mut g)
                .unwrap();
            let mut fresh = Runner::new(T::attention_kernels(Some(level)));
            let mut g0 = Circuits::zeros(model.attention().unwrap());
            let l0 = fresh
                .sampled_loss_grad(model.attention().unwrap(), &circ, &task, s, &mut g0)
                .unwrap();
            assert!(
                l == l0 && g == g0,
                "{} {}: step {step} n={n} differs when the engine is reused",
                T::NAME,
                level.as_str()
            );
        }
    }
}

#[test]
fn a_reused_engine_computes_each_step_afresh() {
    let mut report = LevelsRun::new("a_reused_engine_computes_each_step_afresh");
    check_reuse::<f32>(&mut report);
    check_reuse::<f64>(&mut report);
    report.finish();
}

/// Level names, and the cap: an engine asked for a level this CPU has runs at it, one asked for
/// a level above runs at the CPU's best.
#[test]
fn level_names_and_detection() {
    assert_eq!(
        Level::Base.as_str(),
        if cfg!(target_arch = "x86_64") {
            "sse2"
        } else {
            "base"
        }
    );
    let best = dispatch::detected();
    for level in Level::ALL {
        let want = if dispatch::has(level) { level } else { best };
        assert_eq!(SimdEngine::<f32>::with_level(level).level(), want);
        assert_eq!(SimdEngine::<f64>::with_level(level).level(), want);
    }
    assert!(dispatch::has(Level::Base) && dispatch::has(best));
}
