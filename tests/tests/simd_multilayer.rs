//! The SIMD transformer engine (its conformance suite runs with every family's in
//! `simd_engine.rs`) gives the same bits at every level this CPU has (printing which ran) and
//! thread count, and trains a run
//! bit-identically at 1 and 2 threads.
use icl_core::conformance::stack::{inputs, specs};
use icl_core::families::stack::StackCircuits;
use icl_cpu_simd::dispatch::{Level, LevelsRun};
use icl_cpu_simd::{MlSimd, SimdScalar};

fn grads(level: Level, threads: usize) -> Vec<(u32, Vec<u32>)> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        specs()
            .iter()
            .map(|sp| {
                let (c, b) = inputs::<f32>(sp, 53, 17, 0.3, 9);
                let mut g = StackCircuits::zeros(sp);
                let l = f32::stack_kernels(Some(level))
                    .loss_grad(sp, &c, &b, &mut g)
                    .unwrap();
                (
                    l.to_bits(),
                    g.phi.iter().chain(&g.psi).map(|x| x.to_bits()).collect(),
                )
            })
            .collect()
    })
}

#[test]
fn same_bits_at_every_level_and_thread_count() {
    let base = grads(Level::Base, 1);
    let mut report = LevelsRun::new("same_bits_at_every_level_and_thread_count (stacks)");
    for level in report.levels() {
        report.ran(MlSimd::<f32>::with_level(level).level());
        for threads in [1, 2, 3] {
            assert!(
                grads(level, threads) == base,
                "{level:?} with {threads} threads differs from base with 1"
            );
        }
    }
    report.finish();
}

/// Parameters and per-step losses after `steps` training steps of the reduced `preset` on
/// `engine` in a pool of `threads` threads.
fn train<T: icl_core_run::engines::RunScalar>(
    preset: &str,
    engine: &str,
    threads: usize,
    steps: usize,
) -> (Vec<T>, Vec<f64>) {
    let mut cfg = icl_core::presets::preset(preset).unwrap();
    // 37 sequences: two full chunks of 16 and a partial one, padding lanes in the last group
    for (k, v) in [
        ("task.L", "23"),
        ("train.batch", "37"),
        ("train.lr", "1e-2"),
        ("train.snapshot_every", "0"),
    ] {
        cfg.set(k, v).unwrap();
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| {
        let mut t = icl_core::train::Trainer::<T>::with_model(
            &cfg,
            icl_core::Model::init(&cfg).unwrap(),
            &icl_core_run::engines::Engines::named(Some(engine)),
            &icl_core::train::Options::default(),
        )
        .unwrap();
        let losses = (0..steps).map(|_| t.step().unwrap()).collect();
        (t.model.params.clone(), losses)
    })
}

fn rel_diff<T: icl_core::Scalar>(a: &[T], b: &[T]) -> f64 {
    let num: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x.to_f64() - y.to_f64()).powi(2))
        .sum();
    let den: f64 = b.iter().map(|y| y.to_f64().powi(2)).sum();
    (num / den).sqrt()
}

/// Training the IV models (the two-block model: stage 1's loss and leave-one-out pass, the
/// stop-gradient, stage 2; and the one-stage TF Ref) on the SIMD engine follows the scalar
/// reference step by step (f64 to 1e-10, f32 to 1e-5 in the parameters and the losses) and gives
/// the same bytes at 1 and 2 threads.
fn iv_training_matches<T: icl_core_run::engines::RunScalar>(tol: f64) {
    for preset in ["iv-2stage", "iv-tf-ref"] {
        let (p0, l0) = train::<T>(preset, "scalar", 1, 5);
        let (p1, l1) = train::<T>(preset, "simd", 1, 5);
        let (p2, l2) = train::<T>(preset, "simd", 2, 5);
        assert!(p1
            .iter()
            .zip(&p2)
            .all(|(a, b)| a.to_f64().to_bits() == b.to_f64().to_bits()));
        assert_eq!(l1, l2, "{preset}: losses differ between 1 and 2 threads");
        // the parameters moved (so the comparison sees the gradients)
        let init = icl_core::Model::<T>::init(&{
            let mut c = icl_core::presets::preset(preset).unwrap();
            c.set("task.L", "23").unwrap();
            c
        })
        .unwrap()
        .params;
        assert!(
            rel_diff(&p0, &init) > 1e-3,
            "{preset}: the parameters did not move"
        );
        let d = rel_diff(&p1, &p0);
        assert!(
            d < tol,
            "{preset}: parameters differ from the scalar reference by {d:.2e}"
        );
        for (a, b) in l1.iter().zip(&l0) {
            assert!(
                (a - b).abs() <= tol * b.abs(),
                "{preset}: loss {a} vs the scalar reference's {b}"
            );
        }
    }
}

#[test]
fn iv_training_matches_the_scalar_reference_f64() {
    iv_training_matches::<f64>(1e-10);
}

#[test]
fn iv_training_matches_the_scalar_reference_f32() {
    iv_training_matches::<f32>(1e-5);
}
