//! The GPT-2 engine: the family's conformance suite at every vector level (f64 to 1e-10
//! relative, f32 to 1e-5, norm-wise; `icl-tests` runs it again through `engine_conformance!`),
//! and the same bits at 1, 2 and 16 threads and at every level this CPU has (each test prints
//! which levels ran and which the CPU lacks, and fails when it skipped one the CPU has).
use icl_core::conformance::gpt2::{self, Shape};
use icl_core::engine::{Engine, Gpt2Runner};
use icl_core::families::gpt2::Gpt2Spec;
use icl_cpu_simd::dispatch::LevelsRun;
use icl_cpu_simd::{Gpt2Simd, Level, Simd, SimdScalar};

fn suite<T: SimdScalar>(level: Level, tol: f64) {
    let engine = Simd::with_level(level);
    let make = || Engine::<T>::gpt2(&engine).unwrap();
    let at = |what: &str, r: Result<(), String>| {
        if let Err(e) = r {
            panic!("{} {} {what}: {e}", T::NAME, level.as_str());
        }
    };
    at("loss_grad", gpt2::loss_grad_matches::<T>(&make, tol));
    at("predict", gpt2::predict_matches::<T>(&make, tol));
    at("repeatable", gpt2::repeatable::<T>(&make));
    at("refuses", gpt2::refuses_bad_input::<T>(&make));
}

#[test]
fn gpt2_conformance_at_every_level() {
    let mut report = LevelsRun::new("gpt2_conformance_at_every_level");
    for level in report.levels() {
        suite::<f64>(level, 1e-10);
        suite::<f32>(level, 1e-5);
        report.ran(Gpt2Simd::<f32>::with_level(level).level());
        report.ran(Gpt2Simd::<f64>::with_level(level).level());
    }
    report.finish();
}

/// Loss, gradient and predictions of a Garg-like model on a batch of 37 prompts (five chunks,
/// the last one short), as bits.
fn run_bits<T: SimdScalar>(engine: Simd) -> Vec<u64> {
    let spec = Gpt2Spec {
        d: 20,
        embd: 32,
        layers: 2,
        heads: 2,
        positions: 21,
        tau: 1.0,
    };
    let p = gpt2::params::<T>(&spec, 0.2, 1);
    let shape = Shape {
        n: 37,
        len: 20,
        active: usize::MAX,
    };
    let b = gpt2::batch::<T>(spec.d, shape, 2);
    let mut run = Gpt2Runner::new(Engine::<T>::gpt2(&engine).unwrap());
    let mut g = vec![T::zero(); p.len()];
    let loss = run.loss_grad(&spec, &p, &b, &mut g).unwrap();
    let (n, k) = (13, 21);
    let xs: Vec<T> = (0..n * k * spec.d)
        .map(|i| T::of(((i * 7919) % 1000) as f64 / 500.0 - 1.0))
        .collect();
    let ys: Vec<T> = (0..n * k)
        .map(|i| T::of(((i * 104_729) % 1000) as f64 / 500.0 - 1.0))
        .collect();
    let mut out = vec![T::zero(); n * k];
    run.predict(&spec, &p, &xs, &ys, n, k, &mut out).unwrap();
    std::iter::once(loss)
        .chain(g)
        .chain(out)
        .map(|x| x.to_f64().to_bits())
        .collect()
}

fn same_bits_at_any_thread_count<T: SimdScalar>() {
    let at = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap()
            .install(|| run_bits::<T>(Simd::default()))
    };
    let one = at(1);
    for threads in [2, 16] {
        assert!(
            at(threads) == one,
            "{}: {threads} threads differ from one",
            T::NAME
        );
    }
}

#[test]
fn gpt2_same_bits_at_1_2_16_threads() {
    same_bits_at_any_thread_count::<f32>();
    same_bits_at_any_thread_count::<f64>();
}

/// On one machine the level changes the row operations' vector width only (the matrix products'
/// kernel is the CPU's), and those give the same bits at every width.
fn same_bits_at_every_level<T: SimdScalar>(report: &mut LevelsRun) {
    let best = run_bits::<T>(Simd::default());
    for level in report.levels() {
        report.ran(Gpt2Simd::<T>::with_level(level).level());
        assert!(
            run_bits::<T>(Simd::with_level(level)) == best,
            "{}: {} differs from the best level",
            T::NAME,
            level.as_str()
        );
    }
}

#[test]
fn gpt2_same_bits_at_every_level() {
    let mut report = LevelsRun::new("gpt2_same_bits_at_every_level");
    same_bits_at_every_level::<f32>(&mut report);
    same_bits_at_every_level::<f64>(&mut report);
    report.finish();
}

/// Prints a hash of [`run_bits`] at every level, f32 and f64, to compare machines and builds
/// (equal hashes: equal bits). `matrixmultiply` reads `MMTEST_FEATURE` at compile time
/// (`avx2,fma`, `avx`, or `none` for its portable kernel), so a build with it set shows what
/// another CPU's matrix-product kernel does to the bits:
///
///     MMTEST_FEATURE=avx cargo test -p icl-cpu-simd --test gpt2 bits_hash -- --ignored --nocapture
#[test]
#[ignore]
fn gpt2_bits_hash() {
    fn hash(v: &[u64]) -> u64 {
        v.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ b).wrapping_mul(0x100_0000_01b3)
        })
    }
    for level in Level::ALL {
        println!(
            "{}: f32 {:016x} f64 {:016x}",
            level.as_str(),
            hash(&run_bits::<f32>(Simd::with_level(level))),
            hash(&run_bits::<f64>(Simd::with_level(level)))
        );
    }
}

/// The classical estimators' per-prompt fits run on the engine's threads: the values in index
/// order and the first error by index, as the sequential default, at 1, 2 and 16 threads (the
/// prompts take unequal times, so the threads finish out of order).
#[test]
fn gpt2_map_prompts_is_the_sequential_map_at_any_thread_count() {
    use icl_core::families::gpt2::Gpt2Kernels;
    use icl_core::Error;
    let f = |b: usize| -> icl_core::Result<f64> {
        // unequal work per prompt
        let mut x = b as f64;
        for _ in 0..(b % 7) * 2000 {
            x = (x * 1.000_001).sin() + b as f64;
        }
        match b {
            37 | 91 => Err(Error::Numerical(format!("prompt {b}"))),
            _ => Ok(x),
        }
    };
    let sequential: Vec<icl_core::Result<f64>> = (0..200).map(f).collect();
    let want: Vec<u64> = sequential[..37]
        .iter()
        .map(|r| r.as_ref().unwrap().to_bits())
        .collect();
    let engine = Gpt2Simd::<f64>::new();
    for threads in [1, 2, 16] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let got = pool.install(|| engine.map_prompts(37, &f)).unwrap();
        assert_eq!(
            got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            want,
            "{threads} threads"
        );
        let err = pool.install(|| engine.map_prompts(200, &f)).unwrap_err();
        assert!(err.to_string().contains("prompt 37"), "{threads}: {err}");
    }
}
